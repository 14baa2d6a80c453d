"""TPF402: a host tensor made from the value its own name held (``obs = torch.tensor(obs,
dtype=...).unsqueeze(0)``: a NumPy array rebound to a tensor) and then moved by a later
line of the block, under a GPU flag or not. The factory alone may read the name: the
creating line then still runs before the move and sees nothing else, so ``device=`` there
changes only where the tensor lives. A name read by a step after the factory, or used
between creation and move, stays silent."""

from __future__ import annotations

from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import fix_example, lint_example

SOURCE = """\
import numpy as np
import torch


class Actor:
    def inputs(self, obs, goal):
        both = np.concatenate([obs, goal])
        both = torch.tensor(both, dtype=torch.float32).unsqueeze(0)
        if self.args.cuda:
            both = both.cuda()
        return both

    def plain(self, obs):
        obs = np.asarray(obs)
        obs = torch.tensor(obs, dtype=torch.float32).view(1, -1)
        obs = obs.cuda()
        return obs

    def quiet(self, obs, scale):
        a = np.asarray(obs)
        a = torch.zeros(3).add_(a.sum())
        a = a.cuda()
        b = np.asarray(obs)
        b = torch.tensor(b).view(b.shape[0], -1)
        b = b.cuda()
        c = np.asarray(obs)
        c = torch.tensor(c)
        seen = c.sum()
        c = c.cuda()
        return a, b, c, seen
"""


def test_a_factory_reading_the_name_it_rebinds_is_still_a_fresh_host_tensor():
    assert lint_example(rule_by_code("TPF402"), SOURCE) == [(10, "TPF402"), (16, "TPF402")]


def test_the_fix_creates_it_on_the_device_and_drops_the_move():
    plain = SOURCE[SOURCE.index("import numpy"):SOURCE.index("    def quiet")].replace(
        "    def inputs", "    def _inputs"
    )
    fixed = fix_example(rule_by_code("TPF402"), plain)
    assert 'obs = torch.tensor(obs, dtype=torch.float32, device="cuda").view(1, -1)\n        return obs' in fixed
    assert "both = both.cuda()" in fixed  # under a flag: reported, not fixed
