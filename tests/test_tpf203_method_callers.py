"""TPF203: a method of a project ``nn.Module`` whose loop runs the class's own layers is an
evaluation loop when every project call of it is on an object its caller put in eval mode,
directly or through a parameter of a module-level caller (Show-Attend's beam search:
``decoder.eval()``, then ``generate_caption_visualization(encoder, decoder, ...)`` calling
``decoder.caption(...)``). The look-alikes: a receiver in train mode, a call under
``no_grad``, a call on ``self`` (from ``forward``), a method that escapes as a value."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_DECODER = """
    import torch
    import torch.nn as nn

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(10, 4)
            self.lstm = nn.LSTMCell(4, 4)

        def forward(self, words):
            return self.greedy(words)

        def caption(self, words, beam_size):
            h = None
            step = 0
            while True:{mark}
                emb = self.embedding(words)
                h = self.lstm(emb)
                step += 1
                if step > 50:
                    break
            return h

        def rollout(self, words):
            out = []
            for _ in range(5):
                out.append(self.lstm(self.embedding(words)))
            return out

        def greedy(self, words):
            for _ in range(5):
                words = self.lstm(self.embedding(words))
            return words

        def beam(self, words):
            for _ in range(5):
                words = self.lstm(self.embedding(words))
            return words
"""

EVALUATED = {
    "decoder.py": _DECODER.replace("{mark}", "  #!"),
    "generate.py": """
        import torch
        from decoder import Decoder

        def visualize(encoder, decoder, img):
            feats = encoder(img)
            return decoder.caption(feats, 3)

        if __name__ == "__main__":
            encoder = torch.nn.Identity()
            decoder = Decoder().cuda()
            encoder.eval()
            decoder.eval()
            visualize(encoder, decoder, torch.zeros(3))
    """,
}

LOOKALIKES = {
    "decoder.py": _DECODER.replace("{mark}", ""),
    "generate.py": """
        import torch
        from decoder import Decoder

        def visualize(decoder, img):
            return decoder.caption(img, 3)

        def collect(decoder, img):
            decoder.train()
            samples = decoder.rollout(img)
            with torch.no_grad():
                return decoder.caption(img, 3)

        if __name__ == "__main__":
            decoder = Decoder().cuda()
            visualize(decoder, torch.zeros(3))
            decoder.eval()
            decoder.beam(torch.zeros(3))  # in eval mode, but `beam` also escapes below
            step = decoder.beam
            step(torch.zeros(3))
            decoder(torch.zeros(3))
    """,
}


def test_a_modules_own_loop_is_evaluation_when_its_callers_put_it_in_eval_mode(tmp_path: Path):
    assert _findings(tmp_path, EVALUATED, "TPF203") == _marked(EVALUATED)


def test_train_mode_no_grad_self_calls_and_escaping_methods_stay_silent(tmp_path: Path):
    assert _findings(tmp_path, LOOKALIKES, "TPF203") == []


def _large(files):
    """The same project among 420 filler modules: past the 400 modules in which the value
    engine reads parameters from callers, the method shape is still asked (its screen
    counts the calls in the texts first, so a large project pays for it only where a module
    spells the method)."""
    fillers = {f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(420)}
    return {**files, "pkg/__init__.py": "", **fillers}


def test_the_method_shape_holds_in_a_project_of_any_size(tmp_path: Path):
    assert _findings(tmp_path / "big", _large(EVALUATED), "TPF203") == _marked(EVALUATED)
    assert _findings(tmp_path / "quiet", _large(LOOKALIKES), "TPF203") == []
