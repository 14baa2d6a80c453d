"""TPF401 through lists and tuples whose items are known but not their positions.

* A list built by ``append`` inside a loop (``while len(arr) > size: parts.append(arr[:size])``)
  holds any number of items, each one of the forms appended: indexed by a number (``parts[i]``
  with ``i`` from ``range``/``list(range(...))``) it is an array when every form is one.
* A tuple or list display indexed by arithmetic (``pair[step // 2]``) is one of its items.
* A reduction with ``keepdims=True`` of a known array is an array.
* A public method's callers are read although a comment elsewhere names the method
  (``# learn() is called later``): a comment lets nothing escape.

Look-alikes: a slice of such a list (a list), a list whose appends mix arrays and lists,
a list handed to another function before it is read, a tuple of an array and a list, a
reduction along an axis without ``keepdims``, a method named in a string (``getattr``)."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "pieces.py": """
        import random

        import numpy as np
        import torch


        def chunks(arr, size):
            parts = []
            while len(arr) > size:
                parts.append(arr[:size])
                arr = arr[size:]
            parts.append(arr)
            return parts


        def mixed_chunks(arr, size):
            parts = []
            for start in range(0, len(arr), size):
                parts.append(arr[start:start + size])
                parts.append([start])
            return parts


        def handed_chunks(arr, size, sink):
            parts = []
            for start in range(0, len(arr), size):
                parts.append(arr[start:start + size])
            sink(parts)
            return parts


        def walk(table, size):
            parts = chunks(table, size)
            order = list(range(len(parts)))
            random.shuffle(order)
            for i in order:
                torch.tensor(parts[i])  #!
            torch.tensor(parts[1:])
            others = mixed_chunks(table, size)
            for i in range(len(others)):
                torch.tensor(others[i])
            handed = handed_chunks(table, size, print)
            for i in range(len(handed)):
                torch.tensor(handed[i])


        def pairs(table, steps):
            pair = (table[:2], table[2:])
            odd = (table[:2], [0, 1])
            for step in range(steps):
                torch.tensor(pair[step // 2])  #!
                torch.tensor(odd[step // 2])


        def means(table):
            kept = np.mean(table, axis=1, keepdims=True)
            flat = np.mean(table, axis=0)  # a 1-d table gives a scalar (axis 1 would raise on one)
            return torch.tensor(kept), torch.tensor(flat)  #!
    """,
    "learner.py": """
        import torch


        class Learner:
            def learn(self, rows):
                return torch.tensor(rows[:8])  #!

            def score(self, rows):
                return torch.tensor(rows[:8])
    """,
    "run.py": """
        import numpy as np

        from learner import Learner
        from pieces import means, pairs, walk

        table = np.random.rand(64, 3)
        walk(table, 8)
        pairs(table, 4)
        means(table)
        # learn() first, then score()
        model = Learner()
        model.learn(table)
        model.score(table)
        scorer = getattr(model, "score")
        scorer([1, 2, 3])
    """,
}


def test_lists_built_in_loops_and_tuples_indexed_by_numbers(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF401") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
