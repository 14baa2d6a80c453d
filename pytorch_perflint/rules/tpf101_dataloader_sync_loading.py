"""TPF101 dataloader-sync-loading."""

from __future__ import annotations

import libcst as cst

from ..analysis.dataloader import is_dataloader, loader_args
from ..analysis.call_edits import with_argument_value, with_keyword
from ..rule import Invalid, Rule
from ..types import Applicability

_SETUP = "import torch\nfrom torch.utils.data import DataLoader\n"


class DataloaderSyncLoading(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` that loads batches in the main process:
    `num_workers` left out, or known to be `0` (a literal, a name bound once to one, a
    positional argument, or a literal dict unpacked with `**`).

    ## Why is this bad?
    With `num_workers=0` every sample is read, decoded and augmented by the training process
    itself, between steps: the accelerator waits while the batch is built. Worker processes
    build the next batches while the current one trains, so loading overlaps with compute.
    Data loading is the most common reason a GPU sits idle.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)
    ```

    ## Fix safety
    The fix adds `num_workers=N` (N from the `dataloader-num-workers` option, default 4) and
    is unsafe: workers pickle the dataset (lambdas and open handles fail), run the script's
    top level again under the `spawn` start method (Windows, macOS) unless it has an
    `if __name__ == "__main__":` guard, and give each worker its own random state. When the
    `0` comes from a `**` dict there is no fix, since adding the keyword would pass it twice.
    """

    code = "TPF101"
    name = "dataloader-sync-loading"
    message = "`DataLoader` loads data in the main process (`num_workers` is 0); use worker processes"
    fix_applicability = Applicability.UNSAFE
    triggers = ("DataLoader",)

    VALID = (
        _SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=4)\n",
        _SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=args.workers)\n",
        _SETUP + "loader = DataLoader(ds, batch_size=32, **loader_kwargs)\n",
        _SETUP + "loader = DataLoader(ds, 32, True, None, None, 8)\n",
        _SETUP + "loader = DataLoader(*args)\n",
        _SETUP + "loader = DataLoader(ds, *rest)\n",
        _SETUP + "def make(DataLoader):\n    return DataLoader(ds, batch_size=32)\n",
        "from torch_geometric.loader import DataLoader\nloader = DataLoader(ds, batch_size=32)\n",
        _SETUP + "class Loader(DataLoader):\n    pass\nloader = Loader(ds)\n",
        _SETUP + "workers = 0\nif fast:\n    workers = 4\nloader = DataLoader(ds, num_workers=workers)\n",
        _SETUP + "kw = {'num_workers': 2}\nloader = DataLoader(ds, **kw)\n",
        _SETUP + "loader = DataLoader(ds, num_workers=os.cpu_count())\n",
    )
    INVALID = (
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=4)\n",
        ),
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=0)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=4)\n",
        ),
        Invalid(
            _SETUP + "loader = DataLoader(ds, 32, True, None, None, 0)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, 32, True, None, None, 4)\n",
        ),
        Invalid(
            "import torch as th\nNUM_WORKERS = 0\nloader = th.utils.data.DataLoader(ds, num_workers=NUM_WORKERS)\n",
            line=3,
            expected_fix="import torch as th\nNUM_WORKERS = 0\nloader = th.utils.data.DataLoader(ds, num_workers=4)\n",
        ),
        Invalid(
            "from torch.utils import data\nkw = dict(num_workers=0)\nloader = data.DataLoader(ds, **kw)\n",
            line=3,
            expected_fix="from torch.utils import data\nkw = dict(num_workers=0)\nloader = data.DataLoader(ds, **kw)\n",
        ),
        Invalid(
            "from torch.utils.data.dataloader import DataLoader as DL\nkw = {'batch_size': 8}\nloader = DL(ds, **kw)\n",
            line=3,
            expected_fix=(
                "from torch.utils.data.dataloader import DataLoader as DL\n"
                "kw = {'batch_size': 8}\nloader = DL(ds, **kw, num_workers=4)\n"
            ),
        ),
        Invalid(
            _SETUP + "loader = DataLoader(ds)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, num_workers=2)\n",
            options={"dataloader-num-workers": 2},
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(self.context, node):
            return
        workers = loader_args(node, self.context.lookup, self.context.source).num_workers
        if not (workers.missing or (type(workers.value) is int and workers.value == 0)):
            return
        count = cst.Integer(str(self.context.settings.dataloader_num_workers))
        if workers.node is not None:
            replacement = with_argument_value(node, workers.node, count)
        elif workers.missing:
            replacement = with_keyword(node, "num_workers", count)
        else:
            self.report(node)  # the 0 comes from a `**` dict: adding the keyword would repeat it
            return
        message = f"Add `num_workers={count.value}`"
        self.report(node, fix=self.fix([(node, replacement)], message=message))
