"""TPF206's evaluation loops include inference loops (issue 23, the lead's reading of
RULES.md's "training or evaluation loop"): a loop that runs a model forward on each item
(batches, frames, chunks, slices) with autograd off, also when the model runs behind project
code of another module one or two calls down (``project/forward_calls.py``) or behind a
method of a project object that holds the model (a tracker's ``track(frame)``), and a call in
a nested loop that runs no model inside such a loop. Each case is a small project whose
marked lines (``#!``) are the findings; the look-alikes beside them stay silent: a loop that
builds a model every iteration (a benchmark over models), a helper that loops over the data
itself (a loop over checkpoints), a loop that runs no model, a no-grad method of an object
without a model, every-N and out-of-memory guards."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

CASES = {
    # Bert-VITS2: the loop over text slices calls `infer()` of another module, which runs
    # the model (`net_g.infer`) under no-grad; a helper that runs no model stays silent.
    "helper-of-another-module": {
        "infer.py": """
            import torch

            def infer(text, net_g, device):
                with torch.no_grad():
                    x = encode(text).to(device)
                    return net_g.infer(x)[0].cpu().numpy()

            def clean(text):
                return text.strip()
        """,
        "webui.py": """
            import torch
            from infer import infer, clean

            device = torch.device("cuda")

            def generate(slices, net_g):
                audio = []
                for piece in slices:
                    audio.append(infer(piece, net_g, device))
                    torch.cuda.empty_cache()  #!
                for piece in slices:
                    audio.append(clean(piece))
                    torch.cuda.empty_cache()
                for i, piece in enumerate(slices):
                    audio.append(infer(piece, net_g, device))
                    if i % 10 == 0:
                        torch.cuda.empty_cache()
                return audio
        """,
    },
    # Segment-and-Track: the per-frame loop calls a method of a tracker object, whose
    # no-grad `track` runs the model it put in eval mode deeper than the engine follows.
    # A no-grad method of an object that holds no model is no forward.
    "tracker-object": {
        "tracker.py": """
            import torch

            class Engine:
                def step(self, frame):
                    return frame

            class Tracker:
                def __init__(self, model):
                    self.model = model.cuda()
                    self.model.eval()
                    self.engine = Engine()

                @torch.no_grad()
                def track(self, frame):
                    return self.engine.step(frame)

            class Tracks:
                def __init__(self):
                    self.engine = Engine()

                @torch.no_grad()
                def track(self, frame):
                    return self.engine.step(frame)

            class Segmenter:
                def __init__(self, model):
                    self.tracker = Tracker(model)

                def track(self, frame):
                    mask = self.tracker.track(frame)
                    return mask.cpu().numpy()
        """,
        "demo.py": """
            import torch
            from tracker import Segmenter, Tracks

            segmenter = Segmenter(build())
            tracks = Tracks()
            with torch.cuda.amp.autocast():
                while cap.isOpened():
                    ok, frame = cap.read()
                    mask = segmenter.track(frame)
                    torch.cuda.empty_cache()  #!
                while cap.isOpened():
                    ok, frame = cap.read()
                    mask = tracks.track(frame)
                    torch.cuda.empty_cache()
        """,
    },
    # DIS: a validation loop over batches of a model put in eval mode, with the cache
    # emptied inside the per-image loop of each batch (no model there); a loop that builds
    # a model every iteration (LeViT's speed test), a loop over checkpoints whose
    # evaluation loops over the data itself, and a retry loop around a whole validation
    # (poolformer's bulk validation: the helper's warm-up forward is outside its data
    # loop) stay silent.
    "nested-and-look-alikes": {
        "bench.py": """
            import torch

            def throughput(model, inputs):
                with torch.no_grad():
                    return model(inputs)

            @torch.no_grad()
            def evaluate_all(model, loader):
                for x in loader:
                    model(x.cuda())

            def validate(args):
                model = create_model(args.model).cuda().eval()
                with torch.no_grad():
                    model(torch.randn(1, 3, 224, 224).cuda())  # warm-up
                    for x in make_loader(args):
                        model(x.cuda())
                return {"top1": 0.0}
        """,
        "valid.py": """
            import torch
            from bench import throughput, evaluate_all, validate

            def valid(net, loader, n):
                net.eval()
                for x, y in loader:
                    out = net(x.cuda())
                    for t in range(n):
                        save(out[t])
                        torch.cuda.empty_cache()  #!

            def speed(names, inputs):
                for name in names:
                    model = eval(name)(num_classes=1000)
                    model.cuda().eval()
                    throughput(model, inputs)
                    torch.cuda.empty_cache()

            def sweep(model, paths, loader):
                for path in paths:
                    model.load_state_dict(torch.load(path))
                    evaluate_all(model, loader)
                    torch.cuda.empty_cache()

            def bulk(args, batch_size):
                r = {}
                while not r and batch_size >= 1:
                    torch.cuda.empty_cache()
                    try:
                        args.batch_size = batch_size
                        r = validate(args)
                    except RuntimeError:
                        batch_size //= 2
                return r

            def features(net, loader):
                for x in loader:
                    try:
                        with torch.no_grad():
                            throughput(net, x.cuda())
                    except torch.cuda.OutOfMemoryError:
                        torch.cuda.empty_cache()
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_inference_loop_empties_the_cache(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF206") == _marked(files)
