"""TPF206 through objects (issue 23, new-rules-5's misses by mechanism): the cache emptied
inside code the loop reaches through an object, on every call: a generator method that
empties at its end, walked by an inner loop once per item of the outer one
(``for wave in self.speaker.speak(seg):``); a pipeline object's ``__call__``
(``depth = pipe(clip)``); a submodule's ``forward`` reached through ``self.model(x)`` in a
training loop. Each case is a small project whose marked lines (``#!``) are the findings;
the look-alikes beside them (a generator walked once, a callee that empties only under a
condition or in a loop of its own, a loop that neither trains nor evaluates) stay silent."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

CASES = {
    "generator-walked-per-item": {
        "voice.py": """
            import torch

            class Speaker:
                def __init__(self, net):
                    self.net = net

                def speak(self, text):
                    with torch.no_grad():
                        wave = self.net(text)
                    yield wave
                    torch.cuda.empty_cache()

                def speak_quietly(self, text, tidy):
                    with torch.no_grad():
                        wave = self.net(text)
                    yield wave
                    if tidy:
                        torch.cuda.empty_cache()
        """,
        "reader.py": """
            import torch
            from voice import Speaker

            class Reader:
                def __init__(self, net):
                    self.speaker = Speaker(net.cuda())

                def read_aloud(self, segments):
                    for seg in segments:
                        for wave in self.speaker.speak(seg):  #!
                            yield wave

                def read_once(self, text):
                    for wave in self.speaker.speak(text):
                        yield wave

                def read_tidily(self, segments, tidy):
                    for seg in segments:
                        for wave in self.speaker.speak_quietly(seg, tidy):
                            yield wave
        """,
    },
    "pipeline-call": {
        "pipeline.py": """
            import torch

            class DepthPipeline:
                def __init__(self, net):
                    self.net = net

                @torch.no_grad()
                def __call__(self, frames):
                    out = self.net(frames)
                    torch.cuda.empty_cache()
                    return out

            class LazyPipeline:
                def __init__(self, net):
                    self.net = net

                @torch.no_grad()
                def __call__(self, frames):
                    out = self.net(frames)
                    if out.numel() > 10 ** 9:
                        torch.cuda.empty_cache()
                    return out
        """,
        "run.py": """
            import torch
            from pipeline import DepthPipeline, LazyPipeline

            pipe = DepthPipeline(build().cuda())
            lazy = LazyPipeline(build().cuda())
            for clip in clips:
                depth = pipe(clip)  #!
                save(depth)
            for clip in clips:
                save(lazy(clip))
            for path in paths:
                write(path)
        """,
    },
    "submodule-forward": {
        "layers.py": """
            import torch
            from torch import nn

            class TidyBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(8, 8)

                def forward(self, x):
                    torch.cuda.empty_cache()
                    return self.lin(x)

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = TidyBlock()

                def forward(self, x):
                    return self.block(x)

            class Stack(nn.Module):
                def __init__(self, depth):
                    super().__init__()
                    self.blocks = nn.ModuleList([TidyBlock() for _ in range(depth)])

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                    return x
        """,
        "trainer.py": """
            import torch
            import torch.nn.functional as F
            from layers import Net, Stack

            class Trainer:
                def __init__(self):
                    self.model = Net().cuda()
                    self.stack = Stack(0).cuda()
                    self.opt = torch.optim.Adam(self.model.parameters())

                def epoch(self, loader):
                    for x, y in loader:
                        out = self.model(x)  #!
                        loss = F.mse_loss(out, y)
                        loss.backward()
                        self.opt.step()

                def epoch_stack(self, loader):
                    for x, y in loader:
                        out = self.stack(x)
                        loss = F.mse_loss(out, y)
                        loss.backward()
                        self.opt.step()
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cache_emptied_behind_an_object(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF206") == _marked(files)
