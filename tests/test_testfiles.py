"""The ``test-files`` policy: one decision for every rule about pytest's test files."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path, PurePath

import pytest

from pytorch_perflint.config import ConfigError, Settings, load_settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.testfiles import is_test_file
from pytorch_perflint.types import Applicability

# What mmf's unit tests look like: every rule below has something to say about them.
UNIT_TEST = textwrap.dedent(
    """
    import unittest

    import torch
    from torch.utils.data import DataLoader


    class TestTrainer(unittest.TestCase):
        def test_one_step(self):
            model = torch.nn.Linear(2, 1).cuda()
            optimizer = torch.optim.Adam(model.parameters())
            loader = DataLoader(self.dataset, batch_size=2)
            for x, y in loader:
                loss = model(x.cuda()).sum()
                optimizer.zero_grad(set_to_none=False)
                loss.backward()
                optimizer.step()


    def test_manual_zeroing(params):
        for p in params:
            p.grad.zero_()
    """
).lstrip()

ALL = Settings(select=("ALL",), preview=True, unsafe_fixes=True, fix=True)


def _codes(path: str, settings: Settings) -> set:
    result = lint_source(UNIT_TEST, Path(path), settings)
    assert not result.errors
    return {d.code for d in result.diagnostics}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("test_model.py", True),
        ("tests/test_model.py", True),
        ("pkg/tests/helpers.py", True),
        ("pkg/test/data/make.py", True),
        ("model_test.py", True),
        ("conftest.py", True),
        ("sub/conftest.py", True),
        ("models/test.py", False),  # research code's evaluation script
        ("tools/testing.py", False),
        ("torch/testing/_internal/common_utils.py", False),  # helpers pytest does not collect
        ("contest/solver.py", False),
        ("latest_model.py", False),
        ("train.py", False),
        ("test_data.json", False),
    ],
)
def test_test_files_follow_pytest_conventions(path, expected):
    assert is_test_file(PurePath(path)) is expected


def test_folders_count_only_below_the_project_root(tmp_path):
    root = tmp_path / "tests" / "project"
    assert not is_test_file(root / "train.py", str(root))
    assert is_test_file(root / "tests" / "train.py", str(root))
    assert is_test_file(root / "test_train.py", str(root))


def test_by_default_no_rule_reports_in_a_test_file():
    """The rules agree: before the policy, TPF201 stayed silent in test functions while
    TPF101/TPF102/TPF602 rewrote the same file."""
    assert _codes("example.py", ALL) >= {"TPF101", "TPF102", "TPF201", "TPF602"}
    assert _codes("tests/test_trainer.py", ALL) == set()
    outcome = fix_source(UNIT_TEST, Path("tests/test_trainer.py"), ALL)
    assert outcome.source == UNIT_TEST and outcome.fixed == 0


def test_a_test_file_with_a_syntax_error_is_still_reported():
    result = lint_source("def f(:\n", Path("test_broken.py"), ALL)
    assert [d.code for d in result.diagnostics] == ["TPF001"]


def test_no_fix_reports_everything_and_applies_nothing():
    settings = dataclasses.replace(ALL, test_files="no-fix")
    result = lint_source(UNIT_TEST, Path("tests/test_trainer.py"), settings)
    codes = {d.code for d in result.diagnostics}
    # TPF201 too: inside a test function of a test file it follows the same policy.
    assert codes >= {"TPF101", "TPF102", "TPF201", "TPF602"}
    fixes = [d.fix for d in result.diagnostics if d.fix is not None]
    assert fixes and all(f.applicability is Applicability.DISPLAY_ONLY for f in fixes)
    assert all("test-files" in f.message for f in fixes)
    assert fix_source(UNIT_TEST, Path("tests/test_trainer.py"), settings).source == UNIT_TEST


def test_lint_treats_test_files_like_any_file():
    settings = dataclasses.replace(ALL, test_files="lint")
    assert _codes("tests/test_trainer.py", settings) == _codes("example.py", ALL)
    fixed = fix_source(UNIT_TEST, Path("tests/test_trainer.py"), settings).source
    assert "num_workers=4" in fixed and "set_to_none=True" in fixed and "p.grad = None" in fixed


def test_the_policy_is_read_from_the_config_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\ntest-files = "no-fix"\n')
    assert load_settings([tmp_path]).test_files == "no-fix"
    assert load_settings([tmp_path / "x"]).test_files == "no-fix"
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    assert load_settings([tmp_path]).test_files == "skip"


@pytest.mark.parametrize("value", ['"ignore"', "true", '["skip"]'])
def test_a_bad_policy_is_an_error(tmp_path, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.pytorch-perflint]\ntest-files = {value}\n")
    with pytest.raises(ConfigError, match="test-files.*expected one of 'skip', 'no-fix', 'lint'"):
        load_settings([tmp_path])


def test_unknown_keys_stay_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\ntest-file = "skip"\n')
    with pytest.raises(ConfigError, match="unknown key 'test-file'.*did you mean 'test-files'"):
        load_settings([tmp_path])


# What detection and segmentation repositories call their evaluation scripts: a test's name,
# an argparse main and an evaluation loop, nothing pytest would collect.
EVAL_SCRIPT = textwrap.dedent(
    """
    import argparse

    import torch


    def test(model, loader):
        model.eval()
        for images, targets in loader:
            outputs = model(images.cuda())


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        args = parser.parse_args()
        test(build_model(args), build_loader(args))
    """
).lstrip()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (EVAL_SCRIPT, False),
        (UNIT_TEST, True),
        ("import pytest\n\ndef helper():\n    pass\n", True),
        ("from unittest import mock\n", True),
        ("def test_forward():\n    assert net(x).shape == (1, 2)\n", True),
        ("async def test_serve():\n    pass\n", True),
        ("class TestNet:\n    pass\n", True),
        ("class Tester:\n    pass\n", False),  # a class of the script, not a pytest class
        ('"""Run with: import pytest"""\nx = 1\n', False),  # prose, not an import
    ],
)
def test_a_file_named_like_a_test_is_one_only_by_its_content(source, expected):
    assert is_test_file(PurePath("tools/test_net.py"), source=source) is expected


def test_folders_and_conftest_stay_tests_whatever_the_content(tmp_path):
    assert is_test_file(tmp_path / "tests" / "test_net.py", str(tmp_path), EVAL_SCRIPT)
    assert is_test_file(tmp_path / "conftest.py", str(tmp_path), "x = 1\n")


def test_an_evaluation_script_named_like_a_test_is_linted():
    settings = Settings(select=("TPF203",))
    result = lint_source(EVAL_SCRIPT, Path("tools/test_net.py"), settings)
    assert not result.errors
    assert [d.code for d in result.diagnostics] == ["TPF203"]
    # The same code in a real test module stays quiet (test-files = "skip").
    assert lint_source("import pytest\n" + EVAL_SCRIPT, Path("tools/test_net.py"), settings).diagnostics == []
