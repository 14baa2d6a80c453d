"""Where a profiled run's time went, read from ``torch.profiler``'s event tree.

Loaded by ``bootstrap`` inside the profiled run (``bench SCRIPT --profile``), so like
it this file needs only the standard library and torch. It sums, per source line of the
user's code, the time spent

- waiting on a DataLoader (the ``enumerate(DataLoader)#...__next__`` ranges): the cost
  worker processes could hide (TPF101, TPF103);
- in host syncs (``aten::item``, ``aten::_local_scalar_dense``, CUDA synchronisation): TPF202;
- in anomaly mode's bookkeeping: the stack captured for every op in the forward pass and the
  NaN checks of every gradient in the backward pass (TPF204);

and collects PyTorch's own anti-pattern matches (``torch.profiler._pattern_matcher``) with
the line each points at. The parent maps lines to findings.
"""

import os
import sys

DATALOADER_PREFIX = "enumerate(DataLoader)#"
SYNC_NAMES = frozenset(
    {
        "aten::item",
        "aten::_local_scalar_dense",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
    }
)
# NaN checks the autograd engine runs on every gradient while anomaly mode is on.
ANOMALY_BACKWARD_NAMES = frozenset({"aten::isnan", "aten::_is_any_true"})
# ... and the read of each check's answer (the engine itself syncs nowhere else).
ANOMALY_BACKWARD_READS = frozenset({"aten::item", "aten::_local_scalar_dense"})
BACKWARD_PREFIX = "autograd::engine::evaluate_function"
# The stack anomaly mode captures for every op it records.
ANOMALY_FORWARD_FILE = "torch" + os.sep + "fx" + os.sep + "traceback.py("
ANOMALY_FORWARD_FUNCTION = ": format_stack"


def _name(event):
    """The event's name; the profiler can hand back names of freed strings (torch's own
    pattern matcher notes it), which are skipped."""
    try:
        return event.name
    except UnicodeDecodeError:
        return ""


def _location(event):
    """``file:line`` of the user's code that led to ``event``: the innermost Python caller
    outside torch and outside the measuring bootstrap (torch's ``source_code_location``,
    plus that exclusion), with the file made absolute again."""
    from torch._C._profiler import _EventType

    while event is not None:
        try:
            if event.tag in (_EventType.PyCall, _EventType.PyCCall):
                caller = event.extra_fields.caller
                name = caller.file_name
                if not name.startswith("torch" + os.sep) and not name.endswith(_IGNORED_FILES):
                    return f"{_absolute(name)}:{caller.line_number}"
        except Exception:  # noqa: BLE001 - the profiler's freed-string problem
            return None
        event = event.parent
    return None


# The bootstrap's own wrappers sit between the user's code and torch.
_IGNORED_FILES = tuple(os.path.join("bench", "script", name) for name in ("bootstrap.py", "profiling.py"))


def _absolute(name):
    """The profiler strips sys.path prefixes from file names: put the one that holds it back."""
    if os.path.isabs(name):
        return name
    for folder in sys.path:
        candidate = os.path.join(folder or os.getcwd(), name)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return name


def _category(name, in_backward):
    if name.startswith(DATALOADER_PREFIX):
        return "dataloader"
    if in_backward and (name in ANOMALY_BACKWARD_NAMES or name in ANOMALY_BACKWARD_READS):
        return "anomaly"
    if name in SYNC_NAMES:
        return "sync"
    if name.startswith(ANOMALY_FORWARD_FILE) and name.endswith(ANOMALY_FORWARD_FUNCTION):
        return "anomaly"
    return None


def _walk(events, totals):
    """Depth-first; an event that falls in a category counts whole and is not entered,
    so nested events (``aten::item`` holds ``_local_scalar_dense``) count once."""
    stack = [(event, False) for event in events]
    while stack:
        event, in_backward = stack.pop()
        name = _name(event)
        category = _category(name, in_backward)
        if category is not None:
            key = (category, _location(event))
            seconds, count = totals.get(key, (0.0, 0))
            totals[key] = (seconds + event.duration_time_ns / 1e9, count + 1)
            continue
        inside = in_backward or name.startswith(BACKWARD_PREFIX)
        stack.extend((child, inside) for child in event.children)


def _robust(pattern_class):
    class Robust(pattern_class):
        def match(self, event):
            try:
                return super().match(event)
            except Exception:  # noqa: BLE001 - an unreadable event does not match
                return False

    return Robust


# PyTorch's patterns whose advice holds on any device; the others are about GPUs (TF32,
# foreach optimizers, host-device copies, fp16 shapes) and mislead on a CPU-only run.
ANY_DEVICE_PATTERNS = ("SynchronizedDataLoaderPattern", "GradNotSetToNonePattern", "Conv2dBiasFollowedByBatchNorm2dPattern")
CUDA_PATTERNS = ("ExtraCUDACopyPattern", "FP32MatMulPattern", "OptimizerSingleTensorPattern", "MatMulDimInFP16Pattern")


def _patterns(prof, errors, cuda_used):
    from torch.profiler import _pattern_matcher as matcher

    names = ANY_DEVICE_PATTERNS + (CUDA_PATTERNS if cuda_used else ())
    classes = [getattr(matcher, name, None) for name in names]
    found = {}
    for pattern_class in classes:
        if pattern_class is None:
            continue
        try:
            pattern = _robust(pattern_class)(prof)
            events = pattern.matched_events()
        except Exception as problem:  # noqa: BLE001 - one pattern failing leaves the others
            errors.append(f"{pattern_class.__name__}: {type(problem).__name__}: {problem}")
            continue
        for event in events:
            key = (pattern.name, _location(event))
            entry = found.setdefault(
                key, {"pattern": pattern.name, "location": key[1], "seconds": 0.0, "count": 0, "url": pattern.url, "description": pattern.description}
            )
            entry["seconds"] += event.duration_time_ns / 1e9
            entry["count"] += 1
    return list(found.values())


def analyse(prof, window_s, cuda_used=False):
    """The profiled run's evidence as plain data (JSON-ready)."""
    errors = []
    totals = {}
    tree = prof.profiler.kineto_results.experimental_event_tree()
    _walk(tree, totals)
    rows = [
        {"category": category, "location": location, "seconds": seconds, "count": count}
        for (category, location), (seconds, count) in sorted(totals.items(), key=lambda item: -item[1][0])
    ]
    return {"window_s": window_s, "rows": rows, "patterns": _patterns(prof, errors, cuda_used), "errors": errors}
