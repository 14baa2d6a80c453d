"""Whether a script already chose its numeric precision (TPF601, TPF603).

A text test over the module (and, for TPF603, the project modules it imports): autocast or
AMP, a loss scaler, a half or bfloat16 model, a TF32 setting, or a framework that sets the
precision (Accelerate, Lightning, DeepSpeed, a `Trainer`, apex). Comments count too: a
false "chose" only keeps a rule silent, which is the side precision prefers.
"""

from __future__ import annotations

import re

_PRECISION = re.compile(
    r"autocast|GradScaler|\bamp\b|\.half\(|float16|bfloat16|\bbf16\b|\bfp16\b|mixed_precision|precision\s*=\s*[\"'\d]"
    r"|tf32|set_float32_matmul_precision|fp32_precision|Accelerator|deepspeed|\bapex\b|lightning|Trainer\("
    r"|\.to\(\s*dtype"
)


def chooses_precision(source: str) -> bool:
    """The text sets or hands over the training precision (see the module docstring)."""
    return bool(_PRECISION.search(source))
