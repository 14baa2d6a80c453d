"""TPF206: a loop whose model runs in a same-module helper that puts it in eval mode first
(``net.eval()``, then ``net(x)``) evaluates on every item, as a loop after ``net.eval()``
does, though nothing turns autograd off: an ``empty_cache()`` in its body runs per item
(``facts/training/forward_helpers``: ``eval_forward``).

Look-alikes stay silent: the helper puts another network in eval mode than the one it runs;
the helper runs the model without eval mode (and without no-grad); the cache is emptied
every N items; the loop loads a checkpoint each time round (one model per iteration)."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "show.py": """
        import torch

        device = torch.device("cuda")


        def paint(net, image, out_dir):
            net.eval()
            mask = net(image.to(device))
            return (mask > 0.5).float().mean().item()


        def paint_other(net, teacher, image):
            teacher.eval()
            mask = net(image.to(device))
            return mask.sum().item()


        def paint_plain(net, image):
            mask = net(image.to(device))
            return mask.sum().item()


        def gallery(loader, net):
            total = 0.0
            for i, (image, label) in enumerate(loader):
                total += paint(net, image, "out")
                torch.cuda.empty_cache()  #!
            return total


        def gallery_other(loader, net, teacher):
            for image, label in loader:
                paint_other(net, teacher, image)
                torch.cuda.empty_cache()


        def gallery_plain(loader, net):
            for image, label in loader:
                paint_plain(net, image)
                torch.cuda.empty_cache()


        def gallery_every(loader, net):
            for i, (image, label) in enumerate(loader):
                paint(net, image, "out")
                if i % 50 == 0:
                    torch.cuda.empty_cache()


        def gallery_checkpoints(paths, image, net):
            for path in paths:
                net.load_state_dict(torch.load(path))
                paint(net, image, "out")
                torch.cuda.empty_cache()
    """,
}


def test_a_helper_that_puts_its_model_in_eval_mode_evaluates(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF206") == _marked(PROJECT)
