"""TPF206's ``ast`` screen ``loop_calls``: some ``for``/``while`` body calls something. Read
from positions (a call within a loop body's span) instead of walking every loop's body."""

from __future__ import annotations

import ast

import pytest

from pytorch_perflint.analysis.ast_index import forget_trees
from pytorch_perflint.facts.training.cache_calls import loop_calls

CASES = [
    ("for x in range(3):\n    y = x\n", False),  # the call is the iterable's, not the body's
    ("while ok():\n    n += 1\n", False),  # the test's
    ("for x in xs:\n    pass\nelse:\n    done()\n", False),  # the else block runs once
    ("for x in xs:\n    f(x)\n", True),
    ("async def g():\n    async for x in xs:\n        await f(x)\n", True),
    ("for x in xs:\n    def inner():\n        return f()\n", True),  # as ast.walk of the body saw it
    ("for x in xs:\n    for y in range(2):\n        pass\n", True),  # the inner loop's iterable is in the body
    ("for x in xs:\n    try:\n        pass\n    except E:\n        log(x)\n", True),
    ("if a:\n    pass\nelse:\n    while b:\n        c = [g(i) for i in b]\n", True),
    ("match v:\n    case 1:\n        for x in xs:\n            h(x)\n", True),
    ("f(x)\nfor x in xs: y = x; z = y\n", False),
    ("for x in xs: y = x; g()\n", True),
    ("[f(x) for x in xs]\n", False),  # a comprehension is no loop statement
]


@pytest.mark.parametrize("source,expected", CASES)
def test_loop_calls(source, expected):
    forget_trees()
    tree = ast.parse(source)
    assert loop_calls(tree) is expected
    # The same answer as walking each loop's body, which the screen replaced.
    walked = any(
        isinstance(child, ast.Call)
        for node in ast.walk(tree)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        for statement in node.body
        for child in ast.walk(statement)
    )
    assert walked is expected
