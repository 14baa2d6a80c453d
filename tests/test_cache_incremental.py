"""Issue 25: the cache invalidates by what changed, and the one-file (pre-commit) path reads
only what that file needs."""

from __future__ import annotations

import json
from pathlib import Path

from pytorch_perflint.cache import CACHE_DIR

from test_cache_and_notebooks_cli import run  # noqa: E402
from test_cache_project import MODEL_CPU, MODEL_GPU, _project, _rewrite  # noqa: E402


def _mark_cached(root: Path, name: str) -> None:
    """Change the cached message of ``name``'s findings: a re-lint would put it back."""
    cache_file = root / CACHE_DIR / "lint.json"
    data = json.loads(cache_file.read_text())
    (entry,) = [e for key, e in data["files"].items() if Path(key).name == name]
    assert entry["diagnostics"]
    for diagnostic in entry["diagnostics"]:
        diagnostic["message"] = "FROM CACHE"
    cache_file.write_text(json.dumps(data))


def test_a_comment_added_to_an_imported_module_does_not_re_lint_its_importers(tmp_path):
    """train.py's finding depends on model.py (it runs on CUDA because model.py selects
    it): a comment in model.py changes neither its summary nor the import graph."""
    root = _project(tmp_path)
    assert "TPF102" in run(["check", "--output-format", "concise", "."], root).output
    _mark_cached(root, "train.py")
    _rewrite(root / "model.py", MODEL_GPU + "# a comment\n")
    assert "FROM CACHE" in run(["check", "--output-format", "concise", "."], root).output
    assert "FROM CACHE" in run(["check", "--output-format", "concise", "."], root).output  # and stays a hit
    # A change to what the summary says (no .cuda() left) does re-lint it.
    _rewrite(root / "model.py", MODEL_CPU + "# a comment\n")
    assert run(["check", "--output-format", "concise", "."], root).output.count("TPF102") == 0


def test_an_import_added_to_an_imported_module_re_lints_what_read_the_graph(tmp_path):
    root = _project(tmp_path)
    (root / "model.py").write_text(MODEL_CPU)
    (root / "gpu.py").write_text("import torch\nDEVICE = torch.device('cuda')\n")
    assert run(["check", "--output-format", "concise", "."], root).exit_code == 0
    _rewrite(root / "model.py", "import gpu\n" + MODEL_CPU)  # train -> model -> gpu, which selects CUDA
    assert "train.py:4" in run(["check", "--output-format", "concise", "."], root).output


def test_the_pre_commit_path_decodes_only_the_summaries_its_file_needs(tmp_path, monkeypatch):
    """One edited file checked alone after a warm full run: the kept summaries of the
    project's other modules are not all read back (6 s on the torch package)."""
    from pytorch_perflint.project import codec

    root = _project(tmp_path)
    for number in range(40):
        (root / f"unrelated_{number}.py").write_text(f"import torch\n\n\ndef helper_{number}(x):\n    return x + {number}\n")
    assert run(["check", "--output-format", "concise", "."], root).exit_code == 1
    _rewrite(root / "train.py", (root / "train.py").read_text() + "# edited\n")
    log = tmp_path / "decoded.txt"
    original = codec.from_json

    def counting(data):
        if isinstance(data, dict) and "ModuleSummary" in data:
            with open(log, "a") as handle:  # the lint runs in a forked worker
                handle.write("1\n")
        return original(data)

    monkeypatch.setattr(codec, "from_json", counting)
    assert "train.py:4" in run(["check", "--output-format", "concise", "train.py"], root).output
    decoded = log.read_text().count("1") if log.exists() else 0
    assert decoded <= 2  # model.py's, at most: not the 40 others


def test_a_summarising_worker_forked_while_the_collector_was_paused_turns_it_back_on(tmp_path):
    """Issue 25: ``check -j 1 --no-cache`` peaked at 1.45 GB on the torch package. Its
    summarising worker was forked inside the parent's paused block and ran every file
    with the cyclic collector off, so each file's cycles were never freed."""
    import gc

    from pytorch_perflint.run_summaries import _summarise_task

    module = tmp_path / "model.py"
    module.write_text(MODEL_CPU)
    gc.disable()  # as in a worker forked from ``summarise_projects``' loop
    try:
        _summarise_task(str(module), str(tmp_path), {}, None)
        assert gc.isenabled()
    finally:
        gc.enable()
