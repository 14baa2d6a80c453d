"""Fuzzing the linter and fixer: inject anti-patterns into real code, lint, fix, check.

Used by ``tests/test_fuzz.py`` (a small seeded run in every test session) and by
``python tests/fuzzing.py`` (a longer campaign to hunt crashes; each one found becomes a
file under ``tests/fuzz_regressions/``). Nothing here imports or runs the linted code.

A case fails when linting or fixing raises or reports an internal error, takes longer
than the per-case limit of CPU time, reports a syntax error (TPF001) on code Python compiles, produces
a fix that does not parse, changes a line's ending, or is not idempotent (fixing the fixed text
changes it).
"""

from __future__ import annotations

import ast
import ctypes
import difflib
import random
import re
import sys
import sysconfig
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import libcst

from pytorch_perflint.config import Settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.workers import call_deep

R = TypeVar("R")

# Everything on, fixes included: the widest surface.
SETTINGS = Settings(select=("ALL",), preview=True, fix=True, unsafe_fixes=True, test_files="lint")
CASE_SECONDS = 30  # of CPU time; a case takes well under one

# Anti-patterns, each a block of statements valid wherever a statement is (module, function
# or class body). Names start with `_fz` so they do not meet the host file's names.
SNIPPETS = (
    "from torch.utils.data import DataLoader\n_fz_loader = DataLoader(_fz_ds, batch_size=8)\n",
    "import torch\n_fz_loader = torch.utils.data.DataLoader(_fz_ds, num_workers=0, pin_memory=True)\n"
    "for _fz_x, _fz_y in _fz_loader:\n    _fz_x = _fz_x.cuda()\n",
    "import torch\nimport numpy as np\n_fz_t = torch.tensor(np.zeros(3))\n",
    "_fz_opt.zero_grad(set_to_none=False)\n",
    "for _fz_p in _fz_model.parameters():\n    _fz_p.grad.zero_()\n",
    "import torch.nn as nn\n_fz_net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())\n",
    "import torch\nfor _fz_x in _fz_loader:\n    _fz_loss = _fz_model(_fz_x.cuda()).sum()\n"
    "    _fz_loss.backward()\n    _fz_opt.step()\n    print(_fz_loss.item())\n",
    "import torch\ntorch.autograd.set_detect_anomaly(True)\n",
    "import torch\n_fz_dp = torch.nn.DataParallel(_fz_model)\n",
    "import torch\n_fz_z = torch.randn(3).cuda()\n",
    "import torch\n_fz_w = torch.zeros(4, 4)\n_fz_w = _fz_w.to('cuda')\n",
    "_fz_model.eval()\nfor _fz_x in _fz_loader:\n    _fz_out = _fz_model(_fz_x)\n",
    "import torch\nimport torchvision\n_fz_cnn = torchvision.models.resnet18().cuda()\n"
    "_fz_sgd = torch.optim.SGD(_fz_cnn.parameters(), lr=0.1)\nfor _fz_x, _fz_y in _fz_loader:\n"
    "    _fz_sgd.zero_grad()\n    _fz_cnn(_fz_x.cuda()).sum().backward()\n    _fz_sgd.step()\n",
    "import torch\n_fz_adam = torch.optim.Adam(_fz_model.cuda().parameters(), lr=1e-3)\n",
    "import torch\nwith torch.autograd.detect_anomaly():\n    _fz_model(_fz_x).sum().backward()\n",
    "import torch\ntorch.backends.cudnn.benchmark = False\n",
)


@dataclass(frozen=True)
class Case:
    """One program to lint and fix, and where it came from (for the failure message)."""

    name: str
    source: str


class Hang(BaseException):
    """Not an ``Exception``: the engine catches those from a crashing rule and goes on."""


def run_limited(function: Callable[[], R], seconds: float) -> R:
    """``function()`` as the tool's workers run a file (``workers.call_deep``: a large stack
    and a high recursion limit, without which deep but valid code fails here and not in the
    tool), stopped with ``Hang`` once this process has spent ``seconds`` of CPU time (a loop
    that never ends spends CPU; a machine busy with other work does not make a case look
    hung). ``Hang`` is raised in the case's thread too, so a spinning case does not go on.
    The recursion limit ``call_deep`` raises is put back after: in this (main) thread's
    smaller stack, a high limit would turn a RecursionError into a crash."""
    idents: List[int] = []
    outcome: List[Tuple[bool, object]] = []

    def tracked() -> R:
        idents.append(threading.get_ident())
        return function()

    def outer() -> None:
        try:
            outcome.append((True, call_deep(tracked)))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            outcome.append((False, error))

    runner = threading.Thread(target=outer, name="fuzz-case", daemon=True)
    deadline = time.process_time() + seconds
    limit = sys.getrecursionlimit()
    runner.start()
    try:
        while runner.is_alive():
            runner.join(0.05)
            if runner.is_alive() and time.process_time() > deadline:
                for ident in idents:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(Hang))
                runner.join(1.0)
                raise Hang(f"no result after {seconds:g} s of CPU time")
    finally:
        sys.setrecursionlimit(limit)
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[return-value]
    raise value  # type: ignore[misc]


def problems(case: Case, seconds: float = CASE_SECONDS) -> List[str]:
    """What is wrong with linting and fixing ``case`` (empty: nothing)."""
    try:
        return run_limited(lambda: _problems(case), seconds)
    except Hang as error:
        return [f"hang: {error}"]


def _problems(case: Case) -> List[str]:
    path = Path(case.name if case.name.endswith(".py") else "fuzz_case.py").name
    found: List[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # the linted code's own, not ours
            first = fix_source(case.source, Path(path), SETTINGS)
            found += [f"internal error: {e}" for e in first.errors]
            found += [f"fix error: {e}" for e in first.fix_errors]
            if _compiles(case.source):
                found += [f"TPF001 on valid code: {d.message}" for d in first.diagnostics if d.code == "TPF001"]
            if first.fixed:
                try:
                    ast.parse(first.source)
                    libcst.parse_module(first.source)
                except Exception as error:  # noqa: BLE001 - any parse failure is the finding
                    found.append(f"the fixed text does not parse: {error}")
                    return found
            found += _endings_changed(case.source, first.source)
            second = fix_source(first.source, Path(path), SETTINGS)
            if second.source != first.source:
                found.append(f"not idempotent: a second --fix changed the text ({second.fixed} more fixes)")
    except Exception as error:  # noqa: BLE001 - an exception out of the tool is the finding
        found.append(f"exception: {type(error).__name__}: {error}")
    return found


def _endings_changed(before: str, after: str) -> List[str]:
    """A fix keeps each line's own ending (issue 21: in a file whose first line ends
    ``\r\n`` and the others ``\n``, LibCST wrote the fixed lines with ``\r\n``). Lines
    compared by their text: an unchanged line, and a changed one that replaces exactly one
    line, must end as it did."""
    old = [line for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", before)]
    new = [line for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", after)]
    text = lambda line: line.rstrip("\r\n")  # noqa: E731
    matcher = difflib.SequenceMatcher(a=[text(x) for x in old], b=[text(x) for x in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace") and i2 - i1 == j2 - j1:
            for a, b in zip(old[i1:i2], new[j1:j2]):
                if b != text(b) and a[len(text(a)) :] != b[len(text(b)) :]:
                    return [f"a fix changed the line ending of {a!r} to that of {b!r}"]
    return []


def crlf_first_line(case: Case) -> Case:
    """The case with a blank first line ending ``\r\n``: LibCST takes a module's newline
    from its first line (issue 21: every non-idempotent case of a stress run was this)."""
    return Case(f"{case.name} (CRLF first line)", "\r\n" + case.source)


def _compiles(source: str) -> bool:
    """Python compiles it (a full compile: `from __future__` placement is checked there)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            compile(source, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


# -- injecting anti-patterns into real files --------------------------------------------------


def statement_starts(source: str) -> List[int]:
    """0-based line indexes where a statement (with its decorators) starts alone on its line."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    # Nothing may come before `from __future__` imports (but the docstring).
    futures = [n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    after = max(futures, default=0)
    starts = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        decorators = getattr(node, "decorator_list", None)
        first = decorators[0] if decorators else node
        line = first.lineno - 1
        col = first.col_offset - (1 if decorators else 0)  # a decorator's `@` stands before it
        if after <= line < len(lines) and lines[line][:col].strip() == "" and col >= 0:
            starts.add(line)
    return sorted(starts)


def inject(source: str, rng: random.Random, count: int) -> Optional[str]:
    """``source`` with ``count`` snippets inserted before random statements (indented to
    match); None when no position keeps it valid Python."""
    for _ in range(count):
        try:
            starts = statement_starts(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if not starts:
            return None
        for _attempt in range(5):
            line = rng.choice(starts)
            lines = source.splitlines(keepends=True)
            indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
            newline = "\r\n" if lines[line].endswith("\r\n") else "\n"
            snippet = "".join(indent + part + newline for part in rng.choice(SNIPPETS).splitlines())
            candidate = "".join(lines[:line]) + snippet + "".join(lines[line:])
            if _compiles(candidate):
                source = candidate
                break
        else:
            return None
    return source


def library_files(root: Path, rng: random.Random, count: int, max_bytes: int = 40_000) -> List[Path]:
    """``count`` Python files of a package folder, chosen by ``rng`` among those under
    ``max_bytes`` (large files cost seconds each to parse, and add nothing to the checks)."""
    files = sorted(
        p for p in root.rglob("*.py") if p.is_file() and p.stat().st_size <= max_bytes and not _excluded(p, root)
    )
    return rng.sample(files, min(count, len(files)))


def torch_root() -> Optional[Path]:
    """The installed torch package's folder, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _excluded(path: Path, root: Path) -> bool:
    """Third-party packages installed under the standard library's folder are not it."""
    parts = path.relative_to(root).parts
    return "site-packages" in parts or "dist-packages" in parts


def injected_cases(roots: Sequence[Path], seed: int, per_root: int) -> Iterator[Case]:
    """Real files with one to three anti-patterns injected at random statements."""
    rng = random.Random(seed)
    for root in roots:
        for path in library_files(root, rng, per_root):
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            injected = inject(text, rng, rng.randint(1, 3))
            if injected is not None:
                yield Case(f"{path.relative_to(root.parent)}", injected)


def main(argv: Sequence[str]) -> int:
    """``python tests/fuzzing.py SEED PER_ROOT``: a longer campaign over torch and the stdlib."""
    seed = int(argv[0]) if argv else 0
    per_root = int(argv[1]) if len(argv) > 1 else 200
    roots = [r for r in (torch_root(), stdlib_root()) if r is not None]
    failures = 0
    for index, case in enumerate(injected_cases(roots, seed, per_root)):
        found = problems(case)
        if found:
            failures += 1
            out = Path("fuzz-failures") / f"{seed}-{index}.py"
            out.parent.mkdir(exist_ok=True)
            out.write_text(case.source, encoding="utf-8")
            print(f"{case.name} -> {out}: {found}", flush=True)
    print(f"{failures} failing cases", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
