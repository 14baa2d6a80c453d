"""A flake8 plugin (entry point ``TPF``) for teams that already run flake8.

flake8 hands over the file's lines; the plugin lints them with the default settings (or the
project's pyproject.toml settings when they load) and yields flake8's tuples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Tuple

from . import __version__


class Flake8Plugin:
    """flake8 calls ``run()`` once per file."""

    name = "pytorch-perflint"
    version = __version__

    def __init__(self, tree: Any = None, filename: str = "stdin", lines: Optional[Sequence[str]] = None) -> None:
        self.filename = filename
        self.lines = lines

    def _source(self) -> str:
        if self.lines is not None:
            return "".join(self.lines)
        return Path(self.filename).read_text(encoding="utf-8")

    def _settings(self):
        from .config import Settings

        try:
            from .config import load_settings  # type: ignore[attr-defined]

            return load_settings([Path(self.filename)], None, {})
        except Exception:  # noqa: BLE001 - flake8 must still lint with the defaults
            return Settings()

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        from .engine import lint_source
        from .project.linted import index_for

        path, settings = Path(self.filename), self._settings()
        project = index_for(path, settings) if self.filename != "stdin" else None
        result = lint_source(self._source(), path, settings, with_edits=False, keep_module=False, project=project)
        for diagnostic in result.diagnostics:
            yield (
                diagnostic.location.row,
                diagnostic.location.column - 1,
                f"{diagnostic.code} {diagnostic.message}",
                type(self),
            )
