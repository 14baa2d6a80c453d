"""Evaluation loops that reach their model through project code (TPF203).

Two shapes, each asked of the value engine (``project/forward_calls.runs_forward_with_grad``: the
call runs a torch module forward outside no-grad, and trains nothing):

* in a function named like evaluation, a method of one of its parameters: TD3's
  ``eval_policy(policy, ...)`` runs ``policy.select_action(state)``, whose body runs
  ``self.actor(state)``;
* anywhere, a call that hands a model this function put in eval mode to a project
  helper that runs a forward: HRNet's ``box_model.eval()``, then ``get_person_detection_boxes(
  box_model, img)`` in the frame loop, whose body runs ``model(img)`` (the parameter that
  receives the model is called: a model by the caller's ``.eval()``, whatever its callers
  pass elsewhere: ``forward_calls.runs_handed_model``);
* anywhere, a method named for evaluation handed data whose own body puts its object's
  model in eval mode (``engine.eval(x, y)`` running ``self.model.eval()``, then
  ``self.model(x)``), in loops that do not train;
* anywhere, a method of an object this function put in eval mode: ``trainer.eval()``, then
  ``trainer.encode(x)`` in the loop, whose body runs ``self.gen.encode(x)`` (a project
  module's own method, ``coder.encode(x)``, included).

Small projects only (``values.MAX_SCANNED_MODULES``), where the engine reads a parameter
from its callers. ``eval_helper_screens.could_evaluate_through_helpers`` is the rule's
``ast`` screen for both.
"""

from __future__ import annotations

from typing import Collection, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...context import FileContext
from ...project.forward_calls import evaluates_own_model, runs_forward_with_grad, runs_handed_model
from .eval_names import is_eval_function_name
from .handed_models import handed_at
from .loops import training_facts


def helper_forward(
    context: FileContext, call: cst.Call, stack: Sequence[cst.CSTNode], eval_named: bool, params: Collection[str], evaluated: Collection[str]
) -> bool:
    """Whether ``call`` (in a loop of a function that is ``eval_named``, whose parameters are
    ``params`` and whose models in eval mode here are ``evaluated``) runs a model forward
    through project code, as the shapes above say."""
    if len(stack) < 2:
        return False
    shaped = _shape(call, eval_named, params, evaluated)
    if not shaped and not _evaluating_method(call, stack, context):
        return False
    values = context.values()
    if values is None or not values.engine._scannable():
        return False  # a parameter's value comes from its callers: small projects only
    callees = values.callees(call, stack[1])
    if not shaped:  # `engine.eval(x, y)`: the method puts its own model in eval mode
        return bool(callees) and all(
            evaluates_own_model(values.engine, d) and runs_forward_with_grad(values.engine, d) for d in callees
        )
    handed = _handed(call, evaluated)
    return bool(callees) and all(
        runs_forward_with_grad(values.engine, d) or any(runs_handed_model(values.engine, d, *at) for at in handed)
        for d in callees
    )


def _handed(call: cst.Call, evaluated: Collection[str]) -> List[Tuple[Optional[int], Optional[str]]]:
    """Where the call hands a model this function put in eval mode: (position, None) or
    (None, keyword); nothing after a ``*args``."""
    return handed_at(call, lambda name: name in evaluated)


def _evaluating_method(call: cst.Call, stack: Sequence[cst.CSTNode], context: FileContext) -> bool:
    """``engine.eval(x, y)``, ``tester.evaluate(batch)``: a method named for evaluation
    handed data (not ``model.eval()``), in a loop that does not train (through project
    code either: ``engine.train(x, y)`` beside it)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not call.args or not is_eval_function_name(func.attr.value):
        return False
    loop = next((node for node in reversed(stack) if isinstance(node, (cst.For, cst.While))), None)
    found = None if loop is None else context.fact(training_facts).loop(loop)
    return found is not None and not found.is_training


def _shape(call: cst.Call, eval_named: bool, params: Collection[str], evaluated: Collection[str]) -> bool:
    func = call.func
    if eval_named and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in params:
        return True
    if isinstance(func, cst.Attribute) and dotted_name(func.value) in evaluated:
        return True  # `trainer.eval()`, then `trainer.encode(x)`: a method of the object in eval mode
    return any(dotted_name(arg.value) in evaluated for arg in call.args if not arg.star)
