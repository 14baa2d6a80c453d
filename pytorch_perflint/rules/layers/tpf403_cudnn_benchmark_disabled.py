"""TPF403 cudnn-benchmark-disabled."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

import libcst as cst

from ...analysis.ast_index import tree_index
from ...analysis.scope import ScopeNode, dotted_name
from ...analysis.values import literal_value
from ...analysis.walk import descendants
from ...context import FileContext
from ...finding import NodeFix
from ...project.call_values import own_path, trains
from ...project.values import engine_for
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.loop_training import loops_may_train
from ...facts.training.loops import training_facts
from ...facts.training.screens import could_have_training_loop
from ...facts.training.step_names import loop_calls_step_by_name
from ...facts.training.trainer_calls import handed_data
from ...facts.layers.entry_scripts import entry_scripts_decide, helper_decides, script_facts
from ...facts.layers.module_parts import walk_scoped
from ...facts.layers.script_settings import insert_after_imports, is_entry_script, training_receivers
from ...facts.layers.handed_models import a_trainer, handed_to_trainers, hands_to_an_object, makes_and_runs, trained_objects
from ...facts.layers.trained_models import ModelBuild, class_trains, model_builds

if TYPE_CHECKING:
    from ...project import ProjectIndex

_BENCHMARK = "torch.backends.cudnn.benchmark"
# Settings that show the author chose reproducibility (or no cuDNN) over speed.
_DETERMINISTIC = "torch.backends.cudnn.deterministic"
_ENABLED = "torch.backends.cudnn.enabled"
_USE_DETERMINISTIC = "torch.use_deterministic_algorithms"
_TRAINED_BY = frozenset(("parameters", "named_parameters", "train"))
# Calls of methods named like a training step (``agent.learn(batch)``,
# ``trainer.train_step(x)``): the text screen's words and the method names.
_STEP_WORDS = (".learn(", ".update(", "_step(", ".optimi", "_batch(")
_STEP_METHOD = re.compile(r"^(?:learn|update|optimi[sz]e\w*)$|_step$|^step_|_batch$")


def _could_build_conv_model(source: str) -> bool:
    """A word every convolutional model built in the module needs (a text screen)."""
    return any(word in source for word in ("Conv", "torchvision", "timm", "hub.load", "segmentation_models", "EfficientNet"))


def _loop_steps_a_built_object(tree: ast.Module) -> bool:
    """Some loop calls a method named like a training step on a name this module binds to
    a call of a capitalised name (``agent = Agent(...)``), or ``train`` handed data on a name
    bound to any call (``engine = trainer(...)``; ``trainer_calls``): the step may be the
    project class's, which only the project index can tell (``_trains_through``)."""
    index = tree_index(tree)
    receivers = {
        call.func.value.id
        for call in index.calls_in_loops
        if isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and _STEP_METHOD.search(call.func.attr)
    }
    # `engine.train(x, y)` with `engine = trainer(...)`: a trainer's step, whatever its class's case
    trainers = {call.func.value.id for call in index.calls_in_loops if handed_data(call) and isinstance(call.func.value, ast.Name)}  # type: ignore[attr-defined]
    if not receivers and not trainers:
        return False
    for node in index.assignments:
        value = node.value
        if isinstance(value, ast.Call) and isinstance(node, ast.Assign):
            func = value.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if (name[:1].isupper() and names & receivers) or (name and names & trainers):
                return True
    return False


@dataclass(frozen=True)
class _Decision:
    """What TPF403 reports in a file: ``benchmark = False`` assignments, or the model build."""

    false_values: Tuple[cst.BaseExpression, ...] = ()
    build: Optional[ModelBuild] = None


def _loop_method_calls(context: FileContext) -> Dict[int, str]:
    """id -> receiver of the ``name.method(...)`` calls inside training loops."""
    out: Dict[int, str] = {}
    for loop in context.fact(training_facts).training_loops:
        for node in descendants(loop.node):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name:
                out[id(node)] = node.func.value.value
    return out


def _trains_through(context: FileContext, call: cst.Call) -> bool:
    """``agent.learn(batch)``: the project method the call runs (the value engine's
    dispatch) runs a training step (backward or an optimizer step) in its own body."""
    values = context.values()
    statement = next((s for s in context.module.body if any(n is call for n in descendants(s))), None)
    callees = None if values is None or statement is None else values.callees(call, statement)
    return bool(callees) and all(d.function is not None and trains(d.function) for d in callees)


def _decide(context: FileContext) -> _Decision:
    called = training_receivers(context)  # first: TPF202 and TPF601 share these facts
    if called is None:
        if not handed_to_trainers(context) and not trained_objects(context):
            return _Decision()
        called = set()
    false_values: List[cst.BaseExpression] = []
    trained: Set[str] = set()
    trained_in: Set[Tuple[str, int]] = set()  # (receiver, id of the def that trains it there)
    homes: Dict[int, int] = {}  # id of a statement line -> id of the def around it
    in_loops = _loop_method_calls(context) if context.project is not None else {}
    through: List[Tuple[str, cst.Call, Tuple[ScopeNode, ...]]] = []
    helpers: Dict[str, bool] = {}
    for visited in walk_scoped(context.module):
        node = visited.node
        if type(node) is cst.SimpleStatementLine:
            homes[id(node)] = id(visited.function)
        elif type(node) is cst.Assign:
            scope = context.scope_of(visited.chain)
            value = literal_value(node.value, scope.lookup_value)
            for target in node.targets:
                name = context.qualname(target.target, scope)
                if name == _BENCHMARK:
                    if value is not False:
                        return _Decision()  # set True, or from a flag: the author decides
                    false_values.append(node.value)
                elif (name == _DETERMINISTIC and value is not False) or (name == _ENABLED and value is not True):
                    return _Decision()
        elif type(node) is cst.Call:
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in _TRAINED_BY:
                receiver = dotted_name(func.value)
                if receiver is not None:
                    trained.add(receiver)
                    trained_in.add((receiver, id(visited.function)))
            if id(node) in in_loops and in_loops[id(node)] not in called:
                through.append((in_loops[id(node)], node, visited.chain))
            if context.qualname(func, context.scope_of(visited.chain)) == _USE_DETERMINISTIC and not (
                node.args and literal_value(node.args[0].value) is False
            ):
                return _Decision()
            if any(
                a.keyword is not None and a.keyword.value == "deterministic" and literal_value(a.value) is not False
                for a in node.args
            ):
                return _Decision()  # e.g. set_random_seed(seed, deterministic=True)
            if _helper_decides(context, func, helpers):
                return _Decision()  # util.setup_runtime() sets benchmark = True itself
    wanted = trained | called | {receiver for receiver, _, _ in through}
    builds = [b for b in model_builds(context, wanted) if b.conv]
    # ``x.train()`` switches a model to training mode; on a trainer object it runs training,
    # and is linked below (``trained_objects``) when its module leaves the setting to the script.
    linked = [b for b in builds if (b.target in trained and not b.trainer) or b.target in called]
    if not linked and through:
        # The model lives in a project object the loop trains through (``agent.learn(...)``).
        targets = {b.target for b in builds}
        stepped = {r for r, call, chain in through if r in targets and _trains_through(context, call)}
        linked = [b for b in builds if b.target in stepped]
    if not linked:
        # The model built here is handed to a project trainer (``TrainLoop(model=model)``).
        handed = handed_to_trainers(context)
        linked = [b for b in model_builds(context, handed) if b.conv]
    if not linked:
        # An object of a trainer class whose models are convolutional, trained by a call
        # here (``gan = DCGAN(args); gan.train(loader)``), its module leaving the setting
        # to the script (``script_facts``: it never assigns it nor asks for determinism).
        index = context.project
        objects = [b for b in model_builds(context, trained_objects(context)) if b.conv and b.trainer and b.home is not None]
        linked = [b for b in objects if index is not None and (facts := script_facts(index, b.home)) is not None and not facts.decides]  # type: ignore[arg-type]
    # The model to be trained: one built in the function that trains it comes before a
    # namesake built elsewhere in the file (``net_G`` loaded to sample in ``generate()``).
    linked.sort(key=lambda b: (b.inside_model, (b.target, homes.get(id(b.line))) not in trained_in))
    if not linked:
        return _Decision()
    if false_values:
        return _Decision(false_values=tuple(false_values))
    if _set_by_entry_scripts(context, linked[0]):
        return _Decision()
    return _Decision(build=linked[0])


def _helper_decides(context: FileContext, func: cst.BaseExpression, seen: Dict[str, bool]) -> bool:
    """The call runs a project function that decides the setting in its own body."""
    name = dotted_name(func) if context.project is not None else None
    if name is None:
        return False
    if name not in seen:
        path = own_path(context)
        seen[name] = path is not None and helper_decides(context.project, context.project.resolve(path, name))  # type: ignore[arg-type]
    return seen[name]


def _set_by_entry_scripts(context: FileContext, build: ModelBuild) -> bool:
    """The module is not a script itself, and every entry script of the project that
    imports it sets ``benchmark`` (``main.py`` sets it, then trains ``Trainer()`` from
    ``trainer.py``)."""
    if context.project is None:
        return False
    at_module_level = any(statement is build.line for statement in context.module.body)
    if is_entry_script(context, at_module_level):
        return False  # run on its own, it trains without the setting
    project, path = context.project, own_path(context)
    klass = project.resolve(path, build.within) if build.within is not None and path is not None else None
    if klass is not None and klass.kind == "class" and not project.is_nn_module(klass) and class_trains(project, klass):
        # A trainer class (``gan = DCGAN(args); gan.train(loader)`` in the script): the
        # scripts that make and run its objects are reported where they make them.
        return entry_scripts_decide(project, path, makes_and_runs(project, klass))
    return entry_scripts_decide(project, path)


class CudnnBenchmarkDisabled(Rule):
    """## What it does
    Flags a script that trains a convolutional model on CUDA and never sets
    `torch.backends.cudnn.benchmark = True`, or sets it to `False`.

    The model may be built here or come from another module of the project: a class
    imported from `model.py` is convolutional when its layers include a convolution,
    through its own submodules in further modules (`ConvBlock` from `layers.py`) or a
    torchvision convolutional network; a factory when every `return` gives such a model.
    `models.__dict__[args.arch]()` and `getattr(models, args.arch)()` (torchvision's or
    the project's own model package), `timm.create_model(args.model)` and
    `models.get_model(args.arch)` count when the name is known: a literal, or the
    argparse default of the option (`parser.add_argument("--arch", default="resnet18")`
    in this module, or in the project module whose parser gives `args`); with the name not
    known, a project module whose every public factory builds a convolutional model, and a
    factory whose every `return` does (`get_model(name)` with an `if`/`elif` over names).
    A project object that holds a convolutional model (`agent = Agent(...)` whose
    constructor builds one) counts as trained when the loop calls one of its methods that
    runs a training step (`agent.learn(batch)`). A model the script hands to a project
    object that trains it (`model, diffusion = create_model_and_diffusion()`, then
    `TrainLoop(model=model).run_loop()`, or `t = Trainer(model); t.fit()`), or to a
    project function that trains it in its own body (`train_and_test(model, optimizer,
    criterion, ...)`), is flagged at the script's statement that builds it; `self.model = model` in the trainer builds
    nothing and is never the anchor. An object of a project trainer class that is no `nn.Module`
    (`gan = DCGAN(args); gan.train(loader)`) whose class builds convolutional models is
    flagged where the script makes it, unless the trainer's module sets `benchmark` (or
    asks for determinism) itself; the trainer's module is then not flagged again.
    A factory may choose among project classes by a name only known at run time: a class looked up with `importlib` by a computed module name,
    a registry's `get(name)` over `@REGISTRY.register()`-ed definitions, a builder whose
    `if`/`elif` arms build different classes: the model is convolutional when every
    candidate is. What a model is comes from the value engine (`project/module_values.py`,
    `project/choices.py`).

    ## Why is this bad?
    With `benchmark` off, cuDNN picks a convolution algorithm by heuristics. With it on, the
    first call for each input shape times the available algorithms and keeps the fastest,
    which is often markedly faster for the fixed input sizes of a training run. How much
    depends on the GPU, the cuDNN version and the layer shapes: on an H200 with cuDNN 9.19
    the project's conv scenario (64 channels, 112x112 inputs) ran the same with and without
    it on two days (1.00x, docs/benchmarks/gpu-nvidia-h200-2.md), the heuristics already
    choosing as well. Inputs whose shape changes every step pay a new search each time.

    ## Example
    ```python
    model = torchvision.models.resnet50().cuda()
    for images, labels in loader:
        loss = criterion(model(images.cuda()), labels.cuda())
        loss.backward()
    ```

    ## Use instead
    ```python
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda()
    ```

    ## Fix safety
    The fix inserts `torch.backends.cudnn.benchmark = True` at the top of the entry script,
    after its imports (and after the statement that imports the `torch` name it uses), or
    turns an existing `False` into `True`. It is unsafe: autotuned algorithms are not
    deterministic from run to run, and inputs whose shape changes every step pay the tuning
    again. An entry script has an `if __name__ == "__main__":` block, or builds the model,
    trains or calls one of its own functions at module level. In any other module (a
    library module, a trainer class whose constructor builds the model) the fix is
    display-only: the setting is global and belongs to the script that runs the training,
    never inside a constructor. Nothing is flagged in code that does not run on an
    accelerator, when the script asks for determinism (`cudnn.deterministic = True`,
    `torch.use_deterministic_algorithms`), when `benchmark` is set from a flag, or when the
    model is not known to be convolutional (an option with no default, one the script
    changes after parsing, a default that names a vision transformer). A call of a project
    function that makes that choice in its own body (`util.setup_runtime()` assigning
    `cudnn.benchmark = True`, an `init_seeds()` asking for determinism) counts as the
    script's own choice.

    A module that is not a script itself (a trainer whose class builds and trains the
    model) is not flagged when every entry script of the project that imports it, directly
    or through other modules, sets `benchmark` (or asks for determinism): `main.py` sets
    `torch.backends.cudnn.benchmark = True`, then trains `Trainer()` from `trainer.py`. An
    entry script that sets it `False`, or that does not set it, keeps the finding.
    """

    code = "TPF403"
    name = "cudnn-benchmark-disabled"
    message = (
        "Convolutional model trained on CUDA without `torch.backends.cudnn.benchmark = True`; "
        "enable it so cuDNN autotunes the convolutions"
    )
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = (".backward(",)  # a training loop (see could_fire for step functions of other modules)
    needs_cuda = True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A training loop, or a call of what may be a training step of a project object
        (``agent.learn(...)``), and a word that building a convolutional model needs; or an
        import (the model, or the trainer it is handed to, may come from another module)."""
        trains_here = ".backward(" in source or ".step(" in source or any(w in source for w in _STEP_WORDS)
        return (trains_here and _could_build_conv_model(source)) or "import " in source

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains: it runs backward or a step, or calls a helper defined here, or
        a method named like a training step of an object built here (``agent.learn(...)``
        with ``agent = Agent(...)``): the training family's screen for step functions of
        other modules (which leaves out containers: ``seen = OrderedSet(); seen.update(x)``),
        less its bare function calls; or an object made with a name whose method is called
        (``TrainLoop(model=model).run_loop()``: the model may be handed to a trainer)."""
        return could_have_training_loop(tree) or (loop_calls_step_by_name(tree) and _loop_steps_a_built_object(tree)) or bool(hands_to_an_object(tree))

    @classmethod
    def project_question(cls, tree: ast.Module) -> Tuple[bool, Tuple[str, ...]]:
        """Whether a loop here trains, else the classes (as spelled) objects are handed to:
        a file that passed only for handing a name to an object (no training loop of its
        own) needs the object's class to be a project trainer, or the function one that
        trains (``handed_models.a_trainer``)."""
        if could_have_training_loop(tree) or (loop_calls_step_by_name(tree) and _loop_steps_a_built_object(tree)):
            return True, ()
        return False, tuple(sorted(hands_to_an_object(tree)))

    @classmethod
    def could_fire_answering(cls, question: Tuple[bool, Tuple[str, ...]], path: str, project: "ProjectIndex") -> Optional[bool]:
        """A file whose loops may train is decided with the tree (``could_fire_project``)."""
        trains, handed = question
        return None if trains else any(a_trainer(project, project.resolve(path, spelled)) for spelled in handed)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """Without a training loop here (``training_receivers`` None) only a model handed to
        a project trainer is reported: some loop may train, with what the project code it
        calls does (``loop_training``), or a class an object is made of trains."""
        if cls.project_question(tree)[0] and loops_may_train(engine_for(project), path, tree):
            return True
        return any(a_trainer(project, project.resolve(path, spelled)) for spelled in hands_to_an_object(tree))

    _PROLOGUE = (
        "import torch\nimport torch.nn as nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n"
        "    def forward(self, x):\n        return self.conv(x).mean()\n"
    )
    _LOOP = (
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x.cuda()).backward()\n    opt.step()\n"
    )

    VALID = (
        _PROLOGUE + "torch.backends.cudnn.benchmark = True\nmodel = Net().cuda()\n" + _LOOP,
        _PROLOGUE + "torch.backends.cudnn.benchmark = args.benchmark\nmodel = Net().cuda()\n" + _LOOP,
        _PROLOGUE
        + "torch.backends.cudnn.benchmark = False\ntorch.backends.cudnn.deterministic = True\n"
        + "model = Net().cuda()\n"
        + _LOOP,
        # CPU only.
        (_PROLOGUE + "model = Net()\n" + _LOOP).replace(".cuda()", ""),
        # No convolution in the model.
        _PROLOGUE.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)") + "model = Net().cuda()\n" + _LOOP,
        # A model of unknown kind.
        "import torch\nmodel = build_model(cfg).cuda()\n" + _LOOP,
        # A factory of this module that may build a model without convolutions.
        _PROLOGUE
        + "def build(kind):\n    if kind == 'mlp':\n        return nn.Linear(3, 8)\n    return Net()\n"
        + "model = build(cfg).cuda()\n"
        + _LOOP,
        # The factory's name is a parameter here, not the module's function.
        _PROLOGUE
        + "def build():\n    return Net()\ndef main(build):\n    model = build().cuda()\n"
        + "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "    for x in loader:\n        model(x.cuda()).backward()\n        opt.step()\n",
        # No training loop.
        _PROLOGUE + "model = Net().cuda()\nwith torch.no_grad():\n    out = model(x.cuda())\n",
    )
    INVALID = (
        # Convolutions built by a helper of this module; the model put in eval mode (to
        # freeze BatchNorm) and still trained.
        Invalid(
            "import torch\nimport torch.nn as nn\n"
            "def conv3x3(cin, cout):\n    return nn.Conv2d(cin, cout, 3, padding=1, bias=False)\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.conv = conv3x3(3, 16)\n"
            "model = Net().eval().cuda()\n" + _LOOP,
            line=9,
        ),
        # Built by a factory of this module, every return of which is convolutional.
        Invalid(
            _PROLOGUE + "def build_model(cfg):\n    net = Net()\n    return net\n"
            "model = build_model(cfg).cuda()\n" + _LOOP,
            line=12,
        ),
        Invalid(
            _PROLOGUE + "model = Net().cuda()\n" + _LOOP,
            line=9,
            # At the top of the script, after the imports.
            expected_fix=_PROLOGUE.replace("import torch.nn as nn\n", "import torch.nn as nn\n\ntorch.backends.cudnn.benchmark = True\n")
            + "model = Net().cuda()\n"
            + _LOOP,
        ),
        Invalid(
            "import torch\nfrom torch.backends import cudnn\nimport torchvision\n"
            "cudnn.benchmark = False\nmodel = torchvision.models.resnet18().cuda()\n" + _LOOP,
            line=4,
            expected_fix="import torch\nfrom torch.backends import cudnn\nimport torchvision\n"
            "cudnn.benchmark = True\nmodel = torchvision.models.resnet18().cuda()\n" + _LOOP,
        ),
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        decision = self.context.fact(_decide)
        build = decision.build
        if build is not None and build.line is node:
            at_module_level = self.context.scope.node is self.context.module
            self.report(build.assign, fix=self._insert(at_module_level))

    def visit_Assign(self, node: cst.Assign) -> None:
        decision = self.context.fact(_decide)
        if any(node.value is value for value in decision.false_values):
            fix = self.fix([(node.value, cst.Name("True"))], message="Set `cudnn.benchmark = True`")
            self.report(node, fix=fix)

    def _insert(self, build_at_module_level: bool) -> NodeFix:
        """The setting at the top of the entry script, after its imports; shown only (no
        edit) in a module that is not one, or where ``torch`` cannot be named there."""
        insertion = None
        if is_entry_script(self.context, build_at_module_level):
            insertion = insert_after_imports(self.context, "{torch}.backends.cudnn.benchmark = True\n")
        if insertion is None:
            return self.fix([], message=_ENTRY_SCRIPT_ONLY, applicability=Applicability.DISPLAY_ONLY)
        replacements, imports = insertion
        return self.fix(
            replacements,
            message="Insert `torch.backends.cudnn.benchmark = True` after the imports",
            imports=imports,
        )


_ENTRY_SCRIPT_ONLY = (
    "Set `torch.backends.cudnn.benchmark = True` at the start of the script that runs this "
    "training (the entry script, after its imports), not in a library module or a constructor"
)
