"""TPF501 data-parallel."""

from __future__ import annotations

import ast
from typing import Sequence

import libcst as cst

from ...analysis.ast_index import code_identifiers
from ...analysis.walk import name_uses, reads_before
from ...context import FileContext
from ...rule import Invalid, Rule
from ...types import Applicability

# What a wrapper built only to rename checkpoint keys is used for: its state dict (the keys
# gain or lose the ``module.`` prefix) and the model inside it. Never its forward.
_CHECKPOINT_METHODS = frozenset({"state_dict", "load_state_dict"})
_OTHER_PARALLEL = ("DistributedDataParallel", "ShardedDataParallel")


class DataParallel(Rule):
    """## What it does
    Flags every construction of `torch.nn.DataParallel`, and of a project class derived
    from it (through any number of project classes).

    Not flagged: a wrapper built only to rename checkpoint keys, which never runs a step
    (`nn.DataParallel(net).state_dict()`, or a name bound to the wrapper whose every use
    that can see it is `.state_dict()`, `.load_state_dict(...)` or `.module`; reads of the
    same name earlier in the block see the model it held before).

    ## Why is this bad?
    `DataParallel` drives all GPUs from one Python process with one thread per device. Every
    step it scatters the inputs from GPU 0, replicates the whole model onto each device,
    gathers the outputs back onto GPU 0 and reduces the gradients there. The GIL, the
    replication and the unbalanced GPU 0 make it slower than `DistributedDataParallel` even
    on a single machine, and PyTorch's own documentation recommends against it.

    ## Example
    ```python
    model = nn.DataParallel(model)
    ```

    ## Use instead
    One process per GPU with `DistributedDataParallel`, started by `torchrun`:
    ```python
    dist.init_process_group("nccl")
    model = nn.parallel.DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
    ```

    ## Fix safety
    There is no automatic fix: moving to DDP changes how the script is launched, how data is
    sharded (`DistributedSampler`) and how checkpoints are saved. The message says what to do.
    """

    code = "TPF501"
    name = "data-parallel"
    message = (
        "`nn.DataParallel` is single-process and slower than `DistributedDataParallel`; "
        "use DDP with one process per GPU (`torchrun`)"
    )
    fix_applicability = Applicability.DISPLAY_ONLY
    triggers = ("DataParallel",)

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """`DataParallel` other than inside `DistributedDataParallel`."""
        at = source.find("DataParallel")  # the regex (?<!Distributed)DataParallel, as finds
        while at != -1:
            if not source.endswith("Distributed", 0, at):
                return True
            at = source.find("DataParallel", at + 1)
        return False

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code names ``DataParallel`` (an attribute, a name or an import): the
        qualified name of the wrapped call ends with it, through the file's imports; or a
        name that holds it (``UserScatteredDataParallel``, a project subclass)."""
        return any(name.endswith("DataParallel") and not name.endswith(_OTHER_PARALLEL) for name in code_identifiers(tree))

    VALID = (
        "import torch\nif isinstance(model, torch.nn.DataParallel):\n    model = model.module\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
        "# model = nn.DataParallel(model)\nx = 'nn.DataParallel(model)'\n",
        "class DataParallel:\n    pass\nm = DataParallel()\n",
        "import torch.nn as nn\ndef wrap(nn):\n    return nn.DataParallel(model)\n",
        "from torch import nn\nclass Wrapped(nn.DataParallel):\n    pass\n",
        # Built only to add or strip the `module.` prefix of checkpoint keys.
        "import torch\nfrom torch import nn\ntorch.save(nn.DataParallel(net).state_dict(), 'x.pt')\n",
        "import torch\nfrom torch import nn\ndef strip(net, sd):\n    w = nn.DataParallel(net)\n"
        "    w.load_state_dict(sd)\n    return w.module.state_dict()\n",
        # The name held the model before; only the reads after the wrapper see the wrapper.
        "import torch\nnet = Net()\nout = net(x)\nnet = torch.nn.DataParallel(net)\ntorch.save(net.state_dict(), 'x.pt')\n",
    )
    INVALID = (
        Invalid("import torch\nmodel = torch.nn.DataParallel(model)\n", line=2),
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1])\n", line=2),
        Invalid("from torch.nn.parallel import DataParallel as DP\nm = DP(net)\n", line=2),
        Invalid("import torch as th\nm = th.nn.parallel.data_parallel.DataParallel(net)\n", line=2),
        # Loaded from a checkpoint, then called: a real wrapper.
        Invalid(
            "from torch import nn\ndef run(net, sd, x):\n    w = nn.DataParallel(net)\n"
            "    w.load_state_dict(sd)\n    return w(x)\n",
            line=3,
        ),
        # Rebound, then called after the checkpoint; rebound in a loop whose next pass calls
        # it; read by a function defined earlier and called later.
        Invalid("import torch\nnet = Net()\nnet = torch.nn.DataParallel(net)\ntorch.save(net.state_dict(), 'x.pt')\nout = net(x)\n", line=3),
        Invalid(
            "import torch\nnet = Net()\nfor x in data:\n    out = net(x)\n    net = torch.nn.DataParallel(net)\n"
            "    torch.save(net.state_dict(), 'x.pt')\n",
            line=5,
        ),
        Invalid("import torch\nnet = Net()\nnet = torch.nn.DataParallel(net); out = net(x)\ntorch.save(net.state_dict(), 'x.pt')\n", line=3),
        Invalid(
            "import torch\nnet = Net()\ndef step(x):\n    return net(x)\nnet = torch.nn.DataParallel(net)\n"
            "torch.save(net.state_dict(), 'x.pt')\nstep(1)\n",
            line=5,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not _constructs_data_parallel(self.context, node) or _checkpoint_only(self.context, node):
            return
        self.report(node)


def _constructs_data_parallel(context: FileContext, call: cst.Call) -> bool:
    """``nn.DataParallel(...)``, or a class the value engine knows derives from it (a
    project subclass, at any depth): only class-like names are asked about."""
    qualname = context.qualname(call.func)
    if qualname == "torch.nn.DataParallel":
        return True
    last = call.func.attr.value if type(call.func) is cst.Attribute else call.func.value if type(call.func) is cst.Name else ""
    if context.project is None or qualname is not None and qualname.startswith("torch.") or not last[:1].isupper():
        return False
    models = context.models
    return models is not None and models.wrapper(context.value_of(call)) == "DataParallel"


def _checkpoint_only(context: FileContext, call: cst.Call) -> bool:
    """The wrapper is only read for its state dict or its inner module: used as the
    receiver of one of those directly, or bound once to a name whose every use is."""
    parents = context.ancestors[:-1]  # the pass keeps the current node last
    if _checkpoint_use(parents, call):
        return True
    if not parents or type(parents[-1]) is not cst.Assign:
        return False
    assign = parents[-1]
    if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return False
    target = assign.targets[0].target
    scope = context.scope
    if scope.is_class or target.value in scope.declared_outer:
        return False
    uses = [(name, path) for name, path in name_uses(scope.node, target.value) if name is not target]
    if scope.lookup_value(target.value) is not call:
        # A name bound before (``psp = Net()`` ... ``psp = DataParallel(psp)``): the reads
        # that run before this binding see the model, not the wrapper.
        ancestors = context.ancestors
        start = next((at for at, node in enumerate(ancestors) if node is scope.node), None)
        if start is None:
            return False
        binding = tuple(ancestors[start:-1])
        while binding and type(binding[-1]) is not cst.SimpleStatementLine:
            binding = binding[:-1]
        if not binding:
            return False
        # ``psp = DataParallel(psp)``: the argument reads the model, as do earlier lines.
        uses = [
            (name, path) for name, path in uses if not any(node is call for node in path) and not reads_before(binding, path)
        ]
    return bool(uses) and all(_checkpoint_use(path, name) for name, path in uses)


def _checkpoint_use(parents: Sequence[cst.CSTNode], node: cst.CSTNode) -> bool:
    """``node.module``, ``node.state_dict(...)`` or ``node.load_state_dict(...)``."""
    if not parents or type(parents[-1]) is not cst.Attribute or parents[-1].value is not node:
        return False
    attr = parents[-1].attr.value
    if attr == "module":
        return True
    return attr in _CHECKPOINT_METHODS and len(parents) > 1 and type(parents[-2]) is cst.Call and parents[-2].func is parents[-1]
