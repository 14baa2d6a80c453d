"""Values through called objects, call-site arms and large projects (review-11's misses by
mechanism, in scratch projects of our own): an object kept in an attribute and called
(``self.creator(box, anchor)`` runs ``__call__``), the returns one call of a function can
reach (``get_model(cfg, train=True)``), and parameters read from their callers in a
project above the scanning limit, through the index of which modules spell a name."""

from __future__ import annotations

import ast
import re
import os
from pathlib import Path

import pytest

from pytorch_perflint.project import values, word_index
from pytorch_perflint.project.reads import TEXT_OF
from pytorch_perflint.project.kinds import Array, Flag, Instance, Items, Unknown
from pytorch_perflint.project.scopes import expression_form
from pytorch_perflint.project.values import engine_for

from project_tree import index_of
from test_tensors_project import _marked
from test_values_through_objects import _findings


def _ask(index, module: str, function: str, line: int, expression: str):
    """The engine's answer for ``expression`` read at ``line`` inside ``function``."""
    path = os.path.abspath(Path(index.root) / module)
    engine = engine_for(index)
    where = engine._where_in(index.resolve(path, function), line)
    form = expression_form(ast.parse(expression, mode="eval").body, where.scope)
    return engine.answer(form, where).kind


# -- 1. an object kept in an attribute, called: its `__call__` ---------------------------------
CREATORS = {
    "creators.py": """
        import numpy as np


        def to_loc(a, b):
            d = a[:, 0] - b[:, 0]
            return np.vstack((d, d)).transpose()


        class AnchorTargets(object):
            def __call__(self, box, anchor):
                label = self._label(anchor)
                if (label > 0).any():
                    return to_loc(anchor, box), label
                return np.zeros_like(anchor), label

            def _label(self, anchor):
                label = np.empty((len(anchor),), dtype=np.int32)
                label.fill(-1)
                return label


        class Proposals(object):
            def __call__(self, roi, box, label):
                roi = np.concatenate((roi, box), axis=0)
                keep = np.append(np.where(roi > 0)[0], np.where(roi < 0)[0])
                sample = roi[keep]
                gt_label = label[keep] + 1
                loc = to_loc(sample, box) / np.array([0.1, 0.2])
                return sample, loc, gt_label


        class Lists(object):
            def __call__(self, n):
                return [0.0] * n, [1] * n


        class Either(object):
            def __call__(self, a, flag):
                if flag:
                    return np.zeros(3)
                return [0.0, 1.0, 2.0]
    """,
    "trainer.py": """
        import numpy as np
        import torch
        import torch.nn as nn
        from creators import AnchorTargets, Either, Lists, Proposals


        class Trainer(nn.Module):
            def __init__(self):
                super().__init__()
                self.targets = AnchorTargets()
                self.proposals = Proposals()
                self.lists = Lists()
                self.either = Either()

            def forward(self, box, anchor, roi, label, flag):
                loc, lab = self.targets(box, anchor.cpu().numpy())
                a = torch.Tensor(loc)  #!
                b = torch.Tensor(lab)  #!
                sample, loc2, gt = self.proposals(roi, box, label)
                c = torch.Tensor(sample)  #!
                d = torch.Tensor(loc2)  #!
                e = torch.Tensor(gt)  # ok: `label[keep] + 1` of an unknown `label` (a tensor indexed by an array?)
                xs, ys = self.lists(4)
                f = torch.Tensor(xs)  # ok: a list
                g = torch.Tensor(self.either(anchor, flag))  # ok: an array or a list
                return a, b, c, d, e, f, g
    """,
}


def test_an_object_kept_in_an_attribute_and_called_gives_what_its_call_returns(tmp_path):
    assert _findings(tmp_path, CREATORS, "TPF401") == _marked(CREATORS)


def test_numpy_append_and_an_ellipsis_index_keep_arrays(tmp_path):
    files = {
        "main.py": """
            import numpy as np

            def pick(a, rows):
                data = np.concatenate([a, a], 0)
                return np.append(rows, rows), data[rows, ...], data[0], np.delete(data, 0)
        """,
    }
    index = index_of(tmp_path, files)
    kind = _ask(index, "main.py", "pick", 5, "pick(x, r)")
    assert kind == Items((Array(), Array(), Unknown(""), Array()))


# -- 2. the returns one call can reach ---------------------------------------------------------
FACTORY = {
    "model.py": """
        import torch.nn as nn


        class Net(nn.Module):
            pass


        class Sched(object):
            def __init__(self, model):
                self.model = model


        def get_model(cfg, train=False):
            model = Net()
            if train:
                opt = Sched(model)
                model.train()
                return model, opt
            model.eval()
            return model


        def rebinding(cfg, train=False):
            model = Net()
            train = train or cfg
            if train:
                return model, Sched(model)
            return model


        def inline(cfg, train=False):
            if train: return Net(), Sched(None)
            return Net()
    """,
    "main.py": """
        from model import get_model, inline, rebinding

        def go(cfg, flag):
            both = get_model(cfg, train=True)
            one = get_model(cfg)
            negative = get_model(cfg, False)
            unknown = get_model(cfg, train=flag)
            rebound = rebinding(cfg, train=True)
            same_line = inline(cfg, train=True)
            return both, one, negative, unknown, rebound, same_line
    """,
}


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("both", "items"),  # `if train:` taken: its `return model, opt`
        ("one", "instance"),  # the default False: the arm is dead, the return after it stands
        ("negative", "instance"),
        ("unknown", "unknown"),  # a flag the call does not fix: both returns, which disagree
        ("rebound", "unknown"),  # the parameter is rebound before the test
        ("same_line", "unknown"),  # `if train: return ...` on one line: not read (no fall-through known)
    ],
)
def test_a_call_reaches_only_the_returns_of_the_arms_its_flags_take(tmp_path, expression, expected):
    index = index_of(tmp_path, FACTORY)
    kind = _ask(index, "main.py", "go", 10, expression)
    if expected == "items":
        assert type(kind) is Items and [type(k) for k in kind.items] == [Instance, Instance]
        assert kind.items[0].klass.name == "Net" and kind.items[1].klass.name == "Sched"
    elif expected == "instance":
        assert type(kind) is Instance and kind.klass.name == "Net"
    else:
        assert type(kind) is Unknown


# -- 3. parameters from callers in a large project -------------------------------------------
LARGE = {
    "loaders.py": """
        def build(ds, distributed=False, workers=2):
            return distributed, workers


        def main(ds):
            return build(ds, workers=4)
    """,
    "train.py": """
        def helper(ds):
            return ds
    """,
    "other.py": """
        def builder_of(x):  # the word only inside longer names: not a caller
            rebuild = x
            return rebuild
    """,
    "more.py": "import os\n",
}


@pytest.fixture
def large(monkeypatch):
    """A project taken for one above the scanning limit (its scans go through the index of
    the words each module spells)."""
    monkeypatch.setattr(word_index, "MAX_SCANNED_MODULES", 2)
    monkeypatch.setattr(values, "MAX_SCANNED_MODULES", 2)


def test_a_large_project_reads_parameters_from_the_modules_that_name_the_function(tmp_path, large):
    """Only the defining module spells ``build`` (``other.py`` spells it inside longer
    names): its flag's callers are read, and no other module's text is."""
    index = index_of(tmp_path, LARGE)
    assert len(index.files) > word_index.MAX_SCANNED_MODULES
    with index.recording() as used:
        assert _ask(index, "loaders.py", "build", 2, "distributed") == Flag(False)  # no caller passes it
    assert type(_ask(index, "loaders.py", "build", 2, "workers")) is Unknown  # not a flag: not read in a large project
    texts = {os.path.basename(p[len(TEXT_OF):]) for p in used if p.startswith(TEXT_OF)}
    assert texts == {"loaders.py"}


def test_a_caller_added_in_memory_is_seen_by_the_word_index(tmp_path, large):
    """The word index follows texts handed to the index (a linted buffer): a new caller that
    passes True makes the callers disagree."""
    index = index_of(tmp_path, LARGE)
    assert _ask(index, "loaders.py", "build", 2, "distributed") == Flag(False)
    path = os.path.abspath(tmp_path / "loaders.py")
    source = (tmp_path / "loaders.py").read_text() + "\n\ndef again(ds):\n    return build(ds, distributed=True)\n"
    index.summary(path, source, ast.parse(source))
    assert type(_ask(index, "loaders.py", "build", 2, "distributed")) is Unknown


def test_the_word_index_forgets_what_an_edited_module_no_longer_spells(tmp_path, large):
    """A module's words are replaced when its text changes: a word it stops spelling no
    longer finds it, one it starts spelling does, and the other modules' entries stay."""
    index = index_of(tmp_path, LARGE)
    path = os.path.abspath(tmp_path / "loaders.py")
    paths = index.module_paths()
    assert path in index.spelling("build", paths)
    assert index.spelling("rebuilt_once", paths) == []
    source = "def rebuilt_once(ds):\n    return ds\n"
    index.summary(path, source, ast.parse(source))
    assert index.spelling("rebuilt_once", paths) == [path]
    assert path not in index.spelling("build", paths)
    train = os.path.abspath(tmp_path / "train.py")
    assert index.spelling("helper", paths) == [train]  # another module's entry stays
    assert path in index.spelling("return", paths) and train in index.spelling("return", paths)


def test_a_small_project_scans_every_module_as_before(tmp_path):
    index = index_of(tmp_path, LARGE)
    assert index.spelling("build", index.module_paths()) == sorted(index.module_paths())
    assert _ask(index, "loaders.py", "build", 2, "distributed") == Flag(False)


def test_a_name_another_module_spells_is_unknown_and_depends_on_enough_of_them(tmp_path, large):
    """Past ``MAX_NAMING_MODULES`` (another module spells the name) the parameter is unknown
    without reading the callers; the first ``limit + 1`` modules that spell the name are the
    answer's text dependencies, so an edit that brings the count under the limit changes
    one of them (the cache sees it)."""
    index = index_of(tmp_path, {**LARGE, "more.py": "from loaders import build\n", "zoo.py": "from loaders import build\n"})
    with index.recording() as used:
        assert type(_ask(index, "loaders.py", "build", 2, "distributed")) is Unknown
    texts = sorted(os.path.basename(p[len(TEXT_OF):]) for p in used if p.startswith(TEXT_OF))
    assert texts == ["loaders.py", "more.py"]  # two of the three that spell it, sorted by path


def test_the_word_index_finds_the_runs_the_expression_finds():
    """``_words`` (a byte translation for ASCII text) gives the distinct ``\\w+`` runs of
    every text, non-ASCII ones included, each held as ``_key`` looks it up."""
    texts = [
        "def build(ds, *, x1=2):\n    return ds.to('cuda:0')  # a_b\tc\x0bd\x0ce\r\n",
        "x = 'caf\u00e9 na\u00efve'\n\u00e9t\u00e9 = build(\u03b1)  # \u2192 not a word\n",
        "a\u00b7b\u2014c__d 9e \u0130x K\u212a\n",
        "",
    ]
    for text in texts:
        runs = set(re.findall(r"\w+", text))
        held = word_index._words(text)
        assert held == {word_index._key(run) for run in runs}
        assert all(word_index._key(run) in held for run in runs)


def test_a_large_project_finds_a_module_by_a_word_outside_ascii(tmp_path, large):
    """A module that is not ASCII is indexed by the expression: its ASCII and non-ASCII
    words are both found, and an ASCII module's word as well."""
    index = index_of(tmp_path, {**LARGE, "zz.py": "def \u00e9t\u00e9(ds):\n    return build_more(ds)  # \u2192\n"})
    paths = index.module_paths()
    other = os.path.abspath(tmp_path / "zz.py")
    assert index.spelling("\u00e9t\u00e9", paths) == [other]
    assert index.spelling("build_more", paths) == [other]
    assert os.path.abspath(tmp_path / "loaders.py") in index.spelling("build", paths)
