"""Facts about the ``nn.Module`` structure of a file: which layer's output feeds which.

TPF301 must know that a convolution's output goes *straight* into a BatchNorm, and nothing
else sees it: structure, not a value, so it stays here (what a helper builds and whether a
bias parameter is true are the rule's questions). Once per file, this finds:
* the ``torch.nn`` layers built by calls, with the scope their arguments are read in;
* ``nn.Module`` subclasses and which ``self.<attr>`` holds which layer (assigned once, or
  once in each arm of an ``if``/``elif`` chain of one method);
* adjacent layers of ``nn.Sequential``: positional arguments, ``*[...]`` lists, an
  ``OrderedDict([...])``, lists built with ``layers = [...]`` / ``.append`` / ``+=`` /
  ``.extend`` in straight-line code (``layers = layers[:-1]`` drops the feeds into a
  statement's last item), ``super().__init__(...)`` of Sequential subclasses; an item named
  by a variable rebound elsewhere is the layer bound just before in its block, read nowhere
  else (``conv2d = nn.Conv2d(...); layers += [conv2d, nn.BatchNorm2d(v)]`` in a loop's arm);
  ``if flag: layers += [bn]`` (no ``else``) is straight-line code where the value engine
  knows the flag is true (every project caller of the function passes ``True``);
* the data flow in methods: ``self.bn(self.conv(x))``, ``x = self.conv(x); x = self.bn(x)``,
  and through an ``if``/``else`` whose every arm's first reader is that layer.
Anything not known is left out; a call that may be a project helper is a ``HELPER`` layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ...analysis.scope import Scope, ScopeNode
from ...analysis.walk import descendants
from ...context import FileContext
from ..dead_arms import dead_blocks
from .list_displays import displayed
from .module_parts import (
    HELPER, Fresh, _each_read_once, _fresh_binding, _MOVES, _ORDERED_DICTS, _SEQUENTIAL, Feed, Layer, ModuleClass, Visited, _blocks,
    _chain_to, _dotted, _mentions_target, _methods, _name_count, _only_read, _pairs, _drops_last,
    _may_be_helper, _parents, exclusive, _returned, _self_attrs, _self_layer, _self_name, _unique,
    mentions, variables, walk_scoped, arm_readers, subclass_uses, switched_add,
)


@dataclass(frozen=True)
class ModuleFacts:
    """Everything this module knows about one file."""

    classes: Tuple[ModuleClass, ...]
    feeds: Tuple[Feed, ...]


class ModuleFactsBuilder:
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
        self._tails: Set[int] = set()  # feeds into the last item a statement adds to a list

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
            if self.context.project is not None and _may_be_helper(func, name):
                return Layer(HELPER, expr, scope)
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
        if isinstance(value, (cst.List, cst.Tuple, cst.BinaryOperation)):
            self._pairs(self._list_items(value, scope))
        elif isinstance(value, cst.Name):
            self.list_building(value.value, visited.function or self.context.module, scope)
        elif isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute):
                self.star_sources.add(func.attr.value)
            elif isinstance(func, cst.Name):
                self.star_sources.add(func.value)

    def _list_items(self, value: cst.BaseExpression, scope: Scope, fresh: Optional[Fresh] = None) -> List[Optional[Layer]]:
        return displayed(value, lambda element: self._item(element, scope, fresh))  # `[conv, bn] * n` too

    def _item(self, value: cst.BaseExpression, scope: Scope, fresh: Optional[Fresh]) -> Optional[Layer]:
        """A layer item of a list a statement adds (a name rebound elsewhere: through ``fresh``)."""
        found = self.layer(value, scope)
        if found is None and fresh and type(value) is cst.Name and value.value in fresh and (bound := self.layer(fresh.pop(value.value), scope)):
            found = Layer(bound.qualname, bound.call, bound.scope, value.value)  # one read per binding
            self._fresh_reads.setdefault(value.value, []).append(found)
        return found

    def _added(self, small: cst.BaseSmallStatement, name: str, scope: Scope, fresh: Optional[Fresh] = None) -> Optional[Tuple[bool, List[Optional[Layer]]]]:
        """What one statement adds to sequence ``name``: (starts a new one, items), else None.

        ``name`` is a list variable (``layers``) or an empty ``nn.Sequential()`` bound to a
        name or attribute (``self.body``) that grows by ``append``/``add_module``.
        """
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
        if isinstance(small, cst.AnnAssign) and small.value is not None:
            target = small.target  # layers: List[nn.Module] = [...]
        if target is not None and _dotted(target) == name:
            value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
            if value is not None and _drops_last(value, name):
                return False, None  # type: ignore[return-value]  # `layers = layers[:-1]`
            if value is not None:
                if isinstance(value, (cst.List, cst.Tuple)):
                    return True, self._list_items(value, scope, fresh)
                if isinstance(value, cst.Call) and not value.args:
                    return True, []  # nn.Sequential(): filled by add_module below
                if (
                    isinstance(value, cst.BinaryOperation)
                    and isinstance(value.operator, cst.Add)
                    and _dotted(value.left) == name
                    and not _mentions_target(value.right, name)
                ):
                    return False, self._list_items(value.right, scope, fresh)
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
            if _dotted(small.target) == name and not _mentions_target(small.value, name):
                return False, self._list_items(small.value, scope, fresh)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            func = call.func
            if not (isinstance(func, cst.Attribute) and _dotted(func.value) == name):
                return None
            if any(a.star or a.keyword is not None or _mentions_target(a.value, name) for a in call.args):
                return None
            method = func.attr.value
            if method == "append" and len(call.args) == 1:
                return False, [self._item(call.args[0].value, scope, fresh)]
            if method == "extend" and len(call.args) == 1:
                return False, self._list_items(call.args[0].value, scope, fresh)
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
        self._fresh_reads: Dict[str, List[Layer]] = {}  # name -> layers read through `Fresh`
        if self._block(body, name, scope, found):
            shared = {id(layer) for variable, reads in self._fresh_reads.items() if not _each_read_once(owner, variable, len(reads)) for layer in reads}
            self.feeds.extend(f for f in found if id(f.source) not in shared and id(f.target) not in shared)

    def _block(self, body: Sequence[cst.BaseStatement], name: str, scope: Scope, found: List[Feed]) -> bool:
        """Collect the feeds of one block into ``found``; False when the list is tainted."""
        last: Optional[Layer] = None
        just: Fresh = {}  # `conv = nn.Conv2d(...)` just before, in this block: read next
        for statement in body:
            bound = _fresh_binding(statement)
            stale = [v for v in just if mentions(statement, v)]  # read here (by an item, once) or rebound
            taken = self._statement(statement, name, scope, found, just, last)
            just = {v: call for v, call in just.items() if v not in stale}
            if bound is not None and bound[0] != name:
                just[bound[0]] = bound[1]
            if taken is False:
                return False
            last = None if taken is True else taken  # type: ignore[assignment]
        return True

    def _statement(self, statement: cst.BaseStatement, name: str, scope: Scope, found: List[Feed], just: Fresh, last: Optional[Layer]) -> Union[bool, Layer]:
        """One statement after item ``last``: the last item then (True: none), False: tainted."""
        if not _mentions_target(statement, name):
            return last if last is not None else True
        added = None
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            added = self._added(statement.body[0], name, scope, just)
        elif last is not None and (small := switched_add(statement, self.context)) is not None:
            added = self._added(small, name, scope, just)  # `if batch_norm: layers += [bn]`, every caller's flag true
        if added is None:
            if isinstance(statement, cst.BaseCompoundStatement):
                dead = dead_blocks(self.context, statement)  # arms that never run add nothing
                return all(self._block(block, name, scope, found) for block in _blocks(statement) if id(block) not in dead)
            return "." not in name and _only_read(statement, name)
        fresh, items = added
        if items is None:  # the last item dropped: a feed into a statement's last item may be gone
            found[:] = [f for f in found if id(f) not in self._tails]
            return True
        if items:
            pairs = _pairs(([None] if fresh else [last]) + items)
            found.extend(pairs)
            if pairs and pairs[-1].target is items[-1]:
                self._tails.add(id(pairs[-1]))
            return items[-1] if items[-1] is not None else True
        return True if fresh or last is None else last

    # -- classes ---------------------------------------------------------------------------
    def module_class(self, visited: Visited) -> ModuleClass:
        node = visited.node
        assert type(node) is cst.ClassDef
        scope = self.scope(visited.chain)
        bases = tuple(self.context.qualname(base.value, scope) for base in node.bases)
        inner = visited.chain + (node,)
        counts: Dict[str, int] = {}
        found: Dict[str, List[Tuple[Layer, cst.CSTNode, cst.FunctionDef]]] = {}
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
                            found.setdefault(attr, []).append((layer, sub, method))
        attributes: List[Tuple[str, Layer]] = []
        for attr, layers in found.items():
            if counts.get(attr) == 1:
                attributes.append((attr, layers[0][0]))
            elif counts.get(attr) == len(layers) and len({id(m) for _, _, m in layers}) == 1:
                # Bound in each arm of an if/elif chain of one method: each may be the layer.
                if exclusive([a for _, a, _ in layers], _parents(layers[0][2])):
                    attributes.extend((attr, layer) for layer, _, _ in layers)
        return ModuleClass(node, scope, bases, tuple(attributes))

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
                    and module_class.layers(node.attr.value)
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
            for source in module_class.layers(attr):
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
            if isinstance(statement, cst.If):  # `if c: return self.bn(x)` / `else: return self.act(self.bn(x))`
                arms = arm_readers(statement, variable) or ()
                found = [self._takes_only(s, variable, module_class, own, parents, method, line) for s in arms]
                return found[0] if found and all(f is not None and f is found[0] for f in found) else None
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
        return subclass_uses(module_class, self.class_nodes)


def module_facts(context: FileContext) -> ModuleFacts:
    """The file's module facts (use with ``context.fact(module_facts)``)."""
    if "Sequential" not in context.source and "forward" not in context.source and "self." not in context.source:
        return ModuleFacts((), ())
    return ModuleFactsBuilder(context).build()
