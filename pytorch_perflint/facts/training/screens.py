"""Second-stage pre-screens on Python's ``ast``, for rules whose trigger words are common.

``ast.parse`` is about 13 times cheaper than the LibCST parse, so a file that passed a
rule's text pre-screen is checked here for the rough shape of a finding before LibCST sees
it. Every screen over-approximates what its rule reports: the LibCST visitors stay the
detectors, these only spare them files that cannot hold a finding.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import string
from typing import Callable, FrozenSet, Iterator, Optional, Set, Union

from ...analysis.ast_index import (
    LOOP_TYPES,
    ast_children,
    ast_dotted,
    enclosing_functions,
    per_tree,
    tree_index,
    walk_ast,
)
from .classifiers import BACKWARD_ATTRS, is_optimizer_name, options_like
from .closures import closures_calling
from .eval_names import FRAMEWORK_HOOKS, GRAD_ATTRS, called_names, is_eval_function_name, needs_grad_name
from .no_grad import MODEL_NAME
from .step_names import STEP_WORDS as _STEP_WORDS, last_name as _last_name
from .trainer_calls import TRAIN_WITH_DATA

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Assignment = Union[ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr]


_NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode", re.IGNORECASE)

# The text screen's words: one ``in`` each, and a regex only where one is there (a pattern
# that starts with ``\w`` or ``\b`` is tried at every position of every file).
_OPTIMIZE_CALL = re.compile(r"\.optimi[sz]e(?:_\w*)?\(")
# ``name = SomeClass(...)`` / ``name = mod.SomeClass(...)`` at the start of a line (of
# "\n" + the text: a literal first character is searched for, ``^`` is tried everywhere).
_BUILT_NAME = re.compile(r"\n[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:\w+\.)*[A-Z]")


_IDENTIFIER_START = frozenset(string.ascii_letters + "_")


def _is_word_character(character: str) -> bool:
    """What ``\\w`` matches."""
    return character.isalnum() or character == "_"


def _after_word(source: str, needle: str) -> bool:
    """``needle`` right after a word character somewhere (the regex ``\\w`` + needle)."""
    at = source.find(needle, 1)
    while at != -1:
        if _is_word_character(source[at - 1]):
            return True
        at = source.find(needle, at + 1)
    return False


def _update_receivers(source: str) -> Set[str]:
    """The names ``x`` of the ``x.update(`` calls (a whole word that starts with an ASCII
    letter or ``_``: what ``\\b[A-Za-z_]\\w*`` before ``.update(`` finds)."""
    out: Set[str] = set()
    at = source.find(".update(")
    while at != -1:
        start = at
        while start > 0 and _is_word_character(source[start - 1]):
            start -= 1
        if start < at and source[start] in _IDENTIFIER_START:
            out.add(source[start:at])
        at = source.find(".update(", at + 1)
    return out


@functools.lru_cache(maxsize=1)  # TPF202's and TPF205's text screens of one file
def could_train_text(source: str) -> bool:
    """The text screen of the rules that need a training loop (TPF202, TPF205): a loop
    that trains, or a call of what may be a step function of another module:
    ``train_step(``, ``.learn(``, ``.optimize_parameters(``, ``.train_batch(``, or
    ``x.update(`` where ``x = SomeClass(...)`` (not ``dict.update``), ``x.train(data)``."""
    if ".backward(" in source or ".step(" in source or ".learn(" in source:
        return True
    if _after_word(source, "_step(") or _after_word(source, "_batch(") or "trainstep(" in source or "trainStep(" in source:
        return True
    if (".optimi" in source and _OPTIMIZE_CALL.search(source)) or (".train(" in source and TRAIN_WITH_DATA.search(source)):
        return True
    if ".update(" not in source:
        return False
    receivers = _update_receivers(source)
    return bool(receivers) and not receivers.isdisjoint(_BUILT_NAME.findall("\n" + source))

def _own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``root`` that belong to its own frame: not those of nested functions
    or lambdas (class bodies belong to the enclosing frame, as in the LibCST analysis)."""
    stack = list(ast_children(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast_children(node))


def _is_no_grad(expr: ast.AST) -> bool:
    """Mirrors ``training.is_no_grad_expr`` by spelling: ``no_grad``/``inference_mode``
    names (not ``inference_mode(False)``), ``set_grad_enabled`` with a value not ``True``."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = ast_dotted(target)
    first = expr.args[0] if isinstance(expr, ast.Call) and expr.args else None
    if name.rsplit(".", 1)[-1] == "set_grad_enabled":
        return first is not None and not (isinstance(first, ast.Constant) and first.value is True)
    if name.rsplit(".", 1)[-1] == "inference_mode" and isinstance(first, ast.Constant) and first.value is False:
        return False
    return bool(_NO_GRAD_WORDS.search(name))


def _eval_owner(node: ast.AST) -> str:
    """``m`` for ``m.eval()`` or ``m.train(False)``; else an empty string."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return ""
    values = [*node.args, *(k.value for k in node.keywords)]
    if node.func.attr == "eval" and not values:
        return ast_dotted(node.func.value)
    if node.func.attr == "train" and values and isinstance(values[0], ast.Constant) and values[0].value is False:
        return ast_dotted(node.func.value)
    return ""


def _runs_backward(function: Function) -> bool:
    """Mirrors ``training._runs_backward``: the body calls ``.backward()`` or touches a
    gradient attribute anywhere (nested functions included)."""
    for statement in function.body:
        for node in walk_ast(statement):
            if isinstance(node, ast.Attribute) and node.attr in GRAD_ATTRS:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_ATTRS:
                return True
    return False


def _forward_target(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return ast_dotted(func.value)
    return ast_dotted(func)


def _loop_qualifies(loop: ast.AST, owners: Set[str], eval_named: bool, layers: FrozenSet[str] = frozenset()) -> bool:
    """The loop calls a model in eval mode (or, in a function named like evaluation, a callee
    named like a model) outside a no-grad block, and no name in it says it needs gradients."""
    forward = False
    stack = [(child, False) for child in ast_children(loop)]
    while stack:
        node, no_grad = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        # `opt` may be the options (the value engine decides): no reason to drop the loop here.
        if isinstance(node, ast.Attribute) and needs_grad_name(node.attr) and not options_like(node.attr):
            return False
        if isinstance(node, ast.Name) and needs_grad_name(node.id) and not options_like(node.id):
            return False
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_no_grad(i.context_expr) for i in node.items):
            no_grad = True
        elif isinstance(node, ast.Call) and not no_grad and not forward:
            target = _forward_target(node)
            forward = bool(target) and (
                target in owners
                or eval_named
                and (MODEL_NAME.match(target.rsplit(".", 1)[-1]) is not None or target in layers)
            )
        stack.extend((child, no_grad) for child in ast_children(node))
    return forward


def _frame_could_evaluate(
    frame: ast.AST, eval_named: bool, models: FrozenSet[str] = frozenset(), layers: FrozenSet[str] = frozenset()
) -> bool:
    """Some loop of this frame outside a no-grad ``with`` qualifies (``models``: parameters
    named like a model, which callers may have put in eval mode; a closure calling one)."""
    owners = (found := {owner for owner in map(_eval_owner, _own_nodes(frame)) if owner} | models) | closures_calling(frame, found)
    if not owners and not eval_named:
        return False
    stack = list(ast_children(frame))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_no_grad(i.context_expr) for i in node.items):
            continue
        if isinstance(node, LOOP_TYPES) and _loop_qualifies(node, owners, eval_named, layers):
            return True
        stack.extend(ast_children(node))
    return False


def could_evaluate_without_no_grad(tree: ast.Module, evaluated_by_callers: Optional[Callable[[str, FrozenSet[str]], bool]] = None) -> bool:
    """What TPF203's LibCST analysis reports, over-approximated: outside framework hooks, a
    frame (the module or a function not decorated no-grad) whose loop
    calls a model it put in eval mode (or, when the function is named like evaluation and
    never runs backward, a callee named like a model) outside a no-grad ``with``, and nothing
    in that loop needs gradients.

    A function that neither is named like evaluation nor calls ``.eval()``/``.train()`` can
    only qualify through a model parameter its loop calls, which the rule reports when the
    function is module-level and every project caller put that model in eval mode first:
    ``evaluated_by_callers(name, model parameters)`` answers that (with the project index);
    None keeps every module-level one."""
    index = tree_index(tree)
    top_level = {id(node) for node in tree.body}
    eval_calls = [
        call
        for call in index.calls
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("eval", "train") and _eval_owner(call)
    ]
    eval_lines = sorted(call.lineno for call in eval_calls)
    called = called_names(tree)
    if not eval_lines and not any(
        is_eval_function_name(f.name, f.name in called) or id(f) in top_level and any(MODEL_NAME.match(a.arg) for a in f.args.args)
        for f in index.functions
    ):
        return False  # nothing is put in eval mode, named like evaluation, or handed a model
    # What a frame's loops may call as its model: any frame's eval owners hold its own.
    owners = (found := frozenset(map(_eval_owner, eval_calls))) | closures_calling(tree, found)
    in_loops = sorted((call.lineno, target) for call in index.calls_in_loops if (target := _forward_target(call)))
    loop_lines = [line for line, _ in in_loops]

    def may_run_model(node: ast.AST, models: FrozenSet[str], eval_named: bool) -> bool:
        """Some call in a loop within the node's lines has a target ``_loop_qualifies``
        could take for the model (a frame with none cannot qualify: cheaper than its walk)."""
        window = in_loops
        if not isinstance(node, ast.Module):
            first = bisect.bisect_left(loop_lines, node.lineno)  # type: ignore[attr-defined]
            window = in_loops[first : bisect.bisect_right(loop_lines, node.end_lineno or node.lineno)]  # type: ignore[attr-defined]
        for _, target in window:
            if target in owners or target in models:
                return True
            if eval_named and (MODEL_NAME.match(target.rsplit(".", 1)[-1]) or target in _layer_attributes(tree)):
                return True
        return False

    def sets_eval_mode(node: ast.AST) -> bool:
        """Some ``m.eval()`` lies within the node's lines (cheaper than walking it)."""
        at = bisect.bisect_left(eval_lines, node.lineno)  # type: ignore[attr-defined]
        return at < len(eval_lines) and eval_lines[at] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]

    if eval_lines and may_run_model(tree, frozenset(), False) and _frame_could_evaluate(tree, eval_named=False):
        return True
    for function in index.functions:
        if function.name in FRAMEWORK_HOOKS or any(_is_no_grad(d) for d in function.decorator_list):
            continue
        named = is_eval_function_name(function.name, function.name in called)
        models = frozenset(a.arg for a in function.args.args if MODEL_NAME.match(a.arg))
        if not (named or models or sets_eval_mode(function)) or not may_run_model(function, models, named):
            continue
        if not named and not sets_eval_mode(function):
            if id(function) not in top_level:
                continue
            if evaluated_by_callers is not None and not evaluated_by_callers(function.name, models):
                continue
        eval_named = named and not _runs_backward(function)
        if (eval_named or models or sets_eval_mode(function)) and _frame_could_evaluate(
            function, eval_named, models, _layer_attributes(tree) if eval_named else frozenset()
        ):
            return True
    return False


@per_tree
def _layer_attributes(tree: ast.Module) -> FrozenSet[str]:
    """``self.x`` targets assigned a call of a capitalised name anywhere in the module (the
    LibCST analysis asks for a ``torch.nn`` layer in the class's ``__init__``; this
    over-approximates it)."""
    out: Set[str] = set()
    for node in tree_index(tree).assignments:
        value = node.value
        if isinstance(value, ast.Call) and _last_name(value.func)[:1].isupper():
            found = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(t for t in map(ast_dotted, found) if t.startswith("self."))
    return frozenset(out)


@per_tree
def _optimizer_targets(tree: ast.Module) -> FrozenSet[str]:
    """Over-approximates ``training``'s optimizer names (targets bound to a ``torch.optim``
    constructor): every dotted target assigned a call of a capitalised name."""
    targets: Set[str] = set()
    for node in tree_index(tree).assignments:
        value = node.value
        if isinstance(value, ast.Call) and _last_name(value.func)[:1].isupper():
            found = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets.update(filter(None, map(ast_dotted, found)))
    return frozenset(targets)


def _is_training_call(node: ast.AST, tree: ast.Module) -> bool:
    """``x.backward(...)``, ``backward(...)``, ``x.manual_backward(...)``, or a ``.step()``
    that ``training.is_optimizer_step`` could take for an optimizer step (its receiver named
    like an optimizer, a scaler given an optimizer, or a name bound to a constructor)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "backward"
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in BACKWARD_ATTRS:
        return True
    if func.attr != "step":
        return False
    name = _last_name(func.value)
    if not name:
        return False
    if ast_dotted(func.value) in _optimizer_targets(tree):
        return True
    if "scaler" in name.lower():
        return bool(node.args or node.keywords)
    return is_optimizer_name(name)


@per_tree  # asked by several rules' screens and questions of one file
def could_have_training_loop(tree: ast.Module) -> bool:
    """The rough shape of ``training.training_facts``' training loops: the file calls backward
    or an optimizer's ``.step()``, and some loop calls one or a function (or method) defined
    here, which may be a training-step helper. A file that only calls a function named like a
    step (``ppo_step(...)`` of another module, from a helper here) passes too."""
    if not calls_training_step(tree) and not _calls_step_by_name(tree):
        return False
    index = tree_index(tree)
    defined = {function.name for function in index.functions}
    for call in index.calls_in_loops:
        if _is_training_call(call, tree):
            return True
        func = call.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in defined:
            return True
    return False


@per_tree  # asked by several rules' screens and questions of one file
def calls_training_step(tree: ast.Module) -> bool:
    """Some call to backward, or a ``.step()`` that could be an optimizer's, in the code."""
    return any(_is_training_call(call, tree) for call in tree_index(tree).calls)


@per_tree  # asked by several rules' screens and questions of one file
def _calls_step_by_name(tree: ast.Module) -> bool:
    """Some call, anywhere, of a function named like a training step (``a2c_step(...)``,
    ``step(...)``, ``update(...)``)."""
    return any(isinstance(call.func, ast.Name) and _STEP_WORDS.search(call.func.id) for call in tree_index(tree).calls)


_SYNC_ATTRS = frozenset({"item", "cpu", "tolist", "synchronize"})


def step_function_syncs(tree: ast.Module) -> bool:
    """Some function runs backward or an optimizer step and, within its own lines, calls
    a method that may sync (``.item()``, ``.cpu()``, ``.tolist()``, ``synchronize()``,
    ``.to("cpu")``): a step function that another module may call from its loop."""
    index = tree_index(tree)
    training = sorted(c.lineno for c in index.calls if _is_training_call(c, tree))
    if not training:
        return False
    syncs = sorted(
        c.lineno
        for c in index.calls
        if isinstance(c.func, ast.Attribute)
        and (c.func.attr in _SYNC_ATTRS or (c.func.attr == "to" and c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == "cpu"))
    )
    if not syncs:
        return False
    for function in index.functions:
        first, last = function.lineno, function.end_lineno or function.lineno
        if _any_within(training, first, last) and _any_within(syncs, first, last):
            return True
    return False


def _any_within(lines: "list[int]", first: int, last: int) -> bool:
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


def _is_grad(node: ast.AST) -> bool:
    """``X.grad`` or ``X.grad.data`` (``gradients.grad_attribute``)."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _passes_true(call: ast.Call) -> bool:
    """``zero_grad(True)`` / ``zero_grad(set_to_none=True)``."""
    values = [k.value for k in call.keywords if k.arg == "set_to_none"] or call.args[:1]
    return len(values) == 1 and not call.keywords[1:] and isinstance(values[0], ast.Constant) and values[0].value is True


# The zeros TPF201 reports a gradient assigned (``qualname`` in ``torch.zeros(_like)``).
_ZEROS = frozenset({"zeros", "zeros_like"})


def could_zero_grads(tree: ast.Module) -> bool:
    """What TPF201's visitors report, as far as the code shows it: a ``.zero_grad(...)``
    call that does not pass a literal ``True``; a ``.zero_()`` or ``.fill_(0)`` of a
    gradient outside a function that takes ``set_to_none`` (which implements it on
    purpose); or ``X.grad = zeros(...)`` / ``zeros_like(...)``, under any import alias."""
    index = tree_index(tree)
    zeroing: list = []
    for call in index.calls:
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        if func.attr == "zero_grad" and not _passes_true(call):
            return True
        if func.attr in ("zero_", "fill_") and _is_grad(func.value) and (func.attr == "zero_" or _could_fill_zero(call)):
            zeroing.append(call)
    if zeroing:
        for around in enclosing_functions(index.functions, zeroing):
            if not around or not _takes_set_to_none(around[-1]):
                return True
    zeros = set(_ZEROS) | {a.asname for node in index.imports for a in node.names if a.asname and a.name.rsplit(".", 1)[-1] in _ZEROS}
    return any(
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Attribute)
        and node.targets[0].attr == "grad"
        and isinstance(node.value, ast.Call)
        and _last_name(node.value.func) in zeros
        for node in index.assignments
    )


def _could_fill_zero(call: ast.Call) -> bool:
    """``fill_`` with one argument that may be a literal zero (``literal_value`` == 0)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    if len(values) != 1:
        return False
    value = values[0]
    return not isinstance(value, ast.Constant) or (type(value.value) in (int, float, bool) and value.value == 0)


def _takes_set_to_none(function: Function) -> bool:
    arguments = function.args
    return any(a.arg == "set_to_none" for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))

