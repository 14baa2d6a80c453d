"""The DataLoader facts the TPF1xx rules share, and the keyword-adding helper of their fixes."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from pytorch_perflint.analysis.call_edits import with_keyword
from pytorch_perflint.analysis.calls import MISSING
from pytorch_perflint.analysis.values import UNKNOWN
from pytorch_perflint.context import FileContext
from pytorch_perflint.facts.dataloader.loader_args import loader_args
from pytorch_perflint.facts.dataloader.loader_facts import loader_facts
from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import lint_example, settings_with


def _context(source: str) -> FileContext:
    return FileContext(Path("example.py"), source, cst.parse_module(source), settings_with({}))


def _facts(source: str):
    context = _context(source)
    return context, context.fact(loader_facts)


def _line(context: FileContext, node: cst.CSTNode) -> str:
    return context.code_for(node).strip()


@pytest.mark.parametrize(
    ("call", "workers", "pin"),
    [
        ("DataLoader(ds)", MISSING, MISSING),
        ("DataLoader(ds, 8, True, None, None, 3, None, True)", 3, True),
        ("DataLoader(ds, num_workers=0, pin_memory=False)", 0, False),
        ("DataLoader(ds, **{'num_workers': 2})", 2, MISSING),
        ("DataLoader(ds, **kw)", UNKNOWN, UNKNOWN),
        ("DataLoader(*args)", UNKNOWN, UNKNOWN),
        ("DataLoader(ds, 8, *rest)", UNKNOWN, UNKNOWN),
        ("DataLoader(ds, num_workers=n)", UNKNOWN, MISSING),
    ],
)
def test_loader_args(call, workers, pin):
    args = loader_args(cst.parse_expression(call), None)
    assert args.num_workers.value == workers or args.num_workers.value is workers
    assert args.pin_memory.value == pin or args.pin_memory.value is pin


def test_a_dict_changed_after_it_is_built_is_unknown():
    source = "kw = {'batch_size': 2}\nkw.update(extra)\nDataLoader(ds, **kw)\n"
    context = _context(source)
    call = context.module.body[2].body[0].value
    args = loader_args(call, context.module_scope.lookup_value, source)
    assert args.num_workers.unknown and args.pin_memory.unknown


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("f(a, b=1)", "f(a, b=1, k=True)"),
        ("f(\n    a,\n    b=1,\n)", "f(\n    a,\n    b=1,\n    k=True,\n)"),
        ("f(a,\n  b=1)", "f(a,\n  b=1, k=True)"),
        ("f(a, k=False)", "f(a, k=True)"),
        ("f()", "f(k=True)"),
        ("f(a, **kw)", "f(a, **kw, k=True)"),
    ],
)
def test_with_keyword_follows_the_layout(source, expected):
    call = cst.parse_expression(source)
    assert cst.Module([]).code_for_node(with_keyword(call, "k", cst.Name("True"))) == expected


LOOPS = """\
from torch.utils.data import DataLoader

def run(model, loader):
    for x in loader:
        model(x)

def main(ds, epochs):
    every_epoch = DataLoader(ds, num_workers=2)
    once = DataLoader(ds, num_workers=2)
    for epoch in range(epochs):
        run(None, every_epoch)
        rebuilt = DataLoader(ds, num_workers=2)
        for x in rebuilt:
            pass
    run(None, once)
"""


def test_reiterated_loaders():
    context, facts = _facts(LOOPS)
    reiterated = sorted(_line(context, s.call) for s in facts.sites.values() if id(s.call) in facts.reiterated)
    assert reiterated == ["DataLoader(ds, num_workers=2)"]
    assert len(facts.reiterated) == 1
    (site,) = [s for s in facts.sites.values() if id(s.call) in facts.reiterated]
    assert site.ancestors[-1].targets[0].target.value == "every_epoch"


PINNED = """\
from torch.utils.data import DataLoader

def main(ds, device):
    loader = DataLoader(ds, pin_memory=True)
    for i, (x, y) in enumerate(loader):
        a = x.to(device)
        x = x.float()
        b = x.to(device)
        c = y.to(torch.float16)
        d = y.to(device, non_blocking=True)
"""


def test_blocking_copies_stop_at_a_rebinding():
    # TPF104 asks the value engine (``project/loader_values.py``) what ``x`` holds.
    assert lint_example(rule_by_code("TPF104"), PINNED) == [(6, "TPF104")]
