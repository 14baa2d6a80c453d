"""TPF105 reports one mistake once: a sampler name bound twice is one finding (RULES.md's
anchor, the ``DistributedSampler(...)`` call: the first one the rule reports)."""

from __future__ import annotations

from pytorch_perflint.rules.dataloader.tpf105_distributed_sampler_without_set_epoch import (
    DistributedSamplerWithoutSetEpoch as Rule,
)
from pytorch_perflint.testing import lint_example

_SETUP = "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
_EPOCHS = "loader = DataLoader(ds, sampler=sampler)\nfor epoch in range(3):\n    for x, y in loader:\n        loss(x, y).backward()\n"


def test_a_name_bound_to_a_sampler_on_each_branch_is_one_finding_at_the_first():
    code = _SETUP + "if ddp:\n    sampler = DistributedSampler(ds)\nelse:\n    sampler = DistributedSampler(ds, num_replicas=1, rank=0)\n" + _EPOCHS
    assert lint_example(Rule, code) == [(4, "TPF105")]


def test_when_the_first_binding_does_not_shuffle_the_second_carries_the_finding():
    code = _SETUP + "sampler = DistributedSampler(ds, shuffle=False)\nif shuffle_it:\n    sampler = DistributedSampler(ds)\n" + _EPOCHS
    assert lint_example(Rule, code) == [(5, "TPF105")]


def test_the_same_name_in_two_functions_is_two_loaders_and_two_findings():
    one = "def {f}(ds):\n    sampler = DistributedSampler(ds)\n" + "".join("    " + line + "\n" for line in _EPOCHS.splitlines())
    code = _SETUP + one.format(f="first") + one.format(f="second")
    assert [line for line, _ in lint_example(Rule, code)] == [4, 10]


def test_one_sampler_set_each_epoch_stays_silent_whatever_the_other_branch_binds():
    code = (
        _SETUP + "if ddp:\n    sampler = DistributedSampler(ds)\nelse:\n    sampler = DistributedSampler(ds, num_replicas=1, rank=0)\n"
        "loader = DataLoader(ds, sampler=sampler)\nfor epoch in range(3):\n    sampler.set_epoch(epoch)\n"
        "    for x, y in loader:\n        loss(x, y).backward()\n"
    )
    assert lint_example(Rule, code) == []
