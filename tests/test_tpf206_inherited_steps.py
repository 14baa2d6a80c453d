"""TPF206 in a training step whose loop is inherited (issue 23, new-rules-7's misses by
mechanism): a trainer subclass's step method (``_fit_batch``) empties the cache on every
call and backpropagates; a project base class calls ``self._fit_batch(batch)`` on every
batch of its epoch loop. The call in the base dispatches to every override (most do not
empty), so the finding is the ``empty_cache()`` in the override. Look-alikes stay silent:
the cache emptied under a condition or after an early ``return``, a step that does not
backpropagate (no training step), a method that loops over the data itself (a whole
epoch per call), a step whose base calls it only under a condition, and a class with no
project base that loops."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

BASE = """
    import torch

    DEVICE = torch.device("cuda")

    class LoopOwner:
        def __init__(self, loader, accelerator):
            self.loader = loader
            self.accelerator = accelerator

        def _fit_batch(self, batch):
            raise NotImplementedError

        def _rare_step(self, batch):
            raise NotImplementedError

        def fit_epoch(self):
            for i, batch in enumerate(self.loader):
                with self.accelerator.accumulate(self.model):
                    loss = self._fit_batch(batch)
                if i % 1000 == 0:
                    self._rare_step(batch)
            return loss
"""

CASES = {
    "override-of-an-inherited-step": {
        "base.py": BASE,
        "voice.py": """
            import torch
            from base import LoopOwner

            class VoiceTrainer(LoopOwner):
                def _fit_batch(self, batch):
                    feats = self.encoder(batch["wav"])
                    torch.cuda.empty_cache()  #!
                    loss = self.model(feats).mean()
                    self.accelerator.backward(loss)
                    self.optimizer.step()
                    for part in ("wav", "mel"):
                        self.log(part, batch[part])
                    return loss

                def _rare_step(self, batch):
                    torch.cuda.empty_cache()
                    loss = self.model(batch).mean()
                    loss.backward()
                    return loss

            class QuietTrainer(LoopOwner):
                def _fit_batch(self, batch):
                    if batch["big"]:
                        torch.cuda.empty_cache()
                    loss = self.model(batch).mean()
                    loss.backward()
                    return loss

            class EarlyTrainer(LoopOwner):
                def _fit_batch(self, batch):
                    if batch is None:
                        return None
                    torch.cuda.empty_cache()
                    loss = self.model(batch).mean()
                    loss.backward()
                    return loss

            class ScoringTrainer(LoopOwner):
                def _fit_batch(self, batch):
                    torch.cuda.empty_cache()
                    with torch.no_grad():
                        return self.model(batch)

            class EpochTrainer(LoopOwner):
                def _fit_batch(self, batch):
                    torch.cuda.empty_cache()
                    for part in batch:
                        self.model(part).mean().backward()

            class Alone:
                def _fit_batch(self, batch):
                    torch.cuda.empty_cache()
                    loss = self.model(batch).mean()
                    loss.backward()
                    return loss
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cache_emptied_in_a_step_of_an_inherited_loop(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF206") == _marked(files)
