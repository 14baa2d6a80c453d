"""TPF105 through a sampler name rebound to the batch sampler that wraps it (new-rules-5/6's
distillers): ``sampler = DistributedSampler(ds)`` on one branch, then ``sampler =
BatchSampler(sampler=sampler, ...)`` (or a project subclass of it, on another branch), and
the loader takes ``batch_sampler=sampler``. The loader batches the distributed sampler, so
an epoch loop that never sets its epoch is a finding, and its message names the sampler the
loader holds (``loader.batch_sampler.sampler``), not the rebound name. Look-alikes: the
epoch loop sets it, the sampler does not shuffle, and a wrapper that wraps another name.

The same distillers walk the loader through a progress bar they advance by hand
(``bar = tqdm(loader)``; ``bar.update()``): the bar's ``update`` moves its counter, not the
loader it walks (it is no dict's ``update``)."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

GROUPING = """
    from torch.utils.data import BatchSampler

    class BySize(BatchSampler):
        def __init__(self, sampler, sizes, batch_size):
            super().__init__(sampler, batch_size, drop_last=False)
            self.sizes = sizes
"""

TUTOR = '''
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler
    from torch.utils.data.distributed import DistributedSampler
    from tqdm import tqdm

    from grouping import BySize


    class Tutor:
        def __init__(self, opts, corpus, pupil):
            self.opts = opts
            self.pupil = pupil
            if opts.ranks <= 1:
                sampler = RandomSampler(corpus)
            else:
                sampler = DistributedSampler(corpus{knob}){mark}
            if opts.by_size:
                sampler = BySize(sampler=sampler, sizes=corpus.sizes, batch_size=opts.bs)
            else:
                sampler = BatchSampler(sampler={wrapped}, batch_size=opts.bs, drop_last=False)
            self.batches = DataLoader(dataset=corpus, batch_sampler=sampler)
            self.optim = torch.optim.AdamW(pupil.parameters())

        def fit(self):
            for _ in range(self.opts.epochs):
                {setter}
                bar = tqdm(self.batches, desc="step")
                for batch in bar:
                    self.pupil(batch).mean().backward()
                    self.optim.step()
                    {advance}
'''


def _tutor(knob: str = "", setter: str = "pass", wrapped: str = "sampler", mark: str = "", advance: str = "pass") -> dict:
    text = TUTOR.format(knob=knob, setter=setter, wrapped=wrapped, mark=mark, advance=advance)
    return {"grouping.py": GROUPING, "tutor.py": text}


def test_a_sampler_rebound_to_its_batch_sampler_is_followed(tmp_path):
    files = _tutor(mark="  #!")
    assert _marked(files) == [("tutor.py", 16)]
    assert _findings(tmp_path, files, "TPF105") == _marked(files)


def test_the_message_names_the_sampler_the_loader_holds(tmp_path):
    from pytorch_perflint import runner
    from pytorch_perflint.config import load_settings
    from project_tree import write_project

    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF105"]\n', **_tutor()})
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    messages = [d.message for r in results for d in r.diagnostics if d.code == "TPF105"]
    assert len(messages) == 1 and "`loader.batch_sampler.sampler.set_epoch(epoch)`" in messages[0]


def test_look_alikes_of_the_rebound_sampler_stay_silent(tmp_path):
    for n, files in enumerate(
        (
            _tutor(setter="self.batches.batch_sampler.sampler.set_epoch(_)"),  # set every epoch
            _tutor(knob=", shuffle=False"),  # nothing to reshuffle
            _tutor(wrapped="RandomSampler(corpus)"),  # one branch wraps another sampler
        )
    ):
        assert _findings(tmp_path / str(n), files, "TPF105") == []


def test_a_progress_bar_advanced_by_hand_still_walks_the_loader(tmp_path):
    files = _tutor(mark="  #!", advance='bar.update(); bar.set_postfix({"loss": 0.0})')
    assert _findings(tmp_path / "bar", files, "TPF105") == _marked(files)
    files = _tutor(advance="bar.update()", setter="self.batches.batch_sampler.sampler.set_epoch(_)")
    assert _findings(tmp_path / "set", files, "TPF105") == []
