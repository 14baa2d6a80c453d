"""TPF602 optimizer-not-fused."""

from __future__ import annotations

import ast
from typing import List

import libcst as cst

from ...analysis.walk import child_nodes
from ...analysis.ast_index import ast_dotted, tree_index
from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import Argument, argument
from ...context import FileContext
from ...rule import Invalid, Rule, Valid
from ...types import Applicability

# Optimizer -> the first torch release with a fused CUDA implementation.
_FUSED_SINCE = {"torch.optim.Adam": (1, 13), "torch.optim.AdamW": (2, 0), "torch.optim.SGD": (2, 3)}
# SGD's arguments (keyword, position) that give it state or extra kernels beyond `p -= lr * g`.
_SGD_STATE = (("momentum", 2), ("weight_decay", 4))
_EMBEDDINGS = frozenset({"Embedding", "EmbeddingBag", "embedding", "embedding_bag"})
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
    the author's choice of implementation and is left alone. Also silent for plain SGD
    (no `momentum`, or a literal 0, and no `weight_decay`, or a literal 0: its `foreach`
    step is already a single `_foreach_add_` kernel, so fusing buys nothing) and in a
    module that builds an embedding with `sparse=True` (`nn.Embedding(n, d, sparse=True)`):
    its gradients are sparse and the fused kernels raise on them. Only the optimizer's own
    module is read for that; an embedding built in another module is not seen.

    Preview, not on by default: on 63 public repositories it reached 0.94 precision on 146
    findings, below the 0.95 that graduation asks (6 of its 9 false positives were the
    plain SGD now left alone; the narrowing was designed on that sample and waits for a
    fresh one): [docs/precision/preview-graduation.md](precision/preview-graduation.md).

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
        Valid(_CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n", {"target-torch-version": "2.2"}),
        # plain SGD: its foreach step is already one kernel
        _CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        _CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0, weight_decay=0.0)\n",
        _CUDA + "opt = torch.optim.SGD(model.parameters(), 0.1, 0.0)\n",
        # sparse gradients: fused kernels raise on them
        _CUDA + "emb = torch.nn.Embedding(1000, 64, sparse=True).cuda()\n"
        + "opt = torch.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)\n",
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
        Invalid(_CUDA + "kw = {'lr': 0.1, 'momentum': 0.9}\nopt = torch.optim.sgd.SGD(model.parameters(), **kw)\n", line=4),
        Invalid(_CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=5e-4)\n", line=3),
        Invalid(_CUDA + "opt = torch.optim.SGD(model.parameters(), 0.1, 0.9)\n", line=3),
        # a momentum that is not known to be 0 counts as momentum
        Invalid(_CUDA + "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=args.momentum)\n", line=3),
        # an embedding that is not sparse
        Invalid(
            _CUDA + "emb = torch.nn.Embedding(1000, 64, sparse=False).cuda()\n"
            + "opt = torch.optim.Adam(emb.parameters())\n",
            line=4,
        ),
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
        if qualname == "torch.optim.SGD" and all(_zero(argument(node, k, i, lookup)) for k, i in _SGD_STATE):
            return  # plain SGD: the foreach step is one `_foreach_add_` already
        if self.context.fact(_builds_sparse_embedding):
            return  # sparse gradients: the fused kernels raise on them
        fixed = with_keywords(node, [keyword_arg("fused", cst.Name("True"))])
        fix = self.fix([(node, fixed)], "Pass `fused=True`")
        default = _FOREACH if self.context.settings.target_torch_version >= (2, 0) else _FOR_LOOP
        self.report(node, message=self.message.format(name=qualname.rsplit(".", 1)[-1], default=default), fix=fix)


def _zero(arg: Argument) -> bool:
    """Absent, or a literal 0 (``0``, ``0.0``)."""
    return arg.missing or (type(arg.value) in (int, float) and arg.value == 0)


def _builds_sparse_embedding(context: FileContext) -> bool:
    """The module calls an embedding (``nn.Embedding``, ``EmbeddingBag``, ``F.embedding``)
    with ``sparse=True``: some optimizer here may get its sparse gradients."""
    if "sparse" not in context.source:
        return False
    stack: List[cst.CSTNode] = [context.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
            if name in _EMBEDDINGS and argument(node, "sparse", None, context.lookup).value is True:
                return True
        stack.extend(child_nodes(node))
    return False
