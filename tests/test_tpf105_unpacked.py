"""TPF105 on a sampler bound as an item of an unpacked tuple (issue 23, new-rules-5's misses:
a helper that builds the loader, ``sampler, shuffle = DistributedSampler(ds), False``, and
returns the loader, walked in another function's epoch loop). The look-alikes stay silent:
the epoch set through ``loader.sampler``, a sampler that does not shuffle, a loader walked
once, targets that do not line up with the values."""

from __future__ import annotations

from pytorch_perflint.rules.dataloader.tpf105_distributed_sampler_without_set_epoch import (
    DistributedSamplerWithoutSetEpoch as Rule,
)
from pytorch_perflint.testing import lint_example

_SETUP = "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n\n\n"
_HELPER = (
    "def build_loaders(ds, world):\n"
    "    order, mix = None, True\n"
    "    if world > 1:\n"
    "        {binding}\n"
    "    loader = DataLoader(ds, shuffle=mix, sampler=order, batch_size=16)\n"
    "    return loader, ds\n\n\n"
)
_FIT = (
    "def fit(ds, world, net, opt):\n"
    "    loader, _ = build_loaders(ds, world)\n"
    "    for epoch in range(20):\n"
    "{set_epoch}"
    "        for x in loader:\n"
    "            net(x).sum().backward()\n"
    "            opt.step()\n"
)


def _code(binding: str, set_epoch: str = "", fit: str = _FIT) -> str:
    return _SETUP + _HELPER.format(binding=binding) + fit.format(set_epoch=set_epoch)


def test_a_sampler_unpacked_beside_its_shuffle_flag_is_found():
    assert lint_example(Rule, _code("order, mix = DistributedSampler(ds), False")) == [(8, "TPF105")]
    assert lint_example(Rule, _code("(order, mix) = [DistributedSampler(ds, seed=1), False]")) == [(8, "TPF105")]


def test_look_alikes_stay_silent():
    binding = "order, mix = DistributedSampler(ds), False"
    assert lint_example(Rule, _code(binding, "        loader.sampler.set_epoch(epoch)\n")) == []
    assert lint_example(Rule, _code("order, mix = DistributedSampler(ds, shuffle=False), False")) == []
    once = _FIT.replace("    for epoch in range(20):\n{set_epoch}", "    if True:\n{set_epoch}")
    assert lint_example(Rule, _code(binding, fit=once)) == []
    assert lint_example(Rule, _code("order, *rest = DistributedSampler(ds), False, 1")) == []
