"""The cache and the project index: a file's cached findings depend on the other modules
they were read from, the warm path decides from ``stat`` alone, and it never imports
LibCST."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytorch_perflint.cache import CACHE_DIR, Cache
from pytorch_perflint.config import Settings

from test_cache_and_notebooks_cli import run  # noqa: E402

TRAIN = "from torch.utils.data import DataLoader\nfrom model import Net\n\nloader = DataLoader(ds, num_workers=2)\nnet = Net()\n"
MODEL_GPU = "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.to_gpu = torch.zeros(1).cuda()\n"
MODEL_CPU = "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.on_host = torch.zeros(1)\n"


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF102"]\n')
    (root / "train.py").write_text(TRAIN)
    (root / "model.py").write_text(MODEL_GPU)
    return root


def _findings(root: Path, *args: str) -> list:
    result = run(["check", "--output-format", "json", *args], root)
    assert result.exit_code in (0, 1), result.output
    return sorted((Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in json.loads(result.output))


def _rewrite(path: Path, text: str) -> None:
    """Write new text and make sure the stat key changes even on a coarse clock."""
    before = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))


def test_changing_an_imported_module_changes_the_importers_findings_on_the_next_run(tmp_path):
    root = _project(tmp_path)
    assert _findings(root, ".") == [("train.py", 4, "TPF102")]  # model.py selects CUDA: train.py runs on it
    assert _findings(root, ".") == [("train.py", 4, "TPF102")]  # warm
    _rewrite(root / "model.py", MODEL_CPU)  # its only .cuda() removed
    assert _findings(root, ".") == []
    _rewrite(root / "model.py", MODEL_GPU)
    assert _findings(root, ".") == [("train.py", 4, "TPF102")]


def test_a_pre_commit_run_of_the_one_changed_file_sees_the_change_in_the_module_it_imports(tmp_path):
    root = _project(tmp_path)
    assert _findings(root, "train.py") == [("train.py", 4, "TPF102")]
    _rewrite(root / "model.py", MODEL_CPU)
    assert _findings(root, "train.py") == []


def test_a_new_script_that_imports_a_module_and_selects_cuda_changes_the_modules_findings(tmp_path):
    root = _project(tmp_path)
    (root / "model.py").write_text(MODEL_CPU)
    (root / "data.py").write_text("from torch.utils.data import DataLoader\n\n\ndef make(ds):\n    return DataLoader(ds, num_workers=2)\n")
    assert _findings(root, "data.py") == []  # nothing that imports it runs on an accelerator
    (root / "launch.py").write_text("import data\n\nx = x.cuda()\n")
    assert _findings(root, "data.py") == [("data.py", 5, "TPF102")]


def test_the_cached_result_is_used_when_nothing_changed(tmp_path):
    root = _project(tmp_path)
    assert run(["check", "--output-format", "concise", "."], root).exit_code == 1
    cache_file = root / CACHE_DIR / "lint.json"
    data = json.loads(cache_file.read_text())
    (entry,) = [e for key, e in data["files"].items() if Path(key).name == "train.py"]
    entry["diagnostics"][0]["message"] = "FROM CACHE"
    cache_file.write_text(json.dumps(data))
    assert "FROM CACHE" in run(["check", "--output-format", "concise", "."], root).output


def test_the_warm_path_decides_from_stat_without_reading_the_file(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "model.py").write_text(MODEL_CPU)
    settings = Settings(project_root=str(root), config_path=str(root / "pyproject.toml"))
    cache = Cache(root, settings, with_edits=False)
    path = root / "model.py"
    cache.put(path, path.read_bytes(), ())
    cache.save()
    cache = Cache(root, settings, with_edits=False)

    def no_reading(self, *args, **kwargs):
        raise AssertionError("content read on the warm path")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    assert cache.lookup(path) == ()
    monkeypatch.undo()
    # A touched file (new mtime, same bytes) is still a hit, by its digest.
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 1_000_000_000))
    assert cache.lookup(path) == ()
    path.write_text(MODEL_GPU)
    assert cache.lookup(path) is None


def test_the_warm_path_never_imports_libcst(tmp_path):
    root = _project(tmp_path)
    code = (
        "import sys\n"
        "from pytorch_perflint.cli import main\n"
        "try:\n"
        "    main(['check', '--output-format', 'concise', '.'])\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code)\n"
        "print('libcst loaded:', 'libcst' in sys.modules)\n"
        "heavy = ('pytorch_perflint.project', 'pytorch_perflint.workers', 'multiprocessing', 'pytorch_perflint.engine')\n"
        "print('heavy loaded:', sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def once() -> str:
        return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=env, timeout=120).stdout

    cold = once()
    assert "exit 1" in cold and "libcst loaded: True" in cold  # the check can fail: it linted
    warm = once()
    assert "exit 1" in warm and "train.py:4" in warm
    assert "libcst loaded: False" in warm
    # Nor the project layer, the engine or the workers: the cache answered every file.
    assert "heavy loaded: []" in warm
    _rewrite(root / "model.py", MODEL_CPU)
    assert "libcst loaded: True" in once()  # a changed module: linted again


def test_a_result_from_before_a_change_is_not_revived_by_a_later_partial_run(tmp_path):
    """A result that read the whole import graph is tied to the snapshot it was read
    against: a later run of other files, which records a new snapshot, must not make it
    valid again."""
    root = _project(tmp_path)
    (root / "model.py").write_text(MODEL_CPU)
    (root / "data.py").write_text("from torch.utils.data import DataLoader\n\n\ndef make(ds):\n    return DataLoader(ds, num_workers=2)\n")
    assert _findings(root, ".") == []
    (root / "launch.py").write_text("import data\n\nx = x.cuda()\n")
    assert _findings(root, "train.py") == []  # a pre-commit run of another file
    assert _findings(root, "data.py") == [("data.py", 5, "TPF102")]


AGENT = "import torch\n\n\ndef to_tensor(x):\n    return torch.tensor(x)\n"
MAIN_ARRAY = "import numpy as np\nfrom agent import to_tensor\n\nto_tensor(np.zeros(3))\n"
MAIN_LIST = "import numpy as np\nfrom agent import to_tensor\n\nto_tensor([1.0, 2.0])\n"


def test_a_finding_from_the_value_engine_depends_on_the_callers_it_read(tmp_path):
    """TPF401 in agent.py holds because main.py passes an array: agent.py's cached findings
    must follow main.py's changes (the engine's answer read it)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF401"]\n')
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "main.py").write_text(MAIN_ARRAY)
    assert _findings(tmp_path, ".") == [("agent.py", 5, "TPF401")]
    assert _findings(tmp_path, ".") == [("agent.py", 5, "TPF401")]  # warm
    _rewrite(tmp_path / "main.py", MAIN_LIST)
    assert _findings(tmp_path, ".") == []


DATA_PINNED = "from torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, pin_memory=True)\n"
DATA_PAGEABLE = "from torch.utils.data import DataLoader\n\n\ndef make_loader(ds):\n    return DataLoader(ds, pin_memory=False)\n"
COPIES = "from data import make_loader\n\n\ndef main(ds, device):\n    for x, y in make_loader(ds):\n        x = x.to(device)\n"


def test_a_blocking_copy_depends_on_the_module_that_pins_its_loader(tmp_path):
    """TPF104 in train.py holds because data.py's loader pins memory (the value engine's
    answer read data.py): train.py's cached findings must follow data.py's changes."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF104"]\n')
    (tmp_path / "data.py").write_text(DATA_PINNED)
    (tmp_path / "train.py").write_text(COPIES)
    assert _findings(tmp_path, ".") == [("train.py", 6, "TPF104")]
    assert _findings(tmp_path, ".") == [("train.py", 6, "TPF104")]  # warm
    _rewrite(tmp_path / "data.py", DATA_PAGEABLE)
    assert _findings(tmp_path, ".") == []
    _rewrite(tmp_path / "data.py", DATA_PINNED)
    assert _findings(tmp_path, "train.py") == [("train.py", 6, "TPF104")]


def test_a_module_that_starts_calling_a_function_re_lints_what_read_its_callers(tmp_path):
    """The callers of ``to_tensor`` are read from the texts that spell its name: a module
    that did not spell it and starts to call it with a list (the callers then disagree)
    takes agent.py's finding away on the next run; an edit that does not spell it leaves
    the result as it was. (The re-lint a comment alone causes is counted in
    ``test_cache_incremental``.)"""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF401"]\n')
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "main.py").write_text(MAIN_ARRAY)
    (tmp_path / "other.py").write_text("import agent\n\n\ndef later():\n    return 1\n")
    assert _findings(tmp_path, ".") == [("agent.py", 5, "TPF401")]
    _rewrite(tmp_path / "other.py", "import agent\n\n\ndef later():\n    return 2  # unrelated\n")
    assert _findings(tmp_path, ".") == [("agent.py", 5, "TPF401")]
    _rewrite(tmp_path / "other.py", "import agent\n\n\ndef later():\n    return agent.to_tensor([1.0, 2.0])\n")
    assert _findings(tmp_path, ".") == []
