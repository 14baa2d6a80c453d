"""TPF602 optimizer-not-fused."""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.ast_index import ast_dotted, tree_index
from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import argument
from ...rule import Invalid, Rule, Valid
from ...types import Applicability

# Optimizer -> the first torch release with a fused CUDA implementation.
_FUSED_SINCE = {"torch.optim.Adam": (1, 13), "torch.optim.AdamW": (2, 0), "torch.optim.SGD": (2, 3)}
_OPTIMIZERS = frozenset(name.rsplit(".", 1)[-1] for name in _FUSED_SINCE)
_CUDA = "import torch\nmodel = Net().cuda()\n"
# What the optimizer does without `fused=`: the default implementation on CUDA.
_FOREACH = "the default `foreach` update (several kernel launches per step)"
_FOR_LOOP = "a Python loop over the parameters (the default before torch 2.0)"


class OptimizerNotFused(Rule):
    """## What it does
    Flags `torch.optim.Adam`, `AdamW` and `SGD` built in a module that uses CUDA without
    `fused=` or `foreach=`. Silent when the value may come from an unknown `**kwargs`, with
    `differentiable=`, in CPU-only modules, and when `target-torch-version` predates the
    fused CUDA implementation (Adam 1.13, AdamW 2.0, SGD 2.3). An explicit `foreach=` is
    the author's choice of implementation and is left alone.

    ## Why is this bad?
    Since torch 2.0 these optimizers already default to the `foreach` implementation on
    CUDA, which updates a list of tensors per kernel but still launches several kernels per
    step (one per arithmetic operation of the update, for every chunk of parameters). The
    `fused=True` implementation does the whole update (and AMP's unscaling and inf check) in
    one kernel per chunk of parameters, which makes the optimizer step markedly faster for
    models with many parameter tensors. `fused` is not the default yet only because PyTorch
    gives it time to bake. (Before 2.0 the default was a Python loop over the parameters,
    slower still.)

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    ```

    ## Fix safety
    The fix adds `fused=True`, only where `target-torch-version` has the fused
    implementation of that optimizer. It is unsafe: the fused kernels need every parameter
    to be a floating-point tensor on a supported device (CUDA; the CPU only from 2.4), do
    not support sparse gradients or `differentiable=True`, and round slightly differently.
    """

    code = "TPF602"
    name = "optimizer-not-fused"
    message = (
        "`{name}` without `fused=` runs {default}; pass `fused=True` to do the whole update "
        "in one fused kernel per parameter chunk on CUDA"
    )
    fix_applicability = Applicability.UNSAFE
    triggers = ("Adam", "SGD")
    needs_cuda = True
    preview = True

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code calls one of the optimizers by its name or an import alias of it (the
        visitor resolves a call's name through imports only; torch's own `class Adam` or
        `isinstance(opt, Adam)` is not a call of it)."""
        index = tree_index(tree)
        if index.identifiers.isdisjoint(_OPTIMIZERS):
            return False
        names = set(_OPTIMIZERS)
        names.update(a.asname for node in index.imports for a in node.names if a.asname and a.name.rsplit(".", 1)[-1] in _OPTIMIZERS)
        return any(ast_dotted(call.func).rsplit(".", 1)[-1] in names for call in index.calls)

    VALID = (
        "import torch\nopt = torch.optim.Adam(model.parameters())\n",
        _CUDA + "opt = torch.optim.Adam(model.parameters(), fused=True)\n",
        _CUDA + "opt = torch.optim.AdamW(model.parameters(), foreach=False)\n",
        _CUDA + "opt = torch.optim.SGD(model.parameters(), **opt_kwargs)\n",
        _CUDA + "opt = torch.optim.RMSprop(model.parameters())\n",
        Valid(_CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n", {"target-torch-version": "2.2"}),
        _CUDA + "from mylib import Adam\nopt = Adam(model.parameters())\n",
    )
    INVALID = (
        Invalid(
            _CUDA + "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n",
            line=3,
            expected_fix=_CUDA + "opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)\n",
        ),
        Invalid(
            _CUDA + "from torch.optim import AdamW as AW\nopt = AW(\n    model.parameters(),\n    lr=1e-3,\n)\n",
            line=4,
            expected_fix=_CUDA + "from torch.optim import AdamW as AW\nopt = AW(\n    model.parameters(),\n"
            "    lr=1e-3,\n    fused=True,\n)\n",
        ),
        Invalid(_CUDA + "kw = {'lr': 0.1}\nopt = torch.optim.sgd.SGD(model.parameters(), **kw)\n", line=4),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.context.qualname(node.func)
        since = _FUSED_SINCE.get(qualname or "")
        if since is None or self.context.settings.target_torch_version < since:
            return
        lookup = self.context.lookup
        for keyword in ("fused", "foreach", "differentiable"):
            if not argument(node, keyword, None, lookup).missing:
                return
        fixed = with_keywords(node, [keyword_arg("fused", cst.Name("True"))])
        fix = self.fix([(node, fixed)], "Pass `fused=True`")
        default = _FOREACH if self.context.settings.target_torch_version >= (2, 0) else _FOR_LOOP
        self.report(node, message=self.message.format(name=qualname.rsplit(".", 1)[-1], default=default), fix=fix)
