"""Settings: one frozen dataclass, loaded from pyproject.toml and merged with the flags.

Where settings come from, in order of precedence: command-line flags, then the
``[tool.pytorch-perflint]`` table of the nearest ``pyproject.toml`` (or a standalone
``pytorch-perflint.toml`` / ``.pytorch-perflint.toml`` whose top level is that table), found
by walking up from the first path, then the defaults below. A key or value that is not
understood is an error (``ConfigError``, exit code 2), never silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from .testfiles import DEFAULT_POLICY as DEFAULT_TEST_FILES, POLICIES as TEST_FILE_POLICIES

# Every output format, in the order --help lists them (ruff's names). The settings own the
# list (they check `output-format`); `output` dispatches on it.
OUTPUT_FORMATS = ("full", "concise", "json", "json-lines", "junit", "github", "gitlab", "pylint", "sarif")

# The time limit per file, in seconds: far above what any real file takes (the torch
# package's largest file lints in a few seconds), low enough that a hang does not eat a CI job.
DEFAULT_FILE_TIMEOUT = 120.0
# The largest file analysed, in bytes (of its Python source): LibCST needs about 0.6 GB and
# 6 s per MB. The torch package's largest file (1.4 MB, 27,820 lines) is well below it.
DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024

# The newest stable torch release: the default target-torch-version.
LATEST_TORCH = (2, 13)
TABLE = "pytorch-perflint"
# The output format from the environment: above the config file, below --output-format
# (ruff's RUFF_OUTPUT_FORMAT).
OUTPUT_FORMAT_ENV = "PYTORCH_PERFLINT_OUTPUT_FORMAT"
# Standalone config files, checked before pyproject.toml in each folder (ruff's order).
STANDALONE_NAMES = (".pytorch-perflint.toml", "pytorch-perflint.toml")
# What marks a project's root folder (its index and its cache live there).
ROOT_MARKERS: Tuple[str, ...] = ("pyproject.toml", ".git", *STANDALONE_NAMES)


@dataclass(frozen=True)
class Settings:
    """Everything that decides what a run reports and fixes.

    Selectors are kept as written (codes, prefixes, names or ``ALL``); ``selection`` turns
    them into rule classes.
    """

    select: Optional[Tuple[str, ...]] = None  # None: the default set
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    # (glob pattern, selectors) pairs.
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Optional[Tuple[str, ...]] = None  # None: the default excludes
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    target_torch_version: Tuple[int, int] = LATEST_TORCH
    preview: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    fixable: Optional[Tuple[str, ...]] = None  # None: all
    unfixable: Tuple[str, ...] = ()
    output_format: Optional[str] = None
    dataloader_num_workers: int = 4
    # Whether code runs on an accelerator (RULES.md): "auto" decides per module from what
    # it and the project modules around it select; "always" suits libraries whose callers
    # choose the device; "never" turns accelerator-only rules off.
    accelerator: str = "auto"
    # What test files get: "skip", "no-fix" or "lint" (see testfiles.py).
    test_files: str = DEFAULT_TEST_FILES
    # Where the settings came from (the pyproject.toml), for messages and relative globs.
    project_root: Optional[str] = None
    extra: Tuple[Tuple[str, str], ...] = field(default=())
    # The config file that was read, if any (for messages).
    config_path: Optional[str] = None
    # Apply exclude/extend-exclude/.gitignore to paths named on the command line too
    # (for pre-commit, which passes every staged file explicitly).
    force_exclude: bool = False
    # Seconds one file may take before it is reported as not linted (0: no limit).
    file_timeout: float = DEFAULT_FILE_TIMEOUT
    # Bytes of Python source a file may have to be analysed (0: no limit); larger is TPF003.
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    # Report findings on lines with a `# noqa` comment too (--ignore-noqa; flag only).
    ignore_noqa: bool = False


class ConfigError(Exception):
    """A configuration problem the user must fix: reported as ``error: ...``, exit code 2."""


# --------------------------------------------------------------------------------------
# Value parsers: each takes the raw value and the place it came from (for the message).


def _fail(where: str, problem: str) -> ConfigError:
    return ConfigError(f"{where}: {problem}")


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, f"expected true or false, got {_show(value)}")
    return value


def _strings(value: Any, where: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _fail(where, f"expected a list of strings, got {_show(value)}")
    return tuple(item.strip() for item in value if item.strip())


def _selectors(value: Any, where: str) -> Tuple[str, ...]:
    selectors = _strings(value, where)
    _check_selectors(selectors, where)
    return selectors


def _check_selectors(selectors: Sequence[str], where: str) -> None:
    from . import registry  # imports the rules (and libcst): only when settings are loaded

    try:
        registry.validate(selectors)
    except registry.SelectorError as error:
        raise _fail(where, str(error)) from None


def _per_file_ignores(value: Any, where: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected a table of glob = [rule selectors], got {_show(value)}")
    pairs = []
    for pattern, selectors in value.items():
        pairs.append((pattern, _selectors(selectors, f"{where}.{_quote_key(pattern)}")))
    return tuple(pairs)


_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")


def parse_torch_version(value: Any, where: str) -> Tuple[int, int]:
    """``"2.1"`` -> ``(2, 1)``. Floats are refused: TOML's ``2.10`` is the number 2.1."""
    if isinstance(value, float):
        raise _fail(where, f"write the version as a string, e.g. \"{value}\" (a number loses trailing zeros: 2.10 == 2.1)")
    if not isinstance(value, str) or not _VERSION.match(value.strip()):
        raise _fail(where, f"expected a torch version such as \"2.1\" or \"1.13\", got {_show(value)}")
    match = _VERSION.match(value.strip())
    assert match is not None
    version = (int(match.group(1)), int(match.group(2)))
    if version < (1, 0) or version > (LATEST_TORCH[0] + 1, 99):
        raise _fail(where, f"{value!r} is not a torch release this tool knows (1.0 to {LATEST_TORCH[0]}.{LATEST_TORCH[1]})")
    return version


def _output_format(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in OUTPUT_FORMATS:
        raise _fail(where, f"expected one of {', '.join(OUTPUT_FORMATS)}, got {_show(value)}")
    return value


ACCELERATOR_MODES = ("auto", "always", "never")


def _accelerator(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in ACCELERATOR_MODES:
        raise _fail(where, f"expected one of {', '.join(ACCELERATOR_MODES)}, got {_show(value)}")
    return value


def _workers(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(where, f"expected a whole number of at least 1, got {_show(value)}")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise _fail(where, f"expected a number of seconds (0 for no limit), got {_show(value)}")
    return float(value)


def _size(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(where, f"expected a whole number of bytes (0 for no limit), got {_show(value)}")
    return value


def _test_files(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in TEST_FILE_POLICIES:
        raise _fail(where, f"expected one of {', '.join(repr(p) for p in TEST_FILE_POLICIES)}, got {_show(value)}")
    return value


# key in the file -> (Settings field, parser)
_KEYS: Dict[str, Tuple[str, Callable[[Any, str], Any]]] = {
    "select": ("select", _selectors),
    "extend-select": ("extend_select", _selectors),
    "ignore": ("ignore", _selectors),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "respect-gitignore": ("respect_gitignore", _bool),
    "force-exclude": ("force_exclude", _bool),
    "target-torch-version": ("target_torch_version", parse_torch_version),
    "preview": ("preview", _bool),
    "fix": ("fix", _bool),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "fixable": ("fixable", _selectors),
    "unfixable": ("unfixable", _selectors),
    "output-format": ("output_format", _output_format),
    "dataloader-num-workers": ("dataloader_num_workers", _workers),
    "file-timeout": ("file_timeout", _seconds),
    "max-file-size": ("max_file_size", _size),
    "accelerator": ("accelerator", _accelerator),
    "test-files": ("test_files", _test_files),
}
KNOWN_KEYS = tuple(_KEYS)


def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}
    return f"{kind.get(type(value), type(value).__name__)} ({value!r})"


def _quote_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'


# --------------------------------------------------------------------------------------
# Finding and reading the file.


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


def _load_toml(path: Path) -> Dict[str, Any]:
    tomllib = _toml()
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None


def _table_of(path: Path, data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The settings table of a parsed file: ``[tool.pytorch-perflint]`` in a pyproject.toml,
    the top level of a standalone file."""
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool")
    if isinstance(tool, dict) and TABLE not in tool:
        _misspelt_table(path, tool)
    if not isinstance(tool, dict) or TABLE not in tool:
        return None
    table = tool[TABLE]
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    return table


def _misspelt_table(path: Path, tool: Mapping[str, Any]) -> None:
    """A ``[tool.*]`` table that is ours misspelt (``pytorch_perflint``, ``perflint``,
    ``pytorch-perf-lint``) would be silently ignored: say which table is read instead."""
    import difflib

    for name in tool:
        squashed = re.sub(r"[^a-z]", "", name.lower())
        if squashed in ("pytorchperflint", "perflint", "torchperflint") or difflib.get_close_matches(name, [TABLE], cutoff=0.85):
            raise ConfigError(f"{path}: [tool.{name}] is not read: the settings table is [tool.{TABLE}] (rename it)")


def find_config(start: Path) -> Optional[Path]:
    """The nearest config file at or above ``start`` (a folder): a standalone file, or a
    ``pyproject.toml`` that has a ``[tool.pytorch-perflint]`` table."""
    start = Path(os.path.abspath(start))
    for folder in (start, *start.parents):
        for name in STANDALONE_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _table_of(candidate, _load_toml(candidate)) is not None:
            return candidate
    return None


def _start_folder(paths: Sequence[Union[str, Path]]) -> Path:
    if not paths or str(paths[0]) == "-":
        return Path.cwd()
    first = Path(os.path.abspath(paths[0]))
    return first if first.is_dir() else first.parent


def read_config(path: Path) -> Dict[str, Any]:
    """Settings field -> value from one config file, every key and value checked."""
    data = _load_toml(path)
    table = _table_of(path, data)
    if table is None:
        raise ConfigError(f"{path}: no [tool.{TABLE}] table")
    prefix = f"[tool.{TABLE}]" if path.name == "pyproject.toml" else ""
    return _parse_table(table, f"{path}: {prefix}{' ' if prefix else ''}", f"{path}: unknown key {{key!r}} in {prefix or 'the config'}")


def _parse_table(table: Mapping[str, Any], where: str, unknown: str) -> Dict[str, Any]:
    """Settings field -> value for a table of config keys; ``where`` prefixes the key in
    messages about a value, ``unknown`` (formatted with ``key``) starts the message about a
    key that does not exist."""
    values: Dict[str, Any] = {}
    for key, raw in table.items():
        if key not in _KEYS:
            import difflib  # only for a setting that is not known

            hint = difflib.get_close_matches(key.replace("_", "-"), KNOWN_KEYS, n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ConfigError(f"{unknown.format(key=key)}{suggestion}; known keys: {', '.join(KNOWN_KEYS)}")
        name, parse = _KEYS[key]
        values[name] = parse(raw, f"{where}{_quote_key(key)}")
    return values


# --------------------------------------------------------------------------------------
# --config: a config file, or inline `key = value` overrides (ruff's two meanings).

_CONFIG_TIP = "a --config value is either a path to a .toml config file or a TOML `key = value` pair, e.g. --config 'ignore = [\"TPF501\"]'"


def parse_config_arguments(values: Sequence[str]) -> Tuple[Optional[str], Dict[str, Any]]:
    """Split ``--config`` values into the config file (at most one) and the inline
    ``key = value`` overrides, as a table of raw TOML values (checked by ``load_settings``).

    A value that names an existing file is a path; one with ``=`` is TOML; anything else is a
    path that does not exist.
    """
    path: Optional[str] = None
    inline: Dict[str, Any] = {}
    for value in values:
        if os.path.isfile(value) or "=" not in value:
            if path is not None:
                raise ConfigError(f"--config {value}: only one config file can be given (the other was {path})")
            if not os.path.isfile(value):
                raise ConfigError(f"{value}: config file not found ({_CONFIG_TIP})")
            path = value
            continue
        try:
            table = _toml().loads(value)
        except _toml().TOMLDecodeError as error:
            raise ConfigError(f"--config {value!r}: not valid TOML ({error}); {_CONFIG_TIP}") from None
        for key, raw in table.items():
            if key == "tool" and isinstance(raw, dict) and TABLE in raw and isinstance(raw[TABLE], dict):
                inline.update(raw[TABLE])  # --config 'tool.pytorch-perflint.preview = true'
            else:
                inline[key] = raw
    return path, inline


# --------------------------------------------------------------------------------------
# Merging with the command line.

# Flags that hold selectors, checked like the file's values.
_SELECTOR_FIELDS = ("select", "extend_select", "ignore", "fixable", "unfixable")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def load_settings(
    paths: Sequence[Union[str, Path]] = (),
    config_file: Optional[Union[str, Path]] = None,
    overrides: Optional[Mapping[str, Any]] = None,
    inline: Optional[Mapping[str, Any]] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Settings:
    """Settings for a run on ``paths``: the config file merged with the flags.

    Layers, lowest first: the defaults, the config file, ``inline`` (``--config 'key =
    value'``: raw TOML values by config key, replacing the file's), the environment's
    ``PYTORCH_PERFLINT_OUTPUT_FORMAT`` (``environ``, default ``os.environ``), the flags.

    ``overrides`` maps Settings field names to values from the command line; ``None``
    values mean "not given". Selection layers as in ruff: a ``--select`` on the command line
    starts afresh (the file's ``extend-select`` and ``ignore`` no longer apply), otherwise
    the command line's ``--extend-select`` and ``--ignore`` add to the file's.
    """
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    fields = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown settings: {', '.join(unknown)}")  # a programming error

    if config_file is not None:
        path = Path(os.path.abspath(config_file))
        if not path.is_file():
            raise ConfigError(f"{config_file}: config file not found")
    else:
        path = find_config(_start_folder(paths))

    values: Dict[str, Any] = {}
    if path is not None:
        values = read_config(path)
        values["project_root"] = str(path.parent)
        values["config_path"] = str(path)
    else:
        values["project_root"] = os.getcwd()
    if inline:
        values.update(_parse_table(inline, "--config ", "--config: unknown key {key!r}"))
    env_format = (os.environ if environ is None else environ).get(OUTPUT_FORMAT_ENV, "").strip()
    if env_format:
        values["output_format"] = _output_format(env_format, OUTPUT_FORMAT_ENV)

    for name in _SELECTOR_FIELDS:
        if name in overrides:
            _check_selectors(overrides[name], _flag(name))
    if "target_torch_version" in overrides and not isinstance(overrides["target_torch_version"], tuple):
        overrides["target_torch_version"] = parse_torch_version(overrides["target_torch_version"], "--target-torch-version")
    if "output_format" in overrides:
        _output_format(overrides["output_format"], "--output-format")

    merged = dict(values)
    for name, value in overrides.items():
        if name in ("extend_select", "ignore") and "select" not in overrides:
            merged[name] = tuple(values.get(name, ())) + tuple(value)
        elif name == "extend_exclude":
            merged[name] = tuple(values.get(name, ())) + tuple(value)
        else:
            merged[name] = tuple(value) if isinstance(value, list) else value
    if "select" in overrides:
        merged["extend_select"] = tuple(overrides.get("extend_select", ()))
        merged["ignore"] = tuple(overrides.get("ignore", ()))
    return Settings(**merged)


def as_table(settings: Settings) -> Dict[str, Any]:
    """The settings as config keys and TOML-ready values (``--show-settings``); a key left
    at "not set" (None) is omitted."""
    table: Dict[str, Any] = {}
    for key, (name, _) in _KEYS.items():
        value = getattr(settings, name)
        if value is None:
            continue
        if name == "target_torch_version":
            value = f"{value[0]}.{value[1]}"
        elif name == "per_file_ignores":
            value = {pattern: list(selectors) for pattern, selectors in value}
        elif isinstance(value, tuple):
            value = list(value)
        table[key] = value
    return table


def project_root(settings: Settings, start: Path) -> Optional[Path]:
    """The root of the project that holds ``start`` (a file or folder): the config file's
    folder, else the nearest folder with a root marker; None without either."""
    if settings.config_path:
        return Path(settings.config_path).parent
    folder = Path(os.path.abspath(start))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        if any(os.path.lexists(candidate / marker) for marker in ROOT_MARKERS):
            return candidate
    return None
