"""The ecosystem check's mutation cases (issue 21): real files changed in the ways that broke
the tool, linted and fixed in their own repositories.

For each repository (exported as ``ecosystem.py`` does, from local mirrors: nothing is
fetched) the largest files that mention ``torch`` get mutated copies beside them:

* ``crlf-first-line``: a CRLF line first, the rest as it was (a fix used to turn the next
  line's LF into CRLF, or to be refused as not idempotent);
* ``crlf``: every line ending CRLF;
* ``deep-parens``, ``deep-unary``, ``deep-lists``: nesting Python itself refuses
  (``python file.py`` fails): the tool must report TPF001 at once and leave the file alone;
* ``long-sum``, ``long-concat``, ``long-calls``: long chains Python accepts (at its default
  recursion limit): no crash, no hang, any fix compiles.

Then ``check``, ``check --fix --unsafe-fixes --preview`` and the same fix again run over the
whole tree, as ``ecosystem.py`` runs them, and each is judged: crashes, hangs, a fix that
does not compile or is not idempotent, a file Python rejects that was rewritten or got no
TPF001, a write outside the tree.

    python scripts/ecosystem_mutations.py --checkouts /work/.mirror [--only owner/name ...]

Exit status 1 when any repository had a problem.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ecosystem import REPOS, Repo, _crashes, _refused, changed, load_repos, materialize, run_tool, snapshot  # noqa: E402

FIX = ("--fix", "--unsafe-fixes", "--preview")


def _crlf_first_line(data: bytes) -> bytes:
    return b"\r\n" + data


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _appended(line: str) -> Callable[[bytes], bytes]:
    def mutate(data: bytes) -> bytes:
        return data + (b"" if data.endswith(b"\n") or not data else b"\n") + line.encode() + b"\n"

    return mutate


# name -> (mutation, whether Python rejects the result)
MUTATIONS: Dict[str, tuple] = {
    "crlf-first-line": (_crlf_first_line, False),
    "crlf": (_crlf, False),
    "deep-parens": (_appended("_deep = " + "(" * 5000 + "1" + ")" * 5000), True),
    "deep-lists": (_appended("_deep = " + "[" * 5000 + "]" * 5000), True),
    "deep-unary": (_appended("_deep = " + "-" * 5000 + "1"), True),
    "long-sum": (_appended("_long = " + " + ".join(["_a"] * 2000)), False),
    "long-concat": (_appended("_long = (" + " ".join(['"x"'] * 3000) + ")"), False),
    "long-calls": (_appended("_long = _f" + "(1)" * 500), False),
}


@dataclass
class MutationResult:
    files: int = 0
    crashes: List[str] = field(default_factory=list)
    hangs: List[str] = field(default_factory=list)
    unparsable: List[str] = field(default_factory=list)
    non_idempotent: List[str] = field(default_factory=list)
    rejected_rewritten: List[str] = field(default_factory=list)
    rejected_not_reported: List[str] = field(default_factory=list)
    outside_writes: List[str] = field(default_factory=list)
    seconds: Dict[str, float] = field(default_factory=dict)
    skipped: str = ""

    @property
    def problems(self) -> int:
        return sum(len(getattr(self, k)) for k in KINDS)


KINDS = ("crashes", "hangs", "unparsable", "non_idempotent", "rejected_rewritten", "rejected_not_reported", "outside_writes")


def python_rejects(data: bytes) -> bool:
    """Whether ``python file.py`` would fail to compile it (at its default recursion limit,
    whatever this process's is)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<mutation>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    finally:
        sys.setrecursionlimit(limit)
    return False


def pick(root: Path, count: int) -> List[Path]:
    """The ``count`` largest Python files that mention torch (and Python accepts)."""
    found = []
    for path in root.rglob("*.py"):
        if not path.is_file() or path.is_symlink() or "__mut_" in path.name:
            continue
        data = path.read_bytes()
        if b"torch" in data and not python_rejects(data):
            found.append((len(data), path))
    return [p for _, p in sorted(found, key=lambda item: (-item[0], str(item[1])))[:count]]


def mutate(files: Sequence[Path]) -> Dict[str, bool]:
    """Write each file's mutations beside it; relative-to-nothing name -> rejected."""
    made: Dict[str, bool] = {}
    for path in files:
        data = path.read_bytes()
        for name, (change, _) in MUTATIONS.items():
            target = path.with_name(f"{path.stem}__mut_{name.replace('-', '_')}.py")
            new = change(data)
            target.write_bytes(new)
            made[str(target)] = python_rejects(new)
    return made


def check_mutations(repo: Repo, checkouts: Path, work: Path, timeout: float, per_repo: int) -> MutationResult:
    result = MutationResult()
    root = work / repo.folder
    why, _ = materialize(checkouts, repo, root)
    if why:
        result.skipped = why
        return result
    made = mutate(pick(root, per_repo))
    result.files = len(made)
    outside_before = snapshot(work, skip=root)
    before = snapshot(root)
    rel = {path: Path(path).relative_to(root).as_posix() for path in made}

    check = run_tool(root, ["--no-cache"], timeout)
    result.seconds["check"] = round(check.seconds, 2)
    result.crashes += _crashes(check, "check")
    if check.returncode is None:
        result.hangs.append(f"check: no result after {timeout:.0f} s")
    else:
        try:
            reported = {(d["filename"], d["code"]) for d in json.loads(check.stdout or "[]")}
        except ValueError:
            reported = set()
        reported_files = {Path(name).resolve().as_posix() if Path(name).is_absolute() else (root / name).resolve().as_posix() for name, code in reported if code == "TPF001"}
        for path, rejected in made.items():
            if rejected and Path(path).resolve().as_posix() not in reported_files:
                result.rejected_not_reported.append(f"{rel[path]}: Python rejects it, no TPF001")

    first = run_tool(root, [*FIX], timeout)
    result.seconds["fix"] = round(first.seconds, 2)
    result.crashes += _crashes(first, "fix") + _refused(first, "fix")
    if first.returncode is None:
        result.hangs.append(f"fix: no result after {timeout:.0f} s")
    fixed = snapshot(root)
    for name in changed(before, fixed):
        path = str(root / name)
        if path in made and made[path]:
            result.rejected_rewritten.append(f"{name}: Python rejects it, --fix rewrote it")
        elif path in made and python_rejects((root / name).read_bytes()):
            result.unparsable.append(f"{name}: the fixed file does not compile")

    second = run_tool(root, [*FIX], timeout)
    result.seconds["fix-again"] = round(second.seconds, 2)
    result.crashes += _crashes(second, "fix again")
    if second.returncode is None:
        result.hangs.append(f"fix again: no result after {timeout:.0f} s")
    result.non_idempotent = [f"{name}: changed by a second --fix" for name in changed(fixed, snapshot(root))]
    result.outside_writes = changed(outside_before, snapshot(work, skip=root))
    return result


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", type=Path, required=True, help="folder of git mirrors or checkouts")
    parser.add_argument("--repos", type=Path, default=REPOS, help="the pinned list (TOML)")
    parser.add_argument("--only", nargs="*", help="check only these owner/name entries")
    parser.add_argument("--files", type=int, default=3, help="files mutated per repository")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per tool run before it counts as a hang")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)

    repos = [r for r in load_repos(args.repos) if not args.only or r.name in args.only]
    work = Path(tempfile.mkdtemp(prefix="ecosystem-mutations-"))
    (work / "sentinel.txt").write_text("a file beside the repositories: no run may change it\n")
    results: Dict[str, MutationResult] = {}
    try:
        for repo in repos:
            results[repo.name] = result = check_mutations(repo, args.checkouts, work, args.timeout, args.files)
            status = f"skipped ({result.skipped})" if result.skipped else f"{result.files} mutated files, {result.problems} problems, {result.seconds}"
            print(f"{repo.name}: {status}", flush=True)
            for kind in KINDS:
                for item in getattr(result, kind)[:3]:
                    print(f"    {kind}: {item}", flush=True)
            shutil.rmtree(work / repo.folder, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    totals = {kind: sum(len(getattr(r, kind)) for r in results.values()) for kind in KINDS}
    checked = [r for r in results.values() if not r.skipped]
    print(f"{len(checked)} repositories, {sum(r.files for r in checked)} mutated files: {totals}")
    if args.json:
        args.json.write_text(json.dumps({name: vars(r) for name, r in results.items()}, indent=2, sort_keys=True) + "\n")
    return 1 if any(r.problems for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
