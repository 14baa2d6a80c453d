"""``check --show-settings`` and ``check --show-files``: what a run would use, without
linting anything (ruff's two "fake subcommands")."""

from __future__ import annotations

import json
import os
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
    accelerator = _accelerator_line(settings, path)
    if accelerator:
        lines.append(accelerator)
    return lines


def _accelerator_line(settings: Settings, path: Path) -> str:
    """Whether the file runs on an accelerator (RULES.md) and why, for a Python file."""
    from .project.index import read_source
    from .project.linted import index_for, runs_on_accelerator

    if path.suffix != ".py" or not path.is_file():
        return ""
    source, _ = read_source(str(path))
    if source is None:
        return ""
    project = index_for(path, settings)
    answer = runs_on_accelerator(path, source, None, settings, project)
    if settings.accelerator != "auto":
        why = f"accelerator = {_toml_value(settings.accelerator)}"
    elif project is None:
        why = "no project root: this file's own code decides"
    else:
        found = project.accelerator_evidence(path)
        if found is None:
            why = "no entry script that imports it, nor anything they import, selects one"
        else:
            where = os.path.relpath(found[0], project.root)
            why = f"{where}:{found[1].line} selects one: {found[1].what}"
    return f"# runs on an accelerator = {_toml_value(answer)} ({why})"


def files_lines(files: Sequence[Path]) -> List[str]:
    """Every file a run would lint, absolute and sorted (as ruff lists them)."""
    return sorted(str(path.resolve()) for path in files)
