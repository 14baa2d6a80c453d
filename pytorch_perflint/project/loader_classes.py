"""Project subclasses of ``DataLoader``: ``AudioLoader(ds, batch_size=4, **kw)`` builds a
``DataLoader`` with the arguments its constructors forward to ``super().__init__``.

A class is read as the ``Loader`` it builds when it derives, through project classes with one
base each, from ``torch.utils.data.DataLoader``, no class of that chain overrides how it is
iterated (``__iter__``/``__next__``), and each ``__init__`` on the way calls the base's
constructor exactly once (``super().__init__(...)``, ``super(C, self).__init__(...)``,
``Base.__init__(self, ...)``). What reaches ``DataLoader`` is worked out per call:

* an argument the constructor passes on as its parameter (not rebound) is what this call
  passes for it, or the parameter's default;
* ``*args`` / ``**kwargs`` passed on are the call's positions and keywords that no named
  parameter took (a ``**`` dict of the call goes on too);
* any other expression is read in the constructor (``collate_fn=self.collate``).

A constructor that also sets ``self.x`` may change how batches are made (``self.collate_fn =
...``): the loader's ``collate_fn`` is then not known. Anything else (two bases, a second
``super().__init__``, ``*args`` the constructor does not take as its own, ``*args`` or
``**kwargs`` read or changed anywhere but in that call: ``kwargs.setdefault(...)``) is not
followed and the object stays an instance of its class (rules stay silent).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .forms import Call, Form, FormBuilder, Ref, Unknown
from .kinds import Kind, Loader
from .loader_values import DATALOADER, loader
from .resolution import Definition
from .where import Where

_ITERATION = ("__iter__", "__next__")
_NOT_PASSED = Unknown("not passed")  # a required parameter the call does not fill


@dataclass(frozen=True)
class _Passed:
    """What one call passes, each argument with where it is read: positions (then unknown
    ones after them when ``star``), keywords and ``**`` dicts."""

    args: Tuple[Tuple[Form, Any], ...]
    star: bool
    kwargs: Tuple[Tuple[str, Tuple[Form, Any]], ...]
    dstar: Tuple[Tuple[Form, Any], ...]


class _At:
    """One argument with the place it is read (an object of its own, whatever its form)."""

    __slots__ = ("form", "where")

    def __init__(self, form: Form, where: Any) -> None:
        self.form = form
        self.where = where


def subclass_loader(engine: Any, klass: Definition, form: Optional[Call], where: Any, depth: int) -> Optional[Kind]:
    """The ``Loader`` that calling the project class ``klass`` builds, None when it is not a
    project subclass of ``DataLoader`` this module can follow (an instance, as before)."""
    index = engine.index
    if index is None or form is None or where is None or klass.klass is None:
        return None
    chain = _chain(engine, klass)
    if chain is None:
        return None
    passed = _Passed(tuple((a, where) for a in form.args), form.star, tuple((k, (v, where)) for k, v in form.kwargs), tuple((d, where) for d in form.dstar))
    sets_attributes = False
    for link in chain:
        init = engine._method_of(link, "__init__")
        if init is None or init.name.rpartition(".")[0] != link.name or init.path != link.path:
            continue  # inherited: the call goes on unchanged
        scope = engine.scope_of(init)
        node = getattr(scope, "node", None) if scope is not None else None
        if node is None:
            return None
        found = _forwarded(engine, init, scope, node, passed)
        if found is None:
            return None
        passed, sets = found
        sets_attributes = sets_attributes or sets
    return _loader(engine, passed, sets_attributes, depth)


def _chain(engine: Any, klass: Definition) -> Optional[List[Definition]]:
    """The project classes from ``klass`` up to the one deriving from ``DataLoader`` (each
    with one base), None when that is not the line or a class changes iteration."""
    chain: List[Definition] = []
    current: Optional[Definition] = klass
    while current is not None and current.klass is not None and len(chain) < 8:
        if any(current.klass.method(name) is not None for name in _ITERATION):
            return None
        chain.append(current)
        bases = current.klass.bases
        if len(bases) != 1 or type(bases[0]) is not Ref or current.path is None:
            return None
        found = engine.index.resolve(current.path, bases[0].name)
        if found is None:
            return None
        if found.kind == "external":
            return chain if found.qualname == DATALOADER else None
        current = found if found.kind == "class" else None
    return None


def _forwarded(engine: Any, init: Definition, scope: Any, node: ast.AST, passed: _Passed) -> Optional[Tuple[_Passed, bool]]:
    """What ``init`` passes to its base's constructor when called with ``passed``, and
    whether it sets attributes of ``self`` as well; None when that cannot be read."""
    function = init.function
    params = [p for p in function.params]
    if not params or params[0].kind != "positional":
        return None
    this, params = params[0].name, params[1:]
    calls = [n for n in ast.walk(node) if type(n) is ast.Call and _base_init(n.func, this)]
    if len(calls) != 1:
        return None
    call = calls[0]
    for rest in filter(None, (_vararg(params), _kwarg(params))):  # `kwargs.pop(...)`, `kwargs["k"] = v`: changed
        if sum(1 for n in ast.walk(node) if type(n) is ast.Name and n.id == rest) != sum(1 for n in ast.walk(call) if type(n) is ast.Name and n.id == rest):
            return None
    bound = _bind(engine, init, params, passed)
    if bound is None:
        return None
    named, extra, star, more, dstar = bound
    builder = FormBuilder(dict(engine.index.summary(init.path).aliases))
    inside = engine._where_in(init, call.lineno)
    if inside is None:
        return None

    def value(expr: ast.expr) -> Tuple[Form, Any]:
        if type(expr) is ast.Name and expr.id in named and scope.value_at(expr.id, call.lineno)[0] == "param":
            return named[expr.id]
        return builder.form(expr), inside

    args: List[Tuple[Form, Any]] = []
    out_star = False
    positional = call.args
    if type(call.func.value) is not ast.Call:  # `Base.__init__(self, ...)`
        if not positional or type(positional[0]) is not ast.Name or positional[0].id != this:
            return None
        positional = positional[1:]
    for arg in positional:
        if type(arg) is ast.Starred:
            if type(arg.value) is ast.Name and arg.value.id == _vararg(params) and scope.value_at(arg.value.id, call.lineno)[0] == "param":
                args.extend(extra)
                out_star = star
                if star:
                    break
                continue
            out_star = True
            break
        args.append(value(arg))
    kwargs: List[Tuple[str, Tuple[Form, Any]]] = []
    spreads: List[Tuple[Form, Any]] = []
    for keyword in call.keywords:
        if keyword.arg is not None:
            kwargs.append((keyword.arg, value(keyword.value)))
        elif type(keyword.value) is ast.Name and keyword.value.id == _kwarg(params) and scope.value_at(keyword.value.id, call.lineno)[0] == "param":
            kwargs.extend(more)
            spreads.extend(dstar)
        else:
            spreads.append(value(keyword.value))
    sets = any(
        type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == this
        for statement in ast.walk(node) if type(statement) in (ast.Assign, ast.AnnAssign, ast.AugAssign)
        for target in (statement.targets if type(statement) is ast.Assign else [statement.target])  # type: ignore[attr-defined]
    )
    return _Passed(tuple(args), out_star, tuple(kwargs), tuple(spreads)), sets


def _base_init(func: ast.expr, this: str) -> bool:
    """``super().__init__`` / ``super(C, self).__init__`` / ``Base.__init__``."""
    if type(func) is not ast.Attribute or func.attr != "__init__":
        return False
    value = func.value
    if type(value) is ast.Call:
        return type(value.func) is ast.Name and value.func.id == "super"
    return type(value) in (ast.Name, ast.Attribute) and not (type(value) is ast.Name and value.id == this)


def _vararg(params: List[Any]) -> Optional[str]:
    return next((p.name for p in params if p.kind == "vararg"), None)


def _kwarg(params: List[Any]) -> Optional[str]:
    return next((p.name for p in params if p.kind == "kwarg"), None)


def _bind(engine: Any, init: Definition, params: List[Any], passed: _Passed):
    """Python's binding of ``passed`` to ``params``: each named parameter's value (the
    argument, else its default read in the defining module), the positions left for
    ``*args`` (with whether unknown ones follow), the keywords and ``**`` dicts left for
    ``**kwargs``. None when a name is passed twice."""
    module = Where(init.path)
    named: Dict[str, Tuple[Form, Any]] = {}
    positional = [p for p in params if p.kind == "positional"]
    keywords = dict(passed.kwargs)
    for position, param in enumerate(positional):
        if position < len(passed.args):
            if param.name in keywords:
                return None
            named[param.name] = passed.args[position]
    vararg = _vararg(params)
    extra = passed.args[len(positional):]
    if extra and vararg is None:
        return None
    unknown_positions = passed.star and len(passed.args) < len(positional)
    for param in params:
        if param.kind not in ("positional", "keyword") or param.name in named:
            continue
        if param.name in keywords:
            named[param.name] = keywords.pop(param.name)
        elif (param.kind == "positional" and unknown_positions) or passed.dstar:
            named[param.name] = (Unknown("maybe passed"), module)
        elif param.default is not None:
            named[param.name] = (param.default, module)
        else:
            named[param.name] = (_NOT_PASSED, module)
    if keywords and _kwarg(params) is None:
        return None
    return named, extra, passed.star, tuple(keywords.items()), passed.dstar


def _loader(engine: Any, passed: _Passed, sets_attributes: bool, depth: int) -> Kind:
    """``DataLoader(...)`` as the last constructor calls it: ``loader_values.loader`` read
    with each argument where it was written."""
    def at(pair: Tuple[Form, Any]) -> _At:
        return _At(*pair)

    call = Call(
        Ref("DataLoader", DATALOADER),
        tuple(at(p) for p in passed.args),
        tuple((k, at(p)) for k, p in passed.kwargs),
        passed.star,
        tuple(at(p) for p in passed.dstar),
    )

    def evaluate(argument: Any) -> Kind:
        return engine._eval(argument.form, argument.where, depth + 1)

    def spread(argument: Any):
        return engine._spread(argument.form, argument.where, depth)

    found = loader(call, evaluate, spread, engine._storage)
    if sets_attributes and found.argument("collate_fn") is None:
        return Loader((*found.arguments, ("collate_fn", "?")), found.dataset)
    return found
