"""TPF403: a script whose loop trains through a project trainer's ``train`` method handed
data (``job.train(x, y)``, ``job = fitter(...)``: a class spelled in lower case) trains the
convolutional model that trainer builds; reported where the script makes the trainer, as
for any trainer object. Look-alikes: the same trainer driven only by ``job.check(x, y)``
(no training) and a script that sets ``cudnn.benchmark``."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_FITTER = """
    import torch
    import torch.nn as nn

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)

        def forward(self, x):
            return self.conv(x).mean()

    class fitter:
        def __init__(self, lr, device):
            self.model = ConvNet()
            self.model.to(device)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)

        def train(self, x, y):
            self.opt.zero_grad()
            loss = (self.model(x) - y).pow(2)
            loss.backward()
            self.opt.step()
            return loss.item()

        def check(self, x, y):
            return (self.model(x) - y).pow(2).item()
"""

_SCRIPT = """
    import argparse
    import torch
    from fitter import fitter

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()

    def main():
        device = torch.device(args.device)
        job = fitter(0.1, device)  #!
        for x, y in batches():
            job.train(x.to(device), y.to(device))

    main()
"""

TRAINED = {"fitter.py": _FITTER, "main.py": _SCRIPT}
CHECKED = {"fitter.py": _FITTER, "main.py": _SCRIPT.replace("job.train(", "job.check(").replace("  #!", "")}
TUNED = {
    "fitter.py": _FITTER,
    "main.py": _SCRIPT.replace("import torch\n", "import torch\ntorch.backends.cudnn.benchmark = True\n", 1).replace("  #!", ""),
}


def test_a_trainer_driven_by_train_with_data_trains_its_conv_model(tmp_path: Path):
    assert _findings(tmp_path, TRAINED, "TPF403") == sorted((Path(n).name, r) for n, r in _marked(TRAINED))


def test_a_trainer_only_checked_or_a_tuned_script_stays_silent(tmp_path: Path):
    assert _findings(tmp_path / "checked", CHECKED, "TPF403") == []
    assert _findings(tmp_path / "tuned", TUNED, "TPF403") == []
