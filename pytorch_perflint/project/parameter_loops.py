"""Loops that run at least once on every call of a training step's helper (``call_values``
asks, for TPF202's "syncs on every call"): a loop over a model's parameters or an
optimizer's ``param_groups``. Read with ``ast`` from the function's own lines; a loop over
any other iterable may run no time.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Optional


def over_parameters(iterable: ast.AST, once: Dict[str, ast.AST]) -> bool:
    """A model's parameters (``m.parameters()``, ``m.named_parameters()``, no arguments),
    an optimizer's ``param_groups`` (never empty), ``list``/``tuple``/``enumerate`` of
    them, or a name bound once to one of these: what a training step's helper walks."""
    if isinstance(iterable, ast.Name) and iterable.id in once:
        # Substituted once: ``tokens = list(tokens)`` of a parameter must not loop forever.
        iterable, once = once[iterable.id], {k: v for k, v in once.items() if k != iterable.id}
    if isinstance(iterable, ast.Attribute):
        return iterable.attr == "param_groups"
    if not isinstance(iterable, ast.Call) or iterable.keywords:
        return False
    func = iterable.func
    if isinstance(func, ast.Attribute):
        return func.attr in ("parameters", "named_parameters") and not iterable.args
    if isinstance(func, ast.Name) and func.id in ("list", "tuple", "enumerate") and len(iterable.args) == 1:
        return over_parameters(iterable.args[0], once)
    return False


def bound_once(node: ast.AST) -> Dict[str, ast.AST]:
    """Names a function binds once, by a plain assignment: their values."""
    counts: Dict[str, int] = {}
    values: Dict[str, ast.AST] = {}
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            counts[child.id] = counts.get(child.id, 0) + 1
        if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
            values[child.targets[0].id] = child.value
        stack.extend(ast.iter_child_nodes(child))
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def walked_parameter(iterable: ast.AST, function: ast.AST, params: FrozenSet[str]) -> Optional[str]:
    """The function's parameter a loop walks: the parameter itself, ``list``/``tuple`` of it,
    ``filter(f, it)`` (a clipping helper's ``p.grad is not None``), or a name every binding
    of which is one of these or ``[param]`` (``params = list(filter(..., params))``; ``if
    isinstance(params, Tensor): params = [params]``). What the loop does per item then runs
    on every call whose caller passes a model's parameters."""
    return _walked(iterable, _bindings(function), params, 0)


def _walked(node: ast.AST, bindings: Dict[str, list], params: FrozenSet[str], depth: int) -> Optional[str]:
    if depth > 4:
        return None
    if isinstance(node, ast.Name):
        values = bindings.get(node.id)
        if not values:
            return node.id if node.id in params else None
        found = {_walked(v, {}, params, depth + 1) if not _wraps(v, node.id) else node.id for v in values}
        return node.id if found == {node.id} and node.id in params else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id in ("list", "tuple", "enumerate") and len(node.args) == 1:
            return _walked(node.args[0], bindings, params, depth + 1)
        if node.func.id == "filter" and len(node.args) == 2:
            return _walked(node.args[1], bindings, params, depth + 1)
    return None


def _wraps(value: ast.AST, name: str) -> bool:
    """``[name]``: the one tensor a clipping helper may be handed, in a list."""
    return isinstance(value, ast.List) and len(value.elts) == 1 and isinstance(value.elts[0], ast.Name) and value.elts[0].id == name


def _bindings(function: ast.AST) -> Dict[str, list]:
    """Each name's assigned values in the function's own code; any other binding of it
    (a loop target, ``+=``, a ``with``) stands for an unknown value (``None``)."""
    out: Dict[str, list] = {}
    plain = set()  # the targets of plain assignments, seen before the targets themselves
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, []).append(node.value)
            plain.add(id(node.targets[0]))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).append(node.value)  # `x: Tensor = ...` assigns too
            plain.add(id(node.target))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plain:
            out.setdefault(node.id, []).append(ast.Constant(None))
        stack.extend(ast.iter_child_nodes(node))
    return out


_DATA = re.compile(r"loader|dataset|data$|batches", re.IGNORECASE)
# Calls that walk what they are given: their arguments are what the loop walks.
_WRAPPERS = frozenset({"enumerate", "list", "tuple", "zip", "reversed", "sorted", "tqdm", "trange", "iter"})


def walks_pieces(iterable: ast.AST, function: ast.AST, params: FrozenSet[str]) -> bool:
    """The loop walks pieces of the function's own input (TPF206's per-item inference
    routine): something computed from a parameter (``self.split(text)``,
    ``text.split(".")``), through names (every value they are assigned) and the wrappers
    around them (``tqdm(texts) if verbose else texts``). Not a parameter itself, an
    attribute (``self.val_loader``), a global, a loader or data set made from the arguments
    (``make_loader(args)``), a count (``range(n)``: of what, is not known) or anything
    else: a routine that walks data it is handed, holds or loads evaluates a whole set per
    call."""
    return _pieces(iterable, _bindings(function), params - {"self", "cls"}, 0)


def _pieces(node: ast.AST, bindings: Dict[str, list], params: FrozenSet[str], depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(node, ast.Name):
        values = bindings.get(node.id)
        return bool(values) and node.id not in params and all(_pieces(v, bindings, params, depth + 1) for v in values)
    if isinstance(node, ast.IfExp):
        return _pieces(node.body, bindings, params, depth + 1) and _pieces(node.orelse, bindings, params, depth + 1)
    if isinstance(node, ast.Attribute) and node.attr == "timesteps":
        return _scheduler(node.value)  # a diffusion sampler's denoising steps of one item
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name in _WRAPPERS:
        return bool(node.args) and all(_pieces(a, bindings, params, depth + 1) for a in node.args)
    if name == "range" and isinstance(func, ast.Name):  # chunks or steps of one item
        return _counted(node, bindings, params)
    if name in _LOADERS:  # a loader over copies of the input: an ensemble of one item
        return bool(node.args) and all(_copies(a, bindings, params, depth + 1) for a in node.args)
    if name is None or name == "range" or _DATA.search(name):
        return False  # `make_loader(args)`: a data set the arguments describe, not pieces of one item
    return _mentions(node, params, bindings, depth)


def _counted(call: ast.Call, bindings: Dict[str, list], params: FrozenSet[str]) -> bool:
    """``range(0, x.shape[0], step)``, ``range(n_steps)``: a count of the function's own
    values (chunks of what it computed, a fixed number of sampling steps), measured with
    ``len``/``.size()``/``.numel()``/``.shape`` only. Not a count a parameter gives
    (``range(n)``, ``len(images)``, ``enc.numel() // 8`` of a parameter it never rebinds: a
    whole set handed in), nor one that reads something named like a data set."""
    return bool(call.args) and all(_count(a, bindings, params, 0) for a in call.args) and not _names_data(call, bindings, 0)


def _count(node: ast.AST, bindings: Dict[str, list], params: FrozenSet[str], depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        values = bindings.get(node.id)
        if not values:
            return False  # a parameter as it is, a global, a loop variable: not known
        return all(v is not None and _count(v, bindings, params, depth + 1) for v in values)
    if isinstance(node, ast.BinOp):
        return _count(node.left, bindings, params, depth + 1) and _count(node.right, bindings, params, depth + 1)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return _own_value(node.value.value, bindings, params)  # `latents.shape[0]`
    if isinstance(node, ast.Call) and (_measures(node) or (isinstance(node.func, ast.Attribute) and node.func.attr == "numel")):
        measured = node.args[0] if isinstance(node.func, ast.Name) and node.args else getattr(node.func, "value", None)
        return measured is not None and _own_value(measured, bindings, params)
    return False


def _own_value(node: ast.AST, bindings: Dict[str, list], params: FrozenSet[str]) -> bool:
    """A name the function computes itself (bound in its code, a parameter only when
    rebound there), not a parameter as it was handed in, an attribute or a global."""
    return isinstance(node, ast.Name) and bool(bindings.get(node.id))


def draws_items(loop: ast.AST) -> bool:
    """A loop over a count (``range(...)``) whose body draws from a data set or an iterator
    (``self.dataset[i]``, ``next(it)``): it walks a whole set, not one item's pieces."""
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" for n in ast.walk(loop.iter)):  # type: ignore[attr-defined]
        return False
    for statement in loop.body:  # type: ignore[attr-defined]
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next":
                return True
            if isinstance(node, ast.Subscript):
                owner = node.value
                name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
                if _DATA.search(name):
                    return True
    return False


def _scheduler(node: ast.AST) -> bool:
    """``self.scheduler``, ``noise_scheduler``: a diffusion scheduler, by its name."""
    while isinstance(node, ast.Attribute):
        if node.attr.lower().endswith("scheduler"):
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id.lower().endswith("scheduler")


_LOADERS = frozenset({"DataLoader", "TensorDataset"})
_REPEATS = frozenset({"expand", "repeat"})


def _copies(node: ast.AST, bindings: Dict[str, list], params: FrozenSet[str], depth: int) -> bool:
    """Copies of the function's input, the data of a loader it builds (a diffusion
    pipeline's test-time ensemble of one image): ``x.expand(n, ...)``, ``x.repeat(n, ...)``,
    ``torch.stack([x] * n)`` of something computed from a parameter, through names and a
    ``TensorDataset``. Not a parameter itself nor anything else made from one (a data set
    handed in, converted: a whole set)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Name):
        values = bindings.get(node.id)
        return bool(values) and node.id not in params and all(_copies(v, bindings, params, depth + 1) for v in values)
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr
    if name in _LOADERS:
        return bool(node.args) and all(_copies(a, bindings, params, depth + 1) for a in node.args)
    if name in _REPEATS and isinstance(func, ast.Attribute):
        return node.args != [] and _mentions(func.value, params, bindings, 0)
    if name in ("stack", "cat") and len(node.args) == 1:
        repeated = node.args[0]
        return (
            isinstance(repeated, ast.BinOp) and isinstance(repeated.op, ast.Mult)
            and isinstance(repeated.left, ast.List) and len(repeated.left.elts) == 1
            and _mentions(repeated.left.elts[0], params, bindings, 0)
        )
    return False


def _mentions(node: ast.AST, params: FrozenSet[str], bindings: Dict[str, list], depth: int) -> bool:
    """The call reads a parameter (directly, or through a name assigned from one)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            if child.id in params:
                return True
            for value in bindings.get(child.id, ()) if depth < 4 else ():
                if _mentions(value, params, bindings, depth + 1):
                    return True
    return False


_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def counts_through(loop: ast.While, function: ast.AST, params: FrozenSet[str]) -> bool:
    """``while i < n:`` (``n`` a name, an attribute, ``len(x)``, ``x.size(0)``): the
    mini-batches of the one item the object was fed (basicsr's ``test()`` over
    ``self.lq[i:j]``), when the count reads no parameter and nothing named like a data set
    (``len(data)``, ``len(self.dataset)``: a whole set), and nothing in the loop draws from
    an iterator (``next(it)``)."""
    test = loop.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], _ORDER)):
        return False
    bindings = _bindings(function)
    if _mentions(test, params - {"self", "cls"}, bindings, 0) or _names_data(test, bindings, 0):
        return False
    for side in (test.left, *test.comparators):
        for node in ast.walk(side):
            if isinstance(node, ast.Call) and not _measures(node):
                return False
    return not any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next"
        for statement in loop.body for node in ast.walk(statement)
    )


def _measures(call: ast.Call) -> bool:
    """``len(x)``, ``x.size(0)``: a length, not a draw."""
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "len") or (isinstance(func, ast.Attribute) and func.attr == "size")


def _names_data(node: ast.AST, bindings: Dict[str, list], depth: int) -> bool:
    """Some name or attribute the expression reads (through the names it was assigned
    from) is named like a data set."""
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and _DATA.search(child.attr):
            return True
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            if _DATA.search(child.id):
                return True
            if depth < 4 and any(_names_data(v, bindings, depth + 1) for v in bindings.get(child.id, ())):
                return True
    return False


# What a loop may call and still only compute numbers and lists: builtins, the math and
# NumPy libraries, and a list's own growth.
_PLAIN_CALLS = frozenset({"len", "range", "zip", "enumerate", "float", "int", "abs", "min", "max", "round", "sum", "list", "tuple", "str"})
_PLAIN_MODULES = ("numpy.", "math.")
_GROWTH = frozenset({"append", "extend", "insert"})


def bookkeeping(loop: ast.AST, aliases: Dict[str, str]) -> bool:
    """The loop only computes numbers and lists (``for x, y in zip(xs, ys):
    T.append([np.radians(x), np.sin(y)])``): every call in it is a builtin, a ``numpy`` or
    ``math`` function, or a list's ``append``/``extend``/``insert``. It runs no model and no
    project code, so a function that has it still handles one item per call."""
    calls = [node for node in ast.walk(loop) if isinstance(node, ast.Call)]
    if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Await)) for node in ast.walk(loop)):
        return False
    return all(_plain_call(call.func, aliases) for call in calls)


def _plain_call(func: ast.AST, aliases: Dict[str, str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _PLAIN_CALLS and func.id not in aliases
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _GROWTH:
        return True
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id not in aliases:
        return False
    parts = [func.attr]
    node = func.value
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    qualname = aliases[root.id] + "." + ".".join(reversed(parts))
    return qualname.startswith(_PLAIN_MODULES)
