"""The callers of a project class registered in a module-level dict (``TRAINERS = {"bert":
BertTrainer, ...}``): the calls of the registry's items.

A class used as a value escapes, so its callers are not known (``Resolution._direct``), except
where the value is an entry of a dict display bound once at module level, not changed in
place, and that registry is only ever read as ``REG[key]`` whose result is called at once
(``REG[key](...)``) or bound once in a function to a name that is only called there
(``t = REG[key]`` ... ``t(...)``). Each such call may construct the class: those are its
callers (arguments read as the call writes them). Reading its keys (``REG.keys()``) is
harmless; any other use of the registry (``.get``, ``.items()``, handed to a call, another
module's alias) leaves the callers unknown.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional

from .bodies import locate
from .forms import Dict as DictForm, FormBuilder, Ref
from .summary import CallSite

if TYPE_CHECKING:
    from .resolution import Resolution, Site


def registry_calls(resolution: "Resolution", path: str, site: CallSite) -> Optional[List["Site"]]:
    """The calls of the registry the non-call use ``site`` (in module ``path``) enters,
    None when it is not such an entry or the registry's uses cannot all be read."""
    index = resolution.index
    if site.caller:
        return None
    summary = index.summary(path)
    holders = [
        b for b in summary.bindings
        if type(b.form) is DictForm and not b.form.truncated and b.line <= site.line
        and any(type(value) is Ref and value.name == site.callee for _, value in b.form.items)
    ]
    if len(holders) != 1 or holders[0].mutated:
        return None
    registry = holders[0].name
    if _aliased(index, registry):
        return None  # `from m import REG as R`: its uses under that name are not read
    out: List["Site"] = []
    for use_path, use in resolution._uses_of(registry):
        if use.callee == f"{registry}.keys" and use.called:
            continue  # its keys only (``choices=REG.keys()``)
        if use.callee != registry or use.called or not use.caller:
            return None  # `REG.get(...)`, `REG(...)`, a module-level read
        calls = _item_calls(index, use_path, use, registry)
        if calls is None:
            return None
        out.extend((use_path, call) for call in calls)
    return out


def _aliased(index, registry: str) -> bool:
    """Some module imports the registry under another name."""
    for path in sorted(index.module_paths()):
        if index.text_naming(path, registry) is None:
            continue
        for record in index.summary(path).imports:
            if record.name == registry and record.asname not in (None, registry):
                return True
    return False


def _item_calls(index, path: str, use: CallSite, registry: str) -> Optional[List[CallSite]]:
    """The calls of ``registry[...]`` read on the line of ``use``: called at once, or
    through one name."""
    text = index.text(path)
    definition = index.resolve(path, use.caller)
    function = definition.function if definition is not None else None
    node = locate(text, function.line, function.end_line, function.name, False) if text is not None and function is not None else None
    if node is None:
        return None
    builder = FormBuilder(dict(index.summary(path).aliases))
    parents = {id(child): parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    reads = [n for n in ast.walk(node) if type(n) is ast.Name and n.id == registry and n.lineno == use.line]
    calls: List[ast.Call] = []
    for read in reads:
        item = parents.get(id(read))
        if type(item) is ast.Attribute and item.attr == "keys" and type(parents.get(id(item))) is ast.Call:
            continue  # its keys only
        if type(item) is not ast.Subscript or item.value is not read:
            return None
        holder = parents.get(id(item))
        if type(holder) is ast.Call and holder.func is item:
            calls.append(holder)
            continue
        if not (type(holder) is ast.Assign and len(holder.targets) == 1 and type(holder.targets[0]) is ast.Name):
            return None
        name = holder.targets[0].id
        uses = [n for n in ast.walk(node) if type(n) is ast.Name and n.id == name and n is not holder.targets[0]]
        stores = [n for n in uses if type(n.ctx) is not ast.Load]
        loads = [n for n in uses if type(n.ctx) is ast.Load]
        called = [parents.get(id(n)) for n in loads]
        if stores or not loads or any(type(c) is not ast.Call or c.func is not n for c, n in zip(called, loads)):
            return None  # rebound, unused, or handed on
        calls.extend(called)  # type: ignore[arg-type]
    return [_site(builder, call, use.caller) for call in calls]


def _site(builder: FormBuilder, call: ast.Call, caller: str) -> CallSite:
    form = builder.form(call)
    return CallSite(
        callee=f"{ast.unparse(call.func)}",
        line=call.lineno,
        caller=caller,
        positional=sum(1 for a in call.args if type(a) is not ast.Starred),
        keywords=tuple(k.arg for k in call.keywords if k.arg is not None),
        star=any(type(a) is ast.Starred for a in call.args),
        dstar=any(k.arg is None for k in call.keywords),
        arguments=form,  # type: ignore[arg-type]
    )
