"""TPF203: an evaluation loop that hands the model it put in eval mode to a project helper
whose body calls that parameter (``embed_one(net, x)`` running ``model(x)``). What the
parameter holds needs no callers: the caller's ``.eval()`` says it is a model (the
helper's other callers may pass anything). Look-alikes: a helper that runs it under
``no_grad`` or is decorated so, one that trains, one that calls another parameter, one
that rebinds the name or puts it back in training mode, one that runs it with grad only
under ``if model.training:`` (the model in eval mode takes the no-grad arm)."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_HELPERS = """
    import torch

    def embed_one(model, x):
        out = model(x.cuda())
        return out.data.cpu()

    def embed_forward(x, model=None):
        return model.forward(x.cuda())

    def embed_quiet(model, x):
        with torch.no_grad():
            return model(x.cuda())

    @torch.no_grad()
    def embed_decorated(model, x):
        return model(x.cuda())

    def tune_one(model, x, opt):
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()

    def embed_by(model, x, backbone):
        return backbone(x.cuda())

    def embed_swapped(model, x):
        model = build_other()
        return model(x.cuda())

    def embed_trained(model, x):
        model.train()
        return model(x.cuda())

    def embed_by_mode(model, x):
        if model.training:
            return model(x.cuda())
        with torch.no_grad():
            return model(x.cuda())
"""

PROJECT = {
    "feats/__init__.py": "",
    "feats/helpers.py": _HELPERS,
    "evaluate.py": """
        from feats.helpers import embed_one, embed_forward, embed_quiet, embed_decorated, tune_one, embed_by, embed_swapped, embed_trained, embed_by_mode

        def gather(net, loader):
            net.eval()
            out = []
            for x, _ in loader:  #!
                out.append(embed_one(net, x))
            return out

        def gather_kw(net, loader):
            net.eval()
            return [embed_forward(x, model=net) for x, _ in loader]

        def gather_loop_kw(net, loader):
            net.eval()
            out = []
            for x, _ in loader:  #!
                out.append(embed_forward(x, model=net))
            return out

        def quiet(net, loader, opt, other):
            net.eval()
            out = []
            for x, _ in loader:
                out.append(embed_quiet(net, x))
                out.append(embed_decorated(net, x))
                out.append(embed_by(net, x, other))
                out.append(embed_swapped(net, x))
                out.append(embed_trained(net, x))
                out.append(embed_by_mode(net, x))
            for x, _ in loader:
                tune_one(net, x, opt)
            return out

        def unevaluated(net, loader):
            return [embed_one(net, x) for x, _ in loader]

        embed_one(lambda t: t, 1)
    """,
}


def test_helpers_that_run_the_handed_model_with_grad_report_the_loop(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF203") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
