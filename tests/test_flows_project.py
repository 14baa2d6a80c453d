"""Value-flow mechanisms seen missing on whole repositories (issue 22, review-4), each on a
scratch project: the lines marked ``#!`` are reported, the look-alikes beside them are not.

* A module-level object that may be ``None`` (``Noise() if c else None``) and is changed in
  place later (``noise.scale = ...``, ``noise.reset()``) keeps its class: a method of it
  called through a public method's parameter still reads the class's method.
* A parameter rebound later in its function (``if c: loader = Wrap(loader)``) is still the
  callers' argument where it is read before the rebinding; after it, either may reach the
  read (their join); a closure reads its last value (unknown).
* A layer's output that goes one way or another through an ``if``/``else`` (``x =
  self.conv(x)``, then ``return self.act(self.bn(x))`` or ``return self.bn(x)``) feeds the
  layer every arm gives it to first.
* A list built by ``append`` statements in the block of its binding (``xs = []``,
  ``nn.ModuleList([])``), read after them, holds their items in order; an append in a
  branch or a loop, any other change or hand-off of the list, leaves its items unknown.
* A function that returns a tuple holding a parameter it did not rebind (``return model,
  loader``) gives, at each call, what that call passes for it in that place.
* A loop over a model's parameters (``.parameters()``, ``.named_parameters()``, a name
  bound once to ``list(...)`` of them) or an optimizer's ``param_groups`` runs on every
  call: a sync in it syncs on every call of the function. A loop over any other iterable
  may run no time.
"""

from __future__ import annotations

from pytorch_perflint.project.call_values import syncs_every_call
from pytorch_perflint.project.kinds import Instance
from pytorch_perflint.project.scopes import expression_form
from pytorch_perflint.project.values import engine_for

from project_tree import index_of
from test_tensors_project import _findings, _marked  # the same scratch-project scorer


NOISE = {
    "noise.py": """
        import numpy as np

        class Noise:
            def __init__(self, dim, scale=0.1):
                self.dim = dim
                self.scale = scale
                self.state = np.ones(dim)

            def reset(self):
                self.state = np.ones(self.dim)

            def sample(self):
                self.state = self.state + np.random.randn(self.dim)
                return self.state * self.scale

        class Other:
            def __init__(self, dim):
                self.dim = dim

            def reset(self):
                pass

            def sample(self):
                return [0.0] * self.dim
    """,
    "agent.py": """
        import torch

        class Agent:
            def act(self, state, noise=None):
                mu = torch.zeros(3)
                if noise is not None:
                    mu += torch.Tensor(noise.sample())  #!
                return mu

            def act_other(self, state, other=None):
                mu = torch.zeros(3)
                if other is not None:
                    mu += torch.Tensor(other.sample())
                return mu
    """,
    "main.py": """
        import sys
        from agent import Agent
        from noise import Noise, Other

        agent = Agent()
        noise = Noise(3) if len(sys.argv) > 1 else None
        other = Other(3) if len(sys.argv) > 1 else None
        for episode in range(10):
            noise.scale = 0.5
            noise.reset()
            other.reset()
            agent.act(None, noise)
            agent.act(None, None)
            agent.act(None)
            agent.act_other(None, other)
    """,
}


def test_an_object_that_may_be_none_keeps_its_class_when_changed_in_place(tmp_path):
    assert _findings(tmp_path, NOISE, "TPF401") == _marked(NOISE)


REBOUND = {
    "wrap.py": """
        class Wrap:
            def __init__(self, loader, device):
                self.loader = loader
                self.device = device

            def batches(self, loader):
                for x, y in loader:
                    x = x.cuda(self.device)  #!
                    yield x, y

            def __iter__(self):
                return self.batches(self.loader)


        def prepare(cfg, loader, device):
            if cfg.mix:
                loader = Wrap(loader, device)
            return loader


        def later(cfg, loader):
            def run():
                for x in loader:
                    x.cuda()
            if cfg.mix:
                loader = [1, 2]
            run()
            for x in loader:
                x.cuda()
    """,
    "train.py": """
        import torch
        from wrap import prepare, later

        def main(cfg, data):
            loader = torch.utils.data.DataLoader(data, pin_memory=True)
            loader = prepare(cfg, loader, 0)
            for x, y in loader:
                x = x.cuda()
            later(cfg, torch.utils.data.DataLoader(data, pin_memory=True))
    """,
}


def test_a_parameter_read_before_its_rebinding_is_the_callers_argument(tmp_path):
    assert _findings(tmp_path, REBOUND, "TPF104") == _marked(REBOUND)


BRANCHES = {
    "layers.py": """
        import torch.nn as nn

        class Reg(nn.Module):
            def __init__(self, c, relu=True):
                super().__init__()
                self.relu_on = relu
                self.conv = nn.Conv2d(c, c, 3)  #!
                self.bn = nn.BatchNorm2d(c)
                self.act = nn.ReLU()

            def forward(self, x):
                x = self.conv(x)
                if self.relu_on:
                    return self.act(self.bn(x))
                elif self.relu_on is None:
                    x = self.bn(x)
                    return x
                else:
                    return self.bn(x)

        class NoElse(nn.Module):
            def __init__(self, c, relu=True):
                super().__init__()
                self.relu_on = relu
                self.conv = nn.Conv2d(c, c, 3)
                self.bn = nn.BatchNorm2d(c)

            def forward(self, x):
                x = self.conv(x)
                if self.relu_on:
                    x = self.bn(x)
                return x

        class OtherArm(nn.Module):
            def __init__(self, c, relu=True):
                super().__init__()
                self.relu_on = relu
                self.conv = nn.Conv2d(c, c, 3)
                self.bn = nn.BatchNorm2d(c)
                self.act = nn.ReLU()

            def forward(self, x):
                x = self.conv(x)
                if self.relu_on:
                    return self.bn(x)
                else:
                    return self.act(x)

        class Tested(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = nn.Conv2d(c, c, 3)
                self.bn = nn.BatchNorm2d(c)

            def forward(self, x):
                x = self.conv(x)
                if x.mean() > 0:
                    return self.bn(x)
                else:
                    return self.bn(x)
    """,
}


def test_a_layer_output_through_every_arm_of_an_if_else_feeds_the_layer_each_arm_reads(tmp_path):
    assert _findings(tmp_path, BRANCHES, "TPF301") == _marked(BRANCHES)


APPENDED = {
    "main.py": """
        import numpy as np
        import torch


        def helper(values):
            values.insert(0, [1.0])


        def built():
            xs = []
            xs.append(np.zeros(3))
            xs.append([1.0, 2.0])
            a = torch.Tensor(xs[0])  #!
            b = torch.Tensor(xs[1])
            c = torch.Tensor(xs[-2])  #!
            for step in range(3):
                d = torch.Tensor(xs[0])  #!
            return a, b, c, d


        def conditional(flag):
            xs = []
            if flag:
                xs.append([1.0])
            xs.append(np.zeros(3))
            return torch.Tensor(xs[0])


        def handed():
            ys = [np.zeros(3)]
            helper(ys)
            return torch.Tensor(ys[0])


        def changed():
            zs = []
            zs.append(np.zeros(3))
            zs.insert(0, [1.0])
            return torch.Tensor(zs[0])


        def looped():  # every item the loop appends is an array
            ws = []
            for i in range(3):
                ws.append(np.zeros(3))
            return torch.Tensor(ws[0])  #!


        def later_in_loop():
            vs = [np.zeros(3)]
            for i in range(3):
                e = torch.Tensor(vs[0])
                vs.append([1.0])
                vs.reverse()
            return e
    """,
}


def test_items_of_a_list_built_by_appends_in_its_block(tmp_path):
    assert _findings(tmp_path, APPENDED, "TPF401") == _marked(APPENDED)


MODULES = {
    "losses.py": """
        import torch.nn as nn

        class Contrast(nn.Module):
            def forward(self, a, b, index):
                return (a - b).sum()
    """,
    "main.py": """
        import torch.nn as nn
        from losses import Contrast

        def run(criteria):
            first = criteria[0]
            third = criteria[2]
            return first, third

        def main():
            criteria = nn.ModuleList([])
            criteria.append(nn.CrossEntropyLoss())
            criteria.append(nn.KLDivLoss())
            criteria.append(Contrast())
            criteria.cuda()
            run(criteria)
    """,
}


def test_a_module_list_built_by_appends_reaches_a_callee_through_its_parameter(tmp_path):
    import ast
    import os

    index = index_of(tmp_path, MODULES)
    engine = engine_for(index)
    path = os.path.abspath(tmp_path / "main.py")
    definition = index.resolve(path, "run")
    where = engine._where_in(definition, 7)
    third = engine.answer(expression_form(ast.parse("third", mode="eval").body, where.scope), where).kind
    first = engine.answer(expression_form(ast.parse("first", mode="eval").body, where.scope), where).kind
    assert type(third) is Instance and third.klass.name == "Contrast"
    assert type(first) is not Instance


PARAMETER_LOOPS = {
    "stats.py": """
        import torch

        def grad_norm(model):
            total = 0.0
            for p in model.parameters():
                total += p.grad.norm().item()
            return total

        def named_norm(model):
            params = list(model.named_parameters())
            total = 0.0
            for i, (name, p) in enumerate(params):
                total += p.norm().item()
            return total

        def lr_of(optimizer):
            total = 0.0
            for group in optimizer.param_groups:
                total += group["params"][0].grad.norm().item()
            return total

        def norms_of(tensors):
            total = 0.0
            for t in tensors:
                total += t.norm().item()
            return total

        def filtered(model):
            total = 0.0
            for p in [q for q in model.parameters() if q.grad is not None]:
                total += p.norm().item()
            return total

        def shallow(model):
            total = 0.0
            for p in model.parameters(recurse=False):
                total += p.norm().item()
            return total

        def relisted(tokens):
            tokens = list(tokens)  # a parameter rebound from itself: read once, not forever
            total = 0.0
            for t in tokens:
                total += t.norm().item()
            return total
    """,
}


def test_a_sync_in_a_loop_over_parameters_runs_on_every_call(tmp_path):
    import os

    index = index_of(tmp_path, PARAMETER_LOOPS)
    engine = engine_for(index)
    path = os.path.abspath(tmp_path / "stats.py")
    every = {name: syncs_every_call(engine, index.resolve(path, name)) for name in ("grad_norm", "named_norm", "lr_of", "norms_of", "filtered", "shallow", "relisted")}
    assert every == {"grad_norm": True, "named_norm": True, "lr_of": True, "norms_of": False, "filtered": False, "shallow": False, "relisted": False}


TUPLES = {
    "helpers.py": """
        def setup(model, loader, lr):
            optimizer = [lr]
            return model, loader, optimizer


        def maybe_listed(model, loader):
            if model is None:
                loader = list(loader)
            return model, loader


        def swapped(model, loader):
            return loader, model
    """,
    "train.py": """
        import torch
        from helpers import setup, maybe_listed, swapped

        def main(net, data):
            loader = torch.utils.data.DataLoader(data, pin_memory=True)
            model, loader, opt = setup(net, loader, 0.1)
            for x, y in loader:
                x = x.cuda()  #!
            model, plain, opt = setup(net, [(1, 2)], 0.1)
            for x, y in plain:
                x = x.cuda()
            other = torch.utils.data.DataLoader(data, pin_memory=True)
            model, listed = maybe_listed(net, other)
            for x, y in listed:
                x = x.cuda()
            first, second = swapped(net, other)
            swapped(other, net)
            for x, y in second:
                x = x.cuda()
            for x, y in first:
                x = x.cuda()  #!
    """,
}


def test_a_returned_tuple_passes_a_parameter_through_per_call(tmp_path):
    assert _findings(tmp_path, TUPLES, "TPF104") == _marked(TUPLES)


TRAIN_WITH_PARAMETER_LOOPS = {
    **PARAMETER_LOOPS,
    "train.py": """
        from stats import grad_norm, named_norm, lr_of, norms_of, filtered, shallow


        def train(model, loader, optimizer):
            for x, y in loader:
                x = x.cuda()
                loss = model(x).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                g = grad_norm(model)  #!
                n = named_norm(model)  #!
                lr = lr_of(optimizer)  #!
                o = norms_of([loss])
                f = filtered(model)
                s = shallow(model)
    """,
}


def test_a_helper_syncing_in_a_loop_over_parameters_is_reported_in_the_training_loop(tmp_path):
    assert _findings(tmp_path, TRAIN_WITH_PARAMETER_LOOPS, "TPF202") == _marked(TRAIN_WITH_PARAMETER_LOOPS)
