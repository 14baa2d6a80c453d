"""``Definition``: what a project name resolves to (``resolution.Resolution.resolve``),
the key every value question about a function, class, method or binding is asked by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from .summary import Binding, ClassSummary, FunctionSummary


@dataclass(frozen=True)
class Definition:
    """What a name resolved to.

    ``kind``: ``function`` (module level), ``class``, ``method`` (``name`` is
    ``Class.method``), ``binding`` (a module-level or class-level name bound once),
    ``module`` (``path`` its file, or ``namespace`` its folder), ``external`` (outside
    the project; ``qualname`` says what it is).
    """

    kind: str
    path: Optional[str] = None
    name: str = ""
    qualname: Optional[str] = None
    namespace: Optional[str] = None
    function: Optional[FunctionSummary] = None
    klass: Optional[ClassSummary] = None
    binding: Optional[Binding] = None

    @property
    def key(self) -> Tuple[str, Optional[str], str, Optional[str]]:
        return (self.kind, self.path, self.name, self.qualname or self.namespace)
