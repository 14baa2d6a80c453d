"""Whether a loader that a helper of this module returns is iterated every epoch by a
caller in another module of the project (TPF103 across files).

``data.py``: ``def get_loaders(): ...; return train_loader, val_loader``; ``train.py``:
``train_loader, val_loader = get_loaders()`` once, then ``for epoch in ...: for x in
train_loader:``. The callers come from the project index (None when not all known: then
nothing is claimed), each read with ``ast``. A caller counts when it binds the helper's
result (or the element holding the loader) to a name bound once in its function, outside
loops, and walks it (directly or through ``enumerate``/``iter``/``tqdm``) in a loop.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from ...project import ProjectIndex
from ...project.forms import dotted
from ...project.summarizer import parse_tree
from .global_walks import walked_through_free_name
from .endless_walks import walks_endlessly
from .trainer_classes import walks_every_epoch
from .caller_scopes import caller_scopes, mentions as _mentions, scope_body as _scope_body

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_PASS_THROUGH = frozenset({"enumerate", "iter", "tqdm"})
_NO_GRAD = re.compile(r"no_grad|inference_mode")


def iterated_every_epoch(
    index: ProjectIndex,
    path: str,
    helper: str,
    element: Optional[int],
    unless_text: Optional[str] = None,
    unless_name: Optional["re.Pattern[str]"] = None,
    origin: Optional[str] = None,
    depth: int = 0,
) -> bool:
    """Some caller of module-level function ``helper`` (of module ``path``) in another
    module walks the loader it returns (element ``element`` of a returned tuple) inside an
    outer loop. A caller whose module, or a project module it imports, contains
    ``unless_text`` (TPF105: ``set_epoch``), or that binds the loader to a name
    ``unless_name`` matches (``val_loader``), does not count. A module-level caller that
    only hands the loader on (binds it once and returns it, ``loader, _ = make(...)``;
    ``return loader``) is followed to its own callers, two such steps at most (any module
    but the loader's own, ``origin``)."""
    path = os.path.abspath(path)
    origin = origin or path
    found = index.resolve(path, helper)
    if found is None or found.kind != "function" or found.path != path:
        return False
    callers = index.callers(found)
    if not callers:
        return False
    for caller_path, site in callers:
        # `**config` in the call does not change which loader the helper returns
        if caller_path == origin or site.star or (site.in_loop and unless_name is not None):
            continue
        text = index.text(caller_path)
        if unless_text is not None and (text is None or _mentions(index, caller_path, text, unless_text)):
            continue
        tree = parse_tree(text) if text is not None else None
        body = _scope_body(tree, site.caller) if tree is not None else None
        walker = _Walker(index, caller_path, unless_text, unless_name)
        if body is not None and not site.in_loop and _walked_in_a_loop(body, site.line, site.callee, element, unless_name, walker):
            return True
        if body is not None and unless_name is None and _handed_next(body, site.line, site.callee, element, walker):
            return True  # TPF103: `train(model, loader, epochs)` restarts its workers every epoch of its own
        if body is not None and unless_name is not None and _handed_to_epoch_loop(body, site.line, site.callee, element, unless_name, walker):
            return True  # TPF105: `train(model, loader, epochs)` walks it in its own epoch loop
        handed_on = _forwarded(body, site.line, site.callee, element) if body is not None and not site.in_loop and depth < 2 and site.caller and "." not in site.caller else False
        if handed_on is not False and iterated_every_epoch(index, caller_path, site.caller, handed_on, unless_text, unless_name, origin, depth + 1):  # type: ignore[arg-type]
            return True
    return False


def _forwarded(body: Sequence[ast.stmt], line: int, callee: str, element: Optional[int]):
    """Where the scope returns the loader the call at ``line`` gave it: None (the whole
    value), a tuple position, or False when it does not simply hand it on (bound more than
    once on the same path, in a loop, or returned in different places)."""
    assign = _assignment(body, line, callee)
    name = _bound_name(assign.targets[0], element) if assign is not None else None
    if assign is None or name is None or _holds_in_loop(body, assign):
        return False
    nodes = list(_own_nodes(body))
    stores = [n for n in nodes if type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load]
    binders = [n for n in nodes if type(n) is ast.Assign and type(n.value) is ast.Call and any(_holds(t, s) for t in n.targets for s in stores)]
    if len(binders) != len(stores) or any(_holds_in_loop(body, b) for b in binders):
        return False  # bound some other way too (a loop, a with, a rebinding wrapper)
    block = next((b for b in _blocks(body) if any(x is assign for x in b)), ())
    if any(_holds(later, s) for later in block[[id(x) for x in block].index(id(assign)) + 1:] for s in stores):
        return False  # rebound after the call on its own path
    places = set()
    for returned in (n for n in nodes if type(n) is ast.Return):
        value = returned.value
        if type(value) is ast.Name and value.id == name:
            places.add(None)
        elif type(value) is ast.Tuple and sum(type(e) is ast.Name and e.id == name for e in value.elts) == 1:
            places.add(next(i for i, e in enumerate(value.elts) if type(e) is ast.Name and e.id == name))
        else:
            return False
    return places.pop() if len(places) == 1 else False


def _handed_to_epoch_loop(
    body: Sequence[ast.stmt], line: int, callee: str, element: Optional[int], unless_name: "re.Pattern[str]", walker: "_Walker"
) -> bool:
    """The loader, bound once outside loops, is handed (outside loops) to a project function
    that walks it inside an epoch loop of its own."""
    assign = _assignment(body, line, callee)
    name = _bound_name(assign.targets[0], element) if assign is not None else None
    if assign is None or name is None or unless_name.search(name) or _holds_in_loop(body, assign) or not _bound_once(body, name):
        return False
    return any(walker.walks_every_epoch(n, (name,)) for n in _own_nodes(body) if not _holds_in_loop(body, n))


def _handed_next(body: Sequence[ast.stmt], line: int, callee: str, element: Optional[int], walker: "_Walker") -> bool:
    """The loader, bound by the assignment at ``line`` (in a loop or not), is handed by a
    later statement of the same block, before any rebinding of its name, to a project
    function that walks it inside an epoch loop of its own: each call restarts its workers
    every epoch of the callee (``for s in stages: loader = make(s); fit(net, loader)``)."""
    assign = _assignment(body, line, callee)
    name = _bound_name(assign.targets[0], element) if assign is not None else None
    block = next((b for b in _blocks(body) if any(s is assign for s in b)), None) if name is not None else None
    if block is None:
        return False
    for statement in block[[id(s) for s in block].index(id(assign)) + 1:]:
        if type(statement) in (ast.Expr, ast.Assign) and any(walker.walks_every_epoch(n, (name,)) for n in ast.walk(statement.value)):  # type: ignore[attr-defined]
            return True
        if any(type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load for n in ast.walk(statement)):
            return False
    return False


def _blocks(body: Sequence[ast.stmt]) -> Iterator[Sequence[ast.stmt]]:
    """The statement lists of a scope (its body and the blocks nested in it)."""
    yield body
    for node in _own_nodes(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if type(inner) is list and inner and isinstance(inner[0], ast.stmt) and not isinstance(node, _SCOPES):
                yield inner
        for handler in getattr(node, "handlers", ()):
            yield handler.body


class _Walker:
    """Whether a statement of a caller's loop starts a pass over a name: ``for x in
    name`` (through ``enumerate``/``iter``/``tqdm``), or ``train(model, name)`` where
    ``train`` is a project function (this module or another, one call deep) that walks
    that parameter. A function whose module mentions ``unless_text`` does not count, nor
    (when ``unless_name`` is given: TPF105, where an evaluation pass's order does not
    matter) one whose name ``unless_name`` matches, one decorated with ``no_grad``, or a
    walk under ``with torch.no_grad():``."""

    def __init__(self, index: ProjectIndex, path: str, unless_text: Optional[str], unless_name: Optional["re.Pattern[str]"]) -> None:
        self.index = index
        self.path = path
        self.unless_text = unless_text
        self.unless_name = unless_name

    def walks(self, node: ast.AST, names: Sequence[str]) -> bool:
        if _walks(node, names):
            return True
        if type(node) is not ast.Call:
            return False
        for position, arg in enumerate(node.args):  # type: ignore[attr-defined]
            if type(arg) is ast.Starred:
                return False
            if type(arg) is ast.Name and arg.id in names and self._walks_parameter(node, position):  # type: ignore[attr-defined]
                return True
        for keyword in node.keywords:  # type: ignore[attr-defined]
            if keyword.arg is not None and type(keyword.value) is ast.Name and keyword.value.id in names:
                position = self._position(node, keyword.arg)  # type: ignore[arg-type]
                if position is not None and self._walks_parameter(node, position):  # type: ignore[arg-type]
                    return True
        return False

    def _position(self, call: ast.Call, keyword: str) -> Optional[int]:
        """The position of the project function's parameter ``keyword`` (None: not one)."""
        callee = dotted(call.func)
        found = self.index.resolve(self.path, callee) if callee else None
        if found is None or found.kind != "function" or found.function is None:
            return None
        names = [p.name for p in found.function.params if p.kind == "positional"]
        return names.index(keyword) if keyword in names else None

    def walks_every_epoch(self, node: ast.AST, names: Sequence[str]) -> bool:
        """``train(model, name, ...)`` called once, where ``train`` walks that parameter in
        a loop inside another loop of its own (the epoch loop is the callee's); or
        ``Trainer(name, ...)``, a project class that keeps it and walks it every epoch in a
        method (``trainer_classes``)."""
        if type(node) is not ast.Call or any(type(a) is ast.Starred for a in node.args):  # type: ignore[attr-defined]
            return False
        if any(
            type(arg) is ast.Name and arg.id in names and self._walks_parameter(node, position, nested=True)  # type: ignore[attr-defined]
            for position, arg in enumerate(node.args)  # type: ignore[attr-defined]
        ):
            return True
        handed = [(None, p) for p, a in enumerate(node.args) if type(a) is ast.Name and a.id in names]  # type: ignore[attr-defined]
        handed += [(k.arg, None) for k in node.keywords if k.arg is not None and type(k.value) is ast.Name and k.value.id in names]  # type: ignore[attr-defined]
        callee = dotted(node.func) if handed else None  # type: ignore[attr-defined]
        found = self.index.resolve(self.path, callee) if callee else None
        if found is None or found.kind != "class" or found.path is None or any(k.arg is None for k in node.keywords):  # type: ignore[attr-defined]
            return False
        text = self.index.text(found.path)
        if text is None or (self.unless_text is not None and self.unless_text in text):
            return False
        return any(walks_every_epoch(self.index, found, keyword, position, self.unless_name) for keyword, position in handed)

    def _walks_parameter(self, call: ast.Call, position: int, nested: bool = False) -> bool:
        return self.walks_callee_parameter(dotted(call.func), position, nested)

    def walks_callee_parameter(self, callee: Optional[str], position: int, nested: bool = False) -> bool:
        """The project function ``callee`` names here walks its parameter at ``position``
        (``nested``: in a loop inside another loop of its own)."""
        found = self.index.resolve(self.path, callee) if callee else None
        if found is None or found.kind != "function" or found.function is None or found.path is None:
            return False
        params = found.function.params
        if position >= len(params) or found.function.decorators or found.function.is_async:
            return False
        text = self.index.text(found.path)
        if text is None or (self.unless_text is not None and self.unless_text in text):
            return False
        tree = parse_tree(text)
        function = next(
            (s for s in tree.body if type(s) is ast.FunctionDef and s.name == found.function.name and s.lineno == found.function.line),
            None,
        ) if tree is not None else None
        if function is None or function.args.posonlyargs or function.args.vararg is not None:
            return False
        guarded: List[ast.AST] = []
        if self.unless_name is not None:
            if self.unless_name.search(function.name) or any(_NO_GRAD.search(ast.unparse(d)) for d in function.decorator_list):
                return False
            guarded = [w for w in _own_nodes(function.body) if type(w) is ast.With and any(_NO_GRAD.search(ast.unparse(i.context_expr)) for i in w.items)]
        parameter = function.args.args[position].arg if position < len(function.args.args) else None
        if parameter is None or parameter in ("self", "cls"):
            return False
        if walks_endlessly(self.index, found.path, function, parameter, guarded, self.unless_text, self.unless_name):
            return True  # `loader = sample_data(loader)`: each pass of the generator's `while True` is an epoch
        rebound = [
            n
            for n in _own_nodes(function.body)
            if type(n) is ast.Name and n.id == parameter and type(n.ctx) is not ast.Load and not _wraps_itself(function.body, n)
        ]
        names = _aliases(function.body, parameter, None)
        walks = [n for n in _own_nodes(function.body) if _walks(n, names)]
        if nested:  # the walk stands in an outer loop of the callee (its epoch loop)
            outer = [l for l in _own_nodes(function.body) if isinstance(l, _LOOPS)]
            walks = [n for n in walks if any(l is not n and _holds(l, n) for l in outer)]
        return not rebound and any(not any(_holds(g, n) for g in guarded) for n in walks)


def parameter_walked(index: ProjectIndex, path: str, callee: str, position: int, nested: bool = False) -> bool:
    """The project function ``callee`` names in module ``path`` walks its parameter at
    ``position`` on every call (``nested``: inside an outer loop of its own)."""
    return _Walker(index, path, None, None).walks_callee_parameter(callee, position, nested)


def _own_nodes(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a scope's statements, not those of nested functions or classes."""
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))


def _walked_in_a_loop(
    body: Sequence[ast.stmt],
    line: int,
    callee: str,
    element: Optional[int],
    unless_name: Optional["re.Pattern[str]"] = None,
    walker: Optional[_Walker] = None,
) -> bool:
    assign = _assignment(body, line, callee)
    if assign is None:
        return False
    return _name_walked(body, assign, _bound_name(assign.targets[0], element), unless_name, walker)


def _assignment(body: Sequence[ast.stmt], line: int, callee: str) -> Optional[ast.Assign]:
    """``x = callee(...)`` (one target) whose call starts on ``line``."""
    return next(
        (
            n
            for n in _own_nodes(body)
            if type(n) is ast.Assign
            and len(n.targets) == 1
            and type(n.value) is ast.Call
            and n.value.lineno == line
            and dotted(n.value.func) == callee
        ),
        None,
    )


def _name_walked(
    body: Sequence[ast.stmt],
    assign: ast.Assign,
    name: Optional[str],
    unless_name: Optional["re.Pattern[str]"],
    walker: Optional["_Walker"],
) -> bool:
    """``name``, bound once by ``assign`` outside any loop, is walked in a loop of the scope."""
    if name is None or (unless_name is not None and unless_name.search(name)):
        return False
    stores = [n for n in _own_nodes(body) if type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load]
    declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in _own_nodes(body))
    if len(stores) != 1 or declared:
        return False
    for loop in _own_nodes(body):
        if not isinstance(loop, _LOOPS) or _holds(loop, assign) or _holds_in_loop(body, assign):
            continue
        names = _aliases(body, name, loop)
        if any(walker.walks(inner, names) if walker else _walks(inner, names) for inner in _own_nodes(loop.body) if inner is not loop):
            return True
        if unless_name is None and walked_through_free_name(body, loop, name):  # TPF103: `evaluate(epoch)` reading it as a global
            return True
    return False


def _aliases(body: Sequence[ast.stmt], name: str, loop: Optional[ast.AST]) -> Tuple[str, ...]:
    """``name`` and the names bound once to a wrapper of it (``pbar = tqdm(name)``): any
    wrapper inside ``loop`` (made anew each pass), only ``tqdm`` outside it (a tqdm bar
    walks its iterable again each time; an ``enumerate`` object is spent after one pass)."""
    found = [name]
    for node in _own_nodes(body):
        if type(node) is not ast.Assign or len(node.targets) != 1 or type(node.targets[0]) is not ast.Name:
            continue
        alias = node.targets[0].id  # type: ignore[attr-defined]
        wrappers = _wrappers(node.value, name)
        if not wrappers or alias == name:
            continue
        inside = loop is not None and _holds(loop, node)
        if not inside and any(w != "tqdm" for w in wrappers):
            continue
        stores = [n for n in _own_nodes(body) if type(n) is ast.Name and n.id == alias and type(n.ctx) is not ast.Load]
        if len(stores) == 1:
            found.append(alias)
    return tuple(found)


def _wrappers(expr: ast.AST, name: str) -> List[str]:
    """The pass-through calls around ``name`` (``tqdm(enumerate(name))``), or [] when
    ``expr`` is not such a chain."""
    wrappers: List[str] = []
    while type(expr) is ast.Call and expr.args and type(expr.args[0]) is not ast.Starred:  # type: ignore[attr-defined]
        func = (dotted(expr.func) or "").split(".")[-1]  # type: ignore[attr-defined]
        if func not in _PASS_THROUGH:
            return []
        wrappers.append(func)
        expr = expr.args[0]  # type: ignore[attr-defined]
    return wrappers if type(expr) is ast.Name and expr.id == name else []  # type: ignore[attr-defined]


def _bound_name(target: ast.AST, element: Optional[int]) -> Optional[str]:
    if element is None:
        return target.id if type(target) is ast.Name else None  # type: ignore[attr-defined]
    if type(target) not in (ast.Tuple, ast.List):
        return None
    items = target.elts  # type: ignore[attr-defined]
    if any(type(e) is ast.Starred for e in items) or element >= len(items):
        return None
    chosen = items[element]
    return chosen.id if type(chosen) is ast.Name else None


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(outer))


def _holds_in_loop(body: Sequence[ast.stmt], node: ast.AST) -> bool:
    """The binding itself runs in a loop of the scope (a new loader each time round)."""
    return any(isinstance(n, _LOOPS) and _holds(n, node) for n in _own_nodes(body))


def _walks(node: ast.AST, names: Sequence[str]) -> bool:
    """``for ... in name`` (or ``enumerate(name)``, ``iter(name)``, ``tqdm(name)``, ``zip(name,
    other)``) for one of ``names``."""
    return isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _walked(node.iter, names)


def _walked(expr: ast.AST, names: Sequence[str]) -> bool:
    while type(expr) is ast.Call and expr.args and not any(type(a) is ast.Starred for a in expr.args):  # type: ignore[attr-defined]
        func = (dotted(expr.func) or "").split(".")[-1]  # type: ignore[attr-defined]
        if func == "zip":  # each of the iterables zipped is walked
            return any(_walked(arg, names) for arg in expr.args)  # type: ignore[attr-defined]
        if func not in _PASS_THROUGH:
            return False
        expr = expr.args[0]  # type: ignore[attr-defined]
    return type(expr) is ast.Name and expr.id in names  # type: ignore[attr-defined]


def _wraps_itself(body: Sequence[ast.stmt], store: ast.Name) -> bool:
    """``loader = tqdm(loader)``: a rebinding to a pass-through wrapper of the same name,
    which still walks what the name held."""
    return any(
        type(n) is ast.Assign and len(n.targets) == 1 and n.targets[0] is store and bool(_wrappers(n.value, store.id))
        for n in _own_nodes(body)
    )


def _results_bound_once(
    index: ProjectIndex, path: str, helper: str, unless_text: str
) -> Iterator[Tuple[str, Sequence[ast.stmt], ast.Assign, List[str]]]:
    """``caller_scopes`` whose result is bound once to a plain name, with the assignment."""
    for caller_path, site, body, params in caller_scopes(index, path, helper, unless_text):
        assign = _assignment(body, site.line, site.callee)
        if assign is None or type(assign.targets[0]) is not ast.Name or not _bound_once(body, assign.targets[0].id):  # type: ignore[attr-defined]
            continue
        yield caller_path, body, assign, params  # type: ignore[misc]


def sampler_walked_every_epoch(
    index: ProjectIndex, path: str, helper: str, shuffle: Optional[str], unless_text: str, unless_name: "re.Pattern[str]"
) -> bool:
    """TPF105 across files, for a sampler: module-level function ``helper`` of ``path``
    returns it, and a caller in another module binds the result to a name (passing a
    literal ``True`` for the parameter ``shuffle`` names, when given), hands that name as
    ``sampler=`` to a ``DataLoader`` bound once, and walks the loader every epoch (as
    ``iterated_every_epoch`` reads a caller, with the same screens)."""
    for caller_path, body, assign, params in _results_bound_once(index, path, helper, unless_text):
        if shuffle is not None and not _passes_true(assign.value, shuffle, params):  # type: ignore[arg-type]
            continue
        loader = _loader_taking(body, assign.targets[0].id)  # type: ignore[arg-type, attr-defined]
        walker = _Walker(index, caller_path, unless_text, unless_name)
        if loader is not None and _name_walked(body, loader, _bound_name(loader.targets[0], None), unless_name, walker):  # type: ignore[arg-type]
            return True
    return False


def _argument(call: ast.Call, name: str, params: Sequence[str]) -> Optional[ast.expr]:
    """What the call passes for parameter ``name``: by keyword, else by position (None when
    neither, or a ``*`` argument comes first)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    position = params.index(name) if name in params else None
    if position is None or position >= len(call.args) or any(type(a) is ast.Starred for a in call.args[: position + 1]):
        return None
    return call.args[position]


def _passes_true(call: ast.Call, name: str, params: Sequence[str]) -> bool:
    """The call passes the literal ``True`` for parameter ``name`` (by keyword or position)."""
    value = _argument(call, name, params)
    return type(value) is ast.Constant and value.value is True


def _one_loader(body: Sequence[ast.stmt], keywords_fit: Callable[[Sequence[ast.keyword]], bool]) -> Optional[ast.Assign]:
    """The one ``loader = DataLoader(...)`` of the scope whose keywords fit."""
    found = [
        n
        for n in _own_nodes(body)
        if type(n) is ast.Assign
        and len(n.targets) == 1
        and type(n.value) is ast.Call
        and (dotted(n.value.func) or "").split(".")[-1] == "DataLoader"
        and keywords_fit(n.value.keywords)
    ]
    return found[0] if len(found) == 1 else None


def _loader_taking(body: Sequence[ast.stmt], sampler: str) -> Optional[ast.Assign]:
    """The one ``loader = DataLoader(..., sampler=sampler)`` of the scope."""
    return _one_loader(body, lambda keywords: any(k.arg == "sampler" and type(k.value) is ast.Name and k.value.id == sampler for k in keywords))


def _bound_once(body: Sequence[ast.stmt], name: str) -> bool:
    return len([n for n in _own_nodes(body) if type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load]) == 1
