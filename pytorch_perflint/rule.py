"""The rule contract: what a rule declares, what it sees while it runs, how it reports.

A rule is one class in one module of a family package under ``pytorch_perflint.rules``
(``rules/<family>/tpfNNN_name.py``). It is a LibCST batched visitor: the engine runs every
selected rule in a single pass over the tree. Everything about a rule lives on its class:
code, name, message, docs (the class docstring, written like ruff's rule pages), fix
applicability, version gate, preview flag, trigger words for the cheap pre-screen, and
VALID/INVALID examples that the test suite runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Hashable, Mapping, Optional, Sequence, Tuple, Union

import libcst as cst

from .context import FileContext
from .finding import Finding, NodeFix, Replacement
from .types import Applicability

if TYPE_CHECKING:
    from .project.index import ProjectIndex


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
    # Whether the rule's findings depend only on the statement holding them (and what the
    # names there are bound to): it then answers ``candidates_tree`` (see ``narrowing``).
    statement_local: ClassVar[bool] = False
    # Rules that only matter on a GPU skip modules that never mention CUDA.
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
    def could_fire_project(cls, tree: "ast.Module", path: str, project: "ProjectIndex") -> bool:
        """A third pre-screen, asked in a file's project (``path`` absolute) of files that
        passed ``could_fire_tree``, before LibCST: for a rule whose finding needs a fact of
        other modules, whether the index can hold it. Over-approximates, as the others.
        By default, the answer to the rule's ``project_question``."""
        question = cls.project_question(tree)
        return question is None or cls.could_fire_answering(question, path, project) is not False

    @classmethod
    def project_question(cls, tree: "ast.Module") -> Optional[Hashable]:
        """What ``could_fire_project`` asks the project, worked out from the tree as plain
        data (None: it needs the tree itself). A run that summarised the project works it
        out in the summarising worker, which holds the tree, and the lint phase answers it
        with ``could_fire_answering`` without parsing the file again."""
        return None

    @classmethod
    def could_fire_answering(cls, question: Hashable, path: str, project: "ProjectIndex") -> Optional[bool]:
        """``could_fire_project`` from the ``project_question`` of the file's tree. None: the
        question cannot decide this file, and ``could_fire_project`` is asked with the tree
        (parsed again: a screen whose answer is mostly decided by the question alone)."""
        return True

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
