"""Calls that hand on every argument they were given: ``super().__init__(*args, **kwargs)``
in ``Sub.__init__(self, *args, **kwargs)``, ``f(*args, **kwargs)`` in ``g(*args,
**kwargs)``. Such a call passes, position for position and keyword for keyword, what each
call of the forwarding function passes, so a parameter of the callee is read off those
calls instead (``caller_arguments``).

Only the plain shape is followed: the forwarding function takes nothing but its ``*args``
and ``**kwargs`` (and ``self``), hands on exactly those, and uses neither name anywhere
else (a ``kwargs.pop("x")`` or ``args[1:]`` would change what is passed). Anything else
leaves the callee's parameter unknown, as a ``*``/``**`` call did before.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Tuple

from .bodies import locate
from .definition import Definition
from .forms import Ref
from .summary import CallSite

if TYPE_CHECKING:
    from .resolution import Resolution, Site

MAX_FORWARDS = 2  # a forward of a forward, at most


def forwarding_callers(resolution: "Resolution", path: str, site: CallSite) -> Optional[Tuple["Site", ...]]:
    """The calls of the function that makes the call ``site`` (in module ``path``) when it
    hands on its own ``*args``/``**kwargs`` unchanged, else None. A constructor's calls are
    its class's (``Sub(model, loader)`` for ``super().__init__(*args, **kwargs)``)."""
    call = site.arguments
    if call is None or not site.caller or call.args or call.kwargs:
        return None
    definition = resolution.index.resolve(path, site.caller)
    function = definition.function if definition is not None else None
    if definition is None or function is None or function.decorators or definition.kind not in ("function", "method"):
        return None
    params = function.params[1:] if definition.kind == "method" else function.params
    varargs = [p.name for p in params if p.kind == "vararg"]
    kwargs = [p.name for p in params if p.kind == "kwarg"]
    if len(params) != len(varargs) + len(kwargs) or not params:
        return None  # named parameters take some of the callers' arguments
    handed = ([call.starred] if call.star else []) + list(call.dstar)
    expected = [Ref(name) for name in varargs if call.star] + [Ref(name) for name in kwargs if call.dstar]
    if call.star and call.starred is None or handed != expected or len(handed) != len(params):
        return None
    if not _used_once(resolution, definition, [p.name for p in params], site.line):
        return None
    if definition.kind == "method" and definition.name.endswith(".__init__"):
        owner = Definition("class", definition.path, definition.name.rpartition(".")[0], klass=definition.klass)
        return resolution.callers(owner)
    return resolution.callers(definition)


def _used_once(resolution: "Resolution", definition: Definition, names: list, line: int) -> bool:
    """Each of ``names`` is never bound in the function, and read before the forwarding
    call (on ``line``) only by that call (``args[3]``, an item read, anywhere; after the
    call nothing can change what it passed)."""
    function = definition.function
    text = resolution.index.text(definition.path) if definition.path else None
    node = locate(text, function.line, function.end_line, function.name, False) if text is not None and function is not None else None
    if node is None:
        return False
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    uses = [n for n in ast.walk(node) if type(n) is ast.Name and n.id in names]
    if any(type(n.ctx) is not ast.Load for n in uses):
        return False
    early = [n for n in uses if n.lineno <= line and not _item_read(n, parents)]
    return len(early) == len(names)


def _item_read(use: ast.Name, parents: dict) -> bool:
    holder = parents.get(id(use))
    return type(holder) is ast.Subscript and holder.value is use and type(holder.ctx) is ast.Load
