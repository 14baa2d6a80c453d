"""Models a script hands to project code that trains them (TPF403): the model is built
here, the training loop is elsewhere, so the finding is here.

* an object made with the name whose method runs a training step (``TrainLoop(model=
  model).run_loop()``; ``t = Trainer(model); t.fit()``), the method's class a trainer;
* a call statement of a project function that runs backward or an optimizer step in its
  own body (``train_and_test(model, optimizer, criterion, ...)``).

``hands_to_an_object`` is the ``ast`` screen of both (the callees as spelled), answered
from the project index by ``a_trainer``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from ...analysis.ast_index import per_tree, tree_index
from ...analysis.scope import dotted_name
from ...analysis.walk import descendants
from ...context import FileContext
from ...project.call_values import is_optimizer_name, own_path, training_reach
from ...project.forms import dotted as ast_dotted
from ...project.resolution import Definition
from .trained_models import class_trains

if TYPE_CHECKING:
    from ...project.index import ProjectIndex


def _class_like(func: ast.AST) -> Optional[str]:
    """``Trainer`` / ``cm.TrainLoop``: a callee spelled like a class."""
    spelled = ast_dotted(func)
    return spelled if spelled is not None and spelled.rpartition(".")[2][:1].isupper() else None


@per_tree  # the screen and the question both ask
def hands_to_an_object(tree: ast.Module) -> FrozenSet[str]:
    """The screen of ``handed_to_trainers``: the classes (as spelled) of objects made with
    a name that then have a method called (``Trainer(model).fit()``, or ``t.fit()`` with
    ``t = Trainer(model)`` here), and the functions imported by name or defined here that
    are handed a name bound here to what a call gives (``train_and_test(model, opt)``; a
    call statement, in the visitor)."""
    index = tree_index(tree)

    def made_with_a_name(call: ast.AST) -> Optional[str]:
        if not isinstance(call, ast.Call) or not any(isinstance(a, ast.Name) for a in (*call.args, *(k.value for k in call.keywords if k.arg))):
            return None
        return _class_like(call.func)

    made: Dict[str, Set[str]] = {}
    built: Set[str] = set()
    for node in index.assignments:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            built.update(names)
            spelled = made_with_a_name(node.value)
            for name in names if spelled is not None else ():
                made.setdefault(name, set()).add(spelled)  # type: ignore[arg-type]  # each arm's class
    functions = {n.name for n in tree.body if type(n) is ast.FunctionDef}
    functions.update(a.asname or a.name for n in index.imports if type(n) is ast.ImportFrom for a in n.names)
    out: Set[str] = set()
    for call in index.calls:
        func = call.func
        kind = type(func)
        if kind is ast.Attribute:
            value = func.value  # type: ignore[attr-defined]
            if isinstance(value, ast.Call):
                if (spelled := made_with_a_name(value)) is not None:
                    out.add(spelled)
            elif isinstance(value, ast.Name) and (classes := made.get(value.id)):
                out |= classes
        elif kind is ast.Name and func.id in functions and built and not func.id[:1].isupper():  # type: ignore[attr-defined]
            if any(type(a) is ast.Name and a.id in built for a in (*call.args, *(k.value for k in call.keywords if k.arg))):  # type: ignore[attr-defined]
                out.add(func.id)  # type: ignore[attr-defined]
    return frozenset(out)


def a_trainer(project: "ProjectIndex", found: Optional[Definition]) -> bool:
    """A project trainer class (``class_trains``), or a project function that trains
    (``trains_itself``)."""
    if found is not None and found.kind == "function":
        return trains_itself(found)
    return class_trains(project, found)


def trains_itself(found: Definition) -> bool:
    """A project function that runs backward and an optimizer's step in its own body (a
    helper that only runs a backward, autograd's own code, is no training function)."""
    function = found.function
    return function is not None and function.backward and any(is_optimizer_name(s.receiver.rsplit(".", 1)[-1]) for s in function.steps)


def _spelled_like_a_class(call: cst.Call) -> bool:
    spelled = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    return spelled is not None and spelled.rpartition(".")[2][:1].isupper()


def _trainer_function(context: FileContext, call: cst.Call) -> Optional[Set[str]]:
    """The names a call of a project function that trains in its own body is handed
    (``train_and_test(model, optimizer, ...)``, the callee as the module resolves it); None when the callee is not one."""
    passed = _names_passed(call, class_like=False) if type(call.func) is cst.Name else set()
    index = context.project
    if not passed or index is None:
        return None
    found = index.resolve(own_path(context), call.func.value)  # type: ignore[attr-defined]
    return passed if found is not None and found.kind == "function" and trains_itself(found) else None


def _names_passed(call: cst.Call, class_like: bool = True) -> Set[str]:
    """The names passed to a call of a class-like callee (``Trainer(model, loader)``), or
    (``class_like`` False) of a callee spelled otherwise (``train(model, opt)``)."""
    spelled = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    if spelled is None or spelled.rpartition(".")[2][:1].isupper() is not class_like:
        return set()
    return {a.value.value for a in call.args if type(a.value) is cst.Name and a.star == ""}  # type: ignore[union-attr]


def handed_to_trainers(context: FileContext) -> Set[str]:
    """The names handed to project code that trains them (``_hand_offs``)."""
    return context.fact(_hand_offs)[0]


def trained_objects(context: FileContext) -> Set[str]:
    """Names bound here to objects of a project trainer class (no ``nn.Module``) whose
    training method a call statement runs (``model = DCGAN(args); model.train(loader)``):
    the object holds the models it trains (``_hand_offs``)."""
    return context.fact(_hand_offs)[1]


def _hand_offs(context: FileContext) -> Tuple[Set[str], Set[str]]:
    """Names a statement of the module hands to project code that trains them: a call
    statement of a method that runs a training step (the value engine's dispatch and
    ``training_reach``) on an object made with the name (``TrainLoop(model=model).
    run_loop()``; ``t = Trainer(model); t.fit()``), or of a project function that trains
    in its own body (``train_and_test(model, optimizer, ...)``). The model is built here,
    so the finding is here (``hands_to_an_object`` is its screen)."""
    values = context.values() if context.project is not None else None
    if values is None:
        return set(), set()
    constructed: Dict[str, List[cst.Call]] = {}
    statements: List[Tuple[cst.CSTNode, cst.Call]] = []
    for top in context.module.body:
        for node in descendants(top):
            if type(node) is cst.Assign and type(node.value) is cst.Call and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
                constructed.setdefault(node.targets[0].target.value, []).append(node.value)  # type: ignore[union-attr]
            elif type(node) is cst.Expr and type(node.value) is cst.Call:
                statements.append((top, node.value))  # type: ignore[arg-type]
    out: Set[str] = set()
    objects: Set[str] = set()
    index = values.engine.index
    for top, call in statements:
        func = call.func
        passed: Set[str] = set()
        if type(func) is cst.Attribute and type(func.value) is cst.Call:
            passed = _names_passed(func.value)
        elif type(func) is cst.Attribute and type(func.value) is cst.Name:
            for made in constructed.get(func.value.value, ()):
                passed |= _names_passed(made)
        receiver = func.value.value if type(func) is cst.Attribute and type(func.value) is cst.Name else None  # type: ignore[union-attr]
        if receiver is not None and not any(_spelled_like_a_class(made) for made in constructed.get(receiver, ())):
            receiver = None  # only an object of a class made here counts (`gan = DCGAN(args)`)
        if not passed and receiver is None and (found := _trainer_function(context, call)) is not None:
            out |= found  # a project function that trains in its own body
            continue
        if not passed - out and (receiver is None or receiver in objects):
            continue
        callees = values.callees(call, top, objects=False)
        if not callees:
            continue
        if any(training_reach(values.engine, d) is None for d in callees):
            continue
        if all(d.path is not None and class_trains(index, index.resolve(d.path, d.name.split(".")[0])) for d in callees):
            out |= passed  # a method of a trainer class (the screen's question too) that trains
            objects |= {receiver} if receiver is not None else set()
    return out, objects


def makes_and_runs(index: "ProjectIndex", klass: Definition) -> Callable[[str, Optional[ast.Module]], bool]:
    """Whether a script (its path and tree) makes an object of project class ``klass`` with
    a name and calls a method of it (``hands_to_an_object``): a script that trains the
    object is reported where it makes it, so the class's own module need not be."""

    def answers(path: str, tree: Optional[ast.Module]) -> bool:
        if tree is None:
            return False
        for spelled in hands_to_an_object(tree):
            found = index.resolve(path, spelled)
            if found is not None and found.kind == "class" and found.path == klass.path and found.name == klass.name:
                return True
        return False

    return answers
