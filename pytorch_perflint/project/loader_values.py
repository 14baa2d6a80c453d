"""The DataLoader family's part of the value engine: what ``DataLoader(...)`` builds, what
iterating it gives, and the parts of a batch.

* ``DataLoader(...)`` (``torch.utils.data``, any spelling) is a ``Loader`` with the
  arguments the TPF1xx rules read (``num_workers``, ``pin_memory``, ``persistent_workers``,
  ``collate_fn``), from keywords, positions and ``**`` dicts with literal keys: a dict
  display, ``dict(...)``, one a project helper returns, or one the function changes in
  place with literal writes (``kwargs.update({"pin_memory": True})`` / ``kwargs["k"] = v``),
  a write under an ``if`` counting only on the accelerator path (RULES.md's TPF104);
  and its dataset's kind (``TensorDataset``: in memory).
* Iterating a loader gives a ``Batch``; ``enumerate``, ``tqdm``, ``iter``/``next``, ``zip``
  (a tuple of one element of each iterable, unknown ones unknown) and a project class's
  ``__iter__`` (what it yields, or the items of what it returns) are followed; a batch's
  items (``x, y = batch``, ``batch["image"]``, ``batch.items()``) are batches with a path. Anything built from a batch (``torch.cat``, ``.float()``,
  arithmetic) is not one: the engine knows no such producer, so it is unknown.
* A project function that returns its own parameter on a path gives, there, what the call
  passes (every return must agree).

``LoaderFlow`` is mixed into ``values.ValueEngine`` (it uses the engine's own evaluation);
the rest are pure functions of kinds and forms.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Dict, List, Optional, Tuple

from .forms import Call, Dict as DictForm, Form, Lit, Ref, Seq, Unknown as UnknownForm
from .kinds import (
    UNKNOWN,
    Batch,
    Dataset,
    Flag,
    Instance,
    Items,
    Iterator,
    Kind,
    Loader,
    NoneValue,
    Number,
    Options,
    Text,
    Unknown,
    join_all,
)
from . import device_values as devices
from .call_arms import live_returns
from .library_values import literal
from .loader_options import accelerator_arm
from .records import Written, record
from .scopes import PASSED, Comprehension

Evaluate = Callable[[Form], Kind]
DATALOADER = "torch.utils.data.DataLoader"
TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
ITERABLE_DATASETS = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"})
MAP_DATASETS = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
TQDM = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.autonotebook.tqdm", "tqdm.rich.tqdm"})
BUILTINS = frozenset({"iter", "next", "enumerate", "dict", "zip"})
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, ..., *, prefetch_factor, persistent_workers, pin_memory_device)
ARGUMENTS = (("num_workers", 5), ("collate_fn", 6), ("pin_memory", 7), ("persistent_workers", None))
_ACCELERATOR_WORDS = ("cuda", "gpu", "accelerator", "mps", "xpu")


def describe(kind: Kind) -> str:
    """A known literal value as a loader argument records it (``"True"``, ``"0"``), else ``"?"``."""
    if type(kind) is Flag:
        return repr(kind.value)  # type: ignore[union-attr]
    if type(kind) is NoneValue:
        return "None"
    if type(kind) is Number and kind.value is not None:  # type: ignore[union-attr]
        value = kind.value  # type: ignore[union-attr]
        return repr(int(value)) if float(value).is_integer() else repr(value)
    if type(kind) is Text and kind.value is not None:  # type: ignore[union-attr]
        return repr(kind.value)  # type: ignore[union-attr]
    return "?"


# -- producers: library calls -> kinds -----------------------------------------------------
def loader(form: Call, evaluate: Evaluate, spread: Callable[[Form], Optional[Options]], storage: Callable[[Kind, Form], str] = lambda kind, form: "") -> Loader:
    """``DataLoader(...)``: the arguments the rules read and the dataset's kind."""
    spreads = [spread(item) for item in form.dstar]
    arguments: List[Tuple[str, str]] = []
    for name, position in ARGUMENTS:
        explicit = form.keyword(name)
        if explicit is None and position is not None and position < len(form.args):
            explicit = form.args[position]
        if explicit is not None:
            arguments.append((name, describe(evaluate(explicit))))
        elif position is not None and form.star:
            arguments.append((name, "?"))
        else:
            value = _spread_value(spreads, name)
            if value is not None:
                arguments.append((name, value))
    if form.star or any(found is None or found.open for found in spreads):
        arguments.append(("*", "?"))
    dataset = form.keyword("dataset") or (form.args[0] if form.args else None)
    found = evaluate(dataset) if dataset is not None else UNKNOWN
    return Loader(tuple(arguments), found.storage if type(found) is Dataset else storage(found, dataset))  # type: ignore[union-attr,arg-type]


def _spread_value(spreads: List[Optional[Options]], name: str) -> Optional[str]:
    """What the ``**`` dicts pass for ``name`` (the last one that has it wins)."""
    value = None
    for found in spreads:
        if found is None:
            return "?"
        for key, item in found.items:
            if key == name:
                value = item
    return value


def options(form: DictForm, evaluate: Evaluate) -> Kind:
    """A dict display with literal string keys (``**other`` entries that are such dicts too)."""
    if form.truncated:
        return UNKNOWN
    items: Dict[str, str] = {}
    open_ = False
    values: List[Kind] = []
    for key, value in form.items:
        found = evaluate(value)
        if key is None:
            if type(found) is not Options:
                return UNKNOWN
            items.update(found.items)  # type: ignore[union-attr]
            open_ = open_ or found.open  # type: ignore[union-attr]
            values.append(found.value)  # type: ignore[union-attr]
        elif type(key) is Lit and isinstance(key.value, str):
            items[key.value] = describe(found)
            values.append(found)
        else:
            return UNKNOWN
    return Options(tuple(items.items()), open_, join_all(values))


def keywords(form: Call, evaluate: Evaluate) -> Kind:
    """``dict(num_workers=0, pin_memory=True)``."""
    if form.args or form.star or form.dstar:
        return UNKNOWN
    return Options(tuple((key, describe(evaluate(value))) for key, value in form.kwargs))


def written(scope: Any, name: str) -> Optional[Options]:
    """A dict display bound once to ``name`` in ``scope`` and changed there in place by
    literal writes only: its items after them. A key written under an ``if`` keeps the
    written value only where that ``if`` tests for the accelerator and every write agrees;
    else it is not known. None when the dict is used any other way."""
    entries = scope.entries.get(name) or []
    if len(entries) != 1 or type(entries[0].form) is not DictForm or scope.node is None:
        return None
    base = options(entries[0].form, lambda value: literal(value.value) if type(value) is Lit else UNKNOWN)
    writes = _writes(scope.node, name)
    if type(base) is not Options or writes is None:
        return None
    out = dict(base.items)  # type: ignore[union-attr]
    for key, value, on_accelerator_path in writes:
        if on_accelerator_path and (key not in out or out[key] == value):
            out[key] = value
        else:
            out[key] = "?"
    return Options(tuple(out.items()), base.open)  # type: ignore[union-attr]


def _writes(function: ast.AST, name: str) -> Optional[List[Tuple[str, str, bool]]]:
    """(key, value described, on the accelerator path) for each in-place write to ``name``;
    None when ``name`` is used any other way than being written so, or read by ``**``."""
    writes: List[Tuple[str, str, bool]] = []
    uses = 0
    understood = 0

    def visit(node: ast.AST, guarded: bool, accelerator: bool) -> None:
        nonlocal uses, understood
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not function:
            return
        if type(node) is ast.If:
            on_path = any(word in ast.unparse(node.test).lower() for word in _ACCELERATOR_WORDS)  # type: ignore[attr-defined]
            visit(node.test, guarded, accelerator)  # type: ignore[attr-defined]
            for child in node.body:  # type: ignore[attr-defined]
                visit(child, True, accelerator or on_path)
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child, True, accelerator)
            return
        if type(node) in (ast.For, ast.While, ast.With, ast.Try):
            for child in ast.iter_child_nodes(node):
                visit(child, True, accelerator)
            return
        if type(node) is ast.Name and node.id == name:  # type: ignore[attr-defined]
            uses += 1
        found = _write(node, name)
        if found is not None:
            understood += 1
            writes.extend((key, value, accelerator or not guarded) for key, value in found)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, accelerator)

    visit(function, False, False)
    # Every use is the binding, a write understood above, or a ``**name`` argument.
    nodes = list(ast.walk(function))
    spreads = sum(1 for n in nodes if type(n) is ast.keyword and n.arg is None and type(n.value) is ast.Name and n.value.id == name)
    binds = sum(1 for n in nodes if type(n) is ast.Name and n.id == name and type(n.ctx) is ast.Store)
    return writes if uses == understood + spreads + binds else None


def _write(node: ast.AST, name: str) -> Optional[List[Tuple[str, str]]]:
    """``name.update({...})`` / ``name.update(k=v)`` / ``name["k"] = v`` with literal keys."""
    if type(node) is ast.Expr and type(node.value) is ast.Call:  # type: ignore[attr-defined]
        call = node.value  # type: ignore[attr-defined]
        func = call.func
        if not (type(func) is ast.Attribute and func.attr == "update" and type(func.value) is ast.Name and func.value.id == name):
            return None
        pairs: List[Tuple[str, str]] = []
        for arg in call.args:
            if type(arg) is not ast.Dict:
                return None
            for key, value in zip(arg.keys, arg.values):
                if type(key) is not ast.Constant or not isinstance(key.value, str):
                    return None
                pairs.append((key.value, _constant(value)))
        for keyword in call.keywords:
            if keyword.arg is None:
                return None
            pairs.append((keyword.arg, _constant(keyword.value)))
        return pairs
    if type(node) is ast.Assign and len(node.targets) == 1:  # type: ignore[attr-defined]
        target = node.targets[0]  # type: ignore[attr-defined]
        if type(target) is ast.Subscript and type(target.value) is ast.Name and target.value.id == name:
            key = target.slice
            if type(key) is ast.Constant and isinstance(key.value, str):
                return [(key.value, _constant(node.value))]  # type: ignore[attr-defined]
    return None


def _constant(node: ast.AST) -> str:
    return describe(literal(node.value)) if type(node) is ast.Constant else "?"  # type: ignore[attr-defined]


# -- batches -------------------------------------------------------------------------------
def element(kind: Kind) -> Optional[Kind]:
    """What iterating a loader kind gives (None: not one of this family's kinds)."""
    if type(kind) is Loader:
        return Batch(kind)  # type: ignore[arg-type]
    if type(kind) is Batch:
        return Batch(kind.loader, (*kind.path, "*"))  # type: ignore[union-attr]
    if type(kind) is Iterator:
        return kind.element  # type: ignore[union-attr]
    return None


def item(receiver: Kind, index: Form) -> Optional[Kind]:
    """``batch["image"]``, ``batch[0]``, ``x, y = batch``: a part of the batch; an item of
    a dict whose values are all one kind (``loaders[phase]``) or of a list comprehension."""
    if type(receiver) is Options and type(receiver.value) is not Unknown:  # type: ignore[union-attr]
        return receiver.value  # type: ignore[union-attr]
    if type(receiver) is Iterator and receiver.indexable:  # type: ignore[union-attr]
        return UNKNOWN if type(index) is UnknownForm and index.kind == "slice" else receiver.element  # type: ignore[union-attr]  # a slice is a list
    if type(receiver) is not Batch:
        return None
    key = index.value if type(index) is Lit and isinstance(index.value, (str, int)) and not isinstance(index.value, bool) else "*"  # type: ignore[union-attr]
    return Batch(receiver.loader, (*receiver.path, key))  # type: ignore[union-attr]


def method(receiver: Kind, name: str) -> Optional[Kind]:
    """``batch.items()`` / ``batch.values()`` of a dict batch: its values are parts of it
    (of a dict whose values are one kind: those)."""
    if type(receiver) not in (Batch, Options) or name not in ("items", "values"):
        return None
    if type(receiver) is Options:
        part = receiver.value  # type: ignore[union-attr]
        if type(part) is Unknown:
            return None
    else:
        part = Batch(receiver.loader, (*receiver.path, "*"))  # type: ignore[union-attr]
    return Iterator(Items((UNKNOWN, part)) if name == "items" else part)


def builtin(name: str, form: Call, evaluate: Evaluate, element_of: Callable[[Kind], Kind]) -> Kind:
    """``iter(x)``, ``next(it)``, ``enumerate(x)`` of something whose items are known, and
    ``dict(k=v)``."""
    if name == "dict":
        return keywords(form, evaluate)
    if name == "zip":
        return zipped(form, evaluate, element_of)
    if form.star or form.dstar or not form.args or (form.kwargs and name != "enumerate"):
        return UNKNOWN
    if name == "next" and len(form.args) > 1:
        return UNKNOWN  # a default may come out instead
    if name == "iter" and len(form.args) > 1:
        return UNKNOWN  # iter(callable, sentinel)
    found = element_of(evaluate(form.args[0]))
    if type(found) is type(UNKNOWN):
        return UNKNOWN
    if name == "next":
        return found
    return Iterator(found if name == "iter" else Items((Number(), found)))


def zipped(form: Call, evaluate: Evaluate, element_of: Callable[[Kind], Kind]) -> Kind:
    """``zip(train_in, train_out)`` yields a tuple of one element of each (an unknown
    iterable gives an unknown item); nothing is known of ``zip(*loaders)``."""
    if form.star or form.dstar or not form.args or any(key != "strict" for key, _ in form.kwargs):
        return UNKNOWN
    found = tuple(element_of(evaluate(arg)) for arg in form.args)
    return UNKNOWN if all(type(kind) is Unknown for kind in found) else Iterator(Items(found))


def wrapped(form: Call, evaluate: Evaluate, element_of: Callable[[Kind], Kind]) -> Kind:
    """``tqdm(loader)`` yields what what it wraps yields (it is not that object itself)."""
    if not form.args or form.star:
        return UNKNOWN
    found = element_of(evaluate(form.args[0]))
    return UNKNOWN if type(found) is Unknown else Iterator(found)


def entered_bar(form: Form, kind: Kind) -> bool:
    """``with tqdm(loader) as bar``: a tqdm bar's ``__enter__`` gives the bar itself, so
    ``bar`` yields what the loader yields (no other iterator the engine knows is a context)."""
    return type(kind) is Iterator and type(form) is Call and type(form.func) is Ref and form.func.qualname in TQDM


class LoaderFlow:
    """The engine's methods for this family (mixed into ``values.ValueEngine``)."""

    def _loader_call(self, func: Ref, form: Call, where: Any, depth: int) -> Optional[Kind]:
        """A DataLoader, a TensorDataset, ``tqdm``, or a builtin that walks an iterable;
        None when ``func`` is none of them."""
        qualname = func.qualname

        def evaluate(arg: Form) -> Kind:  # a literal needs no flow: known however deep the read
            return literal(arg.value) if type(arg) is Lit else self._eval(arg, where, depth + 1)  # type: ignore[attr-defined,union-attr]

        if qualname == DATALOADER:
            return loader(form, evaluate, lambda item: self._spread(item, where, depth), lambda kind, dataset: self._storage(kind, dataset, where, depth))
        if qualname in TENSOR_DATASETS:  # its tensors, in memory or all on the accelerator
            return Dataset("device" if form.args and any(devices.holds(evaluate(arg)) for arg in form.args) else "memory")
        if qualname in TQDM:
            return wrapped(form, evaluate, lambda kind: self._element(kind, depth + 1))  # type: ignore[attr-defined]
        if qualname is None and func.name in BUILTINS and self._free(where, func.name):  # type: ignore[attr-defined]
            return builtin(func.name, form, evaluate, lambda kind: self._element(kind, depth + 1))  # type: ignore[attr-defined]
        return None

    def _container(self, form: Any, where: Any, depth: int) -> Kind:
        """A dict display (``Options``: its literal keys, the kind all its values are), or a
        comprehension bound to a name: a dict's values, a list's items are its element."""
        if type(form) is DictForm:
            return options(form, lambda item: self._eval(item, where, depth + 1))  # type: ignore[attr-defined]
        if type(form) is Written:  # a dict filled by item writes, each value read where written
            return record(form, lambda value, line: self._eval(value, where.at(line), depth + 1), where.line)  # type: ignore[attr-defined]
        if type(form) is not Comprehension:
            return UNKNOWN
        element = self._eval(form.element, type(where)(where.path, form.scope, where.line, where), depth + 1)  # type: ignore[attr-defined]
        if type(element) is Unknown:
            return UNKNOWN
        if form.kind == "dict":
            return Options((), True, element)
        return Iterator(element, indexable=form.kind == "list")

    def _storage(self, dataset: Kind, form: Optional[Form] = None, where: Any = None, depth: int = 0) -> str:
        """A project dataset class's kind, from the library classes it derives from; a
        dataset on the accelerator (``device_values``)."""
        if devices.holds(dataset) or (form is not None and devices.filled_there(self, form, where, depth)):
            return "device"
        if type(dataset) is not Instance or self.index is None:  # type: ignore[attr-defined]
            return ""
        bases = self.index.resolution.external_bases(dataset.klass)  # type: ignore[attr-defined,union-attr]
        if bases & TENSOR_DATASETS:  # unless a project class overrides how items are read
            return "memory" if self._method_of(dataset.klass, "__getitem__") is None else "map"  # type: ignore[attr-defined,union-attr]
        if bases & ITERABLE_DATASETS:
            return "iterable"
        return "map" if bases & MAP_DATASETS else ""

    def _spread(self, form: Form, where: Any, depth: int) -> Optional[Options]:
        """What a ``**`` argument passes, when it is a dict with literal keys."""
        scope = where.scope
        entries = scope.entries.get(form.name) if type(form) is Ref and scope is not None else None  # type: ignore[union-attr]
        if entries and len(entries) == 1 and type(entries[0].form) is DictForm:
            return written(scope, form.name)  # type: ignore[union-attr]  # its writes (or a call handed it) are read too
        arm = accelerator_arm(scope, form.name) if entries else None  # type: ignore[union-attr]
        if arm is not None:  # `{...} if cuda else {}`: the accelerator's dict
            found = options(arm, lambda value: self._eval(value, where, depth + 1))  # type: ignore[attr-defined]
            return found if type(found) is Options else None
        kind = self._eval(form, where, depth + 1)  # type: ignore[attr-defined]
        return kind if type(kind) is Options else None  # type: ignore[return-value]

    def _loader_element(self, iterable: Kind, depth: int) -> Optional[Kind]:
        """An item of a loader kind, or of a project object through its ``__iter__``."""
        found = element(iterable)
        if found is not None or type(iterable) is not Instance or self.index is None:  # type: ignore[attr-defined]
            return found
        klass = iterable.klass  # type: ignore[union-attr]
        method_ = self._method_of(klass, "__iter__")  # type: ignore[attr-defined]
        if method_ is None or method_.function is None:
            return None
        if not iterable.exact and any(  # type: ignore[union-attr]
            sub.klass is not None and sub.klass.method("__iter__") is not None for sub in self.index.resolution.subclasses(klass)  # type: ignore[attr-defined]
        ):
            return UNKNOWN  # a subclass's own __iter__ may run
        key = ("iter", method_.path, method_.name, method_.function.line)
        return self._memoised(key, lambda: self._iterated(method_, depth))  # type: ignore[attr-defined]

    def _iterated(self, definition: Any, depth: int) -> Kind:
        """What ``__iter__`` gives: every ``yield`` (all agree), or the items of what it returns."""
        scope = self.scope_of(definition)  # type: ignore[attr-defined]
        if scope is None:
            return UNKNOWN
        if not scope.generator:
            return self._element(self.returns(definition, depth + 1), depth + 1)  # type: ignore[attr-defined]
        if not scope.yields:
            return UNKNOWN
        kinds = [self._eval_in(definition, form, line, depth) for line, _, form in scope.yields]
        return join_all(kinds)

    def _eval_in(self, definition: Any, form: Form, line: int, depth: int) -> Kind:
        where = self._where_in(definition, line)  # type: ignore[attr-defined]
        return UNKNOWN if where is None else self._eval(form, where, depth + 1)  # type: ignore[attr-defined]

    def _branches(self, branches: Any, where: Any, name: str, depth: int) -> Kind:
        """The bindings that may reach a read; one carried round a loop that reads the name
        again (``x = f(x)``) is cut there, or proved (``Memo._loop_carried``)."""

        forms = self.open_arms(where.scope, name, branches.forms, where, depth)  # type: ignore[attr-defined]

        def kinds() -> List[Kind]:
            return [self._branch(form, where.at(at), name, depth) for form, at in forms]

        if not branches.carried:
            return self.choose(kinds())  # type: ignore[attr-defined]
        return self._loop_carried((id(where.scope), name), kinds, self.choose)  # type: ignore[attr-defined]

    def _branch(self, form: Any, where: Any, name: str, depth: int) -> Kind:
        """One binding that may reach a read; ``PASSED``: the parameter as its callers pass it."""
        if form is PASSED:
            return self._parameter(where.scope, name, where, depth)  # type: ignore[attr-defined]
        return self._eval(form, where, depth + 1)  # type: ignore[attr-defined]

    def _passed_through(self, definition: Any, form: Optional[Call], where: Any, depth: int) -> Kind:
        """A function's returns at one call: a ``return param`` (not rebound) gives what this
        call passes for it (or its default), so does such an item of a returned tuple
        (``return model, loader``); the other returns as always; all must agree."""
        scope = self.scope_of(definition) if form is not None and definition.kind == "function" else None  # type: ignore[attr-defined]
        if scope is None or scope.generator or not scope.returns:
            return self.returns(definition, depth)  # type: ignore[attr-defined]

        def passes(item: Any, line: int) -> bool:
            return type(item) is Ref and item.name in scope.params and scope.value_at(item.name, line)[0] == "param"

        def through(item: Any, line: int) -> bool:
            tuple_display = type(item) is Seq and item.kind == "tuple" and not item.truncated
            return passes(item, line) or (tuple_display and any(passes(i, line) for i in item.items))

        own = [through(f, line) for line, _, f in scope.returns]
        live = live_returns(scope, definition.function, form)  # `get_model(cfg, train=True)`: `if train: return m, opt`
        if not any(own) and live is None:
            return self.returns(definition, depth)  # type: ignore[attr-defined]
        # A function whose other returns call it again (torch's _inductor/lowering.py) is
        # read per call once: inside, its memoised returns (else exponential in the depth).
        passing = self.__dict__.setdefault("_passing", set())
        if definition.key in passing:
            return self.returns(definition, depth)  # type: ignore[attr-defined]
        passing.add(definition.key)
        try:
            kinds = []
            for (line, _, returned), passed in zip(scope.returns, own):
                if live is not None and line not in live:
                    continue
                if not passed:
                    kinds.append(self._eval_in(definition, returned, line, depth))
                elif type(returned) is Ref:
                    kinds.append(self._argument_at(definition, returned.name, form, where, depth))  # type: ignore[arg-type]
                else:
                    items = returned.items  # type: ignore[union-attr]
                    kinds.append(Items(tuple(
                        self._argument_at(definition, i.name, form, where, depth) if passes(i, line) else self._eval_in(definition, i, line, depth)
                        for i in items
                    )))
        finally:
            passing.discard(definition.key)
        return join_all(kinds)

    def _argument_at(self, definition: Any, name: str, form: Call, where: Any, depth: int) -> Kind:
        params = definition.function.params
        param = next((p for p in params if p.name == name), None)
        if param is None or param.kind in ("vararg", "kwarg") or form.star or form.dstar:
            return UNKNOWN
        value = form.keyword(name)
        if value is None and param.kind == "positional":
            position = [p for p in params if p.kind == "positional"].index(param)
            value = form.args[position] if position < len(form.args) else None
        if value is not None:
            return self._eval(value, where, depth + 1)  # type: ignore[attr-defined]
        if param.default is None:
            return UNKNOWN
        return self._eval(param.default, type(where)(definition.path), depth + 1)  # type: ignore[attr-defined]
