"""Same-module helpers that run a model forward once per call (TPF206's evaluation loops).

An evaluation loop often calls the model through a helper: basicsr-style validation loops
call ``self.test()``, whose body runs ``self.net_g(self.lq)`` under ``torch.no_grad()``; a
loop already under no-grad calls ``self.predict(net, x)``. This module answers, for the
functions and methods of one module (by name, as ``callee_key`` resolves calls, like the
training facts of ``loops.py``), which of them run a model forward, and which do so with
autograd off.

A helper that puts its model in eval mode before it runs it (``model.eval()``, then
``model(x)``) evaluates on each call, as a loop after ``model.eval()`` does.

A method of a model the helper put in eval mode, handed an input, runs it too
(``self.net_g.eval()``, then ``net_g.test(lq)`` or ``net_g.test_tile(lq)``), also through a
local name the helper binds to a call handed that model and named like one (``net_g =
self.get_bare_model(self.net_g)``: the model unwrapped); not a method that handles the
model rather than running it (``load_state_dict``, ``set_mode``, ``to``, ``train``).

A helper with a loop of its own is left out, as ``loops.py`` leaves out a train-one-epoch
helper: ``for ckpt in ckpts: evaluate(model, loader)`` is a loop over checkpoints, each
evaluated by a whole loop, not an evaluation loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set

import libcst as cst

from ...analysis.scope import dotted_name
from ...context import FileContext
from .classifiers import FuncKey, callee_key, is_no_grad_expr, last_name, method_name
from .loops import walk
from .no_grad import MODEL_NAME, decorated_no_grad


@dataclass(frozen=True)
class ForwardHelpers:
    """Keys (``(class or None, name)``) of the module's loop-free forward helpers."""

    forward: FrozenSet[FuncKey]  # call a model, themselves or through such helpers
    no_grad_forward: FrozenSet[FuncKey]  # ... with autograd recording off
    eval_forward: FrozenSet[FuncKey] = frozenset()  # ... on a model they put in eval mode first


@dataclass
class _Helper:
    key: FuncKey
    looped: bool = False  # has a loop of its own
    forward: bool = False  # calls a model-named callee
    no_grad_forward: bool = False  # ... inside a no-grad region of its own (or decorated)
    callees: Set[FuncKey] = field(default_factory=set)
    no_grad_callees: Set[FuncKey] = field(default_factory=set)  # called inside no-grad
    evaluated: Set[str] = field(default_factory=set)  # names put in eval mode (`model.eval()`)
    eval_forward: bool = False  # calls a model it put in eval mode before


def is_model_call(call: cst.Call) -> bool:
    """``model(x)``, ``self.net_g(x)``, ``model.forward(x)``: a callee named like a model."""
    target = call.func.value if method_name(call) == "forward" else call.func  # type: ignore[attr-defined]
    name = last_name(target)
    return name is not None and bool(MODEL_NAME.match(name))


# Methods that handle a model rather than run it: `net.load_state_dict(sd)`, `net.to(device)`.
_HANDLES = re.compile(
    r"^_*(?:load|save|set|get|init|reset|register|apply|add|remove|update|freeze|unfreeze|copy|clone|to|cpu|cuda|half|"
    r"float|double|bfloat16|type|train|eval|zero|state|named|parameters|modules|children|buffers|requires|share|print|log)(?:_|$)"
)


def _runs_evaluated(call: cst.Call, evaluated: Set[str]) -> bool:
    """``net_g.test(lq)``: a method, handed an input, of a model put in eval mode here."""
    func = call.func
    if type(func) is not cst.Attribute or not call.args or type(func.value) not in (cst.Name, cst.Attribute):
        return False
    return dotted_name(func.value) in evaluated and not _HANDLES.match(func.attr.value)


def _unwraps(node: cst.Assign, evaluated: Set[str]) -> bool:
    """``net_g = self.get_bare_model(self.net_g)``: a name like a model's bound to a call
    handed a model put in eval mode here."""
    if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name or type(node.value) is not cst.Call:
        return False
    if not MODEL_NAME.match(node.targets[0].target.value):  # type: ignore[attr-defined]
        return False
    return any(type(a.value) in (cst.Name, cst.Attribute) and dotted_name(a.value) in evaluated for a in node.value.args)


def forward_helpers(context: FileContext) -> ForwardHelpers:
    """Compute the module's forward helpers (use ``context.fact(forward_helpers)``)."""
    helpers: List[_Helper] = []
    frames: List[Optional[_Helper]] = [None]
    classes: List[Optional[str]] = [None]
    no_grad: List[int] = [0]  # per frame: how many no-grad regions enclose the current node

    def qualname_at(stack: List[cst.CSTNode]):
        scope = context.scope_for(stack[-1] if stack else context.module, stack)
        return lambda expr: context.qualname(expr, scope)

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        helper = frames[-1]
        if type(node) is cst.ClassDef:
            classes.append(node.name.value)
        elif type(node) is cst.FunctionDef:
            owner = classes[-1] if len(stack) >= 2 and type(stack[-2]) is cst.ClassDef else None
            enclosing = helper.key[0] if helper is not None else classes[-1]
            new = _Helper((owner, node.name.value)) if (owner is not None or len(stack) == 1) else None
            if new is not None:
                helpers.append(new)
            frames.append(new)
            classes.append(owner or enclosing)
            no_grad.append(1 if decorated_no_grad(context, node, stack) else 0)
        elif helper is None:
            return True
        elif type(node) in (cst.For, cst.While):
            helper.looped = True
        elif type(node) is cst.With and any(is_no_grad_expr(i.item, qualname_at(stack)) for i in node.items):
            no_grad[-1] += 1
        elif type(node) is cst.Assign and _unwraps(node, helper.evaluated):
            helper.evaluated.add(node.targets[0].target.value)  # type: ignore[attr-defined]
        elif type(node) is cst.Call:
            key = callee_key(node, helper.key[0])
            if key is not None:
                helper.callees.add(key)
                if no_grad[-1]:
                    helper.no_grad_callees.add(key)
            if method_name(node) == "eval" and not node.args and type(node.func.value) in (cst.Name, cst.Attribute):  # type: ignore[attr-defined]
                helper.evaluated.add(dotted_name(node.func.value))  # type: ignore[attr-defined, arg-type]
            elif _runs_evaluated(node, helper.evaluated):
                helper.forward = helper.eval_forward = True
                helper.no_grad_forward |= bool(no_grad[-1])
            elif is_model_call(node):
                helper.forward = True
                helper.no_grad_forward |= bool(no_grad[-1])
                target = node.func.value if method_name(node) == "forward" else node.func  # type: ignore[attr-defined]
                helper.eval_forward |= type(target) in (cst.Name, cst.Attribute) and dotted_name(target) in helper.evaluated
        return True

    def leave(node: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
        if type(node) is cst.ClassDef:
            classes.pop()
        elif type(node) is cst.FunctionDef:
            frames.pop()
            classes.pop()
            no_grad.pop()
        elif type(node) is cst.With and frames[-1] is not None:
            if any(is_no_grad_expr(i.item, qualname_at(stack)) for i in node.items):
                no_grad[-1] -= 1

    walk(context.module, enter, leave)
    by_key: Dict[FuncKey, List[_Helper]] = {}
    for helper in helpers:
        by_key.setdefault(helper.key, []).append(helper)
    # A name defined twice (or a helper with a loop) is not a known loop-free helper.
    plain = {k: v[0] for k, v in by_key.items() if len(v) == 1 and not v[0].looped}
    forward = _closure(plain, lambda h, found: h.forward or bool(h.callees & found))
    no_grad_forward = _closure(
        plain, lambda h, found: h.no_grad_forward or bool(h.no_grad_callees & forward) or bool(h.callees & found)
    )
    eval_forward = _closure(plain, lambda h, found: h.eval_forward or bool(h.callees & found))
    return ForwardHelpers(frozenset(forward), frozenset(no_grad_forward), frozenset(eval_forward))


def _closure(helpers: Dict[FuncKey, _Helper], holds) -> Set[FuncKey]:
    found: Set[FuncKey] = set()
    changed = True
    while changed:
        changed = False
        for key, helper in helpers.items():
            if key not in found and holds(helper, found):
                found.add(key)
                changed = True
    return found
