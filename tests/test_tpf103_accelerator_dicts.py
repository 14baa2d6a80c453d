"""TPF103 with workers from a dict the accelerator chooses: ``**({"num_workers": 1} if cuda
else {})`` has no workers on the CPU path, where ``persistent_workers=True`` makes
``DataLoader`` raise. The finding stands (the GPU path restarts its workers every epoch),
but no fix is offered. Look-alike: an unconditional dict, fixed as a keyword."""

from __future__ import annotations

from pathlib import Path

from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source

_LOOP = "for epoch in range(10):\n    for x in loader:\n        pass\n"
_HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"


def _tpf103(source: str):
    return [d for d in lint_source(source, Path("m.py"), Settings()).diagnostics if d.code == "TPF103"]


def test_workers_only_on_the_accelerator_path_are_reported_without_a_fix():
    source = (
        _HEAD + "use_cuda = torch.cuda.is_available()\n"
        "kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}\n"
        "loader = DataLoader(ds, batch_size=4, **kwargs)\n" + _LOOP
    )
    (finding,) = _tpf103(source)
    assert finding.fix is None


def test_workers_on_every_path_keep_the_fix():
    source = _HEAD + "kwargs = {'num_workers': 2}\nloader = DataLoader(ds, batch_size=4, **kwargs)\n" + _LOOP
    (finding,) = _tpf103(source)
    assert finding.fix is not None
    assert "persistent_workers=True" in "".join(edit.content for edit in finding.fix.edits)
