"""TPF101 dataloader-sync-loading."""

from __future__ import annotations

import ast
from typing import Sequence

import libcst as cst

from ...analysis.call_edits import with_argument_value, with_keyword
from ...analysis.walk import name_uses
from ...context import FileContext
from ...project.kinds import Loader
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.dataloader.datasets import dataset_facts
from ...facts.dataloader.loader_args import dataset_on_accelerator, is_dataloader, known_loader_args, names_dataloader_class, project_loader, subclass_loader_args

_SETUP = "import torch\nfrom torch.utils.data import DataLoader\n"
_STREAM = (
    "class LogStream(torch.utils.data.IterableDataset):\n    def __init__(self, n):\n        self.n = n\n"
    "    def __iter__(self):\n        return iter(range(self.n))\n"
)
_SHARDED = (
    "class Shards(torch.utils.data.IterableDataset):\n    def __init__(self, n):\n        self.n = n\n"
    "    def __iter__(self):\n        info = torch.utils.data.get_worker_info()\n"
    "        k, i = (1, 0) if info is None else (info.num_workers, info.id)\n"
    "        return iter(range(i, self.n, k))\n"
)


class DataloaderSyncLoading(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` that loads batches in the main process:
    `num_workers` left out, or known to be `0` (a literal, a name bound once to one, a
    positional argument, or a literal dict unpacked with `**`).

    Not flagged where workers would only cost: a dataset whose items come straight from
    memory (`TensorDataset`, or a project class, in this module or imported from another
    one, whose `__getitem__` only indexes tensors that `__init__` builds: `return self.x[i],
    self.y[i]`, or straight-line lookups with no call such as `traj, j = self.index[i];
    return self.data["states"][traj][j]` over a dict or list `__init__` fills), a dataset
    known to hold tensors already on the accelerator (a `TensorDataset` of moved tensors, a
    list filled with a model's outputs there: worker processes cannot share CUDA tensors),
    and a loader that is only ever read once, as `next(iter(loader))`, where workers would start up to
    load one batch.

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
    When `num_workers` is left out, the fix adds `num_workers=N` (N from the
    `dataloader-num-workers` option, default 4) and is unsafe: workers pickle the dataset
    (lambdas and open handles fail), run the script's top level again under the `spawn`
    start method (Windows, macOS) unless it has an `if __name__ == "__main__":` guard, and
    give each worker its own random state.

    A `0` that is written out (`num_workers=0`, a constant, a `**` dict) is treated as a
    decision: the finding shows the change but it is display-only, never applied. Under
    `fork`, a dataset that opened a file in `__init__` and `seek`s/`read`s it per item shares
    one file offset with every worker and silently returns corrupt items.

    When the dataset's class (defined in the same module) visibly keeps an open file handle
    or database connection from `__init__` (`self.f = open(...)`, `h5py.File`, `tables.open_file`,
    `lmdb.open`, `sqlite3.connect`, `zipfile.ZipFile`, `tarfile.open`, `gzip/bz2/lzma.open`),
    the message says so and no fix is offered, even when `num_workers` is left out: open the
    handle in each worker (lazily, on first use in `__getitem__`) first. Memory-mapped arrays
    (`np.memmap`) are not handles: workers read them through their own mappings.

    When the dataset is an `IterableDataset` (a class of this module, or of the project read
    through its index) whose `__iter__` does not split the stream by
    `torch.utils.data.get_worker_info()` (or a sharding wrapper such as `sharding_filter`),
    every worker runs `__iter__` from the start and yields every item: adding workers
    silently multiplies the data the program sees. The fix is then display-only and the
    message says to shard the stream by worker first. A loader with a `worker_init_fn`
    (which may shard it) keeps the fix.
    """

    code = "TPF101"
    name = "dataloader-sync-loading"
    message = "`DataLoader` loads data in the main process (`num_workers` is 0); use worker processes"
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = ("DataLoader",)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a docstring or a comment) names ``DataLoader`` or a class named so."""
        return names_dataloader_class(tree)

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
        # Workers would only cost: items from memory, or one batch read.
        _SETUP + "from torch.utils.data import TensorDataset\nloader = DataLoader(TensorDataset(x, y), batch_size=32)\n",
        _SETUP + "ds = torch.utils.data.TensorDataset(x, y)\nloader = DataLoader(ds, batch_size=32, num_workers=0)\n",
        _SETUP + "class Pairs(torch.utils.data.Dataset):\n    def __init__(self, n):\n"
        "        self.x = torch.randn(n, 3)\n        self.y = torch.randint(0, 2, (n,))\n"
        "    def __getitem__(self, i):\n        return self.x[i], self.y[i]\n"
        "loader = DataLoader(Pairs(100), batch_size=32)\n",
        _SETUP + "images, labels = next(iter(DataLoader(ds, batch_size=16)))\n",
        _SETUP + "peek = DataLoader(ds, batch_size=16)\nbatch = next(iter(peek))\n",
    )
    INVALID = (
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=4)\n",
        ),
        # A 0 written out is a decision: reported, the fix display-only.
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=0)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, num_workers=0)\n",
        ),
        Invalid(
            _SETUP + "loader = DataLoader(ds, 32, True, None, None, 0)\n",
            line=3,
            expected_fix=_SETUP + "loader = DataLoader(ds, 32, True, None, None, 0)\n",
        ),
        Invalid(
            "import torch as th\nNUM_WORKERS = 0\nloader = th.utils.data.DataLoader(ds, num_workers=NUM_WORKERS)\n",
            line=3,
            expected_fix="import torch as th\nNUM_WORKERS = 0\nloader = th.utils.data.DataLoader(ds, num_workers=NUM_WORKERS)\n",
        ),
        # The dataset keeps a file open from __init__: no fix, whatever num_workers says.
        Invalid(
            _SETUP + "class Records(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.f = open(path, 'rb')\n    def __getitem__(self, i):\n"
            "        self.f.seek(i * 64)\n        return self.f.read(64)\n"
            "loader = DataLoader(Records('x.bin'), batch_size=32)\n",
            line=9,
            expected_fix=_SETUP + "class Records(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.f = open(path, 'rb')\n    def __getitem__(self, i):\n"
            "        self.f.seek(i * 64)\n        return self.f.read(64)\n"
            "loader = DataLoader(Records('x.bin'), batch_size=32)\n",
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
        # A stream every worker would read whole: the fix is display-only.
        Invalid(
            _SETUP + _STREAM + "loader = DataLoader(LogStream(64), batch_size=8)\n",
            line=8,
            expected_fix=_SETUP + _STREAM + "loader = DataLoader(LogStream(64), batch_size=8)\n",
        ),
        # It splits the stream by worker: workers can be added.
        Invalid(
            _SETUP + _SHARDED + "loader = DataLoader(Shards(64), batch_size=8)\n",
            line=10,
            expected_fix=_SETUP + _SHARDED + "loader = DataLoader(Shards(64), batch_size=8, num_workers=4)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        subclass = None
        if not is_dataloader(self.context, node):
            subclass = project_loader(self.context, node)  # a project subclass of DataLoader
            if subclass is None:
                return
        workers = (known_loader_args(self.context, node) if subclass is None else subclass_loader_args(subclass)).num_workers
        if not (workers.missing or (type(workers.value) is int and workers.value == 0)):
            return
        if _read_once(self.context, node):
            return  # workers would start up to load one batch
        dataset = dataset_facts(self.context, node, self.context.scope)
        if dataset.in_memory or _in_memory(self.context.value_of(node)):
            return  # items come from memory: workers only add start-up cost
        if dataset_on_accelerator(self.context, node):
            return  # tensors on the accelerator: workers cannot share them
        handle = dataset.handle
        if handle is not None:
            self.report(node, message=_HANDLE_MESSAGE.format(h=handle))
            return
        count = cst.Integer(str(self.context.settings.dataloader_num_workers))
        if subclass is not None:  # a project subclass: what its call passes may be changed on the way
            self.report(node, message=None if dataset.stream is None else _STREAM_MESSAGE.format(cls=dataset.stream, n=count.value))
            return
        if dataset.stream is not None:  # every worker would read the whole stream
            message = _STREAM_MESSAGE.format(cls=dataset.stream, n=count.value)
            if workers.missing:
                edit = [(node, with_keyword(node, "num_workers", count))]
            else:
                edit = [] if workers.node is None else [(node, with_argument_value(node, workers.node, count))]
            fix = self.fix(edit, message=_STREAM_FIX.format(n=count.value), applicability=Applicability.DISPLAY_ONLY)
            self.report(node, message=message, fix=fix)
            return
        if not workers.missing:  # a 0 written out (or known from a name or dict) is a decision
            message = _EXPLICIT_ZERO.format(n=count.value)
            edit = [] if workers.node is None else [(node, with_argument_value(node, workers.node, count))]
            self.report(node, fix=self.fix(edit, message=message, applicability=Applicability.DISPLAY_ONLY))
            return
        replacement = with_keyword(node, "num_workers", count)
        self.report(node, fix=self.fix([(node, replacement)], message=f"Add `num_workers={count.value}`"))


_EXPLICIT_ZERO = (
    "`num_workers=0` is written out, so it is left as it is: check that the dataset works in worker "
    "processes (a file handle opened in `__init__` is shared by forked workers and corrupts what they "
    "read), then set `num_workers={n}`"
)
_STREAM_MESSAGE = (
    "`DataLoader` loads data in the main process, but its dataset `{cls}` is an `IterableDataset` whose "
    "`__iter__` does not split the stream by worker: with `num_workers={n}` every worker would yield every "
    "item ({n} times the data); shard it by `torch.utils.data.get_worker_info()` first, then add workers"
)
_STREAM_FIX = "Shard the stream by worker (`torch.utils.data.get_worker_info()`) first, then add `num_workers={n}`"
_HANDLE_MESSAGE = (
    "`DataLoader` loads data in the main process, but its dataset `{h.cls}` keeps {h.what} "
    "(`self.{h.attr} = {h.opener}(...)` in `__init__`): forked workers would share it and read "
    "corrupt items; open it in each worker (lazily in `__getitem__`) before adding `num_workers`"
)


def _in_memory(loader: object) -> bool:
    """The value engine knows the dataset holds tensors in memory (a ``TensorDataset``, also
    one a project function returns)."""
    return type(loader) is Loader and loader.dataset == "memory"


def _read_once(context: FileContext, call: cst.Call) -> bool:
    """The loader is only ever read as ``next(iter(loader))``: directly, or through a name
    bound once to it whose every use is that."""
    parents = context.ancestors[:-1]  # the pass keeps the current node last
    if _in_next_iter(context, parents, call):
        return True
    if not parents or type(parents[-1]) is not cst.Assign:
        return False
    assign = parents[-1]
    if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return False
    target = assign.targets[0].target
    scope = context.scope
    if scope.is_class or scope.lookup_value(target.value) is not call:
        return False
    uses = 0
    for name, path in name_uses(scope.node, target.value):
        if name is target:
            continue
        if not _in_next_iter(context, path, name):
            return False
        uses += 1
    return uses > 0


def _in_next_iter(context: FileContext, parents: Sequence[cst.CSTNode], node: cst.CSTNode) -> bool:
    """``node`` is the argument of ``iter(...)``, itself the first argument of ``next(...)``."""
    if len(parents) < 4:
        return False
    arg, inner, outer_arg, outer = parents[-1], parents[-2], parents[-3], parents[-4]
    return (
        type(arg) is cst.Arg
        and arg.value is node
        and _builtin_call(context, inner, "iter")
        and len(inner.args) == 1  # type: ignore[attr-defined]
        and type(outer_arg) is cst.Arg
        and outer_arg.value is inner
        and _builtin_call(context, outer, "next")
        and outer.args[0] is outer_arg  # type: ignore[attr-defined]
        and not arg.star
        and not outer_arg.star
    )


def _builtin_call(context: FileContext, node: cst.CSTNode, name: str) -> bool:
    if type(node) is not cst.Call or type(node.func) is not cst.Name or node.func.value != name:
        return False
    return not context.scope.binds_in_chain(name)
