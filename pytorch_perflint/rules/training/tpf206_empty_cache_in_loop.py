"""TPF206 empty-cache-in-loop."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.ast_index import code_identifiers
from ...analysis.scope import dotted_name
from ...project.allocator_calls import EMPTY_CACHE
from ...project.call_values import empties_cache_every_call
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.classifiers import last_name
from ...facts.training.guards import guarded_between
from ...facts.training.loops import step_loop_around
from ...facts.training.inference_loops import evaluation_loop_around
from ...facts.training.inherited_steps import inherited_step
from ...facts.training.cache_calls import answer_loop_question, could_empty_in_loops, loop_calls, loop_question, objects_asked
from ...facts.training.test_code import in_test_code

if TYPE_CHECKING:
    from ...project import ProjectIndex

# A loop that handles out-of-memory errors frees the cache on purpose.
_OOM = re.compile(r"OutOfMemoryError|out of memory|\bOOM\b", re.IGNORECASE)
# Names of flags and checks that only say whether a GPU is there (``if use_cuda:``).
_DEVICE_FLAG = re.compile(r"cuda|gpu|mps|xpu|accelerat", re.IGNORECASE)
_DEVICES = frozenset({"cuda", "mps", "xpu"})
# What an evaluation loop names (no-grad regions, eval mode): TPF206's project screen.
# ... but a flag about the cache itself (``args.clear_gpu_cache``) is the author's switch.
_CACHE_FLAG = re.compile(r"cache|empty|clear|free|mem", re.IGNORECASE)
# A module that selects the GPU (the rule is silent in CPU-only code).
_GPU = "import torch\ndevice = torch.device('cuda')\n"
_LOOP = (
    "import torch\nfor i, (x, y) in enumerate(loader):\n    loss = crit(model(x.cuda()), y.cuda())\n"
    "    loss.backward()\n    opt.step()\n"
)


class EmptyCacheInLoop(Rule):
    """## What it does
    Flags `torch.cuda.empty_cache()` (and `torch.accelerator.empty_cache()`,
    `torch.mps.empty_cache()`, `torch.xpu.empty_cache()`) called on every iteration of a
    training loop (a loop that runs `.backward()` or an optimizer step once per step, itself
    or through project functions it calls, in any module) or of an evaluation loop.

    An evaluation loop is any loop that runs a model forward on each item it walks
    (batches, video frames, chunks of one video, slices of a text) for inference: the
    forward runs under `torch.no_grad()` / `torch.inference_mode()` (around the loop, in
    its body, or inside the code it calls), or on a model put in eval mode before the loop
    (`net.eval()`), or the loop is one TPF203 sees as evaluation. The forward may run
    behind code the loop calls: a call of a model (`model(x)`, `self.net_g(x)`), of a method
    that runs one (`net_g.infer(x)`, `model.generate(x)`), of a project function or method
    of any module that runs one outside its own loops, one or two calls down
    (`audio = infer(piece, net_g=net_g)`; `mask = tracker.track(frame)`, whose no-grad
    `track` belongs to an object that put its model in eval mode). A call in a nested loop
    that runs no model (the images of one batch) runs on every iteration of the evaluation
    loop around it. Not an evaluation loop: one whose body builds or loads a model every
    iteration (a loop over checkpoints, a speed test over models: each model's memory is
    freed before the next), one that runs no model, one whose helper loops over the data
    itself (it evaluates a whole set per iteration). A routine whose loops walk pieces of
    its own input is one item's inference (`model.tts_to_file(text, speaker)` over the
    sentences of `text`, a pipeline over windows of one video); a diffusion pipeline's
    `self.unet(...)` and `self.vae.decode(...)` run a model.
    A `finally:` in the loop body runs on every iteration too. A call of a project function
    or method (this module or another) that empties the cache on every call, itself or
    through the project functions it calls (`free_memory()`, a `train_step()` that ends
    with it, `self._release()`, an object's `__call__` such as `pipe(clip)`, a project
    module's `forward` reached through `self.model(x)`), is reported at that call; so is a
    generator method walked by an inner loop (`for wave in self.voice.speak(seg):`), which
    runs to its end once per iteration of the loop around it. Calls of objects are followed
    in projects of at most 400 modules (as callers are scanned). A project pipeline loaded
    the library's way (`Pipe.from_pretrained(path).to(device)` of a diffusers pipeline
    subclass) is an object of its class, and a `__call__` that denoises copies of its one
    input (a test-time ensemble), steps through the scheduler's timesteps or decodes what
    it computed in chunks (`range(0, latents.shape[0], 8)`) is one item's inference.
    Likewise a loop whose model runs in a nested loop over pieces of its current item
    (`for b in range(0, clip.shape[1], 4)`, `for part in torch.split(clip, n)`) evaluates
    every item; a network's part called by itself (`self.model.image_encoder(x)`) runs a
    model; and a local name bound only to methods of `self` (`run = self.plain_test`, or
    `partial(self.padded_test, 8)`) calls them. A count taken from the current item through
    names (`n = len(video)`, `steps = ceil(n / batch)`, `bs, t, c, h, w = clip.shape`)
    counts its pieces too; a method named for running a model (`task.run_model(batch)`,
    `self.model_forward(x)`) runs one; a helper whose only loop builds numbers and lists
    (`T.append([np.radians(x), ...])`) still handles one item per call; a parameter
    annotated as a diffusers pipeline (`pipeline: DiffusionPipeline`), called, generates
    with autograd off; and a model's method that runs `super().forward(...)` on each sample
    of a tensor it is handed (`for i in range(input_ids.shape[0])`) is an inference loop
    over those samples. A model handed to a call together with the current item runs on it
    there: a library routine (`pred = sliding_window_inference(image, roi, 1, model)`),
    unless its name says it does something else with a model (`save_model(model, x)`,
    `deepcopy(model)`) or the item is a whole loader or dataset, and a project function that
    calls the parameter receiving it outside its own loops (`tiled(image, net)` running
    `fn(x[..., :96])`). A helper that puts a model in eval mode and then calls one of its
    methods on an input runs it (`self.net_g.eval()`, `net_g = self.get_bare_model(
    self.net_g)`, `net_g.test(self.lq)`), not one that only loads weights into it.
    A step method of a trainer subclass (`_train_step(self, batch)`, which backpropagates)
    that empties the cache on every call is reported at its `empty_cache()` when a project
    base class calls `self._train_step(batch)` on every iteration of its own loop: the
    base's call runs every override, most of which do not empty the cache.

    Where the finding is: RULES.md anchors TPF206 at the `empty_cache()` call, and that is
    the finding's line whenever the call stands in the loop (or in its `finally:`). When
    the loop reaches it only through a project helper, the `empty_cache()` line is in the
    helper's body, which is not a loop and may have other callers that are not in loops;
    the mistake is the call of the helper on every iteration, so the finding is anchored
    at that helper call in the loop (the call's full range), its message names the helper
    (`` `free_memory()` empties the CUDA cache (`empty_cache()`) on every iteration ``),
    and the `empty_cache()` inside the helper is not reported for it. Remove the helper
    call from the loop, or run it every N steps; a `# noqa: TPF206` goes on that line.

    Silent in code that does not run on an accelerator (there the call returns at once),
    outside loops, in an epoch loop around a helper that trains a whole epoch, under
    a guard that runs it every N steps (`if step % 100 == 0:`) or behind a flag, in an
    `except` handler, and in loops that handle out-of-memory errors (the cache is freed
    there on purpose). A guard that only asks whether a GPU is there
    (`if torch.cuda.is_available():`, `if args.cuda:`) still runs it every iteration.

    ## Why is this bad?
    PyTorch's caching allocator keeps freed GPU blocks to hand them out again without a
    `cudaMalloc`. `empty_cache()` returns every unused block to the driver, so the next
    iteration allocates all its activations afresh: `cudaMalloc`/`cudaFree` are slow and
    synchronise the device. It does not give the program more memory (the blocks were
    already free for PyTorch to reuse); it only makes them visible to other processes.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 1000 == 0:  # only if fragmentation is a measured problem
            torch.cuda.empty_cache()
    ```

    ## Fix safety
    There is no automatic fix: some code frees the cache to fight fragmentation or to share
    a GPU with another process. Remove the call, or run it every N steps.
    """

    code = "TPF206"
    name = "empty-cache-in-loop"
    message = (
        "`{what}` on every iteration of {kind} loop makes the next iteration allocate its "
        "memory afresh; remove it or run it every N steps"
    )
    helper_message = (
        "`{what}` empties the CUDA cache (`empty_cache()`) on every iteration of {kind} loop, which "
        "makes the next iteration allocate its memory afresh; remove the call there or run it every N steps"
    )
    fix_applicability = Applicability.DISPLAY_ONLY
    needs_cuda = True  # without an accelerator the call returns at once

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """``empty_cache`` here, or a loop that may call a project helper that empties it."""
        return "empty_cache" in source or ("import" in source and ("for " in source or "while " in source))

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a comment or string) names ``empty_cache``, or a loop calls
        something (a project function of another module may empty the cache)."""
        return "empty_cache" in code_identifiers(tree) or loop_calls(tree)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        return could_empty_in_loops(tree, path, project)

    @classmethod
    def project_question(cls, tree: ast.Module) -> Tuple[bool, bool]:
        """Whether the code names ``empty_cache``, and whether a loop may train or evaluate."""
        return loop_question(tree)

    @classmethod
    def could_fire_answering(cls, question: Tuple[bool, bool], path: str, project: "ProjectIndex") -> Optional[bool]:
        """Decided without the tree unless a loop's calls must be dispatched (None)."""
        return answer_loop_question(question, path, project)

    VALID = (
        # Outside any loop.
        "import torch\ntorch.cuda.empty_cache()\n" + _LOOP,
        # Every N steps.
        _LOOP + "    if i % 100 == 0:\n        torch.cuda.empty_cache()\n",
        # Behind a flag the author controls.
        _LOOP + "    if args.empty_cache:\n        torch.cuda.empty_cache()\n",
        _LOOP + "    if args.clear_gpu_cache:\n        torch.cuda.empty_cache()\n",
        # After an out-of-memory error.
        "import torch\nfor x in loader:\n    try:\n        model(x).backward()\n        opt.step()\n"
        "    except torch.cuda.OutOfMemoryError:\n        torch.cuda.empty_cache()\n",
        "import torch\nfor x in loader:\n    try:\n        model(x).backward()\n        opt.step()\n"
        "    except RuntimeError as e:\n        if 'out of memory' not in str(e):\n            raise\n"
        "        oom = True\n    torch.cuda.empty_cache()\n",
        # After the epoch, not after each step.
        "import torch\nfor epoch in range(10):\n    for x in loader:\n        model(x).backward()\n        opt.step()\n"
        "    torch.cuda.empty_cache()\n",
        # A loop that neither trains nor evaluates a model.
        "import torch\nfor path in checkpoints:\n    convert(path)\n    torch.cuda.empty_cache()\n",
        # A model called in a loop with gradients on, no evaluation in sight.
        "import torch\nfor x in batches:\n    feats.append(model(x))\n    torch.cuda.empty_cache()\n",
        # A loop over models: each is freed before the next is evaluated.
        "import torch\nfor name, model in models.items():\n    with torch.no_grad():\n        scores[name] = model(x)\n"
        "    torch.cuda.empty_cache()\n",
        "import torch\n@torch.no_grad()\ndef run(paths, x):\n    for path in paths:\n        net = torch.load(path)\n"
        "        outs.append(net(x))\n        torch.cuda.empty_cache()\n",
        # A loop over checkpoints, each evaluated by a helper that loops over the data.
        "import torch\n@torch.no_grad()\ndef evaluate(model, loader):\n    for x in loader:\n        out = model(x)\n"
        "def sweep(model, paths, loader):\n    for path in paths:\n        model.load_state_dict(torch.load(path))\n"
        "        evaluate(model, loader)\n        torch.cuda.empty_cache()\n",
        # A no-grad target network inside a step whose training is out of sight.
        "import torch\nfor s, s2 in loader:\n    with torch.no_grad():\n        nxt = target_net(s2)\n"
        "    optimizer.zero_grad()\n    agent.learn(s, nxt)\n    torch.cuda.empty_cache()\n",
        # A no-grad helper that is not a forward (no model called), and one every N batches.
        "import torch\nclass V:\n    def stats(self):\n        with torch.no_grad():\n            return self.meter.mean()\n"
        "    def run(self, loader):\n        for x in loader:\n            self.stats()\n            torch.cuda.empty_cache()\n",
        "import torch\nfor i, x in enumerate(loader):\n    with torch.no_grad():\n        outs.append(model(x))\n"
        "    if i % 50 == 0:\n        torch.cuda.empty_cache()\n",
        # A loop over checkpoints of a model put in eval mode: loading is no forward.
        "import torch\nvqgan.eval()\nfor path in paths:\n    with torch.no_grad():\n        vqgan.load_state_dict(torch.load(path))\n"
        "    torch.cuda.empty_cache()\n",
        # A speed test that builds a model every iteration (each one's memory freed before the next).
        _GPU + "def bench(model, x):\n    with torch.no_grad():\n        return model(x)\n"
        "for name in names:\n    model = eval(name)(num_classes=10)\n    model.cuda().eval()\n    bench(model, x)\n"
        "    torch.cuda.empty_cache()\n",
        # ... or loads one (the helper's forward on each checkpoint's model).
        _GPU + "net.eval()\nfor path in paths:\n    net.load_state_dict(torch.load(path))\n    with torch.no_grad():\n"
        "        net(x)\n    torch.cuda.empty_cache()\n",
        # A CPU-only module: nothing selects an accelerator, the call returns at once.
        "import torch\nfor x in loader:\n    model(x).backward()\n    opt.step()\n    torch.cuda.empty_cache()\n",
        # A `finally:` around the whole loop runs once.
        _GPU + "try:\n    for x in loader:\n        model(x).backward()\n        opt.step()\nfinally:\n    torch.cuda.empty_cache()\n",
        # Not torch's.
        "def empty_cache():\n    pass\n" + _LOOP + "    empty_cache()\n",
        "import torch\nfor x in loader:\n    model(x).backward()\n    opt.step()\n    cache.empty_cache()\n",
        # A comment and a string.
        _LOOP + "    # torch.cuda.empty_cache()\n    s = 'torch.cuda.empty_cache()'\n",
    )
    INVALID = (
        # The training step runs in a helper the loop calls.
        Invalid(
            _GPU + "def update(batch):\n    loss = model(batch).mean()\n    loss.backward()\n    opt.step()\n"
            "for batch in loader:\n    update(batch)\n    torch.cuda.empty_cache()\n",
            line=9,
        ),
        # The forward runs under no-grad inside the loop (one image at a time).
        Invalid(
            _GPU + "for path in paths:\n    img = load(path)\n    with torch.no_grad():\n        out = net(img)[0]\n"
            "    save(out)\n    torch.cuda.empty_cache()\n",
            line=8,
        ),
        # ... or in a loop-free helper method of the class (basicsr's validation).
        Invalid(
            _GPU + "class Model:\n    def test(self):\n        with torch.no_grad():\n            self.output = self.net_g(self.lq)\n"
            "    def validation(self, loader):\n        for data in loader:\n            self.feed_data(data)\n            self.test()\n"
            "            torch.cuda.empty_cache()\n",
            line=11,
        ),
        # A model named otherwise, put in eval mode before the loop (and its submodules).
        Invalid(
            _GPU + "vqgan.eval()\ndef run(paths):\n    for path in paths:\n        with torch.no_grad():\n"
            "            out = vqgan(load(path))\n        torch.cuda.empty_cache()\n",
            line=8,
        ),
        Invalid(
            _GPU + "vqgan.eval()\nfor path in paths:\n    with torch.no_grad():\n        z = vqgan.encoder(load(path))\n"
            "    torch.cuda.empty_cache()\n",
            line=7,
        ),
        # An options dict named `opt` is no optimizer.
        Invalid(
            _GPU + "class Model:\n    def test(self):\n        with torch.no_grad():\n            self.output = self.net_g(self.lq)\n"
            "    def validation(self, loader):\n        for data in loader:\n            self.test()\n            torch.cuda.empty_cache()\n"
            "            for name, o in self.opt['val']['metrics'].items():\n                score(name, o)\n",
            line=10,
        ),
        Invalid(
            _GPU + "def predict(net, x):\n    return net(x).softmax(1)\n@torch.no_grad()\ndef evaluate(net, loader):\n"
            "    for x in loader:\n        probs = predict(net, x)\n        torch.cuda.empty_cache()\n",
            line=9,
        ),
        Invalid(_LOOP + "    torch.cuda.empty_cache()\n", line=6),
        # A `finally:` in the loop body runs on every iteration.
        Invalid(_LOOP + "    try:\n        log(i)\n    finally:\n        torch.cuda.empty_cache()\n", line=9),
        Invalid(
            "from torch.cuda import empty_cache\n" + _LOOP.replace("import torch\n", "") + "    empty_cache()\n",
            line=6,
        ),
        Invalid(
            _LOOP + "    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n",
            line=7,
        ),
        Invalid(_GPU + "while True:\n    loss = step_loss()\n    loss.backward()\n    torch.mps.empty_cache()\n", line=6),
        Invalid(
            "import torch\n@torch.no_grad()\ndef evaluate(model, loader):\n    for x, y in loader:\n"
            "        out = model(x.cuda())\n        torch.accelerator.empty_cache()\n",
            line=6,
        ),
        Invalid(
            _GPU + "def validate(net, loader):\n    with torch.inference_mode():\n        for x in loader:\n"
            "            preds.append(net(x))\n            torch.cuda.memory.empty_cache()\n",
            line=7,
        ),
        # An inference loop over the chunks of one video, the model run by a method of its own.
        Invalid(
            _GPU + "with torch.no_grad():\n    for f in range(0, n, 12):\n        flows.append(net_g.infer(frames[f:f + 12]))\n"
            "        torch.cuda.empty_cache()\n",
            line=6,
        ),
        # A model put in eval mode, run on each batch; the cache emptied per image of the batch.
        Invalid(
            _GPU + "def valid(net, loader):\n    net.eval()\n    for x in loader:\n        out = net(x.cuda())\n"
            "        for t in range(len(out)):\n            save(out[t])\n            torch.cuda.empty_cache()\n",
            line=9,
        ),
        # The forward runs in a helper that a no-grad tracker method calls, per frame.
        Invalid(
            _GPU + "class Tracker:\n    def __init__(self, model):\n        self.model = model\n        self.model.eval()\n"
            "    @torch.no_grad()\n    def track(self, frame):\n        return self.step(frame)\n"
            "    def step(self, frame):\n        return frame\n"
            "tracker = Tracker(build())\nwhile True:\n    mask = tracker.track(read())\n    torch.cuda.empty_cache()\n",
            line=15,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.context.qualname(node.func)
        if qualname in EMPTY_CACHE:
            what = (dotted_name(node.func) or "empty_cache") + "()"
            self._check(node, self.message, what)
        elif self.context.project is not None and isinstance(node.func, (cst.Name, cst.Attribute)):
            # Cheapest first: a call outside any loop of its function runs once; a call
            # of code that does not empty the cache needs no training facts (the module's
            # every project call dispatched) to be left alone.
            ancestors = self._ancestors(node)
            if not _in_a_loop(ancestors) or not self._empties_every_call(node, ancestors):
                return
            if _innermost_loop(ancestors, node) is not None or step_loop_around(self.context, ancestors) is not None:
                what = self.context.code_for(node.func) + "(...)"
                self._check(node, self.helper_message, what)

    def _ancestors(self, node: cst.Call) -> Sequence[cst.CSTNode]:
        ancestors = self.context.ancestors
        return ancestors[:-1] if ancestors and ancestors[-1] is node else ancestors

    def _check(self, node: cst.Call, template: str, what: str) -> None:
        """Report ``node`` when it runs on every iteration of a training or evaluation loop
        (no guard between them, no out-of-memory handling in the loop, not a unit test)."""
        ancestors = self._ancestors(node)
        if in_test_code(ancestors, self.context.path):
            return
        found = self._loop(ancestors, node)
        if found is None:
            # A step method whose loop is in a project base class (`_train_step` of a trainer).
            if template is self.message and inherited_step(self.context, ancestors):
                self.report(node, message=template.format(what=what, kind="an inherited training"))
            return
        index, kind = found
        loop = ancestors[index]
        if guarded_between(_without_device_checks([*ancestors[index:], node], self.context.qualname)):
            return
        if _OOM.search(self.context.code_for(loop)):
            return
        self.report(node, message=template.format(what=what, kind=kind))

    def _empties_every_call(self, node: cst.Call, ancestors: Sequence[cst.CSTNode]) -> bool:
        """The call runs project code (a function or method of this module or another) that
        empties the cache on every call, itself or through the project code it calls."""
        values = self.context.values()
        if values is None or len(ancestors) < 2:
            return False
        callees = values.callees(node, ancestors[1], objects=False)  # as the loops ask: answered once
        if callees is None and objects_asked(values.engine.index):  # `pipe(x)`, `self.model(x)`: `__call__`, `forward`
            callees = values.callees(node, ancestors[1])
        return bool(callees) and all(empties_cache_every_call(values.engine, d) for d in callees)

    def _loop(self, ancestors: Sequence[cst.CSTNode], node: cst.CSTNode) -> Optional[Tuple[int, str]]:
        """The loop the call runs in on every iteration, and whether it trains or evaluates."""
        around = step_loop_around(self.context, ancestors)
        if around is not None:
            return around[0], "a training"
        index = _innermost_loop(ancestors, node)
        found = None if index is None else evaluation_loop_around(self.context, ancestors, index)
        return None if found is None else (found, "an evaluation")


def _in_a_loop(ancestors: Sequence[cst.CSTNode]) -> bool:
    """A ``for``/``while`` around the node within its function (header or body): what both
    ``_innermost_loop`` and ``step_loop_around`` need before they can find one."""
    for node in reversed(ancestors):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(node, (cst.For, cst.While)):
            return True
    return False


def _innermost_loop(ancestors: Sequence[cst.CSTNode], node: Optional[cst.CSTNode] = None) -> Optional[int]:
    """The index of the nearest ``for``/``while`` around a node, within its function, when
    the node is in the loop's body (not its ``else`` or header). The iterable of a ``for``
    is made once per iteration of the loop around it: a generator the inner loop walks
    (``for part in self.model.tts(seg):``) runs to its end once per outer iteration."""
    for index in range(len(ancestors) - 1, -1, -1):
        around = ancestors[index]
        if isinstance(around, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(around, (cst.For, cst.While)):
            child = ancestors[index + 1] if index + 1 < len(ancestors) else node
            if isinstance(around, cst.For) and child is around.iter:
                continue
            return index if child is around.body else None
    return None


def _without_device_checks(
    path: Sequence[cst.CSTNode], qualname: Callable[[cst.CSTNode], Optional[str]]
) -> List[cst.CSTNode]:
    """``path`` less the ``if`` statements whose body it enters and whose test only asks
    whether a GPU is there: their body runs on every iteration on a GPU machine."""
    kept: List[cst.CSTNode] = []
    for position, node in enumerate(path):
        after = path[position + 1] if position + 1 < len(path) else None
        if type(node) is cst.If and after is node.body and _device_check(node.test, qualname):
            continue
        kept.append(node)
    return kept


def _device_check(test: cst.BaseExpression, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``torch.cuda.is_available()``, ``args.cuda``, ``use_gpu``, ``device.type == "cuda"``,
    ``"cuda" in str(device)``, and ``and`` of those."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _device_check(test.left, qualname) and _device_check(test.right, qualname)
    if type(test) is cst.Call and not test.args:
        name = qualname(test.func)
        return name is not None and name.startswith("torch.") and name.endswith("is_available") and bool(_DEVICE_FLAG.search(name))
    if type(test) in (cst.Name, cst.Attribute):
        name = last_name(test)
        return name is not None and bool(_DEVICE_FLAG.search(name)) and not _CACHE_FLAG.search(name)
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        operator = type(test.comparisons[0].operator)
        sides = (test.left, test.comparisons[0].comparator)
        return operator in (cst.Equal, cst.In) and any(
            type(side) is cst.SimpleString and side.evaluated_value in _DEVICES for side in sides
        )
    return False
