"""Facts about the ``nn.Module`` structure of a file: which layer's output feeds which.

TPF301 must know that a convolution's output goes *straight* into a BatchNorm, and nothing
else sees it; that is only decidable when the layers are built in the same file. This module
finds, once per file:

* the ``torch.nn`` layers built by calls (``nn.Conv2d(3, 64, 3)``), with the scope their
  arguments are read in;
* ``nn.Module`` subclasses and which ``self.<attr>`` holds which layer (attributes assigned
  exactly once in the class, to a layer call or a name bound once to one);
* adjacent layers of ``nn.Sequential``: positional arguments, ``*[...]`` lists, an
  ``OrderedDict([...])``, lists built with ``layers = [...]`` / ``.append`` / ``+=`` /
  ``.extend`` in straight-line code, and ``super().__init__(...)`` of Sequential subclasses;
* the data flow in methods: ``self.bn(self.conv(x))`` and ``x = self.conv(x)`` followed by
  ``x = self.bn(x)``.

Anything not known (a layer built by a helper, a conditional append, a layer used twice) is
left out, so rules built on these facts stay silent rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ..rule import FileContext
from .calls import Argument, argument
from .scope import Scope, ScopeNode, dotted_name
from .values import literal_value
from .walk import child_nodes, descendants

_SCOPE_TYPES = (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)
_SEQUENTIAL = "torch.nn.Sequential"
_ORDERED_DICTS = ("collections.OrderedDict", "typing.OrderedDict")
# Methods that return the module they are called on (moved or cast).
_MOVES = frozenset(("to", "cuda", "float", "half", "double", "bfloat16", "requires_grad_", "train"))


@dataclass(frozen=True)
class Layer:
    """A layer built by a call to a ``torch.nn`` class (``torch.nn.Conv2d``)."""

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

    def attribute(self, name: str) -> Optional[Layer]:
        for attr, layer in self.attributes:
            if attr == name:
                return layer
        return None


@dataclass(frozen=True)
class ModuleFacts:
    """Everything this module knows about one file."""

    classes: Tuple[ModuleClass, ...]
    feeds: Tuple[Feed, ...]


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


class _Builder:
    """Computes the facts of one file; one instance per file."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.feeds: List[Feed] = []
        self.classes: List[ModuleClass] = []
        # Functions whose result is unpacked into a Sequential: ``Sequential(*self._make(...))``.
        self.star_sources: Set[str] = set()
        self.sequential_calls: List[Visited] = []
        self.functions: List[Visited] = []
        self.class_nodes: List[Visited] = []
        self.empty_sequentials: List[Tuple[str, Visited]] = []

    # -- resolving expressions to layers -------------------------------------------------
    def scope(self, chain: Sequence[ScopeNode]) -> Scope:
        return self.context.scope_of(chain)

    def layer(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[Layer]:
        """The ``torch.nn`` layer ``expr`` builds or names (bound once), if known."""
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MOVES and depth < 4:
                # nn.Conv2d(...).to(device): the same module, moved or cast.
                return self.layer(func.value, scope, depth + 1)
            name = self.context.qualname(func, scope)
            if name is not None and name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper():
                return Layer(name, expr, scope)
            return None
        if isinstance(expr, cst.Name) and depth < 4:
            bound = scope.lookup_value(expr.value)
            if isinstance(bound, cst.Call):
                found = self.layer(bound, scope, depth + 1)
                if found is not None:
                    return Layer(found.qualname, found.call, found.scope, expr.value)
        return None

    # -- sequences -------------------------------------------------------------------------
    def _pairs(self, items: Sequence[Optional[Layer]]) -> None:
        self.feeds.extend(_pairs(items))

    def _ordered_dict_items(self, call: cst.Call, scope: Scope) -> Optional[List[Optional[Layer]]]:
        name = self.context.qualname(call.func, scope)
        if name not in _ORDERED_DICTS or len(call.args) != 1:
            return None
        value = call.args[0].value
        if call.args[0].keyword is not None or call.args[0].star or not isinstance(value, (cst.List, cst.Tuple)):
            return None
        items: List[Optional[Layer]] = []
        for element in value.elements:
            pair = element.value
            if isinstance(element, cst.StarredElement) or not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                items.append(None)
                continue
            items.append(self.layer(pair.elements[1].value, scope))
        return items

    def sequence_args(self, args: Sequence[cst.Arg], visited: Visited) -> None:
        """Adjacent layers among the arguments of a Sequential (or its ``__init__``)."""
        scope = self.scope(visited.chain)
        if len(args) == 1 and not args[0].star and isinstance(args[0].value, cst.Call):
            ordered = self._ordered_dict_items(args[0].value, scope)
            if ordered is not None:
                self._pairs(ordered)
                return
        items: List[Optional[Layer]] = []
        for arg in args:
            if arg.keyword is not None:
                continue
            if arg.star == "*":
                items.append(None)
                self._starred(arg.value, visited)
                items.append(None)
            else:
                items.append(self.layer(arg.value, scope))
        self._pairs(items)

    def _starred(self, value: cst.BaseExpression, visited: Visited) -> None:
        scope = self.scope(visited.chain)
        if isinstance(value, (cst.List, cst.Tuple)):
            self._pairs(self._list_items(value, scope))
        elif isinstance(value, cst.Name):
            self.list_building(value.value, visited.function or self.context.module, scope)
        elif isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute):
                self.star_sources.add(func.attr.value)
            elif isinstance(func, cst.Name):
                self.star_sources.add(func.value)

    def _list_items(self, value: cst.BaseExpression, scope: Scope) -> List[Optional[Layer]]:
        if not isinstance(value, (cst.List, cst.Tuple)):
            return [None]
        return [
            None if isinstance(e, cst.StarredElement) else self.layer(e.value, scope) for e in value.elements
        ]

    def _added(self, small: cst.BaseSmallStatement, name: str, scope: Scope) -> Optional[Tuple[bool, List[Optional[Layer]]]]:
        """What one statement adds to sequence ``name``: (starts a new one, items), else None.

        ``name`` is a list variable (``layers``) or an empty ``nn.Sequential()`` bound to a
        name or attribute (``self.body``) that grows by ``append``/``add_module``.
        """
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
        if isinstance(small, cst.AnnAssign) and small.value is not None:
            target = small.target  # layers: List[nn.Module] = [...]
        if target is not None and _dotted(target) == name:
            value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
            if value is not None:
                if isinstance(value, (cst.List, cst.Tuple)):
                    return True, self._list_items(value, scope)
                if isinstance(value, cst.Call) and not value.args:
                    return True, []  # nn.Sequential(): filled by add_module below
                if (
                    isinstance(value, cst.BinaryOperation)
                    and isinstance(value.operator, cst.Add)
                    and _dotted(value.left) == name
                    and not _mentions_target(value.right, name)
                ):
                    return False, self._list_items(value.right, scope)
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
            if _dotted(small.target) == name and not _mentions_target(small.value, name):
                return False, self._list_items(small.value, scope)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            func = call.func
            if not (isinstance(func, cst.Attribute) and _dotted(func.value) == name):
                return None
            if any(a.star or a.keyword is not None or _mentions_target(a.value, name) for a in call.args):
                return None
            method = func.attr.value
            if method == "append" and len(call.args) == 1:
                return False, [self.layer(call.args[0].value, scope)]
            if method == "extend" and len(call.args) == 1:
                return False, self._list_items(call.args[0].value, scope)
            if method == "add_module" and len(call.args) == 2:
                return False, [self.layer(call.args[1].value, scope)]
        return None

    def list_building(self, name: str, owner: Union[cst.FunctionDef, cst.Module], scope: Scope) -> None:
        """Adjacent layers of a list ``name`` built in straight-line code in ``owner``.

        Nothing is kept when the list is changed any other way (``insert``, ``pop``, an
        item assignment, being passed to a function): the order is then not known.
        """
        body = owner.body if isinstance(owner, cst.Module) else getattr(owner.body, "body", ())
        found: List[Feed] = []
        if self._block(body, name, scope, found):
            self.feeds.extend(found)

    def _block(self, body: Sequence[cst.BaseStatement], name: str, scope: Scope, found: List[Feed]) -> bool:
        """Collect the feeds of one block into ``found``; False when the list is tainted."""
        last: Optional[Layer] = None
        for statement in body:
            if not _mentions_target(statement, name):
                continue
            added = None
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                added = self._added(statement.body[0], name, scope)
            if added is None:
                last = None
                if isinstance(statement, cst.BaseCompoundStatement):
                    if not all(self._block(block, name, scope, found) for block in _blocks(statement)):
                        return False
                elif "." in name or not _only_read(statement, name):
                    return False
                continue
            fresh, items = added
            if items:
                found.extend(_pairs(([None] if fresh else [last]) + items))
                last = items[-1]
            elif fresh:
                last = None
        return True

    # -- classes ---------------------------------------------------------------------------
    def module_class(self, visited: Visited) -> ModuleClass:
        node = visited.node
        assert type(node) is cst.ClassDef
        scope = self.scope(visited.chain)
        bases = tuple(self.context.qualname(base.value, scope) for base in node.bases)
        inner = visited.chain + (node,)
        counts: Dict[str, int] = {}
        found: Dict[str, Layer] = {}
        for method in _methods(node):
            own = _self_name(method)
            if own is None:
                continue
            method_scope = self.scope(inner + (method,))
            for sub in descendants(method.body):
                targets: List[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]] = []
                if type(sub) is cst.Assign:
                    targets = [(t.target, sub.value if len(sub.targets) == 1 else None) for t in sub.targets]
                elif type(sub) in (cst.AnnAssign, cst.AugAssign):
                    targets = [(sub.target, sub.value if type(sub) is cst.AnnAssign else None)]
                elif type(sub) in (cst.For, cst.CompFor):
                    targets = [(sub.target, None)]
                elif type(sub) is cst.WithItem and sub.asname is not None:
                    targets = [(sub.asname.name, None)]
                for target, value in targets:
                    for attr in _self_attrs(target, own):
                        counts[attr] = counts.get(attr, 0) + 1
                        layer = self.layer(value, method_scope) if value is not None and type(target) is cst.Attribute else None
                        if layer is not None:
                            found[attr] = layer
        attributes = tuple((a, l) for a, l in found.items() if counts.get(a) == 1)
        return ModuleClass(node, scope, bases, attributes)

    def super_init(self, visited: Visited) -> Optional[Sequence[cst.Arg]]:
        """The layer arguments of a Sequential subclass's ``super().__init__(...)``."""
        call = visited.node
        assert isinstance(call, cst.Call)
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "__init__"):
            return None
        cls = visited.cls
        if cls is None or visited.function is None or visited.function.name.value != "__init__":
            return None
        class_scope = self.context.scope_of(_chain_to(visited.chain, cls))
        if not any(self.context.qualname(b.value, class_scope) == _SEQUENTIAL for b in cls.bases):
            return None
        owner = func.value
        if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value == "super":
            return call.args
        if self.context.qualname(owner, self.scope(visited.chain)) == _SEQUENTIAL and call.args:
            return call.args[1:]
        return None

    # -- data flow in methods ------------------------------------------------------------
    def forward_feeds(self, module_class: ModuleClass, subclass_attrs: Set[str]) -> None:
        """Feeds ``self.conv -> self.bn`` where every call of ``self.conv`` goes into a norm."""
        if not module_class.attributes:
            return
        targets: Dict[str, List[Optional[Layer]]] = {}
        escaped: Set[str] = set(subclass_attrs)
        for method in _methods(module_class.node):
            own = _self_name(method)
            if own is None:
                continue
            parents = _parents(method)
            for node in descendants(method.body):
                if not (
                    type(node) is cst.Attribute
                    and type(node.value) is cst.Name
                    and node.value.value == own
                    and module_class.attribute(node.attr.value) is not None
                ):
                    continue
                attr = node.attr.value
                parent = parents.get(id(node))
                if type(parent) is cst.Attribute and parent.value is node:
                    continue  # self.conv.weight: reading a parameter is not a use of the output
                if type(parent) is cst.AssignTarget or (
                    type(parent) in (cst.AnnAssign, cst.AugAssign) and parent.target is node
                ):
                    continue
                if type(parent) is cst.Call and parent.func is node:
                    targets.setdefault(attr, []).append(self._consumer(parent, module_class, own, parents, method))
                else:
                    escaped.add(attr)
        for attr, consumers in targets.items():
            if attr in escaped or not consumers or any(c is None for c in consumers):
                continue
            source = module_class.attribute(attr)
            assert source is not None
            for consumer in consumers:
                assert consumer is not None
                self.feeds.append(Feed(source, consumer, "forward"))

    def _consumer(
        self,
        call: cst.Call,
        module_class: ModuleClass,
        own: str,
        parents: Dict[int, cst.CSTNode],
        method: cst.FunctionDef,
    ) -> Optional[Layer]:
        """The layer ``self.<attr>`` that takes this call's output as its only input."""
        parent = parents.get(id(call))
        if isinstance(parent, cst.Arg):
            outer = parents.get(id(parent))
            if isinstance(outer, cst.Call) and len(outer.args) == 1 and parent.keyword is None and not parent.star:
                return _self_layer(outer.func, module_class, own)
            return None
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return None
        target = parent.targets[0].target
        line = parents.get(id(parent))
        block = parents.get(id(line))
        if not (
            isinstance(target, cst.Name)
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(block, (cst.IndentedBlock, cst.Module))
        ):
            return None
        variable = target.value
        statements = list(block.body)
        index = next(i for i, s in enumerate(statements) if s is line)
        for statement in statements[index + 1 :]:
            if not mentions(statement, variable):
                continue
            return self._takes_only(statement, variable, module_class, own, parents, method, line)
        return None

    def _takes_only(
        self,
        statement: cst.BaseStatement,
        variable: str,
        module_class: ModuleClass,
        own: str,
        parents: Dict[int, cst.CSTNode],
        method: cst.FunctionDef,
        producer: cst.SimpleStatementLine,
    ) -> Optional[Layer]:
        """The layer of ``statement`` that is the only reader of ``variable``, if any."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return None
        small = statement.body[0]
        rebinds = isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == variable for t in small.targets
        )
        if _name_count(small, variable) != 1 + int(rebinds):
            return None
        value = small.value if isinstance(small, cst.Assign) else small
        uses = [n for n in variables(value) if n.value == variable]
        if len(uses) != 1:
            return None
        use = uses[0]
        arg = parents.get(id(use))
        call = parents.get(id(arg))
        if not (
            isinstance(arg, cst.Arg)
            and arg.keyword is None
            and not arg.star
            and isinstance(call, cst.Call)
            and len(call.args) == 1
        ):
            return None
        layer = _self_layer(call.func, module_class, own)
        if layer is None:
            return None
        if rebinds or isinstance(small, cst.Return):
            return layer
        # Not rebound: the variable must not be read anywhere else in the method.
        elsewhere = _name_count(method, variable) - _name_count(producer, variable) - 1
        return layer if elsewhere == 0 else None

    # -- the whole file ------------------------------------------------------------------
    def build(self) -> ModuleFacts:
        for visited in walk_scoped(self.context.module):
            node = visited.node
            if type(node) is cst.ClassDef:
                self.class_nodes.append(visited)
            elif type(node) is cst.FunctionDef:
                self.functions.append(visited)
            if type(node) is cst.Call:
                scope = self.scope(visited.chain)
                if self.context.qualname(node.func, scope) == _SEQUENTIAL:
                    self.sequential_calls.append(visited)
                else:
                    args = self.super_init(visited)
                    if args is not None:
                        self.sequence_args(args, visited)
            elif type(node) is cst.Assign and len(node.targets) == 1:
                value = node.value
                target = _dotted(node.targets[0].target)
                if (
                    target is not None
                    and type(value) is cst.Call
                    and not value.args
                    and self.context.qualname(value.func, self.scope(visited.chain)) == _SEQUENTIAL
                ):
                    self.empty_sequentials.append((target, visited))
        for visited in self.sequential_calls:
            call = visited.node
            assert type(call) is cst.Call
            self.sequence_args(call.args, visited)
        for target, visited in self.empty_sequentials:
            self.list_building(target, visited.function or self.context.module, self.scope(visited.chain))
        for visited in self.functions:
            function = visited.node
            assert type(function) is cst.FunctionDef
            if function.name.value in self.star_sources:
                scope = self.scope(visited.chain + (function,))
                for returned in _returned(function):
                    if type(returned) is cst.Name:
                        self.list_building(returned.value, function, scope)
                    else:
                        self._pairs(self._list_items(returned, scope))
        self.classes = [self.module_class(v) for v in self.class_nodes]
        for module_class in self.classes:
            self.forward_feeds(module_class, self._subclass_uses(module_class))
        return ModuleFacts(tuple(self.classes), tuple(_unique(self.feeds)))

    def _subclass_uses(self, module_class: ModuleClass) -> Set[str]:
        """Attributes of ``module_class`` that a subclass in this file touches."""
        name = module_class.node.name.value
        touched: Set[str] = set()
        for other in self.class_nodes:
            node = other.node
            assert isinstance(node, cst.ClassDef)
            if node is module_class.node:
                continue
            if any((dotted_name(b.value) or "").split(".")[-1] == name for b in node.bases):
                for sub in descendants(node.body):
                    if isinstance(sub, cst.Attribute) and module_class.attribute(sub.attr.value) is not None:
                        touched.add(sub.attr.value)
        return touched


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


def module_facts(context: FileContext) -> ModuleFacts:
    """The file's module facts (use with ``context.fact(module_facts)``)."""
    if "Sequential" not in context.source and "forward" not in context.source and "self." not in context.source:
        return ModuleFacts((), ())
    return _Builder(context).build()


# -- convolutional models built in the file (TPF403) -----------------------------------------

_CONV_LAYERS = frozenset(
    f"torch.nn.{prefix}{kind}{dims}d"
    for prefix in ("", "Lazy")
    for kind in ("Conv", "ConvTranspose")
    for dims in (1, 2, 3)
)
# torchvision.models builders and classes (lower-cased) that are convolutional networks.
_TORCHVISION_CONV = (
    "resnet", "resnext", "wide_resnet", "vgg", "alexnet", "densenet", "mobilenet",
    "efficientnet", "regnet", "shufflenet", "squeezenet", "mnasnet", "googlenet", "inception",
    "convnext", "maxvit", "fasterrcnn", "maskrcnn", "keypointrcnn", "retinanet", "ssd", "fcos",
    "fcn", "deeplabv3", "lraspp", "r3d", "mc3", "r2plus1d", "s3d", "videoresnet", "raft",
)
# timm (and torch.hub) model names that are convolutional networks.
_NAMED_CONV = _TORCHVISION_CONV + (
    "seresne", "senet", "ecaresnet", "skresnet", "res2ne", "resnest", "tf_efficientnet",
    "mixnet", "tf_mixnet", "fbnet", "ghostnet", "rexnet", "hrnet", "dla", "dpn", "xception",
    "cspdarknet", "cspresne", "darknet", "nfnet", "dm_nfnet", "eca_nfnet", "nf_resnet",
    "repvgg", "selecsls", "tresnet", "vovnet", "ese_vovnet", "hardcorenas", "lcnet",
    "tf_mobilenet", "gernet", "legacy_se", "bat_resnext", "unet",
)
_SMP_MODELS = frozenset(
    ("Unet", "UnetPlusPlus", "FPN", "PSPNet", "DeepLabV3", "DeepLabV3Plus", "Linknet", "PAN", "MAnet")
)
# Calls that return (a wrapper of) the model they are given, or the model itself.
_WRAPPERS = frozenset(
    (
        "torch.nn.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.compile",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    )
)
# Methods that return the module they are called on (`resnet50(...).eval()` is still it).
_MODEL_METHODS = frozenset(
    ("to", "cuda", "train", "eval", "requires_grad_", "float", "half", "double", "bfloat16", "to_empty")
)


@dataclass(frozen=True)
class ModelBuild:
    """A statement that builds a convolutional model and binds it (``model = Net().cuda()``)."""

    line: cst.SimpleStatementLine
    assign: cst.BaseSmallStatement
    target: str  # dotted: ``model`` or ``self.net``
    # The convolutional class of the file whose body builds it (a sub-network), if any.
    inside_model: bool = False


def _literal_name(call: cst.Call, position: int, context: FileContext, scope: Scope) -> Optional[str]:
    """A model name passed as a string: a literal, a constant, or ``CFG.model_name``."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    keyword = next((a for a in call.args if a.keyword is not None and a.keyword.value == "model_name"), None)
    value = args[position].value if len(args) > position else keyword.value if keyword else None
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        value = _class_constant(context, value.value.value, value.attr.value)
    found = literal_value(value, scope.lookup_value) if value is not None else None
    return found if isinstance(found, str) else None


def _class_constant(context: FileContext, cls: str, attr: str) -> Optional[cst.BaseExpression]:
    """``attr = value`` in the body of module-level class ``cls`` (Kaggle's ``CFG``), if set
    exactly once there and never assigned from outside (``CFG.model_name = ...``)."""
    bindings = context.module_scope.bindings.get(cls)
    if bindings != [None]:
        return None
    node = next(
        (s for s in context.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls), None
    )
    if node is None:
        return None
    values = context.scope_of([context.module, node]).bindings.get(attr)
    if not values or len(values) != 1 or values[0] is None:
        return None
    outside = any(
        isinstance(n, cst.AssignTarget) and dotted_name(n.target) == f"{cls}.{attr}"
        for n in descendants(context.module)
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Attribute)
    )
    return None if outside else values[0]


def _conv_name(name: Optional[str]) -> bool:
    return name is not None and name.lower().startswith(_NAMED_CONV)


class _ConvModels:
    """Which classes and expressions of a file build convolutional models."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.classes: Set[str] = set()
        self._functions: Optional[Dict[str, List[cst.FunctionDef]]] = None

    def core(self, call: cst.Call, scope: Scope) -> bool:
        """Whether a call by itself builds a convolutional network or layer."""
        name = self.context.qualname(call.func, scope)
        if name is None:
            func = call.func
            return (
                isinstance(func, cst.Name)
                and func.value in self.classes
                and scope.lookup_import(func.value) is None
                and func.value in self.context.module_scope.bindings
            )
        if name in _CONV_LAYERS:
            return True
        last = name.rsplit(".", 1)[-1]
        if name.startswith("torchvision.models."):
            if last in ("get_model", "__dict__"):
                return _conv_name(_literal_name(call, 0, self.context, scope))
            return "_Weights" not in last and last.lower().startswith(_TORCHVISION_CONV)
        if name == "timm.create_model":
            return _conv_name(_literal_name(call, 0, self.context, scope))
        if name == "torch.hub.load":
            return _conv_name(_literal_name(call, 1, self.context, scope))
        if name.startswith("segmentation_models_pytorch.") and last in _SMP_MODELS:
            return True
        if name.startswith("efficientnet_pytorch.EfficientNet"):
            return True
        return False

    def model(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether ``expr`` is a convolutional model (possibly moved, wrapped or compiled)."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            bound = scope.lookup_value(expr.value)
            return bound is not None and self.model(bound, scope, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MODEL_METHODS:
            if self.model(func.value, scope, depth + 1):
                return True
        name = self.context.qualname(func, scope)
        if name in _WRAPPERS and expr.args:
            return self.model(expr.args[0].value, scope, depth + 1)
        if name == _SEQUENTIAL:
            return any(
                isinstance(n, cst.Call) and self.core(n, scope) for a in expr.args for n in descendants(a.value)
            )
        return self.core(expr, scope) or (name is None and self.factory(expr, scope, depth))

    def factory(self, call: cst.Call, scope: Scope, depth: int) -> bool:
        """``build_model(cfg)``: a function defined once at the top of this module (and not
        shadowed where it is called) whose every ``return`` gives a convolutional model."""
        func = call.func
        if type(func) is not cst.Name:
            return False
        if self._functions is None:
            self._functions = {}
            for statement in self.context.module.body:
                if type(statement) is cst.FunctionDef:
                    self._functions.setdefault(statement.name.value, []).append(statement)
        definitions = self._functions.get(func.value)
        if definitions is None or len(definitions) != 1 or not _module_binds(scope, func.value):
            return False
        if self.context.module_scope.bindings.get(func.value) != [None]:
            return False
        function = definitions[0]
        inner = self.context.scope_of([self.context.module, function])
        values = [node.value for node in _own_nodes(function.body) if type(node) is cst.Return]
        return bool(values) and all(v is not None and self.model(v, inner, depth + 1) for v in values)


def _module_binds(scope: Scope, name: str) -> bool:
    """Whether ``name`` seen from ``scope`` is the module's own binding (no local, no import)."""
    current: Optional[Scope] = scope
    while current is not None and current.parent is not None:
        # A class body's names are not seen from the methods inside it.
        if not current.is_class or current is scope:
            if name in current.bindings or name in current.imports or name in current.declared_outer:
                return False
        current = current.parent
    return current is not None and name in current.bindings and name not in current.imports


def _own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes under ``root`` outside nested functions, lambdas and classes."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in child_nodes(node) if type(c) not in (cst.FunctionDef, cst.Lambda, cst.ClassDef))


def could_build_conv_model(source: str) -> bool:
    """Whether ``source`` has a word every convolutional model build needs (a text screen)."""
    return any(word in source for word in ("Conv", "torchvision", "timm", "hub.load", "segmentation_models", "EfficientNet"))


def conv_model_builds(context: FileContext) -> Tuple[ModelBuild, ...]:
    """Statements that build a convolutional model (use with ``context.fact``)."""
    if not could_build_conv_model(context.source):
        return ()
    finder = _ConvModels(context)
    class_calls: List[Tuple[cst.ClassDef, cst.Call, Scope]] = []
    class_bases: List[Tuple[cst.ClassDef, Scope]] = []
    assigns: List[Tuple[cst.SimpleStatementLine, cst.BaseSmallStatement, Scope, Optional[str]]] = []
    for visited in walk_scoped(context.module):
        node = visited.node
        if type(node) is cst.ClassDef:
            class_bases.append((node, context.scope_of(visited.chain)))
        elif type(node) is cst.Call and visited.cls is not None:
            class_calls.append((visited.cls, node, context.scope_of(visited.chain)))
        elif type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if type(small) in (cst.Assign, cst.AnnAssign) and small.value is not None:
                    owner = visited.cls.name.value if visited.cls is not None else None
                    assigns.append((node, small, context.scope_of(visited.chain), owner))
    # Classes are convolutional when they build a conv layer or model, or inherit from one:
    # iterate to a fixpoint, since a class may build another class of the file.
    changed = True
    while changed:
        changed = False
        for cls, call, scope in class_calls:
            if cls.name.value not in finder.classes and (finder.core(call, scope) or finder.factory(call, scope, 0)):
                finder.classes.add(cls.name.value)
                changed = True
        for cls, scope in class_bases:
            if cls.name.value in finder.classes:
                continue
            for base in cls.bases:
                qualified = context.qualname(base.value, scope)
                local = type(base.value) is cst.Name and base.value.value in finder.classes
                tv = qualified is not None and qualified.startswith("torchvision.models.") and (
                    qualified.rsplit(".", 1)[-1].lower().startswith(_TORCHVISION_CONV)
                )
                if local or tv:
                    finder.classes.add(cls.name.value)
                    changed = True
                    break
    builds = []
    for line, small, scope, owner in assigns:
        targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
        if len(targets) != 1:
            continue
        target = dotted_name(targets[0]) if type(targets[0]) in (cst.Name, cst.Attribute) else None
        if target is None:
            continue
        assert small.value is not None
        if finder.model(small.value, scope):
            builds.append(ModelBuild(line, small, target, owner in finder.classes))
    return tuple(builds)
