"""Positions computed per top-level statement are exactly LibCST's whole-module ones."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from pytorch_perflint.analysis.walk import child_nodes
from pytorch_perflint.positions import StatementPositions

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "# header comment\n\nimport torch\n\n\n# lead\n@dec\ndef f(x):\n    return x.cuda()  # c\n",
    "x = 1; y = 2\nif x:\n    z = [\n        1,\n        2,\n    ]\nelse:\n    pass\n",
    "import torch\r\nmodel = Net().cuda()\r\n\r\nfor x in loader:\r\n    model(x)\r\n",
    "class A:\n    '''doc\n    string'''\n    def g(self):\n        return 1\n# trailing comment",
    '"""Module docstring."""\nx = (1 +\n     2)\n',
]
FILES = sorted((ROOT / "fixtures").glob("*/*.py")) + sorted((ROOT / "examples").glob("*.py"))


def _all_nodes(module: cst.Module):
    stack = [module]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_nodes(node))


@pytest.mark.parametrize(
    "source",
    SOURCES + [path.read_text(encoding="utf-8") for path in FILES],
    ids=[f"inline-{i}" for i in range(len(SOURCES))] + [f"{p.parent.name}/{p.name}" for p in FILES],
)
def test_statement_positions_match_the_whole_module_provider(source):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = StatementPositions(module)
    for statement in module.body:
        positions.track(statement)
    assert positions._full is None  # no fallback was needed
    for node in _all_nodes(module):
        if node is module:
            continue
        assert positions[node] == expected[node], module.code_for_node(node)


def test_a_node_outside_the_tracked_statements_falls_back_to_the_whole_module():
    module = cst.parse_module("a = 1\nb = 2\n")
    positions = StatementPositions(module)
    positions.track(module.body[0])
    second = module.body[1]
    assert positions[second].start.line == 2
    assert positions._full is not None
