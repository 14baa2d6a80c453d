"""TPF301 reads a project ``nn.Module`` that wraps one conv as that conv: its ``__init__``
binds ``self.<attr> = nn.Conv2d(..., bias=bias)`` and its ``forward`` ends in that layer
(a same-padding conv that pads, then convolves), so ``Wrapper(c, c, 1)`` right before a
``BatchNorm2d`` keeps a bias BatchNorm cancels. Look-alikes stay silent: ``bias=False``
passed, a forward that does more after the conv, a wrapper with two convs, an activation
between, a bias the wrapper's caller cannot see."""

from __future__ import annotations

from pathlib import Path

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from test_tensors_project import _findings, _marked

PROJECT = {
    "padded.py": """
        import torch.nn as nn
        import torch.nn.functional as F


        class PadThenConv(nn.Module):
            def __init__(self, cin, cout, size, stride=1, bias=True, groups=1, **unused):
                super().__init__()
                self.op = nn.Conv2d(cin, cout, size, stride=stride, bias=bias, groups=groups)
                self.size = size

            def forward(self, x):
                half = self.size // 2
                x = F.pad(x, [half, half, half, half])
                x = self.op(x)
                return x


        class FixedConv(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.op = nn.Conv2d(cin, cout, 3)

            def forward(self, x):
                return self.op(x)


        class HalvedConv(nn.Module):
            def __init__(self, cin, cout, bias=True):
                super().__init__()
                self.op = nn.Conv2d(cin, cout, 3, bias=bias)

            def forward(self, x):
                return self.op(x) * 0.5


        class TwoConvs(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.first = nn.Conv2d(cin, cout, 1)
                self.second = nn.Conv2d(cout, cout, 1)

            def forward(self, x):
                return self.second(self.first(x))


        class OpenBias(nn.Module):
            def __init__(self, cin, cout, bias):
                super().__init__()
                self.op = nn.Conv2d(cin, cout, 1, bias=bias)

            def forward(self, x):
                return self.op(x)
    """,
    "heads.py": """
        import torch.nn as nn
        from padded import FixedConv, HalvedConv, OpenBias, PadThenConv, TwoConvs


        class Neck(nn.Module):
            def __init__(self, c, flag):
                super().__init__()
                self.reduce = nn.Sequential(
                    PadThenConv(c, c, 1),  #!
                    nn.BatchNorm2d(c),
                )
                self.fixed = nn.Sequential(FixedConv(c, c), nn.BatchNorm2d(c))  #!
                self.off = nn.Sequential(PadThenConv(c, c, 3, bias=False), nn.BatchNorm2d(c))
                self.scaled = nn.Sequential(HalvedConv(c, c), nn.BatchNorm2d(c))
                self.double = nn.Sequential(TwoConvs(c, c), nn.BatchNorm2d(c))
                self.between = nn.Sequential(PadThenConv(c, c, 1), nn.ReLU(), nn.BatchNorm2d(c))
                self.open = nn.Sequential(OpenBias(c, c, flag), nn.BatchNorm2d(c))
                self.flat = nn.Sequential(PadThenConv(c, c, 1), nn.BatchNorm1d(c))
    """,
}


def test_a_module_wrapping_one_conv_is_that_conv(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF301") == _marked(PROJECT)


def test_the_fix_passes_the_wrappers_bias_parameter(tmp_path: Path) -> None:
    """Unsafe, as for ``nn.Conv2d``: ``bias=False`` added to the wrapper's call."""
    _findings(tmp_path, PROJECT, "TPF301")
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    found = {d.location.row: d.fix for r in results for d in r.diagnostics if d.code == "TPF301"}
    fix = found[9]
    assert fix is not None and fix.applicability.value == "unsafe"
    assert fix.message == "Pass `bias=False`"
    assert found[12] is not None and found[12].message != fix.message  # no bias parameter: it says what to change
