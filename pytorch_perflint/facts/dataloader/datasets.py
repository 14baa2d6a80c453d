"""Facts about the dataset a ``DataLoader`` reads, when its class is known in the module.

TPF101 asks two questions of it:

* Do items come straight from memory? ``TensorDataset``, or a class of this module whose
  ``__getitem__`` only indexes what the object holds (``return self.x[i], self.y[i]``).
  Worker processes then only add start-up cost (15.7 ms against 66.9 ms an epoch with four
  workers in issue 11's measurement).
* Does ``__init__`` keep an open file handle or database connection (``self.f = open(p)``,
  ``h5py.File``, ``lmdb.open``, ``sqlite3.connect``)? Forked workers inherit that one handle:
  they share its file offset, and HDF5/LMDB/SQLite handles are not fork-safe, so items come
  back silently corrupted. Such a dataset must open its handle in each worker first.

The dataset is followed one name deep (``ds = MyDataset(...)``); a class is resolved
in this module when it defines it at top level and nothing else binds its name, and
through the project index otherwise (``dataset_classes``: a class imported from another
module, or one of this module whose ``__getitem__`` is more than one ``return``). Anything
else is unknown, and unknown answers "no" to both questions (the rule then behaves as before).
Memory-mapped arrays (``np.memmap``, ``np.load(mmap_mode=...)``) are not handles: workers
read them through their own page mappings, with no shared offset.

TPF101 and TPF103 also ask whether the dataset is a stream every worker would read whole:
an ``IterableDataset`` whose ``__iter__`` never splits the stream by
``torch.utils.data.get_worker_info()`` (or a sharding wrapper). Each worker runs its own
``__iter__``, so adding workers yields every item once per worker (a 128-item stream read
by four workers gives 512 items). The class is read through the project index when there is
one, else from this module; a loader with a ``worker_init_fn`` (which may split the stream)
or a class whose ``__iter__`` cannot be read is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ...analysis.calls import argument
from ...analysis.scope import Scope, binds_below_module, dotted_name
from ...analysis.walk import child_nodes
from ...context import FileContext
from ...project.kinds import Instance
from .dataset_classes import (
    ITERABLE_DATASETS,
    SHARDING_NAMES,
    TENSOR_DATASETS,
    TENSOR_METHODS,
    serves_from_memory,
    unsharded_stream,
)
from .loader_args import WORKER_INIT_FN_POSITION

# Calls that return an open file handle or connection, and what to call it in a message.
HANDLE_OPENERS = {
    "io.open": "an open file",
    "gzip.open": "an open file",
    "bz2.open": "an open file",
    "lzma.open": "an open file",
    "zipfile.ZipFile": "an open zip file",
    "tarfile.open": "an open tar file",
    "h5py.File": "an open HDF5 file",
    "tables.open_file": "an open HDF5 file",
    "lmdb.open": "an open LMDB environment",
    "sqlite3.connect": "a database connection",
}
# Methods whose result still holds the handle they are called on (an LMDB transaction, a
# SQLite cursor); any other call (``open(p).read()``) reads the content and lets it go.
_HANDLE_METHODS = frozenset({"begin", "cursor"})
_MAX_BASES = 3


@dataclass(frozen=True)
class HeldHandle:
    """``self.<attr>`` of dataset class ``cls`` holds ``what`` (opened by ``opener``)."""

    cls: str
    attr: str
    what: str
    opener: str


@dataclass(frozen=True)
class DatasetFacts:
    """``stream``: the name of an ``IterableDataset`` class that every worker would read
    whole (it does not shard by worker); None when it shards or is not known to be one."""

    in_memory: bool = False
    handle: Optional[HeldHandle] = None
    stream: Optional[str] = None


_UNKNOWN = DatasetFacts()


def dataset_facts(context: FileContext, call: cst.Call, scope: Scope) -> DatasetFacts:
    """What is known of the dataset the DataLoader ``call`` (standing in ``scope``) reads."""
    dataset = argument(call, "dataset", 0, scope.lookup_value).node
    if dataset is None:
        return _UNKNOWN
    value = dataset.value
    if type(value) is cst.Name:
        value = scope.lookup_value(value.value) or value
    if type(value) is not cst.Call:
        return DatasetFacts(in_memory=True) if _engine_in_memory(context, dataset.value) else _UNKNOWN
    if context.qualname(value.func, scope) in TENSOR_DATASETS:
        return DatasetFacts(in_memory=True)
    cls = module_class(context, value.func.value, scope) if type(value.func) is cst.Name else None
    classes = [] if cls is None else list(_class_chain(context, cls))
    stream = _stream(context, call, value.func, scope, classes)
    if cls is None:
        in_memory = _project_in_memory(context, value.func, scope) or (stream is None and _engine_in_memory(context, dataset.value))
        return DatasetFacts(in_memory=in_memory, stream=stream)
    handle = _held_handle(context, classes)
    if handle is not None:
        return DatasetFacts(handle=handle, stream=stream)
    in_memory = _indexes_only(context, classes) or _project_in_memory(context, value.func, scope)
    return DatasetFacts(in_memory=in_memory, stream=stream)


def _engine_in_memory(context: FileContext, expr: cst.BaseExpression) -> bool:
    """The value engine knows the dataset is an object made by calling a project class that
    serves its items from memory, however it got here (``self._train_set()``, a parameter
    every caller fills so, a helper in another module)."""
    if context.project is None:
        return False
    kind = context.value_of(expr)
    if type(kind) is not Instance or not kind.exact or kind.klass.path is None:
        return False
    return serves_from_memory(context.project, kind.klass.path, kind.klass.name)


def _project_name(context: FileContext, func: cst.BaseExpression, scope: Scope) -> Optional[str]:
    """The dotted name the dataset class is called by, when the project index can read it
    (the name is bound at module level, not below)."""
    name = dotted_name(func) if type(func) in (cst.Name, cst.Attribute) else None
    if context.project is None or name is None or binds_below_module(scope, name.partition(".")[0]):
        return None
    return name


def _project_in_memory(context: FileContext, func: cst.BaseExpression, scope: Scope) -> bool:
    """The dataset class is a project class (this module or another: ``from data import
    Pairs``, ``gail.ExpertDataset``) that serves its items from memory."""
    name = _project_name(context, func, scope)
    return name is not None and serves_from_memory(context.project, str(context.path), name)  # type: ignore[arg-type]


# -- streams every worker would read whole --------------------------------------------------


def _stream(
    context: FileContext, call: cst.Call, func: cst.BaseExpression, scope: Scope, classes: List[cst.ClassDef]
) -> Optional[str]:
    """The class name when the loader ``call`` reads an ``IterableDataset`` that does not
    shard by worker: through the project index when there is one (imported classes and
    helpers too), else from this module's classes and functions."""
    init_fn = argument(call, "worker_init_fn", WORKER_INIT_FN_POSITION, scope.lookup_value)
    if not (init_fn.missing or (init_fn.node is not None and init_fn.value is None)):
        return None  # a worker_init_fn may split the stream (torch's own example does)
    if context.project is not None:
        name = _project_name(context, func, scope)
        return None if name is None else unsharded_stream(context.project, str(context.path), name)
    if not classes or _method(classes, "__iter__") is None:
        return None
    iterable = any(
        base.keyword is None and context.qualname(base.value, context.module_scope) in ITERABLE_DATASETS
        for cls in classes
        for base in cls.bases
    )
    if not iterable or any(_module_shards(context, cls) for cls in classes):
        return None
    return classes[0].name.value


def _module_shards(context: FileContext, node: cst.CSTNode) -> bool:
    """``node`` mentions a sharding name, or calls a function of this module (one call deep)
    that does."""
    called: Set[str] = set()
    for current in _all_nodes(node):
        kind = type(current)
        if kind is cst.Name and current.value in SHARDING_NAMES:  # type: ignore[attr-defined]
            return True
        if kind is cst.Attribute and current.attr.value in SHARDING_NAMES:  # type: ignore[attr-defined]
            return True
        if kind is cst.Call and type(current.func) is cst.Name:  # type: ignore[attr-defined]
            called.add(current.func.value)  # type: ignore[attr-defined]
    functions = [s for s in context.module.body if type(s) is cst.FunctionDef and s.name.value in called]
    return any(
        (type(n) is cst.Name and n.value in SHARDING_NAMES) or (type(n) is cst.Attribute and n.attr.value in SHARDING_NAMES)  # type: ignore[attr-defined]
        for function in functions
        for n in _all_nodes(function)
    )


def _all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))



def module_class(context: FileContext, name: str, scope: Scope) -> Optional[cst.ClassDef]:
    """The class ``name`` refers to from ``scope``: one defined at the top level of this
    module, whose name nothing else binds (no import, assignment or second definition)."""
    current: Optional[Scope] = scope
    first = True
    while current is not None and current.parent is not None:
        if not (current.is_class and not first) and (name in current.bindings or name in current.imports):
            return None
        if name in current.declared_outer:
            return None
        first = False
        current = current.parent
    module = context.module_scope
    if module.bindings.get(name) != [None] or name in module.imports:
        return None
    found = [s for s in context.module.body if type(s) is cst.ClassDef and s.name.value == name]
    return found[0] if len(found) == 1 else None


def _class_chain(context: FileContext, cls: cst.ClassDef) -> Iterator[cst.ClassDef]:
    """The class and its base classes defined in this module (single names only)."""
    seen: Set[int] = set()
    todo = [cls]
    while todo and len(seen) <= _MAX_BASES:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for base in current.bases:
            if base.keyword is None and type(base.value) is cst.Name:
                found = module_class(context, base.value.value, context.module_scope)
                if found is not None:
                    todo.append(found)


def _method(classes: List[cst.ClassDef], name: str) -> Optional[cst.FunctionDef]:
    """The first definition of method ``name`` along the class chain."""
    for cls in classes:
        body = cls.body.body if type(cls.body) is cst.IndentedBlock else ()
        for statement in body:
            if type(statement) is cst.FunctionDef and statement.name.value == name:
                return statement
    return None


def _params(method: cst.FunctionDef) -> List[str]:
    return [p.name.value for p in (*method.params.posonly_params, *method.params.params)]


def _statements(method: cst.FunctionDef) -> List[cst.BaseStatement]:
    """The method's statements, without a leading docstring."""
    if type(method.body) is not cst.IndentedBlock:
        return []
    body = list(method.body.body)
    if body and type(body[0]) is cst.SimpleStatementLine and len(body[0].body) == 1:
        first = body[0].body[0]
        if type(first) is cst.Expr and isinstance(first.value, (cst.SimpleString, cst.ConcatenatedString)):
            body = body[1:]
    return body


# -- handles held from __init__ ----------------------------------------------------------


def _held_handle(context: FileContext, classes: List[cst.ClassDef]) -> Optional[HeldHandle]:
    for cls in classes:
        init = _method([cls], "__init__")
        if init is None:
            continue
        params = _params(init)
        if not params:
            continue
        own = params[0]
        scope = context.scope_of([context.module, cls, init])
        closed = _closed_attrs(init, own)
        for node in _own_nodes(init):
            if type(node) not in (cst.Assign, cst.AnnAssign):
                continue
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
            for target in targets:
                attr = _self_attr(target, own)
                if attr is None or attr in closed or node.value is None:
                    continue
                opener = _opener(context, node.value, scope)
                if opener is not None:
                    return HeldHandle(classes[0].name.value, attr, HANDLE_OPENERS.get(opener, "an open file"), opener)
    return None


def _opener(context: FileContext, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[str]:
    """The opener whose handle ``expr`` is or still holds: ``open(p)``, ``h5py.File(p)['x']``,
    ``lmdb.open(p).begin()``, or a name bound once to one of these."""
    while True:
        kind = type(expr)
        if kind is cst.Subscript:
            expr = expr.value  # type: ignore[attr-defined]
        elif kind is cst.Call:
            func = expr.func  # type: ignore[attr-defined]
            if type(func) is cst.Name and func.value == "open" and _builtin(func.value, scope):
                return "open"
            name = context.qualname(func, scope)
            if name in HANDLE_OPENERS:
                return name
            if type(func) is cst.Attribute and func.attr.value in _HANDLE_METHODS:
                expr = func.value
            else:
                return None
        elif kind is cst.Name and depth < 2:
            bound = scope.lookup_value(expr.value)  # type: ignore[attr-defined]
            if bound is None:
                return None
            expr, depth = bound, depth + 1
        else:
            return None


def _builtin(name: str, scope: Optional[Scope]) -> bool:
    """No scope on the way up binds ``name``: it is the builtin."""
    return scope is None or not scope.binds_in_chain(name)


def _closed_attrs(init: cst.FunctionDef, own: str) -> Set[str]:
    """``self.f.close()`` in ``__init__``: the handle is not kept."""
    closed: Set[str] = set()
    for node in _own_nodes(init):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "close":
            attr = _self_attr(node.func.value, own)
            if attr is not None:
                closed.add(attr)
    return closed


def _self_attr(expr: cst.BaseExpression, own: str) -> Optional[str]:
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == own:
        return expr.attr.value
    return None


def _own_nodes(function: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """The nodes of a function's body, not those of functions or classes nested in it."""
    stack: List[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in child_nodes(node) if type(c) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda))


# -- items straight from memory ------------------------------------------------------------


def _indexes_only(context: FileContext, classes: List[cst.ClassDef]) -> bool:
    """``__getitem__(self, i)`` is one ``return`` of ``self.a[i]`` items (alone, or in a
    tuple, list or dict display), each ``self.a`` a tensor that ``__init__`` builds; a class
    without a ``__getitem__`` of its own or of a module base reads items the way
    ``TensorDataset`` does only when it derives from it."""
    getitem = _method(classes, "__getitem__")
    if getitem is None:
        return any(
            context.qualname(base.value, context.module_scope) in TENSOR_DATASETS
            for cls in classes
            for base in cls.bases
            if base.keyword is None
        )
    params = _params(getitem)
    statements = _statements(getitem)
    if len(params) != 2 or len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine:
        return False
    line = statements[0]
    if len(line.body) != 1 or type(line.body[0]) is not cst.Return or line.body[0].value is None:
        return False
    own, index = params
    value = line.body[0].value
    if type(value) in (cst.Tuple, cst.List):
        items = [e.value for e in value.elements if type(e) is cst.Element]
        if len(items) != len(value.elements):
            return False
    elif type(value) is cst.Dict:
        items = [e.value for e in value.elements if type(e) is cst.DictElement]
        if len(items) != len(value.elements):
            return False
    else:
        items = [value]
    attrs = [_indexed_attr(item, own, index) for item in items]
    if not attrs or None in attrs:
        return False
    held = _held_values(context, classes)
    return all(attr in held for attr in attrs)


def _indexed_attr(expr: cst.BaseExpression, own: str, index: str) -> Optional[str]:
    """``a`` of ``self.a[i]``."""
    if type(expr) is not cst.Subscript:
        return None
    attr = _self_attr(expr.value, own)
    if attr is None or len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return None
    key = expr.slice[0].slice.value
    return attr if type(key) is cst.Name and key.value == index else None


def _held_values(context: FileContext, classes: List[cst.ClassDef]) -> Set[str]:
    """The attributes assigned once in the whole class chain, in ``__init__``, to a tensor."""
    assigned: Dict[str, List[Optional[cst.BaseExpression]]] = {}
    init_scope: Dict[str, Scope] = {}
    for cls in classes:
        body = cls.body.body if type(cls.body) is cst.IndentedBlock else ()
        for method in body:
            if type(method) is not cst.FunctionDef or not _params(method):
                continue
            own = _params(method)[0]
            scope = context.scope_of([context.module, cls, method])
            for node in _own_nodes(method):
                for target, value in _assignments(node):
                    attr = _self_attr(target, own)
                    if attr is not None:
                        assigned.setdefault(attr, []).append(value if method.name.value == "__init__" else None)
                        init_scope[attr] = scope
    return {
        attr
        for attr, values in assigned.items()
        if len(values) == 1 and values[0] is not None and _tensor(context, values[0], init_scope[attr])
    }


def _assignments(node: cst.CSTNode) -> Iterator[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """(target, value) pairs a statement assigns; unpacking pairs a tuple display's items."""
    if type(node) is cst.Assign:
        for target in node.targets:
            yield from _pairs(target.target, node.value if len(node.targets) == 1 else None)
    elif type(node) is cst.AnnAssign:
        yield node.target, node.value
    elif type(node) is cst.AugAssign:
        yield node.target, None


def _pairs(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> Iterator[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    if type(target) in (cst.Tuple, cst.List):
        elements = target.elements  # type: ignore[attr-defined]
        values = value.elements if type(value) in (cst.Tuple, cst.List) else None  # type: ignore[union-attr]
        same = values is not None and len(values) == len(elements)
        for i, element in enumerate(elements):
            item = values[i].value if same and type(values[i]) is cst.Element else None  # type: ignore[index]
            yield from _pairs(element.value, item)
    else:
        yield target, value


def _tensor(context: FileContext, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """Whether ``expr`` is known to build a tensor: a call of a ``torch`` function
    (``torch.tensor``, ``torch.from_numpy``, ``torch.load``, ``torch.randn``...) or a tensor
    method on one (``.float()``, ``.to(device)``), or a name bound once to one."""
    if depth > 4:
        return False
    if type(expr) is cst.Name:
        bound = scope.lookup_value(expr.value)
        return bound is not None and _tensor(context, bound, scope, depth + 1)
    if type(expr) is not cst.Call:
        return False
    func = expr.func
    name = context.qualname(func, scope)
    if name is not None:
        parts = name.split(".")
        return len(parts) == 2 and parts[0] == "torch" and (parts[1].islower() or parts[1].endswith("Tensor"))
    if type(func) is cst.Attribute and func.attr.value in TENSOR_METHODS:
        return _tensor(context, func.value, scope, depth + 1)
    return False
