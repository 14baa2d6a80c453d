"""TPF201 zero-grad-without-set-to-none."""

from __future__ import annotations

import ast
import re
from typing import Optional, Sequence

import libcst as cst

from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import argument
from ...analysis.values import literal_value
from ...context import FileContext
from ...rule import Invalid, Rule, Valid
from ...types import Applicability
from ...facts.training.gradients import grad_attribute, writes_into_grads
from ...facts.training.screens import could_zero_grads
from ...facts.training.test_code import in_test_code

_OLD = {"target-torch-version": "1.13"}
_CUDA_GRAPHS = re.compile(r"CUDAGraph|cuda\.graph\(|cudagraph|graphed_callables|reduce-overhead|capture_begin")


def _captures_cuda_graphs(context: FileContext) -> bool:
    """Whether the module captures CUDA graphs (once per file: ``context.fact``)."""
    return _CUDA_GRAPHS.search(context.source) is not None
_FIX_MESSAGE = "Set the gradients to `None` instead of zeroing them"


# p.grad = ..., p.grad.zero_(), p.grad.data.zero_(), p.grad.fill_(...)
_GRAD_WRITE = re.compile(r"\.grad(?:\.data)?(?:\s*=(?!=)|\.(?:zero_|fill_|detach_)\s*\()")


class ZeroGradWithoutSetToNone(Rule):
    """## What it does
    Flags gradients that are zeroed in place: `zero_grad(set_to_none=False)` on an optimizer
    or module, and manual zeroing such as `p.grad.zero_()`, `p.grad.data.zero_()`,
    `p.grad.fill_(0)` or `p.grad = torch.zeros_like(p)`. When `target-torch-version` is
    older than 2.0 (where `set_to_none` defaulted to `False`), a bare `zero_grad()` too (with
    a fix from 1.7 on, where `set_to_none` was added).

    ## Why is this bad?
    Zeroing launches a memset per parameter tensor every step and keeps the gradient memory
    allocated between steps; the next backward then *accumulates* into the zeros (a read and
    a write) instead of simply writing. Setting gradients to `None` skips the memset, frees
    the memory until backward needs it, and lets backward assign. From PyTorch 2.0 on,
    `zero_grad()` sets them to `None` by default.

    ## Example
    ```python
    optimizer.zero_grad(set_to_none=False)
    for p in model.parameters():
        p.grad.zero_()
    ```

    ## Use instead
    ```python
    optimizer.zero_grad(set_to_none=True)
    for p in model.parameters():
        p.grad = None
    ```

    ## Fix safety
    The fix is unsafe: code that reads `p.grad` before the next backward (or expects every
    parameter to have a gradient, even one that received none) sees `None` instead of
    zeros, and optimizers skip parameters whose gradient is `None`. The rule stays silent in
    modules that write into existing gradients (`p.grad += g`, `p.grad.add_(...)`,
    `p.grad.copy_(...)`, `dist.all_reduce(p.grad)`), which need them allocated; for
    assignments of zeros that create missing gradients (`if p.grad is None:`, initialisers);
    in modules that capture CUDA graphs (static gradient buffers); and in unit tests.
    """

    code = "TPF201"
    name = "zero-grad-without-set-to-none"
    message = (
        "Gradients are zeroed in place; set them to `None` instead "
        "(`zero_grad(set_to_none=True)` / `p.grad = None`) to skip a memset per parameter"
    )
    fix_applicability = Applicability.UNSAFE
    triggers = ("zero_grad", ".grad")  # every manual zeroing writes to a `.grad`

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A `zero_grad(` call, or a `.grad` that is zeroed or assigned, in a module that
        does not capture CUDA graphs (where the rule never reports: see `_exempt`)."""
        return ("zero_grad" in source or _GRAD_WRITE.search(source) is not None) and _CUDA_GRAPHS.search(source) is None

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a docstring or a ``def zero_grad``) calls ``.zero_grad(...)``,
        zeroes or fills a ``.grad`` in place, or assigns a call to one."""
        return could_zero_grads(tree)


    VALID = (
        "optimizer.zero_grad()\n",
        "optimizer.zero_grad(set_to_none=True)\n",
        "model.zero_grad(set_to_none=args.set_to_none)\n",
        "optimizer.zero_grad(**kwargs)\n",
        "x.zero_()\nbuf.fill_(0)\ngrad = torch.zeros_like(p)\ngrad.zero_()\n",
        "for p in params:\n    p.grad.zero_()\nfor p in params:\n    p.grad.add_(g)\n",
        "p.grad.data.zero_()\np.grad += other.grad\n",
        "def zero_grad(self, set_to_none=True):\n    for p in self.params:\n"
        "        if set_to_none:\n            p.grad = None\n        else:\n            p.grad.zero_()\n",
        "p.grad.fill_(1.0)\np.grad_sample.zero_()\n",
        Valid("optimizer.zero_grad(set_to_none=True)\n", _OLD),
    )
    INVALID = (
        Invalid(
            "optimizer.zero_grad(set_to_none=False)\n",
            line=1,
            expected_fix="optimizer.zero_grad(set_to_none=True)\n",
        ),
        Invalid("NONE = False\nmodel.zero_grad(NONE)\n", line=2, expected_fix="NONE = False\nmodel.zero_grad(True)\n"),
        Invalid(
            "for p in model.parameters():\n    p.grad.data.zero_()\n",
            line=2,
            expected_fix="for p in model.parameters():\n    p.grad = None\n",
        ),
        Invalid(
            "import torch\np.grad = torch.zeros_like(p)\n",
            line=2,
            expected_fix="import torch\np.grad = None\n",
        ),
        Invalid("opt.zero_grad()\n", line=1, expected_fix="opt.zero_grad(set_to_none=True)\n", options=_OLD),
        Invalid("if p.grad is not None:\n    p.grad.fill_(0.0)\n", line=2),
        # torch 1.6 has no `set_to_none`: reported, no fix
        Invalid("optimizer.zero_grad()\n", line=1, expected_fix="optimizer.zero_grad()\n", options={"target-torch-version": "1.6"}),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("zero_grad", "zero_", "fill_"):
            return
        if self._exempt():
            return
        name = func.attr.value
        if name == "zero_grad":
            self._zero_grad(node)
        elif name in ("zero_", "fill_") and grad_attribute(func.value) is not None:
            if name == "fill_" and not (len(node.args) == 1 and literal_value(node.args[0].value) == 0):
                return
            if self._deliberate():
                return
            self.report(node, fix=self._none_fix(node, grad_attribute(func.value)))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and target.attr.value == "grad") or self._exempt():
            return
        if self.context.qualname(node.value.func) not in ("torch.zeros_like", "torch.zeros"):
            return
        if self._deliberate() or self._allocating(target):
            return
        fix = self.fix([(node.value, cst.Name("None"))], _FIX_MESSAGE)
        self.report(node, fix=fix)

    def _exempt(self) -> bool:
        """Unit tests (they exercise both modes on purpose) and CUDA-graph code (captured
        graphs need static gradient buffers, so zeroing in place is required there)."""
        return self.context.fact(_captures_cuda_graphs) or in_test_code(self.context.ancestors, self.context.path)

    # -- zero_grad(...) ---------------------------------------------------------------------
    def _zero_grad(self, node: cst.Call) -> None:
        value = argument(node, "set_to_none", 0, self.context.lookup)
        fix = None
        if value.value is False:
            if value.node is not None:
                arg = value.node.with_changes(value=cst.Name("True"))
                fix = self.fix([(value.node, arg)], "Pass `set_to_none=True`")
        elif value.missing and self.context.settings.target_torch_version < (2, 0):
            # `set_to_none` exists from torch 1.7 on; older targets get the finding only.
            if self.context.settings.target_torch_version >= (1, 7):
                fixed = with_keywords(node, [keyword_arg("set_to_none", cst.Name("True"))])
                fix = self.fix([(node, fixed)], "Pass `set_to_none=True`")
        else:
            return
        if self.context.fact(writes_into_grads):
            return
        self.report(node, fix=fix)

    # -- manual zeroing ----------------------------------------------------------------------
    def _deliberate(self) -> bool:
        """In-place zeroing that is a choice: the module needs allocated gradients, or the
        code implements ``set_to_none`` itself (a ``zero_grad(set_to_none=...)`` method)."""
        if self.context.fact(writes_into_grads):
            return True
        for ancestor in reversed(self.context.ancestors):
            if isinstance(ancestor, cst.FunctionDef):
                params = ancestor.params
                names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
                return "set_to_none" in names
            if isinstance(ancestor, cst.If) and "set_to_none" in self.context.code_for(ancestor.test):
                return True
        return False

    def _allocating(self, target: cst.Attribute) -> bool:
        """``p.grad = torch.zeros_like(p)`` that creates gradients which did not exist (under
        ``if p.grad is None:``, or in an initialiser such as ``__init__``/``_init_state``) is
        allocation, not zeroing: setting them to None would undo its purpose."""
        owner = self.context.code_for(target.value).replace(" ", "")
        ancestors = self.context.ancestors
        for index in range(len(ancestors) - 1, 0, -1):
            ancestor, child = ancestors[index - 1], ancestors[index]
            if isinstance(ancestor, cst.If) and child is ancestor.body:
                test = self.context.code_for(ancestor.test).replace(" ", "")
                if f"{owner}.gradisNone" in test:
                    return True
            if isinstance(ancestor, cst.FunctionDef):
                return "init" in ancestor.name.value.lower()
        return False

    def _none_fix(self, call: cst.Call, grad: Optional[cst.Attribute]):
        """``p.grad.zero_()`` as a statement of its own becomes ``p.grad = None``."""
        statement = self._expression_statement(call, self.context.ancestors)
        if statement is None or grad is None:
            return None
        assign = cst.Assign(targets=[cst.AssignTarget(grad)], value=cst.Name("None"), semicolon=statement.semicolon)
        return self.fix([(statement, assign)], _FIX_MESSAGE)

    @staticmethod
    def _expression_statement(call: cst.Call, ancestors: Sequence[cst.CSTNode]) -> Optional[cst.Expr]:
        chain = list(ancestors)
        if chain and chain[-1] is call:
            chain.pop()
        if chain and isinstance(chain[-1], cst.Expr) and chain[-1].value is call:
            return chain[-1]
        return None
