"""One cheap index of a module's Python ``ast`` that the rules' second-stage screens share."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterator, List, Sequence, Set, Tuple, TypeVar, Union

R = TypeVar("R")
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Assignment = Union[ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr]


LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
_ASSIGN_TYPES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


@dataclass(frozen=True)
class TreeIndex:
    """What the screens read of a file, gathered in one walk (several screens look at the
    same tree, and walking it is what costs)."""

    calls: Tuple[ast.Call, ...]
    calls_in_loops: Tuple[ast.Call, ...]  # calls anywhere inside a for/while
    assignments: Tuple[Assignment, ...]
    imports: Tuple[Union[ast.Import, ast.ImportFrom], ...]
    functions: Tuple[Function, ...]
    identifiers: FrozenSet[str]  # names, attributes and imported names (not strings)
    declared: FrozenSet[str] = frozenset()  # names in ``global`` and ``nonlocal`` statements
    comprehensions: Tuple[ast.comprehension, ...] = ()  # each ``for ... in ...`` of one
    fors: Tuple[Union[ast.For, ast.AsyncFor], ...] = ()  # ``for`` statements


# Fields that never hold a name or a call (``ctx`` is Load/Store, ``op`` an operator).
_TOKEN_FIELDS = frozenset({"ctx", "op", "type_comment", "kind"})
# Field types of Python's grammar (``ast.FunctionDef.__doc__`` spells them) that never hold a
# node: an identifier (``Name.id``, ``Attribute.attr``), a string, a constant, an int.
_SCALAR_TYPES = frozenset({"identifier", "string", "constant", "int"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
# Per node type, each child field and whether the grammar says it holds nodes (a list of
# nodes or of None, or a node or None): those are read without a type check per item.
_CHILD_PLAN: Dict[type, Tuple[Tuple[str, bool], ...]] = {}
_AST = ast.AST
_SIGNATURE = re.compile(r"\w+\((.*)\)$")


def _field_types(kind: type) -> Dict[str, str]:
    """A node type's field types as its docstring gives them (``expr* body``: ``expr*``);
    empty for a type whose docstring says nothing (every field then checked per value)."""
    doc = (kind.__doc__ or "").strip().split("\n")[0]
    match = _SIGNATURE.match(doc) if doc.startswith(kind.__name__ + "(") else None
    types: Dict[str, str] = {}
    for part in match.group(1).split(",") if match else ():
        spelled, _, name = part.strip().rpartition(" ")
        if spelled and name:
            types[name] = spelled
    return types


def _child_fields(kind: type) -> Tuple[str, ...]:
    """The fields of ``kind`` that may hold nodes: less tokens (``ctx``, ``op``), and less
    the fields the grammar types as identifiers, strings or constants, which every walk
    read and skipped (a fifth of ``ast_children``'s time)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        plan = _child_plan(kind)
        fields = _CHILD_FIELDS[kind] = tuple(name for name, _ in plan)
    return fields


def _child_plan(kind: type) -> Tuple[Tuple[str, bool], ...]:
    plan = _CHILD_PLAN.get(kind)
    if plan is None:
        types = _field_types(kind)
        kept = []
        for name in getattr(kind, "_fields", ()):
            spelled = types.get(name)
            if name in _TOKEN_FIELDS or (spelled is not None and spelled.rstrip("*?") in _SCALAR_TYPES):
                continue
            kept.append((name, spelled is not None))
        plan = _CHILD_PLAN[kind] = tuple(kept)
    return plan


def ast_children(node: ast.AST) -> List[ast.AST]:
    """What ``ast.iter_child_nodes`` gives, less operators and contexts, and without its
    generators (the screens walk every file that passes a text screen). A field the
    grammar types as nodes holds nodes or None: its list is taken whole unless it holds a
    None (``Dict.keys`` of a ``**``, ``arguments.kw_defaults``)."""
    children: List[ast.AST] = []
    plan = _CHILD_PLAN.get(type(node))
    for name, typed in plan if plan is not None else _child_plan(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            if typed and None not in value:
                children += value
            else:
                children.extend(item for item in value if isinstance(item, _AST))
        elif isinstance(value, _AST):
            children.append(value)
    return children


def walk_ast(root: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` over ``ast_children``."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast_children(node))


# Pushed under a loop's children: popping it means the walk left the loop.
_LEAVE_LOOP = ast.AST()


_PER_TREE: List["functools._lru_cache_wrapper[object]"] = []


def per_tree(function: Callable[[ast.Module], R]) -> Callable[[ast.Module], R]:
    """``functools.lru_cache(maxsize=1)`` for what a screen works out from a module's tree
    (several screens ask about the same file), which ``forget_trees`` empties."""
    cached = functools.lru_cache(maxsize=1)(function)
    _PER_TREE.append(cached)  # type: ignore[arg-type]
    return cached  # type: ignore[return-value]


def forget_trees() -> None:
    """Let go of the last file's tree, kept by the ``per_tree`` caches: the linting of a
    file ends here (``engine.lint_source``), and a tree kept alive past it was walked
    again by the cyclic collector, once per generation, on every file of a run."""
    for cached in _PER_TREE:
        cached.cache_clear()


@per_tree
def tree_index(tree: ast.Module) -> TreeIndex:
    """One walk, in ``walk_ast``'s order (the order of ``calls`` is the order of every walk).
    Names and constants are read where they are met, not pushed, and a marker under a
    loop's children says when the walk leaves it: no tuple per node."""
    calls: List[ast.Call] = []
    in_loops: List[ast.Call] = []
    assignments: List[Assignment] = []
    imports: List[Union[ast.Import, ast.ImportFrom]] = []
    functions: List[Function] = []
    names: Set[str] = set()
    declared: Set[str] = set()
    comprehensions: List[ast.comprehension] = []
    fors: List[Union[ast.For, ast.AsyncFor]] = []
    stack: List[ast.AST] = [tree]
    pop, push, add_name = stack.pop, stack.append, names.add
    fields_of = _CHILD_FIELDS.get
    Name, Constant, Attribute, Call = ast.Name, ast.Constant, ast.Attribute, ast.Call
    loops = 0  # loops around the node
    while stack:
        node = pop()
        if node is _LEAVE_LOOP:
            loops -= 1
            continue
        kind = type(node)
        if kind is Attribute:
            add_name(node.attr)  # type: ignore[attr-defined]
        elif kind is Call:
            calls.append(node)  # type: ignore[arg-type]
            if loops:
                in_loops.append(node)  # type: ignore[arg-type]
        elif kind in _ASSIGN_TYPES:
            assignments.append(node)  # type: ignore[arg-type]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            functions.append(node)  # type: ignore[arg-type]
        elif kind in LOOP_TYPES:
            loops += 1
            push(_LEAVE_LOOP)
            if kind is not ast.While:
                fors.append(node)  # type: ignore[arg-type]
        elif kind is ast.Import or kind is ast.ImportFrom:
            imports.append(node)  # type: ignore[arg-type]
            for alias in node.names:  # type: ignore[attr-defined]
                names.update(alias.name.split("."))
        elif kind is ast.Global or kind is ast.Nonlocal:
            declared.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.comprehension:
            comprehensions.append(node)  # type: ignore[arg-type]
        fields = fields_of(kind)
        for name in fields if fields is not None else _child_fields(kind):  # ast_children, inlined
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) is Name:
                        add_name(item.id)
                    elif type(item) is not Constant and isinstance(item, _AST):
                        push(item)
            elif type(value) is Name:
                add_name(value.id)  # type: ignore[union-attr]
            elif type(value) is not Constant and isinstance(value, _AST):
                push(value)
    return TreeIndex(
        tuple(calls),
        tuple(in_loops),
        tuple(assignments),
        tuple(imports),
        tuple(functions),
        frozenset(names),
        frozenset(declared),
        tuple(comprehensions),
        tuple(fors),
    )


def enclosing_functions(functions: Sequence[Function], nodes: Sequence[ast.AST]) -> List[Tuple[Function, ...]]:
    """For each node, the functions around it (outermost first), by their lines: functions
    nest, so one sweep over both sorted by line finds them. A node on a ``def`` line (a
    default value) counts as inside that function."""
    spans = sorted(((f.lineno, -(f.end_lineno or f.lineno), i) for i, f in enumerate(functions)))
    order = sorted(range(len(nodes)), key=lambda i: nodes[i].lineno)  # type: ignore[attr-defined]
    out: List[Tuple[Function, ...]] = [()] * len(nodes)
    around: List[Tuple[int, int]] = []  # (last line, index) of the functions open at the sweep
    at = 0
    for i in order:
        line = nodes[i].lineno  # type: ignore[attr-defined]
        while at < len(spans) and spans[at][0] <= line:
            first, last, which = spans[at]
            while around and around[-1][0] < first:
                around.pop()
            around.append((-last, which))
            at += 1
        while around and around[-1][0] < line:
            around.pop()
        out[i] = tuple(functions[which] for _, which in around)
    return out


def code_identifiers(tree: ast.Module) -> FrozenSet[str]:
    """Every name, attribute and imported name the code uses (not strings or comments):
    a qualified API name can only resolve where its last part occurs here."""
    return tree_index(tree).identifiers


def ast_dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain, else an empty string."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))
