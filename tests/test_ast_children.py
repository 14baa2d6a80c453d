"""``ast_children`` skips the fields the grammar types as identifiers, strings or constants
and takes lists of nodes whole: it must give exactly what ``ast.iter_child_nodes`` gives,
less contexts and operators, in the same order."""

from __future__ import annotations

import ast

from pytorch_perflint.analysis.ast_index import _TOKEN_FIELDS, _child_fields, ast_children, walk_ast

SOURCE = '''
import a.b as c
from .x import (y as z, w)
global_ = {**base, "k": 1, None: 2}
def f(a, /, b: int = 1, *args, c, d=2, e, **kw) -> "T":
    global g
    nonlocal_ = [i for i in range(3) if i > 1 < 2]
    lambda q, *, r=None: q
    return {k: v for k, v in kw.items()}, {1, 2}, (x := 3), not a, -b, a and b
async def h():
    async with m() as (p, q):
        async for i in aiter():
            await i
    try:
        pass
    except (E, F) as err:
        raise X from err
    else:
        del p[0], q.attr
    finally:
        assert a, "m"
class C(B, metaclass=M):
    x: int = 1
    @dec(1)
    def m(self): yield from g(); yield
match v:
    case [1, *rest]: pass
    case {"a": 1, **others}: pass
    case P(1, k=2) | None: pass
    case str() as s if s: pass
s = f"{a!r:>{w}}" + b"x" + 1j + ...
print(*args, sep="", **kw)
while True:
    break
else:
    continue
'''


def _expected(node: ast.AST):
    return [
        child
        for name, value in ast.iter_fields(node)
        if name not in _TOKEN_FIELDS
        for child in (value if isinstance(value, list) else [value])
        if isinstance(child, ast.AST)
    ]


def test_ast_children_gives_what_iter_child_nodes_gives_less_tokens():
    tree = ast.parse(SOURCE)
    nodes = list(ast.walk(tree))
    assert {type(n).__name__ for n in nodes} >= {"Dict", "arguments", "Global", "MatchMapping", "MatchClass", "JoinedStr", "Compare"}
    for node in nodes:
        got, want = ast_children(node), _expected(node)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want)), ast.dump(node)[:80]
    assert sum(1 for _ in walk_ast(tree)) == sum(1 for n in nodes if not isinstance(n, (ast.expr_context, ast.operator, ast.boolop, ast.unaryop)))


def test_identifier_fields_are_not_read_and_node_fields_are():
    assert _child_fields(ast.Name) == ()
    assert _child_fields(ast.Attribute) == ("value",)
    assert _child_fields(ast.Global) == ()
    assert "body" in _child_fields(ast.FunctionDef) and "name" not in _child_fields(ast.FunctionDef)
    assert "ops" in _child_fields(ast.Compare)  # operator nodes in a list stay, as before
