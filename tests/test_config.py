"""Loading settings: discovery of the config file, checking every key, merging the flags."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytorch_perflint.config import LATEST_TORCH, ConfigError, Settings, find_config, load_settings


def _pyproject(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(body)
    return path


def test_no_config_gives_defaults_rooted_at_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = load_settings(["."])
    assert settings.select is None and settings.target_torch_version == LATEST_TORCH
    assert settings.project_root == str(tmp_path) and settings.config_path is None


def test_config_is_found_by_walking_up_from_the_first_path(tmp_path):
    config = _pyproject(
        tmp_path,
        '[tool.pytorch-perflint]\nselect = ["TPF5"]\nignore = ["TPF001"]\ntarget-torch-version = "1.13"\n'
        'preview = true\nper-file-ignores = { "tests/*.py" = ["TPF501"] }\ndataloader-num-workers = 8\n'
        'extend-exclude = ["generated"]\noutput-format = "json"\n',
    )
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    (nested / "m.py").write_text("")
    for start in (nested, nested / "m.py", nested / "not-yet-there.py"):
        settings = load_settings([str(start)])
        assert settings.config_path == str(config)
        assert settings.project_root == str(tmp_path)
        assert settings.select == ("TPF5",) and settings.ignore == ("TPF001",)
        assert settings.target_torch_version == (1, 13) and settings.preview is True
        assert settings.per_file_ignores == (("tests/*.py", ("TPF501",)),)
        assert settings.dataloader_num_workers == 8 and settings.extend_exclude == ("generated",)
        assert settings.output_format == "json"


def test_pyproject_without_the_table_is_passed_over(tmp_path):
    _pyproject(tmp_path, '[tool.pytorch-perflint]\nignore = ["TPF501"]\n')
    inner = _pyproject(tmp_path / "inner", '[project]\nname = "x"\n')
    assert find_config(inner.parent) == tmp_path / "pyproject.toml"
    assert load_settings([str(inner.parent)]).ignore == ("TPF501",)


def test_standalone_file_wins_over_pyproject_in_the_same_folder(tmp_path):
    _pyproject(tmp_path, '[tool.pytorch-perflint]\nignore = ["TPF501"]\n')
    (tmp_path / "pytorch-perflint.toml").write_text('ignore = ["TPF001"]\n')
    assert load_settings([str(tmp_path)]).ignore == ("TPF001",)


def test_explicit_config_file_pyproject_or_standalone(tmp_path):
    other = tmp_path / "elsewhere"
    config = _pyproject(other, '[tool.pytorch-perflint]\npreview = true\n')
    settings = load_settings([str(tmp_path)], config_file=config)
    assert settings.preview is True and settings.project_root == str(other)
    standalone = tmp_path / "custom.toml"
    standalone.write_text('unsafe-fixes = true\nexclude = ["a", "b"]\n')
    settings = load_settings([str(tmp_path)], config_file=standalone)
    assert settings.unsafe_fixes is True and settings.exclude == ("a", "b")


def test_explicit_pyproject_without_the_table_is_an_error(tmp_path):
    config = _pyproject(tmp_path, '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"no \[tool.pytorch-perflint\] table"):
        load_settings([], config_file=config)


def test_missing_explicit_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings([], config_file=tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('selct = ["TPF5"]', r"unknown key 'selct'.*did you mean 'select'"),
        ('extend_select = ["TPF5"]', r"unknown key 'extend_select'.*did you mean 'extend-select'"),
        ('select = "TPF5"', r"select: expected a list of strings, got a string"),
        ('select = ["TPF999"]', r"select: unknown rule selector 'TPF999'"),
        ('ignore = ["no-such-rule"]', r"ignore: unknown rule selector 'no-such-rule'"),
        ('per-file-ignores = { "a.py" = ["XYZ"] }', r'per-file-ignores."a.py": unknown rule selector'),
        ("per-file-ignores = [1]", r"per-file-ignores: expected a table"),
        ("preview = 1", r"preview: expected true or false, got an integer"),
        ('respect-gitignore = "yes"', r"respect-gitignore: expected true or false"),
        ("target-torch-version = 2.1", r"target-torch-version: write the version as a string"),
        ('target-torch-version = "two"', r"target-torch-version: expected a torch version"),
        ('target-torch-version = "0.4"', r"is not a torch release"),
        ('output-format = "xml"', r"output-format: expected one of full, concise, json, json-lines, junit, github, gitlab, pylint, sarif"),
        ("dataloader-num-workers = 0", r"dataloader-num-workers: expected a whole number of at least 1"),
        ("dataloader-num-workers = true", r"dataloader-num-workers: expected a whole number"),
        ('fixable = ["TPF5", 3]', r"fixable: expected a list of strings"),
        ("file-timeout = -1", r"file-timeout: expected a number of seconds \(0 for no limit\), got an integer"),
        ('file-timeout = "60"', r"file-timeout: expected a number of seconds"),
        ("select = [", r"invalid TOML"),
    ],
)
def test_bad_config_is_an_error_naming_file_and_key(tmp_path, body, message):
    config = _pyproject(tmp_path, f"[tool.pytorch-perflint]\n{body}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings([str(tmp_path)])
    assert str(caught.value).startswith(str(config))


def test_table_that_is_not_a_table_is_an_error(tmp_path):
    _pyproject(tmp_path, '[tool]\npytorch-perflint = "on"\n')
    with pytest.raises(ConfigError, match="must be a table"):
        load_settings([str(tmp_path)])


def test_flags_win_over_the_file(tmp_path):
    _pyproject(
        tmp_path,
        '[tool.pytorch-perflint]\ntarget-torch-version = "1.13"\npreview = true\noutput-format = "json"\n'
        'extend-select = ["TPF002"]\nignore = ["TPF001"]\nextend-exclude = ["gen"]\n',
    )
    settings = load_settings(
        [str(tmp_path)],
        overrides={"target_torch_version": "2.1", "preview": False, "output_format": "concise", "extend_exclude": ("x",)},
    )
    assert settings.target_torch_version == (2, 1) and settings.preview is False
    assert settings.output_format == "concise"
    assert settings.extend_exclude == ("gen", "x")
    # Without --select, --extend-select/--ignore add to the file's.
    settings = load_settings([str(tmp_path)], overrides={"ignore": ("TPF501",), "extend_select": ("TPF5",)})
    assert settings.ignore == ("TPF001", "TPF501") and settings.extend_select == ("TPF002", "TPF5")
    # --select starts afresh: the file's ignore and extend-select no longer apply.
    settings = load_settings([str(tmp_path)], overrides={"select": ("TPF001",)})
    assert settings.select == ("TPF001",) and settings.ignore == () and settings.extend_select == ()


def test_none_overrides_mean_not_given(tmp_path):
    _pyproject(tmp_path, "[tool.pytorch-perflint]\npreview = true\n")
    assert load_settings([str(tmp_path)], overrides={"preview": None, "select": None}).preview is True


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"select": ("TPF999",)}, r"^--select: unknown rule selector 'TPF999'"),
        ({"unfixable": ("bogus",)}, r"^--unfixable: unknown rule selector 'bogus'"),
        ({"target_torch_version": "2.x"}, r"^--target-torch-version: expected a torch version"),
    ],
)
def test_bad_flags_are_errors_naming_the_flag(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_settings([str(tmp_path)], overrides=overrides)


def test_settings_stay_hashable_for_the_engine_cache(tmp_path):
    _pyproject(tmp_path, '[tool.pytorch-perflint]\nper-file-ignores = { "a/*.py" = ["TPF501"] }\nselect = ["ALL"]\n')
    settings = load_settings([str(tmp_path)], overrides={"ignore": ["TPF002"]})
    assert isinstance(hash(settings), int) and isinstance(settings, Settings)


def test_file_timeout_from_the_file_and_the_flag(tmp_path):
    assert load_settings([str(tmp_path)]).file_timeout == 120.0
    _pyproject(tmp_path, "[tool.pytorch-perflint]\nfile-timeout = 7.5\n")
    assert load_settings([str(tmp_path)]).file_timeout == 7.5
    assert load_settings([str(tmp_path)], overrides={"file_timeout": 0.0}).file_timeout == 0.0


@pytest.mark.parametrize("name", ["pytorch_perflint", "perflint", "pytorch-perf-lint", "PyTorch-PerfLint", "pytorch-perflnt"])
def test_a_misspelt_table_is_an_error_naming_the_right_one(tmp_path, name):
    """Issue 21 item 14: `[tool.pytorch_perflint]` was silently ignored."""
    _pyproject(tmp_path, f'[tool.{name}]\nselect = ["ALL"]\n')
    with pytest.raises(ConfigError, match=rf"\[tool\.{re.escape(name)}\] is not read: the settings table is \[tool\.pytorch-perflint\]"):
        load_settings([tmp_path])


def test_other_tools_tables_are_not_taken_for_ours(tmp_path):
    _pyproject(tmp_path, "[tool.ruff]\nline-length = 100\n[tool.pylint]\n[tool.pyflint]\n[tool.pytorch-perflint-extra]\n")
    assert load_settings([tmp_path]).config_path is None
