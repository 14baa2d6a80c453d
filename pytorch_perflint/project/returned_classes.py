"""The callers of a project class that a project function returns (``def
pipeline_factory(cfg): ... return Dataset, collate, Runner``): the calls of the name each
caller binds it to (``dataset_class, collate_fn, runner_class = pipeline_factory(cfg)``,
then ``runner_class(model, loader, ...)``).

A class used as a value escapes, so its callers are not known (``Resolution._direct``),
except here: the use is the whole value of a ``return`` or one item of a returned tuple,
in a module-level function whose every call is known and is the whole value of a plain
assignment in a function (``name = f(...)``, or a tuple of names unpacking it, the class's
position taken), and that name is only ever called in that function (never read
otherwise, never bound another way). Each such call may construct the class (or another
the function returns there): reading them all keeps "every caller agrees" sound.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .bodies import locate
from .forms import FormBuilder
from .registry_callers import _site
from .summary import CallSite

if TYPE_CHECKING:
    from .resolution import Resolution, Site

MAX_RETURN_CALLERS = 16
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def returned_class_calls(resolution: "Resolution", path: str, site: CallSite) -> Optional[List["Site"]]:
    """The calls of what the function around the non-call use ``site`` returns it as,
    None when it is not such a use or a caller cannot be followed."""
    if not site.caller or "." in site.caller:
        return None
    index = resolution.index
    factory = index.resolve(path, site.caller)
    node = _function_node(index, factory)
    if node is None:
        return None
    places = _returned_places(node, site.callee, site.line)
    if places is None:
        return None
    callers = resolution.callers(factory)
    if callers is None or len(callers) > MAX_RETURN_CALLERS:
        return None
    out: List["Site"] = []
    seen = set()
    for caller_path, call in callers:
        if not call.caller or call.star or call.dstar:
            return None
        found = _bound_calls(index, caller_path, call, places)
        if found is None:
            return None
        for made in found:
            key = (caller_path, made.caller, made.line, made.callee)
            if key not in seen:
                seen.add(key)
                out.append((caller_path, made))
    return out


def _function_node(index, definition) -> Optional[ast.AST]:
    function = definition.function if definition is not None and definition.kind in ("function", "method") else None
    text = index.text(definition.path) if function is not None and definition.path else None
    return locate(text, function.line, function.end_line, function.name, False) if text is not None else None


def _returned_places(node: ast.AST, name: str, line: int) -> Optional[Tuple[Optional[int], ...]]:
    """Where each read of ``name`` on ``line`` stands in a ``return`` of the function: None
    for the whole value, else its tuple position; None when a read there is anything else."""
    reads = [n for n in ast.walk(node) if type(n) is ast.Name and n.id == name and n.lineno == line]
    returns = [n for n in ast.walk(node) if type(n) is ast.Return and n.value is not None]
    places: List[Optional[int]] = []
    for read in reads:
        place = next((_place(r.value, read) for r in returns if _place(r.value, read) is not False), False)  # type: ignore[arg-type]
        if place is False:
            return None
        places.append(place)  # type: ignore[arg-type]
    return tuple(places) if places else None


def _place(value: ast.expr, read: ast.Name):
    if value is read:
        return None
    if type(value) is ast.Tuple and not any(type(e) is ast.Starred for e in value.elts):
        for position, element in enumerate(value.elts):
            if element is read:
                return position
    return False


def _bound_calls(index, path: str, call: CallSite, places: Tuple[Optional[int], ...]) -> Optional[List[CallSite]]:
    """The calls of the names the assignment of the factory call ``call`` binds at
    ``places``, in its function; None when it is not such an assignment or a name is
    used another way."""
    definition = index.resolve(path, call.caller)
    node = _function_node(index, definition)
    if node is None:
        return None
    parents: Dict[int, ast.AST] = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    assigns = [
        n for n in ast.walk(node)
        if type(n) is ast.Assign and type(n.value) is ast.Call and n.value.lineno == call.line and ast.unparse(n.value.func) == call.callee
    ]
    if len(assigns) != 1 or len(assigns[0].targets) != 1:
        return None
    target = assigns[0].targets[0]
    names = []
    for place in places:
        if place is None and type(target) is ast.Name:
            names.append(target.id)
        elif place is not None and type(target) is ast.Tuple and len(target.elts) > place and not any(type(e) is ast.Starred for e in target.elts) and type(target.elts[place]) is ast.Name:
            names.append(target.elts[place].id)  # type: ignore[attr-defined]
        else:
            return None
    builder = FormBuilder(dict(index.summary(path).aliases))
    nested = {id(n) for inner in ast.walk(node) if inner is not node and isinstance(inner, _SCOPES) for n in ast.walk(inner)}
    out: List[CallSite] = []
    for name in names:
        for use in (n for n in ast.walk(node) if type(n) is ast.Name and n.id == name):
            if id(use) in nested:
                return None  # read in a nested function: its arguments are not the caller's
            holder = parents.get(id(use))
            if type(use.ctx) is not ast.Load:
                if not _binds_from_same_factory(holder, parents, call.callee):
                    return None
                continue
            if type(holder) is not ast.Call or holder.func is not use:
                return None  # read some other way: handed on, its attributes read
            out.append(_site(builder, holder, call.caller))
    return out


def _binds_from_same_factory(holder: Optional[ast.AST], parents: Dict[int, ast.AST], callee: str) -> bool:
    """A store of the name by ``... = callee(...)`` (another call of the same factory:
    its calls are read through that call's own site)."""
    while holder is not None and type(holder) is ast.Tuple:
        holder = parents.get(id(holder))
    return type(holder) is ast.Assign and type(holder.value) is ast.Call and ast.unparse(holder.value.func) == callee
