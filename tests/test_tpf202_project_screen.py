"""TPF202's project screen (``could_fire_project``): a module with neither a loop that may
train nor a step function the project calls from loops never reaches LibCST, and every
module the rule reports in passes it. Scratch project: a trainer module, a step method
called under a condition (reported inside the method), and look-alikes that sync in loops
that do not train, in step functions whose sync is guarded or follows an early return,
and in step functions nobody calls from a loop."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from pytorch_perflint.config import load_settings
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.rules.training.tpf202_host_sync_in_training_loop import HostSyncInTrainingLoop

from project_tree import write_project

from test_tensors_project import _findings, _marked

FILES = {
    "learner.py": """
        import torch

        class Learner:
            def __init__(self, net, opt):
                self.net = net
                self.opt = opt

            def learn(self, batch):
                loss = self.net(batch).mean()
                loss.backward()
                self.opt.step()
                return loss.item()  #!

            def careful(self, batch):
                loss = self.net(batch).mean()
                loss.backward()
                self.opt.step()
                if batch.verbose:
                    print(loss.item())

            def early(self, batch):
                if batch is None:
                    return 0.0
                loss = self.net(batch).mean()
                loss.backward()
                self.opt.step()
                return loss.item()

            def lonely(self, batch):
                loss = self.net(batch).mean()
                loss.backward()
                self.opt.step()
                return loss.item()
    """,
    "run.py": """
        import torch
        from learner import Learner

        net = build().cuda()
        agent = Learner(net, torch.optim.SGD(net.parameters(), lr=0.1))
        for t, batch in enumerate(stream):
            if t % 4 == 0:
                agent.learn(batch)
                agent.careful(batch)
                agent.early(batch)
        agent.lonely(first)
    """,
    "metrics.py": """
        import torch

        def summarise(outputs):
            total = 0.0
            for out in outputs:
                total += out.sum().item()
                print("seen %d" % len(out))
            return total

        def report(batches):
            for batch in batches:
                summarise(batch)

        def refresh(optimizer):
            optimizer.step()

        class Scheduler:
            def step(self):
                self.rate = float(self.rate * 0.5)

        def decay(scheduler, epochs):
            for _ in range(epochs):
                scheduler.step()
                print(scheduler.rate.item())
    """,
    "train.py": """
        import torch

        model = build().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            total += loss.item()  #!
    """,
}


def _screens(root: Path) -> dict:
    index = ProjectIndex(str(root), load_settings([root]))
    out = {}
    for name in FILES:
        path = str(root / name)
        tree = ast.parse((root / name).read_text())
        assert HostSyncInTrainingLoop.could_fire_tree(tree), name  # every module reaches the project screen
        out[name] = HostSyncInTrainingLoop.could_fire_project(tree, path, index)
    return out


def test_the_rule_reports_what_the_scratch_project_marks(tmp_path):
    assert _findings(tmp_path, FILES, "TPF202") == _marked(FILES)


def test_modules_with_no_training_loop_and_no_reported_step_function_are_screened_out(tmp_path):
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF202"]\n', **FILES})
    screens = _screens(tmp_path)
    assert screens["train.py"]  # a loop that trains
    assert screens["learner.py"]  # `learn` is called from a loop under a condition: reported inside
    assert not screens["metrics.py"]  # syncs in loops that do not train
    assert screens["run.py"]  # its loop trains through `agent.learn` (a sync there would count)


def test_step_functions_whose_sync_is_guarded_late_or_never_looped_are_screened_out(tmp_path):
    only = dict(FILES)
    learner = textwrap.dedent(FILES["learner.py"])
    start, end = learner.index("    def learn("), learner.index("    def careful(")
    only["learner.py"] = learner[:start] + learner[end:]  # careful, early, lonely remain
    only["run.py"] = FILES["run.py"].replace("agent.learn(batch)", "pass")
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF202"]\n', **only})
    index = ProjectIndex(str(tmp_path), load_settings([tmp_path]))
    tree = ast.parse((tmp_path / "learner.py").read_text())
    assert not HostSyncInTrainingLoop.could_fire_project(tree, str(tmp_path / "learner.py"), index)
    assert _findings(tmp_path / "again", only, "TPF202") == [("train.py", 9)]
