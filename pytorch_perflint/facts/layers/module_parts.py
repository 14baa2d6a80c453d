"""Small syntax helpers of the nn.Module facts: scoped walks, names, blocks and self attributes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ...analysis.calls import Argument, argument
from ...analysis.scope import Scope, ScopeNode, dotted_name
from ...analysis.walk import child_nodes, descendants
from ...context import FileContext
from ...project.kinds import Flag

_SCOPE_TYPES = (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)
_SEQUENTIAL = "torch.nn.Sequential"
_ORDERED_DICTS = ("collections.OrderedDict", "typing.OrderedDict")
# Methods that return the module they are called on (moved or cast).
_MOVES = frozenset(("to", "cuda", "float", "half", "double", "bfloat16", "requires_grad_", "train"))
# The qualname of a layer built by a call that may be a project helper (``conv3x3(a, b)``):
# which class it builds is asked of the project index only where a rule needs it.
HELPER = "<helper>"


@dataclass(frozen=True)
class Layer:
    """A layer built by a call to a ``torch.nn`` class (``torch.nn.Conv2d``), or (``HELPER``)
    by a call of a function that may be a project helper building one."""

    qualname: str
    call: cst.Call
    scope: Scope
    # The local name the layer was reached through (``conv`` in ``Sequential(conv, bn)``).
    via_name: Optional[str] = None

    def argument(self, keyword: str, position: Optional[int]) -> Argument:
        """What the call passes for one parameter (known constants and ``**`` dicts read)."""
        return argument(self.call, keyword, position, self.scope.lookup_value)


@dataclass(frozen=True)
class Feed:
    """``source``'s output goes straight into ``target``, and (for ``forward``) nowhere else."""

    source: Layer
    target: Layer
    how: str  # "sequential" or "forward"


@dataclass(frozen=True)
class ModuleClass:
    """A class of the file, with the layers its ``self.<attr>`` hold."""

    node: cst.ClassDef
    scope: Scope
    bases: Tuple[Optional[str], ...]
    attributes: Tuple[Tuple[str, Layer], ...]

    def layers(self, name: str) -> List[Layer]:
        """Every layer ``self.<name>`` holds (several: one per arm of an ``if`` chain)."""
        return [layer for attr, layer in self.attributes if attr == name]

    def attribute(self, name: str) -> Optional[Layer]:
        """The one layer ``self.<name>`` holds (None: none, or one per branch)."""
        found = self.layers(name)
        return found[0] if len(found) == 1 else None



class Visited(NamedTuple):
    """A node met by ``walk_scoped`` (a tuple: one is made per node of the module)."""

    node: cst.CSTNode
    chain: Tuple[ScopeNode, ...]
    cls: Optional[cst.ClassDef]  # innermost enclosing class, if any
    function: Optional[cst.FunctionDef]  # innermost enclosing def, if any


def walk_scoped(module: cst.Module) -> Iterator[Visited]:
    """Every node with its chain of scope nodes (outermost first), in source order."""
    stack: List[Tuple[cst.CSTNode, Tuple[ScopeNode, ...], Optional[cst.ClassDef], Optional[cst.FunctionDef]]] = [
        (module, (), None, None)
    ]
    while stack:
        node, chain, cls, function = stack.pop()
        yield Visited(node, chain or (module,), cls, function)
        inner_chain, inner_cls, inner_function = chain, cls, function
        if type(node) in _SCOPE_TYPES:
            inner_chain = chain + (node,)
            if type(node) is cst.ClassDef:
                inner_cls = node
            elif type(node) is cst.FunctionDef:
                inner_function = node
        children = child_nodes(node)
        children.reverse()
        stack.extend((child, inner_chain, inner_cls, inner_function) for child in children)


def variables(node: cst.CSTNode) -> Iterator[cst.Name]:
    """The names under ``node`` that are variables (not ``x.attr`` or ``f(key=...)`` labels)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            yield current
            continue
        children = list(child_nodes(current))
        if type(current) is cst.Attribute:
            children = [c for c in children if c is not current.attr]
        elif type(current) is cst.Arg and current.keyword is not None:
            children = [c for c in children if c is not current.keyword]
        stack.extend(reversed(children))


def mentions(node: cst.CSTNode, name: str) -> bool:
    return any(n.value == name for n in variables(node))


def _name_count(node: cst.CSTNode, name: str) -> int:
    return sum(1 for n in variables(node) if n.value == name)


def _pairs(items: Sequence[Optional[Layer]]) -> List[Feed]:
    """Feeds between neighbouring known layers of a sequence (None: anything else)."""
    return [
        Feed(first, second, "sequential")
        for first, second in zip(items, items[1:])
        if first is not None and second is not None
    ]


def _dotted(node: cst.CSTNode) -> Optional[str]:
    return dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


def _mentions_target(node: cst.CSTNode, target: str) -> bool:
    """Whether ``node`` uses the variable ``target`` (``layers``) or attribute (``self.body``)."""
    if "." not in target:
        return mentions(node, target)
    return any(isinstance(n, cst.Attribute) and dotted_name(n) == target for n in descendants(node))


def _only_read(statement: cst.CSTNode, name: str) -> bool:
    """Whether every use of list ``name`` in ``statement`` only reads it whole.

    ``Sequential(*layers)``, ``return layers``, ``self.body = layers`` and ``len(layers)`` read
    it; anything else
    (``layers.insert(...)``, ``layers[0] = ...``, ``helper(layers)``) may reorder it.
    """
    allowed: Set[int] = set()
    for node in descendants(statement):
        if isinstance(node, cst.Arg) and isinstance(node.value, cst.Name) and node.value.value == name:
            if node.star == "*":
                allowed.add(id(node.value))
        elif isinstance(node, (cst.Return, cst.Assign)) and isinstance(node.value, cst.Name):
            allowed.add(id(node.value))  # returned, or bound to an attribute as it is
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "len"
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
        ):
            allowed.add(id(node.args[0].value))
    return all(id(n) in allowed for n in variables(statement) if n.value == name)


def _unique(feeds: Sequence[Feed]) -> List[Feed]:
    seen: Set[Tuple[int, int]] = set()
    out = []
    for feed in feeds:
        key = (id(feed.source.call), id(feed.target.call))
        if key not in seen:
            seen.add(key)
            out.append(feed)
    return out


def _blocks(statement: cst.BaseCompoundStatement) -> Iterator[Sequence[cst.BaseStatement]]:
    """The statement blocks directly inside a compound statement (``if``/``else`` etc.)."""
    for child in child_nodes(statement):
        if isinstance(child, cst.IndentedBlock):
            yield child.body
        elif isinstance(child, (cst.Else, cst.Finally, cst.ExceptHandler)):
            if isinstance(child.body, cst.IndentedBlock):
                yield child.body.body
        elif isinstance(child, cst.If):
            yield from _blocks(child)


def _methods(node: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    if isinstance(node.body, cst.IndentedBlock):
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                yield statement


def _self_name(method: cst.FunctionDef) -> Optional[str]:
    """The name of a method's instance parameter (None for static methods)."""
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = [*method.params.posonly_params, *method.params.params]
    return params[0].name.value if params else None


def _self_attrs(target: cst.CSTNode, own: str) -> Iterator[str]:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == own:
        yield target.attr.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _self_attrs(element.value, own)
    elif isinstance(target, cst.StarredElement):
        yield from _self_attrs(target.value, own)


def _self_layer(func: cst.BaseExpression, module_class: ModuleClass, own: str) -> Optional[Layer]:
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == own:
        return module_class.attribute(func.attr.value)
    return None


def exclusive(nodes: Sequence[cst.CSTNode], parents: Dict[int, cst.CSTNode]) -> bool:
    """Whether the nodes stand in different arms of one ``if``/``elif``/``else`` chain (at
    most one of them runs)."""
    paths = []
    for node in nodes:
        path = [node]
        while id(path[-1]) in parents:
            path.append(parents[id(path[-1])])
        paths.append(path[::-1])  # root first
    for first in range(len(paths)):
        for second in range(first + 1, len(paths)):
            a, b = paths[first], paths[second]
            depth = 0
            while depth < min(len(a), len(b)) and a[depth] is b[depth]:
                depth += 1
            common = a[depth - 1] if depth else None
            if type(common) is not cst.If or depth >= min(len(a), len(b)):
                return False
            arms = {id(common.body), id(common.orelse)}
            if id(a[depth]) not in arms or id(b[depth]) not in arms:
                return False
    return True


def _parents(root: cst.CSTNode) -> Dict[int, cst.CSTNode]:
    parents: Dict[int, cst.CSTNode] = {}
    for node in descendants(root):
        for child in child_nodes(node):
            parents[id(child)] = node
    return parents


def _chain_to(chain: Tuple[ScopeNode, ...], cls: cst.ClassDef) -> Tuple[ScopeNode, ...]:
    index = next(i for i, n in enumerate(chain) if n is cls)
    return chain[:index]


def _returned(function: cst.FunctionDef) -> List[cst.BaseExpression]:
    """What ``function`` returns that may be a list of layers: a name or a list literal."""
    return [
        node.value
        for node in descendants(function.body)
        if isinstance(node, cst.Return) and isinstance(node.value, (cst.Name, cst.List, cst.Tuple))
    ]


def _drops_last(value: cst.BaseExpression, name: str) -> bool:
    """``name[:-1]``: the list without its last item."""
    if type(value) is not cst.Subscript or _dotted(value.value) != name or len(value.slice) != 1:
        return False
    part = value.slice[0].slice
    if type(part) is not cst.Slice or part.lower is not None or part.step is not None:
        return False
    upper = part.upper
    return type(upper) is cst.UnaryOperation and type(upper.operator) is cst.Minus and type(upper.expression) is cst.Integer and upper.expression.value == "1"


def _may_be_helper(func: cst.BaseExpression, qualname: Optional[str]) -> bool:
    """A call of a plain or dotted name that is not a method of ``self``/``cls`` and not
    something of torch's: it may be a project function."""
    name = _dotted(func)
    if name is None or name.partition(".")[0] in ("self", "cls", "super"):
        return False
    return qualname is None or qualname.partition(".")[0] not in ("torch", "torchvision")


def arm_readers(statement: cst.If, variable: str) -> Optional[List[cst.BaseStatement]]:
    """The first statement that reads ``variable`` in each arm of an ``if``/``elif``/``else``
    chain: the value goes one of these ways. None when the test reads it, the chain has no
    ``else`` (the value may go past it) or an arm does not read it."""
    readers: List[cst.BaseStatement] = []
    arm: Optional[Union[cst.If, cst.Else]] = statement
    while isinstance(arm, cst.If):
        if mentions(arm.test, variable) or not isinstance(arm.body, cst.IndentedBlock):
            return None
        readers.append(next((s for s in arm.body.body if mentions(s, variable)), None))  # type: ignore[arg-type]
        arm = arm.orelse
    if arm is None or not isinstance(arm.body, cst.IndentedBlock):
        return None
    readers.append(next((s for s in arm.body.body if mentions(s, variable)), None))  # type: ignore[arg-type]
    return None if any(r is None for r in readers) else readers


Fresh = Dict[str, cst.Call]  # a name bound to a call just before, in the block being read


def _fresh_binding(statement: cst.CSTNode) -> Optional[Tuple[str, cst.Call]]:
    """``conv = nn.Conv2d(...)`` (one name, a call that does not read it)."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
        return None
    name = small.targets[0].target.value
    return (name, small.value) if type(small.value) is cst.Call and not mentions(small.value, name) else None


def _each_read_once(owner: cst.CSTNode, name: str, reads: int) -> bool:
    """Whether every use of ``name`` in ``owner`` is a ``name = <call>`` binding or one of
    the ``reads`` items it was followed to: no layer object bound to it is shared."""
    bindings = sum(1 for node in descendants(owner) if _fresh_binding(node) is not None and _fresh_binding(node)[0] == name)  # type: ignore[index]
    return _name_count(owner, name) == bindings + reads


def subclass_uses(module_class: ModuleClass, class_nodes: Sequence["Visited"]) -> Set[str]:
    """Attributes of ``module_class`` that a subclass in this file touches."""
    name = module_class.node.name.value
    touched: Set[str] = set()
    for other in class_nodes:
        node = other.node
        assert isinstance(node, cst.ClassDef)
        if node is module_class.node:
            continue
        if any((dotted_name(b.value) or "").split(".")[-1] == name for b in node.bases):
            for sub in descendants(node.body):
                if isinstance(sub, cst.Attribute) and module_class.layers(sub.attr.value):
                    touched.add(sub.attr.value)
    return touched


def switched_add(statement: cst.BaseStatement, context: FileContext) -> Optional[cst.BaseSmallStatement]:
    """The one statement of ``if flag: <statement>`` (no ``else``, a name or attribute as
    the test) when the value engine knows the flag is true where it is read (a parameter
    every project caller passes ``True``, a true default no caller changes): the layers it
    adds follow the ones before, as in straight-line code. None otherwise."""
    if type(statement) is not cst.If or statement.orelse is not None or type(statement.body) is not cst.IndentedBlock:
        return None
    body = statement.body.body
    if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine or len(body[0].body) != 1:
        return None
    test = statement.test
    if type(test) not in (cst.Name, cst.Attribute) or context.project is None:
        return None
    top = next((s for s in context.module.body if s is statement or any(n is statement for n in descendants(s))), None)
    return body[0].body[0] if top is not None and context.value_of(test, top) == Flag(True) else None
