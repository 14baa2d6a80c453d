"""TPF206: an evaluation loop over views whose model runs on the pieces of the current view,
cut by a function named for splitting (``pieces = split_rays(batch, n)``, then ``for piece
in pieces: net(piece)``), runs a model on every item; so does a view whose item reaches the
batch through a container it was written into (``pose[:3, :3] = to_rot(q)``, then
``batch = {"pose": pose}``). An ``empty_cache()`` in its body runs per view
(``facts/training/item_pieces``).

Look-alikes stay silent: pieces cut by a function not named for splitting; pieces of a
batch made before the loop (the same for every view: a loop over copies is no item loop);
the cache emptied every N views."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "views.py": """
        import torch

        device = torch.device("cuda")


        def split_rays(batch, n):
            return [batch["uv"][i:i + n] for i in range(0, batch["uv"].shape[0], n)]


        def prepare(batch, n):
            return [batch["uv"]]


        def to_rot(q):
            return torch.eye(3)


        def render_views(net, quats, uv):
            net.eval()
            frames = []
            for i, q in enumerate(quats):
                torch.cuda.empty_cache()  #!
                pose = torch.eye(4).to(device)
                pose[:3, :3] = to_rot(q)
                batch = {"pose": pose, "uv": uv}
                pieces = split_rays(batch, 1024)
                outs = []
                for piece in pieces:
                    outs.append(net(piece).detach())
                frames.append(torch.cat(outs).cpu())
            return frames


        def render_prepared(net, quats, uv):
            net.eval()
            for q in quats:
                torch.cuda.empty_cache()
                pose = torch.eye(4).to(device)
                pose[:3, :3] = to_rot(q)
                batch = {"pose": pose, "uv": uv}
                for piece in prepare(batch, 1024):
                    net(piece)


        def render_same(net, quats, uv):
            net.eval()
            fixed = split_rays({"uv": uv}, 1024)
            for q in quats:
                torch.cuda.empty_cache()
                for piece in fixed:
                    net(piece)


        def render_every(net, quats, uv):
            net.eval()
            for i, q in enumerate(quats):
                if i % 20 == 0:
                    torch.cuda.empty_cache()
                pose = torch.eye(4).to(device)
                pose[:3, :3] = to_rot(q)
                for piece in split_rays({"pose": pose, "uv": uv}, 1024):
                    net(piece)
    """,
}


def test_pieces_cut_by_a_split_helper_are_the_views(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF206") == _marked(PROJECT)
