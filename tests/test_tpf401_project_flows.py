"""TPF401 through project objects and calls: an attribute a method sets on every arm of an
``if``/``elif`` to an array (one arm building it from a list, ``table = []`` ... ``table =
np.stack(table)``, which says nothing of the other arms' arrays changed in place); a
parameter whose callers pass it through ``*[np.array(v) for v in [a, b, c]]`` (each position
the comprehension's element). Look-alikes: a list display that does reach the read (changed
in place), a list of arrays, comprehensions whose element depends on its target, that filter,
or that walk something other than a display; a project generator's items are what every
``yield`` gives (a method's, a nested one's, a function's), not when the yields disagree, one
takes a sent value (``got = yield x``), or the generator is asynchronous; an entry of a dict a
project function fills by item writes (``out["x_" + split] = archive["x"]``, read as
``data["x_test"]``), not when another entry's key may be the one read and holds something else
(``out["x_" + str(n)]``, ``out[key]``) or the dict is changed otherwise (``out.update(...)``)."""

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


RECORDS = {
    "store.py": """
        import os
        import numpy as np


        class Batches:
            def __init__(self, xs, ys, size):
                self.size = size
                if len(xs) % size:
                    pad = size - len(xs) % size
                    xs = np.concatenate([xs, np.repeat(xs[-1:], pad, axis=0)])
                    ys = np.concatenate([ys, np.repeat(ys[-1:], pad, axis=0)])
                self.xs = xs
                self.ys = ys

            def shuffle(self):
                order = np.random.permutation(len(self.xs))
                self.xs, self.ys = self.xs[order], self.ys[order]

            def walk(self):
                def inner():
                    for i in range(0, len(self.xs), self.size):
                        yield self.xs[i:i + self.size], self.ys[i:i + self.size]
                return inner()


        def load_splits(folder, size):
            out = {}
            for split in ["train", "test"]:
                archive = np.load(os.path.join(folder, split + ".npz"))
                out["x_" + split] = archive["x"]
                out["y_" + split] = archive["y"]
            out["train_batches"] = Batches(out["x_train"], out["y_train"], size)
            out["names"] = ["a", "b"]
            out["x_meta"] = {"rows": 3}
            return out


        def mixed(size):
            out = {}
            out["x_" + "first"] = np.zeros(size)
            out["x_" + str(size)] = [size]
            return out


        def updated(folder):
            out = {"w": np.load(folder + "/w.npy")}
            out.update(extra=[1, 2])
            return out


        def keyed(folder, key):
            out = {"w": np.load(folder + "/w.npy")}
            out[key] = [1, 2]
            return out
    """,
    "run.py": """
        import torch
        from store import keyed, load_splits, mixed, updated


        def main(folder):
            data = load_splits(folder, 16)
            labels = torch.Tensor(data["y_test"])  #!
            names = torch.tensor(data["names"])
            test = torch.tensor(data["x_test"])  #!
            first = torch.tensor(mixed(3)["x_first"])
            for step, (x, y) in enumerate(data["train_batches"].walk()):
                torch.Tensor(x)  #!
                torch.Tensor(y)  #!
            torch.tensor(updated(folder)["w"])
            torch.tensor(keyed(folder, "w")["w"])
    """,
}


def test_entries_of_a_dict_a_loader_function_fills_by_key(tmp_path: Path) -> None:
    assert _findings(tmp_path, RECORDS, "TPF401") == _marked(RECORDS)
