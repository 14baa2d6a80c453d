"""Code actions: apply one finding's fix, apply every safe fix, or disable a rule on a line.

The edits come from the engine's own fix machinery (each fix's text edits, the fixer's
rounds for "fix all") and from ``noqa_edits`` for the ``# noqa`` comment, computed on the
exact text the client holds. In a notebook the change is made to the joined cells and split
back into per-cell edits, as ``--fix`` writes a notebook back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types

from .. import fixer, noqa_edits, notebook
from ..config import Settings
from ..edits import whole_module_edits
from ..selection import fixable_codes
from ..transform import apply_fixes, text_edits
from ..types import Applicability, Diagnostic, Edit, Location
from . import convert
from .convert import Positions
from .documents import Buffer, Linted, split_cells

FIX_ALL_KIND = convert.FIX_ALL_KIND
QUICK_FIX_KIND = types.CodeActionKind.QuickFix.value


@dataclass(frozen=True)
class Request:
    """A code action request, resolved against the server's state."""

    buffer: Buffer
    linted: Linted
    uri: str  # the document asked about: the buffer's, or one of its cells'
    range: types.Range
    only: Optional[Tuple[str, ...]]
    units: Callable[[str], int]
    versioned: bool  # the client takes versioned ``documentChanges``
    # The client asks for an action's edit when it is picked (``codeAction/resolve``): "fix
    # all", which runs the fixer's rounds, is then not computed at every cursor move.
    resolves: bool = False
    # The diagnostics the client sent in the request's context (its own, of the cursor's line).
    sent: Tuple[types.Diagnostic, ...] = ()


def wanted(only: Optional[Sequence[str]], kind: str) -> bool:
    """Whether ``kind`` is asked for (kinds are hierarchical: ``source`` covers it)."""
    return only is None or any(kind == filter_ or kind.startswith(filter_ + ".") for filter_ in only)


def code_actions(request: Request) -> List[types.CodeAction]:
    settings = request.linted.settings
    if settings is None:
        return []
    actions: List[types.CodeAction] = []
    if wanted(request.only, QUICK_FIX_KIND):
        found = convert.findings_at(request.buffer, request.linted, request.uri, request.range, request.units, request.sent)
        for raw, shown in found:
            actions.extend(_fix_action(request, raw, shown))
            actions.extend(_noqa_action(request, raw, shown))
    if wanted(request.only, FIX_ALL_KIND):
        actions.extend(_fix_all_action(request))
    return actions


# --------------------------------------------------------------------------------------
# The actions.


def _fix_action(request: Request, raw: Diagnostic, shown: types.Diagnostic) -> List[types.CodeAction]:
    settings = request.linted.settings
    fix = raw.fix
    if settings is None or fix is None or fix.applicability is Applicability.DISPLAY_ONLY:
        return []  # unsafe fixes are offered too, labelled and never preferred
    fixable = fixable_codes(settings)
    if fixable is not None and raw.code not in fixable:
        return []
    candidate = _candidate(request.linted, raw)
    module = request.linted.lint.module
    if candidate is None or module is None:
        return []
    if request.buffer.is_notebook:
        edit = _source_edit(request, apply_fixes(module, [candidate.fix]).code)
    else:
        edit = _rows_edit(request, whole_module_edits(module, request.buffer.text, candidate.fix))  # as --fix writes it
    if edit is None:
        return []
    safe = fix.applicability is Applicability.SAFE
    return [
        types.CodeAction(
            title=f"Fix {raw.code} ({fix.applicability}): {fix.message}",
            kind=QUICK_FIX_KIND,
            diagnostics=[shown],
            is_preferred=safe,
            edit=edit,
        )
    ]


def _candidate(linted: Linted, raw: Diagnostic):
    for candidate in linted.lint.candidates:
        if candidate.diagnostic is raw:
            return candidate
    return None


def _noqa_action(request: Request, raw: Diagnostic, shown: types.Diagnostic) -> List[types.CodeAction]:
    if raw.code in noqa_edits.UNSUPPRESSIBLE:
        return []
    planned = noqa_edits.plan(request.buffer.text, [raw]).edits
    if not planned:
        return []
    if request.buffer.is_notebook:
        edit = _source_edit(request, noqa_edits.apply(request.buffer.text, planned))
    else:
        rows = [Edit(e.text, Location(e.row, e.start + 1), Location(e.row, e.end + 1)) for e in planned]
        edit = _rows_edit(request, rows)
    if edit is None:
        return []
    return [types.CodeAction(title=f"Disable {raw.code} for this line", kind=QUICK_FIX_KIND, diagnostics=[shown], edit=edit)]


FIX_ALL_TITLE = f"{convert.SOURCE}: apply all safe fixes"


def _safe_fixes(settings: Settings) -> Settings:
    """``check --fix`` without ``--unsafe-fixes``, whatever the project's config says."""
    return dataclasses.replace(settings, unsafe_fixes=False, fix=True)


def _fix_all_action(request: Request) -> List[types.CodeAction]:
    settings = request.linted.settings
    if settings is None:
        return []
    safe = _safe_fixes(settings)
    fixable = fixable_codes(settings)
    if not any(
        d.fix is not None
        and fixer.is_applicable(d.fix.applicability, safe)
        and (fixable is None or d.code in fixable)
        for d in request.linted.lint.diagnostics
    ):
        return []
    if request.resolves:
        return [types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, data={"fixAll": request.uri})]
    edit = fix_all_edit(request)
    if edit is None:
        return []
    return [types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, edit=edit)]


def fix_all_edit(request: Request) -> Optional[types.WorkspaceEdit]:
    """The edit of "apply all safe fixes": what ``check --fix`` would write."""
    settings = request.linted.settings
    if settings is None:
        return None
    outcome = fixer.fix_source(request.buffer.text, request.buffer.path, _safe_fixes(settings))
    if not outcome.fixed or outcome.source == request.buffer.text:
        return None
    return _source_edit(request, outcome.source)


# --------------------------------------------------------------------------------------
# Workspace edits, exact on the version of each document the client holds.


def _workspace_edit(request: Request, changes: List[Tuple[str, Optional[int], List[types.TextEdit]]]) -> Optional[types.WorkspaceEdit]:
    changes = [change for change in changes if change[2]]
    if not changes:
        return None
    if request.versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=edits,
                )
                for uri, version, edits in changes
            ]
        )
    merged: Dict[str, List[types.TextEdit]] = {}
    for uri, _, edits in changes:
        merged.setdefault(uri, []).extend(edits)
    return types.WorkspaceEdit(changes=merged)


def _rows_edit(request: Request, edits: Sequence[Edit]) -> Optional[types.WorkspaceEdit]:
    """A text document's edits given in the engine's rows and columns."""
    positions = Positions(request.buffer.text, request.units)
    return _workspace_edit(request, [(request.buffer.uri, request.buffer.version, convert.row_edits(positions, edits))])


def _source_edit(request: Request, new_text: str) -> Optional[types.WorkspaceEdit]:
    """The edits that turn the buffer's text into ``new_text``: line edits of the document,
    or of each cell that changes."""
    buffer = request.buffer
    if buffer.book is None:
        positions = Positions(buffer.text, request.units)
        return _workspace_edit(request, [(buffer.uri, buffer.version, convert.row_edits(positions, text_edits(buffer.text, new_text)))])
    try:
        texts = split_cells(buffer.book, new_text)
    except notebook.NotebookError:
        return None
    changes = []
    for cell, text in zip(buffer.cells, texts):
        if text != cell.text:
            positions = Positions(cell.text, request.units)
            changes.append((cell.uri, cell.version, convert.row_edits(positions, text_edits(cell.text, text))))
    return _workspace_edit(request, changes)
