"""Dict displays read through a name: ``models[name]`` where ``models = {...}``.

A factory table (``models = {"resnet50": resnet50, ...}`` then ``models[name](**kwargs)``)
is the common way a project chooses a model, a loss or a loader by name. The engine reads
an item of such a dict as the entry its literal key names, or, when the key is not known,
as one of the dict's values (the engine joins them: known only when they agree). A dict
changed in place (``models[k] = v``, ``models.update(...)``) or holding ``**other`` entries
is not read: its entries may not all be in the display.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

from .forms import Dict as DictForm
from .forms import Form, Lit, Ref

if TYPE_CHECKING:
    from .index import ProjectIndex
    from .values import Where

MAX_ENTRIES = 64  # a larger table is not read (the join would read every entry)


def dict_display(form: Form, where: "Where", index: Optional["ProjectIndex"]) -> Optional[Tuple[DictForm, "Where"]]:
    """The dict display ``form`` is, or the one a plain name is bound to where it is read
    (a local binding or a module-level one, not changed in place), with where its entries
    are read; None when not known."""
    if type(form) is DictForm:
        return (form, where) if _complete(form) else None
    if type(form) is not Ref or "." in form.name:
        return None
    current: Optional["Where"] = where
    first = True
    while current is not None:
        scope = current.scope
        if scope is None:
            return _module_display(current.path, form.name, index, type(where))
        status, value, line = scope.value_at(form.name, current.line if first else 0)
        if status == "value":
            return (value, current.at(line)) if type(value) is DictForm and _complete(value) else None
        if status in ("param", "unknown"):
            return None
        if status == "defined" or scope.module:
            return _module_display(current.path, form.name, index, type(where))
        current = current.parent if current.parent is not None else type(where)(current.path)
        first = first and scope.inline
    return None


def candidates(display: DictForm, key: Form) -> List[Form]:
    """The entries an item with ``key`` may be: the last one a literal key names, or every
    value when the key is not a literal."""
    if type(key) is Lit:
        named = [v for k, v in display.items if type(k) is Lit and k.value == key.value]
        return named[-1:]
    return [v for _, v in display.items]


def _complete(display: DictForm) -> bool:
    return not display.truncated and len(display.items) <= MAX_ENTRIES and all(k is not None for k, _ in display.items)


def _module_display(path: Optional[str], name: str, index: Optional["ProjectIndex"], where_type) -> Optional[Tuple[DictForm, "Where"]]:
    if index is None or path is None:
        return None
    definition = index.resolve(path, name)
    binding = definition.binding if definition is not None and definition.kind == "binding" else None
    if binding is None or binding.mutated or type(binding.form) is not DictForm or not _complete(binding.form):
        return None
    return binding.form, where_type(definition.path)
