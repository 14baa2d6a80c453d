"""TPF206: evaluation loops whose model runs on pieces of each item, and methods called
through a local name. A loop over videos that runs the encoder on chunks of the current
video in a nested loop (``for b in range(0, clip.shape[1], 4)``, or over ``parts =
torch.split(clip, 8)``) evaluates a model on every item, so an ``empty_cache()`` in its body
(or a project helper that empties it, reported at the call) runs per item. So does a
validation loop that calls ``run()`` where ``run = self.plain_test`` or ``partial(
self.padded_test, 8)``, both no-grad forwards of the class (``facts/training/item_pieces``).

Look-alikes stay silent: a loop over loaders that evaluates a whole set per iteration, a
repeat loop over ``range(...)``, a nested loop over a list of models, a local name also
bound to something else, and an ``empty_cache()`` once after the loop. A network's part
called by itself (``backbone.image_encoder(x)``) runs a model, as the loop over the images of
one batch shows."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "memory.py": """
        import gc
        import torch

        def free_gpu():
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    """,
    "clips.py": """
        import torch
        from tqdm import tqdm
        from memory import free_gpu

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def embed_videos(loader, model):
            model.eval()
            out = []
            for idx, (clip, label) in enumerate(loader):
                clip = clip.to(device)
                with torch.no_grad():
                    feats = []
                    for b in range(0, clip.shape[1], 4):
                        feats.append(model.encoder(clip[:, b:b + 4]))
                    out.append(torch.cat(feats).cpu())
                    torch.cuda.empty_cache()  #!
            return out

        @torch.no_grad()
        def embed_split(loader, model, step):
            for batch in loader:
                frames = batch[0].to(device)[0]
                parts = torch.split(frames, step, dim=0)
                kept = []
                for part in tqdm(parts, leave=False):
                    kept.append(model.encode_image(part).cpu())
                torch.save(torch.cat(kept), "x.pt")
                free_gpu()  #!

        @torch.no_grad()
        def per_dataset(loaders, model):
            scores = {}
            for name, loader in loaders.items():
                for x in loader:
                    scores[name] = model(x.to(device))
                torch.cuda.empty_cache()
            return scores

        @torch.no_grad()
        def repeats(data, model, times):
            for i in range(times):
                for b in range(0, data.shape[0], 4):
                    model(data[b:b + 4].to(device))
                torch.cuda.empty_cache()

        @torch.no_grad()
        def ensemble(batches, models):
            for x in batches:
                for m in models:
                    m(x.to(device))
                torch.cuda.empty_cache()

        def images_of(batch, backbone):
            with torch.no_grad():
                embs = []
                for i in range(batch.shape[0]):
                    torch.cuda.empty_cache()  #!
                    embs.append(backbone.image_encoder(batch[i:i + 1].to(device)))
            return torch.cat(embs)

        @torch.no_grad()
        def embed_once(loader, model):
            out = []
            for clip, label in loader:
                feats = []
                for b in range(0, clip.shape[1], 4):
                    feats.append(model.encoder(clip[:, b:b + 4].to(device)))
                out.append(feats)
            torch.cuda.empty_cache()
            return out
    """,
    "restorer.py": """
        from functools import partial
        import torch

        class Restorer:
            def __init__(self, net_g):
                self.net_g = net_g.cuda()

            def plain_test(self, img=None):
                self.net_g.eval()
                with torch.no_grad():
                    self.output = self.net_g(self.lq if img is None else img)

            def padded_test(self, size):
                img = torch.nn.functional.pad(self.lq, (0, size, 0, size))
                self.plain_test(img)

            def validation(self, loader, size):
                run = partial(self.padded_test, size) if size else self.plain_test
                for data in loader:
                    self.lq = data["lq"].cuda()
                    run()
                    del self.lq
                    torch.cuda.empty_cache()  #!

            def validation_mixed(self, loader, other):
                run = self.plain_test
                if other is not None:
                    run = other
                for data in loader:
                    self.lq = data["lq"].cuda()
                    run()
                    torch.cuda.empty_cache()
    """,
}


def test_pieces_of_an_item_and_method_aliases_make_evaluation_loops(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF206") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
