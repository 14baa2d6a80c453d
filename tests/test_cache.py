"""The lint cache: a cache that cannot be read as expected is a miss, never an error; it
lives at the project root; a symlinked cache folder is not used."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytorch_perflint.cache import CACHE_DIR, Cache
from pytorch_perflint.config import Settings

from test_cache_and_notebooks_cli import run  # noqa: E402

DP = "import torch\nmodel = torch.nn.DataParallel(net)\n"


def _project(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    (tmp_path / "train.py").write_text(DP)
    return tmp_path


def test_the_wrong_shape_of_cache_from_issue_11_is_a_miss(tmp_path):
    root = _project(tmp_path)
    (root / CACHE_DIR).mkdir()
    (root / CACHE_DIR / "lint.json").write_text('{"version":"0.1.0","files":[]}')
    result = run(["check", "--exit-zero", "--output-format", "concise", "."], root)
    assert result.exit_code == 0 and "TPF501" in result.output
    # And the cache was rewritten into a usable one.
    data = json.loads((root / CACHE_DIR / "lint.json").read_text())
    assert [Path(k).name for k in data["files"]] == ["train.py"]


def _variants(value, path=()):
    """Every way of replacing one value of ``value`` (at any depth) by a wrong kind."""
    for wrong in ([], None, "x", 7, {}, True):
        yield path, wrong
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _variants(inner, path + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _variants(inner, path + (index,))


def _replaced(data, path, wrong):
    if not path:
        return wrong
    data = copy.deepcopy(data)
    holder = data
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = wrong
    return data


def test_any_wrong_shape_at_any_level_is_a_miss_never_an_error(tmp_path):
    root = _project(tmp_path)
    (root / "fixed.py").write_text("import torch\ny = torch.zeros(3).to('cuda')\n")
    assert run(["check", "--output-format", "json", "."], root).exit_code == 1
    cache_file = root / CACHE_DIR / "lint.json"
    good = json.loads(cache_file.read_text())
    assert any(d["fix"] for entry in good["files"].values() for d in entry["diagnostics"])  # every level is there
    settings = Settings(project_root=str(root), output_format="json")
    contents = {key: (root / key).read_bytes() for key in good["files"]}
    variants = list(_variants(good))
    assert len(variants) > 150
    for path, wrong in variants:
        cache_file.write_text(json.dumps(_replaced(good, path, wrong)))
        cache = Cache(root, settings, with_edits=True)
        for key, content in contents.items():
            hit = cache.get(Path(key), content)  # never raises
            assert hit is None or all(d.code in ("TPF501", "TPF402") for d in hit), (path, wrong)
            cache.put(Path(key), content, ())
        cache.save()
        assert json.loads(cache_file.read_text())["version"] == good["version"]


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"x"', '{"version": null}', "\x00\xff"])
def test_unreadable_cache_text_is_a_miss(tmp_path, text):
    root = _project(tmp_path)
    (root / CACHE_DIR).mkdir()
    (root / CACHE_DIR / "lint.json").write_bytes(text.encode("latin-1"))
    result = run(["check", "--exit-zero", "--output-format", "concise", "."], root)
    assert result.exit_code == 0 and "TPF501" in result.output


def test_the_cache_goes_at_the_project_root_not_the_current_folder(tmp_path):
    """Issue 11 item 8: run from elsewhere, it landed in the current folder."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "pkg").mkdir()
    (project / "pkg" / "train.py").write_text(DP)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run(["check", "--output-format", "concise", str(project / "pkg")], elsewhere)
    assert result.exit_code == 1
    assert list(elsewhere.iterdir()) == []
    assert (project / CACHE_DIR / "lint.json").is_file()
    assert not (project / "pkg" / CACHE_DIR).exists()


def test_without_a_project_root_the_cache_goes_in_the_current_folder_and_clean_removes_it(tmp_path, monkeypatch):
    """Issue 25: a tree with no marker had no cache at all (the second run cost as much
    as the first); ruff keeps its cache in the current folder."""
    loose = tmp_path / "loose"
    (loose / "pkg").mkdir(parents=True)
    (loose / "pkg" / "train.py").write_text(DP)
    result = run(["check", "--output-format", "concise", "."], loose)
    assert result.exit_code == 1 and "TPF501" in result.output
    data = json.loads((loose / CACHE_DIR / "lint.json").read_text())
    assert [Path(k).name for k in data["files"]] == ["train.py"]
    # The second run is answered from the cache: the engine is never asked.
    import pytorch_perflint.engine as engine

    monkeypatch.setattr(engine, "lint_source", lambda *a, **k: (_ for _ in ()).throw(AssertionError("linted again")))
    again = run(["check", "--output-format", "concise", "."], loose)
    assert again.exit_code == 1 and "TPF501" in again.output
    assert run(["clean"], loose).exit_code == 0
    assert not (loose / CACHE_DIR).exists()


def test_without_a_project_root_a_run_from_elsewhere_caches_beside_the_paths(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "train.py").write_text(DP)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run(["check", "--output-format", "concise", str(loose)], elsewhere)
    assert result.exit_code == 1
    assert list(elsewhere.iterdir()) == [] and (loose / CACHE_DIR / "lint.json").is_file()


def test_a_symlinked_cache_folder_is_not_used(tmp_path):
    """Issue 11 item 8: the tool wrote .gitignore and lint.json into the link's target."""
    root = _project(tmp_path / "project")
    target = tmp_path / "target"
    target.mkdir()
    (root / CACHE_DIR).symlink_to(target, target_is_directory=True)
    result = run(["check", "--output-format", "concise", "."], root)
    assert result.exit_code == 1 and "TPF501" in result.output
    assert list(target.iterdir()) == []
    # Nor is a cache read through it.
    (target / "lint.json").write_text(json.dumps({"version": "0.1.0", "files": {}}))
    assert Cache(root, Settings(project_root=str(root)), with_edits=False).folder is None


def test_a_symlinked_cache_file_is_neither_read_nor_written_through(tmp_path):
    root = _project(tmp_path / "project")
    (root / CACHE_DIR).mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text("keep")
    (root / CACHE_DIR / "lint.json").symlink_to(outside)
    (root / CACHE_DIR / ".gitignore").symlink_to(tmp_path / "gitignore-target")
    result = run(["check", "--output-format", "concise", "."], root)
    assert result.exit_code == 1 and "TPF501" in result.output
    assert outside.read_text() == "keep" and not (tmp_path / "gitignore-target").exists()
