"""Which project functions run a model forward when called (TPF206's inference loops).

An inference loop runs a model on each item, often behind a project function or method:
``audio = infer(piece, net_g=net_g)`` (a function of another module that runs
``net_g.infer(...)`` under ``torch.no_grad()``), ``mask = tracker.track(frame)`` (a method
whose object holds the model). ``runs_forward`` reads a function's ``ast`` body and says
whether a call of it runs a model forward, and whether autograd is off there. A function
with a loop of its own is not followed (as the same-module ``forward_helpers``): a helper
that loops over the data evaluates a whole set per call, not one item (a bulk validation
that retries ``validate(args)`` with smaller batches). The forward is:

* a call of something named like a model (``model(x)``, ``self.net_g(x)``,
  ``net.forward(x)``) or of an inference method of one (``net_g.infer(x)``,
  ``model.generate(x)``);
* a call of what the value engine knows to be a module (``Module``, a ``Wrapper``, an
  object of a project ``nn.Module`` class), not a loss;
* a call of project code that does (``call_values.dispatch``), at most ``MAX_DEPTH``
  calls down;
* a method decorated no-grad (``@torch.no_grad()``) of a class that puts a model it holds
  in eval mode (``self.model.eval()``): a tracker's ``track(frame)`` whose model runs
  deeper than the engine follows.

Autograd is off when the function is decorated no-grad, when the forward stands in a no-grad
``with`` of its body, or when the callee that runs it does. Answers are memoised in the
engine (their reads are the finding's cache dependencies); depth is bounded, recursion cut.

TPF203 asks a stricter question (``runs_forward_with_grad``): whether a call runs a callee the
engine knows is a torch module outside every no-grad ``with``, in a function that neither
trains nor switches autograd (an evaluation loop through ``policy.select_action(state)`` or
``get_boxes(box_model, img)``), with no names taken for models.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .autograd_values import no_grad_expr, no_grad_form
from .bodies import locate, memoised_body
from .call_values import _definition_where, dispatch, trains
from .forms import Form, FormBuilder, Ref, dotted
from .parameter_loops import bookkeeping, counts_through, draws_items, walks_pieces
from .kinds import Instance, Module, OneOf, ProjectCallable, Unknown, Wrapper, present
from .resolution import Definition
from .scopes import DEEP
from .summary import ModuleSummary
from .values import ValueEngine, Where

MAX_DEPTH = 2
# A name that starts with a verb names what is done to a model (``load_model``,
# ``self._build_net``), not the model.
_VERBS = (
    r"load|loads|save|saves|build|builds|get|gets|create|creates|make|makes|init|initialize|reset|copy|"
    r"update|freeze|unfreeze|set|prepare|wrap|export|print|eval|evaluate|train|test|run|fit|restore|convert|"
    r"define|construct|setup|check|validate|new|to|from|is|has|add|register|apply|clone|merge|average|swap|sync|"
    r"move|put|push|pull|download|upload|show|log|dump|parse|select|choose|find|resolve|replace|patch|quantize|"
    r"prune|compile|trace|script|summarize|count|describe|remove|delete|del|use|with|on|of|for|in"
)
_VERB = rf"(?!_*(?:{_VERBS})_)"
# A callable named for doing something else to a model it is handed than running it
# (``save_model(model, path)``, ``deepcopy(model)``, ``wandb.watch(model)``, ``logger.info``).
_OTHER_USE = re.compile(rf"^_*(?:{_VERBS}|deepcopy|watch|info|debug|warning|error|write\w*|print\w*|state_dict)(?:_|$)", re.IGNORECASE)
# The last name of a callee that is a model: model, net, self.model, netG, base_model. Both
# alternatives are anchored at the start, as callers ``match`` (the suffix alternative was
# written without its own ``^\w*``, so it never matched and ``base_model`` was missed).
MODEL_NAME = re.compile(rf"^(?:(?:model|net|network)\w*|{_VERB}\w*_(?:model|net))$", re.IGNORECASE)
# ... and a diffusion pipeline's parts, by their conventional names: self.unet, ema_unet, vae.
GENERATIVE_NAME = re.compile(rf"^(?:{_VERB}\w*_)?(?:unet|vae|denoiser)$", re.IGNORECASE)
# Methods of a model that run it (``net_g.infer(x)``): its forward under another name.
# A speech model's are ``tts``/``synthesize`` (``model.tts_to_file(text, speaker)``); a
# chat model's (the remote code of vision-language models) ``model.chat(tokenizer, ...)``.
INFERENCE_METHODS = re.compile(
    r"^(?:forward\w*|infer\w*|predict\w*|generate|sample|encode\w*|decode\w*|inpaint\w*|tts\w*|synthesi[sz]e\w*|chat)$"
)
# A method named for running a model on what it is handed, whatever its owner is called
# (``task.run_model(batch, infer=True)``, ``self.model_forward(x)``, ``agent.forward_net(s)``).
RUNS_MODEL = re.compile(r"^_*(?:(?:run|forward|infer|call)_(?:model|net|network)|(?:model|net|network)_(?:forward|infer|inference))$")
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class Site:
    """A call of a function's own body outside its loops: line, callee form, whether it runs
    under a no-grad ``with``, and whether its callee is named like a model (or its method)."""

    line: int
    func: Form
    off: bool
    named: bool


@dataclass(frozen=True)
class ForwardBody:
    sites: Tuple[Site, ...]
    no_grad: bool  # decorated no-grad (or an inference-mode decorator)
    looped: bool = False  # a loop (or a comprehension) of its own


def is_model_name(spelled: Optional[str], method: Optional[str] = None) -> bool:
    """``model``, ``self.net_g``, ``self.unet``; with ``method``: an inference method of one
    (``self.vae.decode(z)``), or a method named for running one (``RUNS_MODEL``). TPF206's reading only: the other rules ask ``MODEL_NAME``."""
    if spelled is not None and method is not None and RUNS_MODEL.match(method):
        return True  # `task.run_model(batch)`: the method says it runs one
    if spelled is None or (method is not None and not INFERENCE_METHODS.match(method)):
        return False
    last = spelled.rsplit(".", 1)[-1]
    return bool(MODEL_NAME.match(last) or GENERATIVE_NAME.match(last))


def named_forward(func: ast.AST) -> bool:
    """``model(x)``, ``self.net(x)``, ``net.forward(x)``, ``net_g.infer(x)``."""
    if isinstance(func, ast.Attribute) and is_model_name(dotted(func.value), func.attr):
        return True
    return is_model_name(dotted(func))


def read_forward_body(node: ast.AST, aliases: Dict[str, str], into_loops: bool = False) -> ForwardBody:
    """The calls of a function's own statements outside its loops (nested defs left out).
    ``into_loops``: inside its loops too, when every loop walks pieces of the function's
    own input (``parameter_loops.walks_pieces``); else no site at all. A loop that only
    computes numbers and lists (``parameter_loops.bookkeeping``) is no loop here."""
    builder = FormBuilder(aliases, DEEP)
    sites: List[Site] = []
    looped = [False]
    held = [False]  # some loop walks data the function is handed or holds
    arguments = getattr(node, "args", None)
    params = frozenset(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)) if arguments else frozenset()

    def visit(child: ast.AST, off: bool) -> None:
        if isinstance(child, _LOOPS):
            looped[0] = True
            if bookkeeping(child, aliases):
                return  # `T.append([np.radians(x), ...])`: numbers, no model, no project code
            if into_loops and not _loop_walks_pieces(child, node, params):
                held[0] = True
        if isinstance(child, _SCOPES) or (isinstance(child, _LOOPS) and (not into_loops or held[0])):
            return
        if isinstance(child, (ast.With, ast.AsyncWith)):
            off = off or any(no_grad_expr(item.context_expr, aliases) for item in child.items)
        if isinstance(child, ast.Call):
            sites.append(Site(child.lineno, builder.form(child.func), off, named_forward(child.func)))
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild, off)

    for statement in getattr(node, "body", ()):
        visit(statement, False)
    if held[0]:
        return ForwardBody((), False, True)
    return ForwardBody(tuple(sites), False, looped[0])


def _loop_walks_pieces(loop: ast.AST, function: ast.AST, params: frozenset) -> bool:
    """Every iterable the loop (or comprehension) walks is a piece of the input; a
    ``while`` loop only when it counts through one (``while i < n:``)."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return walks_pieces(loop.iter, function, params) and not draws_items(loop)
    if isinstance(loop, ast.While):
        return counts_through(loop, function, params)
    return all(walks_pieces(g.iter, function, params) for g in loop.generators)  # type: ignore[attr-defined]


def forward_body(engine: ValueEngine, definition: Definition) -> Optional[ForwardBody]:
    function = definition.function
    decorated = function is not None and any(no_grad_form(d) for d in function.decorators)

    def read(node: ast.AST, summary: ModuleSummary) -> ForwardBody:
        body = read_forward_body(node, dict(summary.aliases))
        return ForwardBody(body.sites, decorated, body.looped)

    return memoised_body(engine, definition, "forward-body", read)


def looped_forward_body(engine: ValueEngine, definition: Definition) -> Optional[ForwardBody]:
    """``forward_body`` read inside the function's loops too: a per-item inference routine
    that walks the pieces of its input (``tts(text)`` over the sentences of ``text``, a
    pipeline's ``__call__`` over windows of one video). No sites when a loop walks data the
    routine is handed or holds."""
    function = definition.function
    decorated = function is not None and any(no_grad_form(d) for d in function.decorators)

    def read(node: ast.AST, summary: ModuleSummary) -> ForwardBody:
        body = read_forward_body(node, dict(summary.aliases), into_loops=True)
        return ForwardBody(body.sites, decorated, body.looped)

    return memoised_body(engine, definition, "forward-body-looped", read)


def calls_module(engine: ValueEngine, func: Form, where: Where) -> bool:
    """The callee is a model as the engine knows it: a module (not a loss), a wrapper, an
    object of a project ``nn.Module`` class."""
    callee = present(engine._eval(func, where, 0))
    if type(callee) is Module:
        return not callee.loss
    if type(callee) is Wrapper:
        return True
    return type(callee) is Instance and engine.index is not None and engine.index.is_nn_module(callee.klass)


def target_runs_forward(engine: ValueEngine, definition: Definition) -> Optional[bool]:
    """What running a call's target does: the ``forward`` or ``__call__`` of a project
    ``nn.Module`` (calling the object) is a forward; else ``runs_forward``."""
    owner, _, method = definition.name.rpartition(".")
    if definition.kind == "method" and method in ("forward", "__call__") and engine.index is not None and definition.path:
        klass = engine.index.resolve(definition.path, owner)
        if klass is not None and klass.kind == "class" and engine.index.is_nn_module(klass):
            return False
    return runs_forward(engine, definition)


def runs_forward(engine: ValueEngine, definition: Definition, depth: int = 0) -> Optional[bool]:
    """Whether calling a project function (one without a loop of its own) runs a model forward: None
    when not (as far as the project shows), False when autograd is as the caller has it,
    True when it is off there."""
    function = definition.function
    if function is None or engine.index is None or depth > MAX_DEPTH:
        return None
    key = ("forward", definition.path, definition.name, function.line)
    found = engine._memoised(key, lambda: _forward(engine, definition, depth))  # type: ignore[arg-type]
    return None if isinstance(found, Unknown) else found  # type: ignore[return-value]


def _forward(engine: ValueEngine, definition: Definition, depth: int) -> Optional[bool]:
    body = forward_body(engine, definition)
    if body is not None and body.looped:
        body = looped_forward_body(engine, definition)
        if body is not None and not body.sites:
            return None
    if body is None:
        return None
    found: Optional[bool] = None
    scope = engine.scope_of(definition)
    for site in body.sites:
        where = None if scope is None else Where(definition.path, scope, site.line, Where(definition.path))
        runs: Optional[bool] = None
        if site.named or (where is not None and calls_module(engine, site.func, where)):
            runs = False
        elif where is not None and depth < MAX_DEPTH:
            targets = dispatch(engine, site.func, where, objects=False)
            reached = [runs_forward(engine, t, depth + 1) for t in targets or ()]
            runs = None if not reached or any(r is None for r in reached) else all(reached)
        if runs is not None:
            found = bool(found) or runs or site.off or body.no_grad
    if found is None and body.no_grad and definition.kind == "method" and _holds_eval_model(engine, definition):
        found = True
    return found


def _holds_eval_model(engine: ValueEngine, definition: Definition) -> bool:
    """The method's class (or a project base) puts a model it holds in eval mode:
    ``self.model.eval()`` in one of its methods."""
    index = engine.index
    owner = index.resolve(definition.path, definition.name.rpartition(".")[0]) if index and definition.path else None
    if owner is None or owner.kind != "class":
        return False
    for klass in index.resolution.lineage(owner):  # type: ignore[union-attr]
        text = index.text_naming(klass.path, ".eval()") if klass.path else None  # type: ignore[union-attr]
        if text is None or klass.klass is None:
            continue
        for method in klass.klass.methods:
            node = locate(text, method.line, method.end_line, method.name, False)
            for call in ast.walk(node) if node is not None else ():
                if isinstance(call, ast.Call) and not call.args and isinstance(call.func, ast.Attribute) and call.func.attr == "eval":
                    owner_name = dotted(call.func.value) or ""
                    if owner_name.startswith("self.") and is_model_name(owner_name):
                        return True
    return False


_NO_GRAD = re.compile(r"no_?grad|inference_mode|set_grad_enabled", re.IGNORECASE)


def runs_forward_with_grad(engine: ValueEngine, definition: Definition, depth: int = 0) -> bool:
    """TPF203's question: whether a call of the project function runs a torch module forward
    outside no-grad (a callee the engine knows is a torch module, or project code that does,
    never a function that trains or switches autograd itself)."""
    function = definition.function
    if engine.index is None or function is None or definition.path is None or depth > MAX_DEPTH:
        return False
    key = ("forward-call", definition.path, definition.name, function.line)
    return engine._memoised(key, lambda: _runs_forward_with_grad(engine, definition, depth)) is True  # type: ignore[arg-type]


def _runs_forward_with_grad(engine: ValueEngine, definition: Definition, depth: int) -> object:
    function = definition.function
    if trains(function) or any(_NO_GRAD.search(str(d)) for d in function.decorators):  # type: ignore[union-attr]
        return False
    calls = _grad_calls(engine, definition)
    if calls is None:
        return False
    for line, func in calls:
        where = _definition_where(engine, definition, line)
        if where is None:
            continue
        callee = present(engine._eval(func, where, 0))
        if engine.models.is_torch_module(callee) is True:
            return True
        if isinstance(callee, Unknown) or type(callee) in (Instance, OneOf, ProjectCallable):
            targets = dispatch(engine, func, where, objects=False) or ()
            if any(runs_forward_with_grad(engine, target, depth + 1) for target in targets):
                return True
    return False


def _grad_calls(engine: ValueEngine, definition: Definition):
    """(line, callee form) of the calls in the function's own body outside no-grad blocks;
    None when the body cannot be read, trains, or switches autograd off itself."""
    index = engine.index
    function = definition.function
    text = index.text(definition.path)  # type: ignore[union-attr,arg-type]
    node = None if text is None else locate(text, function.line, function.end_line, function.name, False)  # type: ignore[union-attr]
    if node is None:
        return None
    builder = FormBuilder(dict(index.summary(definition.path).aliases), DEEP)  # type: ignore[union-attr,arg-type]
    found: List[Tuple[int, Form]] = []
    stack = list(node.body)  # type: ignore[attr-defined]
    while stack:
        child = stack.pop()
        if isinstance(child, _SCOPES):
            continue
        if isinstance(child, (ast.With, ast.AsyncWith)) and any(_NO_GRAD.search(ast.unparse(i.context_expr)) for i in child.items):
            continue
        if isinstance(child, ast.Call):
            if isinstance(child.func, ast.Attribute) and child.func.attr in ("backward", "set_grad_enabled"):
                return None
            if isinstance(child.func, (ast.Name, ast.Attribute)):
                found.append((child.lineno, builder.form(child.func)))
        stack.extend(ast.iter_child_nodes(child))
    return sorted(found, key=lambda item: item[0])


def runs_handed_model(engine: ValueEngine, definition: Definition, position: Optional[int], keyword: Optional[str]) -> bool:
    """TPF203's question for a helper handed a model its caller put in eval mode (at
    ``position`` among the call's positional arguments, or as ``keyword``): whether the
    helper calls the parameter that receives it (``model(inputs)``, ``model.forward(x)``)
    outside no-grad, never rebinding that name, training or switching autograd. What the
    model is needs no callers here: the caller's ``.eval()`` says it is one."""
    function = definition.function
    if engine.index is None or function is None or definition.path is None:
        return False
    if trains(function) or any(_NO_GRAD.search(str(d)) for d in function.decorators):
        return False
    name = _parameter_name(definition, position, keyword)
    if name is None:
        return False
    calls = _grad_calls(engine, definition)
    if not calls or _rebinds(engine, definition, name):
        return False
    return any(type(func) is Ref and func.name in (name, f"{name}.forward") for _, func in calls)  # type: ignore[attr-defined]


def _parameter_name(definition: Definition, position: Optional[int], keyword: Optional[str]) -> Optional[str]:
    """The parameter that receives the argument at ``position`` (``self`` left out of a
    method's), or the one named ``keyword``."""
    function = definition.function
    if function is None:
        return None
    params = [p for p in function.params if p.kind == "positional"]
    if definition.kind == "method" and not any("staticmethod" in str(d) for d in function.decorators):
        params = params[1:]  # `self` / `cls`
    if keyword is not None:
        names = [p.name for p in function.params if p.name == keyword and p.kind in ("positional", "keyword")]
    else:
        names = [params[position].name] if position is not None and position < len(params) else []
    return names[0] if names else None


def names_other_use(name: str) -> bool:
    """``save_model``, ``deepcopy``, ``log``: a callable named for what it does to a model
    other than running it."""
    return bool(_OTHER_USE.match(name))


def calls_parameter(engine: ValueEngine, definition: Definition, position: Optional[int], keyword: Optional[str]) -> Optional[bool]:
    """TPF206's question for a project callable handed a model (at ``position`` or as
    ``keyword``): whether it calls the parameter that receives it (``predictor(x)``,
    ``model.forward(x)``, ``net.infer(x)``) outside its own loops, or in loops over pieces of
    its input, never rebinding it. None when not; True when autograd is off there (decorated
    or in a no-grad ``with``), False when it is as the caller has it."""
    name = _parameter_name(definition, position, keyword)
    if engine.index is None or name is None:
        return None
    body = forward_body(engine, definition)
    if body is not None and body.looped:
        body = looped_forward_body(engine, definition)
    if body is None or _rebinds(engine, definition, name):
        return None
    calls = [s for s in body.sites if type(s.func) is Ref and _calls(s.func.name, name)]  # type: ignore[attr-defined]
    return (body.no_grad or any(s.off for s in calls)) if calls else None


def _calls(spelled: str, name: str) -> bool:
    """``name(x)`` or an inference method of it (``name.forward(x)``, ``name.infer(x)``)."""
    owner, _, method = spelled.rpartition(".")
    return spelled == name or (owner == name and bool(INFERENCE_METHODS.match(method)))


def _rebinds(engine: ValueEngine, definition: Definition, name: str) -> bool:
    """The function binds ``name`` itself, switches it to training mode (``name.train()``),
    or reads its mode (``if name.training:`` a forward with grad, else one under no_grad: the
    model in eval mode takes the no-grad arm)."""
    function = definition.function
    text = engine.index.text(definition.path)  # type: ignore[union-attr,arg-type]
    node = None if text is None else locate(text, function.line, function.end_line, function.name, False)  # type: ignore[union-attr]
    if node is None:
        return True
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id == name and not isinstance(child.ctx, ast.Load):
            return True
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == "train":
            if dotted(child.func.value) == name:
                return True
        if isinstance(child, ast.Attribute) and child.attr == "training" and dotted(child.value) == name:
            return True
    return False


def evaluates_own_model(engine: ValueEngine, definition: Definition) -> bool:
    """A method that puts a model its object holds in eval mode on every call, in its own
    lines (``self.model.eval()`` before any branch or loop): its forward is evaluation."""
    function = definition.function
    if engine.index is None or function is None or definition.path is None or definition.kind != "method":
        return False
    text = engine.index.text(definition.path)
    node = None if text is None else locate(text, function.line, function.end_line, function.name, False)
    for statement in getattr(node, "body", ()):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call, ast.Call) and not call.args and isinstance(call.func, ast.Attribute) and call.func.attr == "eval":
            if (dotted(call.func.value) or "").startswith("self."):
                return True
        if isinstance(statement, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.Return, ast.Raise)):
            return False
    return False
