"""Loaders built by a class picked from a project dict registry (``FEEDS[cfg.feed](cfg)``, or
the class bound first and called after): each registered class is one candidate, and the
batches are pinned when every candidate's loader is (TPF104). Look-alike: a registry with one
class whose loader is not pinned stays silent."""

from __future__ import annotations

from test_loader_options_flow import _findings

from project_tree import write_project

FEEDS = '''
    from torch.utils.data import DataLoader


    class ImageFeed:
        def __init__(self, cfg, data):
            self.data = data

        @classmethod
        def key(cls):
            return "image"

        def loaders(self):
            train = DataLoader(self.data, batch_size=4, num_workers=2, pin_memory=True)
            return train, DataLoader(self.data, batch_size=4, num_workers=2, pin_memory=True)


    class TextFeed(ImageFeed):
        @classmethod
        def key(cls):
            return "text"


    class SlowFeed(ImageFeed):
        def loaders(self):
            train = DataLoader(self.data, batch_size=4, num_workers=2)
            return train, train


    FEEDS = {ImageFeed.key(): ImageFeed, TextFeed.key(): TextFeed}
    MIXED = {"image": ImageFeed, "slow": SlowFeed}
'''

SCRIPT = '''
    import torch

    from feeds import FEEDS, MIXED


    def run(cfg, data, net):
        device = torch.device("cuda")
        train, valid = FEEDS[cfg.feed](cfg, data).loaders()
        for x in train:
            net(x.to(device))
        chosen = FEEDS[cfg.other]
        chosen = chosen(cfg, data)
        first, second = chosen.loaders()
        for x in second:
            net(x.cuda())
        mixed, _ = MIXED[cfg.feed](cfg, data).loaders()
        for x in mixed:
            net(x.to(device))
'''


def test_loaders_from_a_registry_of_classes(tmp_path):
    files = {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n',
        "feeds.py": FEEDS,
        "train.py": SCRIPT,
    }
    root = write_project(tmp_path / "p", files)
    assert _findings(root).get("TPF104") == {("train.py", 10), ("train.py", 15)}
