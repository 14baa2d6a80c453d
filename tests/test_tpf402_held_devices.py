"""TPF402 reads the device a move goes to from what holds it: an attribute of a project
object built at module level and filled by attribute writes (a settings bag), a class
attribute, and a tensor's own ``get_device()`` (-1 on the host, where ``.to(-1)`` raises:
a move that runs goes to an accelerator). Look-alikes stay silent: an attribute that holds
the CPU, one whose bag another module rewrites or hands to a merging helper, a bag of a
class with a public method, and ``.to(t.device)`` of a host tensor."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "knobs/__init__.py": "",
    "knobs/base.py": """
        import torch
        from types import SimpleNamespace


        class Knobs(dict):
            def __getattr__(self, key):
                return self[key]

            def __setattr__(self, key, value):
                self[key] = value


        _K = Knobs()
        knobs = _K
        _K.RUN = Knobs()
        _K.RUN.PLACE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        _K.RUN.HOST = torch.device("cpu")
        _K.RUN.WIDTH = 8

        spots = SimpleNamespace()
        spots.main = "cuda:0"
        spots.side = "cpu"


        class Where:
            accel = torch.device("cuda")
    """,
    "knobs/merged.py": """
        import torch


        def fold(into, extra):
            for key, value in extra.items():
                into[key] = value


        M = {}
        class Bag(dict):
            __getattr__ = dict.__getitem__

        folded = Bag()
        folded.SPOT = torch.device("cuda")
        fold(folded, {"SPOT": "cpu"})

        later = Bag()
        later.SPOT = torch.device("cuda")


        class Loaded(dict):
            def load(self, path):
                pass

        loaded = Loaded()
        loaded.SPOT = torch.device("cuda")
    """,
    "cells.py": """
        import torch
        from knobs.base import knobs, spots, Where
        from knobs.merged import folded, later, loaded


        class Cell(torch.nn.Module):
            def forward(self, x):
                h = torch.zeros(x.size(0), 4).to(knobs.RUN.PLACE)  #!
                g = torch.ones(3).to(spots.main)  #!
                w = torch.ones(3).to(Where.accel)  #!
                a = torch.zeros(3).to(knobs.RUN.HOST)
                b = torch.zeros(3).to(spots.side)
                c = torch.zeros(3).to(folded.SPOT)
                d = torch.zeros(3).to(later.SPOT)
                e = torch.zeros(3).to(loaded.SPOT)
                return x + h + g + w + a + b + c + d + e


        def weigh(err, steps):
            scale = torch.arange(1.0, 1.0 + steps)
            scale = scale.to(err.get_device())  #!
            coin = torch.bernoulli(torch.full((1,), 0.5))
            unit = torch.zeros(1).float().to(torch.zeros(2).device)
            return err * scale, coin, unit
    """,
    "run.py": """
        import torch
        from knobs.merged import later

        later.SPOT = torch.device("cpu")
        loaded = None
    """,
}


def test_devices_held_by_objects_and_tensors(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF402") == _marked(PROJECT)
