"""TPF103 dataloader-no-persistent-workers."""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.call_edits import with_keyword
from ...context import FileContext
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.dataloader.datasets import dataset_facts
from ...facts.dataloader.loader_args import known_loader_args, loader_args, names_dataloader
from ...facts.dataloader.loader_facts import loader_facts

_SETUP = "import torch\nfrom torch.utils.data import DataLoader\n"


class DataloaderNoPersistentWorkers(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` with worker processes (`num_workers` known to be
    more than 0) and without `persistent_workers=True` that is iterated inside an outer loop
    (an epoch loop) which does not build the loader anew each time round (one built once in
    the loop under a one-shot flag, `if not done: loader = ...; done = True`, is walked
    every epoch after). The loader is
    followed through names, `self` attributes, helper functions that return it (also
    unpacked on the branches of an `if`/`elif` that picks a dataset: `if cifar: train, test =
    cifar_loaders() elif stl: train, test = stl_loaders()`; also a name rebound on an `if`
    arm in the epoch loop: each binding that may reach the walk) and functions it is passed
    to (`train(train_loader)` called once per epoch, in this module or another: an entry
    script's `fit_one_epoch(model, gen, gen_val)`); a loop over `zip(train_in, train_out)`
    walks each loader zipped. A loader that a helper returns is also
    flagged when a caller in another module of the project binds it once and walks it in
    an epoch loop (`train_loader, val_loader = get_loaders()` in `train.py`), itself, through
    a `tqdm` bar (also `with tqdm(loader) as bar:`), or by passing it each epoch to a project
    function that walks it, or by handing it (right after binding it, in a loop or not) to a
    project function that walks it inside an epoch loop of its own (`fit(model, loader, epochs)`).
    A pass over a project iterable that keeps the loader and walks it in its `__iter__`
    (`for b in Prefetcher(loader)`) is a pass over the loader; so is a call, in the epoch
    loop, of a function that walks the loader as a global (`evaluate(epoch)` reading
    `test_loader`). A helper's `num_workers=workers` counts when every project caller
    passes the same known number.

    ## Why is this bad?
    Every `iter(loader)` (every `for batch in loader`) starts `num_workers` fresh processes,
    which import modules, unpickle the dataset and warm up before the first batch arrives,
    and shuts them down at the end of the pass. With many short epochs, or an evaluation
    pass every epoch, the accelerator waits for that start-up again and again.
    `persistent_workers=True` keeps the workers alive between passes.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8)
    for epoch in range(epochs):
        for x, y in loader:
            ...
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8, persistent_workers=True)
    ```

    ## Fix safety
    The fix adds `persistent_workers=True` and is unsafe: the workers keep their copy of the
    dataset, so changes the main process makes to the dataset between epochs (a curriculum,
    `dataset.set_epoch()`) no longer reach them, and the workers hold their memory for the
    whole run. It needs torch 1.7 or newer. When the workers come from a dict chosen by the
    accelerator (`**({"num_workers": 4} if cuda else {})`), the other path has none and
    `persistent_workers=True` would make `DataLoader` raise there: no fix is offered.

    When the dataset is an `IterableDataset` whose `__iter__` does not split the stream by
    `torch.utils.data.get_worker_info()` (or a sharding wrapper), every worker already yields
    every item: the fix is display-only and the message says to shard the stream by worker
    first, as TPF101's does.
    """

    code = "TPF103"
    name = "dataloader-no-persistent-workers"
    message = (
        "`DataLoader` with workers is iterated every epoch without `persistent_workers=True`; "
        "its workers are restarted each time"
    )
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = ("DataLoader",)
    min_torch = (1, 7)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a docstring or a comment) names ``DataLoader``."""
        return names_dataloader(tree)

    VALID = (
        _SETUP + "loader = DataLoader(ds, num_workers=4)\nfor x in loader:\n    pass\n",
        _SETUP
        + "loader = DataLoader(ds, num_workers=4, persistent_workers=True)\n"
        + "for epoch in range(3):\n    for x in loader:\n        pass\n",
        _SETUP + "loader = DataLoader(ds)\nfor epoch in range(3):\n    for x in loader:\n        pass\n",
        _SETUP
        + "for epoch in range(3):\n    loader = DataLoader(ds, num_workers=4)\n"
        + "    for x in loader:\n        pass\n",
        _SETUP
        + "loader = DataLoader(ds, num_workers=args.workers)\n"
        + "for epoch in range(3):\n    for x in loader:\n        pass\n",
        _SETUP
        + "loader = DataLoader(ds, num_workers=4)\nloader = accelerator.prepare(loader)\n"
        + "for epoch in range(3):\n    for x in loader:\n        pass\n",
        _SETUP
        + "loader = DataLoader(ds, num_workers=4)\nit = iter(loader)\n"
        + "for step in range(100):\n    x = next(it)\n",
        _SETUP
        + "loader = DataLoader(ds, num_workers=4)\nfor epoch in range(3):\n    pass\nfor x in loader:\n    pass\n",
    )
    INVALID = (
        Invalid(
            _SETUP
            + "loader = DataLoader(ds, batch_size=8, num_workers=4)\n"
            + "for epoch in range(3):\n    for x in loader:\n        pass\n",
            line=3,
            expected_fix=_SETUP
            + "loader = DataLoader(ds, batch_size=8, num_workers=4, persistent_workers=True)\n"
            + "for epoch in range(3):\n    for x in loader:\n        pass\n",
        ),
        Invalid(
            _SETUP
            + "def train(loader):\n    for i, (x, y) in enumerate(loader):\n        pass\n"
            + "def main():\n    train_loader = DataLoader(ds, num_workers=8)\n"
            + "    for epoch in range(10):\n        train(train_loader)\n",
            line=7,
        ),
        Invalid(
            _SETUP
            + "W = 2\nloader = DataLoader(ds, num_workers=W, persistent_workers=False)\n"
            + "while True:\n    batch = next(iter(loader))\n",
            line=4,
            expected_fix=_SETUP
            + "W = 2\nloader = DataLoader(ds, num_workers=W, persistent_workers=True)\n"
            + "while True:\n    batch = next(iter(loader))\n",
        ),
        # Every worker yields the whole stream: shard it first, the fix is display-only.
        Invalid(
            _SETUP
            + "class LogStream(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter(range(64))\n"
            + "loader = DataLoader(LogStream(), num_workers=4)\n"
            + "for epoch in range(3):\n    for x in loader:\n        pass\n",
            line=6,
            expected_fix=_SETUP
            + "class LogStream(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter(range(64))\n"
            + "loader = DataLoader(LogStream(), num_workers=4)\n"
            + "for epoch in range(3):\n    for x in loader:\n        pass\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.fact(loader_facts)
        site = facts.sites.get(id(node))
        if site is None or id(node) not in facts.reiterated:
            return
        args = known_loader_args(self.context, node)
        workers = args.num_workers.value
        if not (type(workers) is int and workers > 0):
            return
        persistent = args.persistent_workers
        if not (persistent.missing or persistent.value is False):
            return
        if not _workers_on_every_path(self.context, node, args.num_workers.node is not None, workers):
            # ``**({"num_workers": 4} if cuda else {})``: with no workers on the other path,
            # ``persistent_workers=True`` makes DataLoader raise there; no fix is offered.
            self.report(node)
        elif persistent.missing or persistent.node is not None:
            replacement = with_keyword(node, "persistent_workers", cst.Name("True"))
            stream = dataset_facts(self.context, node, self.context.scope).stream
            if stream is not None:  # its workers each yield the whole stream: shard it first
                fix = self.fix([(node, replacement)], message=_STREAM_FIX, applicability=Applicability.DISPLAY_ONLY)
                self.report(node, message=_STREAM_MESSAGE.format(cls=stream), fix=fix)
                return
            self.report(node, fix=self.fix([(node, replacement)], message="Add `persistent_workers=True`"))
        else:
            self.report(node)


def _workers_on_every_path(context: FileContext, call: cst.Call, own_argument: bool, workers: int) -> bool:
    """The worker count holds wherever the call runs: the call passes it itself (a literal, or
    a name the engine knows), or a ``**`` dict its own text reads says it; not one the value
    engine took from the accelerator's arm of a conditional dict."""
    return own_argument or loader_args(call, context.lookup, context.source).num_workers.value == workers


_STREAM_MESSAGE = (
    "`DataLoader` with workers is iterated every epoch without `persistent_workers=True`, but its dataset "
    "`{cls}` is an `IterableDataset` whose `__iter__` does not split the stream by worker: every worker "
    "yields every item; shard it by `torch.utils.data.get_worker_info()` first"
)
_STREAM_FIX = "Shard the stream by worker (`torch.utils.data.get_worker_info()`) first, then add `persistent_workers=True`"
