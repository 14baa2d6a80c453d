"""TPF401 tensor-copy-from-numpy: ``torch.tensor`` on a NumPy batch of several megabytes.

A copy rule, so the array is large: a batch of images as a data pipeline hands it over.
``torch.tensor`` copies every byte; the fix's ``torch.from_numpy`` wraps the same buffer.
"""

from ..scenario import Scenario

BEFORE = '''\
import numpy as np
import torch


def setup(size, device):
    rng = np.random.default_rng(0)
    shape = (size["batch"], 3, size["height"], size["width"])
    images = rng.random(shape, dtype=np.float32)
    return {"images": images}


def run(state):
    # The pipeline's batch, as float32 (no copy when it already is).
    batch = np.asarray(state["images"], dtype=np.float32)
    tensor = torch.tensor(batch)
    return tensor
'''

SCENARIO = Scenario(
    code="TPF401",
    title="convert a NumPy image batch to a tensor",
    before=BEFORE,
    sizes={
        "quick": {"batch": 4, "height": 64, "width": 64},  # 192 KiB
        "cpu": {"batch": 64, "height": 128, "width": 128},  # 12 MiB
        "cuda": {"batch": 64, "height": 128, "width": 128},  # the conversion stays on the host
    },
    rationale="a copy rule: the saving grows with the bytes copied, so the batch is 12 MiB",
    operation_alone=True,  # one copy timed alone: an upper bound, not what a training script gains
)
