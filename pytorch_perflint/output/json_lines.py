"""``json-lines``: one JSON object per finding per line (ruff's ``json-lines``).

The objects are those of ``json``; a stream of lines can be read while the run goes on and
concatenated across runs, which a single JSON list cannot.
"""

from __future__ import annotations

import json
from typing import Sequence, TextIO

from ..types import FileResult
from .common import entries
from .json import diagnostic_object


def write(results: Sequence[FileResult], stream: TextIO) -> None:
    for entry in entries(results):
        stream.write(json.dumps(diagnostic_object(entry.diagnostic), ensure_ascii=True, separators=(",", ":")) + "\n")
