"""TPF203: ``opt`` bound to ``parser.parse_args()`` is the command-line options, not an
optimizer: reading ``opt.class_choice`` after (or in) an evaluation loop is no sign that
the loop needs gradients (pointnet's ``train_segmentation.py`` mIOU loop). The value
engine says which ``opt`` is which; an ``opt`` it knows nothing of, or one bound to a
``torch.optim`` optimizer, keeps the loop quiet as before."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_HEAD = """
    import argparse
    import torch
    from model import Net

    parser = argparse.ArgumentParser()
    parser.add_argument("--class_choice", default="Chair")
    parser.add_argument("--batchSize", type=int, default=32)
"""
_MODEL = {"model.py": "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"}

OPTIONS = {
    **_MODEL,
    "segment.py": _HEAD + """
    opt = parser.parse_args()
    classifier = Net().cuda()
    shape_ious = []
    for i, data in enumerate(testdataloader, 0):  #!
        points, target = data
        classifier = classifier.eval()
        pred = classifier(points.cuda())
        shape_ious.append(pred.mean().item() * opt.batchSize)
    print("mIOU for class {}: {}".format(opt.class_choice, sum(shape_ious)))
    """,
}

LOOKALIKES = {
    **_MODEL,
    # `opt` is an optimizer: what follows the loop may train through what it collected.
    "optimizer.py": _HEAD + """
    classifier = Net().cuda()
    opt = torch.optim.SGD(classifier.parameters(), lr=0.1)
    outputs = []
    for data in testdataloader:
        classifier = classifier.eval()
        outputs.append(classifier(data.cuda()))
    opt.step()
    """,
    # `opt` is a parameter nobody in the project passes: not known.
    "unknown.py": _HEAD + """
    def run(opt, classifier, loader):
        classifier.eval()
        for data in loader:
            pred = classifier(data.cuda())
        print(opt.class_choice)
    """,
}


def test_options_named_opt_are_not_an_optimizer(tmp_path: Path):
    assert _findings(tmp_path, OPTIONS, "TPF203") == _marked(OPTIONS)


def test_an_optimizer_or_an_unknown_opt_still_keeps_the_loop_quiet(tmp_path: Path):
    assert _findings(tmp_path, LOOKALIKES, "TPF203") == []
