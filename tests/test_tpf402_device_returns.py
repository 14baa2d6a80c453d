"""TPF402 with the move's target a project function's return: ``.to(default_device())``
where ``default_device()`` returns ``torch.device("cuda" if available else "cpu")`` is a
move to the accelerator (a variable target: the fix is unsafe). Look-alikes: a function
that returns the host device, one whose return is not known, one that returns a dtype."""

from __future__ import annotations

from project_tree import write_project
from test_loader_options_flow import _findings

PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF402"]\n',
    "placement.py": '''
        import torch


        def default_device():
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")


        def host_device():
            return torch.device("cpu")


        def chosen_device(name):
            return torch.device(name)


        def working_dtype():
            return torch.float16
    ''',
    "batches.py": '''
        import numpy as np
        import torch

        from placement import chosen_device, default_device, host_device, working_dtype


        def as_tensor(values: np.ndarray):
            return torch.tensor(values, dtype=torch.float32).to(default_device())


        def noise(n):
            return torch.randn(n).to(default_device())


        def on_host(n):
            return torch.zeros(n).to(host_device())


        def somewhere(n, name):
            return torch.zeros(n).to(chosen_device(name))


        def cast(n):
            return torch.zeros(n).to(working_dtype())
    ''',
}


def test_a_device_a_project_function_returns_is_a_move_target(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    assert _findings(root).get("TPF402", set()) == {("batches.py", 8), ("batches.py", 12)}
