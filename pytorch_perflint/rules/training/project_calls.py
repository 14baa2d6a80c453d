"""Project functions and methods that a call reaches in other modules (TPF202, and the
training loops every TPF2xx rule shares).

Training code calls its step and its helpers across files: ``trainer.train_step(x, y)``
with ``trainer = Trainer(...)`` from ``trainer.py``, ``calculate_accuracy(...)`` from
``utils.py``, ``meter.add(loss)``. This module answers, through the project index
(``ctx.project``), which project definitions a LibCST call runs and what their bodies do:
whether they run a training step (``training_reach``: one step or a loop of them, any
depth; not a function whose backward runs only in a callback it hands to ``scipy.optimize``,
as TRPO's L-BFGS critic fit: SciPy needs host values), have loops of their own, or sync with the device on every call (any depth).

Bodies are read with ``ast`` on demand and kept per index while the module's summary is
unchanged.
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.scope import Scope, dotted_name
from ...context import FileContext
from ...project import ProjectIndex
from ...project.bodies import locate
from ...project.forms import dotted, qualify
from ...project.resolution import Definition
from ...project.scan import line_text, nodes_on_lines
from ...project.summary import FunctionSummary
from .ast_syncs import is_empty_cache, is_sync, moves_new_module
from .classifiers import is_optimizer_name

MAX_DEPTH = 4
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class BodyFacts:
    """What one project function's own body does, read from its lines."""

    has_loop: bool  # a loop of its own: a train-one-epoch helper, not one step
    syncs: Tuple[int, ...]  # lines of device-to-host syncs that run on every call
    calls: Tuple[str, ...]  # callees (as written) called on every call
    callees: Tuple[str, ...] = ()  # every callee (as written), conditional or in a loop too
    loop_callees: Tuple[str, ...] = ()  # the callees called inside a loop of the body
    loop_trains: bool = False  # runs backward or an optimizer step inside a loop of its own
    trains_here: bool = False  # runs backward or an optimizer step itself, not in a nested def
    host_optimised: bool = False  # hands a function it defines to ``scipy.optimize``
    empties: Tuple[int, ...] = ()  # lines of ``torch.cuda.empty_cache()`` calls that run on every call
    builds_model: bool = False  # moves a module it constructs to the device (``Net(...).cuda()``)


# ---------------------------------------------------------------------------------------
# Which LibCST call runs which project definition
# ---------------------------------------------------------------------------------------
def own_path(context: FileContext) -> str:
    """The linted file's path as the index spells paths (absolute)."""
    return os.path.abspath(str(context.path))


def bound_values(scope: Scope, name: str) -> Optional[List[cst.BaseExpression]]:
    """Every value ``name`` is assigned in the scope that binds it (None: bound otherwise,
    by a parameter, loop, ``with``, import or ``global``, or not at all)."""
    current: Optional[Scope] = scope
    first = True
    while current is not None:
        if current.is_class and not first:
            current = current.parent
            continue
        first = False
        if name in current.declared_outer or name in current.imports:
            return None
        values = current.bindings.get(name)
        if values is not None:
            if any(v is None for v in values):
                return None
            return list(values)  # type: ignore[arg-type]
        current = current.parent
    return None


def _module_name_ok(scope: Scope, head: str) -> bool:
    """``head`` means the module-level name (an import, a def or class), not a local."""
    if scope.lookup_import(head) is not None:
        return True
    current: Optional[Scope] = scope
    while current is not None and current.parent is not None:
        if not current.is_class and (head in current.bindings or head in current.declared_outer):
            return False
        current = current.parent
    return current is not None and head in current.bindings and all(v is None for v in current.bindings[head])


def _method(index: ProjectIndex, klass: Definition, name: str, depth: int = 0) -> Optional[Definition]:
    """The method ``name`` of a project class, looked up through its project bases."""
    if klass.klass is None or depth > MAX_DEPTH:
        return None
    found = klass.klass.method(name)
    if found is not None:
        return Definition("method", klass.path, f"{klass.name}.{name}", function=found, klass=klass.klass)
    for base in index.resolution.project_bases(klass):
        method = _method(index, base, name, depth + 1)
        if method is not None:
            return method
    return None


def project_callees(context: FileContext, call: cst.Call, scope: Scope) -> Tuple[Definition, ...]:
    """The project functions or methods ``call`` may run, all of them known, or ``()``.

    ``f(...)`` / ``mod.f(...)`` through imports (or a def of this module); ``obj.m(...)``
    where every assignment of ``obj`` in its scope is a call of a project class that has
    (or inherits from a project base) a method ``m``.
    """
    index = context.project
    func = call.func
    if index is None or not isinstance(func, (cst.Name, cst.Attribute)):
        return ()
    name = dotted_name(func)
    if name is None:
        return ()
    head, _, rest = name.partition(".")
    if head in ("self", "cls", "super"):
        return ()
    if _module_name_ok(scope, head):
        found = index.resolve(context.path, name)
        if found is not None and found.kind in ("function", "method") and found.function is not None:
            return (found,)
        return ()
    if not rest or "." in rest:
        return ()
    values = bound_values(scope, head)
    if not values:
        return ()
    out: List[Definition] = []
    for value in values:
        if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
            return ()
        class_name = dotted_name(value.func)
        if class_name is None or not _module_name_ok(scope, class_name.split(".")[0]):
            return ()
        klass = index.resolve(context.path, class_name)
        method = None if klass is None or klass.kind != "class" else _method(index, klass, rest)
        if method is None:
            return ()
        out.append(method)
    return tuple(out)


# ---------------------------------------------------------------------------------------
# What a project function's body does
# ---------------------------------------------------------------------------------------
def trains(function: FunctionSummary) -> bool:
    """Runs backward or an optimizer step in its own body (the summary's facts)."""
    if function.backward:
        return True
    for step in function.steps:
        last = step.receiver.rsplit(".", 1)[-1]
        if ("scaler" in last.lower() and step.args) or (last and is_optimizer_name(last)):
            return True
    return False


_FACTS: "weakref.WeakKeyDictionary[ProjectIndex, Dict[Tuple, Tuple[object, Optional[BodyFacts]]]]" = weakref.WeakKeyDictionary()


def body_facts(index: ProjectIndex, definition: Definition) -> Optional[BodyFacts]:
    """The facts of a project function's body (None when its lines cannot be read)."""
    function = definition.function
    if function is None or definition.path is None:
        return None
    summary = index.summary(definition.path)  # also records the dependency
    kept = _FACTS.setdefault(index, {})
    key = (definition.path, definition.name, function.line)
    hit = kept.get(key)
    if hit is not None and hit[0] is summary:
        return hit[1]
    text = index.text(definition.path)
    node = None if text is None else locate(line_text(text), function.line, function.end_line, function.name, False)
    facts = None if node is None else _read_body(node, dict(summary.aliases))  # type: ignore[arg-type]
    kept[key] = (summary, facts)
    return facts


def training_reach(index: ProjectIndex, definition: Definition, depth: int = 0, seen: Optional[Set[Tuple]] = None) -> Optional[bool]:
    """Whether calling a project function runs a training step, through the project
    functions it calls (any module, up to ``MAX_DEPTH`` calls away): None when it does not
    (as far as the project shows), False when it runs one step per call, True when it loops
    over steps (a train-one-epoch helper: backward or a step inside one of its loops, or a
    training callee called in a loop, at any depth). A body that cannot be read counts as
    looping, which keeps the loops around it quiet."""
    seen = set() if seen is None else seen
    function = definition.function
    if function is None or definition.key in seen:
        return None
    seen.add(definition.key)
    own = trains(function)
    facts = body_facts(index, definition)
    if facts is None:
        return True if own else None
    if own and facts.host_optimised and not facts.trains_here:
        own = False  # backward runs in a callback of a host optimiser, which needs host values
    if facts.loop_trains:
        return True
    found: Optional[bool] = False if own else None
    if depth >= MAX_DEPTH:
        return found
    for callee in facts.callees:
        target = _callee_of(index, definition, callee)
        reach = None if target is None else training_reach(index, target, depth + 1, seen)
        if reach is None:
            continue
        if reach or callee in facts.loop_callees:
            return True
        found = False
    return found


def syncs_every_call(index: ProjectIndex, definition: Definition) -> bool:
    """Whether calling the function always syncs with the device: a sync in its own body
    outside any condition or loop, or such a call of a project function that does."""
    return _every_call(index, definition, lambda facts: bool(facts.syncs), 0, set())


def empties_cache_every_call(index: ProjectIndex, definition: Definition) -> bool:
    """Whether calling the function always runs ``torch.cuda.empty_cache()`` (or another
    spelling of it): in its own body outside any condition, loop or ``except`` (a
    ``finally`` counts), or through a project function it calls that does (TPF206). Not
    a function that builds its own model (``Net(cfg).cuda()``): each call frees one
    model's memory before the next model, as a loop over models does."""
    facts = body_facts(index, definition)
    if facts is not None and facts.builds_model:
        return False
    return _every_call(index, definition, lambda facts: bool(facts.empties) and not facts.builds_model, 0, set())


def _every_call(index: ProjectIndex, definition: Definition, holds, depth: int, seen: Set[Tuple]) -> bool:
    """``holds(facts)`` of the function's body, or of a project function it calls on every
    call (any module, up to ``MAX_DEPTH`` calls away)."""
    if depth > MAX_DEPTH or definition.key in seen:
        return False
    seen.add(definition.key)
    facts = body_facts(index, definition)
    if facts is None:
        return False
    if holds(facts):
        return True
    for callee in facts.calls:
        found = _callee_of(index, definition, callee)
        if found is not None and _every_call(index, found, holds, depth + 1, seen):
            return True
    return False


def self_method(index: ProjectIndex, path: str, class_name: str, name: str) -> Optional[Definition]:
    """``self.name(...)`` in a method of the project class ``class_name`` of ``path``: the
    method it runs, looked up through the class's project bases."""
    klass = index.resolve(path, class_name)
    if klass is None or klass.kind != "class":
        return None
    found = _method(index, klass, name)
    return found if found is not None and found.function is not None else None


def _callee_of(index: ProjectIndex, caller: Definition, callee: str) -> Optional[Definition]:
    head, _, rest = callee.partition(".")
    if head == "self" and caller.kind == "method" and caller.klass is not None and rest and "." not in rest:
        klass = Definition("class", caller.path, caller.name.split(".")[0], klass=caller.klass)
        return _method(index, klass, rest)
    if head in ("self", "cls", "super") or caller.path is None:
        return None
    found = index.resolve(caller.path, callee)
    return found if found is not None and found.kind in ("function", "method") and found.function is not None else None


def _read_body(node: ast.AST, aliases: Dict[str, str]) -> BodyFacts:
    syncs: List[int] = []
    empties: List[int] = []
    builds_model = [False]
    calls: List[str] = []
    callees: List[str] = []
    loop_callees: List[str] = []
    has_loop = [False]
    loop_trains = [False]
    trains_here = [False]
    local_defs: Set[str] = set()
    handed: Set[str] = set()  # names passed to scipy.optimize (a lambda counts as local)
    in_loop = [0]

    def visit(child: ast.AST, always: bool) -> None:
        if isinstance(child, _SCOPES):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local_defs.add(child.name)
            return
        if isinstance(child, _LOOPS):
            has_loop[0] = True
            visit(child.iter if isinstance(child, (ast.For, ast.AsyncFor)) else child.test, always)
            in_loop[0] += 1
            for part in (*child.body, *child.orelse):
                visit(part, False)
            in_loop[0] -= 1
            return
        if isinstance(child, ast.Call):
            name = dotted(child.func)
            if name is not None:
                callees.append(name)
                if in_loop[0]:
                    loop_callees.append(name)
            if _trains_call(child):
                trains_here[0] = True
                loop_trains[0] |= bool(in_loop[0])
            if name is not None and (qualify(name, aliases) or "").startswith("scipy.optimize."):
                for arg in (*child.args, *(k.value for k in child.keywords)):
                    handed.add(arg.id if isinstance(arg, ast.Name) else "<lambda>" if isinstance(arg, ast.Lambda) else "")
        if isinstance(child, ast.If):
            visit(child.test, always)
            block(child.body, False)
            block(child.orelse, False)
            return
        if isinstance(child, ast.IfExp):
            visit(child.test, always)
            visit(child.body, False)
            visit(child.orelse, False)
            return
        if isinstance(child, ast.BoolOp):
            visit(child.values[0], always)
            for value in child.values[1:]:
                visit(value, False)
            return
        if isinstance(child, ast.Try) or type(child).__name__ == "TryStar":
            block(child.body, always)  # type: ignore[attr-defined]
            for handler in child.handlers:  # type: ignore[attr-defined]
                block(handler.body, False)
            block(child.orelse, False)  # type: ignore[attr-defined]
            block(child.finalbody, always)  # type: ignore[attr-defined]
            return
        if isinstance(child, _COMPREHENSIONS) or type(child).__name__ == "Match":
            return  # may run no element / no case: never every call
        if isinstance(child, (ast.With, ast.AsyncWith)):
            for item in child.items:
                visit(item.context_expr, always)
            block(child.body, always)
            return
        if always and isinstance(child, ast.Call):
            if is_sync(child, aliases):
                syncs.append(child.lineno)
            if is_empty_cache(child, aliases):
                empties.append(child.lineno)
            name = dotted(child.func)
            if name is not None:
                calls.append(name)
        if isinstance(child, ast.Call) and moves_new_module(child):
            builds_model[0] = True
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild, always)

    def block(statements: Sequence[ast.stmt], always: bool) -> None:
        for statement in statements:
            visit(statement, always)
            if always and not isinstance(statement, _SCOPES) and _may_exit(statement):
                always = False  # `if not self.enabled: return` makes the rest conditional

    block(node.body, True)  # type: ignore[attr-defined]
    return BodyFacts(
        has_loop[0],
        tuple(syncs),
        tuple(dict.fromkeys(calls)),
        tuple(dict.fromkeys(callees)),
        tuple(dict.fromkeys(loop_callees)),
        loop_trains[0],
        trains_here[0],
        bool(handed & (local_defs | {"<lambda>"})),
        tuple(empties),
        builds_model[0],
    )


def _trains_call(call: ast.Call) -> bool:
    """``x.backward()`` / ``x.manual_backward()``, or ``.step()`` on a receiver named like an
    optimizer (or ``scaler.step(opt)``): the same words as ``trains`` reads in a summary."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("backward", "manual_backward"):
        return True
    if func.attr != "step":
        return False
    receiver = dotted(func.value) or ""
    last = receiver.rsplit(".", 1)[-1]
    return ("scaler" in last.lower() and bool(call.args)) or bool(last and is_optimizer_name(last))


def _may_exit(statement: ast.stmt) -> bool:
    if isinstance(statement, _EXITS):
        return False  # the statement itself: nothing after it runs anyway
    stack = list(ast.iter_child_nodes(statement))
    while stack:
        node = stack.pop()
        if isinstance(node, _EXITS):
            return True
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False


# ---------------------------------------------------------------------------------------
# Where a step function is called from
# ---------------------------------------------------------------------------------------
def loop_call_sites(index: ProjectIndex, definition: Definition) -> Optional[List[Tuple[str, int, str]]]:
    """(path, line, name as called) of the project's calls of a function or method made
    inside a loop; None when its callers cannot be known. A method's calls are those on
    ``self`` in its class, and ``obj.m(...)`` where the calling module assigns ``obj`` a
    call of the method's class somewhere."""
    short = definition.name.rsplit(".", 1)[-1]
    if definition.kind == "function":
        sites = index.callers(definition)
        if sites is None:
            return None
        return [(path, site.line, short) for path, site in sites if site.in_loop and site.called]
    if definition.kind != "method" or definition.klass is None:
        return None
    class_name = definition.klass.name
    out = []
    for path, site in index.method_calls(short):
        if not site.in_loop:
            continue
        receiver = site.callee.rsplit(".", 1)[0]
        if receiver in ("self", "cls"):
            if path == definition.path and site.caller.split(".")[0] == class_name:
                out.append((path, site.line, short))
            continue
        text = index.text(path)
        pattern = rf"^[ \t]*{re.escape(receiver)}[ \t]*=[ \t]*(?:[\w.]+\.)?{re.escape(class_name)}[ \t]*\("
        if text is not None and re.search(pattern, text, re.MULTILINE):
            out.append((path, site.line, short))
    return out


def plain_loop_call(index: ProjectIndex, path: str, line: int, name: str) -> bool:
    """Whether the call of ``name`` on ``line`` of ``path`` runs on every iteration of the
    loop around it (no condition between them) in a loop that is not a reinforcement
    learning rollout (``env.step(...)``): TPF202 then reports the call itself."""
    text = index.text(path)
    if text is None:
        return True
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node, ancestors in nodes_on_lines(tree, [line]):
        if not isinstance(node, ast.Call) or getattr(node, "lineno", 0) != line:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if called != name:
            continue
        return _plain(ancestors, node)
    return True


def _plain(ancestors: Sequence[ast.AST], node: ast.AST) -> bool:
    chain = (*ancestors, node)
    start = 0
    for index in range(len(chain) - 1):
        if isinstance(chain[index], _SCOPES[:3]):
            start = index + 1
    loop_at = None
    for index in range(start, len(chain) - 1):
        if isinstance(chain[index], _LOOPS):
            loop_at = index
            if _rollout(chain[index]):
                return False
    if loop_at is None:
        return True
    for parent, child in zip(chain[loop_at:], chain[loop_at + 1 :]):
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            return False
        if isinstance(parent, ast.BoolOp) and child is not parent.values[0]:
            return False
        if isinstance(parent, ast.ExceptHandler) or type(parent).__name__ == "match_case":
            return False
    return True


def _rollout(loop: ast.AST) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step" and node.args:
            receiver = node.func.value
            last = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
            if "env" in last.lower():
                return True
    return False
