"""TPF206: five ways an evaluation loop shows itself that the value-flow layer reads.

* a nested loop over a count taken from the current item through names (``n_chunk =
  len(video)``, ``n_iter = int(math.ceil(n_chunk / float(batch)))``, ``bs, t, c, h, w =
  clip.shape``): pieces of the item (``item_pieces``);
* a method named for running a model (``task.run_model(batch, infer=True)``): a forward
  whatever its owner is called (``forward_calls.RUNS_MODEL``);
* a helper whose only loop builds numbers and lists (``T.append([np.radians(x), ...])``)
  still handles one item per call (``parameter_loops.bookkeeping``), so a loop that calls
  it per view runs a no-grad forward per view, and the helper's own ``empty_cache()`` is
  reported at its call;
* a parameter annotated as a diffusers pipeline, called per prompt (``pipelines``);
* a model's method that runs ``super().forward(...)`` on each sample of a tensor it is
  handed (``sample_loops``).

Look-alikes stay silent: a count from a setting, a count rebound to something else, a
``run_model`` with gradients on and no evaluation in sight, a helper whose loop runs the
model on data it is handed (a whole set per call), an ``Optional[...]`` pipeline, a
pipeline rebound in the loop, a per-layer loop and a parameter the method rebinds."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "features.py": """
        import math
        import torch

        device = torch.device("cuda")

        def extract(files, tower, load, args):
            tower.eval()
            for path in files:
                video = load(path)
                n_chunk = len(video)
                n_iter = int(math.ceil(n_chunk / float(args.batch)))
                for i in range(n_iter):
                    feats = tower(video[i * args.batch:(i + 1) * args.batch].to(device))
                torch.cuda.empty_cache()  #!

        def by_shape(loader, net):
            net.eval()
            with torch.no_grad():
                for frames, _ in loader:
                    bs, t, c, h, w = frames.shape
                    for i in range(bs * t):
                        net(frames.reshape(-1, c, h, w)[i:i + 1].to(device))
                    torch.cuda.empty_cache()  #!

        def repeats(files, tower, load, args):
            tower.eval()
            for path in files:
                video = load(path)
                n = args.repeats
                for i in range(n):
                    tower(video.to(device))
                torch.cuda.empty_cache()

        def rebound(files, tower, load, args):
            tower.eval()
            for path in files:
                video = load(path)
                n = len(video)
                n = args.repeats
                for i in range(n):
                    tower(video.to(device))
                torch.cuda.empty_cache()
    """,
    "render.py": """
        import torch

        device = torch.device("cuda")

        class Renderer:
            def __init__(self, task):
                self.task = task

            def render(self, batches):
                with torch.no_grad():
                    for idx, batch in enumerate(batches):
                        out = self.task.run_model(batch, infer=True)
                        torch.cuda.empty_cache()  #!

            def fit(self, batches):
                for batch in batches:
                    out = self.task.run_model(batch)
                    torch.cuda.empty_cache()

            def reload(self, paths):
                with torch.no_grad():
                    for path in paths:
                        self.task.load_model(path)
                        torch.cuda.empty_cache()
    """,
    "views.py": """
        import math
        import numpy as np
        import torch

        device = torch.device("cuda")

        @torch.no_grad()
        def sample_views(model, image, xs, ys):
            T = []
            for x, y in zip(xs, ys):
                T.append([np.radians(x), math.sin(y)])
            cond = torch.tensor(np.array(T)).to(device)
            out = model.decode_first_stage(model.encode(image, cond))
            torch.cuda.empty_cache()
            return out.cpu()

        @torch.no_grad()
        def score_all(model, images):
            outs = []
            for image in images:
                outs.append(model(image.to(device)))
            torch.cuda.empty_cache()
            return outs

        def per_view(model, images, xs, ys):
            for image in images:
                out = sample_views(model, image, xs, ys)  #!
                torch.cuda.empty_cache()  #!

        def per_set(model, sets):
            for images in sets:
                score_all(model, images)
    """,
    "logger.py": """
        from typing import Optional
        import torch
        from diffusers import DiffusionPipeline

        device = torch.device("cuda")

        class SampleLogger:
            def log(self, pipeline: DiffusionPipeline, prompts, seeds):
                for prompt in prompts:
                    for seed in seeds:
                        images = pipeline(prompt=prompt, generator=torch.Generator(device=device).manual_seed(seed))
                        torch.cuda.empty_cache()  #!

            def log_maybe(self, pipeline: Optional[DiffusionPipeline], prompts):
                for prompt in prompts:
                    images = pipeline(prompt=prompt)
                    torch.cuda.empty_cache()

            def log_loaded(self, pipeline: DiffusionPipeline, paths, load):
                for path in paths:
                    pipeline = load(path)
                    images = pipeline(prompt="a cat")
                    torch.cuda.empty_cache()

            def log_once(self, pipeline: DiffusionPipeline, prompts):
                for prompt in prompts:
                    images = pipeline(prompt=prompt)
                torch.cuda.empty_cache()
    """,
    "glamm.py": """
        import torch
        from transformers import LlamaForCausalLM

        device = torch.device("cuda")

        class Grounded(LlamaForCausalLM):
            def infer_each(self, input_ids, images):
                states = []
                for i in range(input_ids.shape[0]):
                    out = super().forward(input_ids=input_ids[i:i + 1], images=images[i:i + 1])
                    states.append(out.hidden_states)
                    torch.cuda.empty_cache()  #!
                return states

            def per_layer(self, input_ids):
                for i in range(self.num_layers):
                    out = super().forward(input_ids=input_ids)
                    torch.cuda.empty_cache()

            def counted(self, input_ids, n):
                for i in range(n):
                    out = super().forward(input_ids=input_ids)
                    torch.cuda.empty_cache()

            def masked(self, input_ids, keep):
                input_ids = input_ids[keep]
                for i in range(input_ids.shape[0]):
                    out = super().forward(input_ids=input_ids[i:i + 1])
                    torch.cuda.empty_cache()
    """,
}


def test_counts_run_model_bookkeeping_pipelines_and_samples_make_evaluation_loops(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF206") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
