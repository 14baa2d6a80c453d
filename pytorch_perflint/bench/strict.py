"""The equivalence check's settings: deterministic algorithms and full float32 arithmetic.

Before and after must compute the same thing; the check compares them within a tight
tolerance. On a GPU two runs of the *same* program need not agree that closely by default:

- cuDNN picks convolution algorithms by heuristics (or autotuning), and several of them,
  notably for the weight gradient, sum with atomics in an order that changes run to run;
- convolutions run in TF32 by default on Ampere and later (``cudnn.allow_tf32`` is True),
  rounding inputs to a 10-bit mantissa, so two algorithms, or a convolution with and without
  a fused bias, differ by about 1e-3 relative, and training steps amplify it.

The first GPU run saw it: the TPF301 scenario (conv + BatchNorm, bias removed by the fix)
failed the check in one run and passed in the next on the same machine. So the check runs
(the one run of each program from the same seed that before, after and the A/A control are
compared on) switch on ``cudnn.deterministic``, ``torch.use_deterministic_algorithms(True,
warn_only=True)`` and full float32 (``cudnn.allow_tf32 = False``, float32 matmul precision
"highest"): results then differ only by the fix's own arithmetic. Only where the program
kept the process default: a program that sets TF32 or deterministic algorithms itself (the
TPF603 fix turns TF32 on; its tolerance is TF32's) keeps its setting. Timing never uses
these settings: the timed runs keep the defaults and the programs' own flags, so what is
timed is what users run. ``warn_only``: an op with no deterministic kernel warns (the
report lists the programs' warnings) instead of failing the check.

cuBLAS is bitwise reproducible run to run on one stream; only with several streams does it
need ``CUBLAS_WORKSPACE_CONFIG``. The harness runs every program on one stream, so it does not
set it (it would change the workspace cuBLAS times with) and drops the warning
``use_deterministic_algorithms`` raises about it. ``bench SCRIPT``'s check runs are processes
of their own, untimed, so they get it (``CUBLAS_CONFIG``) unless the user set it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

# Each switch and its value for the check; applied where the program kept the default.
STRICT: Dict[str, Any] = {"cudnn_deterministic": True, "cudnn_allow_tf32": False, "deterministic_algorithms": True}
# The float32 matmul precision: one setting spelled three ways (legacy flag, legacy
# precision, the torch >= 2.9 API), kept or replaced together.
MATMUL = ("matmul_allow_tf32", "matmul_precision", "matmul_fp32_precision")
CUBLAS_CONFIG = ":4096:8"
# What the JSON says the check ran with.
CHECK_SETTINGS = (
    "deterministic algorithms (cudnn.deterministic, use_deterministic_algorithms warn_only) and full float32 "
    "(cudnn.allow_tf32 off, float32 matmul precision highest) where the program kept the defaults; timing keeps the defaults"
)


def strict_flags(flags: Any, defaults: Any) -> Any:
    """``flags`` (a ``loading.GlobalFlags``) with the check's settings wherever they equal
    ``defaults``, the process's own."""
    changes: Dict[str, Any] = {name: value for name, value in STRICT.items() if getattr(flags, name) == getattr(defaults, name)}
    if changes.get("deterministic_algorithms"):
        changes["deterministic_warn_only"] = True
    if all(getattr(flags, name) == getattr(defaults, name) for name in MATMUL):
        if flags.matmul_allow_tf32 is not None and flags.matmul_precision is not None:
            changes.update(matmul_allow_tf32=False, matmul_precision="highest")
        elif flags.matmul_fp32_precision is not None:
            changes["matmul_fp32_precision"] = "ieee"
    return dataclasses.replace(flags, **changes)


def unimpose(captured: Any, imposed: Any, own: Any) -> Any:
    """The program's flags after a call made under ``imposed``: what the call changed stays,
    the check's own switches go back to the program's values (``own``)."""
    changes: Dict[str, Any] = {}
    for name in (*STRICT, "deterministic_warn_only"):
        if getattr(captured, name) == getattr(imposed, name):
            changes[name] = getattr(own, name)
    if all(getattr(captured, name) == getattr(imposed, name) for name in MATMUL):
        changes.update({name: getattr(own, name) for name in MATMUL})
    return dataclasses.replace(captured, **changes)

# The warning ``use_deterministic_algorithms`` gives for cuBLAS without that variable: not the
# program's doing, and moot on one stream.
CUBLAS_WARNING = "CUBLAS_WORKSPACE_CONFIG"
