"""Which ``.to(device)`` / ``.cuda()`` calls copy a batch taken straight from a pinned loader.

A batch is "straight from" the loader while it is still the object the loader yielded: the
loop target (``for x, y in loader``, ``for i, batch in enumerate(tqdm(loader))``), the
result of ``next(iter(loader))`` (also after ``try: batch = next(it) except StopIteration:
it = iter(loader); batch = next(it)``), and what is unpacked or indexed out of them (``x, y =
batch``, ``batch["image"]``, ``v`` in ``{k: v.to(d) for k, v in batch.items()}``). A name
stops being pinned once it is rebound (``x = torch.cat(...)``, ``x = x.float()``), from that
statement on; a loop that rebinds it anywhere stops it for the whole loop.

The scan runs in statement order and is deliberately simple: it does not look into nested
functions, and any branch that rebinds a name ends the name for the code after the branch.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import Scope, target_names
from ...analysis.values import literal_value
from ...analysis.walk import child_nodes as _child_nodes
from ...context import FileContext
from .loader_args import Path
from .loader_sites import LoaderFacts, LoaderSiteRecorder
from .loader_sources import LoaderSourceResolver, argument_for

WHOLE = "whole"  # the batch object itself (a tensor only if the loader collates tensors)
ELEMENT = "element"  # something unpacked or indexed out of a batch
Pinned = Dict[str, str]

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_DEVICE_WORDS = ("device", "cuda", "gpu", "rank")


# id(call) -> the pinned names it passes: (argument, kind, custom collate)
Handoffs = Dict[int, List[Tuple[cst.Arg, str, bool]]]


def find_blocking_copies(
    context: FileContext, resolver: "LoaderSourceResolver", collector: "LoaderSiteRecorder", facts: "LoaderFacts"
) -> None:
    handoffs: Handoffs = {}
    for node, path in collector.fors:
        start = _from_for(resolver, node, path)
        if start is not None:
            pinned, custom = start
            scanner = PinnedBatchScanner(context, context.scope_for(node, path), custom, facts, handoffs)
            scanner.statements(_body(node.body), pinned)
    for assign, path in collector.next_assigns:
        start = _from_next(resolver, assign, path)
        if start is not None:
            pinned, custom, rest = start
            scanner = PinnedBatchScanner(context, context.scope_for(assign, path), custom, facts, handoffs)
            scanner.statements(rest, pinned)
    if handoffs:
        _follow_handoffs(context, resolver, collector, facts, handoffs)


def _follow_handoffs(
    context: FileContext, resolver: "LoaderSourceResolver", collector: "LoaderSiteRecorder", facts: "LoaderFacts", handoffs: Handoffs
) -> None:
    """``self.train_step(batch)``: a parameter that every call in the module fills with a
    pinned batch holds one (followed one call deep)."""
    for definitions in collector.functions.values():
        for function, def_path in definitions:
            sites = resolver.call_sites(function)
            if sites is None:
                continue
            calls, positional = sites
            pinned: Pinned = {}
            custom = False
            for index, name in enumerate(positional):
                kinds = []
                for call, _ in calls:
                    arg = argument_for(call, name, index)
                    passed = [h for h in handoffs.get(id(call), []) if h[0] is arg]
                    if arg is None or not passed:
                        break
                    kinds.append(passed[0][1])
                    custom = custom or passed[0][2]
                else:
                    pinned[name] = WHOLE if WHOLE in kinds else ELEMENT
            if pinned:
                scope = context.scope_for(function, def_path + (function,))
                PinnedBatchScanner(context, scope, custom, facts, None).statements(_body(function.body), pinned)


def _pinned_loader(resolver: "LoaderSourceResolver", expr: cst.BaseExpression, path: "Path") -> Optional[bool]:
    """None unless every loader ``expr`` may hold pins memory; else whether any has a
    custom collate_fn."""
    resolution = resolver.resolve(expr, path)
    if not resolution.known or not all(s.site.args.pinned for s in resolution.sources):
        return None
    return any(s.site.args.custom_collate for s in resolution.sources)


def _from_for(resolver: "LoaderSourceResolver", node: cst.For, path: "Path") -> Optional[Tuple[Pinned, bool]]:
    expr: cst.BaseExpression = node.iter
    here = path + (node,)
    numbered = 0
    while isinstance(expr, cst.Call):
        inner = resolver.pass_through(expr, here)
        if inner is None:
            break
        arg, numbers = inner
        numbered += numbers
        here = here + (expr, arg)
        expr = arg.value
    custom = _pinned_loader(resolver, expr, here)
    if custom is None:
        return None
    target: cst.BaseExpression = node.target
    for _ in range(numbered):
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
            return None
        target = target.elements[1].value
    pinned: Pinned = {}
    _bind(target, WHOLE, pinned)
    return (pinned, custom) if pinned else None


def _from_next(
    resolver: "LoaderSourceResolver", assign: cst.Assign, path: "Path"
) -> Optional[Tuple[Pinned, bool, Sequence[cst.BaseStatement]]]:
    """``batch = next(iter(loader))``: the batch and the statements after it in its block."""
    call = assign.value
    assert isinstance(call, cst.Call)
    arg = call.args[0]
    if arg.star or arg.keyword is not None or len(path) < 2:
        return None
    line, block = path[-1], path[-2]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statements = _body(block) if isinstance(block, (cst.IndentedBlock, cst.Module)) else None
    if statements is None:
        return None
    custom = _pinned_loader(resolver, arg.value, path + (assign, call, arg))
    if custom is None:
        return None
    pinned: Pinned = {}
    _bind(assign.targets[0].target, WHOLE, pinned)
    index = next((i for i, s in enumerate(statements) if s is line), None)
    if index is None or not pinned:
        return None
    rest = statements[index + 1:]
    if not rest and len(path) >= 4 and isinstance(path[-3], cst.Try):
        refill = _after_refill(resolver, assign, path)
        if refill is not None:
            rest, refill_custom = refill
            custom = custom or refill_custom
    return pinned, custom, rest


def _after_refill(
    resolver: "LoaderSourceResolver", assign: cst.Assign, path: "Path"
) -> Optional[Tuple[Sequence[cst.BaseStatement], bool]]:
    """The statements after ``try: batch = next(it) except StopIteration: it = iter(loader);
    batch = next(it)`` (the batch is the loader's either way): every handler binds the same
    target from a pinned loader last, or leaves the block. None when the idiom differs."""
    try_node, outer = path[-3], path[-4]
    assert isinstance(try_node, cst.Try)
    if try_node.orelse is not None or try_node.finalbody is not None or not try_node.handlers:
        return None
    custom = False
    for handler in try_node.handlers:
        body = _body(handler.body)
        if not body or not isinstance(body[-1], cst.SimpleStatementLine):
            return None
        last = body[-1].body[-1]
        if isinstance(last, (cst.Break, cst.Continue, cst.Return, cst.Raise)):
            continue
        if not (
            isinstance(last, cst.Assign)
            and len(body[-1].body) == 1
            and len(last.targets) == 1
            and last.targets[0].target.deep_equals(assign.targets[0].target)
            and isinstance(last.value, cst.Call)
            and isinstance(last.value.func, cst.Name)
            and last.value.func.value == "next"
            and len(last.value.args) == 1
        ):
            return None
        arg = last.value.args[0]
        if arg.star or arg.keyword is not None:
            return None
        last_path = path[:-3] + (try_node, handler, handler.body, body[-1])
        handler_custom = _pinned_loader(resolver, arg.value, last_path + (last, last.value, arg))
        if handler_custom is None:
            return None
        custom = custom or handler_custom
    statements = _body(outer)
    index = next((i for i, s in enumerate(statements) if s is try_node), None)
    if index is None:
        return None
    return statements[index + 1:], custom


def _body(node: cst.CSTNode) -> Sequence[cst.BaseStatement]:
    if isinstance(node, (cst.IndentedBlock, cst.Module)):
        return node.body  # type: ignore[return-value]
    if isinstance(node, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=node.body)]
    return ()


def _bind(target: cst.BaseExpression, kind: str, pinned: Pinned) -> None:
    """Mark the names ``target`` binds as holding (parts of) a pinned batch."""
    if isinstance(target, cst.Name):
        pinned[target.value] = kind
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bind(element.value, ELEMENT, pinned)
    elif isinstance(target, cst.StarredElement):
        _bind(target.value, ELEMENT, pinned)


def assigned_names(node: cst.CSTNode) -> List[str]:
    """Every name a statement binds, nested blocks included (not inside nested scopes)."""
    names: List[str] = []
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            names.append(current.name.value)
            continue
        if isinstance(current, cst.Lambda):
            continue
        if isinstance(current, cst.Assign):
            for target in current.targets:
                names.extend(target_names(target.target))
        elif isinstance(current, (cst.AnnAssign, cst.AugAssign, cst.For)):
            names.extend(target_names(current.target))
        elif isinstance(current, cst.NamedExpr):
            names.extend(target_names(current.target))
        elif isinstance(current, cst.WithItem) and current.asname is not None:
            names.extend(target_names(current.asname.name))
        elif isinstance(current, cst.Del):
            names.extend(target_names(current.target))
        elif isinstance(current, cst.ExceptHandler) and current.name is not None:
            names.extend(target_names(current.name.name))
        elif isinstance(current, (cst.Import, cst.ImportFrom)) and not isinstance(current.names, cst.ImportStar):
            for alias in current.names:
                name = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(name, cst.Name):
                    names.append(name.value)
        stack.extend(_child_nodes(current))
    return names


def _forget(pinned: Pinned, names: List[str]) -> None:
    for name in names:
        pinned.pop(name, None)


class PinnedBatchScanner:
    """Walks statements in order, tracking pinned names and recording blocking copies."""

    def __init__(
        self,
        context: FileContext,
        scope: Scope,
        custom_collate: bool,
        facts: "LoaderFacts",
        handoffs: Optional[Handoffs],
    ) -> None:
        self.context = context
        self.scope = scope
        self.custom_collate = custom_collate
        self.facts = facts
        self.handoffs = handoffs

    # -- statements ----------------------------------------------------------------------
    def statements(self, statements: Sequence[cst.BaseStatement], pinned: Pinned) -> None:
        for statement in statements:
            if not pinned:
                return
            self.statement(statement, pinned)

    def statement(self, node: cst.BaseStatement, pinned: Pinned) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, pinned)
        elif isinstance(node, cst.If):
            self.expr(node.test, pinned)
            self.statements(_body(node.body), dict(pinned))
            if isinstance(node.orelse, cst.If):
                self.statement(node.orelse, dict(pinned))
            elif node.orelse is not None:
                self.statements(_body(node.orelse.body), dict(pinned))
            _forget(pinned, assigned_names(node))
        elif isinstance(node, cst.For):
            self.expr(node.iter, pinned)
            mode = self.container(node.iter, pinned)
            inner = dict(pinned)
            _forget(inner, assigned_names(node))
            if mode is not None:
                self.bind_loop_target(node.target, mode, inner)
            self.statements(_body(node.body), inner)
            _forget(pinned, assigned_names(node))
        elif isinstance(node, cst.While):
            _forget(pinned, assigned_names(node))
            self.expr(node.test, pinned)
            self.statements(_body(node.body), dict(pinned))
        elif isinstance(node, cst.With):
            for item in node.items:
                self.expr(item.item, pinned)
            _forget(pinned, [n for item in node.items if item.asname for n in target_names(item.asname.name)])
            self.statements(_body(node.body), pinned)
        elif isinstance(node, cst.Try):
            self.statements(_body(node.body), dict(pinned))
            _forget(pinned, assigned_names(node))
        else:  # def, class, match, try*: not followed
            _forget(pinned, assigned_names(node))

    def small(self, node: cst.BaseSmallStatement, pinned: Pinned) -> None:
        if isinstance(node, cst.Assign):
            self.expr(node.value, pinned)
            bound = [self.derive(node.value, t.target, pinned) for t in node.targets]
            for target in node.targets:
                _forget(pinned, list(target_names(target.target)))
            for marks in bound:
                pinned.update(marks)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.expr(node.value, pinned)
                marks = self.derive(node.value, node.target, pinned)
            else:
                marks = {}
            _forget(pinned, list(target_names(node.target)))
            pinned.update(marks)
        elif isinstance(node, cst.AugAssign):
            self.expr(node.value, pinned)
            _forget(pinned, list(target_names(node.target)))
        elif isinstance(node, cst.Del):
            _forget(pinned, list(target_names(node.target)))
        elif isinstance(node, (cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)):
            _forget(pinned, assigned_names(node))
        else:
            self.expr(node, pinned)

    def derive(self, value: cst.BaseExpression, target: cst.BaseExpression, pinned: Pinned) -> Pinned:
        """The names ``target = value`` leaves pinned (an alias, an unpacking, an index)."""
        marks: Pinned = {}
        if isinstance(value, (cst.Tuple, cst.List)) and isinstance(target, (cst.Tuple, cst.List)):
            if len(value.elements) == len(target.elements) and not any(
                isinstance(e, cst.StarredElement) for e in (*value.elements, *target.elements)
            ):
                for v, t in zip(value.elements, target.elements):
                    marks.update(self.derive(v.value, t.value, pinned))
            return marks
        kind = self.kind(value, pinned)
        if kind is not None:
            _bind(target, kind, marks)
        return marks

    # -- expressions ---------------------------------------------------------------------
    def kind(self, expr: cst.BaseExpression, pinned: Pinned) -> Optional[str]:
        """WHOLE/ELEMENT when ``expr`` is a pinned name or indexes into one."""
        if isinstance(expr, cst.Name):
            return pinned.get(expr.value)
        base = expr
        while isinstance(base, cst.Subscript):
            base = base.value
        if base is not expr and isinstance(base, cst.Name) and base.value in pinned:
            return ELEMENT
        return None

    def container(self, expr: cst.BaseExpression, pinned: Pinned) -> Optional[str]:
        """How iterating ``expr`` yields parts of a pinned batch: "items", "values" or None."""
        if self.kind(expr, pinned) is not None:
            return "values"
        if (
            isinstance(expr, cst.Call)
            and not expr.args
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("items", "values")
            and self.kind(expr.func.value, pinned) is not None
        ):
            return expr.func.attr.value
        return None

    def bind_loop_target(self, target: cst.BaseExpression, mode: str, pinned: Pinned) -> None:
        if mode == "items":
            if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                _bind(target.elements[1].value, ELEMENT, pinned)
        else:
            _bind(target, ELEMENT, pinned)

    def expr(self, node: cst.CSTNode, pinned: Pinned) -> None:
        if not pinned or isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(node, _COMPREHENSIONS):
            self.comprehension(node, pinned)
            return
        if isinstance(node, cst.Call):
            self.check(node, pinned)
            self.hand_off(node, pinned)
        for child in _child_nodes(node):
            self.expr(child, pinned)

    def comprehension(self, node: cst.CSTNode, pinned: Pinned) -> None:
        inner = dict(pinned)
        for_in: Optional[cst.CompFor] = node.for_in  # type: ignore[attr-defined]
        outer = True
        while for_in is not None:
            scope = pinned if outer else inner
            self.expr(for_in.iter, scope)
            mode = self.container(for_in.iter, scope)
            _forget(inner, list(target_names(for_in.target)))
            if mode is not None:
                self.bind_loop_target(for_in.target, mode, inner)
            for condition in for_in.ifs:
                self.expr(condition.test, inner)
            for_in = for_in.inner_for_in
            outer = False
        if isinstance(node, cst.DictComp):
            self.expr(node.key, inner)
            self.expr(node.value, inner)
        else:
            self.expr(node.elt, inner)  # type: ignore[attr-defined]

    def hand_off(self, call: cst.Call, pinned: Pinned) -> None:
        """Note the pinned names a call passes on, for the callee's parameters."""
        if self.handoffs is None:
            return
        for arg in call.args:
            if not arg.star and isinstance(arg.value, cst.Name) and arg.value.value in pinned:
                entry = (arg, pinned[arg.value.value], self.custom_collate)
                self.handoffs.setdefault(id(call), []).append(entry)

    def check(self, call: cst.Call, pinned: Pinned) -> None:
        """Record ``call`` if it is a blocking host-to-device copy of a pinned batch."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return
        kind = self.kind(func.value, pinned)
        if kind is None or (kind == WHOLE and self.custom_collate):
            return
        if any(arg.star for arg in call.args):
            return
        positional = [arg for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
        flag = keywords.get("non_blocking")
        if flag is not None and literal_value(flag.value, self.scope.lookup_value) is not False:
            return
        # `.cuda(device, non_blocking)` and `.to(device, dtype, non_blocking)` pass the flag
        # by position; `.to(device, dtype)` does not.
        if len(positional) > (2 if func.attr.value == "to" else 1):
            return
        if func.attr.value == "to":
            if "device" in keywords:
                pass
            elif not positional or not self.device_like(positional[0].value):
                return
        self.facts.blocking_copies[id(call)] = call

    def device_like(self, expr: cst.BaseExpression) -> bool:
        """Whether ``.to(expr)`` moves to a device (not a dtype, not another tensor)."""
        value = literal_value(expr, self.scope.lookup_value)
        if isinstance(value, str):
            return value.startswith("cuda")
        if isinstance(value, int) and not isinstance(value, bool):
            return True
        if isinstance(expr, cst.FormattedString):  # f"cuda:{rank}"
            first = expr.parts[0] if expr.parts else None
            return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda")
        if isinstance(expr, cst.Call):
            return self.context.qualname(expr.func, self.scope) == "torch.device"
        if isinstance(expr, (cst.Name, cst.Attribute)):
            qualname = self.context.qualname(expr, self.scope)
            if qualname is not None and qualname.startswith("torch."):
                return False  # torch.float16 and friends
            last = (expr.value if isinstance(expr, cst.Name) else expr.attr.value).lower()
            return last == "dev" or any(word in last for word in _DEVICE_WORDS)
        return False
