"""``check --show-settings`` and ``check --show-files``: what a run would use, without
linting anything (ruff's two "fake subcommands")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Sequence

from .config import Settings, as_table


def _toml_value(value: Any) -> str:
    """A TOML literal: JSON's strings, numbers and arrays are TOML's; tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def settings_lines(settings: Settings, path: Path) -> List[str]:
    """The resolved settings for one file, as a ``[tool.pytorch-perflint]`` table one could
    paste into pyproject.toml, then what they mean for that file."""
    from .selection import for_file

    codes = for_file(path, settings).codes
    lines = [
        f"Resolved settings for: {path}",
        f"Settings path: {settings.config_path or 'none (the defaults)'}",
        f"Project root: {settings.project_root}",
        "",
        "[tool.pytorch-perflint]",
    ]
    lines.extend(f"{key} = {_toml_value(value)}" for key, value in as_table(settings).items())
    lines += [
        "",
        "# For this file:",
        f"# enabled rules = {_toml_value(sorted(codes))}",
        f"# ignore-noqa = {_toml_value(settings.ignore_noqa)} (flag only)",
    ]
    return lines


def files_lines(files: Sequence[Path]) -> List[str]:
    """Every file a run would lint, absolute and sorted (as ruff lists them)."""
    return sorted(str(path.resolve()) for path in files)
