"""``pytorch-perflint rules`` as text that reads well at any width.

A wide terminal gets a table; a narrow one a list (each rule's code, name and fix on one
line, its summary wrapped under it); a pipe one line per rule, for ``grep``. Words are never
split: the summary is the first sentence of the rule's "What it does", without its
parenthetical asides, and the full docs are one ``pytorch-perflint rule CODE`` away.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Dict, List, Optional, Sequence

# From this many columns on, a terminal gets the table.
WIDE = 120
INDENT = 8

_CODE_SPAN = re.compile(r"`[^`]*`")


def _summary_of(docs: str, fallback: str) -> str:
    """The first paragraph of a rule's "What it does" section."""
    lines = docs.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().lower().startswith("## what it does")) + 1
    except StopIteration:
        return fallback
    paragraph: List[str] = []
    for line in lines[start:]:
        if line.startswith("#") or (not line.strip() and paragraph):
            break
        if line.strip():
            paragraph.append(line.strip())
    return " ".join(paragraph) or fallback


def rule_infos() -> List[Dict[str, Any]]:
    """Every rule, the tool's own codes included, as the ``rules`` and ``rule`` commands
    show them (and ``rules --output-format json`` prints them)."""
    from . import registry
    from .types import rule_url

    infos = []
    for builtin in registry.BUILTINS:
        infos.append(
            {
                "code": builtin.code,
                "name": builtin.name,
                "fix": None,
                "preview": False,
                "default": builtin.default,
                "summary": builtin.summary,
                "url": rule_url(builtin.code),
            }
        )
    for rule in registry.all_rules():
        infos.append(
            {
                "code": rule.code,
                "name": rule.name,
                "fix": rule.fix_label() if rule.applicabilities() else None,
                "preview": bool(rule.preview),
                "default": bool(rule.default_enabled and not rule.preview),
                "summary": _summary_of(rule.docs(), rule.message),
                "url": rule_url(rule.code),
            }
        )
    return sorted(infos, key=lambda info: info["code"])


def brief(summary: str) -> str:
    """The first sentence of a summary, cut before a colon that starts a list, with its
    parenthetical asides dropped (code spans are left whole)."""
    spans: List[str] = []

    def hide(match: "re.Match[str]") -> str:
        spans.append(match.group(0))
        return f"\0{len(spans) - 1}\0"

    text = _CODE_SPAN.sub(hide, summary)
    text = re.split(r"(?<=[.!?])\s+(?=[A-Z\0])|:\s", text, maxsplit=1)[0]
    previous = None
    while previous != text:  # nested asides, innermost first
        previous = text
        text = re.sub(r"\s*\([^()]*\)", "", text)
    text = re.sub(r"\s+", " ", text).strip().rstrip(".,;") + "."
    return re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], text)


def _notes(info: Dict[str, Any]) -> str:
    notes = []
    if info["preview"]:
        notes.append("preview")
    if not info["default"] and not info["preview"]:
        notes.append("off by default")
    return ", ".join(notes)


def lines_for_pipe(infos: Sequence[Dict[str, Any]]) -> List[str]:
    """One line per rule: code, name, fix, then notes and the brief summary."""
    name_width = max(len(i["name"]) for i in infos)
    fix_width = max(len(i["fix"] or "none") for i in infos)
    out = []
    for info in infos:
        notes = _notes(info)
        text = f"[{notes}] {brief(info['summary'])}" if notes else brief(info["summary"])
        out.append(f"{info['code']}  {info['name']:<{name_width}}  {info['fix'] or 'none':<{fix_width}}  {text}")
    return out


def lines_for_narrow(infos: Sequence[Dict[str, Any]], width: int) -> List[str]:
    """Each rule as a heading line and its summary wrapped under it, a blank line between."""
    out: List[str] = []
    for info in infos:
        head = f"{info['code']}  {info['name']}  fix: {info['fix'] or 'none'}"
        notes = _notes(info)
        out.extend(_wrap(f"{head}  ({notes})" if notes else head, width, ""))
        out.extend(_wrap(brief(info["summary"]), width, " " * INDENT))
        out.append("")
    return out[:-1]


def _wrap(text: str, width: int, indent: str) -> List[str]:
    """Lines of at most ``width`` columns, broken between words only (a word longer than a
    line gets a line of its own)."""
    return textwrap.wrap(
        text,
        width=max(width, INDENT + 20),
        initial_indent=indent,
        subsequent_indent=" " * INDENT,
        break_long_words=False,
        break_on_hyphens=False,
    )


def table(infos: Sequence[Dict[str, Any]]) -> Any:
    from rich.table import Table

    out = Table(show_lines=False)
    for column in ("Code", "Name", "Fix", "Notes"):
        out.add_column(column, no_wrap=True)
    out.add_column("Summary", ratio=1)
    for info in infos:
        out.add_row(info["code"], info["name"], info["fix"] or "none", _notes(info), brief(info["summary"]))
    return out


def _table_fits(infos: Sequence[Dict[str, Any]], width: int) -> bool:
    """Whether the table leaves its summary column room for the longest word (a code span
    such as `torch.backends.cudnn.benchmark`), so that no word is folded."""
    fixed = sum(
        max(len(title), *(len(value(info)) for info in infos)) + 3
        for title, value in (
            ("Code", lambda i: i["code"]),
            ("Name", lambda i: i["name"]),
            ("Fix", lambda i: i["fix"] or "none"),
            ("Notes", _notes),
        )
    )
    longest = max(len(word) for info in infos for word in brief(info["summary"]).split())
    return width - fixed - 4 >= longest


def show(infos: Sequence[Dict[str, Any]], console: Any) -> None:
    """Print the rules on ``console`` in the layout its width calls for."""
    if not console.is_terminal:
        for line in lines_for_pipe(infos):
            console.file.write(line + "\n")
    elif console.width >= WIDE and _table_fits(infos, console.width):
        console.print(table(infos))
    else:
        for line in lines_for_narrow(infos, console.width):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def rule_page(code: str) -> Optional[str]:
    """The ``rule CODE`` page (Markdown): its facts line and docs, for a rule's code or name
    or a built-in code; None when nothing is called that."""
    from . import registry

    infos = {info["code"]: info for info in rule_infos()}
    by_name = {info["name"]: info for info in infos.values()}
    info = infos.get(code.strip().upper()) or by_name.get(code.strip())
    if info is None:
        return None
    rule = registry.rule_by_code(info["code"])
    builtin = registry.builtin(info["code"])
    docs = rule.docs() if rule is not None else builtin.docs if builtin is not None else ""
    facts = [
        f"Fix: {info['fix'] or 'none'}",
        f"Default: {'on' if info['default'] else 'off'}",
        f"Preview: {'yes' if info['preview'] else 'no'}",
    ]
    if rule is not None and rule.min_torch:
        facts.append(f"Torch: >= {'.'.join(map(str, rule.min_torch))}")
    if rule is not None and rule.max_torch:
        facts.append(f"Torch: < {'.'.join(map(str, rule.max_torch))}")
    return f"# {info['code']}: {info['name']}\n\n{' · '.join(facts)}\n\n{docs}\n\n{info['url']}\n"
