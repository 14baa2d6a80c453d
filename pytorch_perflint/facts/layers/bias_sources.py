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


def _spec(body: FunctionBody, form: Form, positions: Mapping[str, int]) -> Optional[Tuple[str, Any]]:
    """(the layer class, the form of its bias argument or ``MISSING``) a return builds."""
    for _ in range(_MAX_BINDINGS):
        if type(form) is not Ref or "." in form.name:  # type: ignore[union-attr]
            break
        binding = body.binding(form.name)  # type: ignore[union-attr]
        if binding is None or binding.mutated:
            return None
        form = binding.form
    if type(form) is not Call:
        return None
    qualname = form.callee  # type: ignore[union-attr]
    position = positions.get(qualname or "")
    if qualname is None or position is None:
        return None
    bias = form.keyword("bias")  # type: ignore[union-attr]
    if bias is None and position < len(form.args):  # type: ignore[union-attr]
        bias = form.args[position]  # type: ignore[union-attr]
    if bias is None:
        if form.star or form.dstar:  # type: ignore[union-attr]
            return None
        return qualname, MISSING
    if type(bias) is Ref and "." in bias.name:  # type: ignore[union-attr]
        return None
    return qualname, bias if type(bias) in (Lit, Ref) else None


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
