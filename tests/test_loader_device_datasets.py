"""TPF101/TPF102 over a dataset whose tensors are already on the accelerator: pinning them
raises ("only dense CPU tensors can be pinned") and workers cannot share them, so TPF102's
safe fix would break the program. The value engine says when a loader's dataset holds such
tensors (``project/device_values.py``); look-alikes whose tensors stay on the host, or move
only in the training loop, keep both findings."""

from __future__ import annotations

from pathlib import Path
from typing import Set, Tuple

from project_tree import write_project
from test_loader_options_flow import _findings as _by_code


def _findings(root: Path, code: str) -> Set[Tuple[str, int]]:
    return _by_code(root).get(code, set())


PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF102"]\n',
    "tune/__init__.py": "",
    "tune/nets.py": '''
        import torch
        from somewhere_else import Autoencoder


        def build_coder(target="cuda:0"):
            coder = Autoencoder.load_weights("weights.bin")
            return coder.to(target), target
    ''',
    "tune/loaders.py": '''
        import torch
        from torch.utils.data import DataLoader, TensorDataset


        @torch.no_grad()
        def encoded_loader(samples, coder, batch, precompute=False):
            if precompute:
                encoded = []
                for position in range(len(samples)):
                    record = samples[position]
                    code = coder.encode(record["pixels"].unsqueeze(0).to(coder.device)).mean
                    record["pixels"] = code.squeeze(0) * 0.5
                    encoded.append(record)
            if precompute:
                return DataLoader(encoded, batch_size=batch, shuffle=True)
            return DataLoader(samples, batch_size=batch, shuffle=True)


        def pairs_on_gpu(inputs, targets):
            held = TensorDataset(inputs.cuda(), targets.cuda())
            return DataLoader(held, batch_size=32)


        def noise_on_gpu(count, where):
            table = [torch.randn(8, device=where) for _ in range(count)]
            return DataLoader(table, batch_size=4)


        def outputs_list(net, frames, where):
            made = []
            for frame in frames:
                made.append(net(frame.to(where)))
            return DataLoader(made, batch_size=4)


        def host_pairs(inputs, targets):
            held = TensorDataset(inputs.float(), targets.long())
            return DataLoader(held, batch_size=32)


        def host_list(count):
            table = [torch.randn(8) for _ in range(count)]
            return DataLoader(table, batch_size=4)


        def moved_in_loop(samples, where):
            made = []
            for sample in samples:
                made.append(sample)
            loader = DataLoader(made, batch_size=4)
            for batch in loader:
                batch = batch.to(where)
            return loader
    ''',
    "tune/run.py": '''
        import torch
        from torch import nn

        from .loaders import encoded_loader, host_list, host_pairs, moved_in_loop, noise_on_gpu, outputs_list, pairs_on_gpu
        from .nets import build_coder


        def main(samples, frames):
            coder, target = build_coder()
            first = encoded_loader(samples, coder, 4, precompute=True)
            second = pairs_on_gpu(torch.zeros(4, 2), torch.ones(4))
            third = noise_on_gpu(16, torch.device("cuda"))
            fourth = outputs_list(nn.Linear(3, 3).cuda(), frames, "cuda")
            fifth = host_pairs(torch.zeros(4, 2), torch.ones(4))
            sixth = host_list(16)
            seventh = moved_in_loop(samples, target)
            return first, second, third, fourth, fifth, sixth, seventh
    ''',
}


def test_datasets_on_the_accelerator_are_neither_pinned_nor_given_workers(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    found = _by_code(root)
    # Silent: latents cached from a model on the GPU (line 15), a TensorDataset of moved
    # tensors (21), factory tensors made there (26), a model's outputs there (33).
    # Reported: the uncached loader (16), host tensors (38, 43), a move in the loop (50).
    assert found.get("TPF102", set()) == {("tune/loaders.py", 16), ("tune/loaders.py", 38), ("tune/loaders.py", 43), ("tune/loaders.py", 50)}
    assert found.get("TPF101", set()) == {("tune/loaders.py", 16), ("tune/loaders.py", 43), ("tune/loaders.py", 50)}


COMMAND_LINE = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF102"]\n',
    "cli.py": '''
        import fire
        import torch
        from torch.utils.data import DataLoader


        def train(table, workers=0, pin=False, device="cuda"):
            loader = DataLoader(table, num_workers=workers, pin_memory=pin)
            for batch in loader:
                batch.to(device)


        def serve(table, workers=0, pin=True):
            return DataLoader(table, num_workers=workers, pin_memory=pin)


        HANDLERS = {"serve": serve}

        if __name__ == "__main__":
            fire.Fire(train)
    ''',
}


def test_a_function_fire_runs_reads_its_defaults_as_command_line_options(tmp_path):
    """``fire.Fire(train)`` calls ``train`` with its parameters from the command line: their
    defaults (``workers=0``), as for ``argparse`` options; a ``False`` default is not kept (an
    option made to turn a feature on), and a function that escapes otherwise stays unknown."""
    root = write_project(tmp_path / "p", COMMAND_LINE)
    found = _by_code(root)
    assert found.get("TPF101", set()) == {("cli.py", 7)}
    assert found.get("TPF102", set()) == set()
