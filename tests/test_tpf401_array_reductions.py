"""TPF401: arrays built by arithmetic whose every operand is known. A NumPy reduction of a
known array with no axis (``np.sum(w)``, ``w.max()``) is a NumPy scalar and ``len(...)`` is
a number, so ``(1 - b) / np.array(counts)`` divided by its ``np.sum`` and scaled by
``len(counts)`` is still an array, and so is ``np.power(arr, 2) + np.sum(arr)``. Also kept:
slices of a method's parameters whose every project caller passes an array (through an
intermediate ``self._score(rows)``), and the items a project generator yields over
``np.vstack``. Look-alikes: an operand that is not known (NumPy defers to its reflected
operator), a reduction over axis 0 (a 1-d array gives a scalar), the scalar a reduction gives, ``len`` itself, a
method another class defines under the same name whose callers pass lists, a generator
that yields lists."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "forecaster.py": """
        import numpy as np
        import torch
        from torch import nn


        class Forecaster(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 1)

            def forward(self, x):
                return self.head(x)

            def learn(self, inputs, goals, batch=8):
                for start in range(0, len(inputs), batch):
                    chunk = inputs[start:start + batch]
                    aim = goals[start:start + batch]
                    out = self(torch.tensor(chunk, dtype=torch.float32))  #!
                    err = out - torch.tensor(aim, dtype=torch.float32)  #!
                    err.sum().backward()

            def score(self, rows):
                return self._score(rows)

            def _score(self, rows):
                return self(torch.tensor(rows[:16]))  #!


        class Tabulator:
            def learn(self, inputs, goals):
                return torch.tensor(inputs[0:2]), torch.tensor(goals[0:2])


        def stacked(parts, size):
            merged = np.vstack(parts)
            for begin in range(0, len(merged), size):
                yield merged[begin:begin + size], merged[begin:begin + size, -1]


        def listed(parts):
            for part in parts:
                yield [part, part]


        def weights(counts):
            decay = 0.99
            raw = (1.0 - decay) / np.array(counts)
            scaled = raw / np.sum(raw) * len(counts)
            return torch.FloatTensor(scaled)  #!


        def powered(counts):
            raw = np.power(np.array(counts), 2.0) + np.sum(np.array(counts))
            peak = raw / raw.max()
            first = torch.tensor(raw)  #!
            return first, torch.tensor(peak)  #!


        def scalars(counts):
            raw = np.array(counts)
            return torch.tensor(np.sum(raw)), torch.tensor(raw.mean()), torch.tensor(len(counts))


        def by_axis(counts):
            raw = np.array(counts)
            return torch.tensor(np.sum(raw, axis=0)), torch.tensor(raw.sum(0))


        def mixed(counts, other):
            raw = np.array(counts) * other
            return torch.tensor(raw)
    """,
    "run.py": """
        import numpy as np
        import torch

        from forecaster import Forecaster, Tabulator, listed, mixed, powered, stacked, weights

        series = np.random.rand(200, 4)
        labels = np.random.rand(200, 1)
        model = Forecaster()
        model.learn(series[:150], labels[:150])
        model.score(series[150:])

        table = Tabulator()
        table.learn([1, 2, 3], [4, 5, 6])

        for xs, ys in stacked([series, series], 32):
            torch.tensor(xs)  #!
            torch.tensor(ys)  #!

        for pair in listed([1, 2]):
            torch.tensor(pair)

        print(mixed([1, 2], object()), weights([3, 4]), powered([5, 6]))
    """,
}


def test_arithmetic_of_known_arrays_and_reductions_stays_an_array(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF401") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
