"""TPF501 data-parallel."""

from __future__ import annotations

import re

import libcst as cst

from ...rule import Invalid, Rule
from ...types import Applicability

_DATA_PARALLEL = re.compile(r"(?<!Distributed)DataParallel")


class DataParallel(Rule):
    """## What it does
    Flags every construction of `torch.nn.DataParallel`.

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
        return _DATA_PARALLEL.search(source) is not None

    VALID = (
        "import torch\nif isinstance(model, torch.nn.DataParallel):\n    model = model.module\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
        "# model = nn.DataParallel(model)\nx = 'nn.DataParallel(model)'\n",
        "class DataParallel:\n    pass\nm = DataParallel()\n",
        "import torch.nn as nn\ndef wrap(nn):\n    return nn.DataParallel(model)\n",
        "from torch import nn\nclass Wrapped(nn.DataParallel):\n    pass\n",
    )
    INVALID = (
        Invalid("import torch\nmodel = torch.nn.DataParallel(model)\n", line=2),
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1])\n", line=2),
        Invalid("from torch.nn.parallel import DataParallel as DP\nm = DP(net)\n", line=2),
        Invalid("import torch as th\nm = th.nn.parallel.data_parallel.DataParallel(net)\n", line=2),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) == "torch.nn.DataParallel":
            self.report(node)
