"""A seeded fuzz run: generated programs and real files with anti-patterns injected, each
linted and fixed with every rule on (``--unsafe-fixes --preview --select ALL``), in-process.

Fails on an exception, an internal error, a hang (a per-case limit of CPU time), a false TPF001, a
fix that does not parse, or a fix that is not idempotent (see ``fuzzing.problems``). The run
is deterministic (hypothesis derandomized, a fixed seed for the real files) and sized to
stay well under a minute on a 2-core machine; ``python tests/fuzzing.py SEED N`` runs a
longer campaign. Every failure found becomes a file under ``tests/fuzz_regressions/``.

``FUZZ_SCALE=N`` (an integer, 1 by default) multiplies the number of examples and real
files, for a longer local run of the same checks; CI runs the default size.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from fuzzing import Case, crlf_first_line, inject, injected_cases, problems, stdlib_root, torch_root

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
SEED = 20240611
_SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it generates
@settings(max_examples=40 * SCALE, **_SETTINGS)
@given(source=hypothesmith.from_grammar(), rng=st.randoms(use_true_random=False), count=st.integers(0, 2))
def test_generated_programs(source, rng, count):
    program = (inject(source, rng, count) if count else None) or source
    found = problems(Case("generated.py", program))
    assert found == [], f"{found}\n{program}"


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=8 * SCALE, **_SETTINGS)
@given(source=hypothesmith.from_node(), rng=st.randoms(use_true_random=False))
def test_generated_trees(source, rng):
    program = inject(source, rng, 1) or source
    found = problems(Case("generated.py", program))
    assert found == [], f"{found}\n{program}"


def _real_cases():
    roots = [r for r in (torch_root(), stdlib_root()) if r is not None]
    return list(injected_cases(roots, SEED, per_root=12 * SCALE))


REAL = _real_cases()


def test_real_files_were_found():
    assert len(REAL) >= 12, "the torch package and the standard library give the fuzz run its inputs"


@pytest.mark.parametrize("case", REAL, ids=[c.name for c in REAL])
def test_real_files_with_injected_anti_patterns(case):
    found = problems(case)
    assert found == [], f"{case.name}: {found}\n{case.source}"


@pytest.mark.parametrize("case", REAL[:4], ids=[c.name for c in REAL[:4]])
def test_real_files_with_a_crlf_first_line(case):
    found = problems(crlf_first_line(case))
    assert found == [], f"{case.name}: {found}"


REGRESSION_FILES = [
    pytest.param(p, id=p.name) for p in (sorted(REGRESSIONS.glob("*.py")) if REGRESSIONS.exists() else [])
] or [pytest.param(None, marks=pytest.mark.skip(reason="no fuzz run has found a failing case yet"))]


@pytest.mark.parametrize("path", REGRESSION_FILES)
def test_fuzz_regressions(path):
    """Every failure a fuzz run found, kept as a file: it must lint and fix cleanly."""
    case = Case(path.name, path.read_bytes().decode("utf-8"))  # its line endings as they are
    assert problems(case) == []


def test_the_checks_catch_what_they_claim(monkeypatch):
    """The oracle can fail: an exception and a non-idempotent fix are both reported."""
    import fuzzing

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(fuzzing, "fix_source", broken)
    assert problems(Case("x.py", "x = 1\n")) == ["exception: RuntimeError: boom"]

    calls = []

    def drifting(source, path, settings):
        from pytorch_perflint.fixer import FixOutcome

        calls.append(source)
        return FixOutcome(source + "#\n", 1, ())

    monkeypatch.setattr(fuzzing, "fix_source", drifting)
    assert any("not idempotent" in p for p in problems(Case("x.py", "x = 1\n")))


def test_the_time_limit_reports_a_hang(monkeypatch):
    import fuzzing

    def spin(*args, **kwargs):
        try:  # the engine goes on after a rule raises an Exception: the limit is not one
            while True:  # what Scope.lookup_import did on `global x` twice (issue 11 item 1)
                pass
        except Exception:  # noqa: BLE001
            spin()

    monkeypatch.setattr(fuzzing, "fix_source", spin)
    assert problems(Case("x.py", "x = 1\n"), seconds=0.5) == ["hang: no result after 0.5 s of CPU time"]


def test_injection_keeps_code_valid_and_adds_the_snippet():
    source = '"""Doc."""\nfrom __future__ import annotations\n\n@decorator\ndef f(x):\n    return x\n'
    rng = random.Random(1)
    for _ in range(20):
        injected = inject(source, rng, 2)
        assert injected is not None and "_fz_" in injected
        compile(injected, "<test>", "exec")
