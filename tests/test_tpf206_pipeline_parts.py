"""TPF206 in a diffusion pipeline's own loops (new-rules-6's video upscaling and text-to-image
misses): a denoising loop that calls ``self.unet(latents, t)`` and a decoding loop over frame
windows that calls ``self.vae.decode(z)`` (directly or through a method of the pipeline) run a
model on every step, so ``empty_cache()`` there runs per item of an evaluation loop. The
denoiser and the autoencoder go by their conventional names (``unet``, ``vae``, ``*_unet``).
Look-alikes that stay silent: a loop that only steps the scheduler (no model), the cache
emptied once after the loops, a loop that builds a new denoiser every iteration (also when the
new model is moved or switched on the way, ``UNet(cfg).cuda()``,
``Net(cfg).to("cuda").eval()``, and a factory function's result, ``model =
make_model(name)``, new-rules-9's QuaRot benchmark, though not ``model_kwargs =
dict(...)``), and a loss helper whose name only
contains the word (``vae_loss(x)``)."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

PAINTER = """
    import torch


    def tidy():
        torch.cuda.empty_cache()


    class Painter:
        def __init__(self, unet, vae, scheduler):
            self.unet = unet.cuda()
            self.vae = vae.cuda()
            self.scheduler = scheduler

        def decode_window(self, z):
            return self.vae.decode(z).sample

        @torch.no_grad()
        def __call__(self, latents, timesteps, window=4):
            for t in timesteps:
                torch.cuda.empty_cache()  #!
                noise = self.unet(latents, t)
                latents = self.scheduler.step(noise, t, latents)
            frames = []
            for start in range(0, latents.shape[2], window):
                torch.cuda.empty_cache()  #!
                frames.append(self.decode_window(latents[:, :, start:start + window]))
            torch.cuda.empty_cache()
            return torch.cat(frames, 2)

        @torch.no_grad()
        def only_schedule(self, latents, timesteps):
            for t in timesteps:
                torch.cuda.empty_cache()
                latents = self.scheduler.step(latents, t, latents)
            return latents

        @torch.no_grad()
        def per_denoiser(self, configs, latents):
            outs = []
            for cfg in configs:
                unet = UNet(cfg).cuda()
                outs.append(unet(latents))
                torch.cuda.empty_cache()
            return outs

        @torch.no_grad()
        def per_network(self, configs, latents):
            for cfg in configs:
                net = Net(cfg).to("cuda").eval()
                print(net(latents))
                torch.cuda.empty_cache()

        @torch.no_grad()
        def per_factory(self, names, latents):
            for name in names:
                model = make_model(name)
                print(model(latents))
                torch.cuda.empty_cache()

        @torch.no_grad()
        def per_factory_helpers(self, names, latents):
            for name in names:
                model = make_model(name)
                self.timed(model, latents)
                del model
                tidy()

        @torch.no_grad()
        def with_options(self, chunks, latents):
            for chunk in chunks:
                model_kwargs = dict(y=chunk)
                print(self.unet(latents, **model_kwargs))
                torch.cuda.empty_cache()  #!

        def timed(self, model, latents):
            out = model(latents)
            tidy()
            return out

        @torch.no_grad()
        def losses(self, batches):
            for x in batches:
                torch.cuda.empty_cache()
                print(vae_loss(x))
"""


def test_a_pipelines_denoising_and_decoding_loops_evaluate(tmp_path):
    files = {"painter.py": PAINTER}
    assert len(_marked(files)) == 3
    assert _findings(tmp_path, files, "TPF206") == _marked(files)
