"""TPF202: a step function reached from the training loop through another step function.

RULES.md makes a function that runs backward or an optimizer step and is called from a
loop a loop body, anchored at each sync. A GAN learner's ``gen_step()`` (called every
generator step) calls ``self.push_gen()``, which runs ``loss.backward()`` and then keeps
host copies of its losses: each of those syncs is reported where it stands, and the call
``self.push_gen()`` is not (it would report the same syncs twice). A helper that trains
nothing keeps its anchor at the call. Look-alikes: a step function its caller runs only
every N calls, one run by a step function that is itself called once (warm-up), one run
by the epoch function after its loop, and a plain per-step call of the outer step
function, which is reported at that call in the loop (the syncs once, there).

Also ``engine.train(x, y)``: a loop that trains through a project trainer's method named
``train`` (handed data: not ``nn.Module.train(mode)``), on the device an argparse default
names (``--device cuda:1``), reports the call, as for any step function called plainly;
``net.train(was_training)`` and a trainer's call after the loop stay silent.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pytorch_perflint.config import load_settings
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.rules.training.tpf202_host_sync_in_training_loop import HostSyncInTrainingLoop

from project_tree import write_project
from test_tensors_project import _findings, _marked


def _expected(files):
    """The marked lines, by file name as ``_findings`` gives them."""
    return sorted((Path(name).name, row) for name, row in _marked(files))

_LEARNER = """
    import torch

    class PairLearner:
        def __init__(self, gen, disc, g_opt, d_opt):
            self.gen, self.disc = gen, disc
            self.g_opt, self.d_opt = g_opt, d_opt
            self.ticks = 0

        def disc_step(self, real):
            self.d_opt.zero_grad()
            loss = self.disc(real).mean() - self.disc(self.gen(real)).mean()
            loss.backward()
            self.d_opt.step()
            self.d_seen = loss.item()  #!

        def gen_step(self, real):
            self.g_opt.zero_grad()
            self.push_gen(real)
            self.watch(real)  #!
            self.ticks += 1
            if self.ticks % 50 == 0:
                self.push_logged(real)
            self.g_opt.step()

        def push_gen(self, real):
            adv = -self.disc(self.gen(real)).mean()
            rec = (self.gen(real) - real).abs().mean()
            total = adv + rec
            total.backward()
            self.adv_seen = adv.item()  #!
            self.rec_seen = rec.cpu()  #!
            self.total_seen = total.item()  #!

        def push_logged(self, real):
            loss = self.gen(real).mean()
            loss.backward()
            self.logged = loss.item()

        def watch(self, real):
            self.watched = real.mean().item()

        def warm_up(self, real):
            self.g_opt.zero_grad()
            self.push_warm(real)
            self.g_opt.step()

        def push_warm(self, real):
            loss = self.gen(real).pow(2).mean()
            loss.backward()
            self.warm_seen = loss.item()
"""

_STEPS = """
    def g_update(parts, real):
        parts.opt.zero_grad()
        apply_gen(parts, real)
        parts.opt.step()

    def apply_gen(parts, real):
        compute_gen(parts, real)

    def compute_gen(parts, real):
        loss = parts.gen(real).mean()
        loss.backward()
        parts.last = loss.item()  #!

    def settle(parts, real):
        loss = parts.gen(real).mean()
        loss.backward()
        parts.final = loss.item()

    def epoch(parts, loader):
        for it, real in enumerate(loader):
            if it % 2 == 0:
                g_update(parts, real.cuda())
        settle(parts, real.cuda())
"""

CHAINED = {
    "gan/__init__.py": "",
    "gan/learner.py": _LEARNER,
    "gan/steps.py": _STEPS,
    "run.py": """
        import torch
        from gan.learner import PairLearner

        learner = PairLearner(make_gen().cuda(), make_disc().cuda(), g_opt, d_opt)
        learner.warm_up(first.cuda())
        for it, real in enumerate(loader):
            real = real.cuda()
            if it % 3 != 0:
                learner.disc_step(real)
            else:
                learner.gen_step(real)
    """,
}

PLAIN = {
    "gan/__init__.py": "",
    "gan/learner.py": _LEARNER.replace("  #!", ""),
    "run.py": """
        import torch
        from gan.learner import PairLearner

        learner = PairLearner(make_gen().cuda(), make_disc().cuda(), g_opt, d_opt)
        for real in loader:
            learner.gen_step(real.cuda())  #!
    """,
}

_TEACHER = """
    import torch

    class teacher:
        def __init__(self, model, lr, device):
            self.model = model.to(device)
            self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

        def train(self, x, y):
            self.model.train()
            self.opt.zero_grad()
            loss = torch.nn.functional.l1_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            return loss.item(), (self.model(x) - y).abs().max().item()

        def check(self, x, y):
            self.model.eval()
            return torch.nn.functional.l1_loss(self.model(x), y).item()
"""

TRAINER = {
    "solver.py": _TEACHER,
    "main.py": """
        import argparse
        import torch
        from solver import teacher

        parser = argparse.ArgumentParser()
        parser.add_argument("--device", type=str, default="cuda:1")
        parser.add_argument("--lr", type=float, default=1e-3)
        args = parser.parse_args()

        def main():
            device = torch.device(args.device)
            job = teacher(build_net(), args.lr, device)
            for epoch in range(10):
                log = []
                for x, y in batches():
                    stats = job.train(torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))  #!
                    log.append(stats)
                for x, y in batches():
                    log.append(job.check(x.to(device), y.to(device)))

        main()
    """,
}

TRAINER_LOOKALIKES = {
    "solver.py": _TEACHER,
    "main.py": """
        import argparse
        import torch
        from solver import teacher

        parser = argparse.ArgumentParser()
        parser.add_argument("--device", type=str, default="cuda:1")
        args = parser.parse_args()

        def main(net, was_training):
            device = torch.device(args.device)
            job = teacher(net, 1e-3, device)
            for x, y in batches():
                net.train(was_training)
                net.train(False)
                log.append(job.check(x.to(device), y.to(device)))
            job.train(x.to(device), y.to(device))

        main(build_net(), True)
    """,
}


def test_a_step_function_run_by_a_loop_body_step_function_reports_its_own_syncs(tmp_path: Path):
    # push_gen runs backward and is run on every call of gen_step (called every
    # generator step): its three syncs, not `self.push_gen(real)`; `self.watch(real)`
    # trains nothing and keeps its anchor at the call; compute_gen is two calls below
    # g_update, a loop body of `epoch`. push_logged (every 50 calls), push_warm (its
    # caller runs once) and settle (after the loop) stay silent.
    assert _findings(tmp_path, CHAINED, "TPF202") == _expected(CHAINED)


def test_a_plainly_called_outer_step_reports_the_syncs_once_at_its_call(tmp_path: Path):
    assert _findings(tmp_path, PLAIN, "TPF202") == _expected(PLAIN)


def test_the_screen_lets_through_a_module_whose_only_loop_body_is_reached_through_a_caller(tmp_path: Path):
    files = {**CHAINED, "gan/learner.py": _LEARNER.replace("self.d_seen = loss.item()  #!", "pass")}
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF202"]\n', **files})
    index = ProjectIndex(str(tmp_path), load_settings([tmp_path]))
    path = tmp_path / "gan" / "learner.py"
    tree = ast.parse(path.read_text())
    assert HostSyncInTrainingLoop.could_fire_tree(tree)
    assert HostSyncInTrainingLoop.could_fire_project(tree, str(path), index)
    assert ("learner.py", 14) not in _expected(files)
    assert _findings(tmp_path / "again", files, "TPF202") == _expected(files)


def test_a_trainer_method_named_train_called_every_batch_reports_its_call(tmp_path: Path):
    assert _findings(tmp_path, TRAINER, "TPF202") == _expected(TRAINER)


def test_module_train_modes_sampled_and_final_trainer_calls_stay_silent(tmp_path: Path):
    assert _findings(tmp_path, TRAINER_LOOKALIKES, "TPF202") == []


SQUASHED = {
    "duo.py": """
        import torch

        class Duo:
            def __init__(self, critic, opt):
                self.critic, self.opt = critic, opt

            def critic_trainstep(self, real):
                self.opt.zero_grad()
                loss = self.critic(real).mean()
                loss.backward()
                self.opt.step()
                return loss.item()

            def get_timestep(self, real):
                return self.critic(real).mean().item()
    """,
    "loop.py": """
        import torch
        from duo import Duo

        duo = Duo(make_critic().cuda(), opt)
        for real in loader:
            real = real.cuda()
            seen = duo.critic_trainstep(real)  #!
        for real in loader:
            seen = duo.get_timestep(real.cuda())
    """,
}


def test_a_step_named_trainstep_in_one_word_trains_the_loop_that_calls_it(tmp_path: Path):
    assert _findings(tmp_path, SQUASHED, "TPF202") == _expected(SQUASHED)
