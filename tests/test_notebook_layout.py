"""A fixed notebook differs from the original only in the edited cells' ``source`` values.

Whatever the JSON layout (Jupyter's, compact, CRLF, ``\\u00e9`` and ``\\/`` escapes, another
indent or key order, a string source), the expected bytes are the same layout applied to the
notebook with the edited line changed: every other byte stays.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from click.testing import CliRunner

from pytorch_perflint import notebook, selection
from pytorch_perflint.config import Settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.runner import Mode, process_bytes

from fix_rules import SlowCall

DATA: Dict[str, Any] = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Caf\u00e9 \u2014 a/b\n", "text"]},
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {"tags": ["x/y"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["r\u00e9sum\u00e9 1/2\n"]}],
            "source": ["import torch\n", "%matplotlib inline\n", "path = '/data/caf\u00e9'\n", "x = slow(path)  # \u00e9/\n", "y = 2"],
        },
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["z = '\u00e9/'\n"]},
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.0"},
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}


def jupyter(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


LAYOUTS: Dict[str, Callable[[Any], str]] = {
    "jupyter": jupyter,
    "crlf": lambda d: jupyter(d).replace("\n", "\r\n"),
    "compact": lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False),
    "spaced-one-line": lambda d: json.dumps(d),
    "ascii-escapes": lambda d: json.dumps(d, indent=1) + "\n",
    "escaped-slashes": lambda d: jupyter(d).replace("/", "\\/"),
    "indent-4-sorted-keys": lambda d: json.dumps(d, indent=4, sort_keys=True, ensure_ascii=False),
    "tabs": lambda d: json.dumps(d, indent="\t", ensure_ascii=False) + "\n\n",
    "string-sources": lambda d: jupyter(_as_strings(d)),
    "string-sources-escaped": lambda d: json.dumps(_as_strings(d), indent=2).replace("/", "\\/"),
}


def _as_strings(data: Any) -> Any:
    data = copy.deepcopy(data)
    for cell in data["cells"]:
        cell["source"] = "".join(cell["source"])
    return data


def with_source(cell: int, lines) -> Dict[str, Any]:
    data = copy.deepcopy(DATA)
    data["cells"][cell]["source"] = lines
    return data


def fixed(text: str) -> str:
    book = notebook.load(text)
    outcome = fix_source(book.source, Path("nb.ipynb"), Settings(), rules=[SlowCall])
    assert outcome.fixed == 1
    return notebook.dump(book, outcome.source)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_nothing_changed_gives_the_same_bytes(layout):
    text = LAYOUTS[layout](DATA)
    book = notebook.load(text)
    assert notebook.dump(book, book.source) == text


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_fix_changes_only_the_edited_line_of_the_edited_cell(layout):
    render = LAYOUTS[layout]
    source = list(DATA["cells"][1]["source"])
    source[3] = "x = fast(path)  # \u00e9/\n"
    assert fixed(render(DATA)) == render(with_source(1, source))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_fix_that_adds_a_line_keeps_the_list_layout(layout):
    """An added line (an import above the first cell) takes the layout of its neighbours."""
    render = LAYOUTS[layout]
    book = notebook.load(render(DATA))
    new_source = "import os/\u00e9\n" + book.source.replace("slow(path)", "fast(path)")
    source = ["import os/\u00e9\n", *DATA["cells"][1]["source"]]
    source[4] = "x = fast(path)  # \u00e9/\n"
    assert notebook.dump(book, new_source) == render(with_source(1, source))


@pytest.mark.parametrize("layout", ["jupyter", "crlf", "compact", "spaced-one-line", "indent-4-sorted-keys", "tabs"])
@pytest.mark.parametrize("before", [[], ["a = slow(1)"]], ids=["empty", "one-line"])
def test_a_cell_with_no_or_one_line_grows_in_the_layout_of_the_document(layout, before):
    render = LAYOUTS[layout]
    data = copy.deepcopy(DATA)
    data["cells"].insert(1, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": before})
    book = notebook.load(render(data))
    new_source = "import os\nimport sys\n" + book.source.replace("slow(1)", "fast(1)")
    data["cells"][1]["source"] = ["import os\n", "import sys\n", *(["a = fast(1)"] if before else [])]
    assert notebook.dump(book, new_source) == render(data)


def test_a_fixed_crlf_notebook_with_a_bom_keeps_both_through_the_runner(tmp_path):
    text = LAYOUTS["crlf"](DATA)
    path = tmp_path / "nb.ipynb"
    data = b"\xef\xbb\xbf" + text.encode("utf-8")
    path.write_bytes(data)
    processed = process_bytes(data, path, Settings(), Mode.FIX, rules=[SlowCall])
    assert processed.result.fixed == 1 and not processed.result.fix_errors
    source = list(DATA["cells"][1]["source"])
    source[3] = "x = fast(path)  # \u00e9/\n"
    expected = b"\xef\xbb\xbf" + LAYOUTS["crlf"](with_source(1, source)).encode("utf-8")
    assert path.read_bytes() == expected


def test_source_lines_with_crlf_inside_the_strings_survive_a_fix():
    data = with_source(1, ["import torch\r\n", "x = slow(1)\r\n", "y = 2\r\n"])
    text = jupyter(data)
    assert fixed(text) == jupyter(with_source(1, ["import torch\r\n", "x = fast(1)\r\n", "y = 2\r\n"]))


def test_duplicate_keys_edit_the_value_json_reads():
    """JSON readers take the last of duplicate keys; so does the edit."""
    text = jupyter(DATA).replace('"source": [\n    "import torch\\n"', '"source": ["x = slow(0)\\n"],\n   "source": [\n    "import torch\\n"', 1)
    assert json.loads(text)["cells"][1]["source"][0] == "import torch\n"
    out = fixed(text)
    assert '"source": ["x = slow(0)\\n"]' in out and "x = fast(path)" in out


def test_a_cell_without_a_source_key_that_must_change_is_not_written():
    data = copy.deepcopy(DATA)
    del data["cells"][1]["source"]
    data["cells"][2]["source"] = ["z = slow(1)\n"]
    book = notebook.load(jupyter(data))
    with pytest.raises(notebook.NotebookError, match="no source"):
        notebook.dump(book, "import os\n" + book.source.replace("slow(1)", "fast(1)"))


def test_stdin_fix_of_a_notebook_prints_the_fixed_notebook(tmp_path, monkeypatch):
    """Issue 15: `check - --stdin-filename t.ipynb --fix` printed the unfixed notebook."""
    from pytorch_perflint import registry
    from pytorch_perflint.cli import main

    known = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: tuple(sorted((*known, SlowCall), key=lambda r: r.code)))
    selection.enabled.cache_clear()
    monkeypatch.chdir(tmp_path)
    text = LAYOUTS["crlf"](DATA)
    try:
        result = CliRunner().invoke(
            main, ["check", "-", "--stdin-filename", "t.ipynb", "--fix", "--output-format", "concise"], input=text.encode()
        )
    finally:
        selection.enabled.cache_clear()
    source = list(DATA["cells"][1]["source"])
    source[3] = "x = fast(path)  # \u00e9/\n"
    assert result.stdout_bytes == LAYOUTS["crlf"](with_source(1, source)).encode()
    assert "1 fixed" in result.stderr
    assert not (tmp_path / "t.ipynb").exists()


def test_a_lone_surrogate_escape_in_a_cell_is_tpf001_and_the_notebook_is_left_alone(tmp_path):
    """Python cannot compile a lone surrogate (nor can LibCST parse it): no internal error."""
    text = jupyter(with_source(1, ["x = slow('SURROGATE')\n"])).replace("SURROGATE", "\\ud800")
    assert notebook.load(text).source.count("\ud800") == 1
    path = tmp_path / "nb.ipynb"
    path.write_text(text)
    processed = process_bytes(path.read_bytes(), path, Settings(), Mode.FIX, rules=[SlowCall])
    assert [d.code for d in processed.result.diagnostics] == ["TPF001"]
    assert processed.result.fixed == 0 and not processed.result.errors
    assert path.read_text() == text
