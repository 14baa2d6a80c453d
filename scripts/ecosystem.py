"""The ecosystem check: lint and fix real repositories at pinned commits, report what broke.

As ruff's ecosystem check does, it runs the tool over a list of real projects and reports:

* crashes (internal errors), hangs (a run past its time limit);
* fixes that leave a file Python cannot compile, fixes the tool refused to write because
  their result would not parse (a rule's bug all the same), and fixes that are not
  idempotent (a second ``--fix`` changes the text again);
* writes outside the linted root (any file of the work folder beside the repository that
  changes during the runs);
* the findings per rule, compared with the last recorded run (a JSON baseline).

It never fetches code: the repositories come from a folder of local git mirrors or
checkouts (``--checkouts``; for each ``owner/name`` of the list one of ``owner+name/repo``,
``owner+name/repo/.git``, ``owner+name/.git``, ``owner+name`` as a git directory, or a plain
folder), from which the pinned commit is exported (``git ls-tree`` and ``git cat-file``) into a
scratch folder.
The tool runs as a separate process (``python -I``, this checkout's package put first: the
linted tree is never on ``sys.path``); nothing of the linted code is imported or run, fixed files are
only compiled to check their syntax.

    python scripts/ecosystem.py --checkouts /work/.mirror --report docs/ecosystem.md \\
        --baseline docs/ecosystem.json [--write-baseline] [--machine "..."]

With ``--mutants N`` (default 2) it also writes fuzz and mutation variants of N sampled files
per repository beside the export and checks them the same way (``ecosystem_mutations.py``).

Exit status: 1 when any repository had a crash, a hang, an unparsable, refused or non-idempotent fix,
a write outside its root, a variant Python rejects that was not TPF001/TPF003 or was rewritten, or a
line whose ending a fix changed; 0 otherwise (changed finding counts are reported, not failed).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, as a script or loaded by path
from ecosystem_mutations import Sizes, Tools, check_mutants  # noqa: E402
from ecosystem_report import KINDS, compare, machine_description, markdown, totals  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REPOS = ROOT / "scripts" / "ecosystem_repos.toml"
CACHE_DIR = ".pytorch_perflint_cache"
FLAGS = ("--select", "ALL", "--preview", "--exit-zero", "--output-format", "json")
# ``-I`` leaves the linted folder off sys.path; this checkout's package goes first instead.
RUN_CHECKOUT = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pytorch_perflint.__main__ import main; main()"
# git must not run anything the mirror's own config asks for.
_GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class Repo:
    name: str  # owner/name
    commit: str
    kind: str = ""  # "scripts" or "project": how the repository is laid out
    note: str = ""

    @property
    def folder(self) -> str:
        return self.name.replace("/", "+")


@dataclass
class RepoResult:
    """What happened to one repository (the baseline keeps these fields)."""

    commit: str
    python_files: int = 0
    findings: Dict[str, int] = field(default_factory=dict)
    fixed_files: int = 0
    crashes: List[str] = field(default_factory=list)
    hangs: List[str] = field(default_factory=list)
    unparsable: List[str] = field(default_factory=list)  # fixed files Python cannot compile
    refused: List[str] = field(default_factory=list)  # fixes the tool did not write: they would not parse
    non_idempotent: List[str] = field(default_factory=list)
    outside_writes: List[str] = field(default_factory=list)
    missed_rejections: List[str] = field(default_factory=list)  # variants Python rejects: no TPF001/TPF003, or rewritten
    endings_changed: List[str] = field(default_factory=list)  # a fix changed the ending of a line it left alone
    mutant_files: int = 0  # fuzz and mutation variants generated from the repository's files
    seconds: Dict[str, float] = field(default_factory=dict)
    skipped: str = ""
    missing_blobs: int = 0  # files of the commit the mirror does not hold (large data files)

    @property
    def problems(self) -> int:
        return sum(len(getattr(self, kind)) for kind in KINDS)


def load_repos(path: Path) -> List[Repo]:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    repos = [Repo(**entry) for entry in data.get("repo", [])]
    names = [r.name for r in repos]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SystemExit(f"{path}: listed twice: {', '.join(duplicates)}")
    return repos


# -- getting the code -----------------------------------------------------------------------


def _git(git_dir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, **_GIT_ENV}
    return subprocess.run([*_GIT, f"--git-dir={git_dir}", *args], env=env, capture_output=True, check=False, **kwargs)


def find_source(checkouts: Path, repo: Repo) -> Tuple[Optional[Path], Optional[Path]]:
    """(git directory, None) or (None, plain folder) for a repository, or (None, None)."""
    base = checkouts / repo.folder
    for candidate in (base / "repo", base / "repo" / ".git", base / ".git", base):
        if candidate.is_dir() and _git(candidate, "rev-parse", "--git-dir").returncode == 0:
            if (candidate / "HEAD").is_file() or candidate.name == ".git":
                return candidate, None
    return (None, base) if base.is_dir() else (None, None)


def materialize(checkouts: Path, repo: Repo, target: Path) -> Tuple[str, int]:
    """Export the pinned commit into ``target``: (why it could not, or "", the number of
    files of the commit the mirror lacks)."""
    git_dir, folder = find_source(checkouts, repo)
    if git_dir is not None:
        if _git(git_dir, "cat-file", "-e", f"{repo.commit}^{{commit}}").returncode != 0:
            return f"commit {repo.commit} is not in {git_dir}", 0
        return export_tree(git_dir, repo.commit, target)
    if folder is not None:
        shutil.copytree(folder, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return "", 0
    return f"no checkout of {repo.name} under {checkouts}", 0


def export_tree(git_dir: Path, commit: str, target: Path) -> Tuple[str, int]:
    """Write the files of ``commit`` under ``target`` (like ``git archive``, but a mirror
    may lack its largest blobs: those are left out). Paths that would leave ``target`` and
    links pointing outside it are skipped; submodules are not followed."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit)
    if listing.returncode != 0:
        return f"git ls-tree failed: {listing.stderr.decode(errors='replace').strip()}", 0
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        if kind == "blob":
            entries.append((mode, oid, raw_path.decode("utf-8", errors="surrogateescape")))
    request = "".join(f"{oid}\n" for _, oid, _ in entries).encode()
    blobs = _git(git_dir, "cat-file", "--batch", input=request)
    stream, contents = io.BytesIO(blobs.stdout), {}
    for _, oid, _ in entries:
        header = stream.readline().decode().split()
        if len(header) == 3:
            contents[oid] = stream.read(int(header[2]))
            stream.read(1)  # the newline after the content
    target.mkdir(parents=True)
    missing = sum(1 for _, oid, _ in entries if oid not in contents)
    base = target.resolve()
    for mode, oid, rel in entries:
        data = contents.get(oid)
        destination = (target / rel).resolve()
        if data is None or base not in destination.parents:
            continue  # a blob the mirror lacks, or a path that leaves the tree
        destination.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            link = os.fsdecode(data)
            if base in (destination.parent / link).resolve().parents:
                destination.symlink_to(link)
            continue
        destination.write_bytes(data)
        if mode == "100755":
            destination.chmod(0o755)
    return "", missing


# -- watching the files ---------------------------------------------------------------------


def snapshot(root: Path, skip: Optional[Path] = None) -> Dict[str, str]:
    """Relative path -> content hash of every file under ``root`` (links by their target
    text), leaving out ``skip`` and the lint cache."""
    found: Dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d != CACHE_DIR and (skip is None or here / d != skip)]
        for name in files:
            path = here / name
            if path.is_symlink():
                digest = "link:" + os.readlink(path)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[path.relative_to(root).as_posix()] = digest
    return found


def changed(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def syntax_problem(data: bytes, name: str) -> Optional[str]:
    """None when Python compiles the file (never runs it; a notebook: when it is JSON),
    else why not."""
    try:
        if name.endswith(".ipynb"):
            json.loads(data)
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return f"{type(error).__name__}: {error}"
    return None


# -- running the tool -----------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    returncode: Optional[int]  # None: timed out
    stdout: str
    stderr: str
    seconds: float


def run_tool(root: Path, extra: Sequence[str], timeout: float) -> Run:
    """``pytorch-perflint check . FLAGS extra`` in ``root``, isolated from its sys.path: the tool
    of this checkout (``ROOT``), whatever an editable install of the environment points at."""
    return run_command([sys.executable, "-I", "-c", RUN_CHECKOUT, "check", ".", *FLAGS, *extra], root, timeout)


def run_command(command: Sequence[str], cwd: Path, timeout: float) -> Run:
    """Run ``command`` in its own session; when it ends or runs past ``timeout``, every process
    left in that session ends too (a run killed at its time limit once left its workers
    running for an hour, holding 1.5 GB each)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        code: Optional[int] = process.returncode
    except subprocess.TimeoutExpired:
        _end_session(process.pid)
        out, err = process.communicate()
        code = None
    finally:
        _end_session(process.pid)
    return Run(code, out.decode(errors="replace"), err.decode(errors="replace"), time.perf_counter() - started)


def _end_session(leader: int) -> None:
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _crashes(run: Run, stage: str) -> List[str]:
    lines = [line for line in run.stderr.splitlines() if "internal error" in line or "too deeply nested" in line]
    if run.returncode not in (0, 1, None) and not lines:
        tail = run.stderr.strip().splitlines()[-1:] or ["(no message)"]
        lines = [f"exit {run.returncode}: {tail[0]}"]
    return [f"{stage}: {line}" for line in lines]


def _refused(run: Run, stage: str) -> List[str]:
    refusals = ("does not parse", "was not applied", "fix not applied", "did not settle")
    return [f"{stage}: {line}" for line in run.stderr.splitlines() if any(r in line for r in refusals)]


def _findings(run: Run) -> Dict[str, int]:
    try:
        diagnostics = json.loads(run.stdout or "[]")
    except ValueError:
        return {}
    return dict(sorted(collections.Counter(d["code"] for d in diagnostics).items()))


def check_repo(repo: Repo, checkouts: Path, work: Path, timeout: float, mutants: int = 0, mutant_timeout: float = 120.0,
               sizes: Sizes = Sizes()) -> RepoResult:
    """Export, lint, fix and fix again one repository in its own box ``work/owner+name`` (the
    export is ``repo`` in it, beside a sentinel file and the variants: a write there is outside)."""
    result = RepoResult(commit=repo.commit)
    box = work / repo.folder
    box.mkdir(parents=True)
    (box / "sentinel.txt").write_text("a file beside the repository: no run may change it\n")
    root = box / "repo"
    why, result.missing_blobs = materialize(checkouts, repo, root)
    if why:
        result.skipped = why
        return result
    result.python_files = sum(1 for _ in root.rglob("*.py"))
    outside_before = snapshot(box, skip=root)
    before = snapshot(root)

    check = run_tool(root, ["--no-cache"], timeout)
    result.seconds["check"] = round(check.seconds, 2)
    result.findings = _findings(check)
    result.crashes += _crashes(check, "check")
    if check.returncode is None:
        result.hangs.append(f"check: no result after {timeout:.0f} s")

    first = run_tool(root, ["--fix", "--unsafe-fixes"], timeout)
    result.seconds["fix"] = round(first.seconds, 2)
    result.crashes += _crashes(first, "fix")
    result.refused += _refused(first, "fix")
    if first.returncode is None:
        result.hangs.append(f"fix: no result after {timeout:.0f} s")
    fixed = snapshot(root)
    touched = changed(before, fixed)
    result.fixed_files = len(touched)
    for rel in touched:
        path = root / rel
        if path.suffix in (".py", ".ipynb") and path.is_file():
            problem = syntax_problem(path.read_bytes(), rel)
            before_fix = original(repo, checkouts, rel)
            if problem is not None and before_fix is not None and syntax_problem(before_fix, rel) is None:
                result.unparsable.append(f"{rel}: {problem}")  # a file broken before is not the fix's

    if touched or first.returncode not in (0, 1):  # a fix run that changed nothing has nothing to repeat
        second = run_tool(root, ["--fix", "--unsafe-fixes"], timeout)
        result.seconds["fix-again"] = round(second.seconds, 2)
        result.crashes += _crashes(second, "fix again")
        if second.returncode is None:
            result.hangs.append(f"fix again: no result after {timeout:.0f} s")
        result.non_idempotent = [f"{rel}: changed by a second --fix" for rel in changed(fixed, snapshot(root))]
    result.outside_writes = changed(outside_before, snapshot(box, skip=root))
    if mutants:
        check_mutants(result, root, box, mutants, mutant_timeout, TOOLS, sizes)
    return result


def original(repo: Repo, checkouts: Path, rel: str) -> Optional[bytes]:
    """The file as it is at the pinned commit."""
    git_dir, folder = find_source(checkouts, repo)
    if git_dir is not None:
        shown = _git(git_dir, "show", f"{repo.commit}:{rel}")
        return shown.stdout if shown.returncode == 0 else None
    if folder is not None and (folder / rel).is_file():
        return (folder / rel).read_bytes()
    return None


# -- reporting ------------------------------------------------------------------------------


TOOLS = Tools(run_tool=run_tool, snapshot=snapshot, changed=changed, syntax_problem=syntax_problem, crashes=_crashes, refused=_refused)


def _tool_commit() -> str:
    done = _git(ROOT / ".git", "rev-parse", "--short", "HEAD") if (ROOT / ".git").exists() else None
    return done.stdout.decode().strip() if done is not None and done.returncode == 0 else "unknown"


def _print_status(repo: Repo, result: RepoResult) -> None:
    status = f"skipped ({result.skipped})" if result.skipped else (
        f"{sum(result.findings.values())} findings, {result.fixed_files} files fixed, {result.mutant_files} variants, "
        f"{result.problems} problems, {sum(result.seconds.values()):.0f} s"
    )
    print(f"{repo.name}: {status}", flush=True)
    for kind in KINDS:
        for item in getattr(result, kind)[:3]:
            print(f"    {kind}: {item}", flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", type=Path, required=True, help="folder of git mirrors or checkouts")
    parser.add_argument("--repos", type=Path, default=REPOS, help="the pinned list (TOML)")
    parser.add_argument("--baseline", type=Path, default=ROOT / "docs" / "ecosystem.json")
    parser.add_argument("--write-baseline", action="store_true", help="record this run as the new baseline")
    parser.add_argument("--report", type=Path, help="write the Markdown report here")
    parser.add_argument("--only", nargs="*", help="check only these owner/name entries")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per tool run before it counts as a hang")
    parser.add_argument("--mutants", type=int, default=2, metavar="N",
                        help="fuzz and mutation variants of N sampled files per repository (0: none)")
    parser.add_argument("--mutant-timeout", type=float, default=120.0, help="seconds per tool run on the variants")
    parser.add_argument("--jobs", type=int, default=1, help="repositories checked at the same time")
    parser.add_argument("--machine", default=machine_description(), help="how to name the machine in the report")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed after)")
    args = parser.parse_args(argv)

    repos = [r for r in load_repos(args.repos) if not args.only or r.name in args.only]
    baseline = json.loads(args.baseline.read_text()) if args.baseline.is_file() else None
    work = args.work or Path(tempfile.mkdtemp(prefix="ecosystem-"))
    work.mkdir(parents=True, exist_ok=True)
    results: Dict[str, RepoResult] = {}
    started = time.perf_counter()
    one = lambda repo: check_repo(repo, args.checkouts, work, args.timeout, args.mutants, args.mutant_timeout)  # noqa: E731
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            pending = {pool.submit(one, repo): repo for repo in repos}
            for future in concurrent.futures.as_completed(pending):
                repo = pending[future]
                results[repo.name] = result = future.result()
                _print_status(repo, result)
                shutil.rmtree(work / repo.folder, ignore_errors=True)
                _write(args, repos, results, baseline, started, final=False)  # a run cut short keeps what it saw
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    for line in _write(args, repos, results, baseline, started, final=True):
        print(line)
    return 1 if any(r.problems for r in results.values()) else 0


def _write(args, repos: Sequence[Repo], results: Dict[str, RepoResult], baseline: Optional[dict], started: float,
           final: bool) -> List[str]:
    """Write the report and the baseline for the repositories done so far (in the list's order);
    the changes since the baseline."""
    from pytorch_perflint import __version__

    done = {repo.name: results[repo.name] for repo in repos if repo.name in results}
    meta = {
        "machine": args.machine,
        "version": __version__,
        "tool_commit": _tool_commit(),
        "date": datetime.date.today().isoformat(),
        "wall_minutes": round((time.perf_counter() - started) / 60, 1),
        "mutants_per_repo": args.mutants,
        "complete": final and len(done) == len(repos),
    }
    changes = compare(done, baseline)
    if args.report:
        args.report.write_text(markdown(done, repos, changes, meta), encoding="utf-8")
    if args.write_baseline:
        record = {**meta, "repos": {name: asdict(r) for name, r in done.items()}, "totals": totals(done)}
        args.baseline.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return changes


if __name__ == "__main__":
    sys.exit(main())
