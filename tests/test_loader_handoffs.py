"""Loaders walked through a context-managed progress bar or handed to a train-loop function
of another module: ``with tqdm(loader) as bar: for x in bar`` walks the loader (a tqdm bar's
``__enter__`` gives the bar), and ``fit(net, loader)`` where ``fit`` walks its parameter in an
epoch loop of its own restarts the loader's workers every epoch and copies its pinned
batches (TPF103, TPF104). Look-alikes: another context manager around the loader, a bar
over an unpinned loader, a walk once, callers that disagree, a name rebound before the
hand-off."""

from __future__ import annotations

from pathlib import Path

from project_tree import write_project
from test_loader_options_flow import _findings

SELECT = '[tool.pytorch-perflint]\nselect = ["TPF103", "TPF104"]\n'

BAR = '''
    import torch
    from torch.utils.data import DataLoader
    from tqdm import tqdm


    def fit(net, samples, opt, device, rounds):
        stream = DataLoader(samples, batch_size=32, num_workers=3, pin_memory=True)
        for r in range(rounds):
            with tqdm(stream, leave=False) as progress:
                for feats, goals in progress:
                    feats = feats.to(device)
                    loss = (net(feats) - goals.to(device)).abs().mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    progress.set_postfix(loss=float(loss))
'''


def test_a_loader_walked_through_a_with_tqdm_bar(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, "fit.py": BAR})
    found = _findings(root)
    assert found.get("TPF103") == {("fit.py", 7)}
    assert found.get("TPF104") == {("fit.py", 11), ("fit.py", 12)}


def test_other_context_managers_and_unpinned_bars_stay_silent(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": SELECT,
        # a project context manager around the loader: what it enters is not known
        "guarded.py": BAR.replace("tqdm(stream, leave=False)", "Timed(stream)").replace(
            "from tqdm import tqdm", "from timing import Timed"
        ),
        "timing.py": '''
            class Timed:
                def __init__(self, it):
                    self.it = it

                def __enter__(self):
                    return [1, 2]

                def __exit__(self, *exc):
                    return False
        ''',
        # a bar over a loader that is not pinned, built once and walked once
        "once.py": BAR.replace(", pin_memory=True", "").replace("for r in range(rounds):", "if rounds:"),
    }
    root = write_project(tmp_path / "p", files)
    assert _findings(root) == {}


FEEDS = '''
    from torch.utils.data import DataLoader


    def build_feeds(folder, size):
        fit_feed = DataLoader(folder, batch_size=size, num_workers=2, shuffle=True, pin_memory=True)
        probe_feed = DataLoader(folder, batch_size=1, num_workers=1, pin_memory=True)
        return fit_feed, probe_feed
'''

RUN = '''
    import torch
    from feeds import build_feeds


    def main(stages):
        device = torch.device("cuda")
        net = torch.nn.Linear(4, 4).to(device)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for size in stages:
            fit_feed, probe_feed = build_feeds("data", size)
            fit_rounds(net, opt, fit_feed, device, 10)
        fit_feed, probe_feed = build_feeds("data", 1)
        probe(net, probe_feed, device)


    def fit_rounds(net, opt, fit_feed, device, rounds):
        for r in range(1, rounds + 1):
            for step, (a, b) in enumerate(fit_feed, 1):
                a, b = a.to(device), b.to(device)
                loss = (net(a) - b).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


    def probe(net, probe_feed, device):
        for a, b in probe_feed:
            net(a.to(device))
'''


def test_loaders_handed_to_a_train_loop_of_another_module(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, "feeds.py": FEEDS, "run.py": RUN})
    found = _findings(root)
    # the fit loader restarts its workers every round; the probe loader is walked once
    assert found.get("TPF103") == {("feeds.py", 5)}
    assert found.get("TPF104") == {("run.py", 19), ("run.py", 28)}


def test_handoffs_that_cannot_be_known_stay_silent(tmp_path: Path) -> None:
    run = RUN.replace(
        "            fit_rounds(net, opt, fit_feed, device, 10)",
        "            fit_feed = wrap(fit_feed)\n            fit_rounds(net, opt, fit_feed, device, 10)",
    ).replace("    def probe(", "    def wrap(x):\n        return x\n\n\n    def probe(")
    other = '''
        from torch.utils.data import DataLoader
        from run import probe


        def check(net, data, device):
            probe(net, DataLoader(data, batch_size=4), device)
    '''
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, "feeds.py": FEEDS, "run.py": run, "other.py": other})
    found = _findings(root)
    # rebound before the hand-off: no TPF103; the probe's callers disagree on pinning
    assert found.get("TPF103") is None
    assert found.get("TPF104") == {("run.py", 20)}  # fit_rounds' own callers still agree


CYCLE = {
    "pyproject.toml": SELECT.replace('"TPF103", ', ""),
    "streams.py": """
        import torch


        def endless(feed):
            while True:
                for batch in feed:
                    yield batch


        def merged(feed):
            for x, y in feed:
                yield torch.cat([x, y])
    """,
    "train.py": """
        import torch
        from torch.utils.data import DataLoader
        from streams import endless, merged


        def train(data, device, steps):
            feed = DataLoader(data, batch_size=8, pin_memory=True)
            for step, (x, y) in zip(range(steps), endless(feed)):
                x = x.to(device)
            for both in merged(feed):
                both = both.to(device)
    """,
}


def test_a_project_generator_yields_the_pinned_batches_it_walks(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", CYCLE)
    assert _findings(root) == {"TPF104": {("train.py", 9)}}
