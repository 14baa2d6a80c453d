"""TPF101/TPF103 over iterable datasets (issue 21, item 1): a stream whose ``__iter__`` does
not split itself by worker is read whole by every worker, so adding workers multiplies the
data. Their fixes are display-only there; a stream that shards keeps its fix. The last test
runs the loaders before and after ``check --fix --unsafe-fixes`` on CPU torch and counts the
samples an epoch sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest
from click.testing import CliRunner

from pytorch_perflint import runner
from pytorch_perflint.cli import main
from pytorch_perflint.config import load_settings
from pytorch_perflint.types import Applicability

from project_tree import write_project

STREAMS = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF103"]\ndataloader-num-workers = 2\n',
    "data/__init__.py": "",
    "data/sharding.py": """
        from torch.utils.data import get_worker_info


        def worker_range(n):
            info = get_worker_info()
            return range(n) if info is None else range(info.id, n, info.num_workers)
        """,
    "data/streams.py": """
        import torch
        from torch.utils.data import IterableDataset

        from .sharding import worker_range


        class LogStream(IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                for i in range(self.n):
                    yield torch.tensor([i])


        class ShardedStream(IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                for i in worker_range(self.n):
                    yield torch.tensor([i])
        """,
    "data/tail.py": """
        from .streams import LogStream


        class TailStream(LogStream):
            pass
        """,
    "train.py": """
        from torch.utils.data import DataLoader

        from data.streams import LogStream, ShardedStream
        from data.tail import TailStream


        def loaders():
            plain = DataLoader(LogStream(128), batch_size=8)
            tail = DataLoader(TailStream(128), batch_size=8)
            sharded = DataLoader(ShardedStream(128), batch_size=8)
            return plain, tail, sharded


        def epochs():
            streaming = DataLoader(LogStream(128), batch_size=8, num_workers=2)
            for epoch in range(2):
                for x in streaming:
                    pass
        """,
}


def _diagnostics(root: Path, *names: str) -> Dict[Tuple[str, int], Tuple[str, Set[str]]]:
    """(code, line) of train.py -> (message, applicabilities of its fix)."""
    settings = load_settings([root])
    paths = [root / name for name in names] if names else sorted(root.rglob("*.py"))
    results, _ = runner.run(paths, settings, jobs=1)
    out = {}
    for result in results:
        assert not result.errors, result.errors
        for d in result.diagnostics:
            if Path(d.path).name == "train.py":
                kinds = {d.fix.applicability} if d.fix is not None else set()
                out[(d.code, d.location.row)] = (d.message, kinds)
    return out


@pytest.mark.parametrize("names", [(), ("train.py",)], ids=["project", "one-file"])
def test_streams_of_other_modules_that_do_not_shard_get_a_display_only_fix(tmp_path, names):
    root = write_project(tmp_path / "p", STREAMS)
    found = _diagnostics(root, *names)
    assert set(found) == {("TPF101", 8), ("TPF101", 9), ("TPF101", 10), ("TPF103", 15)}
    for key in [("TPF101", 8), ("TPF101", 9), ("TPF103", 15)]:
        message, kinds = found[key]
        assert kinds == {Applicability.DISPLAY_ONLY}, key
        assert "get_worker_info" in message and "does not split the stream by worker" in message
    message, kinds = found[("TPF101", 10)]  # it shards through a helper of another module
    assert kinds == {Applicability.UNSAFE}
    assert "get_worker_info" not in message


def test_a_stream_of_unknown_kind_keeps_the_fix(tmp_path):
    """A class whose ``__iter__`` comes from outside the project is not known to stream."""
    files = {
        "pyproject.toml": STREAMS["pyproject.toml"],
        "train.py": """
            from torch.utils.data import DataLoader
            from webdataset import WebDataset


            class Shards(WebDataset):
                pass


            loader = DataLoader(Shards("shards-{000..009}.tar"), batch_size=8)
            """,
    }
    root = write_project(tmp_path / "p", files)
    found = _diagnostics(root)
    assert set(found) == {("TPF101", 9)}
    assert found[("TPF101", 9)][1] == {Applicability.UNSAFE}


# -- the data an epoch sees, before and after the fix ----------------------------------------

_COUNT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import train
plain, tail, sharded = train.loaders()
print(json.dumps([sum(len(batch) for batch in loader) for loader in (plain, tail, sharded)]))
"""


def _samples(root: Path) -> list:
    """How many samples one epoch of each of ``train.loaders()`` yields (run in a child
    process with CPU torch)."""
    env = {**os.environ, "PYTHONPATH": str(root), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", _COUNT, str(root)], capture_output=True, text=True, env=env, timeout=240, cwd=root
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fix_unsafe_fixes_does_not_change_how_many_samples_an_epoch_sees(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    root = write_project(tmp_path / "p", STREAMS)
    before = _samples(root)
    assert before == [128, 128, 128]
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "--no-cache", "."])
    assert _samples(root) == before
    assert result.exit_code == 1, result.output  # the display-only findings remain
    fixed = (root / "train.py").read_text(encoding="utf-8")
    # The sharded stream got its workers; the others were left as they were.
    assert "DataLoader(ShardedStream(128), batch_size=8, num_workers=2)" in fixed
    assert "DataLoader(LogStream(128), batch_size=8)\n" in fixed
    assert "DataLoader(TailStream(128), batch_size=8)\n" in fixed
    assert "persistent_workers" not in fixed


def test_the_count_would_catch_a_multiplied_stream(tmp_path):
    """The harness above can fail: the unsharded stream with the workers that today's
    main adds yields every sample once per worker."""
    pytest.importorskip("torch")
    root = write_project(tmp_path / "p", STREAMS)
    train = root / "train.py"
    text = train.read_text(encoding="utf-8")
    train.write_text(text.replace("LogStream(128), batch_size=8)", "LogStream(128), batch_size=8, num_workers=2)"), encoding="utf-8")
    assert _samples(root)[0] == 256
