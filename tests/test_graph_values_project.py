"""TPF205 asks the value engine what a call returns (issue 23, new-rules-4's misses): a loss
that travels through a method's return (``cost = model.train_model(X, Y)`` returning
``self.cost``, the criterion's output), through attributes and project functions of any
module, is a ``GraphTensor`` (``project/autograd_values.py``). Each case is a small project
whose marked lines (``#!``) are the findings; the look-alikes beside them (a loss made under
no-grad, converted, or returned by a method that converts it) stay silent."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

CASES = {
    # deeplearningzerotoall: the model class trains itself and returns its cost; the module
    # imports `torch` twice (`import torch.nn.init` binds `torch` too).
    "method-returns-its-cost": {"lab.py": """
        import torch
        import torch.nn.init

        class CNN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 2)
                self.criterion = torch.nn.CrossEntropyLoss()
                self.optimizer = torch.optim.Adam(self.parameters())

            def forward(self, x):
                return self.fc(x)

            def train_model(self, x, y):
                self.optimizer.zero_grad()
                self.cost = self.criterion(self.forward(x), y)
                self.cost.backward()
                self.optimizer.step()
                return self.cost

            def eval_cost(self, x, y):
                with torch.no_grad():
                    self.val_cost = self.criterion(self.forward(x), y)
                return self.val_cost

            def cost_value(self, x, y):
                return self.train_model(x, y).item()

        model = CNN().to("cuda")
        for epoch in range(3):
            avg_cost = 0
            val_total = 0
            values = 0
            for X, Y in loader:
                cost = model.train_model(X, Y)
                avg_cost += cost / 10  #!
                val_total += model.eval_cost(X, Y)
                values += model.cost_value(X, Y)
            print(avg_cost, val_total, values)
    """},
    # A step method of another module (named like one, so the text screen lets it through),
    # whose loss comes from a functional loss kept in a local name; a no-grad evaluation
    # helper and a helper that detaches stay silent.
    "step-method-of-another-module": {
        "trainer.py": """
            import torch
            import torch.nn.functional as F

            class Trainer:
                def __init__(self, model, opt):
                    self.model = model
                    self.opt = opt

                def train_step(self, x, y):
                    self.opt.zero_grad()
                    loss = F.cross_entropy(self.model(x), y) * 0.5
                    loss.backward()
                    self.opt.step()
                    return loss

                @torch.no_grad()
                def eval_step(self, x, y):
                    return F.cross_entropy(self.model(x), y)

                def logged_step(self, x, y):
                    return self.train_step(x, y).detach()
        """,
        "run.py": """
            import torch
            from trainer import Trainer

            trainer = Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1))
            total = 0.0
            val = 0.0
            logged = 0.0
            for x, y in loader:
                loss = trainer.train_step(x, y)
                total += loss  #!
                val += trainer.eval_step(x, y)
                logged += trainer.logged_step(x, y)
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_loss_returned_by_project_code_is_a_graph(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF205") == _marked(files)


def test_a_notebook_in_a_project_reads_its_own_cells(tmp_path):
    """A notebook linted in a project: the engine reads its code cells (the class of one
    cell, the loop of another), not its JSON, which no summary can be made of."""
    import json

    from test_cache_project import _findings as _cli_findings

    cells = [
        "import torch\nimport torch.nn.init\n\nclass CNN(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n"
        "        self.criterion = torch.nn.CrossEntropyLoss()\n        self.optimizer = torch.optim.Adam(self.parameters())\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n    def train_model(self, x, y):\n"
        "        self.optimizer.zero_grad()\n        self.cost = self.criterion(self.forward(x), y)\n"
        "        self.cost.backward()\n        self.optimizer.step()\n        return self.cost\n",
        "model = CNN().to('cuda')\navg_cost = 0\nfor X, Y in loader:\n    cost = model.train_model(X, Y)\n"
        "    avg_cost += cost / 10\n",
    ]
    book = {
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF205"]\n')
    (tmp_path / "helpers.py").write_text("def unused():\n    return 0\n")
    (tmp_path / "lab.ipynb").write_text(json.dumps(book))
    assert _cli_findings(tmp_path, ".", "--no-cache") == [("lab.ipynb", 5, "TPF205")]


def test_import_torch_beside_import_of_a_submodule_is_one_binding(tmp_path):
    """``import torch`` and ``import torch.nn.init`` both bind ``torch`` to the package: the
    name resolves (it was unknown, and with it every project class deriving from
    ``torch.nn.Module``); ``import torch`` beside ``import numpy as torch`` stays unknown."""
    from project_tree import index_of

    index = index_of(tmp_path, {
        "a.py": "import torch\nimport torch.nn.init\n\nclass Net(torch.nn.Module):\n    pass\n",
        "b.py": "import torch\nimport numpy as torch\n",
    })
    net = index.resolve(str(tmp_path / "a.py"), "Net")
    assert net is not None and index.is_nn_module(net)
    assert index.resolve(str(tmp_path / "a.py"), "torch.nn.Module").qualname == "torch.nn.Module"
    assert index.resolve(str(tmp_path / "b.py"), "torch") is None
