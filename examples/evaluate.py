"""Evaluating a classifier without `torch.no_grad()`: every forward records an autograd graph.

Runs offline on synthetic data, on the CPU: `python examples/evaluate.py`. It never calls an
optimizer, so bench counts forward calls of the model instead of optimizer steps:
`pytorch-perflint bench examples/evaluate.py --unit forward --steps 300 --unsafe-fixes`
(the TPF203 fix, which wraps the loop in `with torch.no_grad():`, is unsafe; a forward takes
about 2 ms here, so many of them make a run long enough to time).
"""

import argparse

import torch
import torch.nn as nn


def make_model(features: int, classes: int, depth: int, width: int) -> nn.Module:
    layers = [nn.Linear(features, width)]
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def evaluate(model: nn.Module, batches) -> float:
    model.eval()
    correct = torch.zeros((), dtype=torch.long)
    for features, labels in batches:
        logits = model(features)
        correct += (logits.argmax(1) == labels).sum()
    return correct.item() / sum(len(labels) for _, labels in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--items", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--depth", type=int, default=12)
    args = parser.parse_args()

    torch.manual_seed(0)
    features = torch.randn(args.items, 32)
    labels = torch.randint(0, 10, (args.items,))
    batches = list(zip(features.split(args.batch_size), labels.split(args.batch_size)))
    model = make_model(32, 10, depth=args.depth, width=64)
    for index in range(args.passes):
        print(f"pass {index}: accuracy {evaluate(model, batches):.3f}")


if __name__ == "__main__":
    main()
