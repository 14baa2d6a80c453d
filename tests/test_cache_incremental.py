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


# A scratch project whose findings reach across modules the ways the rules' project screens
# and questions do: a device chosen in one module every other imports, a conv model built
# in another, a pinned loader from a helper, a per-step sync behind a method, an
# evaluation loop, and a cache emptied in a loop (TPF206's imported-module screen).
_SCRATCH = {
    "knobs.py": '''\
"""Choices every script shares."""
import torch

DEVICE = torch.device("cuda")
ROWS = 64


def device_for(name=None):
    return DEVICE if name is None else torch.device(name)
''',
    "stem.py": '''\
import torch.nn as nn

from knobs import DEVICE


class Stem(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.norm = nn.BatchNorm2d(width)

    def forward(self, x):
        return self.norm(self.conv(x)).relu()
''',
    "nets.py": '''\
import torch.nn as nn

from stem import Stem
import knobs


class Labeller(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = Stem(32)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.stem(x).mean((2, 3)))


def build():
    return Labeller().to(knobs.DEVICE)
''',
    "feeds.py": '''\
from torch.utils.data import DataLoader

from knobs import ROWS


def plain_loader(dataset):
    return DataLoader(dataset, batch_size=ROWS, shuffle=True)


def pinned_loader(dataset):
    return DataLoader(dataset, batch_size=ROWS, num_workers=4, pin_memory=True)
''',
    "meter.py": '''\
import knobs


class Meter:
    def __init__(self):
        self.total = 0.0

    def record(self, loss):
        self.total += loss.item()
''',
    "train.py": '''\
import torch
import torch.nn.functional as F

from feeds import pinned_loader
from nets import build
from knobs import DEVICE
from meter import Meter


def train(dataset, epochs=3):
    model = build()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    meter = Meter()
    for epoch in range(epochs):
        for images, labels in pinned_loader(dataset):
            images, labels = images.to(DEVICE), labels.to(DEVICE)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            print(loss.item())
            meter.record(loss)
''',
    "judge.py": '''\
import torch

from feeds import plain_loader
from nets import build
import knobs


def judge(dataset):
    model = build()
    model.eval()
    right = 0
    for images, labels in plain_loader(dataset):
        out = model(images.to(knobs.DEVICE))
        right += (out.argmax(1).cpu() == labels).sum()
        torch.cuda.empty_cache()
    return right
''',
    **{f"util_{n}.py": f"from knobs import device_for\n\n\ndef helper_{n}(x):\n    return x.to(device_for()) + {n}\n" for n in range(3)},
}


def _scratch_run(root: Path, *names: str):
    import dataclasses

    from pytorch_perflint import runner
    from pytorch_perflint.config import Settings

    settings = dataclasses.replace(Settings(), preview=True, project_root=str(root), config_path=str(root / "pyproject.toml"))
    files = [root / name for name in names] if names else sorted(root.glob("*.py"))
    results, summary = runner.run(files, settings, jobs=2, use_cache=True, roots=[str(root)] if not names else None)
    found = sorted((Path(r.path).name, d.location.row, d.code, d.message) for r in results for d in r.diagnostics)
    return found, summary


def test_a_warm_run_re_lints_nothing_and_a_comment_in_a_widely_imported_module_re_lints_only_it(tmp_path):
    """Issue 25, by the run's own accounting (``RunSummary.linted`` / ``summarised``), not by
    timing: the second run lints and summarises nothing; a comment appended to the module
    every other imports re-lints that module alone, its importers' results staying cached
    because what they read of it (its summary, the texts that spell what they looked for)
    did not change, and the run after that is warm again."""
    root = tmp_path / "scratch"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    for name, text in _SCRATCH.items():
        (root / name).write_text(text)
    cold, summary = _scratch_run(root)
    assert summary.linted == len(_SCRATCH) and summary.summarised >= len(_SCRATCH)
    codes = {(name, code) for name, _, code, _ in cold}
    # Findings that need other modules: CUDA chosen in knobs.py, the conv model of stem.py,
    # the pinned loader of feeds.py, the sync inside Meter.record, the cache emptied in a loop.
    assert {("feeds.py", "TPF102"), ("train.py", "TPF403"), ("train.py", "TPF104"), ("judge.py", "TPF203"), ("judge.py", "TPF206")} <= codes
    assert sum(1 for name, _, code, message in cold if name == "train.py" and code == "TPF202" and "record" in message) == 1

    warm, summary = _scratch_run(root)
    assert (summary.linted, summary.summarised) == (0, 0)
    assert warm == cold

    _rewrite(root / "knobs.py", _SCRATCH["knobs.py"] + "# one place for the device\n")
    edited, summary = _scratch_run(root)
    assert summary.linted == 1  # knobs.py itself
    assert summary.summarised <= 2  # knobs.py again (its summary's digest, the import graph's edges)
    assert edited == cold
    again, summary = _scratch_run(root)
    assert (summary.linted, summary.summarised) == (0, 0)
    assert again == cold
    # Checked alone in between (pre-commit, twice), the edited modules move the project's
    # state on: the results stamped before still find what changed since (its history).
    _rewrite(root / "knobs.py", _SCRATCH["knobs.py"] + "# one place for the device, kept here\n")
    alone, summary = _scratch_run(root, "knobs.py")
    assert summary.linted == 1 and alone == [f for f in cold if f[0] == "knobs.py"]
    _rewrite(root / "util_0.py", _SCRATCH["util_0.py"] + "# a helper\n")
    assert _scratch_run(root, "util_0.py")[1].linted == 1
    again, summary = _scratch_run(root)
    assert (summary.linted, again) == (0, cold)
    # A comment that spells a name train.py's answers looked for in every module's text
    # (the callers of Meter.record) may change them: train.py is linted again, not the rest.
    _rewrite(root / "knobs.py", _SCRATCH["knobs.py"] + "# one place for the device, record it\n")
    spelled, summary = _scratch_run(root)
    assert summary.linted == 2
    assert spelled == cold


def test_the_project_state_is_kept_when_the_file_that_built_the_graph_is_not(tmp_path):
    """A small run takes no snapshot of every module's text, so a result that read texts
    by word (who calls ``Net``'s forward) is not kept; when that file was the one whose
    lint built the import graph, the project's state must still be kept: without it the
    next run, and the language server's first answer, find no project in the cache."""
    root = tmp_path / "small"
    (root / ".git").mkdir(parents=True)
    (root / "model.py").write_text("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n")
    (root / "train.py").write_text("from torch.utils.data import DataLoader\nfrom model import Net\n\nloader = DataLoader(ds, num_workers=2)\nnet = Net()\n")
    assert "train.py:4" in run(["check", "-j", "1", "--output-format", "concise", "."], root).output
    state = json.loads((root / CACHE_DIR / "lint.json").read_text())["projects"]
    assert str(root) in state
