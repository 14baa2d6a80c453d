"""What rules see of the file being linted: its source, tree, scopes and shared facts.

The engine builds one ``FileContext`` per file and keeps its ancestor and scope stacks
current during the single pass. It sits below the rule contract so that the facts modules
(``analysis/`` and the families' facts) can take it without importing ``rule.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

import libcst as cst

from .analysis.names import canonical
from .analysis.scope import (
    Scope,
    ScopeNode,
    build_scope,
    comprehension_binds,
    dotted_name,
)
from .finding import Finding

if TYPE_CHECKING:
    from .config import Settings
    from .project.index import ProjectIndex

T = TypeVar("T")


# The nodes that open a scope (LibCST's node classes are final: no subclasses to miss).
_SCOPE_NODE_TYPES = frozenset({cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef})


class FileContext:
    """What rules see of the file being linted, and the facts they share.

    The engine keeps ``ancestors`` (every node from the module down to the current one's
    parent) and the scope stack up to date during the single pass.

    ``project`` is the index of the project the file belongs to (``project/``): ask it
    about other modules (``ctx.project.resolve(ctx.path, "Net")``...). It is None for a
    file with no project root (a lone script), which is then a project of its own; a rule
    stays silent where it would need another module's facts.
    """

    def __init__(
        self,
        path: Path,
        source: str,
        module: cst.Module,
        settings: "Settings",
        project: Optional["ProjectIndex"] = None,
        on_accelerator: Optional[bool] = None,
        accelerator: Optional[Callable[[], bool]] = None,
        values: Optional[Callable[["FileContext"], Any]] = None,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.settings = settings
        self.project = project
        self.ancestors: List[cst.CSTNode] = []
        self._scope_nodes: List[ScopeNode] = []
        self._scopes: Dict[int, Scope] = {}
        self._facts: Dict[Any, Any] = {}
        self._stars: Dict[str, Optional[str]] = {}  # names only a star import binds
        self._has_star: Optional[bool] = None
        self._on_accelerator = on_accelerator  # the engine's answer, when it asked already
        self._accelerator = accelerator  # how to ask otherwise (the engine knows the project)
        self.findings: List[Finding] = []
        self._values_factory = values  # builds what answers ``value_of`` (the engine's)
        self._values: Any = None

    # -- the single pass keeps these current -------------------------------------------
    def enter(self, node: cst.CSTNode) -> None:
        self.ancestors.append(node)
        if type(node) in _SCOPE_NODE_TYPES:
            self._scope_nodes.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        self.ancestors.pop()
        if self._scope_nodes and self._scope_nodes[-1] is node:
            self._scope_nodes.pop()

    # -- scopes and names ----------------------------------------------------------------
    def scope_of(self, nodes: Sequence[ScopeNode]) -> Scope:
        """The scope for a chain of scope nodes (outermost first), built on first use."""
        scope: Optional[Scope] = None
        for node in nodes:
            built = self._scopes.get(id(node))
            if built is None:
                built = build_scope(node, scope)
                self._scopes[id(node)] = built
            scope = built
        assert scope is not None
        return scope

    @property
    def scope(self) -> Scope:
        """The innermost scope at the current point of the pass."""
        return self.scope_of(self._scope_nodes or [self.module])

    @property
    def module_scope(self) -> Scope:
        return self.scope_of([self.module])

    def scope_for(self, node: cst.CSTNode, ancestors: Sequence[cst.CSTNode]) -> Scope:
        """The scope a node stands in, given its ancestors (outermost first)."""
        chain = [a for a in ancestors if type(a) in (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)]
        return self.scope_of(chain or [self.module])

    def qualname(self, expr: cst.CSTNode, scope: Optional[Scope] = None, ancestors: Optional[Sequence[cst.CSTNode]] = None) -> Optional[str]:
        """The canonical qualified name ``expr`` refers to, through the file's imports.

        ``th.nn.DataParallel`` after ``import torch as th`` is ``torch.nn.DataParallel``; a
        name that is not imported, or is shadowed by a local, gives None (but where a later
        binding of the scope shadows it: ``_import_reaching``, for a node under the current
        node of the pass, or under ``ancestors``: the module and its statements down to it).
        """
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = (scope or self.scope).lookup_import(head)
        if target is None:
            target = self._star_imported(head, scope or self.scope)
        if target is None and (scope is None or ancestors):
            target = self._import_reaching(expr, head, scope or self.scope, ancestors)
        if target is None:
            return None
        if scope is None and comprehension_binds([*self.ancestors, expr], head):
            return None
        return canonical(f"{target}.{rest}" if rest else target)

    def _import_reaching(self, expr: cst.CSTNode, name: str, scope: Scope, ancestors: Optional[Sequence[cst.CSTNode]]) -> Optional[str]:
        """The import a name of the current scope holds where ``expr`` reads it, when the
        scope also binds it otherwise, later (``from torch.utils import data`` ... ``for
        data in loader:``): the value engine's statement order decides (rare, so asked late;
        only for a module alias read at module level, as in scripts)."""
        if not isinstance(expr, cst.Attribute) or not isinstance(scope.node, cst.Module):
            return None  # a screen: scripts' module aliases (`data.DataLoader`), the costly ask is rare
        if name not in scope.imports or name not in scope.bindings or self.values() is None:
            return None
        node = expr
        while isinstance(node, cst.Attribute):
            node = node.value
        statement = ancestors[1] if ancestors is not None and len(ancestors) > 1 else None
        if ancestors is not None and statement is None:
            return None
        return scope.imports[name] if isinstance(node, cst.Name) and self.values().import_reaches(node, statement) else None

    def _star_imported(self, name: str, scope: Scope) -> Optional[str]:
        """What ``name`` means when only a star import of a project module can bind it
        (``from utils import *`` where ``utils.py`` has ``import torch``): the project
        index follows the star imports (``__all__`` and re-exports included). None when
        anything here binds the name, or it is not an external import there."""
        if self.project is None or not self._star_imports() or scope.binds_in_chain(name):
            return None
        if name not in self._stars:
            found = self.project.resolve(self.path, name)
            external = found is not None and found.kind == "external" and found.qualname
            self._stars[name] = found.qualname if external else None  # type: ignore[union-attr]
        return self._stars[name]

    def _star_imports(self) -> bool:
        """Whether the file has a star import (searched once: ``qualname`` asks often)."""
        if self._has_star is None:
            self._has_star = "import *" in self.source
        return self._has_star

    def call_qualname(self, call: cst.Call, scope: Optional[Scope] = None) -> Optional[str]:
        return self.qualname(call.func, scope)

    def lookup(self, name: str) -> Optional[cst.BaseExpression]:
        """The expression a name is bound to once in the current scope chain, if any."""
        return self.scope.lookup_value(name)

    def torch_ref(self) -> Optional[Tuple[str, Tuple[str, ...]]]:
        """How inserted code should spell ``torch`` here, and the imports that needs.

        ``import torch as th`` gives ``("th", ())``; a file without a module-level
        ``import torch`` gives ``("torch", ("torch",))``. None when ``torch`` is shadowed
        here, so no fix can name it.
        """
        for name, target in self.module_scope.imports.items():
            if target == "torch" and self.scope.lookup_import(name) == "torch":
                return name, ()
        if "torch" in self.module_scope.bindings or self.scope.lookup_value("torch") is not None:
            return None
        if self.scope.lookup_import("torch") not in (None, "torch"):
            return None
        return "torch", ("torch",)

    def value_of(self, node: cst.BaseExpression, statement: Optional[cst.CSTNode] = None) -> Any:
        """What kind of value ``node`` (an expression under the current node of the pass,
        or anywhere in ``statement``, the module-level statement that holds it) holds, from
        the project's value engine: a ``project.kinds`` value, ``Unknown`` when not known
        (and None when this context was built without the engine)."""
        values = self.values()
        return None if values is None else values.kind_of(node, statement)

    @property
    def models(self) -> Any:
        """The engine's questions about models (``project.module_values.ModuleValues``),
        None without the engine."""
        values = self.values()
        return None if values is None else values.engine.models

    def values(self) -> Any:
        """What answers value questions about this file (``file_values.FileValues``: kinds,
        and what a call runs in the project), None without the engine."""
        if self._values is None and self._values_factory is not None:
            self._values = self._values_factory(self)
        return self._values

    def release(self) -> None:
        """Drop what the pass built (the value engine's answers, the shared facts, the
        scopes) once the file's diagnostics are made: they refer back to this context, and
        the syntax trees they hold would otherwise wait for the cyclic collector."""
        self._values = None
        self._facts.clear()
        self._scopes.clear()

    # -- shared facts ----------------------------------------------------------------------
    def fact(self, compute: Callable[["FileContext"], T]) -> T:
        """Compute a per-file fact once, however many rules ask for it."""
        if compute not in self._facts:
            self._facts[compute] = compute(self)
        return self._facts[compute]

    @property
    def runs_on_accelerator(self) -> bool:
        """RULES.md's "runs on an accelerator": this file selects a GPU-class device, or an
        entry script that imports it (through project modules) reaches one that does, under
        the ``accelerator`` setting. Rules with ``needs_cuda`` never run where it is false."""
        if self._on_accelerator is None:
            self._on_accelerator = self._accelerator() if self._accelerator is not None else False
        return self._on_accelerator

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
