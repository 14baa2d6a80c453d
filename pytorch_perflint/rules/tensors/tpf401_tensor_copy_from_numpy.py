"""TPF401 tensor-copy-from-numpy."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Callable, Dict, Optional, Sequence

import libcst as cst

from ...analysis.call_edits import keyword_arg, with_keywords
from ...finding import NodeFix
from ...rule import Invalid, Rule
from ...types import Applicability
from ...project.kinds import Array, TensorType, converted_as_array, may_hold_array
from ...project.records import Record
from ...project.values import engine_for
from ...facts.tensors.asked_roots import EACH
from ...facts.tensors.screens import CopyQuestion, answer_copy_question, copy_question, names_a_constructor
from ...facts.tensors.screens import numpy_copy_candidates, numpy_copy_candidates_without

if TYPE_CHECKING:
    from ...project import ProjectIndex

# The legacy constructors and the dtype each one casts to.
_LEGACY: Dict[str, str] = {
    "torch.Tensor": "float32",
    "torch.FloatTensor": "float32",
    "torch.DoubleTensor": "float64",
    "torch.HalfTensor": "float16",
    "torch.BFloat16Tensor": "bfloat16",
    "torch.LongTensor": "int64",
    "torch.IntTensor": "int32",
    "torch.ShortTensor": "int16",
    "torch.CharTensor": "int8",
    "torch.ByteTensor": "uint8",
    "torch.BoolTensor": "bool",
}
# Keywords of torch.tensor that torch.as_tensor takes as well.
_KEPT = ("dtype", "device")


# A call of (or an import alias for) ``tensor``, ``Tensor``, ``FloatTensor``...: any name
# ending in "ensor" passes, as a pattern that starts with a literal is searched for fast.
_CONSTRUCTOR_CALL = re.compile(r"ensor\s*\(")
_CONSTRUCTOR_ALIAS = re.compile(r"ensor\s+as\s")
# Where known arrays come from: NumPy, pandas' `.values` / `.to_numpy()`, OpenCV, h5py and
# SciPy readers, and what the project index can say (imported helpers, `self.` attributes).
_ARRAY_SOURCE = re.compile(r"numpy|np\.|pandas|\.values|to_numpy|cv2|h5py|scipy|\bimport\b|\bself\.")


def _never_array(path: str, project: "ProjectIndex") -> Callable[[str], bool]:
    """Whether a name of the module at ``path`` is a project function that never returns
    an array (the project screen stops taking it for an array source)."""

    def never_array(name: str) -> bool:
        walked = name.endswith(EACH)  # an item of what it returns (a generator's yields, `a, b = f()`)
        root = name[: -len(EACH)] if walked else name
        if root in ("self", "super"):  # `loc, label = self.creator(box, anchor)`: a method's or a held object's call
            return not engine_for(project).reads_parameters()  # read where the engine reads callers (cheap screens elsewhere)
        definition = project.resolve(path, root)
        if walked and (definition is None or definition.kind not in ("function", "class")):
            return True  # the items of a library call's result (`itertools.product(...)`) are not known
        if definition is None or definition.kind != "function":
            return False
        returned = engine_for(project, optimistic=True).returns(definition)
        if type(returned) is Record:  # a dict filled by item writes: its entries are read by key
            return False
        return not may_hold_array(returned) if walked else type(returned) is not Array

    return never_array


class TensorCopyFromNumpy(Rule):
    """## What it does
    Flags `torch.tensor(x)`, `torch.Tensor(x)` and the legacy typed constructors
    (`torch.FloatTensor(x)`, `torch.LongTensor(x)`, ...) when `x` is known to be a NumPy
    array. What `x` holds is the project's value engine's answer (`context.value_of`): the
    result of a NumPy function that returns an array (`np.where(m)[0]`, the arrays of
    `np.unique(..., return_inverse=True)` and `np.meshgrid`), `.numpy()`, an OpenCV/imageio
    read, an `h5py` dataset or `np.load` archive key read whole or sliced (`f["x"][:]`), a
    SciPy filter or matrix routine (and `wavfile.read`'s data, `fmin_l_bfgs_b`'s minimum,
    a `loadmat` variable), a field of a structured array, arithmetic or `.astype`
    of an array, a reduction over an axis a 1-d array lacks (`np.argmax(a, 1)`: it raises on
    one), `np.digitize` of an array, a slice or fancy index of one (`self.state[ind]`), or a name bound to one
    of these. With the project index it also follows a project function's returns (any
    module), a method of the object's class, an attribute every assignment of its class
    sets to an array (also when it reads itself: `self.state = self.state + dx`), and a
    parameter that every project caller passes an array (the default when none passes it;
    for a public method, every `.name(...)` call in the project, when no caller can hide),
    a base's method through `super()`, a read-only `@property`, an item unpacked from a
    helper's tuple (`feats, names = load(p)`), an entry of a dict of arrays (`store["x"]`),
    `with np.load(p) as d`, and an array changed in place (`a *= mask`, `a[0] = x`).
    `np.load(p)` of a path not known is an array here: a constructor raises on an `.npz`
    archive, so where the program runs it was one. A value the engine does not know (a helper that may
    return a list, `np.load` of a path that may hold a pickle, `arr[i]`, which may be a
    scalar) is not reported, and nothing is known of other definitions in a file linted
    outside any project.

    ## Why is this bad?
    `torch.tensor` always copies its data. For a NumPy array the copy is wasted work and
    doubles the memory: `torch.from_numpy` wraps the array's buffer without copying, and
    `torch.as_tensor` copies only when a dtype or device conversion needs it. The legacy
    constructors are deprecated and hide a cast to their fixed dtype.

    ## Example
    ```python
    obs = np.stack(frames)
    batch = torch.tensor(obs)
    weights = torch.FloatTensor(np.ones(n))
    ```

    ## Use instead
    ```python
    obs = np.stack(frames)
    batch = torch.from_numpy(obs)
    weights = torch.as_tensor(np.ones(n), dtype=torch.float32)
    ```

    ## Fix safety
    The fix is unsafe: the tensor now shares memory with the array, so writing to one
    changes the other, and `torch.from_numpy` rejects arrays with negative strides
    (`a[::-1]`) and arrays whose strides are not a multiple of the element size (a field
    of a packed structured array), and warns on read-only ones. `torch.tensor(x)` becomes `torch.from_numpy(x)`
    (same dtype); with `dtype=`/`device=` it becomes `torch.as_tensor(x, ...)`. A legacy
    constructor becomes `torch.as_tensor(x, dtype=...)` with its dtype (`torch.Tensor` is
    taken as `float32`, the default dtype). Calls with `requires_grad=` are reported without
    a fix; calls with `pin_memory=True` need the copy and are not reported.
    """

    code = "TPF401"
    name = "tensor-copy-from-numpy"
    message = "`{call}` copies a NumPy array; use `torch.from_numpy` or `torch.as_tensor` to share its memory"
    fix_applicability = Applicability.UNSAFE
    statement_local = True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """An array library in the file and a tensor constructor call (or an alias of one)."""
        constructor = _CONSTRUCTOR_CALL.search(source) or _CONSTRUCTOR_ALIAS.search(source)
        return constructor is not None and _ARRAY_SOURCE.search(source) is not None and names_a_constructor(source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """A tensor constructor is given something that could be an array."""
        return bool(numpy_copy_candidates(tree))

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """As ``could_fire_tree``, once the project's functions that never return an array
        (``to_dtype(x)`` in torch's lowering) are no longer taken for array sources, and
        parameters only where the engine reads them from their callers."""
        # Parameters count only where the engine reads them from their callers.
        return bool(numpy_copy_candidates_without(tree, _never_array(path, project), engine_for(project).reads_parameters()))

    @classmethod
    def project_question(cls, tree: ast.Module) -> CopyQuestion:
        """``could_fire_project``'s question as data (worked out where the tree is)."""
        return copy_question(tree)

    @classmethod
    def could_fire_answering(cls, question: CopyQuestion, path: str, project: "ProjectIndex") -> Optional[bool]:
        """``could_fire_project`` from the question, without the tree unless the project's
        names disagree."""
        return answer_copy_question(question, _never_array(path, project), engine_for(project).reads_parameters())

    @classmethod
    def candidates_tree(cls, tree: ast.Module) -> Sequence[ast.AST]:
        """The calls the screen could not rule out: a finding depends on its statement and
        on how the names it reads are bound, nothing else in the module."""
        return numpy_copy_candidates(tree)

    VALID = (
        "import torch\nx = torch.tensor([1.0, 2.0])\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.float32(1.0))\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.sum(a))\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.random.rand())\n",
        "import torch\nimport numpy as np\na = np.zeros(3)\nx = torch.tensor(a.tolist())\n",
        "import torch\nimport numpy as np\na = np.zeros(3)\nx = torch.tensor(a.shape)\n",
        "import torch\nimport numpy as np\ndef f(a):\n    return torch.tensor(a)\n",
        "import torch\nimport numpy as np\na = np.zeros(3)\na = a + t\nx = torch.tensor(a)\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.load(path, allow_pickle=True))\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.load('a.npz'))\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.zeros(3), pin_memory=True)\n",
        "import numpy as np\ndef f(torch):\n    return torch.tensor(np.zeros(3))\n",
        "import torch\nimport numpy as np\nx = torch.from_numpy(np.zeros(3))\n",
        "import torch\nimport numpy as np\nx = torch.Tensor(3, 4)\n",
        "import torch\nimport numpy as np\na = np.zeros(3)\nx = torch.tensor(a[0])\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.where(m))\n",
        "import torch\nimport numpy as np\nx = torch.tensor(np.load(p, allow_pickle=True)['x'])\n",
        "import torch\nimport numpy as np\na = np.zeros(3)\nx = torch.tensor([a, a])\n",
        "import torch\nimport numpy as np\nif c:\n    a = np.zeros(3)\nelse:\n    a = [0.0]\nx = torch.tensor(a)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport numpy as np\nx = torch.tensor(np.zeros(3))\n",
            line=3,
            expected_fix="import torch\nimport numpy as np\nx = torch.from_numpy(np.zeros(3))\n",
        ),
        Invalid(
            "import torch as th\nimport numpy\na = numpy.stack(xs)\nx = th.FloatTensor(a)\n",
            line=4,
            expected_fix="import torch as th\nimport numpy\na = numpy.stack(xs)\nx = th.as_tensor(a, dtype=th.float32)\n",
        ),
        Invalid(
            "from torch import tensor\nx = tensor(t.cpu().numpy(), dtype=d)\n",
            line=2,
            expected_fix="from torch import tensor\nimport torch\n\nx = torch.as_tensor(t.cpu().numpy(), dtype=d)\n",
        ),
        Invalid("import torch\nimport numpy as np\nx = torch.tensor(np.ones(2), requires_grad=True)\n", line=3),
        Invalid(
            "import torch\nimport numpy as np\nx = torch.tensor(np.where(m > 0)[0])\n",
            line=3,
            expected_fix="import torch\nimport numpy as np\nx = torch.from_numpy(np.where(m > 0)[0])\n",
        ),
        Invalid("import torch\nimport numpy as np\nv, inv = np.unique(a, return_inverse=True)\nx = torch.tensor(inv)\n", line=4),
        Invalid("import torch\nimport numpy as np\nx = torch.tensor(np.load(p)['images'][:])\n", line=3),
        Invalid(
            "import torch\nimport numpy as np\nx = torch.Tensor(np.load(path))\n",
            line=3,
            expected_fix="import torch\nimport numpy as np\nx = torch.as_tensor(np.load(path), dtype=torch.float32)\n",
        ),
        Invalid("import torch\nimport numpy as np\nx = [torch.tensor(a) for a in (np.zeros(2), np.ones(2))]\n", line=3),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        bound = name is None and isinstance(node.func, (cst.Attribute, cst.Name))
        if not bound and name != "torch.tensor" and name not in _LEGACY:
            return
        if not node.args or any(arg.star for arg in node.args):
            return
        data = node.args[0]
        if data.keyword is not None and data.keyword.value != "data":
            return
        keywords = {arg.keyword.value: arg for arg in node.args[1:] if arg.keyword is not None}
        if len(keywords) != len(node.args) - 1:
            return  # more than one positional argument: not a plain conversion
        if (bound or name in _LEGACY) and keywords:
            return
        if "pin_memory" in keywords or not set(keywords) <= {*_KEPT, "requires_grad"}:
            return
        # Asked last, of a call shaped like a conversion: what a bound name holds is dear.
        if bound and type(self.context.value_of(node.func)) is not TensorType:
            return
        if bound:
            name = "<bound>"  # `self.Tensor(x)`, `self.Tensor = torch.FloatTensor`: no fix (which one is not known)
        if not converted_as_array(self.context.value_of(data.value)):
            return
        callee = self.context.code_for(node.func)
        fix = None if "requires_grad" in keywords or name == "<bound>" else self._fix(node, name, keywords)
        self.report(node, self.message.format(call=f"{callee}(...)"), fix=fix)

    def _fix(self, node: cst.Call, name: str, keywords: Dict[str, cst.Arg]) -> Optional[NodeFix]:
        ref = self.context.torch_ref()
        if ref is None:
            return None
        torch, imports = ref
        first = node.args[0]
        array = first.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        if name == "torch.tensor" and not keywords:
            new = node.with_changes(func=cst.parse_expression(f"{torch}.from_numpy"), args=[array])
            return self.fix([(node, new)], message=f"Use `{torch}.from_numpy(...)`", imports=imports)
        new = node.with_changes(func=cst.parse_expression(f"{torch}.as_tensor"), args=[array, *node.args[1:]])
        if name in _LEGACY:
            dtype = keyword_arg("dtype", cst.parse_expression(f"{torch}.{_LEGACY[name]}"))
            new = with_keywords(new, [dtype])
        return self.fix([(node, new)], message=f"Use `{torch}.as_tensor(...)`", imports=imports)
