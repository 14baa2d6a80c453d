"""TPF104's screens for a loader that arrives as a parameter: a function of the file walks
one of its parameters (``for x, y in enumerate(loader)``, through ``enumerate``/``tqdm``/
``iter``/``zip``) and copies something to the device. Such a file may name no loader at all
(``def train_loop(model, train_set): for x, y in train_set: x.to(device)``, the loader built
by a helper in another module and handed over by ``main``), so the text and ``ast`` screens
cannot rule it out; the project screen asks the value engine what the parameter holds
where it is walked (every caller's argument) and lets the file through only when that may be
a pinned loader (or a project object that may wrap one)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Sequence, Tuple

from ...analysis.ast_index import enclosing_functions, tree_index
from ...project.forms import Ref, dotted
from ...project.kinds import Instance, Loader, OneOf, present
from ...project.values import Where, engine_for

if TYPE_CHECKING:
    from ...project import ProjectIndex

# (the function's dotted name in its module, the parameter, the line where it is walked)
WalkedParameter = Tuple[str, str, int]
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "trange"})


def could_walk_parameters(source: str) -> bool:
    """The text screen: a copy to the device and a loop."""
    return (".to(" in source or ".cuda(" in source) and "for " in source


def walked_parameters(tree: ast.Module) -> Tuple[WalkedParameter, ...]:
    """The parameters that module-level functions and methods of top-level classes walk, in
    a file that calls ``.to(...)``/``.cuda(...)`` (read from the screens' ``tree_index``)."""
    index = tree_index(tree)
    if not any(type(call.func) is ast.Attribute and call.func.attr in ("to", "cuda") for call in index.calls):  # type: ignore[attr-defined]
        return ()
    loops = [(node.iter, name) for node in (*index.fors, *index.comprehensions) if (name := _walked_name(node.iter))]
    if not loops:
        return ()
    owners = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owners[id(node)] = node.name
        elif isinstance(node, ast.ClassDef):
            owners.update((id(item), f"{node.name}.{item.name}") for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    found: List[WalkedParameter] = []
    for (iterable, name), around in zip(loops, enclosing_functions(index.functions, [iterable for iterable, _ in loops])):
        owner = owners.get(id(around[-1])) if around else None
        if owner is None:
            continue
        args = around[-1].args
        if name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}:
            found.append((owner, name, iterable.lineno))
    return tuple(found)


def _walked_name(expr: ast.AST) -> str:
    """The name a loop walks, through the pass-through wrappers (``""``: none)."""
    while type(expr) is ast.Call and expr.args and type(expr.args[0]) is not ast.Starred:  # type: ignore[attr-defined]
        if (dotted(expr.func) or "").rpartition(".")[2] not in _WRAPPERS:  # type: ignore[attr-defined]
            return ""
        expr = expr.args[0]  # type: ignore[attr-defined]
    return expr.id if type(expr) is ast.Name else ""  # type: ignore[attr-defined]


def may_walk_pinned_parameter(question: Sequence[WalkedParameter], path: str, project: "ProjectIndex") -> bool:
    """Some walked parameter may hold a pinned loader where it is walked (the engine reads
    every caller's argument; where it cannot, as in a large project, nothing is claimed)."""
    engine = engine_for(project)
    if not question or not engine.reads_parameters():
        return False
    for name, param, line in question:
        definition = project.resolve(path, name)
        if definition is None or definition.kind not in ("function", "method") or definition.path is None:
            continue
        scope = engine.scope_of(definition)
        if scope is None:
            continue
        kind = present(engine.kind_of(Ref(param), Where(definition.path, scope, line, Where(definition.path))))
        if (type(kind) is Loader and kind.pinned) or type(kind) in (Instance, OneOf):
            return True
    return False
