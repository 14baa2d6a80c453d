"""Where a module uses names that may be project functions or classes, and how.

The names looked for are known before the scan from the module itself: its own top-level
functions and classes, the names its project-candidate imports bind (relative imports and
any package that is not a library the rules name), ``self.<method>`` / ``cls.<method>``
for the methods of its classes, and ``super().<method>``. ``str.find`` names the lines
where they are spelled; only those are descended into (``scan``).

Each use records what a caller passes (positional count, keyword names, ``*``/``**``), or
that the name is used without a call (it escapes, so not all of its callers are known).
"""

from __future__ import annotations

import ast
from typing import Iterable, List, Optional, Set, Tuple

from .forms import Call, FormBuilder, Ref, dotted, qualify, spread_comprehension
from .scan import lines_with, nodes_on_lines
from .summary import CallSite

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _chain(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a dotted chain, ``super().m`` for a method of ``super()``."""
    name = dotted(node)
    if name is not None:
        return name
    if isinstance(node, ast.Attribute):
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            return f"super().{node.attr}"
    return None


def _wanted(chain: str, names: Set[str], methods: Set[str]) -> bool:
    head, _, rest = chain.partition(".")
    if head in names:
        return True
    if head in ("self", "cls") and rest:
        return rest.split(".")[0] in methods
    return head == "super()"


def _runs_inside(node: ast.AST, child: ast.AST) -> bool:
    """Whether ``child`` (a child of the def or lambda ``node``) runs when it is called,
    not where it is defined (decorators, defaults and bases run outside)."""
    if isinstance(node, ast.Lambda):
        return child is node.body
    return any(child is stmt for stmt in node.body)  # type: ignore[attr-defined]


def _caller(chain: Tuple[ast.AST, ...]) -> str:
    """``f``, ``Net.forward``: the function a use runs in (``""``: at import time)."""
    parts: List[Tuple[str, bool]] = []
    for index, node in enumerate(chain[:-1]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _runs_inside(node, chain[index + 1]):
            parts.append((node.name, isinstance(node, ast.ClassDef)))
    while parts and parts[-1][1]:
        parts.pop()  # a class body runs where the class is defined
    return ".".join(name for name, _ in parts)


def _in_function(chain: Tuple[ast.AST, ...]) -> Tuple[ast.AST, ...]:
    """The part of an ancestor chain inside the innermost function or lambda."""
    for index in range(len(chain) - 2, -1, -1):
        if isinstance(chain[index], _FUNCTIONS) and _runs_inside(chain[index], chain[index + 1]):
            return chain[index + 1 :]
    return chain


def _in_loop(chain: Tuple[ast.AST, ...]) -> bool:
    """Whether the last node of ``chain`` runs once per iteration of a loop around it."""
    for index, node in enumerate(chain[:-1]):
        child = chain[index + 1]
        if isinstance(node, _LOOPS):
            if any(child is stmt for stmt in node.body) or (isinstance(node, ast.While) and child is node.test):
                return True
        elif isinstance(node, _COMPREHENSIONS):
            first = node.generators[0]
            # The first ``for``'s iterable is evaluated once; everything else repeats.
            once = child is first and index + 2 < len(chain) and chain[index + 2] is first.iter
            if not once:
                return True
    return False


def _not_a_use(chain: Tuple[ast.AST, ...]) -> bool:
    """Mentions that neither call the name nor let it escape: annotations, the bases of a
    class (the index follows subclasses itself), ``isinstance``/``issubclass`` checks,
    the class named by a two-argument ``super(Net, self)``."""
    for index, node in enumerate(chain[:-1]):
        child = chain[index + 1]
        if isinstance(node, ast.arg) and child is node.annotation:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and child is node.returns:
            return True
        if isinstance(node, ast.AnnAssign) and child is node.annotation:
            return True
        if isinstance(node, ast.ClassDef) and any(child is base for base in node.bases):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and node.args and child is node.args[0]:
            return index + 2 == len(chain)  # `super(Net, self).__init__()`: the class names where to start
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
            # The class itself, or one of a tuple of classes, as the second argument.
            direct = index + 2 == len(chain) or (isinstance(child, ast.Tuple) and index + 3 == len(chain))
            if direct and child is not node.func:
                return True
    return False


def _contexts(chain: Tuple[ast.AST, ...], aliases) -> Tuple[str, ...]:
    out = []
    for index, node in enumerate(chain[:-1]):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(chain[index + 1] is stmt for stmt in node.body):
            for item in node.items:
                expr = item.context_expr
                target = expr.func if isinstance(expr, ast.Call) else expr
                name = dotted(target)
                out.append((qualify(name, aliases) or name) if name is not None else "?")
    return tuple(out)


def call_sites(
    tree: ast.Module, text: str, names: Iterable[str], methods: Iterable[str], aliases
) -> Tuple[CallSite, ...]:
    """Every call or other use of ``names`` (bare or as the head of a dotted chain),
    ``self.``/``cls.`` + ``methods`` and ``super().x`` in the module."""
    names = set(names)
    methods = set(methods)
    needles: List[str] = [*names, *(f"{r}.{m}" for m in methods for r in ("self", "cls"))]
    lines = lines_with(text, needles, whole_word=True)
    if "super(" in text:
        lines = sorted(set(lines) | set(lines_with(text, ["super("])))
    sites: List[CallSite] = []
    for node, ancestors in nodes_on_lines(tree, lines):
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(getattr(node, "ctx", None), ast.Load):
            continue
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, ast.Attribute) and parent.value is node and _chain(parent) is not None:
            continue  # the longer chain around it is the use
        chain = _chain(node)
        if chain is None or not _wanted(chain, names, methods):
            continue
        if _not_a_use((*ancestors, node)):
            continue
        sites.append(_site(chain, node, parent, ancestors, aliases))
    return tuple(site for site in sites if site.called or not site.callee.startswith("super()"))


def _site(callee: str, node: ast.AST, parent: Optional[ast.AST], ancestors: Tuple[ast.AST, ...], aliases) -> CallSite:
    inside = _in_function((*ancestors, node))
    common = dict(caller=_caller((*ancestors, node)), contexts=_contexts(inside, aliases), in_loop=_in_loop(inside))
    if isinstance(parent, ast.Call) and parent.func is node:
        spread = spread_comprehension(parent.args)  # `f(*[g(v) for v in (a, b)])`: two positions
        star = spread is None and any(isinstance(a, ast.Starred) for a in parent.args)
        positional = sum(1 for a in parent.args if not isinstance(a, ast.Starred)) + (spread[1] if spread else 0)
        keywords = tuple(k.arg for k in parent.keywords if k.arg is not None)
        dstar = any(k.arg is None for k in parent.keywords)
        arguments = FormBuilder(aliases).form(parent)
        return CallSite(
            callee, node.lineno, positional=positional, keywords=keywords, star=star, dstar=dstar,  # type: ignore[attr-defined]
            arguments=arguments if isinstance(arguments, Call) else None, **common,
        )  # fmt: skip
    if _command_line(node, parent, aliases):
        return CallSite(callee, node.lineno, arguments=Call(Ref(callee)), command_line=True, **common)  # type: ignore[attr-defined]
    return CallSite(callee, node.lineno, called=False, **common)  # type: ignore[attr-defined]


_COMMAND_LINES = frozenset({"fire.Fire"})


def _command_line(node: ast.AST, parent: Optional[ast.AST], aliases) -> bool:
    """``fire.Fire(train)``: the function is the command line's entry point."""
    if not isinstance(parent, ast.Call) or not parent.args or parent.args[0] is not node or len(parent.args) > 1:
        return False
    name = dotted(parent.func)
    return name is not None and (qualify(name, aliases) or name) in _COMMAND_LINES


def method_call_sites(tree: ast.Module, text: str, method: str, aliases) -> Tuple[CallSite, ...]:
    """Every call ``<anything>.method(...)`` in the module, whatever the receiver is (an
    over-approximation of the calls of a method of some class). ``callee`` is the receiver
    as written plus the method (``trainer.train_step``), or ``?.train_step``."""
    sites: List[CallSite] = []
    for node, ancestors in nodes_on_lines(tree, lines_with(text, [f".{method}"])):
        parent = ancestors[-1] if ancestors else None
        if type(node) is ast.Attribute and node.attr == method and isinstance(parent, ast.Call) and parent.func is node:
            receiver = _chain(node.value) or "?"
            sites.append(_site(f"{receiver}.{method}", node, parent, ancestors, aliases))
    return tuple(sites)
