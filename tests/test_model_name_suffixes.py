"""Callees named like a model by a suffix (``base_model``, ``teacher_net``, ``ema_unet``):
``forward_calls.MODEL_NAME`` and ``GENERATIVE_NAME`` are used with ``re.match``, so their
suffix alternatives never matched a name that does not start with ``_``. An evaluation
function running ``base_model`` on each batch outside no-grad is TPF203's; a callee whose
name only contains a model word (``cabinet``, ``my_model_stats``) or starts with a verb
(``load_model``, ``save_model``: what is done to a model) stays silent."""

from __future__ import annotations

from project_tree import write_project
from test_loader_options_flow import _findings

PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF203"]\n',
    "scoring.py": '''
        import torch


        def evaluate(loader, base_model):
            hits = 0
            for images, labels in loader:
                hits += (base_model(images).argmax(1) == labels).sum()
            return hits


        def validate(loader, teacher_net):
            hits = 0
            for images, labels in loader:
                hits += (teacher_net(images).argmax(1) == labels).sum()
            return hits


        def test_counts(loader, my_model_stats):
            seen = 0
            for images, labels in loader:
                seen += my_model_stats(images)
            return seen


        def valid_cabinet(loader, cabinet):
            seen = 0
            for images, labels in loader:
                seen += cabinet(images)
            return seen


        def test_snapshots(loader, load_model, save_model):
            for images, labels in loader:
                save_model(load_model(images))
    ''',
}


def test_suffix_model_names_are_models(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    assert _findings(root).get("TPF203", set()) == {("scoring.py", 6), ("scoring.py", 13)}


PIPELINE = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF206"]\n',
    "render.py": '''
        import torch


        @torch.no_grad()
        def render(frames, ema_unet):
            outs = []
            for frame in frames:
                outs.append(ema_unet.decode(frame.cuda()))
                torch.cuda.empty_cache()
            return outs


        @torch.no_grad()
        def tally(frames, unet_stats):
            outs = []
            for frame in frames:
                outs.append(unet_stats.decode(frame.cuda()))
                torch.cuda.empty_cache()
            return outs
    ''',
}


def test_suffix_pipeline_part_names_run_models(tmp_path):
    root = write_project(tmp_path / "p", PIPELINE)
    assert _findings(root).get("TPF206", set()) == {("render.py", 9)}
