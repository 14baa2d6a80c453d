"""The codes the tool emits itself, with no rule class: TPF001, TPF002, TPF003.

Their names and docs are written here once, for the ``rule``/``rules`` commands, SARIF's rule
help, the LSP and ``docs/rules.md``; the registry lists them beside the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class BuiltinCode:
    """A diagnostic the tool emits itself (no rule class): its docs, in one place for the
    ``rule``/``rules`` commands, SARIF's rule help and ``docs/rules.md``."""

    code: str
    name: str
    summary: str
    docs: str  # Markdown: What it does / Why is this bad? / Fix safety, as a rule's docs
    default: bool
    level: str  # SARIF / GitHub severity: "error" or "warning"


BUILTINS: Tuple[BuiltinCode, ...] = (
    BuiltinCode(
        "TPF001",
        "syntax-error",
        "The file cannot be parsed: a syntax error, or bytes that are not Python source.",
        "## What it does\nReports a file that Python itself cannot parse: a syntax error (at "
        "Python's own position and message), code nested deeper than Python compiles at its "
        "default recursion limit (a RecursionError from `python file.py`), bytes that are not valid in the file's encoding, "
        "a binary file, or a notebook that is not valid notebook JSON.\n\n## Why is this bad?\n"
        "No rule can check a file that does not parse. The run goes on with the other files.\n\n"
        "## Fix safety\nThere is no fix: correct the file, or exclude it.",
        True,
        "error",
    ),
    BuiltinCode(
        "TPF002",
        "unused-noqa",
        "A `# noqa: TPFxxx` comment that suppresses nothing.",
        "## What it does\nReports a `# noqa: TPFxxx` comment that names a rule which does not fire "
        "on that line (off by default; enable with `--extend-select TPF002`).\n\n## Why is this bad?\n"
        "Stale suppressions hide future findings on that line.\n\n## Fix safety\nThere is no "
        "automatic fix yet: delete the code from the comment.",
        False,
        "warning",
    ),
    BuiltinCode(
        "TPF003",
        "unanalyzable-file",
        "Valid Python that the tool's parser (LibCST) cannot read, or a file too large to analyse: the file was not checked.",
        "## What it does\nReports a file that Python accepts but that pytorch-perflint's parser, "
        "LibCST, cannot read (for example a parenthesised annotation target, `(x): int = 1`). "
        "This is a limitation of the tool, not an error in the file. It is reported at the line "
        "where LibCST stopped, and only when a rule could apply to the file (it mentions what a "
        "rule looks for), since otherwise nothing was missed.\n\nIt also reports a file larger "
        "than `max-file-size` (default 4 MiB of source; the torch package's largest file is "
        "1.4 MB), or one whose analysis ran out of the memory allowed per file: LibCST needs "
        "about 0.6 GB of memory per MB of source. Raise `max-file-size` in "
        "`[tool.pytorch-perflint]` (0: no limit) to check such a file.\n\n## Why is this bad?\nNo rule "
        "checked the file, so its findings are unknown; without this notice a clean run would "
        "suggest otherwise. It is on by default for that reason, and a run that reports it exits "
        "1 like any finding.\n\n## Fix safety\nThere is no fix. Rewriting the line (for "
        "`(x): int = 1`, `x: int = 1`) lets the file be checked; `# noqa: TPF003` on the "
        "reported line or `--ignore TPF003` (or `per-file-ignores`) accepts that it is not.",
        True,
        "warning",
    ),
)

# Code -> name of the diagnostics the tool emits itself.
BUILTIN_CODES: Dict[str, str] = {builtin.code: builtin.name for builtin in BUILTINS}


def builtin(code: str) -> Optional[BuiltinCode]:
    """The built-in code's docs (None for a rule's code)."""
    return next((b for b in BUILTINS if b.code == code), None)
