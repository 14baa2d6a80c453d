"""The fast walks: children in source order, and the type comparisons they rely on."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst

from pytorch_perflint.analysis.walk import child_nodes

PACKAGE = Path(__file__).resolve().parent.parent / "pytorch_perflint"
_COMPARED = re.compile(r"type\([^()]*(?:\([^()]*\))?[^()]*\) (?:is|in) \(?((?:cst\.\w+(?:, )?)+)\)?")


def test_every_libcst_class_compared_by_type_is_final():
    """``type(node) is cst.X`` equals ``isinstance`` only while X has no subclasses."""
    compared = set()
    for path in PACKAGE.rglob("*.py"):
        for match in _COMPARED.finditer(path.read_text(encoding="utf-8")):
            compared.update(re.findall(r"cst\.(\w+)", match.group(1)))
    assert {"Call", "ClassDef", "FunctionDef", "For", "While"} <= compared
    for name in sorted(compared):
        cls = getattr(cst, name)
        assert issubclass(cls, cst.CSTNode) and not cls.__subclasses__(), name


def test_children_come_in_source_order_without_tokens():
    module = cst.parse_module("@d\ndef f(a, *, b=1) -> int:\n    return g(a, key=b)\n")
    function = module.body[0]
    assert [type(c).__name__ for c in child_nodes(function)] == [
        "Decorator", "Name", "Parameters", "Annotation", "IndentedBlock"
    ]
    call = function.body.body[0].body[0].value
    assert [type(c).__name__ for c in child_nodes(call)] == ["Name", "Arg", "Arg"]
    assert [type(c).__name__ for c in child_nodes(call.args[1])] == ["Name", "Name"]
