"""TPF203: a method that loops over its class's own layers is evaluation when every caller
first calls another method of the same object that puts those layers in eval mode and
trains nothing (``art.restore(path)`` running ``self.gen.eval()``, then ``art.sweep(4)``),
also on an object that is no ``nn.Module`` (a GAN holding its generator and critic), and
for a layer that is a project ``nn.Module`` class (``self.dec = Decoder(width)``), which
a method that runs ``self.eval()`` first calls in eval mode.
Look-alikes: a ``restore`` that also trains (a backward and a step), one that puts another
layer in eval mode than the loop calls, a caller that never calls it, and a project object
that is no ``nn.Module`` (a ``Brush`` with an ``eval()`` of its own)."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "painter.py": """
        import torch
        from torch import nn


        class Painter:
            def __init__(self, width):
                self.gen = nn.Sequential(nn.Linear(width, width), nn.Tanh())
                self.critic = nn.Linear(width, 1)
                self.opt = torch.optim.Adam(self.gen.parameters())

            def fit(self, batches):
                self.gen.train()
                for noise in batches:
                    self.opt.zero_grad()
                    self.critic(self.gen(noise)).mean().backward()
                    self.opt.step()

            def restore(self, path):
                self.gen.load_state_dict(torch.load(path))
                self.gen.eval()
                self.critic.eval()

            def sweep(self, count):
                frames = []
                for step in range(count):  #!
                    frames.append(self.gen(torch.randn(1, 8)))
                return frames


        class Sketcher:
            def __init__(self, width):
                self.gen = nn.Linear(width, width)
                self.opt = torch.optim.SGD(self.gen.parameters(), lr=0.1)

            def restore(self, path):
                self.gen.eval()
                loss = self.gen(torch.randn(1, 8)).sum()
                loss.backward()
                self.opt.step()

            def outline(self, count):
                frames = []
                for step in range(count):
                    frames.append(self.gen(torch.randn(1, 8)))
                return frames


        class Decoder(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.body = nn.Linear(width, width)

            def forward(self, x):
                return self.body(x)


        class Brush:
            def eval(self):
                self.wet = False

            def __call__(self, x):
                return x


        class Studio:
            def __init__(self, width):
                self.dec = Decoder(width)
                self.brush = Brush()

            def load(self, path):
                self.dec.load_state_dict(torch.load(path))
                self.dec.eval()
                self.brush.eval()

            def render(self, count):
                frames = []
                for step in range(count):  #!
                    frames.append(self.dec(torch.randn(1, 8)))
                return frames

            def stroke(self, count):
                frames = []
                for step in range(count):
                    frames.append(self.brush(torch.randn(1, 8)))
                return frames


        class Speaker(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.dec = Decoder(width)

            def speak(self, count):
                self.eval()
                frames = []
                for step in range(count):  #!
                    frames.append(self.dec(torch.randn(1, 8)))
                return frames


        class Inker:
            def __init__(self, width):
                self.gen = nn.Linear(width, width)
                self.critic = nn.Linear(width, 1)

            def freeze_critic(self):
                self.critic.eval()

            def trace(self, count):
                frames = []
                for step in range(count):
                    frames.append(self.gen(torch.randn(1, 8)))
                return frames

            def shade(self, count):
                frames = []
                for step in range(count):
                    frames.append(self.gen(torch.randn(1, 8)))
                return frames
    """,
    "main.py": """
        from painter import Inker, Painter, Sketcher, Studio


        def demo(path):
            art = Painter(8)
            art.restore(path)
            for i in range(3):
                art.sweep(4)


        def demo_sketch(path):
            art = Sketcher(8)
            art.restore(path)
            art.outline(4)


        def demo_ink():
            art = Inker(8)
            art.freeze_critic()
            art.trace(4)
            fresh = Inker(8)
            fresh.shade(4)


        def demo_studio(path):
            room = Studio(8)
            room.load(path)
            room.render(2)
            room.stroke(2)


        if __name__ == "__main__":
            demo("gen.pt")
            demo_sketch("gen.pt")
            demo_ink()
    """,
}


def test_a_sibling_method_that_sets_eval_mode_counts_as_eval(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF203") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
