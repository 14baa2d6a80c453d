"""TPF402 tensor-created-then-moved."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import libcst as cst

from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import argument
from ...analysis.values import literal_value
from ...rule import Invalid, Rule
from ...types import Applicability
from ...finding import NodeFix, Replacement
from ...facts.tensors.device_targets import device_target
from ...facts.tensors.host_tensors import HostTensor, host_tensor
from ...facts.tensors.move_screens import create_then_move_candidates
from ...facts.tensors.passed_tensors import passed_host_tensor

# Keywords of .to()/.cuda() that do not change the result of moving a fresh tensor.
_DROPPABLE = frozenset({"non_blocking", "copy"})
_LEGACY_MESSAGE = (
    "`{factory}(...)` is created on the host and then copied to the device; create it there with a "
    "factory that takes `device=` (`torch.zeros`, `torch.full`, `torch.tensor(..., dtype=...)`)"
)
_PASSED_MESSAGE = (
    "`{helper}` copies to the device the `{factory}(...)` its caller makes on the host ({path}:{line}); "
    "create it on the device there (`device=`)"
)
# The cheap text pre-screen: a factory call and a move of a call's result somewhere (the ast
# screen then checks that one follows the other).
_FACTORY_CALL = re.compile(
    r"\b(?:zeros|ones|empty|full|rand|randn|randint|randperm|normal|arange|linspace|logspace|eye|tensor|[A-Za-z0-9]*Tensor)\s*\("
)
# A move of a call's result (`torch.zeros(3).cuda()`) or of a name (`z = z.cuda()`).
_MOVE_OF_CALL = re.compile(r"\.\s*(?:cuda|to)\s*\(")
# A helper returning a move (`return Variable(x).cuda()`): its callers may hand it a factory's tensor.
_RETURNED_MOVE = re.compile(r"\breturn\b[^\n]*\.\s*(?:cuda|to)\s*\(")


@dataclass(frozen=True)
class Move:
    """Where a ``.to``/``.cuda`` call moves its tensor, and whether ``device=`` can say it all.

    ``target`` is the expression for ``device=``; ``known`` means it is spelled out (a literal
    or ``torch.device(...)``) rather than a variable; ``foldable`` is False when the move also
    converts the dtype or memory format.
    """

    target: cst.BaseExpression
    known: bool
    foldable: bool


class TensorCreatedThenMoved(Rule):
    """## What it does
    Flags a tensor made on the host and then moved with `.cuda()` or `.to(device)`: the
    factories `torch.zeros`, `ones`, `empty`, `full`, `arange`, `linspace`, `logspace`,
    `eye`, `tensor`, the random `rand`, `randn`, `randint`, `randperm`, `normal`, and the
    legacy typed constructors called with sizes or data (`torch.FloatTensor(b, n)`,
    `torch.IntTensor(lengths)`). The move may come after steps that keep the tensor where it
    is (`.zero_()`, `.fill_(0)`, `.uniform_()`, `.float()`, `.to(x.dtype)`, `.to(torch.half)`,
    `.view(...)`, `.unsqueeze(...)`, `.expand_as(x)`) or a `Variable(...)` wrapper, or in a later statement of the same block
    that rebinds the name (`z = torch.randn(n)` ... `z = z.cuda()`) when no statement in
    between mentions it but lines that rebind it through such steps (`z = z.view(-1)`), or
    that hands the moved tensor to another target (`labels = z.cuda()`, `self.L[i] =
    z.to(device)`) when the function never names `z` again (no later line, no next round of
    a loop, no closure, no `global`); also
    when that move only follows another tensor to the GPU (`if x.is_cuda: z = z.cuda()`,
    `z = z.cuda() if x.is_cuda else z`), where `device=x.device` makes it in its place, or
    runs under a flag named for the GPU (`if args.cuda:`, `if self.use_gpu:`, `if
    torch.cuda.is_available():`): where it runs, the tensor could be made there. A flag
    named for anything else leaves the move a choice the rule does not read.
    The device may be held by an object: an attribute of a project settings object filled at
    module level (`cfg.GLOBAL.DEVICE` with `__C.GLOBAL.DEVICE = torch.device("cuda" ...)` in
    a config module, unless another module rewrites it or hands the object to a merging
    helper), a class attribute, or a tensor's own `t.get_device()` (-1 on the host, where
    `.to(-1)` raises). A project helper whose body only returns a move of its parameter
    (`def to_var(x): return Variable(x).cuda()`, or the same under a GPU flag) is reported at
    its move when a caller writes a factory call in the call (`to_var(torch.randn(n, d))`),
    without a fix: the caller's factory would need the helper's device.
    What the moved value is comes from the project's value engine (`context.value_of`); a
    one-time buffer built in `__init__` is reported too: it costs little once, but the fix
    is free.

    ## Why is this bad?
    The tensor is first allocated and filled in host memory, then copied to the device and
    the host copy thrown away: an extra allocation, a host-side fill and a host-to-device
    transfer that blocks the CPU. Passing `device=` creates it on the device directly.

    ## Example
    ```python
    mask = torch.ones(batch, seq_len).cuda()
    noise = torch.randn(batch, dim).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(batch, seq_len, device="cuda")
    noise = torch.randn(batch, dim, device=device)
    ```

    ## Fix safety
    The fix moves the target into `device=` and drops the `.to()`/`.cuda()` call (and its
    `non_blocking=`/`copy=`, which mean nothing for a fresh tensor). It is safe when the
    target is a literal device or `torch.device(...)` and the factory is not random. It is
    unsafe when the target is a variable (its value is only assumed to be a device), when the
    factory draws random numbers (on the GPU they come from the GPU's generator, so a seeded
    run gets other numbers), and with `requires_grad=True` (the result becomes a leaf tensor).
    In-place random fills (`.uniform_()`) count as random too. For separate statements the
    fix adds `device=` to the creating line and drops the move (the whole `z = z.cuda()`
    line when nothing else is left of it); when the device names something bound only after
    the creating line, the finding has no fix, nor has a move under an `x.is_cuda` test
    or a GPU flag (the factory would need `device=x.device`, or a device the flag picks: a
    rewrite of the test). A legacy constructor takes no GPU `device=`,
    so its findings carry no fix (rewrite it as `torch.zeros`/`torch.full`/`torch.tensor(...,
    dtype=...)` with `device=`). A move that also converts the dtype or memory format, and
    `.cuda(variable)` (where `device=None` would mean the CPU but `.cuda(None)` the current
    GPU) are reported without a fix. Not reported: `.to()` of a dtype or of another tensor
    (`.to(other)` may be either), `*_like` factories, factories that already pass `device=`,
    `generator=` or `pin_memory=`, a legacy constructor that wraps a storage, a name read
    between its creation and its move or kept after it (`w = z.cuda()` where the function
    reads `z` again, or a module's name), and the factories
    other than the legacy typed ones in a file that calls `torch.set_default_tensor_type` or
    `torch.set_default_device` (they may already make GPU tensors).
    """

    code = "TPF402"
    name = "tensor-created-then-moved"
    message = "`{factory}(...)` is created on the host and then copied to the device; pass `device=` to create it there"
    fix_applicability = Applicability.SAFE
    fix_applicabilities = (Applicability.SAFE, Applicability.UNSAFE)
    triggers = (".cuda(", ".to(")
    statement_local = True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A factory call, and `.cuda(` or `.to(` on the result of some call."""
        if _MOVE_OF_CALL.search(source) is None:
            return False
        return _FACTORY_CALL.search(source) is not None or _RETURNED_MOVE.search(source) is not None

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """A factory call without ``device=`` moved straight to what could be a device."""
        return bool(create_then_move_candidates(tree))

    @classmethod
    def candidates_tree(cls, tree: ast.Module) -> Sequence[ast.AST]:
        """The calls the screen could not rule out: a finding depends on its statement and
        on how the names it reads are bound, nothing else in the module."""
        return create_then_move_candidates(tree)


    VALID = (
        "import torch\nx = torch.zeros(3).to(torch.float16)\n",
        "import torch\nx = torch.zeros(3).to(y.dtype)\n",
        "import torch\nx = torch.zeros(3).to(other)\n",
        "import torch\nx = torch.zeros_like(y).cuda()\n",
        "import torch\nx = torch.zeros(3, device='cpu').cuda()\n",
        "import torch\nx = torch.zeros(3).to('cpu')\n",
        "import torch\nx = torch.zeros_like(y).float().cuda()\n",
        "import torch\nx = torch.FloatTensor().cuda()\n",
        "import torch\nx = torch.FloatTensor(2, device='cpu').cuda()\n",
        "import torch\nz = torch.randn(3)\nprint(z)\nz = z.cuda()\n",
        "import torch\nz = torch.randn(3)\nw = z.cuda()\n",
        "import torch\nz = torch.randn(3)\nif args.normalize:\n    z = z.cuda()\n",
        "import torch\nx = torch.tensor(0).to(unknown).cuda()\n",
        "import torch\nz = torch.randn(3)\nz = z.cuda() + z\n",
        "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\nx = torch.zeros(3).cuda()\n",
        "import torch\nx = torch.rand(3).clone().cuda()\n",
        "import torch\ns = torch.ByteStorage.from_buffer(b)\nx = torch.ByteTensor(s).to('cuda')\n",
        "import torch\nx = torch.randn(3, generator=g).cuda()\n",
        "import torch\nx = torch.from_numpy(a).cuda()\n",
        "def f(torch):\n    return torch.zeros(3).cuda()\n",
        "import torch\nx = torch.zeros(3).to(**kw)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nx = torch.zeros(3).cuda()\n",
            line=2,
            expected_fix='import torch\nx = torch.zeros(3, device="cuda")\n',
        ),
        Invalid(
            "import torch as th\nx = th.randn(2, 3).to(device)\n",
            line=2,
            expected_fix="import torch as th\nx = th.randn(2, 3, device=device)\n",
        ),
        Invalid(
            "from torch import ones\nx = ones(4).cuda(1)\n",
            line=2,
            expected_fix='from torch import ones\nx = ones(4, device="cuda:1")\n',
        ),
        Invalid(
            "import torch\nx = torch.tensor(data).to(torch.device('cuda'), non_blocking=True)\n",
            line=2,
            expected_fix="import torch\nx = torch.tensor(data, device=torch.device('cuda'))\n",
        ),
        Invalid("import torch\nx = torch.arange(5).to(device, torch.float16)\n", line=2),
        Invalid(
            "import torch\nx = torch.zeros(3).float().cuda()\n",
            line=2,
            expected_fix='import torch\nx = torch.zeros(3, device="cuda").float()\n',
        ),
        Invalid("import torch\nx = torch.FloatTensor(2, 3).zero_().to(device)\n", line=2),
        Invalid("import torch\nz = torch.zeros(2).long()\nif args.cuda:\n    z = z.cuda()\n", line=4),
        Invalid(
            "import torch\nx = torch.tensor(0).to(torch.float16).cuda()\n",
            line=2,
            expected_fix='import torch\nx = torch.tensor(0, device="cuda").to(torch.float16)\n',
        ),
        Invalid("import torch\nx = torch.IntTensor([1, 2]).cuda()\n", line=2),
        Invalid(
            "import torch\nz = torch.randn(2, 3)\nn = 3\nz = z.cuda()\n",
            line=4,
            expected_fix='import torch\nz = torch.randn(2, 3, device="cuda")\nn = 3\n',
        ),
        Invalid(
            "import torch\nfrom torch.autograd import Variable\nv = Variable(torch.ones(4)).cuda()\n",
            line=3,
            expected_fix='import torch\nfrom torch.autograd import Variable\nv = Variable(torch.ones(4, device="cuda"))\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return
        if not isinstance(func.value, (cst.Call, cst.Name)):
            return
        host = host_tensor(func.value, self.context, node)
        if host is None:
            self._passed(node)
            return
        factory = host.factory
        move = self._cuda_move(node) if func.attr.value == "cuda" else self._to_move(node)
        if move is None:
            return
        short = self.context.code_for(factory.func)
        message = self.message.format(factory=short)
        if host.legacy:  # legacy constructors take no device= for a GPU: no fix
            self.report(node, _LEGACY_MESSAGE.format(factory=short))
            return
        if not move.foldable or host.conditional:  # a move on one path: where to make it depends on its test
            self.report(node, message)
            return
        grad = argument(factory, "requires_grad", None, self.context.lookup)
        leaf_unchanged = grad.missing or grad.value is False
        safe = move.known and not host.random and leaf_unchanged
        if host.statement is not None and not host.device_readable_at_creation(move.target):
            self.report(node, message)  # the device is named only after the tensor is made
            return
        placed = with_keywords(factory, [keyword_arg("device", move.target)])
        self.report(node, message, fix=self._fold(node, host, placed, safe))

    def _passed(self, node: cst.Call) -> None:
        """A helper that moves the fresh host tensor a caller hands it: reported at the
        move, naming the caller; no fix (the caller's factory would need the helper's device)."""
        receiver = cst.ensure_type(node.func, cst.Attribute).value
        move = self._cuda_move(node) if cst.ensure_type(node.func, cst.Attribute).attr.value == "cuda" else self._to_move(node)
        passed = passed_host_tensor(receiver, node, self.context) if move is not None else None
        if passed is not None:
            self.report(node, _PASSED_MESSAGE.format(helper=passed.helper, factory=passed.factory, path=passed.path, line=passed.line))

    def _fold(self, node: cst.Call, host: HostTensor, placed: cst.Call, safe: bool) -> NodeFix:
        """``device=`` in the factory, and the move replaced by what it moved (a separate
        ``z = z.cuda()`` line is removed)."""
        receiver = cst.ensure_type(node.func, cst.Attribute).value
        applicability = Applicability.SAFE if safe else Applicability.UNSAFE
        if host.statement is None:
            if receiver is host.factory:
                new = placed.with_changes(lpar=[*node.lpar, *placed.lpar], rpar=[*placed.rpar, *node.rpar])
            else:
                new = receiver.deep_replace(host.factory, placed).with_changes(lpar=node.lpar, rpar=node.rpar)
            return self.fix([(node, new)], message="Pass `device=` to the factory", applicability=applicability)
        assert host.move_statement is not None
        created = host.statement.deep_replace(host.factory, placed)
        if isinstance(receiver, cst.Name) and not host.handed_on:
            moved: Replacement = cst.RemovalSentinel.REMOVE
            target: cst.CSTNode = host.move_statement
        else:
            moved, target = receiver.with_changes(lpar=node.lpar, rpar=node.rpar), node
        return self.fix(
            [(host.statement, created), (target, moved)],
            message="Pass `device=` to the factory",
            applicability=applicability,
        )

    def _cuda_move(self, call: cst.Call) -> Optional[Move]:
        """``.cuda()``, ``.cuda(1)``, ``.cuda(device=d, non_blocking=True)``."""
        if any(arg.star for arg in call.args):
            return None
        foldable = True
        for index, arg in enumerate(call.args):
            keyword = arg.keyword.value if arg.keyword is not None else ("device", "non_blocking")[min(index, 1)]
            if keyword == "memory_format":
                foldable = False
            elif keyword not in ("device", "non_blocking"):
                return None
        device = argument(call, "device", 0, self.context.lookup)
        if device.missing or device.value is None:
            return Move(cst.SimpleString('"cuda"'), known=True, foldable=foldable)
        if isinstance(device.value, int) and not isinstance(device.value, bool):
            return Move(cst.SimpleString(f'"cuda:{device.value}"'), known=True, foldable=foldable)
        if isinstance(device.value, str):
            assert device.node is not None
            return Move(device.node.value, known=True, foldable=foldable)
        # `.cuda(args.gpu)`: `device=None` would mean the CPU where `.cuda(None)` means the
        # current GPU, so a variable ordinal is reported without a fix.
        return Move(cst.SimpleString('"cuda"'), known=False, foldable=False)

    def _to_move(self, call: cst.Call) -> Optional[Move]:
        """``.to(device)``, ``.to(device=d)``; not ``.to(dtype)`` or ``.to(tensor)``."""
        if any(arg.star for arg in call.args):
            return None
        positional = [arg for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
        foldable = True
        for keyword in keywords:
            if keyword in ("dtype", "memory_format"):
                foldable = False
            elif keyword not in _DROPPABLE and keyword != "device":
                return None
        if "device" in keywords:
            if positional:
                return None
            expr = keywords["device"].value
            target = device_target(expr, self.context)
            if target is not None and target.host:
                return None
            if literal_value(expr, self.context.lookup) is None:
                return None
        elif positional:
            expr = positional[0].value
            target = device_target(expr, self.context)
            if target is None or target.host:
                return None
            if len(positional) > 1:
                foldable = False  # .to(device, dtype[, non_blocking, copy])
        else:
            return None
        return Move(expr, known=target is not None and target.known, foldable=foldable)
