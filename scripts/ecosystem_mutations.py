"""The ecosystem check's fuzz and mutation cases (issue 21): a repository's own files, changed
the ways that once broke the tool, written into a folder beside the export and checked there.

``python scripts/ecosystem.py --mutants N`` (default 2) takes N Python files of each repository
that use torch and Python accepts (spread by a hash of their path) and writes these variants:

* ``crlf_first``: ``\\r\\n`` + the file with LF endings (a CRLF first line once made every fix
  "not applied", or turned the next line's LF into CRLF); ``crlf``: every line CRLF;
  ``mixed_endings``: every other line CRLF;
* ``deep_parens`` / ``deep_lists`` / ``unary_minus`` / ``long_chain``: the file plus
  ``x = `` + 5,000 nested ``(`` or ``[`` (with a DataLoader line after), 5,000 unary minuses,
  or a 10,000-term ``a+a+...``: Python rejects these (``python file.py`` fails), so the tool must
  say TPF001 (or TPF003) quickly and never rewrite them;
* ``deep_valid``, ``long_sum``, ``long_concat``, ``long_calls``: nesting and chains Python still
  accepts at its default recursion limit (150 parentheses, a 2,000-term sum, a 3,000-part string
  concatenation, 500 chained calls): they lint like any file and their fixes compile.

The folder of variants gets the repository's runs (check, fix, fix again, each with a time
limit) and is judged the same way: no crash, no hang, every fix compiling and idempotent, each
line the fix leaves keeping its own ending, no write outside the folder, and TPF001/TPF003 for
every variant Python rejects. Nothing of the code is run; fixed files are only compiled.
"""

from __future__ import annotations

import ast
import collections
import difflib
import hashlib
import json
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# The sizes of issue 21's reproductions.
DEPTH = 5000
TERMS = 10000
REJECTION_CODES = ("TPF001", "TPF003")
MAX_SOURCE_BYTES = 200_000  # sample ordinary files, not generated tables


@dataclass(frozen=True)
class Sizes:
    """How deep and how long the generated expressions are (tests use smaller ones)."""

    depth: int = DEPTH
    terms: int = TERMS
    valid_depth: int = 150  # below CPython's 200 nested brackets
    valid_terms: int = 500
    sum_terms: int = 2000  # accepted at Python's default recursion limit
    concat_parts: int = 3000
    calls: int = 500


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


def lf(data: bytes) -> bytes:
    """The text with every CRLF made LF (lone CRs are left: they are rare and meaningful)."""
    return data.replace(b"\r\n", b"\n")


def _ended(data: bytes) -> bytes:
    data = lf(data)
    return data if data.endswith(b"\n") or not data else data + b"\n"


def crlf_first(data: bytes, sizes: Sizes) -> bytes:
    return b"\r\n" + lf(data)


def crlf(data: bytes, sizes: Sizes) -> bytes:
    return lf(data).replace(b"\n", b"\r\n")


def mixed_endings(data: bytes, sizes: Sizes) -> bytes:
    lines = _ended(data).split(b"\n")[:-1]
    return b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines))


def deep_parens(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"x = " + b"(" * sizes.depth + b"1" + b")" * sizes.depth + b"\n"


def deep_lists(data: bytes, sizes: Sizes) -> bytes:
    nested = b"[" * sizes.depth + b"]" * sizes.depth
    return _ended(data) + b"x = " + nested + b"\nloader = DataLoader(ds)\n"


def unary_minus(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"x = " + b"-" * sizes.depth + b"1\n"


def long_chain(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"x = " + b"+".join([b"a"] * sizes.terms) + b"\n"


def deep_valid(data: bytes, sizes: Sizes) -> bytes:
    parens = b"(" * sizes.valid_depth + b"1" + b")" * sizes.valid_depth
    chain = b"+".join([b"a"] * sizes.valid_terms)
    return _ended(data) + b"x = " + parens + b"\ny = " + chain + b"\nz = " + b"-" * 100 + b"1\n"


def long_sum(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"_long = " + b" + ".join([b"_a"] * sizes.sum_terms) + b"\n"


def long_concat(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"_long = (" + b" ".join([b'"x"'] * sizes.concat_parts) + b")\n"


def long_calls(data: bytes, sizes: Sizes) -> bytes:
    return _ended(data) + b"_long = _f" + b"(1)" * sizes.calls + b"\n"


Make = Callable[[bytes, Sizes], bytes]
VARIANTS: Tuple[Tuple[str, Make], ...] = (
    ("crlf_first", crlf_first),
    ("crlf", crlf),
    ("mixed_endings", mixed_endings),
    ("deep_parens", deep_parens),
    ("deep_lists", deep_lists),
    ("unary_minus", unary_minus),
    ("long_chain", long_chain),
    ("deep_valid", deep_valid),
    ("long_sum", long_sum),
    ("long_concat", long_concat),
    ("long_calls", long_calls),
)
# The variants Python rejects (the tool must say TPF001 or TPF003 and leave them alone).
REJECTED = frozenset({"deep_parens", "deep_lists", "unary_minus", "long_chain"})


def sample(root: Path, count: int) -> List[Path]:
    """``count`` Python files of ``root`` that use torch and Python accepts, chosen by a hash of
    their path (stable from run to run, spread over the tree); ordinary files only, no links."""
    candidates = []
    for path in sorted(root.rglob("*.py")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            continue
        rel = path.relative_to(root).as_posix()
        key = hashlib.sha256(rel.encode()).hexdigest()
        data = path.read_bytes()
        if not python_rejects(data):
            candidates.append((b"torch" not in data, key, path))
    return [path for _, _, path in sorted(candidates)[:count]]


def write_variants(root: Path, target: Path, count: int, sizes: Sizes = Sizes()) -> Dict[str, str]:
    """Write the variants of ``count`` sampled files of ``root`` flat into ``target``:
    their names -> ``source [variant]``, for the report."""
    target.mkdir(parents=True)
    written: Dict[str, str] = {}
    for index, source in enumerate(sample(root, count)):
        data = source.read_bytes()
        for variant, make in VARIANTS:
            name = f"m{index:02d}_{variant}.py"  # never test_*.py: test files are skipped by default
            (target / name).write_bytes(make(data, sizes))
            written[name] = f"{source.relative_to(root).as_posix()} [{variant}]"
    return written


def _ending(line: bytes) -> bytes:
    return line[len(line.rstrip(b"\r\n")):]


def endings_changed(before: bytes, after: bytes) -> Optional[str]:
    """Where a line the fix left alone lost its own ending (CRLF became LF or back), or None."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    bare = lambda lines: [line.rstrip(b"\r\n") for line in lines]  # noqa: E731
    matcher = difflib.SequenceMatcher(None, bare(old), bare(new), autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        for offset in range(i2 - i1 if tag == "equal" else 0):
            was, now = _ending(old[i1 + offset]), _ending(new[j1 + offset])
            if was != now:
                return f"line {i1 + offset + 1} ended {was!r}, now {now!r}"
    return None


def codes_by_file(stdout: str, root: Path) -> Dict[str, set]:
    """The rule codes found per file (relative to ``root``) in a JSON report."""
    try:
        diagnostics = json.loads(stdout or "[]")
    except ValueError:
        return {}
    found: Dict[str, set] = collections.defaultdict(set)
    for item in diagnostics:
        name = Path(item.get("filename", ""))
        try:
            rel = (name if name.is_absolute() else root / name).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = name.as_posix()
        found[rel].add(item.get("code", ""))
    return found


def missed_rejections(rejected: Sequence[str], found: Dict[str, set]) -> List[str]:
    """The variants Python rejects that were not reported as TPF001/TPF003."""
    return [name for name in rejected if not found.get(name, set()) & set(REJECTION_CODES)]


@dataclass(frozen=True)
class Tools:
    """What the ecosystem script lends this module (no import circle with it)."""

    run_tool: Callable  # (root, extra, timeout) -> Run
    snapshot: Callable  # (root, skip) -> {rel: digest}
    changed: Callable  # (before, after) -> [rel]
    syntax_problem: Callable  # (data, name) -> why or None
    crashes: Callable  # (run, stage) -> [str]
    refused: Callable  # (run, stage) -> [str]


def check_mutants(result, root: Path, work: Path, count: int, timeout: float, tools: Tools, sizes: Sizes = Sizes()) -> None:
    """Write variants of ``root``'s files beside it, lint and fix them, and add what went wrong
    to ``result`` (a RepoResult), each item prefixed ``mutants:``."""
    target = work / (root.name + ".mutants")
    names = write_variants(root, target, count, sizes)
    result.mutant_files = len(names)
    if not names:
        shutil.rmtree(target, ignore_errors=True)
        return
    label = lambda rel: f"mutants: {names.get(rel, rel)}"  # noqa: E731
    originals = {name: (target / name).read_bytes() for name in names}
    rejected = [name for name, data in originals.items() if python_rejects(data)]
    outside_before = tools.snapshot(work, skip=target)
    before = tools.snapshot(target)

    runs = {}
    for stage, extra in (("check", ["--no-cache"]), ("fix", ["--fix", "--unsafe-fixes"]), ("fix again", ["--fix", "--unsafe-fixes"])):
        run = tools.run_tool(target, extra, timeout)
        runs[stage] = run
        result.seconds[f"mutants {stage}"] = round(run.seconds, 2)
        result.crashes += tools.crashes(run, f"mutants {stage}")
        if run.returncode is None:
            result.hangs.append(f"mutants {stage}: no result after {timeout:.0f} s")
        if stage == "fix":
            result.refused += tools.refused(run, "mutants fix")
            fixed = tools.snapshot(target)
            for rel in tools.changed(before, fixed):
                data = (target / rel).read_bytes() if (target / rel).is_file() else b""
                if rel in rejected:
                    result.missed_rejections.append(f"{label(rel)}: rewritten by --fix although Python rejects it")
                    continue
                problem = tools.syntax_problem(data, rel)
                if problem is not None:
                    result.unparsable.append(f"{label(rel)}: {problem}")
                moved = endings_changed(originals.get(rel, b""), data)
                if moved is not None:
                    result.endings_changed.append(f"{label(rel)}: {moved}")
    if runs["check"].returncode is not None:
        found = codes_by_file(runs["check"].stdout, target)
        result.missed_rejections += [f"{label(rel)}: Python rejects it, no TPF001/TPF003" for rel in missed_rejections(rejected, found)]
    result.non_idempotent += [f"{label(rel)}: changed by a second --fix" for rel in tools.changed(fixed, tools.snapshot(target))]
    result.outside_writes += [f"mutants: {rel}" for rel in tools.changed(outside_before, tools.snapshot(work, skip=target))]
    shutil.rmtree(target, ignore_errors=True)
