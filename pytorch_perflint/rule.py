"""The rule contract: what a rule declares, what it sees while it runs, how it reports.

A rule is one class in one module under ``pytorch_perflint.rules``. It is a LibCST batched
visitor: the engine runs every enabled rule in a single pass over the tree. Everything about
a rule lives on its class: code, name, message, docs (the class docstring, written like
ruff's rule pages), fix applicability, version gate, preview flag, trigger words for the
cheap pre-screen, and VALID/INVALID examples that the test suite runs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ClassVar,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import libcst as cst

from .analysis.names import canonical
from .analysis.scope import Scope, ScopeNode, build_scope, comprehension_binds, dotted_name
from .comments import comment_start
from .types import Applicability

if TYPE_CHECKING:
    from .config import Settings
    from .project.index import ProjectIndex

Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]
T = TypeVar("T")


@dataclass(frozen=True)
class NodeFix:
    """A fix in tree form: nodes of the parsed module and what replaces each.

    ``imports`` names modules the replacement code needs (``import torch``); the fixer adds
    each once, with LibCST's AddImportsVisitor.
    """

    replacements: Tuple[Tuple[cst.CSTNode, Replacement], ...]
    applicability: Applicability
    message: str
    imports: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Valid:
    """Code the rule must not flag (with optional settings overrides)."""

    code: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag.

    ``line`` is the 1-based line of the anchor; ``expected_fix`` is the code after the rule's
    own fix (unsafe included), when the rule has one.
    """

    code: str
    line: Optional[int] = None
    expected_fix: Optional[str] = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Finding:
    """What a rule reported, before positions are known."""

    rule: "type[Rule]"
    node: cst.CSTNode
    message: str
    fix: Optional[NodeFix] = None


_CUDA_PATTERN = re.compile(
    r"""\.cuda\s*\(|["']cuda|\bcuda\.is_available|non_blocking\s*=|\bcuda\.amp|"""
    r"""\bcuda\.synchronize|device_type\s*=\s*["']cuda"""
)


_LONG_STRING = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""' + r"|'''(?:[^'\\]|\\.|'(?!''))*'''", re.DOTALL)


def mentions_cuda(source: str) -> bool:
    """Whether the code mentions a CUDA device (RULES.md's "the module uses CUDA"), whatever
    torch is imported as (``th.cuda.is_available()``); commented-out code and prose in
    triple-quoted strings (docstrings: "call ``model.cuda()`` first") do not count."""
    if "cuda" not in source and "non_blocking" not in source:
        return False  # every spelling names one of them (a plain search is much faster)
    long_strings: Optional[List[Tuple[int, int]]] = None
    for match in _CUDA_PATTERN.finditer(source):
        offset = match.start()
        if _in_comment(source, offset):
            continue
        if long_strings is None:  # found once, and only when a mention needs it
            long_strings = [m.span() for m in _LONG_STRING.finditer(source)]
        if not any(start < offset < end for start, end in long_strings):
            return True
    return False


def _in_comment(source: str, offset: int) -> bool:
    """Whether ``offset`` lies in the comment of its line (a line the scanner cannot read
    alone, inside a multi-line string say, counts as code)."""
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    column = comment_start(source[start : end if end != -1 else len(source)])
    return column is not None and 0 <= column <= offset - start


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
        self._on_accelerator = on_accelerator  # the engine's answer, when it asked already
        self.findings: List[Finding] = []

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

    def qualname(self, expr: cst.CSTNode, scope: Optional[Scope] = None) -> Optional[str]:
        """The canonical qualified name ``expr`` refers to, through the file's imports.

        ``th.nn.DataParallel`` after ``import torch as th`` is ``torch.nn.DataParallel``; a
        name that is not imported, or is shadowed by a local, gives None.
        """
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = (scope or self.scope).lookup_import(head)
        if target is None:
            return None
        if scope is None and comprehension_binds([*self.ancestors, expr], head):
            return None
        return canonical(f"{target}.{rest}" if rest else target)

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
            from .project.linted import runs_on_accelerator

            self._on_accelerator = runs_on_accelerator(self.path, self.source, None, self.settings, self.project)
        return self._on_accelerator

    uses_cuda = runs_on_accelerator  # the old name

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule. Subclasses set the class attributes and visit nodes."""

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # The fix this rule offers, if any: the applicability ``fix()`` gives by default.
    fix_applicability: ClassVar[Optional[Applicability]] = None
    # Every applicability its fixes can have, when that depends on the finding (TPF402: safe
    # for a literal device, unsafe for a variable); empty: only ``fix_applicability``.
    # ``fix()`` refuses any other, so the docs tables (``fix_label``) cannot go stale.
    fix_applicabilities: ClassVar[Tuple[Applicability, ...]] = ()
    preview: ClassVar[bool] = False
    default_enabled: ClassVar[bool] = True
    # Substrings one of which must be in the file for the rule to be able to fire there.
    triggers: ClassVar[Tuple[str, ...]] = ()
    # Rules that only matter on an accelerator skip modules that do not run on one
    # (``FileContext.runs_on_accelerator``).
    needs_cuda: ClassVar[bool] = False
    # Inclusive lower and exclusive upper bound of target-torch-version, as (major, minor).
    min_torch: ClassVar[Optional[Tuple[int, int]]] = None
    max_torch: ClassVar[Optional[Tuple[int, int]]] = None
    VALID: ClassVar[Sequence[Union[str, Valid]]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    @classmethod
    def applies_to(cls, torch_version: Tuple[int, int]) -> bool:
        if cls.min_torch is not None and torch_version < cls.min_torch:
            return False
        if cls.max_torch is not None and torch_version >= cls.max_torch:
            return False
        return True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """The cheap pre-screen: can this rule fire anywhere in ``source``? A file no enabled
        rule could fire in is never parsed with LibCST. Override for a sharper test."""
        return not cls.triggers or any(trigger in source for trigger in cls.triggers)

    @classmethod
    def could_fire_tree(cls, tree: "ast.Module") -> Optional[bool]:
        """A second, sharper pre-screen on Python's own ``ast`` (about 13x cheaper to build
        than the LibCST tree), asked only of files that passed ``could_fire``. None: this
        rule has no such screen. It must over-approximate: the visitors stay the detectors."""
        return None

    @classmethod
    def candidates_tree(cls, tree: "ast.Module") -> Optional[Sequence["ast.AST"]]:
        """For a rule whose findings depend only on the statement holding them and on what
        the names there are bound to: the ``ast`` nodes it could fire at, which lets the
        engine parse only those statements of a large file (see ``narrowing``). None: the
        rule reads the whole module. Like ``could_fire_tree``, it must over-approximate."""
        return None

    @classmethod
    def applicabilities(cls) -> Tuple[Applicability, ...]:
        """The applicabilities this rule's fixes can have (empty: it offers no fix)."""
        if cls.fix_applicabilities:
            return cls.fix_applicabilities
        return (cls.fix_applicability,) if cls.fix_applicability is not None else ()

    @classmethod
    def fix_label(cls) -> str:
        """``safe``, ``unsafe``, ``safe/unsafe`` (depends on the finding), ``display-only``
        or ``none``: how the rules tables describe the fix."""
        kinds = cls.applicabilities()
        return "/".join(kind.value for kind in kinds) if kinds else "none"

    @classmethod
    def docs(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    def report(self, node: cst.CSTNode, message: Optional[str] = None, fix: Optional[NodeFix] = None) -> None:
        """Report ``node`` (the anchor; its full range is the diagnostic's range)."""
        self.context.findings.append(Finding(type(self), node, message or self.message, fix))

    def fix(
        self,
        replacements: Sequence[Tuple[cst.CSTNode, Replacement]],
        message: str,
        applicability: Optional[Applicability] = None,
        imports: Sequence[str] = (),
    ) -> NodeFix:
        """Build a fix with this rule's applicability unless another is given."""
        kind = applicability or self.fix_applicability
        assert kind is not None, f"{self.code} offers no fix"
        assert kind in self.applicabilities(), f"{self.code} made a fix that is {kind} but declares only {self.fix_label()}"
        return NodeFix(tuple(replacements), kind, message, tuple(imports))
