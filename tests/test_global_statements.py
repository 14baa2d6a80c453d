"""``statements.global_statements``: the module scope's ``global`` declarations, found by a
walk of statements only (the engine's module scope reads them to forget what a function
may rebind), are every ``global`` statement ``ast.walk`` finds."""

from __future__ import annotations

import ast

from pytorch_perflint.project.scopes import build_scope
from pytorch_perflint.project.statements import global_statements

SOURCE = '''
x = 1
def f():
    global x
    x = 2
class C:
    def m(self):
        if a:
            for i in r:
                while t:
                    with c:
                        try:
                            global y
                        except E:
                            global z
                        else:
                            global w
                        finally:
                            global v
    class D:
        def n(self):
            global u
async def g():
    async for i in r:
        async with c:
            def inner():
                global q
match p:
    case 1:
        def h():
            global s
try:
    pass
except* E:
    def k():
        global t2
f = lambda: [i for i in r]
'''


def test_every_global_statement_is_found_at_any_depth():
    tree = ast.parse(SOURCE)
    walked = {id(n) for n in ast.walk(tree) if type(n) is ast.Global}
    found = global_statements(tree.body)
    assert {id(n) for n in found} == walked
    assert sorted(name for n in found for name in n.names) == ["q", "s", "t2", "u", "v", "w", "x", "y", "z"]


def test_a_name_a_function_declares_global_is_not_known_in_the_module_scope():
    scope = build_scope(ast.parse("x = 1\ny = 2\ndef f():\n    if c:\n        global x\n        x = 3\n"), {}, "m.py", None)
    assert [e.form for e in scope.entries["x"]] == [None]
    assert scope.entries["y"][0].form is not None
