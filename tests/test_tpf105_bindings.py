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


# -- a progress bar over the loader walks it; it does not set the epoch (SemBERT, ERNIE) ----

_BERT = (
    _SETUP + "from torch.utils.data import RandomSampler\nfrom tqdm import tqdm, trange\n\n\n"
    "def main(args, model, optimizer, train_data):\n"
    "    if args.local_rank == -1:\n        train_sampler = RandomSampler(train_data)\n"
    "    else:\n        train_sampler = DistributedSampler(train_data)\n"
    "    train_dataloader = DataLoader(train_data, sampler=train_sampler, batch_size=8)\n"
    "    for _ in trange(int(args.num_train_epochs), desc='Epoch'):\n"
    "        for step, batch in enumerate(tqdm(train_dataloader, desc='Iteration')):\n"
    "            model(*batch).backward()\n            optimizer.step()\n"
)


def test_a_loader_walked_through_a_tqdm_bar_with_arguments_every_epoch():
    assert lint_example(Rule, _BERT) == [(11, "TPF105")]


def test_a_call_that_may_set_the_epoch_still_silences_it():
    # Handing the loader to an unknown function (which may call set_epoch) stays silent, as
    # does a bar that is not tqdm's.
    handed = _BERT.replace("        for step, batch", "        prepare(train_dataloader)\n        for step, batch")
    assert lint_example(Rule, handed) == []
    other_bar = _BERT.replace("from tqdm import tqdm, trange", "from tqdm import trange\nfrom bars import tqdm")
    assert lint_example(Rule, other_bar) == []
