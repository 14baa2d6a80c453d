"""The README's install instructions agree with CI and the bench command's own advice: one
pinned torch version, and the CPU-build command spelled out (PyPI's Linux wheel is CUDA)."""

from __future__ import annotations

import re
from pathlib import Path

from pytorch_perflint.bench.cli import TORCH_MISSING

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PIN = re.compile(r"torch==(\d+\.\d+\.\d+)")


def test_one_torch_pin_everywhere():
    versions = set(PIN.findall(README)) | set(PIN.findall((ROOT / ".ci" / "run").read_text())) | set(PIN.findall(TORCH_MISSING))
    assert len(versions) == 1, versions


def test_readme_says_how_to_get_the_cpu_build_and_what_happens_otherwise():
    version = PIN.search(README).group(1)
    assert f"pip install 'torch=={version}' --index-url https://download.pytorch.org/whl/cpu" in README
    assert "CUDA build" in README and "several GB" in README
    assert "pinned to the CPU build" not in README  # the pin alone does not choose the build


def test_the_first_two_commands_are_the_ones_ci_runs():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    assert blocks[0].strip().endswith("pytorch-perflint check examples/ --exit-zero")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest -q" in blocks[1] and "python -m pytest -q" in ci
    assert ".[test,bench,plot]" in blocks[1] and ".[test,bench,plot]" in ci
