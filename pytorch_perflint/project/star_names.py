"""Library names that reach a module only through a star import of a project module
(``from utils import *`` where ``utils.py`` has ``import torch``): the value engine reads
``torch.zeros(...)`` there as the torch factory, as ``FileContext.qualname`` does for the
linted file's LibCST nodes.

The forms of a module qualify a name through the module's own imports only (a summary
depends on its own text); which names a star import binds is the index's to say
(``resolve`` follows star imports, ``__all__`` and re-exports), so it is asked here, when
a call's callee has no qualified name and the module has a star import at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .values import ValueEngine, Where


def star_qualname(engine: "ValueEngine", name: str, where: "Where") -> Optional[str]:
    """The qualified name of the dotted ``name`` read at ``where`` when its head is bound
    only by a star import of a project module and means an external (library) name; None
    when any scope around the read binds the head, or the module has no star import."""
    index = engine.index
    if index is None or where.path is None:
        return None
    path = where.path

    def has_star() -> bool:  # once per module and index generation: `summary` stats the file
        summary = index.summary(path)  # type: ignore[union-attr]
        return summary.ok and any(record.star and record.module_scope for record in summary.imports)

    if engine._memoised(("star-import", path), has_star) is not True:  # type: ignore[arg-type]
        return None
    head, _, rest = name.partition(".")
    current: Optional["Where"] = where
    while current is not None and current.scope is not None:
        if not current.scope.module and current.scope.value_at(head, 0)[0] != "free":
            return None  # a local, a parameter: not the imported name
        current = current.parent
    found = index.resolve(where.path, head)
    if found is None or found.kind != "external" or not found.qualname:
        return None
    return f"{found.qualname}.{rest}" if rest else found.qualname
