"""TPF105 in a trainer class with several samplers (new-rules-4's RobustVideoMatting): a
helper's ``self.other.set_epoch(...)`` sets another sampler's epoch when ``.other`` is only
ever assigned a new ``DistributedSampler`` of its own; it does not cover the sampler the
epoch loop walks. Look-alikes: the helper sets this sampler (directly or through an alias
attribute), and an attribute assigned anywhere else may be this sampler."""

from __future__ import annotations

from test_loader_walks import _check

TRAINER = '''
    from torch.utils.data import DataLoader, DistributedSampler


    class Trainer:
        def init_datasets(self, lr, hr):
            self.sampler_lr = DistributedSampler(lr, shuffle=True){lr_mark}
            self.loader_lr = DataLoader(lr, batch_size=4, sampler=self.sampler_lr)
            self.sampler_hr = {hr_value}
            self.loader_hr = DataLoader(hr, batch_size=4, sampler=self.sampler_hr)
            {extra}

        def train(self):
            for epoch in range(10):
                for batch in self.loader_lr:
                    self.step(batch)
                    hr = self.next_hr()

        def step(self, batch):
            batch.sum().backward()

        def next_hr(self):
            try:
                return next(self.iterator_hr)
            except StopIteration:
                self.sampler_hr.set_epoch(self.sampler_hr.epoch + 1)
                self.iterator_hr = iter(self.loader_hr)
                return next(self.iterator_hr)
'''


def _trainer(lr_mark: str = "", hr_value: str = "DistributedSampler(hr)", extra: str = "pass") -> str:
    return TRAINER.format(lr_mark=lr_mark, hr_value=hr_value, extra=extra)


def test_a_helper_setting_another_samplers_epoch_does_not_cover_this_one(tmp_path):
    files = {
        "train.py": _trainer(lr_mark="  # flagged"),
        # the helper's attribute is the walked sampler itself
        "alias.py": _trainer(hr_value="self.sampler_lr"),
        # assigned elsewhere too: it may be the walked sampler
        "elsewhere.py": _trainer(extra="self.sampler_hr = self.sampler_lr"),
        "outside.py": _trainer() + "\ntrainer = Trainer()\ntrainer.sampler_hr = trainer.sampler_lr\n",
        # another kind of object: who knows what its set_epoch does
        "other.py": _trainer(hr_value="make_sampler(hr)"),
    }
    _check(tmp_path, "TPF105", files)
