"""TPF206 through a project pipeline built the library's way (issue 23, new-rules-6/7 misses
by mechanism): a project subclass of a diffusers ``DiffusionPipeline`` whose ``__call__``
empties the CUDA cache, loaded with the inherited ``from_pretrained`` classmethod (which
gives an object of the class it is called on) or constructed, then moved with the inherited
``.to(device)`` (which gives the pipeline back), and called once per image of a loop. The
look-alikes stay silent: a ``from_pretrained`` of a project class whose base is not known to
keep that convention, a ``.to`` of an object whose class is no pipeline or module, and a
pipeline whose ``__call__`` empties only under a condition.

The ensemble case: a pipeline's ``__call__`` that checks its input (``else: raise``), makes
copies of the one image it is given (``image.expand(n, ...)`` or ``torch.stack([x] * n)``
in a ``TensorDataset`` and a ``DataLoader``) and walks them, each batch denoised by a
helper that loops over the scheduler's timesteps: one item's inference, so the per-image
loop that calls the pipeline evaluates, and the helper that empties the cache per ensemble
batch is reported in ``__call__``. A pipeline that walks a data set it is handed, or a
tensor converted from one (not copies), evaluates a whole set per call: silent.

The chunked case: an upscaling pipeline whose ``__call__`` decodes what it computed in
chunks (``for start in range(0, latents.shape[0], 8)``) is one clip's inference, so a
script's loop over the chunks of a video that calls it under ``torch.no_grad()`` and empties
the cache first is an evaluation loop. A count a parameter gives as it is (``range(count)``,
``len(frames)``) or a count loop that draws ``self.dataset[i]`` walks a whole set: silent."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

PIPELINE = """
    import torch
    from diffusers import DiffusionPipeline

    class RelightPipeline(DiffusionPipeline):
        def __init__(self, unet, vae):
            super().__init__()
            self.register_modules(unet=unet, vae=vae)

        @torch.no_grad()
        def __call__(self, image, steps=10):
            latents = []
            for chunk in image.split(4):
                latents.append(self.unet(chunk))
            torch.cuda.empty_cache()
            return self.vae.decode(torch.cat(latents))

    class CarefulPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, image, tidy=False):
            out = self.unet(image)
            if tidy:
                torch.cuda.empty_cache()
            return out

    class Loader:
        @classmethod
        def from_pretrained(cls, path):
            return load_anything(path)

        def __call__(self, image):
            torch.cuda.empty_cache()
            return image
"""

ENSEMBLE = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from diffusers import DiffusionPipeline

    class EnsembleDepthPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, image, members=8, batch=2):
            if isinstance(image, torch.Tensor):
                pixels = image
            else:
                raise TypeError("a tensor, please")
            copies = pixels.expand(members, -1, -1, -1)
            loader = DataLoader(TensorDataset(copies), batch_size=batch)
            maps = []
            for (chunk,) in loader:
                maps.append(self._denoise(chunk))  #!
            torch.cuda.empty_cache()
            return torch.cat(maps).mean(0)

        def _denoise(self, chunk):
            latent = self.vae.encode(chunk)
            for t in self.scheduler.timesteps:
                latent = self.scheduler.step(self.unet(latent, t), t, latent)
            torch.cuda.empty_cache()
            return self.vae.decode(latent)

    class StackedPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, image, members=4):
            stacked = torch.stack([image.float()] * members)
            outs = []
            for (chunk,) in DataLoader(TensorDataset(stacked), batch_size=2):
                outs.append(self.unet(chunk))
            torch.cuda.empty_cache()
            return outs

    class SweepPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, dataset):
            outs = []
            for (chunk,) in DataLoader(dataset, batch_size=2):  # a whole set: its batches evaluate
                outs.append(self._denoise(chunk))  #!
            torch.cuda.empty_cache()
            return outs

        def _denoise(self, chunk):
            for t in self.scheduler.timesteps:
                chunk = self.unet(chunk, t)
            torch.cuda.empty_cache()
            return chunk

    class ConvertingPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, frames):
            outs = []
            for (chunk,) in DataLoader(TensorDataset(torch.tensor(frames)), batch_size=2):
                outs.append(self.unet(chunk))
            torch.cuda.empty_cache()
            return outs
"""

CHUNKED = """
    import torch
    from diffusers import DiffusionPipeline

    class UpscalePipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, prompt, image, steps=20):
            latents = self.prepare(image)
            for t in self.scheduler.timesteps:
                latents = self.scheduler.step(self.unet(latents, t), t, latents)
            frames = []
            for start in range(0, latents.shape[0], 8):
                frames.append(self.vae.decode(latents[start:start + 8]))
            return torch.cat(frames)

    class WholeSetPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, frames, count):
            outs = []
            for i in range(count):
                outs.append(self.unet(frames[i]))
            return outs

    class DrawingPipeline(DiffusionPipeline):
        @torch.no_grad()
        def __call__(self, prompt):
            outs = []
            for i in range(0, 64, 8):
                outs.append(self.unet(self.dataset[i]))
            return outs
"""

CASES = {
    "chunks-of-one-clip": {
        "upscale.py": CHUNKED,
        "upscale_video.py": """
            import torch
            from upscale import UpscalePipeline, WholeSetPipeline, DrawingPipeline

            def main(weights, video, prompt):
                pipe = UpscalePipeline.from_pretrained(weights, torch_dtype=torch.float16).to("cuda")
                whole = WholeSetPipeline.from_pretrained(weights).to("cuda")
                drawing = DrawingPipeline.from_pretrained(weights).to("cuda")
                outs = []
                with torch.no_grad():
                    for start in range(0, video.shape[2], 8):
                        torch.cuda.empty_cache()  #!
                        outs.append(pipe(prompt, image=video[:, :, start:start + 8]))
                    for start in range(0, video.shape[2], 8):
                        torch.cuda.empty_cache()
                        outs.append(whole(video[:, :, start:start + 8], 8))
                    for start in range(0, video.shape[2], 8):
                        torch.cuda.empty_cache()
                        outs.append(drawing(prompt))
                return outs
        """,
    },
    "ensemble-of-one-image": {
        "ensemble.py": ENSEMBLE,
        "estimate.py": """
            import torch
            from ensemble import EnsembleDepthPipeline, StackedPipeline, SweepPipeline, ConvertingPipeline

            def main(images, weights, sets):
                pipe = EnsembleDepthPipeline.from_pretrained(weights).to("cuda")
                stacked = StackedPipeline.from_pretrained(weights).to("cuda")
                sweep = SweepPipeline.from_pretrained(weights).to("cuda")
                convert = ConvertingPipeline.from_pretrained(weights).to("cuda")
                for image in images:
                    save(pipe(image))  #!
                for image in images:
                    save(stacked(image))  #!
                for data in sets:
                    save(sweep(data))
                for frames in sets:
                    save(convert(frames))
        """,
    },
    "loaded-with-from-pretrained": {
        "pipes.py": PIPELINE,
        "relight.py": """
            import torch
            from pipes import RelightPipeline, CarefulPipeline, Loader

            def main(paths, weights):
                device = torch.device("cuda")
                pipe = RelightPipeline.from_pretrained(weights, torch_dtype=torch.float16)
                pipe = pipe.to(device)
                careful = CarefulPipeline.from_pretrained(weights).to(device)
                other = Loader.from_pretrained(weights)
                with torch.no_grad():
                    for path in paths:
                        lit = pipe(read(path), steps=20)  #!
                        save(lit)
                    for path in paths:
                        save(careful(read(path)))
                    for path in paths:
                        save(other(read(path)))
        """,
    },
    "constructed-then-moved": {
        "pipes.py": PIPELINE,
        "relight.py": """
            import torch
            from pipes import RelightPipeline, Loader

            def main(paths, unet, vae):
                device = torch.device("cuda")
                pipe = RelightPipeline(unet=unet, vae=vae)
                pipe = pipe.to(device)
                other = Loader()
                other = other.to(device)
                for path in paths:
                    save(pipe(read(path)))  #!
                for path in paths:
                    save(other(read(path)))
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cache_emptied_by_a_library_style_pipeline(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF206") == _marked(files)
