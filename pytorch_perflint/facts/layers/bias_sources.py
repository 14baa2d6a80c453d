"""Where a layer's bias is decided, when the ``torch.nn`` call alone does not say (TPF301).

What a helper builds needs the project index (``ctx.project``) and stays unknown without
it (whether ``bias=bias`` is true is the value engine's answer, asked by TPF301):

* a layer built by a project helper (``conv3x3(a, b)`` with ``def conv3x3(in_planes,
  out_planes, stride=1, bias=True): return nn.Conv2d(..., bias=bias)``), in this module or
  another: every ``return`` of the helper builds the same ``torch.nn`` class, and its bias
  is a literal there or one of the helper's parameters (never rebound), read at the call:
  the fix passes ``False`` for that parameter, so the helper's signature is kept here.

Anything else (a helper that decorates, returns something else, passes ``**kwargs``; a
caller that passes another value, a parameter with no default) is unknown, so TPF301
stays silent.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

import libcst as cst

from ...analysis.calls import MISSING
from ...analysis.scope import Scope, binds_below_module, dotted_name
from ...analysis.values import UNKNOWN
from ...context import FileContext
from ...project import Definition, FunctionBody, ProjectIndex
from ...project.bodies import locate
from ...project.forms import Call, Form, Lit, Ref
from ...project.call_values import own_path

_MAX_BINDINGS = 3  # local names followed from a helper's ``return`` (``conv = nn.Conv2d(...)``)


@dataclass(frozen=True)
class HelperLayer:
    """A project function every ``return`` of which builds one ``torch.nn`` layer class.

    ``parameter`` is the helper's parameter passed on as the layer's bias (``position`` its
    index among the positional ones, None when keyword-only) and ``default`` its default
    (``MISSING``: none; ``UNKNOWN``: not a literal). Without one, ``fixed`` is what the
    helper passes itself: ``True``/``False``, ``MISSING`` (the class default), ``UNKNOWN``.
    """

    name: str  # as written at the call: ``conv3x3``, ``layers.conv3x3``
    qualname: str
    parameter: Optional[str] = None
    position: Optional[int] = None
    default: Any = MISSING
    fixed: Any = MISSING


class HelperLayers:
    """Answers "which layer does this call of a project helper build?", once per callee."""

    def __init__(self, context: FileContext, bias_positions: Mapping[str, int]) -> None:
        self.context = context
        self.positions = bias_positions
        self._found: Dict[str, Optional[HelperLayer]] = {}

    def of(self, call: cst.Call, scope: Scope) -> Optional[HelperLayer]:
        index = self.context.project
        written = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
        if index is None or written is None or binds_below_module(scope, written.partition(".")[0]):
            return None
        if written not in self._found:
            found = index.resolve(own_path(self.context), written)
            self._found[written] = _helper(index, found, written, self.positions) if found is not None else None
        return self._found[written]


def _helper(index: ProjectIndex, found: Definition, written: str, positions: Mapping[str, int]) -> Optional[HelperLayer]:
    if found.kind == "class":
        return _wrapper(index, found, written, positions)
    function = found.function
    if found.kind != "function" or function is None or function.decorators or function.is_async:
        return None
    body = index.function_body(found)
    if body is None or body.is_generator or not body.returns:
        return None
    specs = {_spec(body, form, positions) for form in body.returns}
    if len(specs) != 1:
        return None
    spec = specs.pop()
    if spec is None:
        return None
    qualname, bias = spec
    if type(bias) is not Ref:
        return HelperLayer(written, qualname, fixed=_literal(bias))
    param = function.param(bias.name)
    if param is None or param.kind not in ("positional", "keyword") or _rebound(index, found, bias.name):
        return HelperLayer(written, qualname, fixed=UNKNOWN)
    position = None
    if param.kind == "positional":
        position = [p.name for p in function.params if p.kind == "positional"].index(param.name)
    default = MISSING if param.default is None else _literal(param.default)
    return HelperLayer(written, qualname, param.name, position, default)


def _wrapper(index: ProjectIndex, found: Definition, written: str, positions: Mapping[str, int]) -> Optional[HelperLayer]:
    """A project ``nn.Module`` class that wraps one layer: its own ``__init__`` binds
    ``self.<attr>`` once to a ``torch.nn`` layer call and nothing else to a layer, and its
    own ``forward`` ends in ``return self.<attr>(...)`` (or ``x = self.<attr>(...)``, then
    ``return x``), its only ``return``: the wrapper's output is that layer's (a same-padding
    conv that pads, then convolves). Its bias is read from ``__init__``'s parameters as a
    helper function's is."""
    klass = found.klass
    if klass is None or klass.decorators or found.path is None or not index.is_nn_module(found):
        return None
    init, forward = klass.method("__init__"), klass.method("forward")
    if init is None or forward is None or init.decorators or forward.decorators:
        return None
    body = index.class_body(found)
    if body is None:
        return None
    layers = [(a, _spec_call(a.form, positions)) for a in body.attributes]
    layers = [(a, spec) for a, spec in layers if spec is not None]
    if len(layers) != 1 or layers[0][0].rebound:
        return None
    attribute, (qualname, bias) = layers[0]
    text = index.text(found.path)
    node = None if text is None else locate(text, forward.line, forward.end_line, forward.name, False)
    if node is None or not _ends_in(node, attribute.name):
        return None
    if type(bias) is not Ref:
        return HelperLayer(written, qualname, fixed=_literal(bias))
    param = init.param(bias.name)
    init_definition = Definition("method", found.path, f"{found.name}.__init__", function=init)
    if param is None or param.kind not in ("positional", "keyword") or _rebound(index, init_definition, bias.name):
        return HelperLayer(written, qualname, fixed=UNKNOWN)
    position = None
    if param.kind == "positional":
        position = [p.name for p in init.params if p.kind == "positional"].index(param.name) - 1  # after `self`
        if position < 0:
            return None
    default = MISSING if param.default is None else _literal(param.default)
    return HelperLayer(written, qualname, param.name, position, default)


def _ends_in(function: ast.AST, attribute: str) -> bool:
    """``forward``'s one ``return`` is its last statement and gives ``self.<attribute>(...)``
    directly or through the name the statement before binds to it."""
    if any(type(n) in (ast.Yield, ast.YieldFrom) for n in ast.walk(function)):
        return False
    if sum(1 for n in ast.walk(function) if type(n) is ast.Return) != 1:
        return False
    statements = function.body  # type: ignore[attr-defined]
    last = statements[-1] if statements else None
    if type(last) is not ast.Return or last.value is None:
        return False
    value = last.value
    if type(value) is ast.Name and len(statements) > 1:
        before = statements[-2]
        if type(before) is ast.Assign and len(before.targets) == 1 and type(before.targets[0]) is ast.Name and before.targets[0].id == value.id:
            value = before.value
    if type(value) is not ast.Call or type(value.func) is not ast.Attribute or value.func.attr != attribute:
        return False
    owner = value.func.value
    positional = function.args.posonlyargs + function.args.args  # type: ignore[attr-defined]
    return type(owner) is ast.Name and bool(positional) and owner.id == positional[0].arg


def _spec_call(form: Form, positions: Mapping[str, int]) -> Optional[Tuple[str, Any]]:
    """(the layer class, its bias form) when ``form`` is a plain call of a layer class."""
    if type(form) is not Call:
        return None
    qualname = form.callee
    position = positions.get(qualname or "")
    if qualname is None or position is None:
        return None
    bias = form.keyword("bias")
    if bias is None and position < len(form.args):
        bias = form.args[position]
    if bias is None:
        return None if form.star or form.dstar else (qualname, MISSING)
    if type(bias) is Ref and "." in bias.name:
        return None
    return (qualname, bias) if type(bias) in (Lit, Ref) else None


def _spec(body: FunctionBody, form: Form, positions: Mapping[str, int]) -> Optional[Tuple[str, Any]]:
    """(the layer class, the form of its bias argument or ``MISSING``) a return builds."""
    for _ in range(_MAX_BINDINGS):
        if type(form) is not Ref or "." in form.name:  # type: ignore[union-attr]
            break
        binding = body.binding(form.name)  # type: ignore[union-attr]
        if binding is None or binding.mutated:
            return None
        form = binding.form
    return _spec_call(form, positions)


def _literal(form: Any) -> Any:
    if form is MISSING:
        return MISSING
    return form.value if type(form) is Lit else UNKNOWN


def _rebound(index: ProjectIndex, found: Definition, name: str) -> bool:
    """Whether the helper assigns its parameter ``name`` (then the call does not decide it)."""
    function = found.function
    text = None if found.path is None else index.text(found.path)
    node = None if text is None or function is None else locate(text, function.line, function.end_line, function.name, False)
    if node is None:
        return True
    return any(
        (type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load)  # type: ignore[attr-defined]
        or (type(n) in (ast.Global, ast.Nonlocal) and name in n.names)  # type: ignore[attr-defined]
        for n in ast.walk(node)
    )
