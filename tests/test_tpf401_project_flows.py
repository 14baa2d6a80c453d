"""TPF401 through project objects and calls: an attribute a method sets on every arm of an
``if``/``elif`` to an array (one arm building it from a list, ``table = []`` ... ``table =
np.stack(table)``, which says nothing of the other arms' arrays changed in place); a
parameter whose callers pass it through ``*[np.array(v) for v in [a, b, c]]`` (each position
the comprehension's element). Look-alikes: a list display that does reach the read (changed
in place), a list of arrays, comprehensions whose element depends on its target, that filter,
or that walk something other than a display; a project generator's items are what every
``yield`` gives (a method's, a nested one's, a function's), not when the yields disagree, one
takes a sent value (``got = yield x``), or the generator is asynchronous."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

ARMS = {
    "grids.py": """
        import numpy as np


        class Grid:
            def __init__(self, size, mode):
                self.size = size
                self.build(mode)

            def build(self, mode):
                base = np.eye(self.size)
                if mode == "flat":
                    table = np.zeros((1, self.size, self.size))
                    table[0] = base
                    self.table = table
                elif mode == "hops":
                    table = []
                    for k in range(3):
                        table.append(base * k)
                    table = np.stack(table)
                    self.table = table
                else:
                    raise ValueError(mode)
                self.rows = []
                for r in range(self.size):
                    self.rows.append(base[r])
    """,
    "net.py": """
        import numpy as np
        import torch
        from grids import Grid


        class Net(torch.nn.Module):
            def __init__(self, size):
                super().__init__()
                self.grid = Grid(size, "flat")
                self.register_buffer("table", torch.tensor(self.grid.table, dtype=torch.float32))  #!
                self.rows = torch.tensor(self.grid.rows)


        def stacked(size):
            parts = []
            for k in range(size):
                parts.append(np.ones(k))
            parts[0] = np.zeros(1)
            return torch.tensor(parts)
    """,
}


def test_an_array_attribute_set_in_every_arm_of_a_builder(tmp_path: Path) -> None:
    assert _findings(tmp_path, ARMS, "TPF401") == _marked(ARMS)


SPREAD = {
    "ranker.py": """
        import torch


        class Ranker(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.emb = torch.nn.Embedding(n, 8)

            def score(self, user, history, candidates):
                seen = self.emb(torch.LongTensor(history))  #!
                return self.emb(torch.LongTensor(candidates)) @ seen.mean(0)  #!

            def raw(self, first, second):
                return torch.LongTensor(first), torch.LongTensor(second)

            def picky(self, first, second):
                return torch.LongTensor(first)

            def filtered(self, first, second):
                return torch.LongTensor(first)
    """,
    "evaluate.py": """
        import numpy as np


        def evaluate(ranker, users, pool):
            for u, hist, cands in users:
                ranker.score(*[np.array(v) for v in [[u], hist, cands]])
                ranker.raw(*[v for v in [np.zeros(2), [1, 2]]])
                ranker.picky(*[np.array(v) for v in pool])
                ranker.filtered(*[np.array(v) for v in [hist, cands] if len(v)])
    """,
}


def test_a_parameter_passed_by_spreading_a_comprehension_of_arrays(tmp_path: Path) -> None:
    assert _findings(tmp_path, SPREAD, "TPF401") == _marked(SPREAD)


GENERATORS = {
    "slicer.py": """
        import numpy as np


        class Slicer:
            def __init__(self, path, size):
                self.rows = np.load(path + ".npy")
                self.size = size

            def windows(self):
                for start in range(0, len(self.rows), self.size):
                    yield self.rows[start:start + self.size], start

            def nested(self):
                def walk():
                    for start in range(0, len(self.rows), self.size):
                        yield self.rows[start:start + self.size]
                return walk()

            def mixed(self):
                yield self.rows[:1]
                yield [1, 2]

            def chatty(self):
                got = yield self.rows[:1]
                yield self.rows[1:]


        def pairs(xs, ys, size):
            for i in range(0, len(xs), size):
                yield xs[i:i + size], ys[i:i + size]


        async def later(xs):
            yield xs[:1]
    """,
    "use.py": """
        import numpy as np
        import torch
        from slicer import Slicer, later, pairs


        def run(path):
            s = Slicer(path, 8)
            for block, start in s.windows():
                torch.tensor(block)  #!
                torch.tensor(start)
            for piece in s.nested():
                torch.Tensor(piece)  #!
            for a, b in pairs(np.zeros((9, 2)), [1, 2, 3], 2):
                torch.tensor(a)  #!
                torch.tensor(b)
            for m in s.mixed():
                torch.tensor(m)
            for c in s.chatty():
                torch.tensor(c)


        async def run_later():
            async for x in later(np.ones(3)):
                torch.tensor(x)
    """,
}


def test_what_a_project_generator_yields(tmp_path: Path) -> None:
    assert _findings(tmp_path, GENERATORS, "TPF401") == _marked(GENERATORS)
