"""Runs a user's script under measurement, in its own process: ``python bootstrap.py CONFIG``.

``bench SCRIPT`` starts one fresh process per run through this file. It counts the
script's steps with torch's global hooks (``optimizer.step()`` calls, or forward calls of
the outermost module with ``unit = "forward"``), times every step after the warm-up as the
wall time from one step's end to the next (so waiting for the DataLoader is part of the
step), and after ``warmup + steps`` steps records a fingerprint of the model, writes its
figures as JSON and ends the process at once: ``finally`` blocks that would save a
checkpoint do not run.

It is a standalone file (stdlib, plus torch once the script imports it) because it runs
inside the user's interpreter: it must not drag this package's modules in, nor shadow the
script's own imports. torch is never imported on the script's behalf: hooks go in when the
script imports torch.
"""

import sys

# Run as a file, Python put this folder first on sys.path, where our sibling modules
# (cli.py, report.py, session.py...) would shadow the script's own. Nothing is imported before this.
_HERE = sys.path.pop(0)

import importlib.abc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import runpy  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

# Fingerprints list at most this many tensors one by one (the totals cover all of them).
MAX_LISTED_TENSORS = 500


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` right after a top-level module (torch, numpy) is imported."""

    def __init__(self, callbacks):
        self.callbacks = dict(callbacks)

    def find_spec(self, name, path, target=None):
        if name not in self.callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        callback = self.callbacks.pop(name)
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            try:
                callback(module)
            except Exception:  # noqa: BLE001 - measuring must not break the import
                print(f"perflint bench: could not hook {name}:", file=sys.stderr)
                traceback.print_exc()

        spec.loader.exec_module = exec_module
        return spec


class Measurement:
    """The state of one run: step ends, the optimizers seen, the last loss."""

    def __init__(self, config):
        self.config = config
        self.unit = config["unit"]
        self.warmup = int(config["warmup"])
        self.steps = int(config["steps"])
        self.main_pid = os.getpid()
        self.started = time.perf_counter()
        self.ends = []  # perf_counter at the end of each step
        self.events = []  # CUDA events recorded at each step end (None when CUDA was unused)
        self.optimizers = []
        self.last_loss = None
        self.outer = None  # (module, output) of the last outermost forward (unit "forward")
        self.depth = 0
        self.profiler = None
        self.torch = None

    # -- hooks -------------------------------------------------------------------------
    def on_torch(self, torch):
        self.torch = torch
        torch.manual_seed(int(self.config["seed"]))
        if self.config.get("threads"):
            torch.set_num_threads(int(self.config["threads"]))
        if self.config.get("strict"):
            strict_settings(torch)
        if self.unit == "forward":
            from torch.nn.modules import module as nn_module

            nn_module.register_module_forward_pre_hook(self._forward_pre)
            try:
                nn_module.register_module_forward_hook(self._forward_post, always_call=True)
            except TypeError:  # torch < 2.0
                nn_module.register_module_forward_hook(self._forward_post)
        else:
            from torch.optim import optimizer as optim_module

            optim_module.register_optimizer_step_pre_hook(self._step_pre)
            optim_module.register_optimizer_step_post_hook(self._step_post)
        self._watch_backward(torch)

    def _watch_backward(self, torch):
        """Remember the last scalar that ``backward`` ran on: the loss, for the fingerprint."""
        import torch.autograd as autograd

        original = autograd.backward
        measurement = self

        def backward(tensors, *args, **kwargs):
            if isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
                measurement.last_loss = tensors.detach()
            return original(tensors, *args, **kwargs)

        autograd.backward = backward

    def _step_pre(self, optimizer, args, kwargs):
        if not any(o is optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)

    def _step_post(self, optimizer, args, kwargs):
        if os.getpid() == self.main_pid:
            self.step_done()

    def _forward_pre(self, module, inputs):
        self.depth += 1

    def _forward_post(self, module, inputs, output):
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and os.getpid() == self.main_pid:
            self.outer = (module, output)
            self.step_done()

    # -- steps -------------------------------------------------------------------------
    def step_done(self):
        torch = self.torch
        self.ends.append(time.perf_counter())
        event = None
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        self.events.append(event)
        count = len(self.ends)
        if count == self.warmup and self.config.get("profile_out"):
            self._start_profiler()
        if count >= self.warmup + self.steps:
            self.finish("done", 0)

    def _start_profiler(self):
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.profiler = profile(activities=activities, with_stack=True, record_shapes=True)
        self.profiler.start()

    def step_times(self):
        """Seconds per measured step, and the clock that measured them."""
        first = self.warmup  # index of the first measured step's end
        ends = self.ends[: self.warmup + self.steps]
        if len(ends) <= first:
            return [], "wall"
        events = self.events[first - 1 : len(ends)]
        if events and all(e is not None for e in events):
            self.torch.cuda.synchronize()
            times = [events[i - 1].elapsed_time(events[i]) / 1000.0 for i in range(1, len(events))]
            return times, "cuda-events"
        return [ends[i] - ends[i - 1] for i in range(first, len(ends))], "wall"

    # -- the end -----------------------------------------------------------------------
    def finish(self, status, exit_code, error=None):
        """Write the figures and end the process now (the script's own exit is skipped)."""
        try:
            self._write(status, exit_code, error)
        except BaseException:  # noqa: BLE001 - never fall back into the script
            print("perflint bench: could not write the run's figures:", file=sys.stderr)
            traceback.print_exc()
            exit_code = 3
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)

    def _write(self, status, exit_code, error):
        if self.profiler is not None:
            self.profiler.stop()  # before the fingerprint's own work
        times, clock = self.step_times()
        result = {
            "status": status,
            "exit_code": exit_code,
            "error": error,
            "unit": self.unit,
            "warmup": self.warmup,
            "steps": self.steps,
            "steps_done": len(self.ends),
            "step_times_s": times,
            "clock": clock,
            "seconds_to_first_step": (self.ends[0] - self.started) if self.ends else None,
            "fingerprint": None,
            "modules": loaded_files(self.config["root"]),
            "torch": None,
            "profile": None,
        }
        torch = self.torch
        if torch is not None:
            result["torch"] = torch_facts(torch)
            try:
                result["fingerprint"] = self.fingerprint()
            except Exception as problem:  # noqa: BLE001 - a fingerprint is a check, not the run
                result["fingerprint_error"] = f"{type(problem).__name__}: {problem}"
        if self.profiler is not None:
            result["profile"] = self._analyse_profile(times)
        write_json(self.config["out"], result)

    def _analyse_profile(self, times):
        import importlib.util

        spec = importlib.util.spec_from_file_location("_perflint_script_profiling", os.path.join(_HERE, "profiling.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        try:
            cuda_used = bool(self.torch.cuda.is_available() and self.torch.cuda.is_initialized())
            return module.analyse(self.profiler, sum(times), cuda_used)
        except Exception as problem:  # noqa: BLE001
            return {"error": f"{type(problem).__name__}: {problem}"}

    def fingerprint(self):
        """Sum and norm of every parameter the optimizers hold (or the outermost module's,
        and its output, with unit "forward"), and the last loss."""
        torch = self.torch
        tensors = []
        seen = set()
        for optimizer in self.optimizers:
            for group in optimizer.param_groups:
                for parameter in group["params"]:
                    if id(parameter) not in seen:
                        seen.add(id(parameter))
                        tensors.append(parameter)
        outputs = []
        if self.unit == "forward" and self.outer is not None:
            module, output = self.outer
            tensors.extend(p for p in module.parameters() if id(p) not in seen)
            outputs = [t for t in _flatten(output) if isinstance(t, torch.Tensor)]
        with torch.no_grad():
            listed = [_summary(t, torch) for t in tensors]
            out = [_summary(t, torch) for t in outputs]
            loss = float(self.last_loss.double()) if self.last_loss is not None else None
        return {
            "tensors": len(listed),
            "elements": sum(item["numel"] for item in listed),
            "sum": sum(item["sum"] for item in listed),
            "norm": sum(item["norm"] ** 2 for item in listed) ** 0.5,
            "shapes": [item["shape"] for item in listed[:MAX_LISTED_TENSORS]],
            "each": [[item["sum"], item["norm"]] for item in listed[:MAX_LISTED_TENSORS]],
            "outputs": [[item["sum"], item["norm"]] for item in out],
            "loss": loss,
        }


def strict_settings(torch):
    """A check run (the warm-up round, whose fingerprints are compared): deterministic
    algorithms and full float32, as the scenario harness's check (bench/strict.py), set
    when the script imports torch so that whatever the script sets itself wins. On a GPU,
    cuDNN's default algorithms (atomics in the weight gradient) and TF32 convolutions make
    two runs of one script differ; the timed rounds keep the script's own settings."""
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    except RuntimeError:  # the new fp32_precision API was used first (torch >= 2.9)
        pass
    torch.use_deterministic_algorithms(True, warn_only=True)


def _summary(tensor, torch):
    data = tensor.detach()
    if data.is_complex():
        data = torch.view_as_real(data)
    values = data.double()
    return {"shape": list(data.shape), "numel": data.numel(), "sum": float(values.sum()), "norm": float(values.norm())}


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    else:
        yield value


def torch_facts(torch):
    cuda = torch.cuda.is_available()
    return {
        "version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cuda_available": cuda,
        "cuda_used": bool(cuda and torch.cuda.is_initialized()),
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "num_threads": torch.get_num_threads(),
    }


def loaded_files(root):
    """The files under ``root`` (the copy) that this process ran: its modules and the script."""
    prefix = os.path.join(os.path.realpath(root), "")
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.isabs(path) and os.path.realpath(path).startswith(prefix):
            found.add(os.path.relpath(os.path.realpath(path), prefix))
    return sorted(found)


def write_json(path, data):
    temp = f"{path}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(temp, path)


def _user_traceback(error):
    """The traceback from the script's first frame on: runpy's and ours are noise."""
    tb = error.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename == __file__ or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    measurement = Measurement(config)
    seed = int(config["seed"])
    random.seed(seed)
    sys.meta_path.insert(
        0,
        AfterImport({"torch": measurement.on_torch, "numpy": lambda numpy: numpy.random.seed(seed)}),
    )
    script = config["script"]
    sys.argv = [config["argv0"], *config["args"]]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as error:
        code = error.code
        if code not in (None, 0):
            message = code if isinstance(code, str) else f"the script exited with status {code}"
            if isinstance(code, str):
                print(code, file=sys.stderr)
            measurement.finish("exited", code if isinstance(code, int) else 1, str(message))
    except BaseException as error:  # noqa: BLE001 - everything the script raises is reported
        sys.stderr.write(_user_traceback(error))
        measurement.finish("crashed", 1, f"{type(error).__name__}: {error}")
    measurement.finish("ended", 0)


if __name__ == "__main__":
    main()
