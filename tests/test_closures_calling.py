"""``closures_calling``: the functions and lambdas defined in a frame whose bodies (nested
closures, decorators and defaults included) call one of the owners."""

from __future__ import annotations

import ast

from pytorch_perflint.facts.training.closures import closures_calling

SOURCE = """
def outer():
    def middle():
        def inner():
            return model(x)
        return inner
    def other():
        return helper(x)
    run = lambda b: net.forward(b)
    keep = lambda b: b
    first, second = lambda: model(1), 2
    @model(3)
    def decorated():
        pass
    def defaulted(y=model(0)):
        pass
    model(2)
"""


def test_every_closure_around_a_call_of_an_owner_is_found():
    tree = ast.parse(SOURCE)
    outer = tree.body[0]
    assert closures_calling(outer, {"model", "net.forward"}) == {"middle", "inner", "run", "decorated", "defaulted"}
    assert closures_calling(tree, {"model"}) == {"outer", "middle", "inner", "decorated", "defaulted"}
    assert closures_calling(outer, {"helper"}) == {"other"}
    assert closures_calling(outer, {"unknown"}) == frozenset()
    assert closures_calling(outer, set()) == frozenset()
