"""TPF203: a loop calling a method named for evaluation and handed data
(``runner.eval(x, y)``) whose own body puts its object's model in eval mode and runs it
outside no-grad is an evaluation loop, reported at its own header; the epoch loop around
it trains through ``runner.train(x, y)`` (a project step) and is no evaluation loop.
Look-alikes: a method that runs the model under ``no_grad``, one that never calls
``.eval()`` or calls it only under a condition, and a loop that also trains."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_RUNNER = """
    import torch

    class runner:
        def __init__(self, model, lr, device):
            self.model = model.to(device)
            self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
            self.careful = False

        def train(self, x, y):
            self.model.train()
            self.opt.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            return loss.item()

        def eval(self, x, y):
            self.model.eval()
            return torch.nn.functional.mse_loss(self.model(x), y).item()

        def evaluate_quietly(self, x, y):
            self.model.eval()
            with torch.no_grad():
                return torch.nn.functional.mse_loss(self.model(x), y).item()

        def predict(self, x):
            return self.model(x)

        def validate(self, x, y):
            if self.careful:
                self.model.eval()
            return torch.nn.functional.mse_loss(self.model(x), y).item()
"""

FILES = {
    "fitting/__init__.py": "",
    "fitting/runner.py": _RUNNER,
    "main.py": """
        import torch
        from fitting.runner import runner
        from fitting.nets import build

        def main(loader, val_loader, epochs):
            device = torch.device("cuda")
            job = runner(build(), 1e-3, device)
            for epoch in range(epochs):
                for x, y in loader:
                    job.train(x.to(device), y.to(device))
                scores = []
                for x, y in val_loader:  #!
                    scores.append(job.eval(x.to(device), y.to(device)))
                for x, y in val_loader:
                    scores.append(job.evaluate_quietly(x.to(device), y.to(device)))
                    scores.append(job.predict(x.to(device)))
                    scores.append(job.validate(x.to(device), y.to(device)))
                for x, y in loader:
                    job.train(x.to(device), y.to(device))
                    scores.append(job.eval(x.to(device), y.to(device)))
            return scores
    """,
    "fitting/nets.py": """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 1)

            def forward(self, x):
                return self.fc(x)

        def build():
            return Net()
    """,
}


def test_an_evaluating_method_of_a_trainer_object_makes_its_loop_an_evaluation_loop(tmp_path: Path):
    assert _findings(tmp_path, FILES, "TPF203") == sorted((Path(n).name, r) for n, r in _marked(FILES))
