"""TPF206: a model handed to a call together with the loop's item runs there, and a helper
runs a model it put in eval mode through a method of it.

``pred = sliding_window_inference(image, roi, 1, model)`` in a validation loop (a library
call handed the model and the current image), ``out = tiled(image, model)`` (a project
function that calls the parameter receiving it) and a basicsr-style ``self.test()`` whose
body runs ``net_g.test(lq)`` after ``self.net_g.eval()`` and ``net_g =
self.get_bare_model(self.net_g)`` all evaluate a model per item, so ``empty_cache()`` in
those loops is reported (``facts/training/handed_models.py``, ``forward_helpers``).

Look-alikes stay silent: the model handed to a function that only saves it, or to a
library call named for something else (``save_model``, ``deepcopy``); a library call handed
a whole loader per iteration (a loop over datasets); a project helper that loops over the
data it is handed; a callable the project cannot resolve; an empty once per epoch or every
N items; a per-request handler with no loop; a helper that puts the model in eval mode only
to load weights into it."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "tiles.py": """
        import torch

        def tiled(x, fn, size=96):
            outs = [fn(x[..., :size]), fn(x[..., size:])]
            return torch.cat(outs, -1)

        def keep(net, x, path):
            torch.save({"net": net.state_dict(), "x": x}, path)

        def evaluate(net, loader):
            for x in loader:
                net(x)
    """,
    "validate.py": """
        import copy
        import torch
        from monai.inferers import sliding_window_inference
        from somelib.metrics import accuracy
        from somelib.io import save_model
        from tiles import tiled, keep, evaluate

        def validation(model, loader, args):
            model.eval()
            for index, batch in enumerate(loader):
                image, label = batch["image"].cuda(), batch["label"]
                with torch.no_grad():
                    pred = sliding_window_inference(image, (96, 96, 96), 1, model, overlap=0.5)
                torch.cuda.empty_cache()  #!
                score(pred, label)
                torch.cuda.empty_cache()  #!

        @torch.no_grad()
        def by_project(net, loader):
            net.eval()
            for batch in loader:
                out = tiled(batch.cuda(), net)
                torch.cuda.empty_cache()  #!

        @torch.no_grad()
        def saves_only(model, loader):
            model.eval()
            for index, batch in enumerate(loader):
                image = batch.cuda()
                keep(model, image, f"{index}.pt")
                save_model(model, image)
                snapshot = copy.deepcopy(model)
                torch.cuda.empty_cache()

        @torch.no_grad()
        def per_dataset(model, loaders):
            model.eval()
            for name, loader in loaders.items():
                acc = accuracy(model, loader)
                evaluate(model, loader)
                torch.cuda.empty_cache()

        @torch.no_grad()
        def unknown(model, loader, runner):
            model.eval()
            for batch in loader:
                image = batch.cuda()
                out = runner(image, model)
                torch.cuda.empty_cache()

        @torch.no_grad()
        def guarded(model, loader, epochs):
            model.eval()
            for epoch in range(epochs):
                for i, batch in enumerate(loader):
                    image = batch.cuda()
                    pred = sliding_window_inference(image, (96, 96, 96), 1, model)
                    if i % 50 == 0:
                        torch.cuda.empty_cache()
                torch.cuda.empty_cache()

        def handler(model, request):
            model.eval()
            image = request.cuda()
            with torch.no_grad():
                pred = sliding_window_inference(image, (96, 96, 96), 1, model)
            torch.cuda.empty_cache()
            return pred
    """,
    "sr_model.py": """
        import torch

        class SRModel:
            def __init__(self, net):
                self.net_g = net.cuda()

            def get_bare_model(self, net):
                return net.module if hasattr(net, "module") else net

            def test(self):
                self.net_g.eval()
                net_g = self.get_bare_model(self.net_g)
                self.output = net_g.test(self.lq)
                self.net_g.train()

            def reload(self, path):
                self.net_g.eval()
                net_g = self.get_bare_model(self.net_g)
                net_g.load_state_dict(torch.load(path))

            def validation(self, dataloader):
                for idx, val_data in enumerate(dataloader):
                    self.lq = val_data["lq"].cuda()
                    self.test()
                    del self.lq
                    torch.cuda.empty_cache()  #!

            def sweep(self, paths):
                for path in paths:
                    self.reload(path)
                    torch.cuda.empty_cache()
    """,
}


def test_models_handed_to_calls_and_methods_of_models_in_eval_mode(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF206") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
