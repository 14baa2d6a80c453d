"""``# noqa`` comments: reading them, what they suppress, and which suppress nothing (TPF002).

Kept apart from the engine so that ``--add-noqa`` and the language server read comments with
the very pattern the engine honours.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

from . import registry
from .comments import comment_start
from .types import Diagnostic, Location

FILE_NOQA = re.compile(r"^[ \t]*#[ \t]*pytorch-perflint:[ \t]*noqa[ \t]*$", re.MULTILINE | re.IGNORECASE)
# ``FILE_NOQA`` from its ``#``: a search that starts at a literal skips to each ``#`` at
# C speed, where one that starts at ``^`` tries every position (0.26 -> 0.02 CPU-s over
# the torch package's 46 MB, which every file of a run was searched for twice).
_FILE_NOQA_FROM_HASH = re.compile(r"#[ \t]*pytorch-perflint:[ \t]*noqa[ \t]*$", re.MULTILINE | re.IGNORECASE)
NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)


def file_noqa(source: str) -> bool:
    """Whether a line of ``source`` is the file-wide ``# pytorch-perflint: noqa``
    (``FILE_NOQA.search``): a match from a ``#`` with only blanks before it on its line."""
    for match in _FILE_NOQA_FROM_HASH.finditer(source):
        start = match.start()
        if not source[source.rfind("\n", 0, start) + 1 : start].strip(" \t"):
            return True
    return False


def noqa_comments(source: str) -> Dict[int, Optional[FrozenSet[str]]]:
    """Row -> codes a ``# noqa`` comment on that row names (None: a bare ``# noqa``)."""
    result: Dict[int, Optional[FrozenSet[str]]] = {}
    if "noqa" not in source.lower():
        return result
    comments = _comments_on_noqa_lines(source)
    if comments is None:
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return result
        comments = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    for row, comment in comments:
        match = NOQA.search(comment)
        if not match:
            continue
        codes = match.group("codes")
        if codes is None:
            result[row] = None
        else:
            names = frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)
            previous = result.get(row, frozenset())
            result[row] = None if previous is None and row in result else names | (previous or frozenset())
    return result


def _comments_on_noqa_lines(source: str) -> Optional[List[Tuple[int, str]]]:
    """The comments of the lines that mention ``noqa``, found without tokenizing the whole
    file (which costs as much as parsing it); None when a line is not plainly code plus a
    comment (a triple quote on it or open before it, a backslash) and the tokenizer must
    decide."""
    lowered = source.lower()
    comments: List[Tuple[int, str]] = []
    seen_rows = set()
    for match in re.finditer("noqa", lowered):
        start = source.rfind("\n", 0, match.start()) + 1
        end = source.find("\n", match.start())
        line = source[start : end if end != -1 else len(source)]
        if '"""' in line or "'''" in line or "\\" in line:
            return None
        if source[max(0, start - 3) : start].rstrip("\r\n").endswith("\\"):
            return None  # continues the line before
        if (source.count('"""', 0, start) + source.count("'''", 0, start)) % 2:
            return None
        row = source.count("\n", 0, start) + 1
        if row in seen_rows:
            continue
        seen_rows.add(row)
        comment_at = comment_start(line)
        if comment_at is None:
            return None
        if comment_at >= 0:
            comments.append((row, line[comment_at:].rstrip("\r")))
    return comments


def suppressed(diagnostic: Diagnostic, noqa: Dict[int, Optional[FrozenSet[str]]], used: Dict[int, set]) -> bool:
    for row in {diagnostic.location.row, diagnostic.end_location.row}:
        if row not in noqa:
            continue
        codes = noqa[row]
        if codes is None or diagnostic.code in codes:
            used.setdefault(row, set()).add(diagnostic.code)
            return True
    return False


def unused_noqa(path: Path, noqa: Dict[int, Optional[FrozenSet[str]]], used: Dict[int, set]) -> List[Diagnostic]:
    known = {rule.code for rule in registry.all_rules()} | set(registry.BUILTIN_CODES)
    out = []
    for row, codes in sorted(noqa.items()):
        if codes is None:
            continue
        ours = sorted(c for c in codes if c.startswith("TPF") and c in known and c not in used.get(row, set()))
        if not ours:
            continue
        out.append(
            Diagnostic(
                code="TPF002",
                name="unused-noqa",
                message=f"Unused `noqa` directive (non-matching: {', '.join(ours)})",
                path=path,
                location=Location(row, 1),
                end_location=Location(row, 1),
                noqa_row=row,
            )
        )
    return out
