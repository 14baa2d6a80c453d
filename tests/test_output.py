"""The output formats: exact shapes of full, concise, json, github and sarif."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from pytorch_perflint import __version__, registry
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.output import FORMATS, emit, format_errors
from pytorch_perflint.output.github import escape_data, escape_property, format_command
from pytorch_perflint.output.summary import summary_lines
from pytorch_perflint.types import (
    Applicability,
    Diagnostic,
    Edit,
    FileResult,
    Fix,
    Location,
    RunSummary,
    rule_url,
)

DATA = Path(__file__).parent / "data"
ANSI = re.compile(r"\x1b\[")
CONCISE = re.compile(
    r"^(?P<path>[^:\s][^:]*):(?P<row>[1-9]\d*):(?P<col>[1-9]\d*): (?P<code>TPF\d{3}) (?P<message>\S.*)$"
)
DP_SOURCE = "import torch\nmodel = torch.nn.DataParallel(model)\n"
LOADER_SOURCE = "import torch\nloader = torch.utils.data.DataLoader(\n    ds,\n    batch_size=8)\nx = 1\n"


def _real(root: Path) -> FileResult:
    """A real TPF501 finding from the engine."""
    path = root / "train.py"
    lint = lint_source(DP_SOURCE, path, Settings())
    assert [d.code for d in lint.diagnostics] == ["TPF501"]
    return FileResult(path, tuple(lint.diagnostics), source=DP_SOURCE)


def _loader(root: Path, applicability: Applicability = Applicability.SAFE) -> FileResult:
    """A hand-built multi-line finding with a fix."""
    path = root / "pkg" / "data.py"
    diagnostic = Diagnostic(
        code="TPF102",
        name="dataloader-no-pin-memory",
        message="DataLoader without `pin_memory=True` in a module that uses CUDA",
        path=path,
        location=Location(2, 10),
        end_location=Location(4, 18),
        fix=Fix(applicability, "Add `pin_memory=True`", (Edit(", pin_memory=True", Location(4, 17), Location(4, 17)),)),
        noqa_row=2,
    )
    return FileResult(path, (diagnostic,), source=LOADER_SOURCE)


def _emit(results, fmt, *, summary=None, **options) -> str:
    stream = io.StringIO()
    emit(results, fmt, stream, summary=summary or RunSummary(), **options)
    return stream.getvalue()


def _summary(results, **counts) -> RunSummary:
    remaining = sum(len(r.diagnostics) for r in results)
    return RunSummary(files_checked=len(results), remaining=remaining, **counts)


# -- concise ------------------------------------------------------------------------------


def test_concise_lines_are_path_line_col_code_message(tmp_path):
    results = [_real(tmp_path), _loader(tmp_path)]
    out = _emit(results, "concise", summary=_summary(results, fixable_safe=1), root=tmp_path)
    lines = out.splitlines()
    found = [CONCISE.match(line) for line in lines[:2]]
    assert all(found), lines
    assert [(m["path"], m["row"], m["col"], m["code"]) for m in found] == [
        (str(Path("pkg/data.py")), "2", "10", "TPF102"),
        ("train.py", "2", "9", "TPF501"),  # `torch.nn...` starts at the 9th character
    ]
    assert "[*]" not in lines[0]
    assert found[1]["message"] == registry.rule_by_code("TPF501").message
    assert lines[2:] == ["Found 2 errors.", "[*] 1 fixable with the `--fix` option."]


def test_concise_clean_run_says_all_checks_passed(tmp_path):
    out = _emit([FileResult(tmp_path / "a.py")], "concise", summary=RunSummary(files_checked=1))
    assert out == "All checks passed!\n"


def test_paths_outside_root_keep_the_given_path(tmp_path):
    result = _real(tmp_path / "inner")
    out = _emit([result], "concise", root=tmp_path / "elsewhere")
    assert out.startswith(f"{result.path}:2:9: TPF501 ")


def test_notebook_cells_are_named_in_human_formats(tmp_path):
    d = Diagnostic("TPF501", "data-parallel", "msg", tmp_path / "nb.ipynb", Location(3, 5), Location(3, 9), cell=2)
    out = _emit([FileResult(d.path, (d,), source='{"cells": []}')], "full", root=tmp_path, color=False)
    assert out.splitlines()[0] == "nb.ipynb:cell 2:3:5: TPF501 msg"
    assert " | " not in out  # no frame: the source is the notebook's JSON, not the cell
    concise = _emit([FileResult(d.path, (d,))], "concise", root=tmp_path)
    assert concise.splitlines()[0] == "nb.ipynb:cell 2:3:5: TPF501 msg"


# -- json ---------------------------------------------------------------------------------

JSON_FIELDS = {"cell", "code", "end_location", "filename", "fix", "location", "message", "name", "noqa_row", "url"}


def test_json_has_ruffs_fields_and_types(tmp_path):
    results = [_real(tmp_path), _loader(tmp_path)]
    data = json.loads(_emit(results, "json", summary=_summary(results)))
    assert isinstance(data, list) and len(data) == 2
    for item in data:
        assert set(item) == JSON_FIELDS
        assert item["cell"] is None
        assert isinstance(item["code"], str) and isinstance(item["name"], str)
        assert Path(item["filename"]).is_absolute()
        for key in ("location", "end_location"):
            assert set(item[key]) == {"column", "row"}
            assert all(isinstance(v, int) and v >= 1 for v in item[key].values())
        assert item["url"] == rule_url(item["code"])
    loader, dp = data
    assert dp["code"] == "TPF501" and dp["name"] == "data-parallel"
    assert dp["location"] == {"column": 9, "row": 2}
    assert dp["end_location"] == {"column": 37, "row": 2}
    assert dp["filename"] == str(tmp_path / "train.py")
    assert dp["noqa_row"] == 2 and dp["fix"] is None
    assert loader["fix"] == {
        "applicability": "safe",
        "edits": [
            {
                "content": ", pin_memory=True",
                "end_location": {"column": 17, "row": 4},
                "location": {"column": 17, "row": 4},
            }
        ],
        "message": "Add `pin_memory=True`",
    }


def test_json_is_an_empty_list_when_clean(tmp_path):
    out = _emit([FileResult(tmp_path / "a.py")], "json", summary=RunSummary(files_checked=1))
    assert json.loads(out) == []
    assert "passed" not in out


def test_json_statistics(tmp_path):
    results = [_real(tmp_path), _real(tmp_path / "b"), _loader(tmp_path)]
    data = json.loads(_emit(results, "json", statistics=True))
    assert data == [
        {"code": "TPF501", "name": "data-parallel", "count": 2, "fixable_count": 0},
        {"code": "TPF102", "name": "dataloader-no-pin-memory", "count": 1, "fixable_count": 1},
    ]


def test_machine_formats_do_not_import_rich():
    script = (
        "import io, sys\n"
        "from pathlib import Path\n"
        "from pytorch_perflint.output import emit\n"
        "from pytorch_perflint.types import *\n"
        "d = Diagnostic('TPF501', 'data-parallel', 'm', Path('a.py'), Location(1, 1), Location(1, 2))\n"
        "r = [FileResult(Path('a.py'), (d,), source='x\\n')]\n"
        "for fmt in ('concise', 'json', 'json-lines', 'junit', 'github', 'gitlab', 'pylint', 'sarif'):\n"
        "    emit(r, fmt, io.StringIO(), summary=RunSummary(remaining=1))\n"
        "emit(r, 'concise', io.StringIO(), summary=RunSummary(remaining=1), statistics=True)\n"
        "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rich'))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


# -- github -------------------------------------------------------------------------------


def test_github_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_data("a:b,c") == "a:b,c"
    assert escape_property("dir,x/a:b%.py\n") == "dir%2Cx/a%3Ab%25.py%0A"


def test_github_commands(tmp_path):
    results = [_real(tmp_path)]
    out = _emit(results, "github", summary=_summary(results), root=tmp_path)
    assert out == (
        "::warning title=pytorch-perflint (TPF501),file=train.py,line=2,col=9,endLine=2,endColumn=37::"
        f"TPF501 {registry.rule_by_code('TPF501').message}\n"
    )


def test_github_escapes_paths_and_messages(tmp_path):
    path = tmp_path / "we,ird:dir" / "a.py"
    d = Diagnostic("TPF001", "syntax-error", "SyntaxError: 50% of\nit", path, Location(3, 1), Location(3, 1))
    line = format_command(d, tmp_path)
    assert line == (
        "::error title=pytorch-perflint (TPF001),file=we%2Cird%3Adir/a.py,line=3,col=1,endLine=3,endColumn=1::"
        "TPF001 SyntaxError: 50%25 of%0Ait"
    )
    assert "\n" not in line


def test_github_notebook_points_at_the_file(tmp_path):
    d = Diagnostic("TPF501", "data-parallel", "msg", tmp_path / "nb.ipynb", Location(3, 5), Location(3, 9), cell=2)
    assert format_command(d, tmp_path) == (
        "::warning title=pytorch-perflint (TPF501),file=nb.ipynb,line=1,col=1::TPF501 msg (cell 2, line 3, column 5)"
    )


# -- sarif --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _sarif(results, root, **counts):
    return json.loads(_emit(results, "sarif", summary=_summary(results, **counts), root=root))


def _assert_valid(validator, log):
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_sarif_validates_against_the_official_schema(tmp_path, sarif_validator):
    results = [_real(tmp_path), _loader(tmp_path), _loader(tmp_path / "u", Applicability.UNSAFE)]
    syntax = lint_source("def f(:\n    pass\n", tmp_path / "bad.py", Settings())
    results.append(FileResult(tmp_path / "bad.py", tuple(syntax.diagnostics), errors=("bad.py: internal error",)))
    log = _sarif(results, tmp_path)
    _assert_valid(sarif_validator, log)

    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pytorch-perflint" and driver["version"] == __version__
    assert urlparse(driver["informationUri"]).scheme == "https"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert run["invocations"][0]["executionSuccessful"] is False

    rules = driver["rules"]
    expected = {rule.code for rule in registry.all_rules()} | set(registry.BUILTIN_CODES)
    assert expected <= {r["id"] for r in rules}
    for rule in rules:
        assert rule["helpUri"] == rule_url(rule["id"])
        assert rule["shortDescription"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] == ("error" if rule["id"] == "TPF001" else "warning")
        assert "performance" in rule["properties"]["tags"]
    dp = next(r for r in rules if r["id"] == "TPF501")
    assert dp["name"] == "data-parallel"
    assert dp["fullDescription"]["text"] == registry.rule_by_code("TPF501").docs()
    assert dp["properties"]["fix-applicability"] == "display-only"

    by_rule = {}
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert sorted(by_rule) == ["TPF001", "TPF102", "TPF501"]
    assert by_rule["TPF001"][0]["level"] == "error"

    (dp_result,) = by_rule["TPF501"]
    assert dp_result["level"] == "warning"
    assert dp_result["message"]["text"] == registry.rule_by_code("TPF501").message
    assert "fixes" not in dp_result
    location = dp_result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 9, "endLine": 2, "endColumn": 37}

    loader = by_rule["TPF102"][0]
    assert loader["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/data.py"
    (fix,) = loader["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "pkg/data.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 4, "startColumn": 17, "endLine": 4, "endColumn": 17},
            "insertedContent": {"text": ", pin_memory=True"},
        }
    ]
    assert fix["description"]["text"] == "Add `pin_memory=True`"
    assert {r["fixes"][0]["properties"]["applicability"] for r in by_rule["TPF102"]} == {"safe", "unsafe"}
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes == [{"level": "error", "message": {"text": "bad.py: internal error"}}]


def test_sarif_rule_descriptions_are_sentences_not_message_templates(tmp_path):
    """A rule's message is a template filled per finding (`{value}`, `{what}`): code
    scanning shows shortDescription as the rule's title, so it is the summary `rules` prints."""
    from pytorch_perflint.rules_list import brief, rule_infos

    rules = _sarif([_real(tmp_path)], tmp_path)["runs"][0]["tool"]["driver"]["rules"]
    briefs = {info["code"]: brief(info["summary"]) for info in rule_infos()}
    for rule in rules:
        text = rule["shortDescription"]["text"]
        assert not re.search(r"\{\w*\}", text), (rule["id"], text)
        assert text == briefs[rule["id"]]
    loss = next(r for r in rules if r["id"] == "TPF205")["shortDescription"]["text"]
    assert loss.startswith("Flags, inside a training loop, a loss tensor accumulated")


def test_sarif_clean_run_is_valid(tmp_path, sarif_validator):
    log = _sarif([FileResult(tmp_path / "a.py")], tmp_path)
    _assert_valid(sarif_validator, log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]


def test_sarif_paths_outside_root_are_absolute_uris(tmp_path, sarif_validator):
    result = _real(tmp_path / "out side")
    log = _sarif([result], tmp_path / "root")
    _assert_valid(sarif_validator, log)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": result.path.as_uri()}
    assert "%20" in location["uri"]


def test_sarif_uris_are_percent_encoded_relative_references(tmp_path, sarif_validator):
    d = Diagnostic("TPF501", "data-parallel", "m", tmp_path / "my dir" / "a#1.py", Location(1, 1), Location(1, 2))
    log = _sarif([FileResult(d.path, (d,))], tmp_path)
    _assert_valid(sarif_validator, log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "my%20dir/a%231.py"
    parsed = urlparse(uri)
    assert not parsed.scheme and not parsed.fragment


def test_sarif_notebook_results_point_at_the_file(tmp_path, sarif_validator):
    fix = Fix(Applicability.SAFE, "f", (Edit("x", Location(3, 5), Location(3, 9)),))
    d = Diagnostic("TPF501", "data-parallel", "m", tmp_path / "nb.ipynb", Location(3, 5), Location(3, 9), fix, cell=2)
    log = _sarif([FileResult(d.path, (d,))], tmp_path)
    _assert_valid(sarif_validator, log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert result["properties"] == {"cell": 2, "cellLine": 3, "cellColumn": 5}
    assert "fixes" not in result  # edits are relative to the cell, not the file


# -- full ---------------------------------------------------------------------------------


def test_full_shows_header_frame_rule_and_summary(tmp_path):
    results = [_real(tmp_path)]
    out = _emit(results, "full", summary=_summary(results), root=tmp_path, color=False)
    message = registry.rule_by_code("TPF501").message
    assert not ANSI.search(out)
    assert out == (
        f"train.py:2:9: TPF501 {message}\n"
        "  |\n"
        "1 | import torch\n"
        "2 | model = torch.nn.DataParallel(model)\n"
        "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ TPF501 data-parallel\n"
        "  |\n"
        "\n"
        "Found 1 error.\n"
    )


def test_full_multiline_span_fix_marker_and_help(tmp_path):
    results = [_loader(tmp_path)]
    out = _emit(results, "full", summary=_summary(results, fixable_safe=1), root=tmp_path, color=False)
    path = str(Path("pkg/data.py"))
    assert out == (
        f"{path}:2:10: TPF102 [*] DataLoader without `pin_memory=True` in a module that uses CUDA\n"
        "  |\n"
        "1 | import torch\n"
        "2 | loader = torch.utils.data.DataLoader(\n"
        "  |          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "3 |     ds,\n"
        "  |     ^^^\n"
        "4 |     batch_size=8)\n"
        "  |     ^^^^^^^^^^^^^ TPF102 dataloader-no-pin-memory\n"
        "5 | x = 1\n"
        "  |\n"
        "  = help: Add `pin_memory=True`\n"
        "\n"
        "Found 1 error.\n"
        "[*] 1 fixable with the `--fix` option.\n"
    )


def test_fix_marker_follows_applicability(tmp_path):
    unsafe = [_loader(tmp_path, Applicability.UNSAFE)]
    summary = _summary(unsafe, fixable_unsafe=1)
    header = _emit(unsafe, "full", summary=summary, root=tmp_path, color=False).splitlines()[0]
    assert "[*]" not in header
    out = _emit(unsafe, "full", summary=summary, root=tmp_path, color=False, unsafe_fixes=True)
    assert "TPF102 [*] " in out.splitlines()[0]
    assert out.splitlines()[-1] == "[*] 1 fixable with the `--fix` option."
    display = [_loader(tmp_path, Applicability.DISPLAY_ONLY)]
    out = _emit(display, "full", summary=_summary(display), root=tmp_path, color=False, unsafe_fixes=True)
    assert "[*]" not in out and "= help: Add `pin_memory=True`" in out


def test_full_without_source_prints_no_frame(tmp_path):
    result = _real(tmp_path)
    bare = FileResult(result.path, result.diagnostics, source=None)
    out = _emit([bare], "full", summary=_summary([bare]), root=tmp_path, color=False)
    assert out.splitlines()[0].startswith("train.py:2:9: TPF501 ")
    assert " | " not in out and "^" not in out


def test_full_frame_for_a_syntax_error_at_end_of_file(tmp_path):
    source = "import torch\nx = (1,\n"
    lint = lint_source(source, tmp_path / "bad.py", Settings())
    (diagnostic,) = lint.diagnostics
    assert diagnostic.code == "TPF001"
    result = FileResult(tmp_path / "bad.py", (diagnostic,), source=source)
    out = _emit([result], "full", summary=_summary([result]), root=tmp_path, color=False)
    assert out.startswith("bad.py:")
    assert "TPF001 syntax-error" in out
    assert "^" in out and out.rstrip().endswith("Found 1 error.")


def test_full_expands_tabs_and_keeps_carets_aligned(tmp_path):
    source = "if x:\n\tm = nn.DataParallel(n)\n"
    d = Diagnostic("TPF501", "data-parallel", "m", tmp_path / "t.py", Location(2, 6), Location(2, 25))
    out = _emit([FileResult(d.path, (d,), source=source)], "full", root=tmp_path, color=False)
    lines = out.splitlines()
    code_line = next(line for line in lines if line.startswith("2 | "))
    caret_line = next(line for line in lines if "^" in line)
    assert "\t" not in out
    start = caret_line.index("^")
    assert code_line[start:].startswith("nn.DataParallel(n)")
    assert caret_line.count("^") == len("nn.DataParallel(n)")


def test_full_elides_the_middle_of_long_spans(tmp_path):
    source = "m = f(\n" + "".join(f"    a{i},\n" for i in range(20)) + ")\n"
    d = Diagnostic("TPF501", "data-parallel", "m", tmp_path / "l.py", Location(1, 5), Location(22, 2))
    out = _emit([FileResult(d.path, (d,), source=source)], "full", root=tmp_path, color=False)
    lines = out.splitlines()
    assert "..." in lines
    assert " 3 |     a1," in lines and "22 | )" in lines and " 4 |     a2," not in lines
    assert lines[lines.index("22 | )") + 1] == "   | ^ TPF501 data-parallel"


def test_full_span_ending_at_a_line_start_marks_the_line_before(tmp_path):
    source = "x = 1\nm = nn.DataParallel(n)\ny = 2\n"
    d = Diagnostic("TPF501", "data-parallel", "m", tmp_path / "s.py", Location(2, 1), Location(3, 1))
    out = _emit([FileResult(d.path, (d,), source=source)], "full", root=tmp_path, color=False)
    assert "  | ^^^^^^^^^^^^^^^^^^^^^^ TPF501 data-parallel\n3 | y = 2\n" in out


def test_full_does_not_interpret_markup_or_wrap_long_paths(tmp_path):
    deep = tmp_path.joinpath(*(["a_very_long_directory_name"] * 12))
    d = Diagnostic("TPF501", "data-parallel", "use [bold]DDP[/bold]", deep / "x.py", Location(1, 1), Location(1, 2))
    out = _emit([FileResult(d.path, (d,), source="[red]x[/red] = 1\n")], "full", root=tmp_path, color=False)
    header = out.splitlines()[0]
    assert header.endswith(":1:1: TPF501 use [bold]DDP[/bold]")
    assert len(header) > 300
    assert "1 | [red]x[/red] = 1" in out


def test_full_colour_is_forced_or_off(tmp_path, monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "dumb")
    results = [_real(tmp_path)]
    assert ANSI.search(_emit(results, "full", summary=_summary(results), root=tmp_path, color=True))
    assert not ANSI.search(_emit(results, "full", summary=_summary(results), root=tmp_path, color=None))
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not ANSI.search(_emit(results, "full", summary=_summary(results), root=tmp_path, color=False))


def test_full_clean_run(tmp_path):
    assert _emit([], "full", summary=RunSummary(), color=False) == "All checks passed!\n"


def test_statistics_table(tmp_path):
    results = [_real(tmp_path), _real(tmp_path / "b"), _loader(tmp_path), _loader(tmp_path / "u", Applicability.UNSAFE)]
    summary = _summary(results, fixable_safe=1, fixable_unsafe=1)
    out = _emit(results, "concise", summary=summary, statistics=True)
    assert out.splitlines() == [
        "2\tTPF102\t[~] dataloader-no-pin-memory",
        "2\tTPF501\t[ ] data-parallel",
        "[~] some, not all, of that code's findings are fixable ([*]: all of them)",
        "Found 4 errors.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]
    full = _emit(results, "full", summary=summary, statistics=True, color=False)
    assert "TPF102" in full and "[~] dataloader-no-pin-memory" in full and "data-parallel" in full
    assert "[~] some, not all, of that code's findings are fixable" in full  # the marker explained (issue 21)
    assert " | " not in full  # no frames in statistics mode
    only_dp = [_real(tmp_path)]
    out = _emit(only_dp, "concise", summary=_summary(only_dp), statistics=True)
    assert out.splitlines()[0] == "1\tTPF501\tdata-parallel"
    assert "[~]" not in out  # no legend where no row is partly fixable


def test_show_fixes_lists_files(tmp_path):
    results = [
        FileResult(tmp_path / "b.py", fixed=1),
        FileResult(tmp_path / "a.py", fixed=2),
        FileResult(tmp_path / "c.py"),
    ]
    summary = RunSummary(files_checked=3, fixed=3, fix_mode=True)
    for fmt in ("full", "concise"):
        out = _emit(results, fmt, summary=summary, show_fixes=True, root=tmp_path, color=False)
        assert out.splitlines() == [
            "Fixed 3 errors:",
            "- a.py: 2 fixes",
            "- b.py: 1 fix",
            "",
            "Found 3 errors (3 fixed, 0 remaining).",
        ], fmt
    assert "Fixed 3 errors:" not in _emit(results, "concise", summary=summary, root=tmp_path)


# -- summary ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "unsafe_fixes", "expected"),
    [
        (RunSummary(), False, ["All checks passed!"]),
        (RunSummary(remaining=1), False, ["Found 1 error."]),
        (RunSummary(remaining=3, fixable_safe=2), False, ["Found 3 errors.", "[*] 2 fixable with the `--fix` option."]),
        (
            RunSummary(remaining=3, fixable_safe=1, fixable_unsafe=2),
            False,
            [
                "Found 3 errors.",
                "[*] 1 fixable with the `--fix` option "
                "(2 hidden fixes can be enabled with the `--unsafe-fixes` option).",
            ],
        ),
        (
            RunSummary(remaining=1, fixable_unsafe=1),
            False,
            ["Found 1 error.", "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."],
        ),
        (
            RunSummary(remaining=3, fixable_safe=1, fixable_unsafe=2),
            True,
            ["Found 3 errors.", "[*] 3 fixable with the `--fix` option."],
        ),
        (
            RunSummary(fixed=2, remaining=1, fixable_unsafe=1, fix_mode=True),
            False,
            [
                "Found 3 errors (2 fixed, 1 remaining).",
                "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
            ],
        ),
        (RunSummary(fixed=1, remaining=0, fix_mode=True), False, ["Found 1 error (1 fixed, 0 remaining)."]),
        (RunSummary(errors=2), False, ["No findings, but 2 errors occurred."]),
        (RunSummary(fixed=2, remaining=2, diff_mode=True), False, ["Would fix 2 errors."]),
        (
            RunSummary(fixed=2, remaining=2, fixable_unsafe=1, diff_mode=True),
            False,
            ["Would fix 2 errors (1 additional fix available with `--unsafe-fixes`)."],
        ),
        (
            RunSummary(diff_mode=True, fixable_unsafe=2),
            False,
            ["No errors would be fixed (2 fixes available with `--unsafe-fixes`)."],
        ),
    ],
)
def test_summary_lines(summary, unsafe_fixes, expected):
    assert [line.text for line in summary_lines(summary, unsafe_fixes=unsafe_fixes)] == expected


# -- errors and dispatch ------------------------------------------------------------------


def test_format_errors_for_stderr(tmp_path):
    results = [
        FileResult(tmp_path / "b.py", fix_errors=("b.py: fix for TPF102 was not applied",)),
        FileResult(tmp_path / "a.py", errors=("a.py: internal error in TPF501 (data-parallel): boom",)),
    ]
    assert format_errors(results) == [
        "error: a.py: internal error in TPF501 (data-parallel): boom",
        "warning: b.py: fix for TPF102 was not applied",
    ]
    for fmt in FORMATS:
        assert "boom" not in _emit(results, fmt, summary=RunSummary(errors=1), color=False) or fmt == "sarif"


def test_quiet_prints_findings_without_summary(tmp_path):
    results = [_real(tmp_path)]
    for fmt in ("full", "concise"):
        out = _emit(results, fmt, summary=_summary(results), root=tmp_path, color=False, quiet=True)
        assert "train.py:2:9: TPF501" in out and "Found" not in out, fmt
    assert _emit([], "concise", summary=RunSummary(), quiet=True) == ""
    assert "Found" not in _emit(results, "concise", summary=_summary(results), statistics=True, quiet=True)


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown output format"):
        _emit([], "xml")


def test_every_format_orders_findings_by_path_and_location(tmp_path):
    a = _real(tmp_path / "z")
    b = _loader(tmp_path)
    for fmt in FORMATS:
        forward = _emit([a, b], fmt, summary=_summary([a, b]), root=tmp_path, color=False)
        backward = _emit([b, a], fmt, summary=_summary([a, b]), root=tmp_path, color=False)
        assert forward == backward, fmt


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("fmt", ["full", "concise"])
def test_no_color_turns_colour_off_on_a_terminal_unless_forced(tmp_path, monkeypatch, fmt):
    """Issue 21 item 12: `NO_COLOR=1` on a terminal was ignored (full passed no_color=False)."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    results = [_real(tmp_path)]

    def shown(color):
        stream = _Terminal()
        emit(results, fmt, stream, summary=_summary(results), root=tmp_path, color=color)
        return stream.getvalue()

    assert ANSI.search(shown(None))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(shown(None))
    assert ANSI.search(shown(True))  # --color always wins
    assert not ANSI.search(shown(False))


def test_concise_colours_with_color_always_and_not_in_a_pipe(tmp_path, monkeypatch):
    """Issue 21 item 12: `--color always` had no effect on concise output."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    results = [_real(tmp_path)]
    coloured = _emit(results, "concise", summary=_summary(results), root=tmp_path, color=True)
    plain = _emit(results, "concise", summary=_summary(results), root=tmp_path, color=None)
    assert ANSI.search(coloured) and not ANSI.search(plain)
    assert ANSI.sub("", re.sub(r"\x1b\[[0-9;]*m", "", coloured)) == plain
    assert "\x1b[1;31mTPF" in coloured
