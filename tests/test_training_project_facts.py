"""The training family's facts from other modules (``project/call_values.py``, ``call_sites.py`` and
``eval_callers.py``): what a project helper's body does, where a step function is called,
and that a cached run sees a changed helper."""

from __future__ import annotations

import ast
import dataclasses
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.project.call_sites import loop_call_sites, plain_loop_call
from pytorch_perflint.project.call_values import body_facts, read_body, syncs_every_call, training_reach
from pytorch_perflint.project.values import engine_for
from pytorch_perflint.testing import FIXTURES


def _facts(source: str):
    return read_body(ast.parse(textwrap.dedent(source)).body[0], {"torch": "torch", "np": "numpy"})


def test_a_sync_counts_only_when_it_runs_on_every_call():
    assert _facts("def f(x):\n    with torch.no_grad():\n        return x.sum().item()\n").syncs == (3,)
    assert _facts("def f(x):\n    torch.cuda.synchronize()\n").syncs == (2,)
    assert _facts("def f(x, n):\n    if n % 10 == 0:\n        print(x.item())\n").syncs == ()
    assert _facts("def f(x, v):\n    if not v:\n        return\n    print(x.item())\n").syncs == ()
    assert _facts("def f(xs):\n    for x in xs:\n        x.item()\n").syncs == ()
    assert _facts("def f(x):\n    return x.item() if x.numel() == 1 else 0\n").syncs == ()
    assert _facts("def f(x):\n    return np.asarray(x).tolist()\n").syncs == ()  # a host value already
    assert _facts("def f(x):\n    return x.cpu().numpy().tolist()\n").syncs == (2,)  # one sync, not three


def _project(tmp_path: Path, files: dict) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_syncs_reach_through_the_project_functions_a_helper_calls(tmp_path):
    root = _project(
        tmp_path,
        {
            "low.py": "def read(x):\n    return x.item()\n",
            "mid.py": "from low import read\n\ndef log(x):\n    print(read(x))\n\ndef maybe(x, on):\n    if on:\n        read(x)\n",
        },
    )
    index = ProjectIndex(root)
    assert syncs_every_call(engine_for(index), index.resolve(str(root / "mid.py"), "log"))
    assert not syncs_every_call(engine_for(index), index.resolve(str(root / "mid.py"), "maybe"))


def test_where_a_step_method_is_called_from_a_loop(tmp_path):
    root = _project(
        tmp_path,
        {
            "agent.py": "class Agent:\n    def learn(self, b):\n        b.loss().backward()\n        return 1\n",
            "main.py": """\
                from agent import Agent
                agent = Agent()
                other = {}
                for t in range(10):
                    if t % 4 == 0:
                        agent.learn(t)
                    agent.learn(t)
                    other.learn(t)
                for t in range(10):
                    state = env.step(agent.act())
                    agent.learn(t)
            """,
        },
    )
    index = ProjectIndex(root)
    sites = loop_call_sites(engine_for(index), index.resolve(str(root / "agent.py"), "Agent.learn"))
    main = str(root / "main.py")
    assert sorted(line for _, line, _ in sites) == [6, 7, 11]  # not `other.learn`: `other` is not an Agent
    assert [plain_loop_call(index, main, line, "learn") for line in (6, 7, 11)] == [False, True, False]


def test_a_helper_read_again_when_its_file_changes(tmp_path):
    root = _project(tmp_path, {"h.py": "def f(x):\n    return x.item()\n"})
    index = ProjectIndex(root)
    definition = index.resolve(str(root / "h.py"), "f")
    assert body_facts(engine_for(index), definition).syncs == (2,)
    (root / "h.py").write_text("def f(x):\n    return x.detach()  # no sync any more\n")
    definition = index.resolve(str(root / "h.py"), "f")
    assert body_facts(engine_for(index), definition).syncs == ()


def _check(root: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", "check", "--select", "TPF202", "--output-format", "concise", str(root)],
        capture_output=True, text=True, cwd=root,
    ).stdout


def test_a_cached_run_sees_that_a_helper_in_another_module_stopped_syncing(tmp_path):
    root = tmp_path / "trainer_class"
    shutil.copytree(FIXTURES / "projects" / "trainer_class", root)
    first = _check(root)
    assert "train_metered.py:23:" in first  # meter.add(...) calls .cpu() in metrics.py
    assert (root / ".pytorch_perflint_cache").exists()  # the second run goes through the cache
    metrics = root / "metrics.py"
    metrics.write_text(metrics.read_text().replace("float(value.detach().cpu().numpy())", "value.detach()"))
    second = _check(root)
    assert "train_metered.py:23:" not in second
    assert "train_metered.py:28:" in second  # the rest of the file's findings are still there


def _tpf203_lines(root: Path, name: str) -> List[int]:
    settings = dataclasses.replace(load_settings([root]), select=("TPF203",))
    results, _ = runner.run([root / name], settings, jobs=1)
    return sorted(d.location.row for r in results for d in r.diagnostics)


# ``validate`` only gets the module past TPF203's text screen.
_HELPER = (
    "def run_batches(model, loader):\n    outs = []\n    for x in loader:\n        outs.append(model(x))\n    return outs\n"
    "def validate(x):\n    return x\n"
)


@pytest.mark.parametrize(
    "eval_mode",
    [
        "model.eval()",
        "model.train(mode=False)",
        "(model .  # back to inference\n    eval)( )",  # comments and spaces around the dot
        "model.\\\n    train(False)",
        "model.ｅval()",  # Python reads identifiers in NFKC form: this is model.eval()
    ],
    ids=["eval", "train-false", "spaced", "continued", "nfkc"],
)
def test_callers_text_test_keeps_every_spelling_of_eval_mode(tmp_path, eval_mode):
    """``callers_evaluate`` asks the project-wide query only where some module's text could
    hold a passing call: every way of writing ``.eval()`` must get through that test."""
    caller = f"import torch\nfrom helpers import run_batches\nmodel = torch.nn.Linear(2, 2)\n{eval_mode}\nrun_batches(model, [])\n"
    root = _project(tmp_path, {"helpers.py": _HELPER, "infer.py": caller})
    assert _tpf203_lines(root, "helpers.py") == [3]


@pytest.mark.parametrize(
    "caller",
    [
        # The helper's name and an eval() in the text, but no call of it in the code.
        "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\n# run_batches(model, [])\n",
        # Called with a model that was never put in eval mode.
        "import torch\nfrom helpers import run_batches\nmodel = torch.nn.Linear(2, 2)\nrun_batches(model, [])\n",
    ],
)
def test_callers_that_cannot_pass_leave_a_helper_unreported(tmp_path, caller):
    root = _project(tmp_path, {"helpers.py": _HELPER, "infer.py": caller})
    assert _tpf203_lines(root, "helpers.py") == []


def _tpf203_project_screen(root: Path, name: str) -> bool:
    from pytorch_perflint.registry import rule_by_code

    path = root / name
    index = ProjectIndex(str(root), load_settings([root]))
    return rule_by_code("TPF203").could_fire_project(ast.parse(path.read_text()), str(path), index)


@pytest.mark.parametrize(
    ("caller", "passes"),
    [
        ("import torch\nfrom helpers import run_batches\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\nrun_batches(model, [])\n", True),
        ("import torch\nfrom helpers import run_batches\nmodel = torch.nn.Linear(2, 2)\nrun_batches(model, [])\n", False),
        ("import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\n# run_batches(model, [])\n", False),
    ],
    ids=["caller-evaluates", "caller-trains", "no-call"],
)
def test_project_screen_keeps_a_model_helper_only_when_a_caller_could_evaluate(tmp_path, caller, passes):
    """Before LibCST, the project says whether a helper that evaluates only through its
    model parameter has callers that put the model in eval mode; the screen agrees with the
    rule on both sides."""
    root = _project(tmp_path, {"helpers.py": _HELPER, "infer.py": caller})
    assert _tpf203_project_screen(root, "helpers.py") is passes
    assert bool(_tpf203_lines(root, "helpers.py")) is passes


def test_a_model_helper_that_is_not_module_level_never_passes_the_screen():
    """Only a module-level function's callers are asked (the rule's ``frame.owner``): a
    method or a nested function whose loop calls only its model parameter cannot fire."""
    from pytorch_perflint.registry import rule_by_code

    rule = rule_by_code("TPF203")
    method = "class Runner:\n    def run_batches(self, model, loader):\n        for x in loader:\n            model(x)\n"
    nested = "def outer():\n    def run_batches(model, loader):\n        for x in loader:\n            model(x)\n"
    top = "def run_batches(model, loader):\n    for x in loader:\n        model(x)\n"
    named = "def validate(x):\n    pass\n"  # gets a module past the first test of the screen
    assert rule.could_fire(method + named)
    assert not rule.could_fire_tree(ast.parse(method + named))
    assert not rule.could_fire_tree(ast.parse(nested + named))
    assert rule.could_fire_tree(ast.parse(top + named))


def test_a_module_summary_keeps_its_words_only_when_it_calls_eval_or_train():
    """The caller pre-check reads each module's words from its summary (no text is read
    again per helper): only modules whose code could put a model in eval mode keep them."""
    from pytorch_perflint.project import summarize
    from pytorch_perflint.facts.training.eval_callers import MODE_WORDS

    evaluating = summarize(None, "from helpers import run_batches\nmodel.eval()\nrun_batches(model, [])\n")
    assert {"run_batches", "model", "eval"} <= set(evaluating.extra(MODE_WORDS))
    assert summarize(None, "def constraint(x):\n    return evaluate(x)\n").extra(MODE_WORDS) is None
    assert summarize(None, "model.ｅval()\nrun_batches(model)\n").extra(MODE_WORDS) is not None  # NFKC


def test_training_reach_follows_project_calls_and_tells_one_step_from_an_epoch(tmp_path):
    root = _project(
        tmp_path,
        {
            "optim.py": "def backward_and_step(loss, opt):\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
            "ppo.py": (
                "from optim import backward_and_step\n\n"
                "def ppo_step(net, opt, x, l2):\n    loss = net(x).mean()\n    for p in net.parameters():\n"
                "        loss = loss + p.pow(2).sum() * l2\n    backward_and_step(loss, opt)\n\n"
                "def epoch(net, opt, loader):\n    for x in loader:\n        ppo_step(net, opt, x, 0.0)\n\n"
                "def own_epoch(net, opt, loader):\n    for x in loader:\n        net(x).mean().backward()\n        opt.step()\n\n"
                "def log(x):\n    print(x)\n"
            ),
        },
    )
    index = ProjectIndex(root)
    ppo = str(root / "ppo.py")
    assert training_reach(engine_for(index), index.resolve(ppo, "ppo_step")) is False  # one step; the loop is over parameters
    assert training_reach(engine_for(index), index.resolve(ppo, "epoch")) is True  # calls a step in a loop
    assert training_reach(engine_for(index), index.resolve(ppo, "own_epoch")) is True
    assert training_reach(engine_for(index), index.resolve(ppo, "log")) is None


# TRPO's shape (Khrylx/PyTorch-RL, core/trpo.py): the critic's backward runs only inside a
# callback handed to SciPy's L-BFGS, whose values must be on the host.
_TRPO = (
    "import scipy.optimize\nfrom scipy import optimize\n\n"
    "def trpo_step(net, x):\n"
    "    def value_loss(flat):\n        loss = net(x).mean()\n        loss.backward()\n"
    "        return loss.item(), flat\n"
    "    flat, _, _ = scipy.optimize.fmin_l_bfgs_b(value_loss, net.flat().detach().cpu().numpy(), maxiter=25)\n"
    "    return flat\n\n"
    "def fit_lambda(net, x):\n"
    "    def value_loss(flat):\n        net(x).mean().backward()\n        return 0.0\n"
    "    return optimize.minimize(lambda f: value_loss(f), x.cpu().numpy())\n\n"
    "def both(net, opt, x):\n"
    "    def value_loss(flat):\n        net(x).mean().backward()\n        return 0.0\n"
    "    scipy.optimize.minimize(value_loss, x.cpu().numpy())\n    net(x).mean().backward()\n    opt.step()\n\n"
    "def closure_step(net, opt, x):\n"
    "    def closure():\n        loss = net(x).mean()\n        loss.backward()\n        return loss\n"
    "    opt.step(closure)\n"
)


def test_a_backward_only_in_a_callback_handed_to_scipy_is_no_training_step(tmp_path):
    root = _project(tmp_path, {"trpo.py": _TRPO})
    index = ProjectIndex(root)
    trpo = str(root / "trpo.py")
    assert training_reach(engine_for(index), index.resolve(trpo, "trpo_step")) is None
    assert training_reach(engine_for(index), index.resolve(trpo, "fit_lambda")) is None
    assert training_reach(engine_for(index), index.resolve(trpo, "both")) is False  # trains itself too
    assert training_reach(engine_for(index), index.resolve(trpo, "closure_step")) is False  # torch's closure


def test_a_loop_around_a_scipy_fitted_update_is_no_step_loop(tmp_path):
    """Khrylx/PyTorch-RL's examples/trpo_gym.py:108: ``update_params(batch)`` syncs (the
    parameters SciPy's L-BFGS starts from) but runs no per-step training; TPF202 stays quiet."""
    root = _project(
        tmp_path,
        {
            "trpo.py": _TRPO,
            "main.py": (
                "import torch\nfrom trpo import trpo_step\n\n"
                "def update_params(batch):\n    trpo_step(net, batch.cuda())\n\n"
                "def main_loop(agent):\n    for i in range(100):\n        update_params(agent.collect())\n"
                "        torch.cuda.empty_cache()\n"
            ),
        },
    )
    settings = dataclasses.replace(load_settings([root]), select=("TPF202", "TPF206"))
    results, _ = runner.run([root / "main.py"], settings, jobs=1)
    assert [(d.code, d.location.row) for r in results for d in r.diagnostics] == []
