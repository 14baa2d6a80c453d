"""TPF105 through a loader-building method of the trainer's own class (issue 23, new-rules-7's
misses by mechanism): ``self.build_loader(...)`` returns a ``DataLoader`` over a
``DistributedSampler``; another method binds it once and walks it in every epoch, through a
progress bar on rank 0 only (``bar = tqdm(loader) if rank == 0 else loader``). The chain
(a name, a conditional expression, a progress bar, the method's return, its own name) is
followed as a module-level helper's is. Look-alikes stay silent: a loader the method builds
anew each epoch, one walked once, and a method of another object (``other.build_loader``)."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

FILES = {
    "distill.py": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        from tqdm import tqdm

        class Distiller:
            def build_loader(self, rank, tensors, batch_size):
                dataset = tensors["pairs"]
                sampler = DistributedSampler(dataset, num_replicas=self.world, rank=rank)  #!
                batches = DataLoader(dataset, sampler=sampler, batch_size=batch_size, shuffle=False)
                return batches

            def build_eval_loader(self, rank, tensors):
                dataset = tensors["pairs"]
                sampler = DistributedSampler(dataset, num_replicas=self.world, rank=rank)
                return DataLoader(dataset, sampler=sampler, batch_size=64)

            def pretrain(self, rank, epochs):
                loader = self.build_loader(rank, self.tensors, 32)
                for epoch in range(epochs):
                    self.student.train()
                    bar = tqdm(loader) if rank == 0 else loader
                    for step, batch in enumerate(bar):
                        loss = self.student(batch[0].to(rank)).mean()
                        loss.backward()
                        self.optimizer.step()

            def finetune(self, rank, epochs):
                for epoch in range(epochs):
                    fresh = self.build_eval_loader(rank, self.tensors)
                    for batch in fresh:
                        self.student(batch[0].to(rank)).mean().backward()
                        self.optimizer.step()

            def score(self, rank):
                once = self.build_eval_loader(rank, self.tensors)
                for batch in once:
                    self.student(batch[0].to(rank))

        class Other:
            def build_loader(self, rank, tensors, batch_size):
                dataset = tensors["pairs"]
                sampler = DistributedSampler(dataset, rank=rank)
                return DataLoader(dataset, sampler=sampler, batch_size=batch_size)

        def run(other, rank, epochs):
            loader = other.build_loader(rank, {}, 8)
            for epoch in range(epochs):
                for batch in loader:
                    batch.mean().backward()
    """,
}


def test_a_loader_built_by_a_method_of_the_class_and_walked_every_epoch(tmp_path):
    assert _findings(tmp_path, FILES, "TPF105") == _marked(FILES)
