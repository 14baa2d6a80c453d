"""Canonical qualified names for torch APIs that are reachable under several paths.

``torch.utils.data.dataloader.DataLoader`` and ``torch.utils.data.DataLoader`` are one class;
rules match the canonical spelling and this module maps the others onto it.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

_EXACT: Dict[str, str] = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": (
        "torch.nn.parallel.DistributedDataParallel"
    ),
    "torch.autograd.anomaly_mode.set_detect_anomaly": "torch.autograd.set_detect_anomaly",
    "torch.autograd.anomaly_mode.detect_anomaly": "torch.autograd.detect_anomaly",
    "torch.set_anomaly_enabled": "torch.autograd.set_detect_anomaly",
    "torch.autograd.grad_mode.no_grad": "torch.no_grad",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.inference_mode": "torch.inference_mode",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "torch.autograd.grad_mode.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.grad_mode.enable_grad": "torch.enable_grad",
    "torch.amp.autocast_mode.autocast": "torch.autocast",
    "torch.amp.autocast": "torch.autocast",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast_mode.autocast": "torch.cpu.amp.autocast",
    "torch.nn.utils.parametrizations.weight_norm": "torch.nn.utils.parametrizations.weight_norm",
    "torch.autograd.profiler.profile": "torch.autograd.profiler.profile",
    "torch.profiler.profiler.profile": "torch.profiler.profile",
    "torch.autograd.profiler.emit_nvtx": "torch.autograd.profiler.emit_nvtx",
    "torch.nn.SyncBatchNorm": "torch.nn.SyncBatchNorm",
}

# torch.nn.modules.conv.Conv2d, torch.nn.modules.Conv2d -> torch.nn.Conv2d
_NN_MODULES = re.compile(r"^torch\.nn\.modules(?:\.[a-z_0-9]+)?\.([A-Z]\w*)$")
# torch.optim.adam.Adam -> torch.optim.Adam
_OPTIM = re.compile(r"^torch\.optim\.[a-z_0-9]+\.([A-Z]\w*)$")


def canonical(name: Optional[str]) -> Optional[str]:
    """Map a qualified name onto the spelling the rules match."""
    if name is None:
        return None
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    match = _NN_MODULES.match(name)
    if match:
        return f"torch.nn.{match.group(1)}"
    match = _OPTIM.match(name)
    if match and not name.startswith("torch.optim.lr_scheduler"):
        return f"torch.optim.{match.group(1)}"
    return name
