"""TPF205 (issue 23): the terms of a backpropagated loss that a same-module function returns
beside it carry its graph (``batch_loss, loc_loss, cls_loss = loss(...)`` with ``loss`` an
SSD-style criterion, d2l-pytorch's miss); and an accumulator bound in a chained assignment
(``total = count = 0``) is bound before the loop like any other."""

from __future__ import annotations

from pytorch_perflint.rules.training.tpf205_loss_accumulated_with_graph import LossAccumulatedWithGraph as Rule
from pytorch_perflint.testing import lint_example

_SETUP = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
_SSD = (
    "class SSDLoss(nn.Module):\n"
    "    def forward(self, pred, target):\n"
    "        loc_loss = 0.0\n        class_loss = 0.0\n"
    "        for p, t in zip(pred, target):\n"
    "            loc_loss += F.smooth_l1_loss(p, t)\n            class_loss += F.cross_entropy(p, t)\n"
    "        loc_loss = loc_loss / len(target)\n"
    "        loss = class_loss + loc_loss * self.w\n"
    "        return loss, loc_loss, class_loss\n\n\n"
)
_LOOP = (
    "loc_total = 0.0\ncls_total = 0.0\n"
    "for x, y in loader:\n"
    "    batch_loss, batch_loc, batch_cls = {call}\n"
    "    batch_loss.backward()\n    opt.step()\n"
    "    loc_total += batch_loc\n    cls_total += batch_cls\n"
)


def _lines(code: str):
    return [line for line, _ in lint_example(Rule, code)]


def test_terms_of_the_backpropagated_loss_returned_by_a_module_class_forward():
    code = _SETUP + _SSD + "criterion = SSDLoss()\n" + _LOOP.format(call="criterion(model(x), y)")
    first = code.splitlines().index("    loc_total += batch_loc") + 1
    assert _lines(code) == [first, first + 1]


def test_terms_returned_by_a_module_function():
    helper = (
        "def compute(out, y):\n    box = F.l1_loss(out, y)\n    cls = F.cross_entropy(out, y)\n"
        "    total = box + cls\n    return total, box, cls\n\n\n"
    )
    code = _SETUP + helper + _LOOP.format(call="compute(model(x), y)")
    first = code.splitlines().index("    loc_total += batch_loc") + 1
    assert _lines(code) == [first, first + 1]


def test_look_alikes_detached_rebound_or_not_terms_stay_silent():
    helpers = (
        # a detached summary beside the loss (yolov5's `loss_items`)
        "def detached(out, y):\n    box = F.l1_loss(out, y)\n    cls = F.cross_entropy(out, y)\n"
        "    total = box + cls\n    return total, box.detach(), cls.item()\n\n\n"
        # the terms are turned into numbers before the return
        "def numbers(out, y):\n    box = F.l1_loss(out, y)\n    cls = F.cross_entropy(out, y)\n"
        "    total = box + cls\n    box = box.item()\n    cls = float(cls)\n    return total, box, cls\n\n\n"
        # values that are not terms of the backpropagated loss
        "def others(out, y):\n    box = F.l1_loss(out, y)\n    norm = out.norm()\n    acc = (out.argmax(1) == y).sum()\n"
        "    total = box * 2\n    return total, norm, acc\n\n\n"
        # two returns: not known which one ran
        "def branches(out, y):\n    box = F.l1_loss(out, y)\n    cls = F.cross_entropy(out, y)\n"
        "    total = box + cls\n    if y is None:\n        return total, box, box\n    return total, box, cls\n\n\n"
    )
    for name in ("detached", "numbers", "others", "branches", "imported_helper"):
        code = _SETUP + helpers + _LOOP.format(call=f"{name}(model(x), y)")
        assert _lines(code) == [], name


def test_an_accumulator_bound_in_a_chained_assignment():
    code = _SETUP + "total = count = 0\nfor x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    opt.step()\n    total += loss\n"
    assert _lines(code) == [11]
    fresh = code.replace("total = count = 0\nfor x, y in loader:\n", "for x, y in loader:\n    total = count = 0\n")
    assert _lines(fresh) == []


_STEP = "for x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    opt.step()\n"


def test_an_entry_of_a_dict_of_totals():
    code = _SETUP + "totals = {'loss': 0.0, 'n': 0}\n" + _STEP + "    totals['loss'] += loss\n    totals['n'] += 1\n"
    assert _lines(code) == [11]
    # Look-alikes: the entry reset in the loop, a number, an entry not known to be a
    # fresh total, a dict made anew every iteration.
    reset = code.replace("    totals['loss'] += loss\n", "    totals['loss'] = 0.0\n    totals['loss'] += loss\n")
    number = code.replace("totals['loss'] += loss", "totals['loss'] += loss.item()")
    unknown = code.replace("totals = {'loss': 0.0, 'n': 0}", "totals = make_totals()")
    fresh = code.replace("totals = {'loss': 0.0, 'n': 0}\nfor x, y in loader:\n", "for x, y in loader:\n    totals = {'loss': 0.0, 'n': 0}\n")
    for variant in (reset, number, unknown, fresh):
        assert _lines(variant) == [], variant
