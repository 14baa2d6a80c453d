"""TPF105 distributed-sampler-without-set-epoch."""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.ast_index import code_identifiers
from ...analysis.calls import argument
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.dataloader.loader_args import Path
from ...facts.dataloader.loader_facts import loader_facts, walked_every_epoch_elsewhere
from ...facts.dataloader.packed_samplers import packed_sampler_walked_every_epoch
from ...facts.dataloader.sampler_callers import sampler_walked_every_epoch
from ...facts.dataloader.loader_sites import LoaderSite, _method_class
from ...facts.dataloader.sampler_facts import (
    Helper, Keyed, Packed, ancestors_of, another_sampler, binding_scope, bound_name, calls_in, epoch_variable, evaluates, helper_calls, local_defs,
    only_walks, names_bound_to, packed_into, project_sets_epoch, returned_by, rewrapped, sampler_of, self_attr, shuffled_by_callers, shuffling_calls, through_any,
)

_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"})
# An evaluation loader, by its name (`val_loader`, `test_sampler`).
_EVAL_NAMES = re.compile(r"val|test|eval", re.IGNORECASE)
_SETUP = "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"


def _epoch_loop_text(name: str) -> str:
    return f"for epoch in range(3):\n    for x, y in {name}:\n        loss(x, y).backward()\n"


class DistributedSamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags a `DistributedSampler` (`torch.utils.data`) that shuffles (`shuffle` not `False`) and
    feeds a `DataLoader` which is iterated for training inside an epoch loop, when nothing in
    that loop calls `set_epoch(...)`: not on the sampler, not through `loader.sampler`, and
    not in a project helper the loop calls (a helper's `self.other.set_epoch(...)` sets
    another sampler's epoch when `self.other` is only ever assigned a new
    `DistributedSampler(...)`: a trainer with several samplers). The loader is followed as TPF103 follows it
    (names, `self` attributes, helpers that return it, functions it is passed to), also
    into another module of the project, as TPF103 follows it there: a helper here returns
    the loader and a caller there binds it once and walks it in an epoch loop (itself,
    through a `tqdm` bar, or by passing it each epoch to a project function that walks it,
    `engine.train_one_epoch(model, loader, optimizer)`), and neither that module, the
    project modules it imports, nor the function's module mention `set_epoch`. A
    sampler wrapped in a `BatchSampler` (`batch_sampler=`, also a name rebound to its
    wrapper: `sampler = BatchSampler(sampler=sampler, ...)`) counts, and so does one chosen
    by a conditional expression (`RandomSampler(ds) if rank == -1 else
    DistributedSampler(ds)`), or kept in a dict comprehension whose entries the loaders
    take (`sampler=samplers[x]`). A function that rebinds its loader parameter to a
    generator over it (`loader = sample_data(loader)`) still walks the loader it was given.
    A sampler that a module-level helper returns (`def data_sampler(ds, shuffle,
    distributed): ...`) is also followed to callers in other modules that bind it once (or
    pass the call itself) as `sampler=` to a `DataLoader` bound once and walk that loader every
    epoch (with `shuffle=True` when the helper takes `shuffle`), also through a project
    function that rebinds it to an endless generator (`while True: for b in loader: yield b`). So is a sampler a module-level
    helper packs into the loader arguments it returns (`kwargs["sampler"] =
    DistributedSampler(ds, shuffle=mode == "train")`; `return kwargs`), when a caller
    elsewhere passes `"train"`, unpacks the dict into one `DataLoader(ds, **kwargs)` and
    walks that loader every epoch, or hands it once to a project function whose epoch loop
    walks it (a third module), and none of those modules mentions `set_epoch`.
    Silent for `shuffle=False`, a loader iterated once, a loader handed to a framework that
    calls `set_epoch` itself (`accelerator.prepare(loader)`, a Lightning `Trainer`), and an
    evaluation loader (named `val_loader`/`test_sampler`, walked under `no_grad` or in a
    function named for evaluation), whose order does not matter.

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`, and the epoch only changes
    when `set_epoch` is called. Without it every epoch walks the data in exactly the same
    order on every rank: the shuffle happens once, which hurts convergence and can hide
    itself as a slightly worse final accuracy. This is a correctness rule beside the speed
    rules, because it is the most common mistake next to them.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            train_step(x, y)
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            train_step(x, y)
    ```

    ## Fix safety
    The fix inserts `sampler.set_epoch(epoch)` as the first statement of the epoch loop when
    the sampler is bound once to a name visible there and the loop counts epochs (`for
    epoch in range(...)`); otherwise it is only shown. It is unsafe: it changes the data
    order of every epoch after the first (the point of the fix), so a run no longer
    reproduces an earlier one batch for batch.
    """

    code = "TPF105"
    name = "distributed-sampler-without-set-epoch"
    message = (
        "`DistributedSampler` feeds a loader iterated every epoch, but `set_epoch` is never called: "
        "every epoch sees the same order; call `{sampler}.set_epoch(epoch)` at the start of each epoch"
    )
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = ("DistributedSampler",)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code names ``DistributedSampler`` (a helper that only returns one is read
        for its callers in other modules)."""
        return "DistributedSampler" in code_identifiers(tree)

    VALID = (
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    sampler.set_epoch(epoch)\n    for x, y in loader:\n        loss(x, y).backward()\n",
        _SETUP
        + "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
        + "for epoch in range(3):\n    loader.sampler.set_epoch(epoch)\n    for x, y in loader:\n        loss(x, y).backward()\n",
        _SETUP
        + "sampler = DistributedSampler(ds, shuffle=False)\nloader = DataLoader(ds, sampler=sampler)\n"
        + _epoch_loop_text("loader"),
        _SETUP
        + "sampler = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=args.shuffle)\n"
        + "loader = DataLoader(ds, sampler=sampler)\n"
        + _epoch_loop_text("loader"),
        # iterated once
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for x, y in loader:\n    loss(x, y).backward()\n",
        # a framework walks it (and calls set_epoch itself)
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = accelerator.prepare(DataLoader(ds, sampler=sampler))\n"
        + _epoch_loop_text("loader"),
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    trainer.fit(model, loader)\n",
        # set in a helper the loop calls
        _SETUP
        + "def begin_epoch(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n"
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    begin_epoch(loader, epoch)\n    for x, y in loader:\n        loss(x, y).backward()\n",
        # an object the loop hands the sampler to may set it
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    hooks.before_epoch(sampler, epoch)\n    for x, y in loader:\n        loss(x, y).backward()\n",
        # an evaluation loader: its order does not matter
        _SETUP
        + "sampler = DistributedSampler(val_ds)\nval_loader = DataLoader(val_ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    for x, y in val_loader:\n        metric(model(x), y)\n",
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    with torch.no_grad():\n        for x, y in loader:\n            metric(model(x), y)\n",
        # the loader is built anew every epoch
        _SETUP
        + "for epoch in range(3):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, sampler=sampler)\n"
        + "    for x, y in loader:\n        loss(x, y).backward()\n",
        # not torch's sampler
        "from torch.utils.data import DataLoader\nfrom mylib import DistributedSampler\n"
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
        + _epoch_loop_text("loader"),
        # the sampler is not the loader's
        _SETUP
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, shuffle=True)\n"
        + _epoch_loop_text("loader"),
        # a helper's sampler that one of its callers asks not to shuffle
        _SETUP
        + "def data_sampler(ds, shuffle, distributed):\n    if distributed:\n"
        + "        return DistributedSampler(ds, shuffle=shuffle)\n    return None\n"
        + "loader = DataLoader(ds, sampler=data_sampler(ds, shuffle=True, distributed=ddp))\n"
        + "eval_loader = DataLoader(ds, sampler=data_sampler(ds, shuffle=False, distributed=ddp))\n"
        + _epoch_loop_text("loader"),
        # a sampler inside a BatchSampler, its epoch set; one that does not shuffle
        _SETUP
        + "from torch.utils.data import BatchSampler\n"
        + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, batch_sampler=BatchSampler(sampler, 8, False))\n"
        + "for epoch in range(3):\n    loader.batch_sampler.sampler.set_epoch(epoch)\n    for x, y in loader:\n        loss(x, y).backward()\n",
        _SETUP
        + "from torch.utils.data import BatchSampler\n"
        + "sampler = DistributedSampler(ds, shuffle=False)\nbatches = BatchSampler(sampler, 8, False)\n"
        + "loader = DataLoader(ds, batch_sampler=batches)\n" + _epoch_loop_text("loader"),
        # the sampler is the other branch's, and the loop sets its epoch when it is there
        _SETUP
        + "from torch.utils.data import RandomSampler\n"
        + "sampler = RandomSampler(ds) if rank == -1 else DistributedSampler(ds)\n"
        + "loader = DataLoader(ds, sampler=sampler)\n"
        + "for epoch in range(3):\n    if rank != -1:\n        sampler.set_epoch(epoch)\n"
        + "    for x, y in loader:\n        loss(x, y).backward()\n",
        # samplers in a dict comprehension, each phase's epoch set
        _SETUP
        + "samplers = {x: DistributedSampler(ds[x]) for x in ['train', 'val']}\n"
        + "loaders = {x: DataLoader(ds[x], sampler=samplers[x]) for x in ['train', 'val']}\n"
        + "for epoch in range(3):\n    for phase in ['train', 'val']:\n        samplers[phase].set_epoch(epoch)\n"
        + "        for x, y in loaders[phase]:\n            loss(x, y).backward()\n",
        # a parameter rebound to a one-pass generator over it: walked once
        _SETUP
        + "def batches(loader):\n    for b in loader:\n        yield b\n"
        + "def train(loader):\n    loader = batches(loader)\n    for b in loader:\n        loss(b).backward()\n"
        + "train(DataLoader(ds, sampler=DistributedSampler(ds)))\n",
        # a comment or a string is not code
        "from torch.utils.data import DataLoader\n# DistributedSampler(ds)\nx = 'DistributedSampler(ds)'\n",
    )
    INVALID = (
        Invalid(
            _SETUP
            + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, batch_size=8, sampler=sampler)\n"
            + _epoch_loop_text("loader"),
            line=3,
            expected_fix=_SETUP
            + "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, batch_size=8, sampler=sampler)\n"
            + "for epoch in range(3):\n    sampler.set_epoch(epoch)\n    for x, y in loader:\n"
            + "        loss(x, y).backward()\n",
        ),
        Invalid(
            "import torch\n"
            + "def train(model, loader, optimizer):\n    for x, y in loader:\n        optimizer.step()\n"
            + "def main(ds, epochs):\n"
            + "    train_sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=True)\n"
            + "    train_loader = torch.utils.data.DataLoader(ds, sampler=train_sampler)\n"
            + "    for ep in range(epochs):\n        train(model, train_loader, optimizer)\n",
            line=6,
            expected_fix="import torch\n"
            + "def train(model, loader, optimizer):\n    for x, y in loader:\n        optimizer.step()\n"
            + "def main(ds, epochs):\n"
            + "    train_sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=True)\n"
            + "    train_loader = torch.utils.data.DataLoader(ds, sampler=train_sampler)\n"
            + "    for ep in range(epochs):\n        train_sampler.set_epoch(ep)\n"
            + "        train(model, train_loader, optimizer)\n",
        ),
        # bound on one branch only: the fix is shown, not applied (None has no set_epoch)
        Invalid(
            _SETUP
            + "if distributed:\n    sampler = DistributedSampler(ds)\nelse:\n    sampler = None\n"
            + "loader = DataLoader(ds, sampler=sampler, shuffle=sampler is None)\n"
            + _epoch_loop_text("loader"),
            line=4,
            expected_fix=_SETUP
            + "if distributed:\n    sampler = DistributedSampler(ds)\nelse:\n    sampler = None\n"
            + "loader = DataLoader(ds, sampler=sampler, shuffle=sampler is None)\n"
            + _epoch_loop_text("loader"),
        ),
        # an endless generator that walks the loader again and again
        Invalid(
            _SETUP
            + "def cycle(iterable):\n    while True:\n        for item in iterable:\n            yield item\n"
            + "sampler = DistributedSampler(ds, shuffle=True) if ddp else None\n"
            + "batches = cycle(DataLoader(ds, sampler=sampler))\n"
            + "for step in range(1000):\n    loss(next(batches)).backward()\n",
            line=7,
        ),
        # a sampler a helper returns, every caller shuffling
        Invalid(
            _SETUP
            + "def data_sampler(ds, shuffle, distributed):\n    if distributed:\n"
            + "        return DistributedSampler(ds, shuffle=shuffle)\n    return None\n"
            + "loader = DataLoader(ds, sampler=data_sampler(ds, shuffle=True, distributed=ddp))\n"
            + _epoch_loop_text("loader"),
            line=5,
        ),
        # inside a BatchSampler (bound to a name): the fix sets the sampler's epoch
        Invalid(
            _SETUP
            + "from torch.utils.data import BatchSampler\n"
            + "sampler = DistributedSampler(ds)\nbatches = BatchSampler(sampler, 8, False)\n"
            + "loader = DataLoader(ds, batch_sampler=batches)\n" + _epoch_loop_text("loader"),
            line=4,
            expected_fix=_SETUP
            + "from torch.utils.data import BatchSampler\n"
            + "sampler = DistributedSampler(ds)\nbatches = BatchSampler(sampler, 8, False)\n"
            + "loader = DataLoader(ds, batch_sampler=batches)\n"
            + "for epoch in range(3):\n    sampler.set_epoch(epoch)\n    for x, y in loader:\n"
            + "        loss(x, y).backward()\n",
        ),
        # the other branch of a conditional expression: shown, not applied (a RandomSampler has no set_epoch)
        Invalid(
            _SETUP
            + "from torch.utils.data import RandomSampler\n"
            + "sampler = RandomSampler(ds) if rank == -1 else DistributedSampler(ds)\n"
            + "loader = DataLoader(ds, sampler=sampler)\n" + _epoch_loop_text("loader"),
            line=4,
            expected_fix=_SETUP
            + "from torch.utils.data import RandomSampler\n"
            + "sampler = RandomSampler(ds) if rank == -1 else DistributedSampler(ds)\n"
            + "loader = DataLoader(ds, sampler=sampler)\n" + _epoch_loop_text("loader"),
        ),
        # samplers in a dict comprehension, loaders picked by phase: shown, not applied
        Invalid(
            _SETUP
            + "samplers = {x: DistributedSampler(ds[x]) for x in ['train', 'val']}\n"
            + "loaders = {x: DataLoader(ds[x], sampler=samplers[x]) for x in ['train', 'val']}\n"
            + "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
            + "        for x, y in loaders[phase]:\n            loss(x, y).backward()\n",
            line=3,
            expected_fix=_SETUP
            + "samplers = {x: DistributedSampler(ds[x]) for x in ['train', 'val']}\n"
            + "loaders = {x: DataLoader(ds[x], sampler=samplers[x]) for x in ['train', 'val']}\n"
            + "for epoch in range(3):\n    for phase in ['train', 'val']:\n"
            + "        for x, y in loaders[phase]:\n            loss(x, y).backward()\n",
        ),
        # a parameter rebound to an endless generator over the loader it was given
        Invalid(
            _SETUP
            + "def sample_data(loader):\n    while True:\n        for batch in loader:\n            yield batch\n"
            + "def train(loader, steps):\n    loader = sample_data(loader)\n"
            + "    for i in range(steps):\n        loss(next(loader)).backward()\n"
            + "sampler = DistributedSampler(ds, shuffle=True)\ntrain(DataLoader(ds, sampler=sampler), 1000)\n",
            line=11,
        ),
        # one name bound to a sampler on each branch: one finding, at the first (shown, not applied)
        Invalid(
            _SETUP
            + "if ddp:\n    sampler = DistributedSampler(ds)\nelse:\n    sampler = DistributedSampler(ds, num_replicas=1, rank=0)\n"
            + "loader = DataLoader(ds, sampler=sampler)\n" + _epoch_loop_text("loader"),
            line=4,
        ),
        # ... and when the first does not shuffle, at the second
        Invalid(
            _SETUP
            + "sampler = DistributedSampler(ds, shuffle=False)\nif args.shuffle:\n    sampler = DistributedSampler(ds)\n"
            + "loader = DataLoader(ds, sampler=sampler)\n" + _epoch_loop_text("loader"),
            line=5,
        ),
        # passed inline; a step loop that starts a new pass when the loader runs out
        Invalid(
            _SETUP
            + "loader = DataLoader(ds, sampler=DistributedSampler(ds, seed=1))\nit = iter(loader)\n"
            + "for step in range(1000):\n    try:\n        x = next(it)\n    except StopIteration:\n"
            + "        it = iter(loader)\n        x = next(it)\n    loss(x).backward()\n",
            line=3,
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported_names: Set[Tuple[int, str]] = set()
        self._sampler: Optional[cst.Call] = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        if isinstance(func, cst.Attribute) and func.attr.value != "DistributedSampler":
            return  # a Name may be an alias (`DistributedSampler as DS`)
        if self.context.qualname(func) not in _SAMPLERS:
            return
        ancestors = tuple(self.context.ancestors[:-1])  # the context's stack ends with the node
        shuffle = argument(node, "shuffle", 3, self.context.lookup)
        target = bound_name(node, ancestors)
        if target is None:
            target = returned_by(self.context, node, ancestors)
        knob = shuffle.node if isinstance(shuffle.node, cst.Arg) and not shuffle.missing else None
        packed = packed_into(self.context, node, ancestors, knob) if target is None else None
        if packed is not None:  # `kwargs["sampler"] = DistributedSampler(...)`; `return kwargs`
            return self._report_packed(node, packed)
        # `shuffle=shuffle` of a helper no call here decides: only callers elsewhere can
        only_elsewhere = not (shuffle.missing or shuffle.value is True or shuffled_by_callers(self.context, shuffle.node, ancestors))
        # ... or some calls here shuffle (`is_train=True`) and others not: follow their loaders only
        shuffling = shuffling_calls(self.context, shuffle.node, ancestors) if only_elsewhere else None  # type: ignore[arg-type]
        if only_elsewhere and shuffling is None and not (isinstance(target, Helper) and isinstance(shuffle.node, cst.Arg) and isinstance(shuffle.node.value, cst.Name)):
            return
        facts = self.context.fact(loader_facts)
        self._sampler = node
        uncovered: List[Tuple[Path, cst.CSTNode]] = []
        elsewhere = batched = rebound = False
        for site in () if only_elsewhere and shuffling is None else facts.sites.values():
            if not self._feeds(site, node, ancestors, target):
                continue
            batched = batched or argument(site.call, "sampler", 3).node is None
            rebound = rebound or (batched and isinstance(target, str) and rewrapped(self.context, site, target))
            names = names_bound_to(site) | ({target} if isinstance(target, str) else set())
            if any(_EVAL_NAMES.search(name) for name in names):
                continue
            if id(site.call) not in facts.passes:
                elsewhere = elsewhere or (shuffling is None and walked_every_epoch_elsewhere(self.context, facts, site.call, "set_epoch", _EVAL_NAMES))
                continue
            for path, loops, creators in facts.passes[id(site.call)]:
                if evaluates(path) or (shuffling is not None and not through_any(creators, shuffling)):
                    continue
                if any(self._sets_epoch(loop, path, target, site) for loop in loops):
                    continue
                uncovered.append((path, loops[0]))
        if not uncovered and not elsewhere and isinstance(target, Helper) and self.context.project is not None:
            knob = shuffle.node.value.value if only_elsewhere else None  # type: ignore[union-attr]
            elsewhere = sampler_walked_every_epoch(self.context.project, str(self.context.path), target.name, knob, "set_epoch", _EVAL_NAMES)
        if not uncovered and not elsewhere:
            return
        if isinstance(target, str) and uncovered and not rebound:  # not when rebound to the batch sampler
            sampler = target
        else:
            sampler = f"self.{target[0]}" if isinstance(target, tuple) and uncovered else "loader.sampler"
        if batched and sampler == "loader.sampler":  # a loader given a batch_sampler has a default .sampler
            sampler = "loader.batch_sampler.sampler"
        if isinstance(target, str):
            # One name bound to two samplers (`if ddp: s = DistributedSampler(ds) else: s =
            # DistributedSampler(ds, num_replicas=1, rank=0)`) is one mistake: one finding,
            # at the first of them the rule reports (the visit follows the source order).
            key = (id(self.context.scope_for(node, ancestors)), target)
            if key in self._reported_names:
                return
            self._reported_names.add(key)
        message = self.message.format(sampler=sampler)
        fix = self._fix(node, ancestors, target, uncovered) if uncovered and not elsewhere else self._shown()
        self.report(node, message=message, fix=fix)

    def _report_packed(self, node: cst.Call, packed: Packed) -> None:
        """Packed into loader arguments a caller elsewhere unpacks into a loader walked every epoch."""
        project, path = self.context.project, str(self.context.path)
        if project is not None and packed_sampler_walked_every_epoch(project, path, packed.name, packed.knob, "set_epoch", _EVAL_NAMES):
            self.report(node, message=self.message.format(sampler="loader.sampler"), fix=self._shown())

    # -- which loaders the sampler feeds -------------------------------------------------
    def _feeds(self, site: LoaderSite, sampler: cst.Call, ancestors: Path, target) -> bool:
        """The DataLoader's ``sampler`` is this call, or the name (``self`` attribute) this
        call is assigned to, in the same scope (class)."""
        value = sampler_of(self.context, site)
        if value is None:
            return False
        if value is sampler:
            return True
        if isinstance(target, str) and isinstance(value, cst.Name) and value.value == target:
            own = self.context.scope_for(sampler, ancestors)
            return binding_scope(self.context.scope_for(site.call, site.ancestors), target) is own
        if isinstance(target, tuple) and isinstance(value, cst.Attribute):
            attr, cls = target
            return self_attr(value) == attr and _method_class(site.ancestors) is cls
        if isinstance(target, Keyed) and isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
            own = self.context.scope_for(sampler, ancestors)
            scope = self.context.scope_for(site.call, site.ancestors)
            return value.value.value == target.name and binding_scope(scope, target.name) is own
        if isinstance(target, Helper) and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            return value.func.value == target.name and any(c is value for c in helper_calls(self.context, target.function))
        return False

    # -- does the epoch loop set the epoch? ----------------------------------------------
    def _sets_epoch(self, loop: cst.CSTNode, path: Path, target, site: LoaderSite) -> bool:
        """``set_epoch`` anywhere in the loop, in a helper it calls (this module or another
        module of the project, two calls deep), or a call that hands the sampler or the
        loader to code this module cannot see."""
        if "set_epoch" in self.context.code_for(loop):
            return True
        handed = {target} if isinstance(target, str) else {target.name} if isinstance(target, Keyed) else set()
        handed |= names_bound_to(site)
        return self._calls_setter(loop, handed, 0)

    def _calls_setter(self, root: cst.CSTNode, handed: set, depth: int) -> bool:
        for call in calls_in(root):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
                if another_sampler(self.context, func.value, root, self._sampler, _SAMPLERS):
                    continue
                return True
            definitions = local_defs(self.context, call)
            if definitions:
                if depth < 2 and any(self._calls_setter(d, set(), depth + 1) for d in definitions):
                    return True
                continue
            if project_sets_epoch(self.context, call):
                return True
            if handed and any(isinstance(a.value, cst.Name) and a.value.value in handed for a in call.args):
                # a builtin (`len(loader)`) or a progress bar (`tqdm(loader, desc=...)`) only
                # reads what it is given; other calls that get it may set the epoch
                if not only_walks(self.context, call):
                    return True
        return False

    # -- the fix -------------------------------------------------------------------------
    def _fix(self, sampler: cst.Call, ancestors: Path, target, uncovered: Sequence[Tuple[Path, cst.CSTNode]]):
        loops = {id(loop): (loop, path) for path, loop in uncovered}
        if len(loops) != 1 or target is None or isinstance(target, Helper):
            return self._shown()
        loop, path = next(iter(loops.values()))
        epoch = epoch_variable(loop)
        loop_path = ancestors_of(self.context.module, loop)
        if epoch is None or loop_path is None or not isinstance(loop.body, cst.IndentedBlock):
            return self._shown()
        if isinstance(target, tuple):
            attr, cls = target
            assigned = re.findall(rf"\bself\.{re.escape(attr)}\s*=(?!=)", self.context.code_for(cls))
            if len(assigned) != 1 or _method_class(loop_path) is not cls:
                return self._shown()
            receiver = f"self.{attr}"
        else:
            own = self.context.scope_for(sampler, ancestors)
            values = own.bindings.get(target, [])
            visible = binding_scope(self.context.scope_for(loop, loop_path), target) is own
            if len(values) != 1 or values[0] is not sampler or not visible:
                return self._shown()
            receiver = target
        statement = cst.parse_statement(f"{receiver}.set_epoch({epoch})\n")
        body = loop.body.with_changes(body=(statement, *loop.body.body))
        return self.fix([(loop, loop.with_changes(body=body))], message=f"Call `{receiver}.set_epoch({epoch})` at the start of each epoch")

    def _shown(self):
        return self.fix([], message="Call `set_epoch(epoch)` on the sampler at the start of each epoch", applicability=Applicability.DISPLAY_ONLY)
