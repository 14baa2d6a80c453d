"""Malformed notebooks are a TPF001 "invalid notebook" diagnostic, never an internal error.

Every shape the reader does not expect (a string where an object goes, a number in a source
list, cells that are not a list...) must come out as ``NotebookError`` with a message that
names where, and the run goes on with the other files.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from click.testing import CliRunner

from pytorch_perflint import notebook
from pytorch_perflint.cli import main
from pytorch_perflint.config import Settings
from pytorch_perflint.runner import Mode, process_bytes

from fix_rules import SlowCall

VALID = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {"tags": []},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["hi\n"]}],
            "source": ["import torch\n", "%matplotlib inline\n", "x = slow(1)\n", "model = torch.nn.DataParallel(net)"],
        },
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "y = slow(2)\n!ls"},
        {"cell_type": "raw", "metadata": {}, "source": "raw text"},
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.0"},
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}


def with_change(path: Tuple[Any, ...], value: Any) -> str:
    data = copy.deepcopy(VALID)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data, indent=1)


MALFORMED = [
    pytest.param(with_change(("metadata",), "x"), "metadata", id="metadata-a-string"),
    pytest.param(with_change(("metadata", "language_info"), "python"), "language_info", id="language-info-a-string"),
    pytest.param(with_change(("metadata", "language_info", "name"), 3), "language_info.name", id="language-name-a-number"),
    pytest.param(with_change(("cells", 1, "source", 1), 7), "cells[1].source[1]", id="source-list-holds-a-number"),
    pytest.param(with_change(("cells", 1, "source", 1), None), "cells[1].source[1]", id="source-list-holds-null"),
    pytest.param(with_change(("cells", 2, "source"), 42), "cells[2].source", id="source-a-number"),
    pytest.param(with_change(("cells", 2, "source"), {"a": 1}), "cells[2].source", id="source-an-object"),
    pytest.param(with_change(("cells",), {"0": {}}), "cells", id="cells-an-object"),
    pytest.param(with_change(("cells",), "abc"), "cells", id="cells-a-string"),
    pytest.param(with_change(("cells", 1), "import torch"), "cells[1]", id="cell-a-string"),
    pytest.param(with_change(("cells", 1), ["import torch"]), "cells[1]", id="cell-a-list"),
    pytest.param(with_change(("cells", 0), 5), "cells[0]", id="cell-a-number"),
    pytest.param(with_change(("cells", 1, "cell_type"), ["code"]), "cells[1].cell_type", id="cell-type-a-list"),
    pytest.param(json.dumps([VALID]), "not a JSON object", id="top-level-a-list"),
    pytest.param('"cells"', "not a JSON object", id="top-level-a-string"),
]


@pytest.mark.parametrize(("text", "where"), MALFORMED)
def test_malformed_notebooks_raise_notebook_error_naming_where(text, where):
    with pytest.raises(notebook.NotebookError, match="invalid notebook") as raised:
        notebook.load(text)
    assert where in str(raised.value)


@pytest.mark.parametrize(("text", "where"), MALFORMED)
def test_malformed_notebooks_are_tpf001_and_the_run_goes_on(tmp_path, monkeypatch, text, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ipynb").write_text(text)
    (tmp_path / "good.py").write_text("import torch\nmodel = torch.nn.DataParallel(net)\n")
    for extra in ([], ["--fix"]):
        result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "--output-format", "concise", *extra, "."])
        assert result.exit_code == 1, result.output
        assert "internal error" not in result.output
        assert "bad.ipynb:1:1: TPF001 cannot be parsed: invalid notebook" in result.stdout
        assert "good.py:2:9: TPF501" in result.stdout
    assert (tmp_path / "bad.ipynb").read_text() == text


def _corrupt(rng: random.Random, data: Any) -> Any:
    """The document with one randomly chosen value replaced, deleted or retyped."""
    data = copy.deepcopy(data)
    paths: List[Tuple[Any, ...]] = []

    def walk(value: Any, path: Tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + (index,))

    walk(data, ())
    path = rng.choice(paths)
    replacements = [None, True, 0, -1.5, "", "x", "%%bash", "\n", [], {}, [1, None], {"name": "python"}, ["a\n", 2]]
    if not path:
        return rng.choice(replacements)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if rng.random() < 0.25:
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(replacements)
    return data


def _text_corruptions(rng: random.Random, text: str) -> str:
    """Damage at the byte level: truncation, a dropped or doubled character."""
    at = rng.randrange(len(text))
    kind = rng.randrange(3)
    if kind == 0:
        return text[:at]
    if kind == 1:
        return text[:at] + text[at + 1 :]
    return text[:at] + text[at] + text[at:]


def test_fuzz_no_shape_corruption_escapes_the_reader():
    """Seeded random corruptions of a valid notebook: lint and fix never raise."""
    rng = random.Random(20240611)
    settings = Settings()
    for round_ in range(250):
        if round_ % 4 == 3:
            text = _text_corruptions(rng, json.dumps(VALID, indent=1))
        else:
            data = VALID
            for _ in range(rng.randint(1, 3)):
                data = _corrupt(rng, data)
            text = json.dumps(data, indent=rng.choice([None, 1, 2]))
        data_bytes = text.encode("utf-8")
        try:
            book = notebook.load(text)
        except notebook.NotebookError:
            book = None
        for mode in (Mode.CHECK, Mode.FIX, Mode.DIFF):
            processed = process_bytes(data_bytes, Path("nb.ipynb"), settings, mode, write=False, rules=[SlowCall])
            assert not any("internal error" in e for e in processed.result.errors), (text, processed.result.errors)
            if book is None:
                assert [d.code for d in processed.result.diagnostics] == ["TPF001"], text
