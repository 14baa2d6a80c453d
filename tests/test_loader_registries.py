"""Loaders built by a class picked from a project dict registry (``FEEDS[cfg.feed](cfg)``, or
the class bound first and called after): each registered class is one candidate, and the
batches are pinned when every candidate's loader is (TPF104). Look-alike: a registry with one
class whose loader is not pinned stays silent. The classes of a registry are constructed by
the calls of its items (``registry_callers``): their parameters are those calls' arguments,
unless the registry is used any other way."""

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


COACHES = '''
    import torch


    class Coach:
        def __init__(self, net, feed, device):
            self.net = net
            self.loader = feed
            self.device = device

        def epoch(self):
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device){mark}
                self.net(x).sum().backward()


    class FastCoach(Coach):
        def __init__(self, net, feed, device):
            super().__init__(net, feed, device)
            self.fast = True


    class SlowCoach(Coach):
        pass


    COACHES = {"fast": FastCoach, "slow": SlowCoach}


    def make_coach(kind, net, feed, device):
        coach = COACHES[kind]
        return coach(net, feed, device)
'''

RUN = '''
    import torch
    from torch.utils.data import DataLoader

    from coaches import COACHES, make_coach


    def main(kind, net, data):
        feed = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
        print(sorted(COACHES.keys()))
        make_coach(kind, net, feed, torch.device("cuda")).epoch()
        {extra}
'''


def _coaches(tmp_path, name, extra, flagged):
    files = {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n',
        "coaches.py": COACHES.replace("{mark}", ""),
        "run.py": RUN.replace("{extra}", extra),
    }
    root = write_project(tmp_path / name, files)
    found = _findings(root).get("TPF104", set())
    assert found == ({("coaches.py", 12)} if flagged else set()), (extra, found)


def test_the_callers_of_classes_in_a_registry_are_the_calls_of_its_items(tmp_path):
    _coaches(tmp_path, "plain", "", True)
    # direct calls of an item are callers too
    _coaches(tmp_path, "direct", "COACHES['slow'](net, feed, torch.device('cuda')).epoch()", True)


def test_a_registry_used_otherwise_leaves_the_callers_unknown(tmp_path):
    _coaches(tmp_path, "get", "COACHES.get(kind)(net, [], 'cpu').epoch()", False)
    _coaches(tmp_path, "items", "classes = list(COACHES.values())", False)
    # an item called with another (unpinned) loader: the callers disagree
    _coaches(tmp_path, "other", "COACHES['fast'](net, DataLoader(data), 'cuda').epoch()", False)


def test_a_registry_imported_under_another_name_leaves_the_callers_unknown(tmp_path):
    files = {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n',
        "coaches.py": COACHES.replace("{mark}", ""),
        "run.py": RUN.replace("{extra}", ""),
        "other.py": "from coaches import COACHES as TABLE\n\n\ndef again(net):\n    return TABLE['fast'](net, [], 'cpu')\n",
    }
    root = write_project(tmp_path / "alias", files)
    assert "TPF104" not in _findings(root)
