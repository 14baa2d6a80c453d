"""Arrays the value engine knows from what a program that runs must have held: a reduction
(``np.argmax``, ``.max``...) over a literal axis a 1-d array lacks (``1``, ``-2``: it raises on
one) gives an array; ``np.digitize(x, bins)`` has the shape of ``x``; a branch that loads a
path not known (``np.load``) joined with one that builds an array is an array where a
tensor constructor takes it (an archive makes it raise). Look-alikes: axis ``0`` or ``-1``
(a 1-d array gives a scalar), no axis (a scalar), ``np.digitize`` of a scalar, a load that
allows pickles, a branch with a list."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_perflint.project.kinds import Array, converted_as_array
from test_tensors_project import _findings, _marked
from test_values import _kind

SHAPES = """
    import numpy as np

    table = np.vstack((np.zeros((2, 3)), np.ones((1, 3))))
    flat = np.zeros(5)
"""


@pytest.mark.parametrize(
    "expression",
    ["np.argmax(table, 1)", "np.nanargmax(table, axis=1)", "table.argmax(1)", "table.max(1)", "np.digitize(flat, [0.5])"],
)
def test_shapes_a_running_program_implies(tmp_path: Path, expression: str) -> None:
    assert _kind(tmp_path, {"main.py": SHAPES}, expression) == Array()


@pytest.mark.parametrize(
    "expression",
    ["np.argmax(table, 0)", "np.nanargmax(table)", "table.argmax(-1)", "np.argmax(table, axis=0)", "np.digitize(0.3, flat)", "np.argmax(table, k)"],
)
def test_shapes_a_one_dimensional_array_may_take(tmp_path: Path, expression: str) -> None:
    assert type(_kind(tmp_path, {"main.py": SHAPES}, expression)) is not Array


BRANCHES = {
    "loaders.py": """
        import numpy as np


        def load_a(path):
            labels = np.vstack((np.load(path + "a"), np.load(path + "b")))
            return np.argmax(labels, 1)


        def load_b(path):
            return np.load(path + ".labels")


        def load_c(path):
            return np.digitize(np.load(path + ".x", allow_pickle=True), [0.5])


        def load_d(path):
            return [0, 1]
    """,
    "data.py": """
        import torch
        from loaders import load_a, load_b, load_c, load_d


        def labels_of(name, path):
            if name == "a":
                labels = load_a(path)
            elif name == "b":
                labels = load_b(path)
            else:
                raise ValueError(name)
            return torch.LongTensor(labels)  #!


        def pickled(name, path):
            if name == "a":
                labels = load_a(path)
            else:
                labels = load_c(path)
            return torch.LongTensor(labels)


        def listed(name, path):
            if name == "a":
                labels = load_a(path)
            else:
                labels = load_d(path)
            return torch.LongTensor(labels)
    """,
}


def test_an_array_and_a_load_on_two_branches(tmp_path: Path) -> None:
    assert _findings(tmp_path, BRANCHES, "TPF401") == _marked(BRANCHES)


def test_a_load_that_may_be_an_archive_is_an_array_only_where_converted(tmp_path: Path) -> None:
    assert converted_as_array(_kind(tmp_path, {"main.py": SHAPES}, "np.load(p)"))
    assert not converted_as_array(_kind(tmp_path / "b", {"main.py": SHAPES}, "np.load(p, allow_pickle=True)"))
