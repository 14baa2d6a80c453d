"""Arguments added by fixes keep the call's own layout and its comments where they were."""

from __future__ import annotations

import libcst as cst
import pytest

from pytorch_perflint.analysis.call_edits import (
    keyword_arg,
    with_keyword,
    with_keywords,
)


def _add(source: str) -> str:
    module = cst.parse_module(source)
    statement = module.body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    expr = statement.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)
    added = [keyword_arg("num_workers", cst.Integer("4")), keyword_arg("pin_memory", cst.Name("True"))]
    return module.code_for_node(with_keywords(expr.value, added))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("f(a)\n", "f(a, num_workers=4, pin_memory=True)"),
        ("f()\n", "f(num_workers=4, pin_memory=True)"),
        ("f(a, b=1)\n", "f(a, b=1, num_workers=4, pin_memory=True)"),
        (
            "f(\n    a,\n    b=2,  # bs\n    # trailing\n)\n",
            "f(\n    a,\n    b=2,  # bs\n    num_workers=4,\n    pin_memory=True,\n    # trailing\n)",
        ),
        ("f(\n    a,  # c\n)\n", "f(\n    a,  # c\n    num_workers=4,\n    pin_memory=True,\n)"),
        ("f(a,\n  b,  # c\n  )\n", "f(a,\n  b,  # c\n  num_workers=4,\n  pin_memory=True,\n  )"),
        ("f(a,  # c\n)\n", "f(a, num_workers=4, pin_memory=True,  # c\n)"),
    ],
    ids=["one-line", "no-args", "keywords", "comments-stay", "single-arg", "hanging", "comment-after-only-arg"],
)
def test_with_keywords_keeps_layout_and_comments(source, expected):
    result = _add(source)
    assert result == expected
    cst.parse_expression(result)


def test_with_keyword_replaces_an_explicit_value():
    call = cst.parse_expression("f(a, num_workers=0)")
    assert isinstance(call, cst.Call)
    new = with_keyword(call, "num_workers", cst.Integer("4"))
    assert cst.Module(body=[]).code_for_node(new) == "f(a, num_workers=4)"
