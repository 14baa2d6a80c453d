"""Write docs/rules.md and the README's rule table from the rules themselves.

Each rule's docs live in its class docstring; this keeps the published pages in step.
``python scripts/gen_rule_docs.py --check`` exits 1 when a page is out of date (the tests
run that check).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pytorch_perflint.registry import BUILTINS, all_rules

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- rules-table-start -->", "<!-- rules-table-end -->"


TEST_FILES = (
    "**Test files.** One policy holds for every rule: files pytest collects by its default "
    "conventions (`test_*.py`, `*_test.py`, `conftest.py`, and any file under a `test/` or "
    "`tests/` folder below the project root; a file that is a test by its name alone only "
    "when its code imports pytest or unittest or defines `test_*` functions or `Test*` "
    "classes, so an evaluation script called `test_net.py` is linted) are not reported by "
    "default, since unit tests "
    "exercise what the rules flag on purpose (`num_workers=0`, `zero_grad(set_to_none=False)`) "
    "and rewriting them buys no speed. `test-files = \"no-fix\"` reports them with every fix "
    "display-only; `test-files = \"lint\"` lints and fixes them like any file. A syntax error "
    "in a test file is still `TPF001`."
)


def _fix(rule) -> str:
    return rule.fix_label()


def table() -> str:
    rows = ["| Code | Name | Fix | Notes |", "|---|---|---|---|"]
    for builtin in BUILTINS:
        note = "the tool's own" + ("" if builtin.default else ", off by default")
        rows.append(f"| [{builtin.code}](docs/rules.md#{builtin.code.lower()}) | {builtin.name} | none | {note} |")
    for rule in all_rules():
        notes = []
        if rule.preview:
            notes.append("preview")
        if rule.needs_cuda:
            notes.append("CUDA modules only")
        rows.append(
            f"| [{rule.code}](docs/rules.md#{rule.code.lower()}) | {rule.name} | {_fix(rule)} | {', '.join(notes)} |"
        )
    return "\n".join(rows)


def rules_page() -> str:
    parts = ["# Rules", "", "Generated from the rules' own docs by `scripts/gen_rule_docs.py`.", "", TEST_FILES, ""]
    parts.append(table().replace("(docs/rules.md#", "(#"))
    parts.append("")
    for builtin in BUILTINS:
        body = builtin.docs.replace("\n## ", "\n### ")
        body = "#" + body if body.startswith("## ") else body
        meta = "Fix: none. " + ("On by default." if builtin.default else "Off by default.")
        parts += [f"## {builtin.code}", "", f"**{builtin.name}**: {builtin.summary}", "", meta, "", body, ""]
    for rule in all_rules():
        body = rule.docs().replace("\n## ", "\n### ")
        if body.startswith("## "):
            body = "#" + body
        meta = f"Fix: {_fix(rule)}{' (depends on the finding: see Fix safety)' if '/' in _fix(rule) else ''}."
        if rule.preview:
            meta += " Preview: enable with `--preview`."
        parts += [f"## {rule.code}", "", f"**{rule.name}**: {rule.message}", "", meta, "", body, ""]
    return "\n".join(parts).rstrip() + "\n"


def readme_text(current: str) -> str:
    head, _, rest = current.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    check = "--check" in sys.argv
    targets = {
        ROOT / "docs" / "rules.md": rules_page(),
        ROOT / "README.md": readme_text((ROOT / "README.md").read_text(encoding="utf-8")),
    }
    stale = [path for path, text in targets.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python scripts/gen_rule_docs.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(targets[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
