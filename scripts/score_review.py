"""Score the tool against a labelled corpus of whole repositories (precision and recall).

The labels (``docs/precision/review-3/labels.toml``) were written from RULES.md alone: for each
repository at a pinned commit, the lines each rule should report (``expect = true``) and the
tempting look-alikes that must stay silent (``expect = false``). This script lints each
repository's root (so project-wide facts can reach across files) and compares:

* recall = expected lines found / expected lines;
* precision = expected lines found / labelled lines reported (expected + look-alikes hit);
* findings on lines nobody labelled are listed for triage: each is either a true finding the
  labeller missed (add the label) or a false positive (label it ``expect = false``).

    python scripts/score_review.py --trees /work/recall-trees [--mirrors /work/.mirror] \\
        [--labels docs/precision/review-3/labels.toml] [--json OUT] [--preview] [--select CODES]

``--select TPF601,TPF602`` runs only those rules and scores only their labels (a precision
review labels the findings of a few rules; the other rules' findings would all be unlabelled).
A label may say ``doubtful = true``: reasonable reviewers could label it either way; the
table's last columns give the precision with every doubtful label flipped against the tool
(strict) and in its favour (lenient).

A notebook label's path names the cell (``nb.ipynb#8``, the tool's ``cell`` index) and its
line is the line within that cell. Trees are looked up as ``TREES/<owner+name>``; one that is missing is exported from
``MIRRORS`` at the pinned commit when ``--mirrors`` is given. The tool runs as a separate
process, isolated from the linted tree (``python -I``); nothing of the linted code is imported
or run. The linter run is the one of the checkout this script belongs to (``--source`` to
choose another), not whichever the interpreter has installed: scoring a branch scores the
branch.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

DEFAULT_LABELS = Path(__file__).resolve().parent.parent / "docs" / "precision" / "review-3" / "labels.toml"

Where = Tuple[str, int]  # (path relative to the repository root, 1-based line)


@dataclass(frozen=True)
class Label:
    """One labelled line: the rule should (expect) or must not (look-alike) report it."""

    path: str
    line: int
    code: str
    expect: bool
    why: str
    alt: Tuple[Where, ...] = ()  # other anchors that count as the same finding
    doubtful: bool = False  # reasonable reviewers could label it the other way

    def places(self) -> Set[Where]:
        return {(self.path, self.line), *self.alt}


@dataclass(frozen=True)
class RepoLabels:
    name: str  # owner+name, also the tree's folder name
    url: str
    commit: str
    labels: Tuple[Label, ...]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    code: str
    message: str = ""


@dataclass
class RuleScore:
    expected: int = 0
    found: int = 0
    lookalikes_hit: int = 0
    unlabelled: int = 0
    doubtful_found: int = 0  # doubtful expected labels that were reported
    doubtful_lookalikes_hit: int = 0  # doubtful look-alikes that were reported

    @property
    def precision(self) -> Optional[float]:
        reported = self.found + self.lookalikes_hit
        return self.found / reported if reported else None

    @property
    def strict_precision(self) -> Optional[float]:
        """Every doubtful reported label counted against the tool."""
        reported = self.found + self.lookalikes_hit
        return (self.found - self.doubtful_found) / reported if reported else None

    @property
    def lenient_precision(self) -> Optional[float]:
        """Every doubtful reported label counted in the tool's favour."""
        reported = self.found + self.lookalikes_hit
        return (self.found + self.doubtful_lookalikes_hit) / reported if reported else None

    @property
    def recall(self) -> Optional[float]:
        return self.found / self.expected if self.expected else None


@dataclass
class Report:
    rules: Dict[str, RuleScore] = field(default_factory=lambda: defaultdict(RuleScore))
    misses: List[Tuple[str, Label]] = field(default_factory=list)
    false_positives: List[Tuple[str, Label]] = field(default_factory=list)
    unlabelled: List[Tuple[str, Finding]] = field(default_factory=list)

    def total(self) -> RuleScore:
        out = RuleScore()
        for score in self.rules.values():
            out.expected += score.expected
            out.found += score.found
            out.lookalikes_hit += score.lookalikes_hit
            out.unlabelled += score.unlabelled
            out.doubtful_found += score.doubtful_found
            out.doubtful_lookalikes_hit += score.doubtful_lookalikes_hit
        return out


def load_labels(path: Path) -> List[RepoLabels]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = []
    for repo in data["repo"]:
        labels = []
        for raw in repo["labels"]:
            alt_path = raw.get("alt_path", raw["path"])
            alt = tuple((alt_path, int(line)) for line in raw.get("alt_lines", ()))
            labels.append(Label(raw["path"], int(raw["line"]), raw["code"], bool(raw["expect"]), raw["why"], alt,
                                bool(raw.get("doubtful", False))))
        repos.append(RepoLabels(repo["name"], repo["url"], repo["commit"], tuple(labels)))
    return repos


def only_codes(repos: Sequence[RepoLabels], codes: Iterable[str]) -> List[RepoLabels]:
    """The labels of the given rules only (``--select``)."""
    keep = set(codes)
    return [RepoLabels(r.name, r.url, r.commit, tuple(label for label in r.labels if label.code in keep))
            for r in repos]


def score(repos: Sequence[RepoLabels], findings: Mapping[str, Iterable[Finding]]) -> Report:
    """Compare labels with findings, per rule. A label counts once however many findings
    land on its places; a finding on no label's place of its rule is unlabelled."""
    report = Report()
    for repo in repos:
        found = list(findings.get(repo.name, ()))
        hit: Set[Tuple[str, Where]] = {(f.code, (f.path, f.line)) for f in found}
        labelled: Set[Tuple[str, Where]] = set()
        for label in repo.labels:
            rule = report.rules[label.code]
            places = {(label.code, where) for where in label.places()}
            labelled |= places
            reported = bool(places & hit)
            if label.expect:
                rule.expected += 1
                if reported:
                    rule.found += 1
                    rule.doubtful_found += label.doubtful
                else:
                    report.misses.append((repo.name, label))
            elif reported:
                rule.lookalikes_hit += 1
                rule.doubtful_lookalikes_hit += label.doubtful
                report.false_positives.append((repo.name, label))
        for finding in found:
            if (finding.code, (finding.path, finding.line)) not in labelled:
                report.rules[finding.code].unlabelled += 1
                report.unlabelled.append((repo.name, finding))
    return report


def _ecosystem():
    """scripts/ecosystem.py's exporter (a mirror may lack its largest blobs)."""
    path = Path(__file__).resolve().parent / "ecosystem.py"
    spec = importlib.util.spec_from_file_location("ecosystem", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ecosystem", module)
    spec.loader.exec_module(module)
    return module


def ensure_tree(repo: RepoLabels, trees: Path, mirrors: Optional[Path]) -> Optional[Path]:
    """The repository's exported tree, exported from the mirror if missing. An empty
    ``.git`` folder marks the project root, as a checkout's would."""
    tree = trees / repo.name
    if not tree.is_dir() and mirrors is not None:
        eco = _ecosystem()
        git_dir, _ = eco.find_source(mirrors, eco.Repo(repo.name.replace("+", "/", 1), repo.commit))
        if git_dir is None:
            return None
        problem, _missing = eco.export_tree(git_dir, repo.commit, tree)
        if problem:
            print(f"{repo.name}: {problem}", file=sys.stderr)
            return None
    if not tree.is_dir():
        return None
    (tree / ".git").mkdir(exist_ok=True)
    return tree


SOURCE = Path(__file__).resolve().parent.parent  # the checkout whose linter is scored


def tool_command(source: Path, extra: Sequence[str]) -> List[str]:
    """``python -I`` (nothing of the linted tree on the path) running the package found in
    ``source``, so that a branch's scorer scores the branch, not the installed copy."""
    bootstrap = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "runpy.run_module('pytorch_perflint', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-I", "-c", bootstrap, str(source), "check", ".", "--output-format", "json",
            "--no-cache", "--exit-zero", *extra]


def lint(tree: Path, extra: Sequence[str], source: Path = SOURCE) -> List[Finding]:
    command = tool_command(source, extra)
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"pytorch-perflint failed in {tree} ({done.returncode}): {done.stderr.strip()}")
    root = tree.resolve()
    return [
        Finding(place(Path(item["filename"]).resolve().relative_to(root).as_posix(), item.get("cell")),
                item["location"]["row"], item["code"], item["message"])
        for item in json.loads(done.stdout or "[]")
    ]


def place(path: str, cell: Optional[int]) -> str:
    """A notebook finding's path names its cell (``eval.ipynb#8``), as the labels do."""
    return path if cell is None else f"{path}#{cell}"


def _ratio(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(report: Report) -> str:
    lines = ["| rule | expected | found | missed | look-alikes hit | unlabelled | precision | recall |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = sorted(report.rules.items()) + [("all", report.total())]
    for code, s in rows:
        lines.append(f"| {code} | {s.expected} | {s.found} | {s.expected - s.found} | {s.lookalikes_hit} | "
                     f"{s.unlabelled} | {_ratio(s.precision)} | {_ratio(s.recall)} |")
    doubtful = [(code, s) for code, s in rows if s.doubtful_found or s.doubtful_lookalikes_hit]
    if doubtful:
        lines += ["", "| rule | doubtful reported (expected / look-alike) | strict precision | lenient precision |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {code} | {s.doubtful_found} / {s.doubtful_lookalikes_hit} | {_ratio(s.strict_precision)} | "
                  f"{_ratio(s.lenient_precision)} |" for code, s in doubtful]
    return "\n".join(lines)


def details(report: Report) -> str:
    out = ["", "Misses (expected, not reported):"]
    out += [f"  {code_of(label)} {repo}/{label.path}:{label.line}  {label.why}" for repo, label in report.misses]
    out += ["", "Look-alikes reported (false positives):"]
    out += [f"  {code_of(label)} {repo}/{label.path}:{label.line}  {label.why}" for repo, label in report.false_positives]
    out += ["", "Findings on unlabelled lines (triage):"]
    out += [f"  {f.code} {repo}/{f.path}:{f.line}  {f.message}" for repo, f in report.unlabelled]
    return "\n".join(out)


def code_of(label: Label) -> str:
    return label.code


def as_json(report: Report) -> dict:
    def rule(s: RuleScore) -> dict:
        return {"expected": s.expected, "found": s.found, "lookalikes_hit": s.lookalikes_hit,
                "unlabelled": s.unlabelled, "precision": s.precision, "recall": s.recall,
                "strict_precision": s.strict_precision, "lenient_precision": s.lenient_precision}

    return {
        "rules": {code: rule(s) for code, s in sorted(report.rules.items())},
        "all": rule(report.total()),
        "misses": [{"repo": r, "path": l.path, "line": l.line, "code": l.code, "why": l.why} for r, l in report.misses],
        "false_positives": [{"repo": r, "path": l.path, "line": l.line, "code": l.code, "why": l.why}
                            for r, l in report.false_positives],
        "unlabelled": [{"repo": r, "path": f.path, "line": f.line, "code": f.code, "message": f.message}
                       for r, f in report.unlabelled],
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, required=True, help="folder of exported trees, one per owner+name")
    parser.add_argument("--mirrors", type=Path, help="folder of git mirrors to export missing trees from")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--json", type=Path, help="write the numbers, misses and findings here")
    parser.add_argument("--preview", action="store_true", help="also run the preview rules")
    parser.add_argument("--select", help="comma-separated rule codes: run and score only these")
    parser.add_argument("--source", type=Path, default=SOURCE,
                        help="checkout whose pytorch_perflint is run (default: this script's)")
    parser.add_argument("--file-timeout", type=int,
                        help="seconds a file may take (the tool's --file-timeout; on a loaded machine)")
    args = parser.parse_args(argv)

    repos = load_labels(args.labels)
    extra = ["--preview"] if args.preview else []
    if args.file_timeout:
        extra += ["--file-timeout", str(args.file_timeout)]
    if args.select:
        codes = [code.strip() for code in args.select.split(",") if code.strip()]
        repos = only_codes(repos, codes)
        extra += ["--select", ",".join(codes)]
    findings: Dict[str, List[Finding]] = {}
    for repo in repos:
        tree = ensure_tree(repo, args.trees, args.mirrors)
        if tree is None:
            print(f"{repo.name}: no tree under {args.trees}; skipped", file=sys.stderr)
            continue
        findings[repo.name] = lint(tree, extra, args.source)
    scored = [repo for repo in repos if repo.name in findings]
    report = score(scored, findings)
    print(f"{len(scored)} repositories, {sum(len(r.labels) for r in scored)} labels")
    print(table(report))
    print(details(report))
    if args.json:
        args.json.write_text(json.dumps(as_json(report), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
