"""Where an ``ast`` expression of a module stands for the value engine (``values.Where``):
the module's scope, then each class and function around it, comprehensions and lambdas.

One implementation for the linted file's two readers: ``file_values.FileValues`` (a LibCST
node mapped to its ``ast`` twin) and the screens that ask the engine before LibCST parses
the file (``loop_calls_running``). Each scope is built once per tree.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Tuple

from ..analysis.ast_index import ast_children, per_tree

from .call_values import dispatch
from .forms import FormBuilder
from .resolution import Definition
from .scopes import DEEP, Each, Scope, build_scope, expression_form, unpack_target
from .values import ValueEngine, Where

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class TreeWheres:
    """The ``Where`` of expressions of one module's ``ast`` tree (``path``: absolute)."""

    def __init__(self, path: str, tree: ast.Module, engine: Optional[ValueEngine] = None) -> None:
        self.path = path
        self.tree = tree
        self.engine = engine
        self._scopes: Dict[int, Scope] = {}

    @classmethod
    def of(cls, path: str, tree: ast.Module, engine: Optional[ValueEngine] = None) -> "TreeWheres":
        """The wheres of a tree, shared with the last one asked for (a screen that asked the
        engine about the linted file's tree, then the rules' ``FileValues``): each scope
        is built once per file. Only the last tree's are kept, until ``forget_trees``."""
        kept = _kept(tree)
        wheres = kept.get((path, id(engine)))
        if wheres is None or wheres.engine is not engine:
            wheres = kept[(path, id(engine))] = cls(path, tree, engine)
        return wheres

    def where(self, chain: List[ast.AST], line: int) -> Where:
        """The scopes around an expression (``chain``: the tree, then its ancestors, then the
        expression): the module, then each function; a class body is a scope only for the
        expressions written in it (its methods do not see it)."""
        path = self.path
        functions = Where(path, self.scope(chain[0], None), line)
        where = functions
        names: List[str] = []
        nested = False
        for position, node in enumerate(chain[1:-1], start=1):
            inner = chain[position + 1]
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and not any(inner is stmt for stmt in node.body):
                continue  # decorators, defaults, bases: read where the statement stands
            if isinstance(node, ast.Lambda) and inner is not node.body:
                continue
            if isinstance(node, ast.Lambda):
                # It runs later: the names around it hold the values they are bound to once.
                args = node.args
                params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None)
                where = functions = Where(path, Scope(path, None, params, where.scope.aliases), line, where)  # type: ignore[union-attr]
            if isinstance(node, ast.ClassDef):
                names.append(node.name)
                where = Where(path, self.scope(node, None), line, functions)
            elif isinstance(node, _FUNCTIONS):
                owner = ".".join([*names, node.name]) if not nested and len(names) <= 1 else None
                names.append(node.name)
                nested = True
                where = functions = Where(path, self.scope(node, owner), line, functions)
            elif isinstance(node, _COMPREHENSIONS):
                where = Where(path, comprehension_scope(node, where.scope), line, where)  # type: ignore[arg-type]
        return where

    def scope(self, node: ast.AST, owner: Optional[str]) -> Scope:
        scope = self._scopes.get(id(node))
        if scope is None:
            outer = self._scopes.get(id(self.tree))
            aliases = outer.aliases if outer is not None and node is not self.tree else {}
            scope = self._scopes[id(node)] = build_scope(node, aliases, self.path, owner)
        return scope

    def callees(self, call: ast.Call, chain: List[ast.AST], objects: bool = True) -> Optional[Tuple[Definition, ...]]:
        """``call_values.dispatch`` of a call of the tree (``chain``: the tree and the
        call's ancestors), as ``FileValues.callees`` asks it."""
        engine = self.engine
        where = self.where([*chain, call], call.lineno)
        if engine is None or where.scope is None:
            return None
        return dispatch(engine, expression_form(call.func, where.scope), where, objects)


@per_tree
def _kept(tree: ast.Module) -> Dict[Tuple[str, int], TreeWheres]:
    return {}


def comprehension_scope(node: ast.AST, outer: Scope) -> Scope:
    """A comprehension's targets: an element of what each ``for`` walks."""
    scope = Scope(outer.path, None, (), outer.aliases, inline=True)
    builder = FormBuilder(outer.aliases, DEEP)
    for generator in node.generators:  # type: ignore[attr-defined]
        unpack_target(generator.target, Each(builder.form(generator.iter)), 0, (), scope)
    return scope


def looped_calls(tree: ast.Module) -> List[Tuple[ast.Call, List[ast.AST]]]:
    """Every call of a name or an attribute (``f(x)``, ``obj.m(x)``) that stands in a
    ``for``/``while`` (header or body, any depth) of its own function, with its ancestors
    from the tree down: the calls TPF206 asks about (``_in_a_loop``). One walk that keeps
    the path to the node (copied only for a call it gives)."""
    out: List[Tuple[ast.Call, List[ast.AST]]] = []
    path: List[ast.AST] = [tree]
    looping = [False]  # whether the innermost node of ``path`` is in a loop of its function
    todo: List[Optional[ast.AST]] = list(reversed(tree.body))
    while todo:
        node = todo.pop()
        if node is None:  # the walk leaves ``path[-1]``
            path.pop()
            looping.pop()
            continue
        kind = type(node)
        in_loop = looping[-1]
        if in_loop and kind is ast.Call and type(node.func) in (ast.Name, ast.Attribute):  # type: ignore[attr-defined]
            out.append((node, path.copy()))  # type: ignore[arg-type]
        children = ast_children(node)
        if children:
            path.append(node)
            looping.append(False if kind in _SCOPES else in_loop or kind in _LOOPS)
            todo.append(None)
            children.reverse()
            todo.extend(children)
    return out


def loop_calls_running(
    engine: ValueEngine,
    path: str,
    tree: ast.Module,
    holds: Callable[[Definition], bool],
    objects: bool = False,
    only: Optional[Callable[[ast.Call], bool]] = None,
) -> bool:
    """Some call in a loop (``looped_calls``) runs project code (``dispatch`` without
    objects, as the training rules ask) every target of which ``holds``; with ``objects``,
    a call that is no such code is asked again as a call of an object (its ``__call__``,
    a project module's ``forward``). ``only``: the calls asked about (default: all)."""
    wheres = TreeWheres.of(path, tree, engine)
    for call, chain in looped_calls(tree):
        if only is not None and not only(call):
            continue
        callees = wheres.callees(call, chain, objects=False)
        if callees is None and objects:
            callees = wheres.callees(call, chain, objects=True)
        if callees and all(holds(d) for d in callees):
            return True
    return False
