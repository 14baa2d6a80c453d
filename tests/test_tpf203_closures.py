"""TPF203: a forward reached through a closure the evaluating function defines. After
``classifier.eval()``, ``def probabilities(b): return squash(classifier(b))`` or ``rank =
lambda b: classifier(b).argmax(1)``, a loop calling them runs the model in eval mode
with autograd on. Look-alikes: a closure that runs backward (a tuning step), one that
runs the model inside its own ``torch.no_grad()`` or is decorated with it, a closure
over a model this function never put in eval mode, one bound twice, and the same loop
inside ``torch.no_grad()``."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "scoring.py": """
        import torch
        from torch import nn


        def score_images(images, classifier):
            classifier.eval()
            squash = nn.Softmax(dim=1)

            def probabilities(batch):
                return squash(classifier(batch))

            rank = lambda batch: classifier(batch).argmax(1)
            found = []
            for batch in images:  #!
                found.append(probabilities(batch))
            for batch in images:  #!
                found.append(rank(batch))
            with torch.no_grad():
                for batch in images:
                    found.append(rank(batch))
            return found


        def guarded_images(images, classifier):
            classifier.eval()

            def probabilities(batch):
                with torch.no_grad():
                    out = classifier(batch)
                return out.softmax(1)

            @torch.no_grad()
            def rank(batch):
                return classifier(batch).argmax(1)

            found = []
            for batch in images:
                found.append(probabilities(batch))
            for batch in images:
                found.append(rank(batch))
            return found


        def tune_images(images, classifier, opt):
            classifier.eval()

            def step(batch):
                loss = classifier(batch).sum()
                loss.backward()
                return loss

            for batch in images:
                step(batch)


        def other_images(images, classifier, helper):
            helper.eval()
            apply = lambda batch: classifier(batch)
            found = []
            for batch in images:
                found.append(apply(batch))
            return found


        def twice_images(images, classifier, fallback):
            classifier.eval()
            run = lambda batch: classifier(batch)
            if fallback is not None:
                run = lambda batch: fallback(batch)
            found = []
            for batch in images:
                found.append(run(batch))
            return found
    """,
}


def test_a_closure_over_an_evaluated_model_makes_the_loop_evaluation(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF203") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
