"""Running program texts: each one a real module in a temp folder, its global flags fenced.

Why a file and not ``exec``: DataLoader workers pickle the dataset by its module and class
name. A program written to ``<tmp>/tpf101_before_1.py`` and imported under that name (the
folder on ``sys.path``) pickles under fork and spawn alike, as user code would.

Why fence global flags: before and after run in one process, interleaved. A program that
switches on anomaly detection or the cuDNN autotuner at import would otherwise change the
other program's timings. Each program keeps its own copy of those flags; they are put in
place around each of its calls and the defaults restored afterwards, as if it ran alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import random
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

from .strict import CUBLAS_WARNING, strict_flags, unimpose

_counter = itertools.count(1)


@dataclass(frozen=True)
class GlobalFlags:
    """Process-wide torch switches a program may flip (at import, in setup or in run)."""

    anomaly: bool
    anomaly_check_nan: bool
    grad_enabled: bool
    cudnn_enabled: bool
    cudnn_benchmark: bool
    cudnn_deterministic: bool
    cudnn_allow_tf32: bool
    # The legacy TF32 switches; None where reading them raises (torch >= 2.9 after a
    # program set the new ``fp32_precision`` API: mixing the two is an error there).
    matmul_allow_tf32: Optional[bool]
    matmul_precision: Optional[str]
    matmul_fp32_precision: Optional[str]  # the new API (torch >= 2.9), None before
    deterministic_algorithms: bool
    default_dtype: torch.dtype
    deterministic_warn_only: bool = False

    @classmethod
    def capture(cls) -> "GlobalFlags":
        return cls(
            anomaly=torch.is_anomaly_enabled(),
            anomaly_check_nan=torch.is_anomaly_check_nan_enabled(),
            grad_enabled=torch.is_grad_enabled(),
            cudnn_enabled=torch.backends.cudnn.enabled,
            cudnn_benchmark=torch.backends.cudnn.benchmark,
            cudnn_deterministic=torch.backends.cudnn.deterministic,
            cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
            matmul_allow_tf32=_legacy(lambda: torch.backends.cuda.matmul.allow_tf32),
            matmul_precision=_legacy(torch.get_float32_matmul_precision),
            matmul_fp32_precision=getattr(torch.backends.cuda.matmul, "fp32_precision", None),
            deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
            default_dtype=torch.get_default_dtype(),
            deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        )

    def apply(self) -> None:
        torch.autograd.set_detect_anomaly(self.anomaly, check_nan=self.anomaly_check_nan)
        torch.set_grad_enabled(self.grad_enabled)
        torch.backends.cudnn.enabled = self.cudnn_enabled
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        torch.backends.cudnn.deterministic = self.cudnn_deterministic
        torch.backends.cudnn.allow_tf32 = self.cudnn_allow_tf32
        new_api = self.matmul_fp32_precision is not None
        if new_api:
            torch.backends.cuda.matmul.fp32_precision = "none"  # the legacy switches work again
        if self.matmul_allow_tf32 is not None and self.matmul_precision is not None:
            torch.backends.cuda.matmul.allow_tf32 = self.matmul_allow_tf32
            torch.set_float32_matmul_precision(self.matmul_precision)
        elif new_api:
            torch.backends.cuda.matmul.fp32_precision = self.matmul_fp32_precision
        torch.use_deterministic_algorithms(self.deterministic_algorithms, warn_only=self.deterministic_warn_only)
        torch.set_default_dtype(self.default_dtype)

    def strict(self, defaults: "GlobalFlags") -> "GlobalFlags":
        """These flags for an equivalence check (``bench.strict``): deterministic algorithms
        and full float32 wherever the program kept the process defaults; what it set itself
        (TF32 on purpose, deterministic algorithms) stays."""
        return strict_flags(self, defaults)


def _legacy(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except RuntimeError:  # "mix of the legacy and new APIs" (torch >= 2.9)
        return None


def seed_everything(seed: int) -> None:
    """The same random streams for both programs: Python, NumPy (if present) and torch."""
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy comes with the bench extra
        pass
    torch.manual_seed(seed)  # seeds every CUDA device too


class ProgramError(RuntimeError):
    """A scenario program that failed to import, set up or run."""


class Program:
    """One loaded program text with its state and its own global flags."""

    def __init__(self, module: ModuleType, label: str, defaults: GlobalFlags) -> None:
        self.module = module
        self.label = label
        self.state: Any = None
        self._warnings: Dict[str, None] = {}
        self._defaults = defaults
        self._flags = GlobalFlags.capture()  # as the import left them
        defaults.apply()
        for name in ("setup", "run"):
            if not callable(getattr(module, name, None)):
                raise ProgramError(f"{label}: the program defines no {name}() function")

    @contextlib.contextmanager
    def active(self, strict: bool = False) -> Iterator[None]:
        """Put this program's flags in place; keep what it changed; restore the defaults.

        ``strict``: the equivalence check's settings on top (``GlobalFlags.strict``); what
        the program changes during the call is still kept, the check's own switches are not.
        Warnings the program raises are collected (once each) rather than printed over the
        progress bar; the report lists them.
        """
        own = self._flags
        imposed = own.strict(self._defaults) if strict else own
        imposed.apply()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            try:
                yield
            finally:
                self._flags = unimpose(GlobalFlags.capture(), imposed, own)
                self._defaults.apply()
                for item in caught:
                    if strict and CUBLAS_WARNING in str(item.message):
                        continue
                    text = f"{item.category.__name__}: {str(item.message).splitlines()[0] if str(item.message) else ''}"
                    self._warnings.setdefault(text, None)

    @property
    def warnings(self) -> Tuple[str, ...]:
        return tuple(self._warnings)

    def setup(self, size: dict, device: "torch.device", seed: int) -> None:
        with self.active():
            seed_everything(seed)
            self.state = self.module.setup(dict(size), device)

    def run_once(self, seed: Optional[int] = None, strict: bool = False) -> Any:
        """One run; ``strict`` for the equivalence check (deterministic, full float32)."""
        with self.active(strict):
            if seed is not None:
                seed_everything(seed)
            return self.module.run(self.state)

    @property
    def run(self) -> Callable[[Any], Any]:
        return self.module.run


class Workspace:
    """A temp folder on ``sys.path`` that holds program files for the length of a run."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="perflint-bench-"))
        self._names: List[str] = []
        self.defaults = GlobalFlags.capture()
        sys.path.insert(0, str(self.folder))

    def load(self, source: str, stem: str, label: str) -> Program:
        """Write ``source`` to a fresh module file and import it (a fresh namespace each time)."""
        name = f"{stem}_{next(_counter)}"
        path = self.folder / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        self._names.append(name)
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            self.defaults.apply()
            raise ProgramError(f"{label}: import failed: {type(error).__name__}: {error}") from error
        return Program(module, label, self.defaults)

    def close(self) -> None:
        self.defaults.apply()
        for name in self._names:
            sys.modules.pop(name, None)
        with contextlib.suppress(ValueError):
            sys.path.remove(str(self.folder))
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
