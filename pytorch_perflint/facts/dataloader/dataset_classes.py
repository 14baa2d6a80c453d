"""Whether a project dataset class (this module or another one) serves items from memory.

TPF101 stays silent on ``num_workers=0`` over a dataset whose ``__getitem__`` only indexes
what the object holds in memory: workers would only add their start-up cost. This module
answers that for a class found through the project index (``ctx.project``), reading its
definition with ``ast`` from the module that holds it (``from data import Pairs``,
``gail.ExpertDataset`` from ``a2c_ppo_acktr/algo/gail.py``).

Served from memory means, for the first ``__getitem__(self, index)`` along the class and its
project bases:

* its body is straight-line: assignments to plain names (or tuples of them) and one final
  ``return``, no branch, loop or call of any kind (a call may read a file, decode, augment);
* every value in it is built from subscripts of ``self.<attr>`` chains, the index, names
  bound earlier in the body, literals and displays (``traj, i = self.get_idx[i]; return
  self.trajectories["states"][traj][i], ...``);
* every ``self.<attr>`` it reads is assigned once, in ``__init__``, to a tensor built by
  ``torch`` (``torch.load``, ``torch.as_tensor(x).float()``) or to an empty dict or list that
  ``__init__`` fills (it holds Python objects, not a file).

A class without a ``__getitem__`` along its project bases is served from memory only when
it derives from ``TensorDataset``. Anything not known is "no": the rule then reports as it
would without this module.

It also answers whether such a class is a stream that every worker would read whole
(``unsharded_stream``): an ``IterableDataset`` whose ``__iter__`` (or a method or function
it calls) never splits the stream by ``torch.utils.data.get_worker_info()`` or a sharding
wrapper. Each worker runs its own ``__iter__``, so adding ``num_workers`` yields every item
once per worker.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Set

from ...analysis.ast_index import ast_dotted
from ...project import Definition, ProjectIndex
from ...project.bodies import locate
from ...project.forms import Attr, Call, Dict, Form, Ref, Seq

ITERABLE_DATASETS = frozenset(
    {
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
        "torch.utils.data.IterDataPipe",
        "torch.utils.data.datapipes.datapipe.IterDataPipe",
        "torchdata.datapipes.iter.IterDataPipe",
    }
)
# Names that split a stream by worker: ``torch.utils.data.get_worker_info()``, datapipes'
# ``sharding_filter`` / ``apply_sharding``, webdataset's ``split_by_worker``. A class (or a
# helper it calls) that mentions one is taken to shard its stream.
SHARDING_NAMES = frozenset(
    {"get_worker_info", "sharding_filter", "apply_sharding", "ShardingFilter", "ShardingFilterIterDataPipe", "split_by_worker"}
)

TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
# Tensor methods that return a tensor (``torch.as_tensor(x).float()``).
TENSOR_METHODS = frozenset(
    "float double half bfloat16 long int short bool byte to cuda cpu contiguous clone detach view reshape "
    "unsqueeze squeeze permute transpose t flatten type pin_memory share_memory_".split()
)
_MAX_BASES = 3
# The expression nodes a served-from-memory ``__getitem__`` may use (besides ``self.<attr>``).
_PLAIN = (
    ast.Name, ast.Constant, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.BinOp, ast.UnaryOp, ast.Load, ast.Store, ast.operator, ast.unaryop,
)


def serves_from_memory(index: ProjectIndex, path: str, name: str) -> bool:
    """Whether the dotted ``name``, as module ``path`` sees it at module level, is a project
    dataset class that serves its items from memory."""
    found = index.resolve(path, name)
    if found is None or found.kind != "class":
        return False
    chain = _class_chain(index, found)
    owner = next((c for c in chain if c.klass is not None and c.klass.method("__getitem__") is not None), None)
    if owner is None:
        return bool(index.external_bases(found) & TENSOR_DATASETS)
    getitem = _getitem_node(index, owner)
    if getitem is None:
        return False
    attrs = _indexed_attrs(getitem)
    return bool(attrs) and all(_held_in_memory(index, chain, attr) for attr in attrs)


def unsharded_stream(index: ProjectIndex, path: str, name: str) -> Optional[str]:
    """The class name when the dotted ``name``, as module ``path`` sees it at module level,
    is a project ``IterableDataset`` whose ``__iter__`` is found along its project bases and
    that never splits its stream by worker (no ``get_worker_info``, no sharding wrapper in
    the class chain or in a project function its methods call); None when it shards or when
    that is not known."""
    found = index.resolve(path, name)
    if found is None or found.kind != "class" or not index.external_bases(found) & ITERABLE_DATASETS:
        return None
    chain = _class_chain(index, found)
    if not any(c.klass is not None and c.klass.method("__iter__") is not None for c in chain):
        return None  # ``__iter__`` comes from a class outside the project
    for cls in chain:
        node = _class_node(index, cls)
        if node is None or _shards(index, cls.path, node):  # type: ignore[arg-type]
            return None
    return found.name.rpartition(".")[2]


def _class_node(index: ProjectIndex, cls: Definition) -> Optional[ast.ClassDef]:
    klass = cls.klass
    text = index.text(cls.path) if cls.path is not None else None
    if klass is None or text is None:
        return None
    node = locate(text, klass.line, klass.end_line, klass.name, True)
    return node if type(node) is ast.ClassDef else None


def _shards(index: ProjectIndex, path: str, node: ast.AST) -> bool:
    """``node`` mentions a sharding name, or calls a project function (one call deep) that
    does; a called function that cannot be read counts as sharding (not known)."""
    called: Set[str] = set()
    for current in ast.walk(node):
        kind = type(current)
        if kind is ast.Name and current.id in SHARDING_NAMES:  # type: ignore[attr-defined]
            return True
        if kind is ast.Attribute and current.attr in SHARDING_NAMES:  # type: ignore[attr-defined]
            return True
        if kind is ast.Call:
            dotted = ast_dotted(current.func)  # type: ignore[attr-defined]
            if dotted and not dotted.startswith(("self.", "cls.", "super")):
                called.add(dotted)
    for dotted in sorted(called):
        target = index.resolve(path, dotted)
        if target is None or target.kind != "function" or target.function is None or target.path is None:
            continue  # a class, a builtin, an outside library: no stream of ours is split there
        text = index.text(target.path)
        function = None if text is None else locate(text, target.function.line, target.function.end_line, target.function.name, False)
        if function is None or any(
            (type(n) is ast.Name and n.id in SHARDING_NAMES) or (type(n) is ast.Attribute and n.attr in SHARDING_NAMES)  # type: ignore[attr-defined]
            for n in ast.walk(function)
        ):
            return True
    return False


def _class_chain(index: ProjectIndex, cls: Definition) -> List[Definition]:
    """The class and its project bases, breadth first, a few deep."""
    chain: List[Definition] = []
    todo = [cls]
    while todo and len(chain) <= _MAX_BASES:
        current = todo.pop(0)
        if any(c.key == current.key for c in chain):
            continue
        chain.append(current)
        todo.extend(index.resolution.project_bases(current))
    return chain


def _getitem_node(index: ProjectIndex, owner: Definition) -> Optional[ast.FunctionDef]:
    method = owner.klass.method("__getitem__") if owner.klass is not None else None
    text = index.text(owner.path) if owner.path is not None else None
    if method is None or text is None:
        return None
    node = locate(text, method.line, method.end_line, "__getitem__", False)
    return node if type(node) is ast.FunctionDef else None


def _indexed_attrs(function: ast.FunctionDef) -> Optional[Set[str]]:
    """The ``self`` attributes a straight-line, call-free ``__getitem__`` reads; None when
    its body is anything else."""
    args = function.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if len(params) != 2 or args.vararg or args.kwarg or args.kwonlyargs or function.decorator_list:
        return None
    own, index = params
    body = list(function.body)
    if body and type(body[0]) is ast.Expr and type(body[0].value) is ast.Constant:  # type: ignore[attr-defined]
        body = body[1:]
    if not body or type(body[-1]) is not ast.Return or body[-1].value is None:  # type: ignore[attr-defined]
        return None
    known = {index}
    attrs: Set[str] = set()
    for statement in body:
        if type(statement) is ast.Assign:
            targets = statement.targets  # type: ignore[attr-defined]
            names = [n for t in targets for n in _target_names(t)]
            if None in names or own in names:
                return None
            if not _plain(statement.value, own, known, attrs):  # type: ignore[attr-defined]
                return None
            known.update(names)  # type: ignore[arg-type]
        elif type(statement) is ast.Return:
            if statement is not body[-1] or not _plain(statement.value, own, known, attrs):  # type: ignore[attr-defined]
                return None
        else:
            return None
    return attrs


def _target_names(target: ast.AST) -> List[Optional[str]]:
    if type(target) is ast.Name:
        return [target.id]  # type: ignore[attr-defined]
    if type(target) in (ast.Tuple, ast.List):
        return [n for e in target.elts for n in _target_names(e)]  # type: ignore[attr-defined]
    return [None]


def _plain(node: ast.AST, own: str, known: Set[str], attrs: Set[str]) -> bool:
    """``node`` reads only ``self.<attr>`` (noted in ``attrs``), names in ``known``,
    literals, subscripts, displays and arithmetic."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is ast.Attribute:
            value = current.value  # type: ignore[attr-defined]
            if type(value) is not ast.Name or value.id != own:
                return False
            attrs.add(current.attr)  # type: ignore[attr-defined]
            continue
        if kind is ast.Name and current.id not in known:  # type: ignore[attr-defined]
            return False
        if not isinstance(current, _PLAIN):
            return False
        stack.extend(ast.iter_child_nodes(current))
    return True


def _held_in_memory(index: ProjectIndex, chain: List[Definition], attr: str) -> bool:
    """``self.<attr>`` is assigned once in the class chain, in ``__init__``, to a tensor or
    an empty dict or list."""
    found = []
    for cls in chain:
        body = index.class_body(cls)
        if body is None:
            return False
        attribute = body.attribute(attr)
        if attribute is not None:
            found.append(attribute)
    return len(found) == 1 and not found[0].rebound and _in_memory_form(found[0].form)


def _in_memory_form(form: Form) -> bool:
    """A tensor, or an empty dict or list display (``__init__`` fills it in place)."""
    if type(form) is Dict:
        return not form.items  # type: ignore[union-attr]
    if type(form) is Seq:
        return form.kind == "list" and not form.items  # type: ignore[union-attr]
    return _tensor_form(form)


def _tensor_form(form: Form, depth: int = 0) -> bool:
    """A tensor built by a ``torch`` function (``torch.load(p)``), or a tensor method on one."""
    if type(form) is not Call or depth > 4:
        return False
    func = form.func  # type: ignore[union-attr]
    if type(func) is Ref:
        parts = (func.qualname or "").split(".")
        return len(parts) == 2 and parts[0] == "torch" and (parts[1].islower() or parts[1].endswith("Tensor"))
    if type(func) is Attr and func.attr in TENSOR_METHODS:
        return _tensor_form(func.value, depth + 1)
    return False
