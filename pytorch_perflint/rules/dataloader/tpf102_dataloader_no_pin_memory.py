"""TPF102 dataloader-no-pin-memory."""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.call_edits import with_argument_value, with_keyword
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.dataloader.loader_args import dataset_on_accelerator, dataset_on_device, is_dataloader, known_loader_args, names_dataloader_class, project_loader, subclass_loader_args

_SETUP = "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\n"


class DataloaderNoPinMemory(Rule):
    """## What it does
    Flags a `torch.utils.data.DataLoader` without `pin_memory=True` in a module that uses
    CUDA. A loader in a module's `if __name__ == "__main__":` preview runs only when that
    module is the script, so there the module's own code must select the GPU (the scripts
    that import it do not run then).

    ## Why is this bad?
    A copy from ordinary (pageable) host memory to the GPU goes through a staging buffer:
    the driver first copies the batch into page-locked memory, then to the device, and the
    copy cannot overlap with compute. With `pin_memory=True` the loader puts each batch in
    page-locked memory, so the transfer is a single faster DMA that `non_blocking=True` can
    overlap with the previous step. Pinning is itself a host copy (the loader's pin thread
    does it beside the training thread), so the gain shows where the input copy is a real
    part of the step: on the project's H200 scenario (12 MB batches, copied blocking) it was
    within the noise on two days (1.00x, docs/benchmarks/gpu-nvidia-h200-2.md).

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4)
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    ```

    ## Fix safety
    The fix adds `pin_memory=True` and is safe: batches hold the same values, only in
    page-locked memory. Datasets whose tensors already live on the GPU are not flagged
    (pinning them raises). When `pin_memory=False` comes from a `**` dict there is no fix.
    """

    code = "TPF102"
    name = "dataloader-no-pin-memory"
    message = "`DataLoader` without `pin_memory=True` in a CUDA module; pinned batches copy to the GPU faster"
    fix_applicability = Applicability.SAFE
    triggers = ("DataLoader",)
    needs_cuda = True

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a docstring or a comment) names ``DataLoader`` or a class named so."""
        return names_dataloader_class(tree)

    VALID = (
        _SETUP + "loader = DataLoader(ds, batch_size=32, pin_memory=True)\n",
        _SETUP + "loader = DataLoader(ds, pin_memory=torch.cuda.is_available())\n",
        _SETUP + "loader = DataLoader(ds, **kwargs)\n",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32)\n",
        _SETUP + "loader = DataLoader(ds, 32, True, None, None, 4, None, True)\n",
        "from torch_geometric.loader import DataLoader\nx = x.cuda()\nloader = DataLoader(ds)\n",
        _SETUP + "ds = TensorDataset(x.to(device), y.to(device))\nloader = DataLoader(ds, batch_size=32)\n",
    )
    INVALID = (
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32)\n",
            line=4,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, pin_memory=True)\n",
        ),
        Invalid(
            _SETUP + "loader = DataLoader(ds, batch_size=32, pin_memory=False)\n",
            line=4,
            expected_fix=_SETUP + "loader = DataLoader(ds, batch_size=32, pin_memory=True)\n",
        ),
        Invalid(
            _SETUP + "kw = {'pin_memory': False}\nloader = DataLoader(ds, **kw)\n",
            line=5,
            expected_fix=_SETUP + "kw = {'pin_memory': False}\nloader = DataLoader(ds, **kw)\n",
        ),
        Invalid(
            "import torch.utils.data as tud\nx = x.cuda()\nloader = tud.DataLoader(\n    ds,\n    batch_size=4,\n)\n",
            line=3,
            expected_fix=(
                "import torch.utils.data as tud\nx = x.cuda()\n"
                "loader = tud.DataLoader(\n    ds,\n    batch_size=4,\n    pin_memory=True,\n)\n"
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        subclass = None
        if not is_dataloader(self.context, node):
            subclass = project_loader(self.context, node)  # a project subclass of DataLoader
            if subclass is None:
                return
        pin = (known_loader_args(self.context, node) if subclass is None else subclass_loader_args(subclass)).pin_memory
        if not (pin.missing or pin.value is False):
            return
        if dataset_on_device(node, self.context.lookup, self.context.code_for) or dataset_on_accelerator(self.context, node) or self._cpu_preview():
            return
        if subclass is not None:  # what its call passes may be changed on the way: no fix
            self.report(node)
            return
        true = cst.Name("True")
        if pin.node is not None:
            replacement = with_argument_value(node, pin.node, true)
        elif pin.missing:
            replacement = with_keyword(node, "pin_memory", true)
        else:
            self.report(node)
            return
        self.report(node, fix=self.fix([(node, replacement)], message="Add `pin_memory=True`"))

    def _cpu_preview(self) -> bool:
        """Under the module's `__main__` guard, with no accelerator selected by the module
        itself or a project module it imports: it runs as a standalone script, which
        RULES.md keeps CPU-only (the modules that import it do not run then; an entry
        script and the modules it imports share the fact)."""
        project = self.context.project
        if project is None or not any(isinstance(a, cst.If) and _main_guard(a.test) for a in self.context.ancestors):
            return False
        return not project.selects_through_imports(self.context.path)


def _main_guard(test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == "__name__"
