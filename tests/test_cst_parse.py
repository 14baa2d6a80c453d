"""The engine's LibCST parse skips per-node validation for its own output only."""

from __future__ import annotations

import threading

import libcst as cst
import pytest

from pytorch_perflint import cst_parse

SOURCE = (
    "import torch\n\n@dec(x=1)\nclass A(B, metaclass=M):\n    x: int = 1\n\n"
    "    async def f(self, *a, b=2, **k) -> None:\n        async with c as d:\n            yield [i async for i in d if i]\n"
    "        return lambda q, /, r: (q, r)\n\nx = f'{a!r:>{w}}' + b'\\x00' if y else {**z}\n"
    "del x[1:2, ...]\nwhile 1:\n    try:\n        pass\n    except* E as e:\n        raise\n"
    "match p:\n    case {'k': [1, *rest]} | None:\n        pass\n"
)


def test_same_tree_as_libcst() -> None:
    module = cst_parse.parse_module(SOURCE)
    assert module.deep_equals(cst.parse_module(SOURCE))
    assert module.code == SOURCE


def test_nodes_built_afterwards_are_validated() -> None:
    cst_parse.parse_module(SOURCE)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_other_threads_validate_during_the_parse(monkeypatch) -> None:
    raised = []

    def build_elsewhere() -> None:
        try:
            cst.Name("not a name")
        except cst.CSTValidationError:
            raised.append(True)

    real = cst.parse_module

    def parse(text: str) -> cst.Module:
        worker = threading.Thread(target=build_elsewhere)
        worker.start()
        worker.join()
        cst.Name("also not a name")  # the parsing thread: not checked during the parse
        return real(text)

    monkeypatch.setattr(cst, "parse_module", parse)
    cst_parse.parse_module("x = 1\n")
    assert raised == [True]


def test_a_parse_that_fails_restores_validation() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
