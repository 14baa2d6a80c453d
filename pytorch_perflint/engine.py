"""Linting one file: pre-screen, parse once, one batched pass of all enabled rules.

The flow is one way: source -> (cheap pre-screen) -> parsed module -> findings -> positions
(only for files that have findings) -> suppressions -> diagnostics.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import os
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    Callable,
    Dict,
    FrozenSet,
    Hashable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
)

import libcst as cst

from . import narrowing, screening
from .cst_parse import parse_module as parse_unchecked
from .analysis.ast_index import forget_trees
from .analysis.walk import child_nodes
from .config import Settings
from .context import FileContext
from .edits import FixEdits
from .facts.dead_arms import dead_nodes
from .file_values import FileValues
from .finding import Finding, NodeFix, PassFindings
from .positions import NodePositions
from .project.index import ProjectIndex
from .project.bodies import offer_tree
from .project.index import collector_paused as _collector_paused  # LibCST trees: see there
from .project.linted import runs_on_accelerator
from .pyparse import compile_python, verdict  # noqa: F401 - compile_python: the fixer's, the notebooks'
from .rule import Rule
from .selection import Selection, for_file
from .suppression import file_noqa, noqa_comments, suppressed, unused_noqa
from .testfiles import policy_for
from .unanalysed import source_size, too_large
from .types import Applicability, Diagnostic, Fix, Location

Range = Tuple[Tuple[int, int], Tuple[int, int]]

@dataclass
class FixCandidate:
    """A diagnostic's fix in tree form, with the ranges of the nodes it replaces."""

    diagnostic: Diagnostic
    fix: NodeFix
    ranges: Tuple[Range, ...]


@dataclass
class FileLint:
    """The result of linting one source text (kept in-process: it holds the tree)."""

    path: Path
    source: str
    module: Optional[cst.Module] = None
    diagnostics: List[Diagnostic] = field(default_factory=list)
    candidates: List[FixCandidate] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    # ``screen_only``: a rule passed its screens, so the file must be linted again with
    # the project index (nothing else here is filled in); ``passed``: those rules' codes,
    # each with its ``project_question`` of the tree (None: the project screen needs the tree).
    deferred: bool = False
    passed: Mapping[str, Optional[Hashable]] = field(default_factory=dict)


_LIBCST_ROW = re.compile(r"error at (\d+):\d+")


def _python_error(source: str, path: Path, tree: Optional[ast.Module]) -> Optional[Exception]:
    """Why Python itself rejects the source (None: it accepts it, the judge of validity)."""
    return None if tree is not None else verdict(source, path)[1]


def _syntax_error(path: Path, python_error: Exception, libcst_error: Optional[Exception] = None) -> Diagnostic:
    """TPF001 at Python's own position and message when it has one (they read better)."""
    row = getattr(libcst_error, "raw_line", 1) or 1
    column = (getattr(libcst_error, "raw_column", 0) or 0) + 1
    message = getattr(libcst_error, "message", None) or (str(libcst_error or python_error).splitlines() or [type(python_error).__name__])[0]
    kind = "SyntaxError"
    if isinstance(python_error, (RecursionError, MemoryError)):  # Python's own refusal, as it words it
        kind = type(python_error).__name__
        message = f"{python_error} (Python cannot compile code nested this deeply)"
    elif isinstance(python_error, SyntaxError):
        row = python_error.lineno or row
        column = python_error.offset or column
        message = python_error.msg or message
    return Diagnostic(
        code="TPF001",
        name="syntax-error",
        message=f"{kind}: {message}",
        path=path,
        location=Location(row, column),
        end_location=Location(row, column),
    )


def _unanalyzable(path: Path, source: str, libcst_error: Exception) -> Diagnostic:
    """TPF003: Python accepts the file and LibCST does not; say the fault is the tool's.

    The row is where LibCST's parser stopped when its message says (its ``raw_line`` points
    elsewhere); errors that are not parser errors (a TypeError inside LibCST) have no row.
    """
    if isinstance(libcst_error, cst.ParserSyntaxError):
        detail = libcst_error.message.strip()
        found = _LIBCST_ROW.search(detail)
    else:
        detail = "".join(traceback.format_exception_only(type(libcst_error), libcst_error)).strip()
        found = None
    row = min(int(found.group(1)), source.count("\n") + 1) if found else 1
    where = f"line {row}" if found else f"this file ({(detail.splitlines() or [''])[0][:120]})"
    return Diagnostic(
        code="TPF003",
        name="unanalyzable-file",
        message=(
            f"File not checked: Python accepts this code, but the tool's parser (LibCST "
            f"{_libcst_version()}) cannot read {where}. This is a limitation of pytorch-perflint, "
            "not an error in your code"
        ),
        path=path,
        location=Location(row, 1),
        end_location=Location(row, 1),
        noqa_row=row,
    )


@functools.lru_cache(maxsize=1)
def _libcst_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("libcst")
    except PackageNotFoundError:
        return "unknown version"


def _parse_failure(
    path: Path, source: str, error: Exception, codes: FrozenSet[str], tree: Optional[ast.Module]
) -> List[Diagnostic]:
    """What a LibCST parse failure is: the user's syntax error (TPF001) only when Python
    rejects the file too; else the tool's limitation (TPF003), which ``# noqa`` can silence."""
    python_error = _python_error(source, path, tree)
    if python_error is not None:
        return [_syntax_error(path, python_error, error)] if "TPF001" in codes else []
    if "TPF003" not in codes:
        return []
    diagnostic = _unanalyzable(path, source, error)
    return [] if suppressed(diagnostic, noqa_comments(source), {}) else [diagnostic]


def undecodable(path: Path, reason: str) -> Diagnostic:
    """The TPF001 diagnostic for a file that is not text we can parse."""
    return Diagnostic(
        code="TPF001",
        name="syntax-error",
        message=f"cannot be parsed: {reason}",
        path=path,
        location=Location(1, 1),
        end_location=Location(1, 1),
    )


def _culprit(error: BaseException, rules: Sequence[Rule]) -> Optional[Rule]:
    """The rule instance whose method raised, found from the traceback."""
    tb = error.__traceback__
    culprit = None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, Rule) and candidate in rules:
            culprit = candidate
        tb = tb.tb_next
    return culprit


def _traverse(context: FileContext, rules: Sequence[Rule]) -> None:
    """One pre-order pass over the code nodes (``analysis.walk.child_nodes``), calling each
    rule's ``visit_<Node>`` and ``leave_<Node>`` methods with the ancestor stack kept.

    It replaces ``cst.visit_batched``: LibCST's ``visit`` rebuilds and re-validates every
    node (whitespace and tokens included), which costs more than parsing the file. Rules
    cannot skip children (as in batched visitors) and attribute hooks are not supported.
    """
    visits: Dict[str, List[Callable[[cst.CSTNode], object]]] = {}
    leaves: Dict[str, List[Callable[[cst.CSTNode], object]]] = {}
    for rule in rules:
        for name in _visitor_names(type(rule)):
            method = getattr(rule, name)
            kind, _, node_type = name.partition("_")
            if "_" in node_type:
                raise TypeError(f"{type(rule).__name__}.{name}: attribute hooks are not supported")
            (visits if kind == "visit" else leaves).setdefault(node_type, []).append(method)
    no_calls: Tuple[Callable[[cst.CSTNode], object], ...] = ()
    ancestors = context.ancestors
    enter, leave = context.enter, context.leave
    # A node to enter, or None: leave the innermost node entered (``ancestors[-1]``).
    todo: List[Optional[cst.CSTNode]] = [context.module]
    pop, push, extend = todo.pop, todo.append, todo.extend
    while todo:
        node = pop()
        if node is None:
            node = ancestors[-1]
            for method in leaves.get(type(node).__name__, no_calls):
                method(node)
            leave(node)
            continue
        enter(node)
        for method in visits.get(type(node).__name__, no_calls):
            method(node)
        push(None)
        children = child_nodes(node)
        children.reverse()
        extend(children)


@functools.lru_cache(maxsize=None)
def _visitor_names(rule: Type[Rule]) -> Tuple[str, ...]:
    """The ``visit_*``/``leave_*`` methods a rule class defines, less LibCST's empty stubs:
    the names ``get_visitors`` gives, worked out once per class (it evaluates every
    attribute of the instance, once per rule and file)."""
    return tuple(
        name
        for name, function in inspect.getmembers(rule, inspect.isfunction)
        if name.startswith(("visit_", "leave_")) and not getattr(function, "_is_no_op", False)
    )


def _run_rules(context: FileContext, rule_classes: Sequence[Type[Rule]], errors: List[str]) -> None:
    """One batched pass; a rule that crashes is reported and the pass re-run without it."""
    remaining = list(rule_classes)
    while remaining:
        context.ancestors = []
        context.findings = found = PassFindings(context.ancestors)
        instances = [rule(context) for rule in remaining]
        try:
            _traverse(context, instances)
            if context.findings:  # code in an arm that never runs is not reported (``dead_arms``)
                dead = dead_nodes(context, (f.node for f in context.findings), found.paths)
                context.findings = [f for f in context.findings if id(f.node) not in dead]
            return
        except RecursionError:
            errors.append(f"{context.path}: too deeply nested to lint")
            context.findings = []
            return
        except MemoryError:
            raise  # not a rule's fault: the file is too large or complex (TPF003)
        except Exception as error:  # noqa: BLE001 - a rule's crash must not stop the run
            culprit = _culprit(error, instances)
            detail = "".join(traceback.format_exception_only(type(error), error)).strip()
            if culprit is None:
                errors.append(f"{context.path}: internal error: {detail}")
                context.findings = []
                return
            errors.append(f"{context.path}: internal error in {culprit.code} ({culprit.name}): {detail}")
            remaining = [r for r in remaining if r is not type(culprit)]
    context.findings = []


def lint_source(
    source: str,
    path: Path,
    settings: Settings,
    *,
    with_edits: bool = True,
    rules: Optional[Sequence[Type[Rule]]] = None,
    keep_module: bool = True,
    module: Optional[cst.Module] = None,
    tree: Optional[ast.Module] = None,
    selection: Optional[Selection] = None,
    project: Optional[ProjectIndex] = None,
    screen_only: bool = False,
    passed: Optional[Mapping[str, Optional[Hashable]]] = None,
) -> FileLint:
    """Lint one source text. ``selection`` is what the caller worked out for the file
    (the runner, once per file); without it, it is worked out here from ``settings``, and
    ``rules`` overrides the selectors (the tests use it).

    ``keep_module=False`` says the caller wants the diagnostics only (no ``module`` to fix,
    no fix candidates, no edits): then a large file may be parsed only in part.
    ``module`` and ``tree``: the LibCST and ``ast`` trees of exactly ``source``, when the
    caller has them (the fixer builds the next round's from the last one's), so that a large
    file is not parsed again. ``project``: the index of the project the file belongs to
    (``project.linted.index_for``); None lints the file as a project of its own.

    ``screen_only``: the project index is not built yet (a run summarising the whole project
    screens each file from the same ``ast`` tree). When any rule passes its screens the
    result is ``deferred`` and nothing else; otherwise it is the file's whole result, since
    no rule could have asked the project anything. ``passed``: the codes of the rules that
    passed the text and ``ast`` screens of exactly this text in such a run (the deferred
    result's ``passed``), which are not run again, with their project questions, which are
    answered without the tree.
    """
    with _collector_paused():
        chosen = selection if selection is not None else for_file(path, settings, rules)
        try:
            return _lint_source(source, path, settings, with_edits, chosen, keep_module, module, tree, project, screen_only, passed)
        finally:
            forget_trees()  # the screens' caches: the tree goes with the caller's last reference
            offer_tree(None, None)


def _lint_source(
    source: str,
    path: Path,
    settings: Settings,
    with_edits: bool,
    chosen: Selection,
    keep_module: bool = True,
    parsed: Optional[cst.Module] = None,
    parsed_tree: Optional[ast.Module] = None,
    project: Optional[ProjectIndex] = None,
    screen_only: bool = False,
    passed: Optional[Mapping[str, Optional[Hashable]]] = None,
) -> FileLint:
    result = FileLint(path=path, source=source)
    codes, rule_classes = chosen.codes, chosen.rules
    if file_noqa(source) and not settings.ignore_noqa:
        return result
    limit = settings.max_file_size
    if limit and source_size(source, limit) > limit:
        if "TPF003" in codes:
            result.diagnostics.append(too_large(path, source_size(source, limit), limit))
        return result
    test_policy = policy_for(path, settings.test_files, settings.project_root, source)
    if test_policy == "skip":  # one policy for every rule (testfiles.py); syntax errors still count
        rule_classes, codes = (), codes & {"TPF001"}
    want_unused_noqa = "TPF002" in codes and "noqa" in source.lower()
    own = os.path.abspath(path)
    answered: Set[Type[Rule]] = set()  # rules whose project screen was answered without the tree
    if passed is None:
        active = [r for r in rule_classes if r.could_fire(source)]
        active, tree = screening.screen_with_ast(active, source, parsed_tree)
    else:
        # The summarising worker parsed this very text (``passed`` is for it alone): it is
        # valid Python, and parsed again only for a rule whose project question (worked out
        # from that tree) does not already rule it out.
        active = [r for r in rule_classes if r.code in passed]
        if project is not None:
            answers = {r: screening.could_fire_answering(r, passed[r.code], own, project) for r in active if passed[r.code] is not None}
            answered = {r for r, answer in answers.items() if answer is not None}  # None: ask with the tree
            active = [r for r in active if answers.get(r) is not False]
        tree = parsed_tree if parsed_tree is not None or not active else screening.ast_tree(source)
    if tree is None and (active or ("TPF001" in codes and passed is None)):
        # Python is the judge: a file it rejects is TPF001 at once and never reaches LibCST
        # (deep nesting it refuses can cost LibCST minutes and gigabytes).
        tree, rejected = verdict(source, path)
        if rejected is not None:
            if "TPF001" in codes:
                result.diagnostics.append(_syntax_error(path, rejected))
            return result
    if project is not None and tree is not None and active:
        offer_tree(source, tree)  # the engine takes this file's functions from the tree
    if screen_only and active:
        result.deferred = True
        result.passed = {r.code: screening.project_question(r, tree) for r in active}
        return result
    if project is not None and tree is not None and active:
        active = [r for r in active if r in answered or screening.could_fire_in_project(r, tree, own, project)]
    on_accelerator: Optional[bool] = None
    if any(r.needs_cuda for r in active):
        on_accelerator = runs_on_accelerator(path, source, tree, settings, project)
        if not on_accelerator:
            active = [r for r in active if not r.needs_cuda]
    if not active:
        # Nothing can fire (the syntax check above stands in for the LibCST parse), and
        # every `noqa` naming one of our codes is unused.
        if want_unused_noqa:
            result.diagnostics.extend(unused_noqa(path, noqa_comments(source), {}))
        return result
    narrowed = lean = None  # a part of the file; the file without its data (narrowing)
    if not keep_module and active and tree is not None:
        narrowed = narrowing.narrowed_for(source, tree, active)
        lean = narrowing.without_data(source, tree) if narrowed is None else None
    try:
        if parsed is not None and narrowed is None:
            module = parsed
        else:
            module = parse_unchecked(narrowed or lean or source)  # Python accepted it: see cst_parse
    except RecursionError:
        result.errors.append(f"{path}: too deeply nested to parse")
        return result
    except MemoryError:
        raise  # past the worker's memory cap: TPF003 (runner, workers)
    except Exception as error:  # noqa: BLE001 - LibCST also fails on some valid code with a TypeError
        if narrowed is not None or lean is not None:  # a part of the file: decide on the whole file
            return _lint_source(source, path, settings, with_edits, chosen, project=project)
        result.diagnostics.extend(_parse_failure(path, source, error, codes, tree))
        return result
    if narrowed is None and lean is None:
        result.module = module
    ask = functools.partial(runs_on_accelerator, path, source, tree, settings, project)
    values = functools.partial(FileValues, text=narrowed or source, tree=None if narrowed is not None else tree)
    context = FileContext(path, source, module, settings, project, on_accelerator, ask, values)
    if active:
        _run_rules(context, active, result.errors)
    findings = context.findings
    if narrowed is not None and with_edits and any(f.fix is not None and f.fix.imports for f in findings):
        # Where an added import goes depends on imports that were blanked: parse it whole.
        return _lint_source(source, path, settings, with_edits, chosen, project=project)
    if test_policy == "no-fix":
        for finding in findings:
            finding.fix = finding.fix and _shown_only(finding.fix)
    noqa = noqa_comments(source) if (findings or want_unused_noqa) else {}
    used: Dict[int, set] = {}
    if findings:
        if narrowed is None:
            positions = NodePositions(module, _positioned_nodes(findings), lean or source, tree)
        else:
            positions = NodePositions(module, _positioned_nodes(findings))
        seen = set()
        # Parsed in part, the module's text keeps every kept line on its row: its edits
        # are the whole file's.
        edit_maker = FixEdits(module, narrowed or lean or source, positions) if with_edits else None
        for finding in findings:
            diagnostic, candidate = _to_diagnostic(finding, positions, path, edit_maker)
            key = (diagnostic.code, diagnostic.location, diagnostic.end_location)
            if key in seen:
                continue
            seen.add(key)
            if suppressed(diagnostic, noqa, used) and not settings.ignore_noqa:
                continue  # (--ignore-noqa still notes which comments matched, for TPF002)
            result.diagnostics.append(diagnostic)
            if candidate is not None and narrowed is None and lean is None:
                result.candidates.append(candidate)
    if want_unused_noqa:
        result.diagnostics.extend(unused_noqa(path, noqa, used))
    result.diagnostics.sort(key=Diagnostic.sort_key)
    context.release()
    return result


def _shown_only(fix: NodeFix) -> NodeFix:
    """A test file's fix under ``test-files = "no-fix"``: shown, never applied."""
    message = f"{fix.message} (not applied in test files: `test-files = \"no-fix\"`)"
    return dataclasses.replace(fix, applicability=Applicability.DISPLAY_ONLY, message=message)


def _positioned_nodes(findings: Sequence[Finding]) -> Iterator[cst.CSTNode]:
    """The nodes whose positions the diagnostics need: anchors and the nodes fixes replace."""
    for finding in findings:
        yield finding.node
        if finding.fix is not None:
            yield from (old for old, _ in finding.fix.replacements)


def _range(positions: NodePositions, node: cst.CSTNode) -> Range:
    code_range = positions[node]
    return ((code_range.start.line, code_range.start.column), (code_range.end.line, code_range.end.column))


def _to_diagnostic(finding: Finding, positions, path: Path, edit_maker: Optional[FixEdits]):
    (start_row, start_col), (end_row, end_col) = _range(positions, finding.node)
    fix: Optional[Fix] = None
    candidate = None
    node_fix = finding.fix
    if node_fix is not None:
        edits = edit_maker.edits(node_fix) if edit_maker is not None else ()
        fix = Fix(node_fix.applicability, node_fix.message, edits)
    diagnostic = Diagnostic(
        code=finding.rule.code,
        name=finding.rule.name,
        message=finding.message,
        path=path,
        location=Location(start_row, start_col + 1),
        end_location=Location(end_row, end_col + 1),
        fix=fix,
        noqa_row=start_row,
    )
    if node_fix is not None and node_fix.applicability is not Applicability.DISPLAY_ONLY:
        ranges = tuple(_range(positions, old) for old, _ in node_fix.replacements)
        candidate = FixCandidate(diagnostic, node_fix, ranges)
    return diagnostic, candidate


