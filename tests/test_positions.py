"""Positions computed for chosen nodes only are exactly LibCST's PositionProvider ones."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from pytorch_perflint.analysis.walk import child_nodes
from pytorch_perflint.positions import NodePositions, StatementPositions, _statement_ranges, line_starts, member_positions, paired_statements, statement_lines

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "# header comment\n\nimport torch\n\n\n# lead\n@dec\ndef f(x):\n    return x.cuda()  # c\n",
    "x = 1; y = 2\nif x:\n    z = [\n        1,\n        2,\n    ]\nelse:\n    pass\n",
    "import torch\r\nmodel = Net().cuda()\r\n\r\nfor x in loader:\r\n    model(x)\r\n",
    "x = 1\ny = [a,\n     b]",  # no trailing newline
    "@a\n@b(1)\nclass C(Base, metaclass=M):\n    x: int = 0\n    async def f(self):\n        async with g() as h:\n            await h\n",
    "try:\n    pass\nexcept (A, B) as e:\n    raise\nfinally:\n    y = lambda q, *r, **k: q\n",
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


ALL_SOURCES = SOURCES + [path.read_text(encoding="utf-8") for path in FILES]
IDS = [f"inline-{i}" for i in range(len(SOURCES))] + [f"{p.parent.name}/{p.name}" for p in FILES]


@pytest.mark.parametrize("with_ast", [False, True], ids=["whole-module", "by-statement"])
@pytest.mark.parametrize("source", ALL_SOURCES, ids=IDS)
def test_node_positions_match_the_position_provider(source, with_ast):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [node for node in _all_nodes(module) if node is not module]
    if with_ast:
        positions = NodePositions(module, nodes, source, ast.parse(source))
    else:
        positions = NodePositions(module, nodes)
    for node in nodes:
        assert positions[node] == expected[node], module.code_for_node(node)


@pytest.mark.parametrize("source", ALL_SOURCES, ids=IDS)
def test_a_statement_generated_once_positions_every_node_in_it(source):
    """``StatementPositions`` (the value engine's, one generation per statement for every
    node asked about) gives ``PositionProvider``'s range for each node of the statement,
    and nothing for a node of another statement."""
    if not source.endswith("\n"):
        return
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = statement_lines(module, ast.parse(source))
    assert starts is not None
    for index, statement in enumerate(module.body):
        positions = StatementPositions(module, index, starts[index])
        for node in _all_nodes(statement):
            assert positions.get(node) == expected[node], module.code_for_node(node)
        if index:
            assert positions.get(module.body[index - 1]) is None


@pytest.mark.parametrize("source", ALL_SOURCES, ids=IDS)
def test_statements_are_generated_alone_when_the_file_ends_with_a_newline(source):
    """(Without one, LibCST drops the last statement's newline and the check falls back.)"""
    module = cst.parse_module(source)
    nodes = {id(node): node for node in _all_nodes(module) if node is not module}
    ranges = _statement_ranges(module, nodes, source, ast.parse(source))
    assert ranges is not None or not source.endswith("\n")


def test_statement_lines_count_leading_comments_and_decorators():
    source = "import torch\n\n# lead\n\n@dec\n# between\n@dec2\ndef f():\n    pass\na = 1; b = 2\nc = 3\n"
    module = cst.parse_module(source)
    assert list(statement_lines(module, ast.parse(source))) == [0, 1, 9, 10]


def test_a_statement_not_where_ast_says_falls_back_to_the_whole_module():
    source = "a = 1\nb = f(\n    a,\n)\n"
    module = cst.parse_module(source)
    call = module.body[1].body[0].value
    wrong = ast.parse("\n" + source)  # every line number one too high
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert _statement_ranges(module, {id(call): call}, source, wrong) is None
    assert NodePositions(module, [call], source, wrong)[call] == expected[call]


def test_only_the_chosen_nodes_are_positioned():
    module = cst.parse_module("a = 1\nif a:\n    b = f(\n        a,\n    )\n")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    call = module.body[1].body.body[0].body[0].value
    positions = NodePositions(module, [call])
    assert positions[call] == expected[call]
    assert (positions[call].start.line, positions[call].end.line) == (3, 5)
    with pytest.raises(KeyError):
        positions[module.body[0]]


CLASSES = [
    "class A:\n\tx = 1; y = 2\n\n\t# about f\n\t@dec  # why\n\n\t@other\n\tdef f(self):\n\t\treturn self.x.cuda()\n\t# after f\n\n\n\tdef g(self): return 2\n# end\n",
    "import torch\r\n\r\nclass B(torch.nn.Module):\r\n    '''doc'''\r\n\r\n    def forward(self, x):\r\n        return (x +\r\n                1)\r\n",
    "class C: pass\nclass D:\n  def h(self):\n      if self:\n          pass\n  class E:\n      z = [\n  1]\n",
    "x = 1\n\n\nclass F(\n    Base,\n):\n    a = (1,\n         2)\n\n    async def i(self):\n        async for q in self:\n            yield q\n",
]


@pytest.mark.parametrize("source", ALL_SOURCES + CLASSES, ids=IDS + [f"class-{i}" for i in range(len(CLASSES))])
def test_a_statement_of_a_class_generated_alone_positions_every_node_in_it(source):
    """``member_positions`` (a method generated without its class) gives
    ``PositionProvider``'s range for each node of the statement, or None (the caller then
    generates the whole class): never another range."""
    module = cst.parse_module(source)
    tree = ast.parse(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    paired = paired_statements(module.body, tree.body)
    assert paired is not None
    starts = line_starts(source)
    placed = 0
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.ClassDef) or not isinstance(statement.body, cst.IndentedBlock):
            continue
        for member in statement.body.body:
            positions = member_positions(module, source, starts, statement, paired[index][1], member)
            if positions is None:
                continue
            placed += 1
            for node in _all_nodes(member):
                assert positions.get(node) == expected[node], module.code_for_node(node)
    if source in CLASSES:
        assert placed
