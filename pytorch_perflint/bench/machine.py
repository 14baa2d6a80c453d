"""What the numbers were measured on: a result without its machine cannot be compared."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class Machine:
    """The hardware and software a run used."""

    cpu_model: str
    cpu_count: int  # logical CPUs in the machine
    cpus_available: int  # those this process may run on
    memory_gb: Optional[float]
    gpus: Tuple[str, ...]
    torch_version: str
    cuda_version: Optional[str]
    cudnn_version: Optional[int]
    python_version: str
    platform: str
    default_num_threads: int  # torch's intra-op threads before the harness set its own


def load_average() -> Optional[Tuple[float, float, float]]:
    """1, 5 and 15-minute load averages (None where the OS has none)."""
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return None
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_gb() -> Optional[float]:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def describe() -> Machine:
    import torch

    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    gpus: Tuple[str, ...] = ()
    if torch.cuda.is_available():
        gpus = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return Machine(
        cpu_model=_cpu_model(),
        cpu_count=os.cpu_count() or 1,
        cpus_available=available,
        memory_gb=_memory_gb(),
        gpus=gpus,
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        cudnn_version=cudnn,
        python_version=platform.python_version(),
        platform=platform.platform(),
        default_num_threads=torch.get_num_threads(),
    )
