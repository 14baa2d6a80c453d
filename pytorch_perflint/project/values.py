"""The value-flow engine: what kind of value (``kinds``) a form holds where it is read.

One engine per project index, for the linted file and every other module alike. A form is read
at a ``Where``: a scope (``scopes.Scope``, of a function's or module's ``ast``) and a line. It follows

* local names to their binding at that line (assignments, unpacking, augmented assignment,
  ``with ... as``, ``for`` and comprehension targets, a function's own imports; ``local_values``);
* module names through the index (``resolve``: imports, re-exports, module bindings);
* parameters to every project caller's argument, read in the caller's scope (all agree, else
  unknown), or the default when no caller passes one; ``self`` is an instance of its class;
* calls of project functions to their returns (any module, any depth), of project classes to
  an instance, of instances to ``__call__``/``forward``, methods to the class's method (its
  project bases included), ``for x in obj`` to the items of a known container;
* attributes of instances to every ``self.attr = ...`` of the class and its project bases (all
  agree) or a class attribute; items of containers and library values;
* library calls through ``library_values``; values chosen by an unknown name (``importlib``,
  registries, builders' ``if``/``elif`` arms) through ``choices``; nested functions per call.
Depth and callers are bounded, recursion is cut, answers are memoised while no summary changes
(``ProjectIndex.generation``); an ``Answer`` says which modules it read (the cache).
"""

from __future__ import annotations

import ast
import re
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, List, Optional, Tuple

from . import accelerate_values as accelerate, autograd_values as autograd, choices, device_values as devices, generators, library_values as library, loader_values as loaders
from .loader_classes import subclass_loader
from .bodies import locate
from .dict_values import candidates, dict_display
from .forms import Attr, BinOp, Call, Dict as DictForm, Either, Form, Item, Joined, Lit, Ref, Seq
from .kinds import UNKNOWN, Array, ArrayArchive, Arrays, GraphTensor, H5File, Instance, Items, Iterator, Kind, Module, Namespace, Number, OneOf, Parser, ProjectCallable, Text, Unknown, join, join_all, present
from .module_values import ModuleValues
from .object_attributes import written_attribute
from .statements import alias_target
from ..analysis.names import canonical
from .tensor_values import tensor_type
from .resolution import Definition
from .value_memo import Memo
from .local_values import ImportRecord, LocalFlow
from .appended_lists import Collected
from .scopes import Appended, Branches, Each, Scope, build_scope, free
from .attribute_values import AttributeFlow
from .own_reads import reaching_own_binding
from .parameter_values import MAX_CALLERS, ParameterFlow  # noqa: F401  (MAX_CALLERS re-exported)
from .where import Answer, Where  # re-exported: the engine's question and answer
from .word_index import MAX_SCANNED_MODULES

if TYPE_CHECKING:
    from .index import ProjectIndex

MAX_DEPTH = 24
# Subclasses and attribute writes are found by scanning every module's text: in a larger
# project (the torch package) a method's ``self`` is taken for an object of its own class,
# as the per-rule resolvers did, so that cold runs stay cheap. Parameters are read from
# callers there too, for a callee whose name few modules spell: its scans read only those
# (``word_index``, ``ParameterFlow._reads_callers``).
_ENGINES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def engine_for(index: Optional["ProjectIndex"], optimistic: bool = False) -> "ValueEngine":
    """The engine of an index (one per index; a lone file gets a fresh one). An
    ``optimistic`` engine answers a screen's question ("could it be an array?") cheaply:
    it takes a parameter for an array instead of reading every caller."""
    if index is None:
        return ValueEngine(None, optimistic)
    engines = _ENGINES.get(index)
    if engines is None:
        engines = _ENGINES[index] = {}
    if optimistic not in engines:
        engines[optimistic] = ValueEngine(index, optimistic)
    return engines[optimistic]


class ValueEngine(LocalFlow, AttributeFlow, ParameterFlow, loaders.LoaderFlow, Memo):
    """Answers ``kind_of(form, where)`` over one project (``index`` None: one lone file)."""

    def __init__(self, index: Optional["ProjectIndex"], optimistic: bool = False) -> None:
        self.index = index
        self.optimistic = optimistic
        self._init_memo()
        self.models = ModuleValues(self, Where)

    def choose(self, kinds: List[Kind]) -> Kind:
        """Where bindings or returns meet (``choices.choose``); too many candidates for a
        choice are read at once: a convolutional model when every one is."""
        return choices.choose(kinds, self.models.join)

    # -- the question ------------------------------------------------------------------------
    def answer(self, form: Form, where: Where) -> Answer:
        """The kind of ``form`` read at ``where``, with the modules the answer read."""
        if self.index is None:
            return Answer(self._eval(form, where, 0))
        with self.index.recording() as used:
            kind = self._eval(form, where, 0)
        return Answer(kind, frozenset(used))

    def kind_of(self, form: Form, where: Where) -> Kind:
        return self.answer(form, where).kind

    def reads_parameters(self) -> bool:
        """Whether a parameter's value can come from any caller here (screens ask): in a
        large project only a few parameters are read (``_reads_callers``), and screens that
        took every parameter for a possible source cost the torch package's cold run most
        of its time again, so they keep taking none."""
        return not self.optimistic and self._scannable()

    def _scannable(self) -> bool:
        """Whether the project is small enough to scan for callers and subclasses."""
        return self.index is not None and len(self.index.files) <= MAX_SCANNED_MODULES

    # -- memos: ``value_memo.Memo`` ---------------------------------------------------------
    def scope_of(self, definition: Definition) -> Optional[Scope]:
        """The scope of a project function or method (its own lines, parsed on demand)."""
        function = definition.function
        if self.index is None or function is None or definition.path is None:
            return None
        self._fresh()
        key = (definition.path, definition.name, function.line)
        if key in self._scopes:
            self.index.note_read(definition.path)  # what reading it the first time noted
        else:
            text = self.index.text(definition.path)
            node = None if text is None else locate(text, function.line, function.end_line, function.name, False)
            aliases = dict(self.index.summary(definition.path).aliases)
            self._scopes[key] = None if node is None else build_scope(node, aliases, definition.path, definition.name)
        return self._scopes[key]

    def _where_in(self, definition: Definition, line: int) -> Optional[Where]:
        return None if (scope := self.scope_of(definition)) is None else Where(definition.path, scope, line, Where(definition.path))

    # -- evaluation ----------------------------------------------------------------------------
    def _eval(self, form: object, where: Where, depth: int) -> Kind:
        if depth == 0 and not self._inside:
            return self._question(lambda: self._eval(form, where, 0), where.scope)
        if depth > MAX_DEPTH:
            return UNKNOWN
        if self._inside:
            self._steps += 1
            if self._steps > self.max_steps:
                self._exhausted = True
                return UNKNOWN
        kind = type(form)
        if kind is Ref:
            return self._ref(form, where, depth)  # type: ignore[arg-type]
        if kind is Call:  # no graph is made where autograd is off
            found = self._call(form, where, depth)  # type: ignore[arg-type]
            return UNKNOWN if type(found) is GraphTensor and autograd.grad_off(where, self.index) else found
        if kind is Lit:
            return library.literal(form.value)  # type: ignore[union-attr]
        if kind is Item:
            return self._item(form, where, depth)  # type: ignore[arg-type]
        if kind is Attr:
            return self._attribute(self._eval(form.value, where, depth + 1), form.attr, depth)  # type: ignore[union-attr]
        if kind is BinOp:
            left = self._eval(form.left, where, depth + 1)  # type: ignore[union-attr]
            return library.arithmetic(form.op, left, self._eval(form.right, where, depth + 1))  # type: ignore[union-attr]
        if kind is Either:
            return join(self._eval(form.body, where, depth + 1), self._eval(form.orelse, where, depth + 1))  # type: ignore[union-attr]
        if kind is Seq:
            if form.truncated or form.kind == "set":  # type: ignore[union-attr]
                return UNKNOWN
            return Items(tuple(self._eval(item, where, depth + 1) for item in form.items))  # type: ignore[union-attr]
        if kind is Joined:
            return Text(tail=form.tail)  # type: ignore[union-attr]
        if kind is Each:
            return self._element(self._eval(form.iterable, where, depth + 1), depth)  # type: ignore[union-attr]
        if kind is Collected:  # appends in a loop: any number of items, each one of these
            found = join_all([self._eval(item, where.at(at), depth + 1) for item, at in form.items])  # type: ignore[union-attr]
            return Iterator(found, indexable=True) if form.items and type(found) is not Unknown else UNKNOWN  # type: ignore[union-attr]
        if kind is Appended:  # each item as read where it is added
            return Items(tuple(self._eval(item, where.at(at), depth + 1) for item, at in form.items))  # type: ignore[union-attr]
        return self._container(form, where, depth)  # dict displays, comprehensions (``loader_values``), ``local_values``' forms

    def _ref(self, form: Ref, where: Where, depth: int) -> Kind:
        head, _, rest = form.name.partition(".")
        if rest and (own := reaching_own_binding(where.scope, head, rest.partition(".")[0], where.line)) is not None:
            kind = self._eval(own[0], where.at(own[1]), depth + 1)  # `self.L = np.zeros(n)` earlier in this method
            for part in rest.split(".")[1:]:
                kind = self._attribute(kind, part, depth)
            return kind
        found = self._name(head, where, depth, form.name if rest else None)
        if isinstance(found, tuple):  # a dotted name the index resolved whole
            return found[0]
        kind = found
        kind = self.models.read_namespace(kind, head, rest, where) if type(kind) is Namespace and rest else kind
        for part in rest.split(".") if rest else ():
            kind = self._attribute(kind, part, depth)
        return kind

    def _name(self, name: str, where: Where, depth: int, dotted: Optional[str]):
        """The kind ``name`` holds at ``where``; a module-level dotted name is resolved
        whole (``helpers.load``), given back as a 1-tuple."""
        current: Optional[Where] = where
        first = True
        while current is not None:
            scope = current.scope
            if scope is None:
                return self._module_name(current.path, dotted or name, depth, whole=dotted is not None)
            status, value, line = scope.value_at(name, current.line if first else 0)
            if status == "value" and type(value) is Branches:
                return self._branches(value, current, name, depth)
            if status == "value" and type(value) is ImportRecord:  # a function's own import: resolved whole
                return (self._local_import(value, current.path, dotted or name, depth),)
            if status == "value":
                return self._eval(value, current.at(line), depth + 1)
            if status == "param":
                return self._parameter(scope, name, current, depth)
            if status == "defined":
                return self._module_name(current.path, dotted or name, depth, whole=dotted is not None)
            if status == "unknown":
                return UNKNOWN
            if scope.module:
                return self._module_name(current.path, dotted or name, depth, whole=dotted is not None)
            current = current.parent if current.parent is not None else Where(current.path)
            first = first and scope.inline
        return UNKNOWN

    def _module_name(self, path: Optional[str], name: str, depth: int, whole: bool = False):
        if self.index is None or path is None:
            return UNKNOWN
        definition = self.index.resolve(path, name)
        if definition is None and whole:
            written = written_attribute(self, path, name)  # `cfg.GLOBAL.DEVICE` of a config object
            return (written,) if written is not None else self._name_then_attributes(path, name, depth)
        kind = self._definition(definition, depth)
        return (kind,) if whole else kind

    def _name_then_attributes(self, path: str, name: str, depth: int):
        head, _, rest = name.partition(".")
        kind = self._module_name(path, head, depth)
        for part in rest.split("."):
            kind = self._attribute(kind, part, depth)
        return (kind,)

    def _definition(self, definition: Optional[Definition], depth: int) -> Kind:
        if definition is None:
            return UNKNOWN
        if definition.kind in ("function", "class", "method"):
            return ProjectCallable(definition)
        if definition.kind == "binding" and definition.binding is not None:  # changed in place: an object keeps its class
            kind = self._eval(definition.binding.form, Where(definition.path), depth + 1)
            return kind if type(present(kind)) in (Instance, Parser) or not definition.binding.mutated else UNKNOWN
        return (definition.kind == "external" and tensor_type(definition.qualname)) or UNKNOWN  # `torch.FloatTensor` as a value

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, form: Call, where: Where, depth: int) -> Kind:
        func = form.func
        if type(func) is Ref and func.qualname is None and self.index is not None and (star := self.index.resolution.star_qualname(where.path, func.name)) and free(where, func.name.partition(".")[0]):
            form = replace(form, func=(func := Ref(func.name, star)))  # `torch` from `from utils import *`
        if type(func) is Ref and func.qualname is None and where.scope is not None and where.scope.module and (found := self._import_before(func.name, where)):
            form = replace(form, func=(func := Ref(func.name, found)))  # `data.DataLoader` before `for data in loader`

        def evaluate(arg: Form) -> Kind:
            return self._eval(arg, where, depth + 1)

        if (found := self.models.library_call(form, evaluate, where.path, where, depth)) is not None:
            return found  # models, argparse, other frameworks
        if type(func) is Ref:
            if func.name == "<enter>":  # `with h5py.File(p) as f`, `with tqdm(loader) as bar`: the object itself
                entered = present(evaluate(form.args[0])) if form.args else UNKNOWN
                if type(entered) is ArrayArchive:  # `with np.load(p) as d`: only an .npz archive enters
                    return ArrayArchive()
                if type(entered) is Instance:  # a project object: its `__enter__`'s return
                    return self._dispatch(entered, "__enter__", depth)
                return entered if type(entered) is H5File or loaders.entered_bar(form.args[0], entered) else UNKNOWN
            found = self._loader_call(func, form, where, depth) or accelerate.call(func.qualname)
            if found is not None:
                return found
            if func.name in _NUMBERING and func.qualname is None and form.args and not (form.kwargs or form.star) and self._free(where, func.name):
                return _numbering(func.name, form, evaluate)  # `len(counts)`, `range(n)`, `list(range(n))`
            if func.qualname == "importlib.import_module":
                return choices.import_module(self, form, where)
            qualname = func.qualname  # a star import's library name was qualified above
            if qualname is not None and library.knows(qualname):
                return library.call(qualname, form, evaluate)
            if func.name == "getattr" and len(form.args) == 2 and type(form.args[0]) is Ref and self._free(where, "getattr"):
                return self.models.by_name(form.args[0].name, form.args[1], where, depth)  # type: ignore[union-attr]
            head, _, method = func.name.rpartition(".")
            if method == "get" and len(form.args) == 1 and type(found := choices.registry_get(self, head, where)) is not Unknown:
                return found  # `MODELS.get(name)`: one of the registered definitions
            if head:
                callee = self._ref(func, where, depth + 1)
                if type(callee) is ProjectCallable or type(callee) is OneOf or type(present(callee)) is Module:  # each candidate's; `self.criterion(out, y)`
                    return self._call_kind(callee, depth, form, where)
                if type(held := present(callee)) is Instance and self._method_of(held.klass, "__call__") is not None:
                    if type(found := self._dispatch(held, "__call__", depth)) is not Unknown:
                        return found  # `self.creator(box, anchor)`: a callable object kept in an attribute
                elif type(held) is Instance and autograd.named_loss(held.klass.name) and self.index.is_nn_module(held.klass):  # type: ignore[union-attr]
                    if type(found := self._call_kind(held, depth, form, where)) is GraphTensor:
                        return found  # `self.dice(pred, y)`, a project loss module kept in an attribute
                receiver = self._ref(Ref(head), where, depth + 1)
                return self._method(receiver, method, form, evaluate, depth)
            local = self._local_def(func.name, where)  # a function defined in the caller's
            return self._call_local(*local, form, where, depth) if local else self._call_kind(self._ref(func, where, depth + 1), depth, form, where)
        if type(func) is Attr:
            if (base := self._super_method(func, where, depth)) is not None:  # `super().load(n)`: the base's, for this object
                return self.returns(base[0], depth, base[1])
            return self._method(self._eval(func.value, where, depth + 1), func.attr, form, evaluate, depth)
        if type(func) is Call:  # `getattr(models, name)(...)`, `make()(...)`
            inner = func.func
            if type(inner) is Ref and inner.name == "getattr" and len(func.args) == 2 and type(func.args[0]) is Ref and self._free(where, "getattr"):
                return self.models.call_by_name(func.args[0].name, func.args[1], where, depth)  # type: ignore[union-attr]
            return self._call_kind(self._eval(func, where, depth + 1), depth)
        if type(func) is Item and type(func.value) is Ref and func.value.name.endswith(".__dict__"):
            owner = func.value.name[: -len(".__dict__")]
            return self.models.call_by_name(owner, func.index, where, depth)
        if type(func) is Item and (table := dict_display(func.value, where, self.index)) is not None:  # `models[name](...)`
            return self.choose([self._call_kind(self._eval(e, table[1], depth + 1), depth, form, where) for e in candidates(table[0], func.index)])
        return UNKNOWN

    _free = staticmethod(free)  # no scope around a `Where` binds the name: a builtin

    def _super_method(self, func: Attr, where: Where, depth: int) -> Optional[Tuple[Definition, Instance]]:
        """The method ``super().name`` runs, read in a method of a class with one base, a
        project class, and the object it runs for (None: another call, or not known)."""
        value, scope = func.value, where.scope
        if type(value) is not Call or type(value.func) is not Ref or value.func.name != "super" or value.args or value.kwargs:
            return None
        if self.index is None or scope is None or scope.inline or not scope.owner or "." not in scope.owner or not scope.params or not self._free(where, "super"):
            return None
        klass = self.index.resolve(where.path, scope.owner.rpartition(".")[0])  # type: ignore[arg-type]
        if klass is None or klass.klass is None or len(klass.klass.bases) != 1:
            return None
        bases = self.index.resolution.project_bases(klass)
        found = self._method_of(bases[0], func.attr) if len(bases) == 1 else None
        this = present(self._ref(Ref(scope.params[0]), where, depth + 1)) if found is not None else None
        return (found, this) if type(this) is Instance else None  # type: ignore[return-value]

    def _import_before(self, name: str, where: Where) -> Optional[str]:
        """The library name a module-level import gives ``name`` where it is read before a
        later binding rebinds it (``Scope.imported_at``; not when a function may rebind it
        by ``global``)."""
        head, dot, rest = name.partition(".")
        if self.index is None or where.path is None or not where.scope.imported_at(head, where.line):  # type: ignore[union-attr]
            return None
        targets = {alias_target(r) for r in self.index.summary(where.path).imports if r.bound == head and not r.star}
        target = next(iter(targets)) if len(targets) == 1 else None
        text = self.index.text(where.path) or ""
        if not target or target.startswith(".") or re.search(rf"\bglobal\b[^\n]*\b{re.escape(head)}\b", text):
            return None
        return canonical(f"{target}.{rest}" if dot else target)

    def _call_kind(self, callee: Kind, depth: int, form: Optional[Call] = None, where: Optional[Where] = None) -> Kind:
        callee = present(callee)
        if type(callee) is ProjectCallable:
            return self._call_callable(callee, depth, form, where)
        if type(callee) is OneOf:
            return choices.each(callee, lambda one: self._call_kind(one, depth, form, where))
        if type(callee) is Instance:
            if self._method_of(callee.klass, "__call__") is not None:
                return self._dispatch(callee, "__call__", depth)
            if self.index.is_nn_module(callee.klass):  # type: ignore[union-attr]
                found = self._dispatch(callee, "forward", depth)
                return autograd.loss_module(callee.klass.name, self._forward_node(callee.klass), found) if type(found) is Unknown and autograd.named_loss(callee.klass.name) else found
            return UNKNOWN
        evaluate = None if where is None else (lambda arg: self._eval(arg, where, depth + 1))
        return autograd.called(callee) or devices.called(callee, form, evaluate) or UNKNOWN  # a loss module's result; a model's output on the accelerator

    def _call_callable(self, callee: ProjectCallable, depth: int, form: Optional[Call] = None, where: Optional[Where] = None) -> Kind:
        definition = callee.definition
        if definition.kind == "class":  # a project subclass of DataLoader: the loader it builds
            return subclass_loader(self, definition, form, where, depth) or Instance(definition)
        return self._passed_through(definition, form, where, depth)

    def _method(self, receiver: Kind, name: str, form: Call, evaluate, depth: int) -> Kind:
        receiver = present(receiver)
        if type(receiver) is OneOf:
            return choices.each(receiver, lambda one: self._method(one, name, form, evaluate, depth))
        if type(receiver) is Instance and not self.models.keeps(receiver, name):  # `Net().cuda()`: still it
            return self._dispatch(receiver, name, depth)
        found = self.models.method(receiver, name, form) or loaders.method(receiver, name) or accelerate.method(receiver, name, form, evaluate)
        return library.method(receiver, name, form, evaluate) if found is None else found

    def _dispatch(self, receiver: Instance, name: str, depth: int) -> Kind:
        """What calling method ``name`` of the instance returns: its class's method, joined
        with the overrides of project subclasses when the object may be one of theirs."""
        found = self._method_of(receiver.klass, name)
        if found is None:
            return UNKNOWN
        this = receiver if found.name.rpartition(".")[0] != receiver.klass.name or found.path != receiver.klass.path else None
        kinds = [] if self._only_raises(found) else [self.returns(found, depth, this)]  # an inherited one: for this object
        if not receiver.exact:
            for sub in self.index.resolution.subclasses(receiver.klass):  # type: ignore[union-attr]
                if sub.klass is not None and sub.klass.method(name) is not None:
                    override = self._method_of(sub, name)
                    if override is None or not self._only_raises(override):
                        kinds.append(UNKNOWN if override is None else self.returns(override, depth))
        return join_all(kinds)

    def _only_raises(self, definition: Definition) -> bool:
        """A method that never returns: no ``return`` or ``yield``, and its body ends in
        ``raise`` (a base class's ``raise NotImplementedError``). A call of it gives no
        value, so only the overrides of the object's class answer (``self.step_wait()`` in a
        base's ``step``)."""
        scope = self.scope_of(definition)
        body = getattr(scope.node, "body", None) if scope is not None else None
        return bool(body) and not scope.returns and not scope.generator and type(body[-1]) is ast.Raise  # type: ignore[union-attr,index]

    def _forward_node(self, klass: Definition) -> Optional[ast.AST]:
        """The ``forward`` a project module runs, read from its module's text."""
        found = self._method_of(klass, "forward")
        text = self.index.text(found.path) if found is not None and found.path is not None and found.function is not None else None  # type: ignore[union-attr]
        return locate(text, found.function.line, found.function.end_line, "forward", False) if text is not None else None  # type: ignore[union-attr]

    def _method_of(self, klass: Definition, name: str, seen: Tuple = ()) -> Optional[Definition]:
        """The method ``name`` of a project class, or of its project bases (in order)."""
        if self.index is None or klass.klass is None or klass.key in seen or len(seen) > 8:
            return None
        method = klass.klass.method(name)
        if method is not None:
            return Definition("method", klass.path, f"{klass.name}.{name}", function=method, klass=klass.klass)
        for base in self.index.resolution.project_bases(klass):
            found = self._method_of(base, name, (*seen, klass.key))
            if found is not None:
                return found
        return None

    def returns(self, definition: Definition, depth: int = 0, this: Optional[Instance] = None) -> Kind:
        """What every ``return`` of a project function or method gives (all agree); a
        method inherited from a base read with ``self`` the object ``this`` it is called on."""
        if self.index is None or definition.function is None or depth > MAX_DEPTH:
            return UNKNOWN
        if depth == 0 and not self._inside:
            return self._question(lambda: self.returns(definition, 0, this), self.scope_of(definition))
        key = ("returns", definition.path, definition.name, definition.function.line, this)
        return self._memoised(key, lambda: self._returns(definition, depth, this))

    def _returns(self, definition: Definition, depth: int, this: Optional[Instance] = None) -> Kind:
        scope = self.scope_of(definition)
        if scope is not None and scope.generator:  # an iterator of what it yields (not read in a large project: cold runs stay cheap)
            return generators.generated(scope, lambda form, line: self._eval(form, Where(definition.path, scope, line, Where(definition.path), this), depth + 1)) if self._scannable() else UNKNOWN
        if scope is None or not scope.returns:
            return UNKNOWN
        outer = Where(definition.path)
        kinds = [self._eval(form, Where(definition.path, scope, line, outer, this), depth + 1) for line, _, form in scope.returns]
        return self.choose(kinds)  # several classes: one of them

    # -- items, iteration (attributes: ``attribute_values.AttributeFlow``) ---------------------
    def _item(self, form: Item, where: Where, depth: int) -> Kind:
        receiver = present(self._eval(form.value, where, depth + 1))
        index = form.index
        if type(receiver) is Items:
            if type(index) is Lit and type(index.value) is int and -len(receiver.items) <= index.value < len(receiver.items):
                return receiver.items[index.value]
            if receiver.items and type(index) is not Lit and (type(index) is BinOp or type(self._eval(index, where, depth + 1)) is Number):
                return join_all(list(receiver.items))  # `betas[epoch // 160]`, `parts[i]`: one of them
            return UNKNOWN
        if type(form.value) is DictForm and type(index) is Lit:
            values = [v for k, v in form.value.items if type(k) is Lit and k.value == index.value]
            return self._eval(values[-1], where, depth + 1) if values and not form.value.truncated else UNKNOWN
        if type(receiver) is Instance:
            return self._dispatch(receiver, "__getitem__", depth)
        if type(receiver) is Unknown and type(form.value) is Ref and type(found := choices.registry_get(self, form.value.name, where)) is not Unknown:
            return found  # `MODELS[name]`: one of the registered definitions
        known = loaders.item(receiver, index) or library.item(receiver, index, lambda arg: self._eval(arg, where, depth + 1))
        if known is None and (table := dict_display(form.value, where, self.index)) is not None:  # `models[name]`
            known = self.choose([self._eval(entry, table[1], depth + 1) for entry in candidates(table[0], index)])  # one of them
        return UNKNOWN if known is None else known

    def _element(self, iterable: Kind, depth: int = 0) -> Kind:
        """An item of what a ``for`` or a comprehension walks (a known container's items)."""
        iterable = present(iterable)
        found = self._loader_element(iterable, depth)
        if found is not None:
            return found
        if type(iterable) is Items and iterable.items:
            return join_all(list(iterable.items))
        if type(iterable) is Arrays:
            return Array()
        return UNKNOWN


_NUMBERING = frozenset({"len", "range", "list"})


def _numbering(name: str, form: Call, evaluate) -> Kind:
    """``len(x)`` is a number, ``range(...)`` an iterator of numbers, ``list(x)`` of a
    known iterator or container the same items, indexable."""
    if name == "len":
        return Number() if len(form.args) == 1 else UNKNOWN
    if name == "range":
        return Iterator(Number(), indexable=True) if len(form.args) <= 3 else UNKNOWN
    found = present(evaluate(form.args[0])) if len(form.args) == 1 else UNKNOWN
    if type(found) is Iterator:
        return Iterator(found.element, indexable=True)
    return found if type(found) is Items else UNKNOWN
