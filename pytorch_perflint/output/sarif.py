"""``sarif``: a SARIF 2.1.0 log with one run, for GitHub code scanning and other viewers.

Every rule the tool knows is described in ``tool.driver.rules`` (not only those that fired),
so a viewer can show a rule's documentation for any result and a later upload can name
rules that no longer fire. Paths are relative to ``%SRCROOT%`` (the root folder), which
is how code scanning ties results to files in the repository.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO
from urllib.parse import quote

from ..types import Diagnostic, Edit, FileResult, RunSummary
from .common import RuleInfo, entries, level, relative_to_root, rule_catalog

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/pytorch-perflint/pytorch-perflint"
SRCROOT = "%SRCROOT%"

# Tags by code family, as code scanning shows them next to each alert.
_FAMILY_TAGS = {
    "TPF0": "tool",
    "TPF1": "data-loading",
    "TPF2": "training-loop",
    "TPF3": "model-structure",
    "TPF4": "tensors-and-devices",
    "TPF5": "parallelism",
    "TPF6": "precision-and-compilation",
}


def _root_uri(root: Optional[Path]) -> str:
    uri = Path(os.path.abspath(root if root is not None else os.getcwd())).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def artifact_location(path: Path, root: Optional[Path]) -> Dict[str, Any]:
    """A relative URI under %SRCROOT%, or an absolute file URI for a file outside the root."""
    rel = relative_to_root(path, root)
    if rel is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}


@functools.lru_cache(maxsize=1)
def _briefs() -> Dict[str, str]:
    """Each rule's one-sentence summary, as `pytorch-perflint rules` prints it. A rule's
    message is a template (`{value}` and such are filled per finding): no description."""
    from ..rules_list import brief, rule_infos

    return {info["code"]: brief(info["summary"]) for info in rule_infos()}


def _descriptor(info: RuleInfo) -> Dict[str, Any]:
    docs = info.docs or info.message
    tags = ["performance", _FAMILY_TAGS.get(info.code[:4], "other")]
    if info.preview:
        tags.append("preview")
    properties: Dict[str, Any] = {"tags": tags, "preview": info.preview}
    if info.fix_applicability is not None:
        properties["fix-applicability"] = info.fix_applicability.value
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": _briefs().get(info.code, info.message)},
        "fullDescription": {"text": docs},
        "help": {"text": docs, "markdown": docs},
        "helpUri": info.url,
        "defaultConfiguration": {"level": info.level},
        "properties": properties,
    }


def _region(start_row: int, start_col: int, end_row: int, end_col: int, *, point_to_line: bool) -> Dict[str, int]:
    """A SARIF region (1-based; endColumn is the column after the last character).

    A zero-width finding (a syntax error's position, a ``noqa`` comment) is shown as the rest
    of its line when ``point_to_line``: viewers highlight nothing for an empty region.
    """
    region = {"startLine": start_row, "startColumn": start_col}
    if point_to_line and (end_row, end_col) == (start_row, start_col):
        return region
    region["endLine"] = end_row
    region["endColumn"] = end_col
    return region


def _replacement(edit: Edit) -> Dict[str, Any]:
    return {
        "deletedRegion": _region(
            edit.location.row,
            edit.location.column,
            edit.end_location.row,
            edit.end_location.column,
            point_to_line=False,
        ),
        "insertedContent": {"text": edit.content},
    }


def _result(diagnostic: Diagnostic, index: int, root: Optional[Path]) -> Dict[str, Any]:
    location = artifact_location(diagnostic.path, root)
    start, end = diagnostic.location, diagnostic.end_location
    result: Dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": index,
        "level": level(diagnostic.code),
        "message": {"text": diagnostic.message},
    }
    if diagnostic.cell is not None:
        # A notebook cell's rows are not rows of the .ipynb file: point at the file and say
        # where in which cell.
        result["message"] = {
            "text": f"{diagnostic.message} (cell {diagnostic.cell}, line {start.row}, column {start.column})"
        }
        region = {"startLine": 1}
        result["properties"] = {"cell": diagnostic.cell, "cellLine": start.row, "cellColumn": start.column}
    else:
        region = _region(start.row, start.column, end.row, end.column, point_to_line=True)
    result["locations"] = [{"physicalLocation": {"artifactLocation": location, "region": region}}]
    fix = diagnostic.fix
    if fix is not None and fix.edits and diagnostic.cell is None:
        result["fixes"] = [
            {
                "description": {"text": fix.message},
                "artifactChanges": [
                    {"artifactLocation": dict(location), "replacements": [_replacement(e) for e in fix.edits]}
                ],
                "properties": {"applicability": fix.applicability.value},
            }
        ]
    return result


def log(
    results: Sequence[FileResult],
    *,
    summary: RunSummary,
    root: Optional[Path],
) -> Dict[str, Any]:
    """The whole SARIF log as a JSON-ready dict."""
    from .. import __version__

    catalog = list(rule_catalog())
    index = {info.code: i for i, info in enumerate(catalog)}
    out: List[Dict[str, Any]] = []
    for entry in entries(results):
        d = entry.diagnostic
        if d.code not in index:  # a code no rule claims: describe it from the finding
            index[d.code] = len(catalog)
            catalog.append(RuleInfo(code=d.code, name=d.name, message=d.message, docs="", level=level(d.code)))
        out.append(_result(d, index[d.code], root))

    notifications = [
        {"level": "error", "message": {"text": text}} for r in results for text in r.errors
    ] + [{"level": "warning", "message": {"text": text}} for r in results for text in r.fix_errors]
    invocation: Dict[str, Any] = {"executionSuccessful": not summary.errors and not any(r.errors for r in results)}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications

    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pytorch-perflint",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_descriptor(info) for info in catalog],
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": {SRCROOT: {"uri": _root_uri(root)}},
                "columnKind": "unicodeCodePoints",
                "results": out,
            }
        ],
    }


def write(results: Sequence[FileResult], stream: TextIO, *, summary: RunSummary, root: Optional[Path]) -> None:
    from .json import dump

    dump(log(results, summary=summary, root=root), stream)
