"""A loader's literal arguments are known however deep the read that reaches it: a chain of
project helpers long enough to exhaust the engine's depth before the ``DataLoader(...)``
call still reads ``pin_memory=True`` (TPF104), not an unknown value."""

from __future__ import annotations

from test_loader_options_flow import _findings

from project_tree import write_project


def _chain(length: int) -> str:
    """``level0`` returns what ``level1`` returns ... ``levelN`` builds the loader; ``walk0``
    hands its parameter to ``walk1`` ... ``walkN`` copies its batches."""
    lines = ["import torch", "from torch.utils.data import DataLoader", "", ""]
    for step in range(length):
        lines += [f"def walk{step}(loader, net):", f"    walk{step + 1}(loader, net)", "", ""]
    lines += [f"def walk{length}(loader, net):", "    for x in loader:", '        net(x.to(torch.device("cuda")))', "", ""]
    for step in range(length):
        lines += [f"def level{step}(ds):", f"    return level{step + 1}(ds)", "", ""]
    lines += [f"def level{length}(ds):", "    return DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True)", ""]
    return "\n".join(lines)


LENGTH = 10
SCRIPT = '''
    import torch

    from chain import level0, walk0


    def main(ds, net):
        walk0(level0(ds), net)
'''


def test_literal_loader_arguments_at_the_end_of_a_long_chain(tmp_path):
    files = {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n', "chain.py": _chain(LENGTH), "train.py": SCRIPT}
    root = write_project(tmp_path / "p", files)
    assert _findings(root).get("TPF104") == {("chain.py", 4 * LENGTH + 7)}
