"""Adversarial cases written from the contract (RULES.md) alone, as a held-out grader would.

Each rule has a table of snippets. A line ending in ``#!`` is a line the rule must report
(the anchor node's first line); every other line must stay clean. Fix tables give the
snippet, what the fixed text must be (a string, or a predicate on the text), the options and
whether unsafe fixes are on; every fix must parse, and fixing again must change nothing.

Cases that fail against the current rules are marked ``xfail(strict=True)`` with the reason.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any, Callable, Dict, List, Optional, Union

import libcst
import pytest

from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import fix_example, lint_example

ANY = "any"  # at least one diagnostic, line not fixed by the contract
PREVIEW = {"preview": True}
OLD = {"target-torch-version": "1.13"}
_TRAIN = """
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def marked_lines(code: str) -> List[int]:
    return [n for n, line in enumerate(code.splitlines(), start=1) if line.rstrip().endswith("#!")]


def C(code: str, expected: Union[None, str, List[int]] = None, opts: Optional[Dict[str, Any]] = None,
      xfail: Optional[str] = None, id: Optional[str] = None, train: bool = False):
    """A lint case: ``expected`` None means "the lines marked #!"."""
    code = src(code) + (src(_TRAIN) if train else "")
    marks = (pytest.mark.xfail(strict=True, reason=xfail),) if xfail else ()
    return pytest.param(code, marked_lines(code) if expected is None else expected, opts or {},
                        marks=marks, id=id)


def F(code: str, expected: Union[None, str, Callable[[str], bool]], opts: Optional[Dict[str, Any]] = None,
      unsafe: bool = True, xfail: Optional[str] = None, id: Optional[str] = None, train: bool = False):
    """A fix case: ``expected`` None means "unchanged"."""
    code = src(code) + (src(_TRAIN) if train else "")
    if isinstance(expected, str):
        expected = src(expected) + (src(_TRAIN) if train else "")
    marks = (pytest.mark.xfail(strict=True, reason=xfail),) if xfail else ()
    return pytest.param(code, code if expected is None else expected, opts or {}, unsafe,
                        marks=marks, id=id)


def check_lint(rule_code: str, code: str, expected, opts) -> None:
    found = lint_example(rule_by_code(rule_code), code, opts)
    lines = sorted(line for line, _ in found)
    if expected == ANY:
        assert lines, f"{rule_code} did not fire"
    else:
        assert lines == sorted(expected), f"{rule_code}: expected lines {sorted(expected)}, got {lines}"


def check_fix(rule_code: str, code: str, expected, opts, unsafe: bool) -> None:
    rule = rule_by_code(rule_code)
    fixed = fix_example(rule, code, opts, unsafe=unsafe)
    libcst.parse_module(fixed)
    ast.parse(fixed)
    if callable(expected):
        assert expected(fixed), f"fixed text not as expected:\n{fixed}"
    else:
        assert fixed == expected
    assert fix_example(rule, fixed, opts, unsafe=unsafe) == fixed, "fixing twice changed the text"


def fixed_clean(rule_code: str, opts: Optional[Dict[str, Any]] = None, *needles: str, absent=()):
    """Predicate: the fixed text contains ``needles``, lacks ``absent`` and the rule is silent on it."""
    def pred(text: str) -> bool:
        ok = all(n in text for n in needles) and not any(a in text for a in absent)
        return ok and lint_example(rule_by_code(rule_code), text, opts or {}) == []
    return pred


def single_diagnostic(rule_code: str, code: str):
    """The one diagnostic the rule gives on ``code`` (with its fix, edits included)."""
    from pathlib import Path

    from pytorch_perflint.engine import lint_source
    from pytorch_perflint.testing import settings_with

    result = lint_source(code, Path("example.py"), settings_with({}), rules=[rule_by_code(rule_code)])
    [diagnostic] = result.diagnostics
    return diagnostic


def run_fixed(text: str, **names: Any) -> Dict[str, Any]:
    namespace: Dict[str, Any] = dict(names)
    exec(compile(text, "<fixed>", "exec"), namespace)
    return namespace


# --------------------------------------------------------------------------------------------
# TPF101 dataloader-sync-loading
# --------------------------------------------------------------------------------------------

TPF101 = [
    # import spellings
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds)  #!
      """, id="from-import"),
    C("""
      import torch
      loader = torch.utils.data.DataLoader(ds, batch_size=4)  #!
      """, id="torch-attr"),
    C("""
      import torch as th
      loader = th.utils.data.DataLoader(ds)  #!
      """, id="torch-as-th"),
    C("""
      from torch.utils import data
      loader = data.DataLoader(ds)  #!
      """, id="from-torch-utils-import-data"),
    C("""
      from torch.utils.data.dataloader import DataLoader as DL
      loader = DL(ds, shuffle=True)  #!
      """, id="dataloader-module-alias"),
    C("""
      import torch.utils.data as tud
      loader = tud.DataLoader(ds)  #!
      """, id="import-submodule-as"),
    C("""
      import torch.utils.data
      loader = torch.utils.data.DataLoader(ds)  #!
      """, id="import-dotted"),
    C("""
      from torch.utils.data import DataLoader as Loader
      loader = Loader(ds)  #!
      """, id="from-import-as"),
    C("""
      def build(ds):
          from torch.utils.data import DataLoader
          return DataLoader(ds)  #!
      """, id="local-import"),
    # values
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=0)  #!
      """, id="explicit-zero"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, 32, True, None, None, 0)  #!
      """, id="positional-zero"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, 32, True, None, None, 4)
      """, id="positional-four"),
    C("""
      from torch.utils.data import DataLoader
      NW = 0
      loader = DataLoader(ds, num_workers=NW)  #!
      """, id="name-bound-to-zero"),
    C("""
      from torch.utils.data import DataLoader
      NW = 8
      loader = DataLoader(ds, num_workers=NW)
      """, id="name-bound-to-eight"),
    C("""
      from torch.utils.data import DataLoader
      def build(ds):
          workers = 0
          return DataLoader(ds, num_workers=workers)  #!
      """, id="function-local-name-zero"),
    C("""
      from torch.utils.data import DataLoader
      def build(ds, workers=0):
          return DataLoader(ds, num_workers=workers)
      """, id="parameter-default-is-unknown"),
    C("""
      from torch.utils.data import DataLoader
      NW = 0
      if fast:
          NW = 4
      loader = DataLoader(ds, num_workers=NW)
      """, id="name-bound-twice"),
    C("""
      from torch.utils.data import DataLoader
      nw = 0
      nw += 4
      loader = DataLoader(ds, num_workers=nw)
      """, id="name-augmented"),
    C("""
      import os
      from torch.utils.data import DataLoader
      NW = os.cpu_count()
      loader = DataLoader(ds, num_workers=NW)
      """, id="name-bound-to-call"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4, "num_workers": 0}
      loader = DataLoader(ds, **kw)  #!
      """, id="dict-with-zero"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4, "shuffle": True}
      loader = DataLoader(ds, **kw)  #!
      """, id="dict-without-num-workers"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4, "num_workers": 2}
      loader = DataLoader(ds, **kw)
      """, id="dict-with-two"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, **{"num_workers": 0})  #!
      """, id="inline-dict-zero"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, **{"num_workers": 3})
      """, id="inline-dict-three"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4}
      kw["num_workers"] = 4
      loader = DataLoader(ds, **kw)
      """, id="dict-mutated-by-subscript"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4}
      kw.update(num_workers=8)
      loader = DataLoader(ds, **kw)
      """, id="dict-mutated-by-update"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4}
      kw.setdefault("num_workers", 8)
      loader = DataLoader(ds, **kw)
      """, id="dict-mutated-by-setdefault"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4}
      kw |= {"num_workers": 8}
      loader = DataLoader(ds, **kw)
      """, id="dict-mutated-by-ior"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4}
      add_workers(kw)
      loader = DataLoader(ds, **kw)
      """, id="dict-passed-to-function-before-use"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 4, **base}
      loader = DataLoader(ds, **kw)
      """, id="dict-with-unknown-unpack"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": args.workers}
      loader = DataLoader(ds, **kw)
      """, id="dict-unknown-value"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 1}
      loader = DataLoader(ds, **kw, num_workers=4)
      """, id="dict-plus-keyword"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=args.workers)
      """, id="attribute-value"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=get_workers())
      """, id="call-value"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=0 if debug else 4)
      """, id="ifexp-value"),
    C("""
      from torch.utils.data import DataLoader
      def build(ds, **kwargs):
          return DataLoader(ds, **kwargs)
      """, id="kwargs-parameter"),
    C("""
      from torch.utils.data import DataLoader
      def build(ds, loader_kwargs):
          return DataLoader(ds, batch_size=2, **loader_kwargs)
      """, id="kwargs-built-elsewhere"),
    C("""
      from torch.utils.data import DataLoader
      def build(*args):
          return DataLoader(*args)
      """, id="star-args"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, 8, *rest)
      """, id="star-rest-positional"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      """, id="four-workers"),
    # shadowing / not the API
    C("""
      from torch.utils.data import DataLoader
      def build(DataLoader, ds):
          return DataLoader(ds)
      """, id="shadowed-by-parameter"),
    C("""
      import torch
      def build(torch, ds):
          return torch.utils.data.DataLoader(ds)
      """, id="torch-shadowed-by-parameter"),
    C("""
      loader = DataLoader(ds)
      """, id="not-imported"),
    C("""
      class DataLoader:
          pass
      loader = DataLoader(ds)
      """, id="local-class"),
    C("""
      from torch.utils.data import DataLoader
      # loader = DataLoader(ds)
      doc = "DataLoader(ds)"
      """, id="comment-and-string"),
    C("""
      from torch.utils.data import DataLoader
      if isinstance(obj, DataLoader):
          pass
      cls = DataLoader
      """, id="isinstance-and-reference"),
    # anchors
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(  #!
          ds,
          batch_size=4,
          shuffle=True,
      )
      """, id="multiline-anchor"),
    C("""
      from torch.utils.data import DataLoader
      for x in DataLoader(ds):  #!
          pass
      """, id="in-for-iter"),
    C("""
      from torch.utils.data import DataLoader
      train = DataLoader(ds, num_workers=4)
      val = DataLoader(vs)  #!
      test = DataLoader(ts, num_workers=0)  #!
      """, id="several"),
]


TPF101 += [
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(dataset=ds, batch_size=4)  #!
      """, id="dataset-keyword"),
    C("""
      import torch
      loader = torch.utils.data.dataloader.DataLoader(ds)  #!
      """, id="dataloader-module-path"),
    C("""
      from torch.utils.data import DataLoader as TorchDataLoader
      import torch.nn as nn
      class Lit:
          def train_dataloader(self):
              return TorchDataLoader(self.train_ds, batch_size=32, num_workers=0)  #!
      """, id="lightning-style-method"),
    C("""
      from torch.utils.data import DataLoader
      NW: int = 0
      loader = DataLoader(ds, num_workers=NW)  #!
      """, id="annotated-name-zero"),
    C("""
      from torch.utils.data import DataLoader
      NW = 0
      def bump():
          global NW
          NW = 4
      loader = DataLoader(ds, num_workers=NW)
      """, id="name-rebound-via-global"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 0}
      del kw["num_workers"]
      kw["num_workers"] = 2
      loader = DataLoader(ds, **kw)
      """, id="dict-del-and-set"),
    C("""
      from torch.utils.data import DataLoader
      def a():
          kw = {"batch_size": 1}
      def b(ds):
          return DataLoader(ds, **kw)
      """, id="dict-from-other-scope"),
    C("""
      from torch.utils.data import DataLoader
      from config import NUM_WORKERS
      loader = DataLoader(ds, num_workers=NUM_WORKERS)
      """, id="imported-constant"),
    C("""
      import functools
      from torch.utils.data import DataLoader
      DataLoader = functools.partial(DataLoader, num_workers=4)
      loader = DataLoader(ds)
      """, id="rebound-to-partial"),
    C("""
      from torch.utils import data
      def build(data):
          return data.DataLoader(data)
      """, id="data-param-shadows-module"),
    C("""
      from torch.utils.data import DataLoader
      make = lambda DataLoader: DataLoader(ds)
      """, id="lambda-param-shadows"),
    C("""
      from torch.utils.data import DataLoader
      class Trainer:
          def build(self):
              return self.DataLoader(ds)
      """, id="method-named-dataloader"),
    C("""
      from torch.utils.data import DataLoader
      def f(loader: DataLoader) -> DataLoader:
          return loader
      """, id="annotation-only"),
    C("""
      from torch.utils.data import DataLoader
      loaders = [DataLoader(d) for d in (a, b)]  #!
      """, id="comprehension"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  # noqa: TPF101
      other = DataLoader(ds)  # noqa: TPF101
      """, id="noqa"),
]


TPF101 += [
    C("""
      from torch.utils.data import DataLoader
      from mylib.loaders import DataLoader
      loader = DataLoader(ds)
      """, id="rebound-by-later-import"),
    C("""
      from torch.utils.data import DataLoader
      def DataLoader(*a, **k):
          pass
      loader = DataLoader(ds)
      """, id="rebound-by-def"),
    C("""
      import torch
      train_kwargs = {"batch_size": args.batch_size}
      if use_cuda:
          cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
          train_kwargs.update(cuda_kwargs)
      train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
      """, id="pytorch-mnist-example"),
    C("""
      import torch
      kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
      train_loader = torch.utils.data.DataLoader(dataset1, **kwargs)
      """, id="old-mnist-example-ifexp-dict"),
]


TPF101 += [
    # Issue 11: workers only cost (memory-held items, one batch read once).
    C("""
      import torch
      from torch.utils.data import DataLoader, TensorDataset
      loader = DataLoader(TensorDataset(torch.randn(64, 3), torch.randn(64)), batch_size=8)
      """, id="tensor-dataset-inline"),
    C("""
      import torch.utils.data as tud
      ds = tud.TensorDataset(x, y)
      loader = tud.DataLoader(ds, batch_size=8, num_workers=0)
      """, id="tensor-dataset-by-name"),
    C("""
      import torch
      from torch.utils.data import DataLoader, Dataset
      class Held(Dataset):
          def __init__(self, n):
              self.x = torch.randn(n, 3)
              self.y = torch.zeros(n).long()
          def __len__(self):
              return len(self.x)
          def __getitem__(self, idx):
              return self.x[idx], self.y[idx]
      loader = DataLoader(Held(64), batch_size=8)
      """, id="project-class-indexing-its-tensors"),
    C("""
      import torch
      from torch.utils.data import DataLoader, Dataset
      class Held(Dataset):
          def __init__(self, xs):
              self.x = xs
          def __getitem__(self, idx):
              return self.x[idx]
      loader = DataLoader(Held(files), batch_size=8)  #!
      """, id="project-class-indexing-unknown-values"),
    C("""
      import torch
      from torch.utils.data import DataLoader, Dataset
      class Held(Dataset):
          def __init__(self, n):
              self.x = torch.randn(n, 3)
          def __getitem__(self, idx):
              return self.x[idx] * 2
      loader = DataLoader(Held(64), batch_size=8)  #!
      """, id="project-class-computing-per-item"),
    C("""
      import torch
      from torch.utils.data import DataLoader, Dataset
      class Held(Dataset):
          def __init__(self, n):
              self.x = torch.randn(n, 3)
          def reload(self):
              self.x = load_again()
          def __getitem__(self, idx):
              return self.x[idx]
      loader = DataLoader(Held(64), batch_size=8)  #!
      """, id="project-class-rebinding-its-tensor"),
    C("""
      from torch.utils.data import DataLoader
      batch = next(iter(DataLoader(ds, batch_size=8, shuffle=True)))
      """, id="next-iter-inline"),
    C("""
      from torch.utils.data import DataLoader
      def show(ds):
          loader = DataLoader(ds, batch_size=8)
          images, _ = next(iter(loader))
          return images
      """, id="next-iter-by-name"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=8)  #!
      batch = next(iter(loader))
      for x in loader:
          pass
      """, id="next-iter-and-iterated"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=8)  #!
      it = iter(loader)
      for _ in range(steps):
          batch = next(it)
      """, id="iterator-kept"),
    C("""
      from torch.utils.data import DataLoader
      def make(ds):
          loader = DataLoader(ds, batch_size=8)  #!
          batch = next(iter(loader))
          return loader
      """, id="next-iter-and-returned"),
    # Issue 11: a dataset that keeps a handle from __init__ is still reported (no fix).
    C("""
      import h5py
      from torch.utils.data import DataLoader, Dataset
      class H5(Dataset):
          def __init__(self, path):
              self.f = h5py.File(path, "r")
          def __getitem__(self, i):
              return self.f["x"][i]
      loader = DataLoader(H5("a.h5"), batch_size=8)  #!
      """, id="h5py-handle-reported"),
]


TPF101_HANDLES = [
    pytest.param(
        """
        import {module}
        from torch.utils.data import DataLoader, Dataset
        class Data(Dataset):
            def __init__(self, path):
                self.source = {opener}(path){suffix}
            def __getitem__(self, i):
                return self.source.get(i)
        loader = DataLoader(Data("x"), batch_size=8{workers})
        """.format(module=module, opener=opener, suffix=suffix, workers=workers),
        id=f"{opener}{suffix}{workers}",
    )
    for module, opener, suffix in [
        ("io", "open", ""),
        ("io", "io.open", ""),
        ("h5py", "h5py.File", "['images']"),
        ("lmdb", "lmdb.open", ".begin()"),
        ("sqlite3", "sqlite3.connect", ""),
        ("sqlite3", "sqlite3.connect", ".cursor()"),
        ("zipfile", "zipfile.ZipFile", ""),
        ("tables", "tables.open_file", ""),
    ]
    for workers in ("", ", num_workers=0")
]


@pytest.mark.parametrize("code", TPF101_HANDLES)
def test_tpf101_dataset_holding_a_handle_is_reported_without_fix(code):
    """Issue 11: forked workers share a handle opened in ``__init__``; the message says so
    and no fix is offered, even when ``num_workers`` is left out."""
    code = src(code)
    diagnostic = single_diagnostic("TPF101", code)
    assert diagnostic.fix is None
    assert "`Data` keeps" in diagnostic.message and "`self.source =" in diagnostic.message
    assert fix_example(rule_by_code("TPF101"), code) == code


@pytest.mark.parametrize(
    "handle",
    [
        "self.lines = open(path).readlines()",  # read, then let go
        "self.array = np.memmap(path, mode='r')",  # pages, not a shared offset
        "self.meta = json.load(open(path))",
    ],
)
def test_tpf101_datasets_that_keep_no_handle_get_the_usual_fix(handle):
    code = src(f"""
        import json
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        class Data(Dataset):
            def __init__(self, path):
                {handle}
            def __getitem__(self, i):
                return load(i)
        loader = DataLoader(Data("x"), batch_size=8)
        """)
    assert "num_workers=4" in fix_example(rule_by_code("TPF101"), code)


def test_tpf101_explicit_zero_shows_a_display_only_fix_that_says_why():
    from pytorch_perflint.types import Applicability

    diagnostic = single_diagnostic("TPF101", "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=0)\n")
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert "written out" in diagnostic.fix.message and "forked workers" in diagnostic.fix.message
    assert diagnostic.fix.edits and "num_workers=4" in diagnostic.fix.edits[0].content


@pytest.mark.parametrize(("code", "expected", "opts"), TPF101)
def test_tpf101(code, expected, opts):
    check_lint("TPF101", code, expected, opts)


def _loader_workers(n: int, or_unchanged: Optional[str] = None) -> Callable[[str], bool]:
    """The fixed program runs and builds ``loader`` with ``n`` workers (or no fix was offered)."""
    def pred(text: str) -> bool:
        if or_unchanged is not None and text == src(or_unchanged):
            return True
        ns = run_fixed(text, ds=list(range(8)))
        return ns["loader"].num_workers == n
    return pred


TPF101_FIX = [
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds)
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      """, id="add"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds)
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=8)
      """, {"dataloader-num-workers": 8}, id="option"),
    # A 0 written out is a decision (issue 11): reported, never rewritten.
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=0)
      """, None, id="explicit-zero-kept"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds)
      """, None, unsafe=False, id="not-applied-without-unsafe"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, 2, False, None, None, 0)
      """, None, id="positional-zero-kept"),
    F("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 2, "num_workers": 0}
      loader = DataLoader(ds, **kw)
      """, _loader_workers(4, """
      from torch.utils.data import DataLoader
      kw = {"batch_size": 2, "num_workers": 0}
      loader = DataLoader(ds, **kw)
      """), id="dict-zero-runs-or-no-fix"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, **{"num_workers": 0})
      """, _loader_workers(4, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, **{"num_workers": 0})
      """), id="inline-dict-zero-runs-or-no-fix"),
    F("""
      from torch.utils.data import DataLoader
      NW = 0
      loader = DataLoader(ds, num_workers=NW)
      """, None, id="name-zero-kept"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(
          ds,
          batch_size=2,
      )
      """, _loader_workers(4), id="multiline-runs"),
    F("""
      import torch as th
      loader = th.utils.data.DataLoader(ds, batch_size=2)
      """, _loader_workers(4), id="alias-runs"),
]


TPF101_FIX += [
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(
          ds,
          batch_size=2,  # bs
          # trailing comment
      )
      """, lambda t: "batch_size=2,  # bs\n" in t and "num_workers=4,\n    # trailing comment\n)" in t
      and _loader_workers(4)(t),
      id="multiline-keeps-comment-on-its-argument"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF101_FIX)
def test_tpf101_fix(code, expected, opts, unsafe):
    check_fix("TPF101", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF102 dataloader-no-pin-memory
# --------------------------------------------------------------------------------------------

TPF102 = [
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      model = model.cuda()
      """, id="dot-cuda"),
    C("""
      import torch
      device = torch.device("cuda")
      loader = torch.utils.data.DataLoader(ds, num_workers=4)  #!
      """, id="torch-device-cuda"),
    C("""
      import torch as th
      device = th.device("cuda:0")
      loader = th.utils.data.DataLoader(ds, num_workers=4)  #!
      """, id="alias-device-cuda0"),
    C("""
      import torch
      from torch.utils import data
      device = "cuda" if torch.cuda.is_available() else "cpu"
      loader = data.DataLoader(ds, num_workers=4)  #!
      """, id="is-available"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      x = x.to("cuda")
      """, id="to-cuda"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      buf = torch.zeros(3, device="cuda")
      """, id="device-kwarg"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, pin_memory=False)  #!
      model.cuda()
      """, id="explicit-false"),
    C("""
      from torch.utils.data import DataLoader
      PIN = False
      loader = DataLoader(ds, num_workers=4, pin_memory=PIN)  #!
      model.cuda()
      """, id="name-false"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 4}
      loader = DataLoader(ds, **kw)  #!
      model.cuda()
      """, id="dict-without-pin"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, pin_memory=True)
      model.cuda()
      """, id="pinned"),
    C("""
      from torch.utils.data import DataLoader
      PIN = True
      loader = DataLoader(ds, num_workers=4, pin_memory=PIN)
      model.cuda()
      """, id="name-true"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 4, "pin_memory": True}
      loader = DataLoader(ds, **kw)
      model.cuda()
      """, id="dict-pinned"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, pin_memory=torch.cuda.is_available())
      """, id="pin-is-available"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, pin_memory=args.pin)
      model.cuda()
      """, id="pin-unknown"),
    C("""
      from torch.utils.data import DataLoader
      def build(ds, **kwargs):
          return DataLoader(ds, **kwargs)
      model.cuda()
      """, id="kwargs-unknown"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      """, id="cpu-only"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      device = torch.device("cpu")
      loader = DataLoader(ds, num_workers=4)
      model.to(device)
      """, id="cpu-device"),
    C("""
      from torch.utils.data import DataLoader
      def build(DataLoader, ds):
          return DataLoader(ds)
      model.cuda()
      """, id="shadowed"),
]


TPF102 += [
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      x = x.to(device, non_blocking=True)
      """, id="non-blocking-marks-cuda"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      scaler = torch.cuda.amp.GradScaler()
      """, id="cuda-amp-marks-cuda"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(  #!
          ds,
          num_workers=4,
      )
      with torch.amp.autocast("cuda"):
          pass
      """, id="amp-autocast-cuda-multiline"),
]


TPF102 += [
    C("""
      import torch
      device = torch.device("cuda" if use_cuda else "cpu")
      train_kwargs = {"batch_size": args.batch_size}
      if use_cuda:
          train_kwargs.update({"num_workers": 1, "pin_memory": True})
      train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
      """, id="pytorch-mnist-example"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF102)
def test_tpf102(code, expected, opts):
    check_lint("TPF102", code, expected, opts)


TPF102_FIX = [
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      model.cuda()
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, pin_memory=True)
      model.cuda()
      """, unsafe=False, id="safe-add"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, pin_memory=False, num_workers=4)
      model.cuda()
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, pin_memory=True, num_workers=4)
      model.cuda()
      """, unsafe=False, id="safe-replace"),
    F("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 0, "pin_memory": False}
      loader = DataLoader(ds, **kw)
      model.cuda()
      """, lambda t: "**kw)" in t and "pin_memory=True" not in t
      or run_fixed(t.replace("model.cuda()", ""), ds=[1, 2])["loader"].pin_memory is True,
      unsafe=False, id="dict-false-runs-or-no-fix"),
]


TPF102_FIX += [
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, 1, False, None, None, 0, None, False)
      model.cuda()
      """, lambda t: run_fixed(t.replace("model.cuda()", ""), ds=[1, 2])["loader"].pin_memory is True,
      unsafe=False, id="positional-false-runs"),
    F("""
      from torch.utils.data import DataLoader
      kw = {"batch_size": 2}
      loader = DataLoader(ds, **kw)
      model.cuda()
      """, lambda t: run_fixed(t.replace("model.cuda()", ""), ds=[1, 2])["loader"].pin_memory is True,
      unsafe=False, id="known-dict-runs"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF102_FIX)
def test_tpf102_fix(code, expected, opts, unsafe):
    check_fix("TPF102", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF103 dataloader-no-persistent-workers
# --------------------------------------------------------------------------------------------

TPF103 = [
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)  #!
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="basic"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=False)  #!
      for epoch in range(10):
          for i, (x, y) in enumerate(loader):
              step(x, y)
      """, id="explicit-false-enumerate"),
    C("""
      import torch as th
      NW = 2
      loader = th.utils.data.DataLoader(ds, num_workers=NW)  #!
      epoch = 0
      while epoch < 10:
          for batch in loader:
              step(batch)
          epoch += 1
      """, id="while-epoch-name-bound"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 4}
      loader = DataLoader(  #!
          ds,
          **kw,
      )
      for epoch in range(3):
          for batch in loader:
              step(batch)
      """, id="dict-multiline"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=True)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="persistent"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      for batch in loader:
          step(batch)
      """, id="single-pass"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=0)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="zero-workers"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="no-workers"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=args.workers)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="unknown-workers"),
    C("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=args.pw)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="unknown-persistent"),
    C("""
      from torch.utils.data import DataLoader
      kw = {"num_workers": 4}
      kw["persistent_workers"] = True
      loader = DataLoader(ds, **kw)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="mutated-dict"),
]


TPF103 += [
    C("""
      from torch.utils.data import DataLoader
      from tqdm import tqdm
      loader = DataLoader(ds, num_workers=4)  #!
      for epoch in range(10):
          for batch in tqdm(loader):
              step(batch)
      """, id="tqdm-in-epoch-loop"),
    C("""
      from torch.utils.data import DataLoader
      for epoch in range(10):
          loader = DataLoader(ds, num_workers=4)
          for batch in loader:
              step(batch)
      """, id="loader-rebuilt-every-epoch"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF103)
def test_tpf103(code, expected, opts):
    check_lint("TPF103", code, expected, opts)


TPF103_FIX = [
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=True)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="add"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, None, unsafe=False, id="unsafe-only"),
    F("""
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=False)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, """
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, num_workers=4, persistent_workers=True)
      for epoch in range(10):
          for batch in loader:
              step(batch)
      """, id="replace"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF103_FIX)
def test_tpf103_fix(code, expected, opts, unsafe):
    check_fix("TPF103", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF104 blocking-host-to-device-copy
# --------------------------------------------------------------------------------------------

TPF104 = [
    C("""
      import torch
      from torch.utils.data import DataLoader
      device = torch.device("cuda")
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to(device)  #!
          y = y.cuda()  #!
          step(x, y)
      """, id="to-and-cuda"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for batch in loader:
          batch = batch.to("cuda", non_blocking=False)  #!
          step(batch)
      """, id="explicit-false"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      kw = {"pin_memory": True, "num_workers": 2}
      loader = DataLoader(ds, **kw)
      for x, y in loader:
          x = x.cuda()  #!
          step(x, y)
      """, id="dict-pinned"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to("cuda", non_blocking=True)
          y = y.cuda(non_blocking=True)
          step(x, y)
      """, id="non-blocking"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4)
      for x, y in loader:
          x = x.to("cuda")
          step(x, y)
      """, id="not-pinned"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=args.pin)
      for x, y in loader:
          x = x.to("cuda")
          step(x, y)
      """, id="pin-unknown"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = torch.cat([x, x])
          x = x.to("cuda")
          step(x, y)
      """, id="rebuilt-cat"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      loader = accelerator.prepare(loader)
      for x, y in loader:
          x = x.to("cuda")
          step(x, y)
      """, id="accelerator-prepare"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to(torch.float16)
          step(x, y)
      """, id="dtype-only"),
]


TPF104 += [
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      device = torch.device("cuda")
      for i, (x, y) in enumerate(loader):
          x = x.to(device)  #!
          step(x, y)
      """, id="enumerate"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to("cpu")
          step(x, y)
      """, id="to-cpu"),
    C("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in other_iterable:
          x = x.cuda()
          step(x, y)
      """, id="other-iterable"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF104)
def test_tpf104(code, expected, opts):
    check_lint("TPF104", code, expected, opts)


TPF104_FIX = [
    F("""
      import torch
      from torch.utils.data import DataLoader
      device = torch.device("cuda")
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to(device)
          y = y.cuda()
          step(x, y)
      """, """
      import torch
      from torch.utils.data import DataLoader
      device = torch.device("cuda")
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for x, y in loader:
          x = x.to(device, non_blocking=True)
          y = y.cuda(non_blocking=True)
          step(x, y)
      """, unsafe=False, id="safe"),
    F("""
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for batch in loader:
          batch = batch.to("cuda", non_blocking=False)
          step(batch)
      """, """
      import torch
      from torch.utils.data import DataLoader
      loader = DataLoader(ds, batch_size=4, pin_memory=True)
      for batch in loader:
          batch = batch.to("cuda", non_blocking=True)
          step(batch)
      """, unsafe=False, id="replace"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF104_FIX)
def test_tpf104_fix(code, expected, opts, unsafe):
    check_fix("TPF104", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF201 zero-grad-without-set-to-none
# --------------------------------------------------------------------------------------------

TPF201 = [
    C("""
      optimizer.zero_grad(set_to_none=False)  #!
      """, id="optimizer-false"),
    C("""
      model.zero_grad(set_to_none=False)  #!
      """, id="module-false"),
    C("""
      import torch.nn as nn
      class Net(nn.Module):
          def reset(self):
              self.zero_grad(set_to_none=False)  #!
      """, id="self-false"),
    C("""
      optimizer.zero_grad(False)  #!
      """, id="positional-false"),
    C("""
      STN = False
      optimizer.zero_grad(set_to_none=STN)  #!
      """, id="name-bound-false"),
    C("""
      kw = {"set_to_none": False}
      optimizer.zero_grad(**kw)  #!
      """, id="dict-false"),
    C("""
      optimizer.zero_grad(set_to_none=True)
      optimizer.zero_grad(True)
      """, id="true"),
    C("""
      optimizer.zero_grad(set_to_none=args.stn)
      """, id="unknown"),
    C("""
      def step(opt, **kw):
          opt.zero_grad(**kw)
      """, id="kwargs"),
    C("""
      optimizer.zero_grad()
      """, id="bare-default-version"),
    C("""
      optimizer.zero_grad()
      """, [], {"target-torch-version": "2.0"}, id="bare-2.0"),
    C("""
      optimizer.zero_grad()
      """, [], {"target-torch-version": "2.4"}, id="bare-2.4"),
    C("""
      optimizer.zero_grad()  #!
      model.zero_grad()  #!
      """, opts=OLD, id="bare-1.13"),
    C("""
      optimizer.zero_grad()  #!
      """, opts={"target-torch-version": "1.7"}, id="bare-1.7"),
    C("""
      optimizer.zero_grad(set_to_none=True)
      """, opts=OLD, id="true-1.13"),
    # manual zeroing
    C("""
      for p in model.parameters():
          if p.grad is not None:
              p.grad.zero_()  #!
      """, id="grad-zero"),
    C("""
      for p in model.parameters():
          p.grad.data.zero_()  #!
      """, id="grad-data-zero"),
    C("""
      for p in model.parameters():
          p.grad.fill_(0)  #!
      """, id="grad-fill-0"),
    C("""
      for p in model.parameters():
          p.grad.fill_(0.0)  #!
      """, id="grad-fill-0.0"),
    C("""
      for p in model.parameters():
          p.grad.data.fill_(0)  #!
      """, id="grad-data-fill-0"),
    C("""
      import torch
      for p in model.parameters():
          p.grad = torch.zeros_like(p)  #!
      """, id="assign-zeros-like"),
    C("""
      import torch as th
      for p in model.parameters():
          p.grad = th.zeros_like(p)  #!
      """, id="assign-zeros-like-alias"),
    C("""
      from torch import zeros_like
      for p in model.parameters():
          p.grad = zeros_like(p)  #!
      """, id="assign-zeros-like-from-import"),
    C("""
      import torch.nn as nn
      class Net(nn.Module):
          def clear(self):
              self.weight.grad.zero_()  #!
      """, id="self-weight-grad"),
    C("""
      import torch
      with torch.no_grad():
          for group in optimizer.param_groups:
              for p in group["params"]:
                  if p.grad is not None:
                      p.grad.detach_()
                      p.grad.zero_()  #!
      """, id="nested-in-no-grad"),
    # look-alikes
    C("""
      for p in model.parameters():
          p.data.zero_()
          p.zero_()
          buf.fill_(0)
          p.grad.fill_(1)
      """, id="not-grads"),
    C("""
      import torch
      for p in model.parameters():
          p.grad = torch.ones_like(p)
          p.grad = None
      """, id="assign-other"),
    C("""
      # optimizer.zero_grad(set_to_none=False)
      # p.grad.zero_()
      s = "optimizer.zero_grad(set_to_none=False); p.grad.zero_()"
      """, id="comments-and-strings"),
    C("""
      optimizer.zero_grad()
      model.zero_grad
      """, [1], OLD, id="reference-is-not-call"),
    # modules that later write into existing gradients: silent everywhere in the module
    C("""
      optimizer.zero_grad(set_to_none=False)
      for p, g in zip(model.parameters(), grads):
          p.grad += g
      """, id="later-iadd"),
    C("""
      for p in model.parameters():
          p.grad.zero_()
      for p, g in zip(model.parameters(), grads):
          p.grad.add_(g)
      """, id="later-add"),
    C("""
      for p in model.parameters():
          p.grad.data.zero_()
      for p, g in zip(model.parameters(), grads):
          p.grad.copy_(g)
      """, id="later-copy"),
    C("""
      def reset(model):
          model.zero_grad(set_to_none=False)

      def accumulate(model, grads):
          for p, g in zip(model.parameters(), grads):
              p.grad.data.add_(g)
      """, id="later-data-add-other-function"),
    C("""
      optimizer.zero_grad()
      for p, g in zip(model.parameters(), grads):
          p.grad += g
      """, [], OLD, id="later-iadd-bare-1.13"),
    C("""
      import torch
      for p in model.parameters():
          p.grad = torch.zeros_like(p)
      for p, g in zip(model.parameters(), grads):
          p.grad.add_(g)
      """, id="later-add-after-assign"),
]


TPF201 += [
    C("""
      class Trainer:
          def step(self):
              self.optimizer.zero_grad(set_to_none = False)  #!
      """, id="self-optimizer-spaces"),
    C("""
      for name, param in model.named_parameters():
          if param.grad is not None: param.grad.zero_()  #!
      """, id="one-line-if"),
    C("""
      optimizer.zero_grad(set_to_none=False)  #!
      for b, g in zip(buffers, grads):
          b.add_(g)
          b += g
          b.copy_(g)
      """, id="unrelated-in-place-writes-do-not-silence"),
    C("""
      optimizer.zero_grad(set_to_none=False)
      for p, g in zip(model.parameters(), grads):
          p.grad.data += g
      """, id="later-data-iadd"),
    C("""
      optimizer.zero_grad(set_to_none=False)
      for p, g in zip(model.parameters(), grads):
          p.grad.data.copy_(g)
      """, id="later-data-copy"),
    C("""
      class Net:
          def reset(self):
              self.zero_grad()  #!
      """, opts=OLD, id="self-bare-1.13"),
    C("""
      def step(opt, kwargs):
          opt.zero_grad(**kwargs)
      """, opts=OLD, id="unknown-kwargs-1.13"),
    C("""
      for p in model.parameters():
          grad = p.grad
          p.data.add_(grad, alpha=-lr)
      optimizer.zero_grad(set_to_none=False)  #!
      """, id="reading-grads-does-not-silence"),
]


TPF201 += [
    C("""
      def f(torch, p):
          p.grad = torch.zeros_like(p)
      """, id="torch-shadowed"),
]


TPF201 += [
    C("""
      import torch
      optimizer.zero_grad(set_to_none=False)  #!
      # p.grad.add_(g)
      s = "p.grad += g"
      torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
      """, id="writes-in-comments-strings-and-clipping-do-not-silence"),
    C("""
      optimizer.zero_grad(set_to_none=False)
      def accumulate(p, g):
          if p.grad is None:
              p.grad = g.clone()
          else:
              p.grad += g
      """, id="guarded-accumulation-silences"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF201)
def test_tpf201(code, expected, opts):
    check_lint("TPF201", code, expected, opts)


TPF201_FIX = [
    F("""
      optimizer.zero_grad(set_to_none=False)
      """, """
      optimizer.zero_grad(set_to_none=True)
      """, id="false-to-true"),
    F("""
      optimizer.zero_grad(set_to_none=False)
      """, None, unsafe=False, id="unsafe-only"),
    F("""
      optimizer.zero_grad()
      """, """
      optimizer.zero_grad(set_to_none=True)
      """, OLD, id="bare-1.13"),
    F("""
      for p in model.parameters():
          if p.grad is not None:
              p.grad.zero_()
      """, """
      for p in model.parameters():
          if p.grad is not None:
              p.grad = None
      """, id="grad-zero"),
    F("""
      for p in model.parameters():
          p.grad.data.zero_()
      """, """
      for p in model.parameters():
          p.grad = None
      """, id="grad-data-zero"),
    F("""
      for p in model.parameters():
          p.grad.fill_(0)
      """, """
      for p in model.parameters():
          p.grad = None
      """, id="grad-fill"),
    F("""
      import torch
      for p in model.parameters():
          p.grad = torch.zeros_like(p)
      """, """
      import torch
      for p in model.parameters():
          p.grad = None
      """, id="assign-zeros-like"),
    F("""
      optimizer.zero_grad(False)
      """, fixed_clean("TPF201", None, "True", absent=("False",)), id="positional-false"),
    F("""
      optimizer.zero_grad(
          set_to_none=False,
      )
      """, fixed_clean("TPF201", None, "set_to_none=True"), id="multiline"),
]


TPF201_FIX += [
    F("""
      for p in params:
          if p.grad is not None: p.grad.zero_()
      """, """
      for p in params:
          if p.grad is not None: p.grad = None
      """, id="one-line-if"),
    F("""
      for p in params:
          p.grad.detach_(); p.grad.zero_()
      """, """
      for p in params:
          p.grad.detach_(); p.grad = None
      """, id="semicolons"),
    F("""
      class M:
          def clear(self):
              self.weight.grad.data.zero_()
      """, """
      class M:
          def clear(self):
              self.weight.grad = None
      """, id="self-weight-grad-data"),
    F("""
      for p in params:
          p.grad.zero_()  # reset
      """, """
      for p in params:
          p.grad = None  # reset
      """, id="keeps-comment"),
    F("""
      for p in params:
          p.grad.zero_()
      """, None, unsafe=False, id="manual-unsafe-only"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF201_FIX)
def test_tpf201_fix(code, expected, opts, unsafe):
    check_fix("TPF201", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF202 host-sync-in-training-loop
# --------------------------------------------------------------------------------------------

TPF202 = [
    C("""
      import torch
      model = model.cuda()
      total = 0.0
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          total += loss.item()  #!
      """, id="item"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          optimizer.zero_grad()
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          print(loss)  #!
      """, id="print-loss"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          losses.append(float(loss))  #!
      """, id="float-loss"),
    C("""
      import torch as th
      model = model.cuda()
      for x, y in loader:
          out = model(x)
          loss = criterion(out, y)
          loss.backward()
          optimizer.step()
          th.cuda.synchronize()  #!
      """, id="synchronize-alias"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          out = model(x)
          loss = criterion(out, y)
          loss.backward()
          optimizer.step()
          preds.append(out.cpu())  #!
          labels.extend(y.tolist())  #!
      """, id="cpu-tolist"),
    C("""
      import torch
      model = model.cuda()
      step = 0
      while step < 100:
          loss = model(next(it)).mean()
          loss.backward()
          optimizer.step()
          pbar.set_postfix(loss=loss.item())  #!
          step += 1
      """, id="while-loop"),
    C("""
      import torch
      model = model.cuda()
      for epoch in range(10):
          for x, y in loader:
              loss = criterion(model(x), y)
              loss.backward()
              optimizer.step()
              running += loss.item()  #!
      """, id="nested-epoch"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          total += (
              loss.item()  #!
          )
      """, id="multiline-anchor"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          with torch.no_grad():
              acc = (model(x).argmax(1) == y).float().mean().item()  #!
      """, id="item-under-no-grad"),
    C("""
      import torch
      model = model.cuda()

      def log_loss(loss):
          print(loss.item())

      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          log_loss(loss)  #!
      """, id="helper"),
    # not
    C("""
      import torch
      model = model.cuda()
      for step, (x, y) in enumerate(loader):
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          if step % 100 == 0:
              print(loss.item())
      """, id="guarded"),
    C("""
      import torch
      model = model.cuda()
      log_every = 50
      for step, (x, y) in enumerate(loader):
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          if step % log_every == 0:
              writer.add_scalar("loss", loss.item(), step)
      """, id="guarded-by-name"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
      print(loss.item())
      final = float(loss)
      """, id="after-loop"),
    C("""
      import torch
      model = model.cuda()
      for epoch in range(10):
          for x, y in loader:
              loss = criterion(model(x), y)
              loss.backward()
              optimizer.step()
          print(epoch, loss.item())
      """, id="after-inner-loop"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          out = model(x)
          preds.append(out.cpu())
          total += out.sum().item()
      """, id="eval-loop-no-backward"),
    C("""
      import torch
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          total += loss.item()
      """, id="cpu-only"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          # total += loss.item()
          print("step done")
          s = "loss.item()"
      """, id="comments-strings-print-str"),
]


TPF202 += [
    C("""
      import torch
      model = model.cuda()
      lr = 0.1
      for step, (x, y) in enumerate(loader):
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          total += loss.detach()
          rate = float(lr)
          n = int(step)
          print(step)
      """, id="non-tensors-and-detach"),
    C("""
      import torch
      model = model.cuda()
      scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
      for epoch in range(10):
          train_one_epoch(model, loader)
          scheduler.step()
          print(evaluate(model).item())
      """, id="epoch-loop-with-scheduler-step"),
    C("""
      import torch
      policy = policy.cuda()
      for t in range(1000):
          action = policy(obs).argmax().item()
          obs, reward, done, info = env.step(action)
      """, id="rl-env-step"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          scaler.scale(loss).backward()
          scaler.step(optimizer)
          scaler.update()
          print(f"loss {loss.item():.3f}")  #!
      """,
      id="scaler-fstring-item"),
]


TPF202 += [
    C("""
      import torch
      model = model.cuda()
      for step, (x, y) in enumerate(loader):
          loss = criterion(model(x), y) / accum
          loss.backward()
          if (step + 1) % accum == 0:
              optimizer.step()
              optimizer.zero_grad()
              print(loss.item())
      """, id="accumulation-guard"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          print(  #!
              loss
          )
          ok = bool(torch.isfinite(loss))  #!
      """, id="multiline-print-and-bool"),
    C("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          print(loss.item())  #!
      """,
      id="print-of-item-reported-once"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF202)
def test_tpf202(code, expected, opts):
    check_lint("TPF202", code, expected, opts)


TPF202_FIX = [
    F("""
      import torch
      model = model.cuda()
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
          total += loss.item()
      """, None, id="display-only"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF202_FIX)
def test_tpf202_fix(code, expected, opts, unsafe):
    check_fix("TPF202", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF203 eval-without-no-grad
# --------------------------------------------------------------------------------------------

TPF203 = [
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          correct = 0
          for x, y in loader:  #!
              out = model(x)
              correct += (out.argmax(1) == y).sum()
          return correct
      """, id="basic"),
    C("""
      import torch as th
      def evaluate(model, loader):
          model.eval()
          i = 0
          while i < len(loader):  #!
              out = model(loader[i])
              i += 1
      """, id="while"),
    C("""
      import torch
      from torch.autograd import Variable
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:  #!
              x = Variable(x, volatile=True)
              out = model(x)
      """, id="volatile-variable"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for (
              x,
              y,
          ) in loader:  #!
              out = model(x)
      """, id="multiline-header-anchor-first-line", expected=[4]),
    # not
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          with torch.no_grad():
              for x, y in loader:
                  out = model(x)
      """, id="no-grad"),
    C("""
      import torch as th
      def evaluate(model, loader):
          model.eval()
          with th.inference_mode():
              for x, y in loader:
                  out = model(x)
      """, id="inference-mode-alias"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          with torch.set_grad_enabled(False):
              for x, y in loader:
                  out = model(x)
      """, id="set-grad-enabled-false"),
    C("""
      from torch import no_grad
      def evaluate(model, loader):
          model.eval()
          with no_grad():
              for x, y in loader:
                  out = model(x)
      """, id="from-import-no-grad"),
    C("""
      import torch
      @torch.no_grad()
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, id="decorated-no-grad"),
    C("""
      import torch
      @torch.no_grad
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, id="decorated-no-grad-bare"),
    C("""
      import torch
      @torch.inference_mode()
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, id="decorated-inference-mode"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)

      def main():
          with torch.no_grad():
              evaluate(model, loader)
      """, id="caller-in-no-grad"),
    C("""
      import torch
      def attack(model, loader):
          model.eval()
          for x, y in loader:
              x.requires_grad_(True)
              loss = loss_fn(model(x), y)
              loss.backward()
      """, id="adversarial-backward"),
    C("""
      import torch
      def attack(model, loader):
          model.eval()
          for x, y in loader:
              x.requires_grad_(True)
              loss = loss_fn(model(x), y)
              g, = torch.autograd.grad(loss, x)
      """, id="autograd-grad"),
    C("""
      import torch
      def probe(backbone, head, loader, opt):
          backbone.eval()
          for x, y in loader:
              loss = loss_fn(head(backbone(x)), y)
              opt.zero_grad()
              loss.backward()
              opt.step()
      """, id="linear-probe"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          # for x in loader: model(x)
          s = "for x in loader: model(x)"
      """, id="comment-string"),
]


TPF203 += [
    C("""
      import torch
      def no_grad_eval(fn):
          return torch.no_grad()(fn)

      @no_grad_eval
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, id="decorator-wrapping-no-grad"),
    C("""
      import torch
      class Trainer:
          def validate(self):
              self.model.eval()
              for batch in self.val_loader:  #!
                  out = self.model(batch)
      """, id="method-self-model"),
    C("""
      import torch
      def run(model, val_loader, train_loader, opt):
          model.eval()
          for x, y in val_loader:  #!
              out = model(x)
          model.train()
          for x, y in train_loader:
              loss = model(x).sum()
              loss.backward()
              opt.step()
      """, id="eval-then-train"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:  #!
              with torch.autocast("cuda"):
                  out = model(x)
      """, id="autocast-is-not-no-grad"),
]


TPF203 += [
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          with torch.no_grad(), torch.autocast("cuda"):
              for x, y in loader:
                  out = model(x)
      """, id="no-grad-in-multi-item-with"),
    C("""
      import torch
      def train_model(model, dataloaders, criterion, optimizer):
          for epoch in range(10):
              for phase in ["train", "val"]:
                  if phase == "train":
                      model.train()
                  else:
                      model.eval()
                  for inputs, labels in dataloaders[phase]:
                      optimizer.zero_grad()
                      with torch.set_grad_enabled(phase == "train"):
                          outputs = model(inputs)
                          loss = criterion(outputs, labels)
                          if phase == "train":
                              loss.backward()
                              optimizer.step()
      """, id="transfer-learning-tutorial-phases"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)

      @torch.no_grad()
      def main():
          evaluate(model, loader)
      """, id="caller-decorated-no-grad"),
    C("""
      import torch
      def evaluate(model, loader):
          model.eval()
          with torch.inference_mode(mode=True):
              for x, y in loader:
                  out = model(x)
      """, id="inference-mode-keyword"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF203)
def test_tpf203(code, expected, opts):
    check_lint("TPF203", code, expected, opts)


TPF203_FIX = [
    F("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
          return out
      """, """
      import torch
      def evaluate(model, loader):
          model.eval()
          with torch.no_grad():
              for x, y in loader:
                  out = model(x)
          return out
      """, id="wrap"),
    F("""
      import torch as th
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, fixed_clean("TPF203", None, "with th.no_grad():"), id="wrap-alias"),
    F("""
      import torch
      def evaluate(model, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, None, unsafe=False, id="unsafe-only"),
    F("""
      from torch import nn
      def evaluate(model: nn.Module, loader):
          model.eval()
          for x, y in loader:
              out = model(x)
      """, lambda t: "no_grad()" in t and ("import torch\n" in t or "import no_grad" in t),
      id="adds-import"),
]


TPF203_FIX += [
    F("""
      import torch
      def evaluate(model, loader):
          model.eval()
          # leading comment
          for x, y in loader:  # trailing
              out = model(x)
      """, """
      import torch
      def evaluate(model, loader):
          model.eval()
          # leading comment
          with torch.no_grad():
              for x, y in loader:  # trailing
                  out = model(x)
      """, id="comments"),
    F("""
      from torch import nn
      def evaluate(model, loader):
          torch = 1
          model.eval()
          for x, y in loader:
              out = model(x)
      """, lambda t: "torch.no_grad" not in t or "torch = 1" not in t, id="no-fix-that-uses-a-shadowed-torch"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF203_FIX)
def test_tpf203_fix(code, expected, opts, unsafe):
    check_fix("TPF203", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF204 debug-mode-left-on
# --------------------------------------------------------------------------------------------

TPF204 = [
    C("""
      import torch
      torch.autograd.set_detect_anomaly(True)  #!
      """, id="set-detect-anomaly"),
    C("""
      import torch as th
      th.autograd.set_detect_anomaly(mode=True)  #!
      """, id="alias-keyword"),
    C("""
      from torch import autograd
      autograd.set_detect_anomaly(True)  #!
      """, id="from-torch-import-autograd"),
    C("""
      from torch.autograd import set_detect_anomaly
      set_detect_anomaly(True)  #!
      """, id="from-import-function"),
    C("""
      import torch
      DEBUG = True
      torch.autograd.set_detect_anomaly(DEBUG)  #!
      """, id="name-bound-true"),
    C("""
      import torch
      with torch.autograd.detect_anomaly():  #!
          for x in loader:
              model(x).sum().backward()
      """, id="with-detect-anomaly"),
    C("""
      import torch
      with torch.autograd.profiler.emit_nvtx():  #!
          for x in loader:
              model(x).sum().backward()
      """, id="emit-nvtx"),
    C("""
      import torch
      with torch.autograd.profiler.profile() as prof:  #!
          for x in loader:
              loss = model(x).sum()
              loss.backward()
              optimizer.step()
      """, id="autograd-profiler"),
    # not
    C("""
      import torch
      torch.autograd.set_detect_anomaly(False)
      torch.autograd.set_detect_anomaly(mode=False)
      """, id="false"),
    C("""
      import torch
      torch.autograd.set_detect_anomaly(args.debug)
      """, id="non-literal"),
    C("""
      import torch
      if args.profile:
          with torch.autograd.profiler.profile() as prof:
              for x in loader:
                  loss = model(x).sum()
                  loss.backward()
                  optimizer.step()
      """, id="profiler-under-if"),
    C("""
      import torch
      with torch.autograd.profiler.profile(enabled=args.profile) as prof:
          for x in loader:
              loss = model(x).sum()
              loss.backward()
              optimizer.step()
      """, id="profiler-enabled-flag"),
    C("""
      import torch
      for x in loader:
          with torch.autograd.profiler.record_function("forward"):
              loss = model(x).sum()
          loss.backward()
      """, id="record-function"),
    C("""
      import torch
      # torch.autograd.set_detect_anomaly(True)
      s = "torch.autograd.set_detect_anomaly(True)"
      """, id="comment-string"),
    C("""
      def f(torch):
          torch.autograd.set_detect_anomaly(True)
      """, id="shadowed"),
]


TPF204 += [
    C("""
      import torch
      with torch.autograd.set_detect_anomaly(True):  #!
          loss.backward()
      """, id="set-detect-anomaly-as-context"),
    C("""
      import torch
      with torch.autograd.profiler.profile(enabled=False) as prof:
          for x in loader:
              loss = model(x).sum()
              loss.backward()
      """, id="profiler-disabled-literal"),
]


TPF204 += [
    C("""
      from torch.autograd import profiler
      with profiler.profile(use_cuda=True) as prof:  #!
          for x in loader:
              loss = model(x).sum()
              loss.backward()
              optimizer.step()
      """, id="profiler-from-import"),
    C("""
      import torch
      torch.autograd.set_detect_anomaly(True, check_nan=False)  #!
      """, id="check-nan-kwarg"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF204)
def test_tpf204(code, expected, opts):
    check_lint("TPF204", code, expected, opts)


TPF204_FIX = [
    F("""
      import torch
      torch.autograd.set_detect_anomaly(True)
      """, """
      import torch
      torch.autograd.set_detect_anomaly(False)
      """, id="false"),
    F("""
      import torch
      torch.autograd.set_detect_anomaly(True)
      """, None, unsafe=False, id="unsafe-only"),
    F("""
      import torch
      with torch.autograd.detect_anomaly():
          loss = model(x).sum()
          loss.backward()
      """, """
      import torch
      loss = model(x).sum()
      loss.backward()
      """, id="unwrap"),
    F("""
      import torch
      def train():
          with torch.autograd.detect_anomaly():
              loss = model(x).sum()
              loss.backward()
          return loss
      """, """
      import torch
      def train():
          loss = model(x).sum()
          loss.backward()
          return loss
      """, id="unwrap-nested"),
]


TPF204_FIX += [
    F("""
      import torch
      with torch.autograd.profiler.profile() as prof:
          for x in loader:
              loss = model(x).sum()
              loss.backward()
              optimizer.step()
      print(prof.key_averages())
      """, lambda t: "as prof" in t or "prof." not in t, id="does-not-unwrap-a-used-as-name"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF204_FIX)
def test_tpf204_fix(code, expected, opts, unsafe):
    check_fix("TPF204", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF301 conv-bias-before-batchnorm
# --------------------------------------------------------------------------------------------

TPF301 = [
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())  #!
      """, id="sequential-args"),
    C("""
      from torch import nn
      net = nn.Sequential(
          nn.Conv2d(3, 16, 3, padding=1),  #!
          nn.BatchNorm2d(16),
          nn.ReLU(),
          nn.Conv2d(16, 32, 3, bias=True),  #!
          nn.BatchNorm2d(32),
      )
      """, id="sequential-multiline"),
    C("""
      import torch
      net = torch.nn.Sequential(
          torch.nn.Conv1d(3, 16, 3),  #!
          torch.nn.BatchNorm1d(16),
          torch.nn.Conv3d(16, 16, 3),  #!
          torch.nn.BatchNorm3d(16),
          torch.nn.Linear(16, 8),  #!
          torch.nn.BatchNorm1d(8),
      )
      """, id="1d-3d-linear"),
    C("""
      from torch.nn import Conv2d, SyncBatchNorm, Sequential
      net = Sequential(Conv2d(3, 16, 3), SyncBatchNorm(16))  #!
      """, id="syncbn-from-import"),
    C("""
      from torch import nn, optim
      layers = [nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU()]  #!
      net = nn.Sequential(*layers)
      """, id="list"),
    C("""
      from collections import OrderedDict
      import torch.nn as nn
      net = nn.Sequential(OrderedDict([
          ("conv", nn.Conv2d(3, 16, 3)),  #!
          ("bn", nn.BatchNorm2d(16)),
          ("relu", nn.ReLU()),
      ]))
      """, id="ordereddict"),
    C("""
      import torch.nn as nn
      layers = []
      layers.append(nn.Conv2d(3, 16, 3))  #!
      layers.append(nn.BatchNorm2d(16))
      layers.append(nn.ReLU())
      net = nn.Sequential(*layers)
      """, id="append"),
    C("""
      import torch.nn as nn
      class Block(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)  #!
              self.bn = nn.BatchNorm2d(16)

          def forward(self, x):
              return self.bn(self.conv(x))
      """, id="forward-nested"),
    C("""
      import torch.nn as nn
      class Block(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)  #!
              self.bn = nn.BatchNorm2d(16)

          def forward(self, x):
              x = self.conv(x)
              x = self.bn(x)
              return x
      """, id="forward-sequential-statements"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, 1, 1, True), nn.BatchNorm2d(16))  #!
      """, id="positional-bias-true"),
    C("""
      import torch.nn as nn
      USE_BIAS = True
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=USE_BIAS), nn.BatchNorm2d(16))  #!
      """, id="name-bias-true"),
    # not
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))
      """, id="bias-false"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, 1, 1, False), nn.BatchNorm2d(16))
      net2 = nn.Sequential(nn.Linear(3, 16, False), nn.BatchNorm1d(16))
      """, id="positional-bias-false"),
    C("""
      import torch.nn as nn
      NO_BIAS = False
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=NO_BIAS), nn.BatchNorm2d(16))
      """, id="name-bias-false"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=use_bias), nn.BatchNorm2d(16))
      """, id="bias-unknown"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.BatchNorm2d(16))
      """, id="activation-between"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.GroupNorm(4, 16))
      net2 = nn.Sequential(nn.Conv2d(3, 16, 3), nn.LayerNorm(16))
      net3 = nn.Sequential(nn.Conv2d(3, 16, 3), nn.InstanceNorm2d(16))
      """, id="other-norms"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16))
      net2 = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm2d(16))
      """, id="mismatched-dims"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.BatchNorm2d(3), nn.Conv2d(3, 16, 3))
      """, id="bn-before-conv"),
    C("""
      import torch.nn as nn
      class Block(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)
              self.bn = nn.BatchNorm2d(16)

          def forward(self, x):
              return self.bn(self.relu(self.conv(x)))
      """, id="forward-activation-between"),
    C("""
      import torch.nn as nn
      class Block(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)
              self.bn = nn.BatchNorm2d(16)

          def forward(self, x):
              x = self.conv(x)
              x = self.act(x)
              x = self.bn(x)
              return x
      """, id="forward-statements-activation-between"),
    C("""
      def build(nn):
          return nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
      """, id="nn-shadowed"),
    C("""
      import torch.nn as nn
      # nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
      s = "nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))"
      """, id="comment-string"),
]


TPF301 += [
    C("""
      import torch.nn as nn
      import torch.nn.functional as F
      class Block(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv1 = nn.Conv2d(3, 16, 3)  #!
              self.bn1 = nn.BatchNorm2d(16)

          def forward(self, x):
              return F.relu(self.bn1(self.conv1(x)))
      """, id="forward-wrapped-in-relu"),
    C("""
      from torch.nn import Conv2d, BatchNorm2d as BN
      import torch.nn as nn
      net = nn.Sequential(Conv2d(3, 16, 3), BN(16))  #!
      """, id="bn-alias"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=not use_bn), nn.BatchNorm2d(16))
      """, id="bias-not-expression"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Dropout(0.1), nn.BatchNorm2d(16))
      """, id="dropout-between"),
    C("""
      import torch.nn as nn
      class A(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)
              self.bn = nn.BatchNorm2d(16)
          def forward(self, x):
              return self.conv(self.bn(x))

      class B(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3, bias=False)
              self.bn = nn.BatchNorm2d(16)
          def forward(self, x):
              return self.bn(self.conv(x))
      """, id="two-classes-same-attr-names"),
]


TPF301 += [
    C("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16) if use_bn else nn.Identity())
      """, id="conditional-next-layer"),
    C("""
      import torch.nn as nn
      net = nn.Sequential(*[nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16)])  #!
      m = nn.Sequential(nn.Linear(3, 16, True), nn.BatchNorm1d(16))  #!
      """, id="starred-inline-list-and-linear-positional"),
    C("""
      import torch.nn as nn
      class B(nn.Module):
          def __init__(self):
              super().__init__()
              self.fc = nn.Linear(3, 16)  #!
              self.bn = nn.BatchNorm1d(16)
          def forward(self, x):
              return self.bn(self.fc(x))
      """, id="forward-linear-bn1d"),
    C("""
      import torch.nn as nn
      class B(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 16, 3)
              self.bn = nn.BatchNorm2d(16)
          def forward(self, x):
              return self.conv(x), self.bn(self.conv(x))
      """, id="conv-output-also-used-raw"),
    C("""
      import torch.nn as nn
      def make_layers(cfg):
          layers = []
          in_channels = 3
          for v in cfg:
              conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)  #!
              layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
              in_channels = v
          return nn.Sequential(*layers)
      """, id="torchvision-vgg-make-layers"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF301)
def test_tpf301(code, expected, opts):
    check_lint("TPF301", code, expected, opts)


TPF301_FIX = [
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
      """, """
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))
      """, id="add"),
    # `bias=True` written out (issue 11): reported, the fix display-only.
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=True), nn.BatchNorm2d(16))
      """, None, id="explicit-bias-true-kept"),
    F("""
      import torch.nn as nn
      USE_BIAS = True
      net = nn.Sequential(nn.Conv2d(3, 16, 3, bias=USE_BIAS), nn.BatchNorm2d(16))
      """, None, id="name-bias-true-kept"),
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
      """, None, unsafe=False, id="unsafe-only"),
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, 1, 1, True), nn.BatchNorm2d(16))
      """, None, id="positional-bias-true-kept"),
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.BatchNorm2d(16))
      """, lambda t: run_fixed(t)["net"][0].bias is None, id="positional-runs"),
]


TPF301_FIX += [
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Linear(3, 16, True), nn.BatchNorm1d(16))
      """, None, id="linear-positional-bias-true-kept"),
    F("""
      import torch.nn as nn
      net = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16))
      """, lambda t: run_fixed(t)["net"][0].bias is None, id="linear-runs"),
]


def test_tpf301_explicit_bias_true_shows_a_display_only_fix():
    from pytorch_perflint.types import Applicability

    code = "import torch.nn as nn\nnet = nn.Sequential(nn.Conv2d(3, 16, 3, bias=True), nn.BatchNorm2d(16))\n"
    diagnostic = single_diagnostic("TPF301", code)
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert "written out" in diagnostic.fix.message and "state_dict" in diagnostic.fix.message
    assert "bias=False" in diagnostic.fix.edits[0].content


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF301_FIX)
def test_tpf301_fix(code, expected, opts, unsafe):
    check_fix("TPF301", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF401 tensor-copy-from-numpy
# --------------------------------------------------------------------------------------------

TPF401 = [
    C("""
      import numpy as np
      import torch
      t = torch.tensor(np.zeros(3))  #!
      """, id="np-zeros"),
    C("""
      import numpy
      import torch as th
      t = th.tensor(numpy.ones((2, 2)))  #!
      """, id="numpy-ones-alias"),
    C("""
      import numpy as np
      import torch
      arr = np.load("x.npy")
      t = torch.tensor(arr)  #!
      u = torch.Tensor(arr)  #!
      v = torch.FloatTensor(arr)  #!
      w = torch.LongTensor(arr)  #!
      """, id="name-bound-to-array"),
    C("""
      import numpy as np
      import torch
      def load(path):
          arr = np.asarray(read(path))
          return torch.tensor(arr, dtype=torch.float32)  #!
      """, id="function-scope"),
    C("""
      import torch
      t = torch.tensor(other.numpy())  #!
      """, id="dot-numpy"),
    C("""
      import numpy as np
      from torch import tensor
      t = tensor(np.arange(10))  #!
      """, id="from-torch-import-tensor"),
    # not
    C("""
      import numpy as np
      import torch
      a = torch.tensor([1, 2, 3])
      b = torch.tensor((1, 2))
      c = torch.tensor(3.0)
      d = torch.tensor(arr.shape)
      e = torch.tensor(unknown)
      f = torch.Tensor(3, 4)
      """, id="lists-scalars-unknown"),
    C("""
      import numpy as np
      import torch
      arr = np.zeros(3)
      t = torch.tensor(arr.shape)
      u = torch.from_numpy(arr)
      v = torch.as_tensor(arr)
      """, id="shape-and-zero-copy"),
    C("""
      import numpy as np
      import torch
      arr = np.zeros(3)
      if flag:
          arr = [1, 2, 3]
      t = torch.tensor(arr)
      """, id="name-bound-twice"),
    C("""
      import torch
      def f(np):
          return torch.tensor(np.zeros(3))
      """, id="np-shadowed"),
    C("""
      import numpy as np
      def f(torch):
          return torch.tensor(np.zeros(3))
      """, id="torch-shadowed"),
    C("""
      import numpy as np
      import torch
      t = torch.tensor(np.float32(0.5))
      """, id="numpy-scalar"),
    C("""
      import numpy as np
      import torch
      # torch.tensor(np.zeros(3))
      s = "torch.tensor(np.zeros(3))"
      """, id="comment-string"),
]


TPF401 += [
    C("""
      import numpy as np
      import torch
      a = torch.tensor(np.array([1, 2, 3]))  #!
      b = torch.tensor(np.random.rand(3))  #!
      """, id="np-array-random"),
    C("""
      import numpy as np
      import torch
      a = torch.tensor(df.values)
      b = torch.tensor(np.pi)
      c = torch.tensor([np.zeros(3)])
      """, id="unknown-attr-constant-list"),
    C("""
      import numpy as np
      import torch
      def a():
          arr = np.zeros(3)
      def b():
          return torch.tensor(arr)
      """, id="name-from-other-scope"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF401)
def test_tpf401(code, expected, opts):
    check_lint("TPF401", code, expected, opts)


def _same_tensor_as_original(original: str) -> Callable[[str], bool]:
    def pred(text: str) -> bool:
        import torch
        before = run_fixed(original)["t"]
        after = run_fixed(text)["t"]
        return ("from_numpy" in text or "as_tensor" in text) and before.dtype == after.dtype \
            and torch.equal(before, after)
    return pred


_NP_TENSOR = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.float64)
    t = torch.tensor(arr)
    """)
_NP_TENSOR_CLS = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.float64)
    t = torch.Tensor(arr)
    """)
_NP_FLOAT = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.float64)
    t = torch.FloatTensor(arr)
    """)
_NP_LONG = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.int32)
    t = torch.LongTensor(arr)
    """)
_NP_DTYPE = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.float64)
    t = torch.tensor(arr, dtype=torch.float32)
    """)

TPF401_FIX = [
    F(_NP_TENSOR, _same_tensor_as_original(_NP_TENSOR), id="tensor"),
    F(_NP_TENSOR_CLS, _same_tensor_as_original(_NP_TENSOR_CLS), id="Tensor-keeps-float32"),
    F(_NP_FLOAT, _same_tensor_as_original(_NP_FLOAT), id="FloatTensor-keeps-float32"),
    F(_NP_LONG, _same_tensor_as_original(_NP_LONG), id="LongTensor-keeps-int64"),
    F(_NP_DTYPE, _same_tensor_as_original(_NP_DTYPE), id="dtype-kwarg"),
    F(_NP_TENSOR, None, unsafe=False, id="unsafe-only"),
]


_NP_GRAD = src("""
    import numpy as np
    import torch
    arr = np.arange(6, dtype=np.float32)
    t = torch.tensor(arr, requires_grad=True)
    """)

TPF401_FIX += [
    F(_NP_GRAD, lambda text: text == _NP_GRAD or run_fixed(text)["t"].requires_grad, id="requires-grad-not-broken"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF401_FIX)
def test_tpf401_fix(code, expected, opts, unsafe):
    check_fix("TPF401", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF402 tensor-created-then-moved
# --------------------------------------------------------------------------------------------

TPF402 = [
    C("""
      import torch
      a = torch.zeros(3).cuda()  #!
      b = torch.ones(2, 2).to("cuda")  #!
      c = torch.empty(4).to(torch.device("cuda"))  #!
      d = torch.full((2,), 1.0).cuda()  #!
      """, id="factories"),
    C("""
      import torch
      device = torch.device("cuda")
      a = torch.arange(10).to(device)  #!
      b = torch.linspace(0, 1, 5).to(device)  #!
      c = torch.eye(3).to(device)  #!
      d = torch.tensor([1, 2]).to(device)  #!
      e = torch.rand(3).cuda()  #!
      f = torch.randn(3).cuda()  #!
      g = torch.randint(0, 5, (3,)).cuda()  #!
      """, id="more-factories"),
    C("""
      import torch as th
      a = th.zeros(3).cuda()  #!
      """, id="alias"),
    C("""
      from torch import zeros
      a = zeros(3).cuda()  #!
      """, id="from-import"),
    C("""
      import torch
      x = torch.zeros(  #!
          3,
          4,
      ).cuda()
      """, id="multiline-anchor-is-call-start"),
    C("""
      import torch
      a = torch.zeros(3, dtype=torch.float16).cuda()  #!
      """, id="dtype-kwarg"),
    # not
    C("""
      import torch
      a = torch.zeros_like(t).cuda()
      b = torch.ones_like(t).to("cuda")
      c = torch.randn_like(t).cuda()
      """, id="like-factories"),
    C("""
      import torch
      a = torch.zeros(3).to(torch.float16)
      b = torch.zeros(3).to(dtype=torch.float16)
      """, id="dtype-move"),
    C("""
      import torch
      a = torch.zeros(3, device="cuda")
      b = torch.zeros(3)
      c = b.cuda()
      """, id="device-kwarg-or-later"),
    C("""
      def f(torch):
          return torch.zeros(3).cuda()
      """, id="shadowed"),
    C("""
      import torch
      # torch.zeros(3).cuda()
      s = "torch.zeros(3).cuda()"
      """, id="comment-string"),
]


TPF402 += [
    C("""
      import torch
      device = torch.device("cuda")
      a = torch.zeros(3).to(device=device)  #!
      b = torch.ones(3).to(x.device)  #!
      c = torch.arange(5).to(device, non_blocking=True)  #!
      """, id="keyword-and-attr-targets"),
    C("""
      import torch
      import numpy as np
      a = torch.from_numpy(np.zeros(3)).cuda()
      b = torch.as_tensor(data).cuda()
      """, id="not-factories"),
]


TPF402 += [
    C("""
      import torch
      a = torch.zeros(3).to(x)
      b = torch.zeros(3).to(memory_format=torch.channels_last)
      c = torch.zeros(3).to(some_dtype)
      """, id="to-tensor-or-non-device"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF402)
def test_tpf402(code, expected, opts):
    check_lint("TPF402", code, expected, opts)


TPF402_FIX = [
    F("""
      import torch
      a = torch.zeros(3).to("cuda")
      """, """
      import torch
      a = torch.zeros(3, device="cuda")
      """, unsafe=False, id="safe-literal"),
    F("""
      import torch
      a = torch.zeros(3).to(torch.device("cuda"))
      """, """
      import torch
      a = torch.zeros(3, device=torch.device("cuda"))
      """, unsafe=False, id="safe-torch-device"),
    F("""
      import torch
      a = torch.zeros(3).to(device)
      """, None, unsafe=False, id="variable-not-safe"),
    F("""
      import torch
      a = torch.zeros(3).to(device)
      """, """
      import torch
      a = torch.zeros(3, device=device)
      """, id="variable-unsafe"),
    F("""
      import torch
      a = torch.randn(3).to("cuda")
      """, None, unsafe=False, id="random-not-safe"),
    F("""
      import torch
      a = torch.randn(3).to("cuda")
      """, """
      import torch
      a = torch.randn(3, device="cuda")
      """, id="random-unsafe"),
    F("""
      import torch
      a = torch.rand(3).cuda()
      """, None, unsafe=False, id="random-cuda-not-safe"),
    F("""
      import torch
      a = torch.zeros(3).cuda()
      """, fixed_clean("TPF402", None, "device=", absent=(".cuda()",)), id="dot-cuda"),
]


def _same_dtype_on_cpu(original: str) -> Callable[[str], bool]:
    def pred(text: str) -> bool:
        before = run_fixed(original, device="cpu")["a"]
        after = run_fixed(text, device="cpu")["a"]
        if text == original:  # flagged without a fix: acceptable
            return True
        return ".to(" not in text and before.dtype == after.dtype and before.shape == after.shape
    return pred


_TO_DEVICE_DTYPE = src("""
    import torch
    a = torch.zeros(3).to(device, dtype=torch.float16)
    """)
_TO_DEVICE_DTYPE_POS = src("""
    import torch
    a = torch.zeros(3).to(device, torch.float16)
    """)
_FACTORY_DTYPE = src("""
    import torch
    a = torch.zeros(3, dtype=torch.float16).to(device)
    """)

TPF402_FIX += [
    F(_TO_DEVICE_DTYPE, _same_dtype_on_cpu(_TO_DEVICE_DTYPE), id="to-device-dtype-keeps-dtype"),
    F(_TO_DEVICE_DTYPE_POS, _same_dtype_on_cpu(_TO_DEVICE_DTYPE_POS), id="to-device-dtype-positional-keeps-dtype"),
    F(_FACTORY_DTYPE, _same_dtype_on_cpu(_FACTORY_DTYPE), id="factory-dtype-kept"),
]


TPF402_FIX += [
    F("""
      import torch
      c = torch.zeros(3).to(device, non_blocking=True)
      """, """
      import torch
      c = torch.zeros(3, device=device)
      """, id="drops-non-blocking"),
    F("""
      from torch import zeros
      c = zeros(3).to("cuda")
      """, """
      from torch import zeros
      c = zeros(3, device="cuda")
      """, unsafe=False, id="from-import-safe"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF402_FIX)
def test_tpf402_fix(code, expected, opts, unsafe):
    check_fix("TPF402", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF403 cudnn-benchmark-disabled
# --------------------------------------------------------------------------------------------

TPF403 = [
    C("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()  #!
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="no-setting"),
    C("""
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = False  #!
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="set-false"),
    C("""
      import torch
      import torch.nn as nn
      class Net(nn.Module):
          def __init__(self):
              super().__init__()
              self.conv = nn.Conv2d(3, 8, 3)
          def forward(self, x):
              return self.conv(x)
      model = Net()  #!
      model.cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="class-model"),
    # not
    C("""
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = True
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="set-true"),
    C("""
      import torch
      import torch.nn as nn
      from torch.backends import cudnn
      cudnn.benchmark = True
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="set-true-from-import"),
    C("""
      import torch
      import torch.nn as nn
      import torch.backends.cudnn as cudnn
      cudnn.benchmark = True
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="set-true-import-as"),
    C("""
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = False
      torch.backends.cudnn.deterministic = True
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="deterministic"),
    C("""
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = args.benchmark
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="unknown-value"),
    C("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Linear(3, 8), nn.ReLU()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="no-conv"),
    C("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten())
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      for x, y in loader:
          loss = criterion(model(x), y)
          loss.backward()
          optimizer.step()
      """, id="cpu-only"),
    C("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      model.eval()
      with torch.no_grad():
          for x in loader:
              out = model(x.cuda())
      """, id="inference-only"),
]


TPF403 += [
    C("""
      import torch
      import torch.nn as nn
      def main():
          torch.backends.cudnn.benchmark = True
          model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
          optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
          for x, y in loader:
              loss = criterion(model(x.cuda()), y.cuda())
              loss.backward()
              optimizer.step()
      """, id="set-true-in-main"),
    C("""
      import torch
      import torch.nn as nn
      device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
      model = nn.Sequential(  #!
          nn.Conv2d(3, 8, 3),
          nn.ReLU(),
          nn.Flatten(),
      )
      model.to(device)
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="multiline-model-to-device"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF403)
def test_tpf403(code, expected, opts):
    check_lint("TPF403", code, expected, opts)


TPF403_FIX = [
    F("""
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = False
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, """
      import torch
      import torch.nn as nn
      torch.backends.cudnn.benchmark = True
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, train=True, id="false-to-true"),
    F("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, fixed_clean("TPF403", None, "torch.backends.cudnn.benchmark = True"), train=True, id="insert"),
    F("""
      import torch
      import torch.nn as nn
      model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten()).cuda()
      optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
      """, None, unsafe=False, train=True, id="unsafe-only"),
]


def _inserted_after_imports(text: str) -> bool:
    """The setting stands at module level right after the last leading import, once."""
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if line == "torch.backends.cudnn.benchmark = True"]
    if len(found) != 1:
        return False
    before = [line for line in lines[: found[0]] if line.strip()]
    return before[-1].startswith(("import ", "from ")) and lint_example(rule_by_code("TPF403"), text) == []


_TPF403_MAIN = src("""
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)

    def main():
        model = Net().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = model(x.cuda()).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """)

TPF403_FIX += [
    # Issue 11: the setting goes at the top of the entry script, never into a function or a
    # constructor; a library module gets the advice only.
    F(_TPF403_MAIN + "if __name__ == '__main__':\n    main()\n", _inserted_after_imports, id="entry-script-main-guard"),
    F(_TPF403_MAIN + "main()\n", _inserted_after_imports, id="entry-script-bare-main-call"),
    F(_TPF403_MAIN, None, id="library-module-no-edit"),
    F("""
      import torch
      import torchvision

      class Trainer:
          def __init__(self, loader):
              self.loader = loader
              self.model = torchvision.models.resnet50().cuda()
              self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

          def fit(self):
              for x, y in self.loader:
                  loss = self.model(x.cuda()).sum()
                  self.opt.zero_grad()
                  loss.backward()
                  self.opt.step()
      """, None, id="constructor-in-library-no-edit"),
    F("""
      \"\"\"Train.\"\"\"
      import torchvision

      def main():
          import torch
          model = torchvision.models.resnet50().cuda()
          opt = torch.optim.SGD(model.parameters(), lr=0.1)
          for x, y in loader:
              model(x.cuda()).sum().backward()
              opt.step()

      if __name__ == "__main__":
          main()
      """, lambda t: t.startswith('"""Train."""\nimport torchvision\nimport torch\n\ntorch.backends.cudnn.benchmark = True\n')
      and ast.parse(t) is not None, id="torch-imported-only-in-main"),
]


def test_tpf403_library_module_shows_where_the_setting_belongs():
    from pytorch_perflint.types import Applicability

    diagnostic = single_diagnostic("TPF403", _TPF403_MAIN)
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert "entry script" in diagnostic.fix.message and not diagnostic.fix.edits


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF403_FIX)
def test_tpf403_fix(code, expected, opts, unsafe):
    check_fix("TPF403", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF501 data-parallel
# --------------------------------------------------------------------------------------------

TPF501 = [
    C("""
      import torch
      model = torch.nn.DataParallel(model)  #!
      """, id="torch-nn"),
    C("""
      import torch as th
      model = th.nn.DataParallel(model)  #!
      """, id="torch-as-th"),
    C("""
      import torch.nn as nn
      model = nn.DataParallel(model)  #!
      """, id="import-torch-nn-as-nn"),
    C("""
      from torch import nn
      model = nn.DataParallel(model)  #!
      """, id="from-torch-import-nn"),
    C("""
      from torch import nn, optim
      model = nn.DataParallel(model, device_ids=[0, 1])  #!
      opt = optim.SGD(model.parameters(), lr=0.1)
      """, id="from-torch-import-nn-optim"),
    C("""
      from torch.nn import DataParallel
      model = DataParallel(model)  #!
      """, id="from-torch-nn-import"),
    C("""
      from torch.nn import DataParallel as DP
      model = DP(model)  #!
      """, id="from-import-as"),
    C("""
      from torch.nn.parallel import DataParallel
      model = DataParallel(model)  #!
      """, id="from-parallel"),
    C("""
      from torch.nn.parallel.data_parallel import DataParallel
      model = DataParallel(model)  #!
      """, id="from-parallel-data-parallel"),
    C("""
      import torch
      model = torch.nn.parallel.DataParallel(model)  #!
      """, id="torch-nn-parallel"),
    C("""
      import torch.nn.parallel as par
      model = par.DataParallel(model)  #!
      """, id="parallel-as"),
    C("""
      import torch.nn
      model = torch.nn.DataParallel(model)  #!
      """, id="import-torch-nn"),
    C("""
      import torch
      if torch.cuda.device_count() > 1:
          model = torch.nn.DataParallel(model)  #!
      """, id="conditional"),
    C("""
      import torch.nn as nn
      model = nn.DataParallel(  #!
          model,
          device_ids=[0, 1],
      ).cuda()
      """, id="multiline-chained"),
    C("""
      import torch.nn as nn
      class Trainer:
          def __init__(self, model):
              self.model = nn.DataParallel(model) if multi else model  #!
      """, id="in-ifexp"),
    C("""
      def wrap(model):
          from torch.nn import DataParallel
          return DataParallel(model)  #!
      """, id="local-import"),
    C("""
      import torch
      models = [torch.nn.DataParallel(m) for m in ms]  #!
      """, id="comprehension"),
    # not
    C("""
      import torch.nn as nn
      if isinstance(model, nn.DataParallel):
          model = model.module
      """, id="isinstance"),
    C("""
      import torch
      if isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
          model = model.module
      net = model.module if isinstance(model, torch.nn.DataParallel) else model
      """, id="isinstance-tuple-and-ifexp"),
    C("""
      import torch.nn as nn
      if type(model) is nn.DataParallel:
          pass
      ok = issubclass(cls, nn.DataParallel)
      """, id="type-and-issubclass"),
    C("""
      import torch
      # model = torch.nn.DataParallel(model)
      s = "torch.nn.DataParallel(model)"
      t = f"use {'torch.nn.DataParallel(model)'}"
      def f():
          \"\"\"Wraps with torch.nn.DataParallel(model).\"\"\"
      """, id="comments-strings-docstring"),
    C("""
      import torch
      model = torch.nn.parallel.DistributedDataParallel(model)
      """, id="ddp"),
    C("""
      import torch.nn as nn
      def wrap(nn, model):
          return nn.DataParallel(model)
      """, id="nn-shadowed-by-parameter"),
    C("""
      import torch
      def wrap(torch, model):
          return torch.nn.DataParallel(model)
      """, id="torch-shadowed-by-parameter"),
    C("""
      from torch.nn import DataParallel
      def wrap(DataParallel, model):
          return DataParallel(model)
      """, id="class-shadowed-by-parameter"),
    C("""
      class DataParallel:
          pass
      model = DataParallel(model)
      """, id="local-class-no-import"),
    C("""
      model = DataParallel(model)
      """, id="unimported-name"),
    C("""
      import torch.nn as nn
      WRAPPERS = {"dp": nn.DataParallel}
      cls = nn.DataParallel
      """, id="reference-not-construction"),
    C("""
      import torch.nn as nn
      class MyDP(nn.DataParallel):
          pass
      """, id="subclass-definition"),
]


TPF501 += [
    C("""
      import torch.nn.parallel.data_parallel as dp
      model = dp.DataParallel(model)  #!
      """, id="data-parallel-module-as"),
    C("""
      from torch.nn import parallel
      model = parallel.DataParallel(model)  #!
      """, id="from-torch-nn-import-parallel"),
    C("""
      from torch import nn as tnn
      model = tnn.DataParallel(model).to(device)  #!
      """, id="from-torch-import-nn-as"),
    C("""
      import torch
      wrap = lambda m: torch.nn.DataParallel(m)  #!
      """, id="in-lambda"),
    C("""
      import torch.nn as nn
      model: nn.DataParallel = nn.DataParallel(model, device_ids=gpus)  #!
      """, id="annotated-assignment"),
    C("""
      import torch
      wrap = lambda torch, m: torch.nn.DataParallel(m)
      """, id="lambda-param-shadows"),
    C("""
      import torch.nn as nn
      wrapped = [nn.DataParallel(m) for nn in libs]
      """, id="comprehension-var-shadows"),
    C("""
      import torch.nn as nn
      wrapped = [[nn.DataParallel(m) for m in group] for nn in libs]
      factories = [lambda m: nn.DataParallel(m) for nn in libs]
      """, id="comprehension-var-shadows-nested-and-in-lambda"),
    C("""
      import torch.nn as nn
      wrapped = [nn.DataParallel(m) for m in models]  #!
      parts = [nn for nn in nn.DataParallel(model).children()]  #!
      """, id="comprehension-outer-iterable-and-other-vars-see-the-import"),
    C("""
      import typing
      from typing import Union
      import torch.nn as nn
      m = typing.cast(nn.DataParallel, model)
      def f(model: Union[nn.DataParallel, nn.Module]) -> nn.DataParallel:
          return model
      same = model.__class__ == nn.DataParallel
      """, id="cast-and-annotations"),
    C("""
      import torch.nn as nn
      model = nn.DataParallel(model)  # noqa: TPF501
      other = nn.DataParallel(other)  # noqa
      """, id="noqa"),
    C("""
      import torch
      class Wrapper:
          def DataParallel(self, m):
              return m
      model = Wrapper().DataParallel(model)
      model = self.nn.DataParallel(model)
      """, id="unrelated-attribute-named-dataparallel"),
]


TPF501 += [
    C("""
      import torch
      def f(m):
          torch = get_mock()
          return torch.nn.DataParallel(m)
      """, id="torch-rebound-locally"),
    C("""
      import torch.nn as nn
      from unittest.mock import patch
      with patch("x") as nn:
          nn.DataParallel(m)
      """, id="nn-rebound-by-with"),
    C("""
      import torch.nn as nn
      model = (nn  #!
          .DataParallel(model))
      y = (
          nn.DataParallel(model)  #!
      )
      """, id="parenthesised-anchors"),
    C("""
      import torch.nn as nn
      s = eval("nn.DataParallel(m)")
      def f(x: "nn.DataParallel") -> None: ...
      """, id="eval-string-and-string-annotation"),
]


TPF501 += [
    C("""
      import torch
      class Model(torch.nn.Module):
          def forward(self, x):
              return x
      if __name__ == "__main__":
          model = Model()
          if torch.cuda.device_count() > 1:
              print("Let's use", torch.cuda.device_count(), "GPUs!")
              model = torch.nn.DataParallel(model)  #!
      """, id="pytorch-tutorial"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF501)
def test_tpf501(code, expected, opts):
    check_lint("TPF501", code, expected, opts)


TPF501_FIX = [
    F("""
      import torch
      model = torch.nn.DataParallel(model)
      """, None, id="display-only"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF501_FIX)
def test_tpf501_fix(code, expected, opts, unsafe):
    check_fix("TPF501", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF601 training-without-autocast (preview)
# --------------------------------------------------------------------------------------------

_CUDA_TRAIN = """
import torch
model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

TPF601 = [
    C(_CUDA_TRAIN, ANY, PREVIEW, id="cuda-loop"),
    C(_CUDA_TRAIN.replace(".cuda()", ""), [], PREVIEW, id="cpu-only"),
    C("""
      import torch
      model = Net().cuda()
      for x, y in loader:
          with torch.autocast("cuda", dtype=torch.bfloat16):
              loss = criterion(model(x.cuda()), y.cuda())
          loss.backward()
          optimizer.step()
      """, [], PREVIEW, id="autocast"),
    C("""
      import torch
      model = Net().cuda()
      scaler = torch.cuda.amp.GradScaler()
      for x, y in loader:
          with torch.cuda.amp.autocast():
              loss = criterion(model(x.cuda()), y.cuda())
          scaler.scale(loss).backward()
          scaler.step(optimizer)
          scaler.update()
      """, [], PREVIEW, id="cuda-amp-autocast"),
    C("""
      import torch
      model = Net().cuda()
      for x, y in loader:
          with torch.amp.autocast(device_type="cuda"):
              loss = criterion(model(x.cuda()), y.cuda())
          loss.backward()
          optimizer.step()
      """, [], PREVIEW, id="amp-autocast"),
    C("""
      import torch
      model = Net().cuda().half()
      for x, y in loader:
          loss = criterion(model(x.cuda().half()), y.cuda())
          loss.backward()
          optimizer.step()
      """, [], PREVIEW, id="half-model"),
    C("""
      import torch
      model = Net().to("cuda", dtype=torch.bfloat16)
      for x, y in loader:
          loss = criterion(model(x.cuda()), y.cuda())
          loss.backward()
          optimizer.step()
      """, [], PREVIEW, id="bf16-model"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF601)
def test_tpf601(code, expected, opts):
    check_lint("TPF601", code, expected, opts)


TPF601_FIX = [F(_CUDA_TRAIN, None, PREVIEW, id="display-only")]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF601_FIX)
def test_tpf601_fix(code, expected, opts, unsafe):
    check_fix("TPF601", code, expected, opts, unsafe)


# --------------------------------------------------------------------------------------------
# TPF602 optimizer-not-fused (preview)
# --------------------------------------------------------------------------------------------

TPF602 = [
    C("""
      import torch
      model = Net().cuda()
      opt = torch.optim.Adam(model.parameters(), lr=1e-3)  #!
      """, opts=PREVIEW, id="adam"),
    C("""
      import torch as th
      model = Net().to("cuda")
      opt = th.optim.AdamW(model.parameters())  #!
      """, opts=PREVIEW, id="adamw-alias"),
    C("""
      import torch
      from torch import nn, optim
      model = Net().cuda()
      opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  #!
      """, opts=PREVIEW, id="sgd-from-torch-import-optim"),
    C("""
      from torch.optim import AdamW
      model = Net().cuda()
      opt = AdamW(model.parameters())  #!
      """, opts=PREVIEW, id="from-import"),
    C("""
      import torch
      model = Net().cuda()
      a = torch.optim.Adam(model.parameters(), fused=True)
      b = torch.optim.AdamW(model.parameters(), foreach=True)
      c = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
      """, [], PREVIEW, id="fused-or-foreach"),
    C("""
      import torch
      model = Net()
      opt = torch.optim.Adam(model.parameters(), lr=1e-3)
      """, [], PREVIEW, id="cpu-only"),
    C("""
      import torch
      model = Net().cuda()
      opt = torch.optim.RMSprop(model.parameters())
      """, [], PREVIEW, id="other-optimizer"),
    C("""
      import torch
      model = Net().cuda()
      def make(torch):
          return torch.optim.Adam(model.parameters())
      """, [], PREVIEW, id="shadowed"),
]


TPF602 += [
    C("""
      import torch
      model = Net().cuda()
      opt = torch.optim.Adam(model.parameters(), fused=False)
      opt2 = torch.optim.Adam(model.parameters(), **opt_kwargs)
      """, [], PREVIEW, id="explicit-fused-false-or-unknown-kwargs"),
]


@pytest.mark.parametrize(("code", "expected", "opts"), TPF602)
def test_tpf602(code, expected, opts):
    check_lint("TPF602", code, expected, opts)


TPF602_FIX = [
    F("""
      import torch
      model = Net().cuda()
      opt = torch.optim.Adam(model.parameters(), lr=1e-3)
      """, """
      import torch
      model = Net().cuda()
      opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
      """, PREVIEW, id="add-fused"),
    F("""
      import torch
      model = Net().cuda()
      opt = torch.optim.Adam(model.parameters(), lr=1e-3)
      """, None, PREVIEW, unsafe=False, id="unsafe-only"),
]


TPF602_FIX += [
    F("""
      import torch
      model = Net().cuda()
      opt = torch.optim.SGD(model.parameters(), 0.1, 0.9)
      """, """
      import torch
      model = Net().cuda()
      opt = torch.optim.SGD(model.parameters(), 0.1, 0.9, fused=True)
      """, PREVIEW, id="positional-args"),
]


@pytest.mark.parametrize(("code", "expected", "opts", "unsafe"), TPF602_FIX)
def test_tpf602_fix(code, expected, opts, unsafe):
    check_fix("TPF602", code, expected, opts, unsafe)


# Preview rules are off unless preview is on: go through the real selection (lint_example
# passes the rule explicitly, which overrides the selection).
@pytest.mark.parametrize(("preview", "present"), [(False, False), (True, True)])
def test_preview_rules_selected_only_with_preview(preview, present):
    from pathlib import Path
    from pytorch_perflint.engine import lint_source
    from pytorch_perflint.testing import settings_with
    code = src(_CUDA_TRAIN).replace(
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "optimizer = torch.optim.Adam(model.parameters(), lr=0.1)")
    result = lint_source(code, Path("example.py"), settings_with({"preview": preview}))
    codes = {d.code for d in result.diagnostics}
    assert ("TPF601" in codes) is present and ("TPF602" in codes) is present, codes
