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


class OptimizerNotFused(Rule):
    """## What it does
    Flags `torch.optim.Adam`, `AdamW` and `SGD` built in a module that uses CUDA without
    `fused=` or `foreach=`. Silent when the value may come from an unknown `**kwargs`, with
    `differentiable=`, in CPU-only modules, and when `target-torch-version` predates the
    fused implementation (Adam 1.13, AdamW 2.0, SGD 2.3).

    ## Why is this bad?
    Without `fused=True` the optimizer updates parameters with several kernels per step
    (the `foreach` implementation, or one per parameter on older versions). The fused
    implementation does the whole update of all parameters in a few kernel launches,
    which makes the optimizer step markedly faster for models with many parameter
    tensors.

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    ```

    ## Fix safety
    The fix adds `fused=True`. It is unsafe: the fused kernels need every parameter to be a
    floating-point tensor on a supported device (CPU support came in 2.4), do not support
    sparse gradients or `differentiable=True`, and round slightly differently.
    """

    code = "TPF602"
    name = "optimizer-not-fused"
    message = "`{name}` without `fused=`; pass `fused=True` for a faster optimizer step on CUDA"
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
        self.report(node, message=self.message.format(name=qualname.rsplit(".", 1)[-1]), fix=fix)
