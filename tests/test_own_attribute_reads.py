"""Attributes of ``self`` in the value engine: a method's read of an attribute it bound
earlier in its own body (``project/own_reads.py``), and a base's binding read for an object of
a subclass (``self.model = self._build_model()`` in the base runs the subclass's override).

Look-alikes: an attribute bound to an array in one method and a tensor in another, read
elsewhere (unknown); a binding on one arm of an ``if`` the read is outside of; a method of
``self`` called between, or ``self`` handed to a function (either may rebind it); a binding
later in a loop around the read (the next round sees it); a second binding between; a base
whose subclasses build different things, read for the base itself."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked
from test_values import _kind

from pytorch_perflint.project.kinds import Array

OWN = {
    "labels.py": """
        import numpy as np
        import torch


        class Labels:
            def __init__(self, n, dev):
                self.dev = dev
                self.L = None

            def load(self, path):
                self.L = torch.load(path)

            def start(self, hc, n, resume):
                if resume:
                    self.L = self.load_checkpoint()
                if not resume:
                    self.L = np.zeros((hc, n), dtype=np.int32)
                    for nh in range(hc):
                        for i in range(n):
                            self.L[nh, i] = i % 3
                        self.L[nh] = np.random.permutation(self.L[nh])
                    self.L = torch.LongTensor(self.L).to(self.dev)  #!

            def elsewhere(self):
                return torch.LongTensor(self.L)

            def after_a_method(self, hc, n):
                self.L = np.zeros((hc, n))
                self.refresh()
                return torch.LongTensor(self.L)

            def after_super(self, hc, n):
                self.L = np.zeros((hc, n))
                super().reset()
                return torch.LongTensor(self.L)

            def handed_self(self, hc, n):
                self.L = np.zeros((hc, n))
                fill(self)
                return torch.LongTensor(self.L)

            def in_a_branch(self, hc, n, c):
                if c:
                    self.L = np.zeros((hc, n))
                return torch.LongTensor(self.L)

            def next_round(self, hc, n):
                self.L = np.zeros((hc, n))
                out = []
                for _ in range(3):
                    out.append(torch.LongTensor(self.L))
                    self.L = torch.load("x")
                return out

            def rebound_between(self, hc, n):
                self.L = np.zeros((hc, n))
                self.L = torch.load("x")
                return torch.LongTensor(self.L)

            def refresh(self):
                self.L = torch.load("y")

            def load_checkpoint(self):
                return torch.load("z")


        def fill(obj):
            obj.L = torch.load("w")
    """,
}


def test_a_method_reads_the_attribute_it_bound_before(tmp_path: Path) -> None:
    assert _findings(tmp_path, OWN, "TPF401") == _marked(OWN)


BASES = """
    import numpy as np


    class Base:
        def __init__(self, n):
            self.n = n
            self.table = self._build(n)

        def _build(self, n):
            raise NotImplementedError
            return None


    class Grid(Base):
        def _build(self, n):
            return np.zeros((n, n))


    class Names(Base):
        def _build(self, n):
            return ["a"] * n


    grid = Grid(3)
    names = Names(3)
    base = Base(3)
"""


def test_a_base_binding_is_read_for_the_subclass_object(tmp_path: Path) -> None:
    assert _kind(tmp_path, {"main.py": BASES}, "grid.table") == Array()


def test_a_base_binding_of_another_subclass_or_the_base_is_not_an_array(tmp_path: Path) -> None:
    assert type(_kind(tmp_path / "a", {"main.py": BASES}, "names.table")) is not Array
    assert type(_kind(tmp_path / "b", {"main.py": BASES}, "base.table")) is not Array
