"""Whether an expression is known to be a NumPy array (``numpy.ndarray``).

Rules that suggest zero-copy conversions (``torch.from_numpy``) must only fire on values that
are certainly arrays: a NumPy scalar (``np.float32(1.0)``, ``np.sum(a)``) or a list would make
the suggested fix fail. So this module answers "known array" only from an explicit allow-list
of NumPy functions that return an array for every input, and stays silent otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (
    Dict,
    FrozenSet,
    List,
    Optional,
    Protocol,
    Sequence,
    Set,
    Tuple,
    Union,
)

import libcst as cst

from ...analysis.calls import argument
from ...analysis.scope import target_names
from ...analysis.walk import child_nodes
from ...context import FileContext
from .array_forms import project_attribute_is_array, project_call_returns_array
from .numpy_api import (
    ALWAYS_ARRAY_DRAWS as _ALWAYS_ARRAY_DRAWS,
    ARRAY_FUNCTIONS as _ARRAY_FUNCTIONS,
    ARRAY_METHODS as _ARRAY_METHODS,
    ELEMENTWISE as _ELEMENTWISE,
    GENERATORS as _GENERATORS,
    OTHER_ARRAY_FUNCTIONS as _OTHER_ARRAY_FUNCTIONS,
    SHAPE_AS_ARGS as _SHAPE_AS_ARGS,
    SIZED_RANDOM as _SIZED_RANDOM,
    TO_NUMPY_METHODS as _TO_NUMPY_METHODS,
)


class Names(Protocol):
    """What the analysis needs of a file: bindings and qualified names at a node."""

    def lookup(self, name: str) -> Optional[cst.BaseExpression]: ...

    def qualname(self, expr: cst.CSTNode) -> Optional[str]: ...


# Calls that return a list or tuple of arrays, which code unpacks (``xs, ys = np.meshgrid(...)``).
_UNPACKED_ARRAYS: FrozenSet[str] = frozenset({"numpy.meshgrid", "numpy.broadcast_arrays"})
_H5PY_FILES: FrozenSet[str] = frozenset({"h5py.File"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.Modulo)
_MAX_DEPTH = 6
_PATH_JOINERS: FrozenSet[str] = frozenset({"os.path.join", "posixpath.join", "pathlib.Path"})


def is_numpy_array(expr: cst.BaseExpression, context: "FileContext") -> bool:
    """Whether ``expr`` certainly evaluates to a ``numpy.ndarray`` at the current node."""
    return _is_array(expr, _here(context), 0)


@dataclass(frozen=True)
class _Here:
    """The file's names as seen at one statement of a block.

    The latest assignment to a name before the statement, in the same block, is the value it
    holds there (``states = np.array(states)`` after ``states, actions = zip(*batch)``);
    names bound by an enclosing comprehension hide the scope's; a name the block does not
    bind falls back to the scope's bound-once rule.
    """

    context: "FileContext"
    hidden: FrozenSet[str]
    block: Tuple[cst.BaseStatement, ...]
    index: int

    def resolve(self, name: str) -> Tuple[Optional[cst.BaseExpression], "Names"]:
        """The expression ``name`` holds here, and where to read the names in it."""
        if name in self.hidden:
            return None, self
        for position in range(self.index - 1, -1, -1):
            statement = self.block[position]
            value = _assigned_value(statement, name)
            if value is not None:
                return value, _Here(self.context, frozenset(), self.block, position)
            if _binds(statement, name):
                return None, self
        return self.context.lookup(name), self.context

    def lookup(self, name: str) -> Optional[cst.BaseExpression]:
        return self.resolve(name)[0]

    def qualname(self, expr: cst.CSTNode) -> Optional[str]:
        return self.context.qualname(expr)


def _resolve(context: "Names", name: str) -> Tuple[Optional[cst.BaseExpression], "Names"]:
    if isinstance(context, _Here):
        return context.resolve(name)
    return context.lookup(name), context


def _here(context: "FileContext") -> "Names":
    """The view at the current node: its statement in its innermost block, if it has one."""
    ancestors = context.ancestors
    hidden = _comprehension_targets(ancestors)
    for position in range(len(ancestors) - 1, -1, -1):
        node = ancestors[position]
        if isinstance(node, cst.Lambda):
            break  # runs later, when the block's names may hold other values
        if isinstance(node, (cst.IndentedBlock, cst.Module)) and position + 1 < len(ancestors):
            statement = ancestors[position + 1]
            body = tuple(node.body)
            for index, candidate in enumerate(body):
                if candidate is statement:
                    return _Here(context, hidden, body, index)
            break
    return _Here(context, hidden, (), 0) if hidden else context


def _assigned_value(statement: cst.BaseStatement, name: str) -> Optional[cst.BaseExpression]:
    """``value`` when the statement is exactly ``name = value`` (or ``name: T = value``)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value == name:
            return small.value
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(small.value, cst.Call):
            return _unpacked(target, small.value, name)
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        if isinstance(small.target, cst.Name) and small.target.value == name:
            return small.value
    return None


def _unpacked(target: Union[cst.Tuple, cst.List], value: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """``xs`` in ``xs, ys = np.meshgrid(...)``: the call subscripted by the name's position
    (``_subscript_is_array`` knows that item of an unpacked array list is an array)."""
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    if any(isinstance(e, cst.StarredElement) for e in target.elements) or names.count(name) != 1:
        return None
    position = names.index(name)
    return cst.Subscript(value=value, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(position))))])


def _binds(statement: cst.CSTNode, name: str) -> bool:
    """Whether anything in the statement (re)binds ``name``: the value there is not known."""
    stack: List[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        targets: Tuple[cst.BaseExpression, ...] = ()
        if isinstance(node, cst.AssignTarget):
            targets = (node.target,)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del)):
            targets = (node.target,)
        elif isinstance(node, cst.AsName):
            targets = (node.name,)  # type: ignore[assignment]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == name:
            return True
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            if _first_name(node.name) == name:
                return True
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(item.name.value == name for item in node.names):
                return True
        if any(found == name for target in targets for found in target_names(target)):
            return True
        stack.extend(child_nodes(node))
    return False


def _first_name(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _comprehension_targets(ancestors: Sequence[cst.CSTNode]) -> FrozenSet[str]:
    names: Set[str] = set()
    for node in ancestors:
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            comp: Optional[cst.CompFor] = node.for_in
            while comp is not None:
                names.update(target_names(comp.target))
                comp = comp.inner_for_in
        elif isinstance(node, cst.NamedExpr):
            names.update(target_names(node.target))
    return frozenset(names)


def _is_array(expr: cst.BaseExpression, context: "Names", depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        bound, where = _resolve(context, expr.value)
        return bound is not None and _is_array(bound, where, depth + 1)
    if isinstance(expr, cst.Call):
        return _call_returns_array(expr, context, depth)
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "values":
            return _from_pandas(expr.value, context, depth + 1)
        if expr.attr.value == "T":
            return _is_array(expr.value, context, depth + 1)
        file, hidden = _file_of(context)
        return project_attribute_is_array(expr, file, hidden)
    if isinstance(expr, cst.Subscript):
        return _subscript_is_array(expr, context, depth)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return _arithmetic_is_array(expr, context, depth)
    return False


def _call_returns_array(call: cst.Call, context: "Names", depth: int) -> bool:
    name = context.qualname(call.func)
    if name is not None and name.startswith("numpy."):
        return _numpy_function_returns_array(name, call, context, depth)
    if name in _OTHER_ARRAY_FUNCTIONS:
        return True
    if not isinstance(call.func, cst.Attribute):
        return _project_call(call, context)
    method = call.func.attr.value
    receiver = call.func.value
    if method in _TO_NUMPY_METHODS:
        return not any(arg.keyword is None for arg in call.args)
    if method == "to_numpy":
        return _from_pandas(receiver, context, depth + 1)
    if method in _ARRAY_METHODS:
        return _is_array(receiver, context, depth + 1)
    if isinstance(receiver, cst.Name) and _is_generator(receiver, context):
        return _draw_returns_array(method, call, context)
    return _project_call(call, context)


def _project_call(call: cst.Call, context: "Names") -> bool:
    file, hidden = _file_of(context)
    return project_call_returns_array(call, file, hidden)


def _file_of(context: "Names") -> Tuple["FileContext", FrozenSet[str]]:
    """The file being linted, and the comprehension names that hide the scope's here."""
    if isinstance(context, _Here):
        return context.context, context.hidden
    assert isinstance(context, FileContext)
    return context, frozenset()


def _numpy_function_returns_array(name: str, call: cst.Call, context: "Names", depth: int) -> bool:
    if name in _ARRAY_FUNCTIONS:
        return True
    if name in _ELEMENTWISE:
        operands = [a.value for a in call.args[:2] if a.keyword is None and not a.star]
        return any(_is_array(operand, context, depth + 1) for operand in operands)
    if name == "numpy.linspace":
        retstep = argument(call, "retstep", 5, context.lookup)
        return retstep.missing or retstep.value is False
    if name == "numpy.where":
        return len([a for a in call.args if not a.star]) == 3 and not any(a.star for a in call.args)
    if name == "numpy.load":
        return _loads_npy(call, context)
    if name.startswith("numpy.random."):
        return _draw_returns_array(name[len("numpy.random."):], call, context)
    return False


def _draw_returns_array(method: str, call: cst.Call, context: "Names") -> bool:
    if method in _ALWAYS_ARRAY_DRAWS:
        return True
    if method in _SHAPE_AS_ARGS:
        return bool(call.args) and all(not a.star and a.keyword is None for a in call.args)
    position = _SIZED_RANDOM.get(method)
    if position is None:
        return False
    size = argument(call, "size", position, context.lookup)
    if size.node is None:
        return False  # absent, or hidden in *args/**kwargs
    return size.value is not None  # a literal None draws a scalar


def _is_generator(name: cst.Name, context: "Names") -> bool:
    """``rng`` bound once to ``np.random.default_rng(...)`` or ``RandomState(...)``."""
    bound = context.lookup(name.value)
    return isinstance(bound, cst.Call) and context.qualname(bound.func) in _GENERATORS


def _loads_npy(call: cst.Call, context: "Names") -> bool:
    """``np.load(path)`` where the path ends in ``.npy`` (an ``.npz`` gives an ``NpzFile``)."""
    path = argument(call, "file", 0, context.lookup)
    return path.node is not None and _npy_path(path.node.value, context, 0)


def _npy_path(expr: cst.BaseExpression, context: "Names", depth: int) -> bool:
    """``"x.npy"``, ``root + "/x.npy"``, ``f"{root}/x.npy"``, ``os.path.join(root, "x.npy")``."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.endswith(".npy")
    if isinstance(expr, cst.Name):
        bound, where = _resolve(context, expr.value)
        return bound is not None and _npy_path(bound, where, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Divide)):
        return _npy_path(expr.right, context, depth + 1)
    if isinstance(expr, cst.FormattedString):
        last = expr.parts[-1] if expr.parts else None
        return isinstance(last, cst.FormattedStringText) and last.value.endswith(".npy")
    if isinstance(expr, cst.Call) and context.qualname(expr.func) in _PATH_JOINERS:
        positional = [arg for arg in expr.args if arg.keyword is None and not arg.star]
        return bool(positional) and _npy_path(positional[-1].value, context, depth + 1)
    return False


def _subscript_is_array(expr: cst.Subscript, context: "Names", depth: int) -> bool:
    value = expr.value
    if isinstance(value, cst.Call) and context.qualname(value.func) == "numpy.load":
        # A key into an .npz archive (or a field of a structured array) is an array.
        keys = [e.slice for e in expr.slice]
        return len(keys) == 1 and isinstance(keys[0], cst.Index) and isinstance(keys[0].value, cst.SimpleString)
    if isinstance(value, cst.Call) and context.qualname(value.func) in _UNPACKED_ARRAYS:
        # `xs` of `xs, ys = np.meshgrid(...)` (see `_assigned_value`), or `np.meshgrid(...)[0]`
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
    if _is_h5py_dataset(value, context) and all(_reads_whole(element.slice) for element in expr.slice):
        return True
    if not _is_array(value, context, depth + 1):
        return False
    if len(expr.slice) == 1 and _is_field_name(expr.slice[0].slice):
        return True  # a field of a structured array is an array
    return any(_index_keeps_array(element.slice, context, depth) for element in expr.slice)


def _is_field_name(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Index) and index.star is None and isinstance(index.value, cst.SimpleString)


def _reads_whole(index: cst.BaseSlice) -> bool:
    """``[:]``, ``[a:b]`` or ``[...]``: a dataset read as an array (``[0]`` may be a scalar)."""
    if isinstance(index, cst.Slice):
        return True
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Ellipsis)


def _is_h5py_dataset(expr: cst.BaseExpression, context: "Names") -> bool:
    """``f["images"]`` where ``f`` is bound once to ``h5py.File(...)``, by ``=`` or by an
    enclosing ``with h5py.File(...) as f``."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1 or not _is_field_name(expr.slice[0].slice):
        return False
    if not isinstance(expr.value, cst.Name):
        return False
    name = expr.value.value
    bound, where = _resolve(context, name)
    if isinstance(bound, cst.Call):
        return where.qualname(bound.func) in _H5PY_FILES
    file, hidden = _file_of(context)
    if bound is not None or name in hidden or len(file.scope.bindings.get(name, ())) != 1:
        return False
    for node in reversed(file.ancestors):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(node, cst.With):
            for item in node.items:
                asname = item.asname.name if item.asname is not None else None
                if isinstance(asname, cst.Name) and asname.value == name and isinstance(item.item, cst.Call):
                    return file.qualname(item.item.func) in _H5PY_FILES
    return False


def _index_keeps_array(index: cst.BaseSlice, context: "Names", depth: int) -> bool:
    """A slice, ``None``, a list or an array index keeps the result an array."""
    if isinstance(index, cst.Slice):
        return True
    if not isinstance(index, cst.Index) or index.star is not None:
        return False
    value = index.value
    if isinstance(value, cst.Name) and value.value == "None":
        return True
    if isinstance(value, cst.List):
        return True
    return _is_array(value, context, depth + 1)


def _arithmetic_is_array(expr: cst.BinaryOperation, context: "Names", depth: int) -> bool:
    """``arr / 255.0``: an array with a number or another array (a tensor would win)."""
    left = _is_array(expr.left, context, depth + 1)
    right = _is_array(expr.right, context, depth + 1)
    if left and right:
        return True
    other = expr.right if left else expr.left if right else None
    return other is not None and _is_number(other)


def _from_pandas(expr: cst.BaseExpression, context: "Names", depth: int) -> bool:
    """A pandas object: ``df[cols]``, ``df.iloc[:, 1:]``, ``df.drop(...)`` with ``df`` bound
    once to a ``pd.`` call. Its ``.values``/``.to_numpy()`` is an ndarray (``.values`` of a
    torch ``topk`` result is a tensor, so the root must be pandas)."""
    while depth <= _MAX_DEPTH:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            name = context.qualname(expr.func)
            if name is not None:
                return name.startswith("pandas.")
            if not isinstance(expr.func, cst.Attribute):
                return False
            expr = expr.func.value
        elif isinstance(expr, cst.Name):
            bound, where = _resolve(context, expr.value)
            return bound is not None and _from_pandas(bound, where, depth + 1)
        else:
            return False
        depth += 1
    return False


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))
