"""Second-stage ``ast`` screens of TPF401 (a tensor copied from a NumPy array): the constructor
calls whose argument could be an array, with and without the project index."""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Container, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

from ...analysis.ast_index import TreeIndex, enclosing_functions, per_tree, tree_index, walk_ast
from ...project.numpy_api import ARRAY_METHODS, TO_NUMPY_METHODS
from .asked_roots import AskedRoots

Assignment = Union[ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr]


_ARRAY_MODULES = ("numpy", "cv2", "pandas", "PIL", "imageio", "h5py", "scipy")
# Methods and attributes that give an array when their receiver is one (or a pandas object).
_ARRAY_PRESERVING = frozenset(
    {"astype", "reshape", "copy", "flatten", "ravel", "transpose", "squeeze", "swapaxes", "view", "repeat"}
    | {"T", "values", "to_numpy"}
)
# The tensor constructors TPF401 knows (``torch.tensor`` and the legacy typed ones).
_CONSTRUCTORS = frozenset(
    {"tensor", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor"}
    | {"IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"}
)


# Text after a word ending in "ensor" up to a call's parenthesis, or an ``as``: what Python
# allows there (spaces, newlines in brackets, line continuations, comments to the end of
# their line, the ``)`` of ``(torch.tensor)(x)``). A literal first: searched for fast.
_ENSOR_CALL = re.compile(r"ensor(?:[\s)\\]|#[^\r\n]*[\r\n])*\(")
_ENSOR_ALIAS = re.compile(r"ensor(?:[\s\\]|#[^\r\n]*[\r\n])+as\b")


def names_a_constructor(source: str) -> bool:
    """Whether the text can hold what ``numpy_copy_candidates`` looks for: a call of a
    constructor by its own name (``torch.tensor(``, ``FloatTensor (``; not ``is_tensor(``)
    or an import of one under another name. A text that is not ASCII is read in NFKC
    form, the form Python gives its identifiers."""
    if not source.isascii():
        source = unicodedata.normalize("NFKC", source)
    for pattern in (_ENSOR_CALL, _ENSOR_ALIAS):
        for match in pattern.finditer(source):
            end = match.start() + len("ensor")
            start = match.start()
            while start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"):
                start -= 1
            if source[start:end] in _CONSTRUCTORS:
                return True
    return False


def _array_roots(index: TreeIndex) -> Set[str]:
    """Local names bound to array-producing modules (``np``, ``numpy``, ``cv2``, ``pd``...)
    or to names imported from them."""
    roots: Set[str] = set()
    for node in index.imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _ARRAY_MODULES:
                    roots.add((alias.asname or alias.name).split(".")[0])
        elif node.module and node.module.split(".")[0] in _ARRAY_MODULES:
            roots.update(alias.asname or alias.name for alias in node.names)
    return roots


# Imports that never name a project module: a call rooted in one is not a project helper.
_LIBRARIES = frozenset({"torch", "torchvision", "typing", "os", "sys", "math", "random", "collections"})


def _project_roots(index: TreeIndex) -> Set[str]:
    """Names whose calls or attributes may be read from the project index (TPF401 asks it):
    the module's functions and classes, ``self``, and names imported from modules that may
    be the project's own."""
    roots = {"self", "super"} | {node.name for node in index.functions}  # `super().load(p)`: a base's method
    for node in index.imports:
        if isinstance(node, ast.Import):
            roots.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] not in _LIBRARIES)
        elif node.level or (node.module and node.module.split(".")[0] not in _LIBRARIES):
            roots.update(alias.asname or alias.name for alias in node.names)
    return roots


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


class _EveryName:
    """A set that holds every name."""

    def __contains__(self, name: object) -> bool:
        return True


_EVERY_NAME = _EveryName()


def _could_be_array(node: ast.AST, roots: Container[str], names: Container[str]) -> bool:
    """Over-approximates the value engine's known arrays: ``.numpy()``, an expression rooted
    in an array module or in a name assigned one, array-preserving methods of those."""
    if isinstance(node, ast.Starred):
        node = node.value
    if type(node) is _Each:
        return _could_be_item(node.value, roots, names)  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and f"{node.value.id}[]" in names:
        return True  # an item of a display that holds an array
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "numpy":
            return True
        if node.func.attr in _ARRAY_PRESERVING and _could_be_array(node.func.value, roots, names):
            return True  # `(a / 255).copy()`; `np.copy(a)` is rooted in `np`, below
    if isinstance(node, ast.Attribute) and node.attr in _ARRAY_PRESERVING:
        if _could_be_array(node.value, roots, names):
            return True
    if isinstance(node, ast.BinOp):  # `np.array(b) / 255.0`
        return _could_be_array(node.left, roots, names) or _could_be_array(node.right, roots, names)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not isinstance(node.func.value, ast.Name)
        and _root_name(node) == "self"
        and "self" not in names
    ):
        # `self.state.get(p)`: the analysis knows `self.method(...)` and attributes of
        # `self`; a method of one of them gives an array only as an array method of an
        # array (``project/library_values.method``).
        attr = node.func.attr
        return attr in TO_NUMPY_METHODS or attr == "to_numpy" or (attr in ARRAY_METHODS and _could_be_array(node.func.value, roots, names))
    root = _root_name(node)
    return bool(root) and (root in roots or root in names)


class _Each(ast.expr):
    """An item of what ``value`` walks (a ``for`` target's value in ``_comprehension_bindings``)."""

    _fields = ("value",)


_WALKERS = frozenset({"enumerate", "zip", "iter", "reversed", "tqdm"})


def _could_be_item(node: ast.AST, roots: Container[str], names: Container[str]) -> bool:
    """An item of what ``node`` gives could be an array: a project function's call asks the
    project about its items (a generator's yields) rather than its value."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WALKERS and node.args and "enumerate" not in names:
        return any(_could_be_item(arg, roots, names) for arg in node.args)  # `enumerate(gen())`: its items' parts
    root = _root_name(node)
    each = getattr(roots, "each", None)
    if each is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and root not in names:
        return each(root)
    return _could_be_array(node, roots, names)


def _could_bind_array(value: ast.AST, roots: Container[str], names: Container[str]) -> bool:
    """What a name assigned ``value`` could hold, read as an array: the value, or the items
    of a list comprehension or generator of arrays (``feats = [np.asarray(s) for s in xs]``,
    then ``feats[i]``). A comprehension is never an array itself, so a constructor called on
    one (``torch.tensor([f(x) for x in xs])``) is no candidate."""
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return _could_be_array(value.elt, roots, names)
    return _could_be_array(value, roots, names)


def _could_hold_arrays(value: ast.AST, roots: Container[str], names: Container[str]) -> bool:
    """A dict, list or tuple display with an item that could be an array (``store =
    {"x": np.zeros(n)}``): the name it binds counts only when indexed (``store["x"]``,
    ``_array_names`` adds it as ``store[]``)."""
    if not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
        return False
    items = value.values if isinstance(value, ast.Dict) else value.elts
    return any(item is not None and _could_bind_array(item, roots, names) for item in items)


def _imports_h5py(index: TreeIndex) -> bool:
    for node in index.imports:
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if any(module.split(".")[0] == "h5py" for module in modules):
            return True
    return False


def _opened_files(tree: ast.Module, entered: Optional[Callable[[ast.Call], bool]] = None) -> Set[str]:
    """Names bound by ``with <call> as f`` (``h5py.File(...)`` under any alias: their
    datasets read as arrays), or only those whose call ``entered`` accepts."""
    return {name for name, call in _with_calls(tree) if entered is None or entered(call)}


@per_tree  # asked once per scope chain of each question: the tree is walked once
def _with_calls(tree: ast.Module) -> Tuple[Tuple[str, ast.Call], ...]:
    """``(f, call)`` for each ``with <call> as f`` (statements only are walked: cheap)."""
    out: List[Tuple[str, ast.Call]] = []
    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.With, ast.AsyncWith)):
            out.extend((i.optional_vars.id, i.context_expr) for i in node.items if type(i.optional_vars) is ast.Name and type(i.context_expr) is ast.Call)  # type: ignore[union-attr]
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, ()) or ())
    return tuple(out)


def _constructor_names(index: TreeIndex) -> Set[str]:
    """The constructor names, and what ``from torch import tensor as t`` binds them to."""
    names = set(_CONSTRUCTORS)
    for node in index.imports:
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname and a.name in _CONSTRUCTORS)
    return names


def _is_constructor(func: ast.AST, names: Set[str]) -> bool:
    """``tensor`` / ``LongTensor`` imported by name, or an attribute of a plain name
    (``torch.tensor``, ``th.FloatTensor``); not ``aten.split.Tensor`` or ``torch.cuda.*``."""
    if isinstance(func, ast.Name):
        return func.id in names
    return isinstance(func, ast.Attribute) and func.attr in _CONSTRUCTORS and isinstance(func.value, ast.Name)


# The keywords TPF401 reports a call with (``torch.tensor(a, dtype=...)``); any other, such
# as ``pin_memory=``, keeps the copy.
_REPORTED_KEYWORDS = frozenset({"dtype", "device", "requires_grad"})


def _reportable(call: ast.Call) -> bool:
    """What ``visit_Call`` returns early on, as far as the ``ast`` shows it: a starred
    argument, more than one positional one, a keyword it does not report with, and any
    keyword on a legacy constructor named as such."""
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return False
    keywords = {k.arg for k in call.keywords}
    if None in keywords or not keywords <= _REPORTED_KEYWORDS:
        return False
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return not (keywords and name in _CONSTRUCTORS and name != "tensor")


@per_tree  # the screen and the narrowing both ask
def numpy_copy_candidates(tree: ast.Module) -> Tuple[ast.Call, ...]:
    """The tensor constructor calls whose first argument could be a NumPy array: an
    expression from numpy (or cv2, pandas...), ``.numpy()``, or a name assigned one in a
    scope the call can see (its functions, the module, and class bodies, over-approximated).
    """
    index = tree_index(tree)
    constructors = _constructor_names(index)
    candidates = [c for c in index.calls if c.args and _is_constructor(c.func, constructors) and _reportable(c)]
    if not candidates:
        return ()
    roots = _array_roots(index) | _project_roots(index)
    # ``_could_be_array`` only grows with ``names``: what fails with every name an array
    # name fails with the ones the loop below finds (and most files stop here).
    candidates = [call for call in candidates if _could_be_array(call.args[0], roots, _EVERY_NAME)]
    if not candidates:
        return ()
    sources = [
        node for node in index.assignments
        if node.value is not None and (_could_bind_array(node.value, roots, _EVERY_NAME) or _could_hold_arrays(node.value, roots, _EVERY_NAME))
    ]
    if any(isinstance(call.args[0], ast.Name) for call in candidates):
        sources += [node for node in _comprehension_bindings(tree) if _could_be_array(node.value, roots, _EVERY_NAME)]
    sources += [node for node in _append_bindings(index) if _could_be_array(node.value, roots, _EVERY_NAME)]
    return _visible_arrays(tree, index, _layout(tree, index, candidates, sources), roots)


def numpy_copy_candidates_without(tree: ast.Module, never_array: Callable[[str], bool], parameters: bool = True) -> Tuple[ast.Call, ...]:
    """``numpy_copy_candidates`` once the names ``never_array`` answers True for (project
    functions whose returns are not all arrays, said by the index) no longer count as
    roots of an array. Only the roots of what the candidates read are asked about: the
    assignments of the names in their arguments, of the names those read, and so on."""
    layout = _asked_layout(tree)
    if layout is None:
        return ()
    index = tree_index(tree)
    array_roots = _array_roots(index)
    roots = AskedRoots(array_roots, _project_roots(index) - array_roots, never_array)
    return _visible_arrays(tree, index, layout, roots, parameters)


@per_tree  # asked four times of one tree by ``copy_question``: what does not depend on the roots
def _asked_layout(tree: ast.Module) -> Optional["_Layout"]:
    """The candidates, the assignments their arguments may read (following names), and
    the scopes of both, for ``numpy_copy_candidates_without``; None without candidates."""
    candidates = numpy_copy_candidates(tree)
    if not candidates:
        return None
    index = tree_index(tree)
    assignments = list(index.assignments) + _append_bindings(index)
    if any(isinstance(call.args[0], ast.Name) for call in candidates):
        assignments += _comprehension_bindings(tree)
    assigned: dict = {}
    for node in assignments:
        if node.value is not None:
            for name in _targets(node):
                assigned.setdefault(name, []).append(node)
    pending = [n.id for call in candidates for n in walk_ast(call.args[0]) if isinstance(n, ast.Name)]
    read: Set[str] = set()
    relevant: Set[int] = set()
    while pending:
        name = pending.pop()
        if name in read:
            continue
        read.add(name)
        for node in assigned.get(name, ()):
            if id(node) not in relevant:
                relevant.add(id(node))
                pending.extend(n.id for n in walk_ast(node.value) if isinstance(n, ast.Name))
    sources = [node for node in assignments if id(node) in relevant]
    return _layout(tree, index, list(candidates), sources)


# (fires with every project name taken for an array source: with parameters, without;
# fires with none of them: with parameters, without; the project names asked about)
CopyQuestion = Tuple[Tuple[bool, bool], Tuple[bool, bool], Tuple[str, ...]]


def copy_question(tree: ast.Module) -> CopyQuestion:
    """``numpy_copy_candidates_without``'s question as data, for the summarising worker to
    work out from the tree (TPF401's ``project_question``): whether candidates remain when
    every project name the screen asks about may return an array, when none may, and
    which names it asks about (the screen only grows with the names that may)."""
    asked: List[str] = []

    def never(answer: bool) -> Callable[[str], bool]:
        def ask(name: str) -> bool:
            if name not in asked:
                asked.append(name)
            return answer

        return ask

    every = tuple(bool(numpy_copy_candidates_without(tree, never(False), p)) for p in (True, False))
    none = tuple(bool(numpy_copy_candidates_without(tree, never(True), p)) for p in (True, False))
    return every, none, tuple(asked)  # type: ignore[return-value]


def answer_copy_question(question: CopyQuestion, never_array: Callable[[str], bool], parameters: bool) -> Optional[bool]:
    """The screen's answer from ``copy_question`` and the project (``never_array`` as for
    ``numpy_copy_candidates_without``); None when some names may return an array and others
    not (the tree decides)."""
    every, none, asked = question
    at = 0 if parameters else 1
    if none[at] or not every[at]:
        return none[at] or every[at]
    answers = {never_array(name) for name in asked}
    if answers == {True} or not answers:
        return False
    return True if answers == {False} else None


@dataclass(frozen=True)
class _Layout:
    """Candidate calls and the assignments that may bind what they read, with the scopes
    (functions around, by id) of each: what ``_visible_arrays`` needs besides the roots."""

    candidates: Sequence[ast.Call]
    sources: Sequence[Assignment]
    opened: FrozenSet[str]
    source_scopes: Sequence[Tuple[int, ...]]
    call_functions: Sequence[Tuple[ast.AST, ...]]
    call_scopes: Sequence[Tuple[int, ...]]


def _layout(tree: ast.Module, index: TreeIndex, candidates: Sequence[ast.Call], sources: Sequence[Assignment]) -> _Layout:
    # `with h5py.File(p) as f` (any call, h5py may be aliased), `with np.load(p) as d` (a call
    # rooted in an array module: a project object's `__enter__` is not read here)
    arrays = _array_roots(index)
    opened = frozenset(_opened_files(tree, None if _imports_h5py(index) else (lambda call: _could_be_array(call, arrays, ()))))
    # A name the analysis reads at a call is bound in the call's scope chain (a function
    # sees its enclosing functions' names and the module's). An assignment in a function
    # around which the call is not cannot bind it, unless the name is declared ``global``
    # or ``nonlocal`` somewhere, or the assignment is a ``:=`` (in a default value or a
    # lambda its scope is not what its lines say): those count everywhere.
    source_scopes = [tuple(map(id, around)) for around in enclosing_functions(index.functions, sources)]
    call_functions = enclosing_functions(index.functions, candidates)
    call_scopes = [tuple(map(id, around)) for around in call_functions]
    return _Layout(candidates, sources, opened, source_scopes, call_functions, call_scopes)


def _visible_arrays(tree: ast.Module, index: TreeIndex, layout: _Layout, roots: Container[str], parameters: bool = True) -> Tuple[ast.Call, ...]:
    """The candidates whose argument could be an array, given the assignments in scopes
    they can see."""
    candidates, sources, source_scopes, call_scopes = layout.candidates, layout.sources, layout.source_scopes, layout.call_scopes
    passed = {tuple(map(id, around)): _passed_parameters(tree, around) if parameters else set() for around in layout.call_functions}
    declared = index.declared
    found: List[ast.Call] = []
    for scope in sorted(set(call_scopes)):
        seen = set(scope)
        visible = [
            node
            for node, around in zip(sources, source_scopes)
            if isinstance(node, ast.NamedExpr) or all(key in seen for key in around) or (declared and _targets(node) & declared)
        ]
        names = _array_names(visible, roots, set(layout.opened) | passed[scope])
        found.extend(c for c, where in zip(candidates, call_scopes) if where == scope and _could_be_array(c.args[0], roots, names))
    order = {id(c): i for i, c in enumerate(candidates)}
    return tuple(sorted(found, key=lambda c: order[id(c)]))


def _append_bindings(index: TreeIndex) -> List[ast.Assign]:
    """``xs = a`` for each ``xs.append(a)``: an item of the list may be what a list holds
    (the engine knows which item, ``scopes.Scope``)."""
    out = []
    for call in index.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "append" and isinstance(func.value, ast.Name) and len(call.args) == 1:
            assign = ast.Assign(targets=[ast.Name(func.value.id, ast.Store())], value=call.args[0])
            out.append(ast.copy_location(assign, call))
    return out


def _comprehension_bindings(tree: ast.Module) -> List[ast.Assign]:
    """``x = item`` for each item a comprehension's ``for x in ...`` walks (each item of a
    display, else an item of the iterable), and a ``for`` statement's over a call (a
    project generator's, whose yields may be arrays), as assignments the screen can read."""
    out = []
    index = tree_index(tree)
    for node in (*index.comprehensions, *(f for f in index.fors if type(f.iter) is ast.Call)):  # a `for` over a call only
        items = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List)) else [ast.copy_location(_Each(value=node.iter), node.iter)]
        for item in items:
            assign = ast.Assign(targets=[node.target], value=item)
            out.append(ast.copy_location(assign, item))
    return out


def _passed_parameters(tree: ast.Module, around: Sequence[ast.AST]) -> Set[str]:
    """The parameters of the function a call is in, when the engine can know what every
    caller passes: a module-level function, or a method of a module-level class other
    than a dunder (``project/method_callers`` says when a public one's callers are known)."""
    if not around or len(around) > 1:
        return set()
    function = around[0]
    name = function.name  # type: ignore[attr-defined]
    top = any(function is node for node in tree.body)
    method = not name.startswith("__") or name == "__init__"
    if not top and not (method and any(isinstance(n, ast.ClassDef) and any(function is m for m in n.body) for n in tree.body)):
        return set()
    args = function.args  # type: ignore[attr-defined]
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return set(names[1:] if not top else names)


def _targets(node: Assignment) -> Set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {name.id for target in targets for name in walk_ast(target) if isinstance(name, ast.Name)}


def _array_names(sources: Sequence[Assignment], roots: Container[str], names: Set[str]) -> Set[str]:
    """``names`` and every name assigned what could be an array, to a fixed point (a name
    assigned from another array name is an array name too)."""
    changed = True
    while changed:
        changed = False
        for node in sources:
            unpacking = isinstance(node, ast.Assign) and any(type(t) in (ast.Tuple, ast.List) for t in node.targets)
            asked = roots.unpacked() if unpacking and type(roots) is AskedRoots else roots
            suffix = ""
            if not _could_bind_array(node.value, asked, names):  # type: ignore[arg-type]
                arrays = roots.arrays if type(roots) is AskedRoots else roots  # items rooted in an array module
                if unpacking or not _could_hold_arrays(node.value, arrays, names):  # type: ignore[arg-type]
                    continue
                suffix = "[]"  # `store = {"x": np.zeros(n)}`: `store["x"]` may be an array
            for name in _targets(node):
                if name + suffix not in names:
                    names.add(name + suffix)
                    changed = True
    return names
