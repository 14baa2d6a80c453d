"""TPF104 blocking-host-to-device-copy."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Hashable, Optional

import libcst as cst

from ...analysis.call_edits import with_keyword
from ...analysis.values import literal_value
from ...project.kinds import Batch
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.dataloader.loader_facts import could_copy_loader_batches, could_iterate_helper_loaders
from ...facts.dataloader.walked_parameters import could_walk_parameters, may_walk_pinned_parameter, walked_parameters

if TYPE_CHECKING:
    from ...project import ProjectIndex

_SETUP = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "device = torch.device('cuda')\nloader = DataLoader(ds, batch_size=32, pin_memory=True)\n"
)
_DEVICE_WORDS = ("device", "cuda", "gpu", "rank")


class BlockingHostToDeviceCopy(Rule):
    """## What it does
    Flags `.to(device)` and `.cuda()` without `non_blocking=True` on a batch taken straight
    from a `DataLoader` known to use `pin_memory=True`: the loop variables of
    `for x, y in loader` (also through `enumerate`, `tqdm`, `with tqdm(loader) as bar:`, `zip`
    and a project generator that yields its batches), `next(iter(loader))`, and
    what is unpacked or indexed out of them (the tensors of a list or dict batch too:
    `[t.cuda() for t in targets]`), until the name is rebound. What the copied value is
    comes from the project's value engine, so the loader may be built by a helper in any
    module of the project (`from data import make_train_loader`), passed as a parameter
    (every caller passes one, also to a train-loop function in a module that never names a
    loader), kept in an attribute (`self.loader = loader`), or walked by
    a project iterable's `__iter__` (a wrapper that yields from the loader it holds); it
    may be pinned by `pin_memory=True` or by a `**kwargs` dict (a helper's, or one that a
    literal `kwargs.update({"pin_memory": True})` pins on the accelerator path, under `if
    device.type == "cuda":`, or a helper's `**kwargs` parameter whose every caller passes
    `pin_memory=True`), or by a command-line switch that defaults to on
    (`pin_memory=args.pin_mem` with `default=True`). Validation loaders count as any other.

    ## Why is this bad?
    A copy from pinned memory can run asynchronously: with `non_blocking=True` the host
    queues it and goes on (to the forward pass, to queueing the next copy) while the DMA
    engine moves the data. Without it the host waits for every copy to finish, so the
    loader's pinning buys only part of its benefit. The copy stays ordered before later
    work on the same CUDA stream, so results are unchanged. The overlap pays where the
    copy is a real part of the step and the host has work to queue meanwhile; on the
    project's H200 scenario (batches of 64 images of 128x128, a small model) it was within
    the noise on two days (1.01x, docs/benchmarks/gpu-nvidia-h200-2.md).

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    The fix adds `non_blocking=True` and is safe: the batch comes from pinned memory and is
    not written by the host while the copy runs, and kernels that use the copy are queued
    after it on the same stream. Batches rebuilt after loading (`torch.cat`, a list
    comprehension, `.float()`) are no longer pinned and are not flagged, nor are loaders
    passed through wrappers such as `accelerator.prepare()`.
    """

    code = "TPF104"
    name = "blocking-host-to-device-copy"
    message = "Blocking host-to-device copy of a batch from a pinned `DataLoader`; pass `non_blocking=True`"
    fix_applicability = Applicability.SAFE
    triggers = ("pin_memory", "loader", "Loader")

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A pinned DataLoader built here and a copy to the device, or a copy of what a
        loader built by a project helper elsewhere yields."""
        here = "pin_memory" in source and "DataLoader" in source and (".to(" in source or ".cuda(" in source)
        return here or could_iterate_helper_loaders(source) or could_walk_parameters(source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> Optional[bool]:
        return could_copy_loader_batches(tree) or bool(walked_parameters(tree))

    @classmethod
    def project_question(cls, tree: ast.Module) -> Optional[Hashable]:
        """None when the code names a loader (the tree screen decides); else the parameters
        its functions walk, which only the engine can tell apart from loaders."""
        return None if could_copy_loader_batches(tree) else walked_parameters(tree)

    @classmethod
    def could_fire_answering(cls, question: Hashable, path: str, project: "ProjectIndex") -> Optional[bool]:
        """A walked parameter whose callers may pass a pinned loader (``walked_parameters``)."""
        return True if question is None else may_walk_pinned_parameter(question, path, project)  # type: ignore[arg-type]

    VALID = (
        _SETUP + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        _SETUP + "for x, y in loader:\n    x = torch.cat([x, y])\n    x = x.to(device)\n",
        _SETUP + "for x, y in loader:\n    x = x.float()\n    x = x.to(device)\n",
        _SETUP + "for x, y in loader:\n    x = x.to(torch.float16)\n",
        _SETUP + "loader = accelerator.prepare(loader)\nfor x, y in loader:\n    x = x.to(device)\n",
        _SETUP + "for x, y in prefetcher(loader):\n    x = x.to(device)\n",
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, pin_memory=False)\nfor x, y in loader:\n    x = x.cuda()\n",
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, pin_memory=args.pin)\nfor x, y in loader:\n    x = x.cuda()\n",
        _SETUP + "for x, y in loader:\n    x = x.to(device, non_blocking=args.nb)\n",
        _SETUP + "for batch in loader:\n    batch = [t.float() for t in batch]\n    batch[0].cuda()\n",
    )
    INVALID = (
        Invalid(
            _SETUP + "for x, y in loader:\n    x = x.to(device)\n",
            line=6,
            expected_fix=_SETUP + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        ),
        Invalid(
            _SETUP + "for i, batch in enumerate(loader):\n    out = model(batch['x'].cuda())\n",
            line=6,
            expected_fix=_SETUP
            + "for i, batch in enumerate(loader):\n    out = model(batch['x'].cuda(non_blocking=True))\n",
        ),
        Invalid(
            _SETUP + "batch = next(iter(loader))\nimages, labels = batch\nimages = images.to(device)\n",
            line=7,
        ),
        Invalid(
            _SETUP + "for batch in loader:\n    batch = {k: v.to(device) for k, v in batch.items()}\n",
            line=6,
        ),
        Invalid(
            _SETUP + "for x, y in loader:\n    x = x.to(device, non_blocking=False)\n",
            line=6,
            expected_fix=_SETUP + "for x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda") or not self._blocking_copy(node, func):
            return
        batch = self.context.value_of(func.value)
        if type(batch) is not Batch or not batch.loader.pinned:
            return
        if not batch.path and batch.loader.custom_collate:
            return  # a custom collate_fn may build a batch type whose `.to` takes no non_blocking
        replacement = with_keyword(node, "non_blocking", cst.Name("True"))
        self.report(node, fix=self.fix([(node, replacement)], message="Add `non_blocking=True`"))

    def _blocking_copy(self, call: cst.Call, func: cst.Attribute) -> bool:
        """A copy to a device without a true ``non_blocking``."""
        if any(arg.star for arg in call.args):
            return False
        positional = [arg for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
        flag = keywords.get("non_blocking")
        if flag is not None and literal_value(flag.value, self.context.scope.lookup_value) is not False:
            return False
        # `.cuda(device, non_blocking)` and `.to(device, dtype, non_blocking)` pass the flag
        # by position; `.to(device, dtype)` does not.
        if len(positional) > (2 if func.attr.value == "to" else 1):
            return False
        if func.attr.value == "to" and "device" not in keywords:
            return bool(positional) and self._device_like(positional[0].value)
        return True

    def _device_like(self, expr: cst.BaseExpression) -> bool:
        """Whether ``.to(expr)`` moves to a device (not a dtype, not another tensor)."""
        value = literal_value(expr, self.context.scope.lookup_value)
        if isinstance(value, str):
            return value.startswith("cuda")
        if isinstance(value, int) and not isinstance(value, bool):
            return True
        if isinstance(expr, cst.FormattedString):  # f"cuda:{rank}"
            first = expr.parts[0] if expr.parts else None
            return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda")
        if isinstance(expr, cst.Call):
            return self.context.qualname(expr.func) == "torch.device"
        if isinstance(expr, (cst.Name, cst.Attribute)):
            qualname = self.context.qualname(expr)
            if qualname is not None and qualname.startswith("torch."):
                return False  # torch.float16 and friends
            last = (expr.value if isinstance(expr, cst.Name) else expr.attr.value).lower()
            return last == "dev" or any(word in last for word in _DEVICE_WORDS)
        return False
