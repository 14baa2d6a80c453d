"""What the project's callers of a function say about its evaluation loops (TPF203).

Two facts need the callers in other modules (``ctx.project``): a function that every
project caller runs under no-grad needs no ``no_grad`` of its own (``evaluate(model,
loader)`` called inside ``with torch.no_grad():`` in ``train.py``); and a helper that does
not look like evaluation is one when every caller put the model it passes in eval mode
first (``model.eval()`` then ``run_batches(model, loader)`` in ``infer.py``).
"""

from __future__ import annotations

import ast
import re
import unicodedata
from typing import FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from ...context import FileContext
from ...project import ProjectIndex, register_summarizer
from ...project.forms import Call, Ref
from ...project.resolution import Definition
from ...project.summary import CallSite
from ...project.call_values import own_path
from ...project.method_callers import MAX_SITES, NN_MODULE_METHODS
from .evaluating_methods import evaluating_methods

_NO_GRAD = re.compile(r"no_?grad|inference_mode|set_grad_enabled", re.IGNORECASE)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _definition(context: FileContext, function: cst.FunctionDef, owner: Optional[str]) -> Optional[Definition]:
    index = context.project
    if index is None:
        return None
    name = function.name.value if owner is None else f"{owner}.{function.name.value}"
    found = index.resolve(own_path(context), name)
    return found if found is not None and found.kind in ("function", "method") else None


def _sites(index: ProjectIndex, definition: Definition) -> Optional[List[Tuple[str, CallSite]]]:
    sites = index.callers(definition)
    if sites is not None:
        return list(sites)
    if definition.kind == "method":
        # Every ``<anything>.name(...)`` call: more than the real callers, so "all of them
        # under no_grad" holds for the real ones too.
        return list(index.method_calls(definition.name.rsplit(".", 1)[-1]))
    return None


def _decorated_no_grad(index: ProjectIndex, path: str, caller: str) -> bool:
    if not caller:
        return False
    found = index.resolve(path, caller)
    function = None if found is None else found.function
    if function is None:
        return False
    for decorator in function.decorators:
        target = decorator.func if isinstance(decorator, Call) else decorator
        if isinstance(target, Ref) and _NO_GRAD.search(target.qualname or target.name):
            return True
    return False


def _under_no_grad(index: ProjectIndex, path: str, site: CallSite) -> bool:
    return any(_NO_GRAD.search(context) for context in site.contexts) or _decorated_no_grad(index, path, site.caller)


def callers_all_no_grad(context: FileContext, function: cst.FunctionDef, owner: Optional[str]) -> bool:
    """Every call of the function in the project runs under no-grad (a ``with`` around it
    or a no-grad decorator on the calling function), and there is at least one."""
    index = context.project
    definition = _definition(context, function, owner)
    if index is None or definition is None:
        return False
    sites = _sites(index, definition)
    return bool(sites) and all(site.called and _under_no_grad(index, path, site) for path, site in sites)


def callers_evaluate(context: FileContext, function: cst.FunctionDef, owner: Optional[str], models: Sequence[str], layers: FrozenSet[str] = frozenset()) -> bool:
    """Every project call of a module-level function passes, for one of the parameters
    ``models`` its loop calls, a name that the caller put in eval mode before the call,
    outside no-grad; and there is at least one such call. A method's loop calls ``layers``
    of its own (``self.gen``)."""
    index = context.project
    definition = _definition(context, function, owner)
    if index is None or definition is None:
        return False
    if owner is not None:
        return list(models) == ["self"] and method_evaluated_by_callers(index, definition, layers)
    return definition_evaluated_by_callers(index, definition, models)


def method_evaluated_by_callers(index: ProjectIndex, definition: Definition, layers: Optional[FrozenSet[str]] = None) -> bool:
    """Every ``<receiver>.method(...)`` call in the project (more than its real callers, so
    what holds for all holds for those) is on a plain name that the calling function put in
    eval mode first, or a parameter of a module-level caller whose every project caller
    passes a model in eval mode (Show-Attend: ``decoder.eval()``, then ``visualize(encoder,
    decoder)`` calling ``decoder.caption(...)``); the class is an ``nn.Module`` and nothing
    lets the method escape (``fn = m.caption``, ``getattr(m, "caption")``). Callers are
    found by scanning the modules' texts, cheapest test first, in a project of any size: a
    text count of the calls (more than ``MAX_SITES``: no), the calls themselves, each
    receiver (the first not evaluated ends it), and only then every text for an escape.
    A call of another method of the class that puts the loop's ``layers`` (None: some) in
    eval mode and trains nothing (``evaluating_methods``) counts as ``.eval()``, also on an
    object that is no ``nn.Module`` (a GAN holding its generator)."""
    owner, _, method = definition.name.rpartition(".")
    klass = Definition("class", definition.path, owner, klass=definition.klass)
    if method.startswith("__") or method in NN_MODULE_METHODS or definition.klass is None:
        return False
    module = index.is_nn_module(klass)
    evaluators = evaluating_methods(index, definition, layers) if layers is None or layers else frozenset()
    if not module and not evaluators:
        return False
    # The texts that spell the method, noted with the word: an edit elsewhere leaves it valid.
    texts = [text for path in sorted(index.module_paths()) if (text := index.text_naming(path, method))]
    if sum(text.count(f".{method}(") for text in texts) > MAX_SITES:
        return False  # at least that many calls (spaced spellings only add to them)
    sites = index.method_calls(method)
    if not sites or len(sites) > MAX_SITES or not all(_receiver_evaluated(index, path, site, method, evaluators, module) for path, site in sites):
        return False
    escape = re.compile(rf"\.\s*{method}\b(?!\s*\()|[\"']{method}[\"']")
    return not any(escape.search(text) for text in texts)


def _receiver_evaluated(index: ProjectIndex, path: str, site: CallSite, method: str, evaluators: FrozenSet[str] = frozenset(), module: bool = True) -> bool:
    receiver = site.callee[: -len(method) - 1]
    if not site.called or not receiver.isidentifier() or receiver in ("self", "cls") or _under_no_grad(index, path, site):
        return False
    if _last_mode(index, path, site, receiver, evaluators, module) == "eval":
        return True
    if not module:
        return False  # handed on: only a module's `.eval()` is followed to its callers
    caller = index.resolve(path, site.caller) if site.caller and "." not in site.caller else None
    if caller is None or caller.kind != "function" or caller.function is None:
        return False
    return any(p.name == receiver for p in caller.function.params) and definition_evaluated_by_callers(index, caller, [receiver])


_MAX_HANDS = 2  # a model handed on through at most this many callers' own parameters


def definition_evaluated_by_callers(index: ProjectIndex, definition: Definition, models: Sequence[str], depth: int = 0) -> bool:
    """``callers_evaluate`` for a definition found in the index (the rule's ``ast`` screen
    asks it before LibCST sees the file). More ``models`` can only make it true more often.
    A caller that passes a parameter of its own it never switched to a mode (``lfw_test(model,
    ...)`` calling ``get_features(model, paths)``) evaluates when its own callers do, at most
    ``_MAX_HANDS`` callers up."""
    if definition.kind != "function" or definition.function is None:
        return False
    params = [p for p in definition.function.params if p.kind == "positional"]

    def evaluates(path: str, site: CallSite) -> bool:
        if not site.called or site.arguments is None or site.star or site.dstar or _under_no_grad(index, path, site):
            return False
        names = []
        for model in models:
            position = next((i for i, p in enumerate(params) if p.name == model), None)
            value = site.arguments.keyword(model)
            if value is None and position is not None and position < len(site.arguments.args):
                value = site.arguments.args[position]
            if isinstance(value, Ref) and "." not in value.name:
                names.append(value.name)
        return any(_evaluated_at(index, path, site, name, depth) for name in names)

    # ``callers`` reads the whole import graph: ask it only when some module holds a call
    # that could pass (any call it gives is one of these, so none passing answers False).
    if not any(evaluates(path, site) for path, site in _possible_sites(index, definition)):
        return False
    sites = index.callers(definition)
    return bool(sites) and all(evaluates(path, site) for path, site in sites)


# ``.eval`` / ``.train`` as an attribute, with what Python allows between the dot and the
# name (a comment must end its line: no backtracking over runs of ``#``).
_MODE_ATTRIBUTE = re.compile(r"\.(?:\s|\\|#[^\r\n]*[\r\n])*(?:eval|train)\b")


_WORD = re.compile(r"\w+")


def _possible_sites(index: ProjectIndex, definition: Definition) -> Iterator[Tuple[str, CallSite]]:
    """The uses of the definition's name (what ``callers`` filters by resolving them) in the
    modules whose text names it as a word and calls ``.eval`` or ``.train`` (where
    ``_eval_before`` can hold), and in its own module (a caller there may hand on a model
    its callers evaluate), found without the import graph."""
    name = definition.name.split(".")[-1]
    for path in sorted(index.module_paths()):
        if path == definition.path or name in _mode_words(index, path):
            for site in index.uses(path):
                if name in site.callee.split("."):
                    yield path, site
    # Uses a star import may bind (``from helpers import *``), in modules that switch modes.
    yield from index.star_uses(name, definition.path, only=lambda path: name in _mode_words(index, path))


def _mode_words(index: ProjectIndex, path: str) -> FrozenSet[str]:
    """The words of a module that calls ``.eval`` or ``.train`` (none for another), from its
    summary (``MODE_WORDS``): asked of every module, for each helper, without its text."""
    return frozenset(index.summary(path).extra(MODE_WORDS) or ())


MODE_WORDS = "training.mode_words"


def mode_words(tree: object, source: str) -> Optional[Tuple[str, ...]]:
    """The summariser of ``MODE_WORDS``: the words of a module whose text calls ``.eval`` or
    ``.train`` (about 2% of torch's modules), None for the others. A text that is not
    ASCII is read in NFKC form, the form Python gives its identifiers."""
    code = source if source.isascii() else unicodedata.normalize("NFKC", source)
    if ("eval" not in code and "train" not in code) or _MODE_ATTRIBUTE.search(code) is None:
        return None
    return tuple(sorted(set(_WORD.findall(code))))


register_summarizer(MODE_WORDS, mode_words)


def _evaluated_at(index: ProjectIndex, path: str, site: CallSite, name: str, depth: int) -> bool:
    """``name`` is in eval mode at the call: put there before it in the calling function, or
    a parameter of a module-level caller that switches it to no mode and whose own callers
    all pass a model in eval mode."""
    mode = _last_mode(index, path, site, name)
    if mode != "none":
        return mode == "eval"
    if depth >= _MAX_HANDS or not site.caller or "." in site.caller:
        return False
    caller = index.resolve(path, site.caller)
    if caller is None or caller.kind != "function" or caller.function is None:
        return False
    return any(p.name == name for p in caller.function.params) and definition_evaluated_by_callers(index, caller, [name], depth + 1)


def _eval_before(index: ProjectIndex, path: str, site: CallSite, name: str) -> bool:
    """The last mode call on ``name`` before the call site, in the calling function (or at
    module level, ``if __name__ == "__main__":`` included), is an unconditional
    ``name.eval()`` / ``name.train(False)``."""
    return _last_mode(index, path, site, name) == "eval"


def _last_mode(index: ProjectIndex, path: str, site: CallSite, name: str, evaluators: FrozenSet[str] = frozenset(), module: bool = True) -> str:
    """``_eval_before``'s reading: ``eval``, ``none`` (no mode call on ``name`` in the site's
    frame), or anything else (train, conditional, unknown, unreadable). A mode call counts
    when it runs whenever the call does: in every block around it that also holds the call
    (``model.eval()`` then ``lfw_test(model)`` in one epoch loop's body), and no mode call
    after the call inside a loop around both may run before the loop's next call."""
    text = index.text(path)
    if text is None:
        return "unreadable"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "unreadable"
    frame: Optional[ast.AST] = tree
    if site.caller:
        last = site.caller.rsplit(".", 1)[-1]
        frame = next(
            (
                node
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == last
                and node.lineno <= site.line <= (node.end_lineno or node.lineno)
            ),
            None,
        )
    if frame is None:
        return "unreadable"
    # (line, column, mode, the branches it stands in); the branches of the call itself.
    modes: List[Tuple[int, int, str, Tuple[Tuple[int, str], ...]]] = []
    at: List[Tuple[Tuple[int, str], ...]] = []

    def visit(node: ast.AST, branches: Tuple[Tuple[int, str], ...]) -> None:
        for field, value in ast.iter_fields(node):
            inner = branches
            if isinstance(node, _BRANCHING) and field not in ("test", "iter", "target") and not _main_guard(node):
                inner = (*branches, (id(node), field))
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, ast.AST) or isinstance(child, _SCOPES):
                    continue
                mode = _mode(child, name, evaluators, module)
                if mode is not None:
                    modes.append((child.lineno, child.col_offset, mode, inner))  # type: ignore[attr-defined]
                elif isinstance(child, ast.Call) and child.lineno == site.line and not at:  # type: ignore[attr-defined]
                    at.append(inner)
                visit(child, inner)

    visit(frame, ())
    if not at:
        return "unreadable"
    before = [m for m in modes if m[0] < site.line]
    if not before:
        return "later" if modes else "none"  # a mode call after it may run before a next call
    line, _, mode, branches = max(before)
    if branches != at[0][: len(branches)]:
        return "conditional"
    loops = {b for b in at[0] if isinstance(b, tuple) and b[1] == "body" and b[0] in _loop_ids(frame)}
    if any(m[0] >= site.line and loops & set(m[3]) and not loops <= set(branches) for m in modes):
        return "conditional"  # switched back after the call, before the loop's next round
    return mode


_BRANCHING = (ast.If, ast.IfExp, ast.ExceptHandler, ast.For, ast.AsyncFor, ast.While, ast.BoolOp)


def _loop_ids(frame: ast.AST) -> FrozenSet[int]:
    return frozenset(id(n) for n in ast.walk(frame) if isinstance(n, (ast.For, ast.AsyncFor, ast.While)))


def _main_guard(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _mode(node: ast.AST, name: str, evaluators: FrozenSet[str] = frozenset(), module: bool = True) -> Optional[str]:
    """The mode a call sets on ``name``: ``name.eval()``, ``name.train(...)``, or a call of
    one of ``evaluators`` (a method that sets eval mode); ``eval`` of an object that is no
    module is its own method: not known."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    receiver = node.func.value
    if not (isinstance(receiver, ast.Name) and receiver.id == name):
        return None
    if node.func.attr in evaluators:
        return "eval"
    if node.func.attr == "eval":
        return "eval" if not node.args and not node.keywords and module else "unknown"
    if node.func.attr == "train":
        values = [*node.args, *(k.value for k in node.keywords)]
        if values and isinstance(values[0], ast.Constant) and values[0].value is False:
            return "eval"
        return "train"
    return None
