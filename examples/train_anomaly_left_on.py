"""A training loop with PyTorch's debugging aids left on after the bug was found.

Runs offline on synthetic data, on the CPU: `python examples/train_anomaly_left_on.py`.
`pytorch-perflint bench examples/train_anomaly_left_on.py --steps 30 --unsafe-fixes` measures
what the tool's fixes buy here (both are unsafe, so they need `--unsafe-fixes`):

- TPF204: anomaly detection left on: it records a Python stack for every op of the forward
  pass and checks every gradient for NaNs in the backward pass. The model has many small
  layers, as sequence and tabular models often do, so that cost is paid op by op;
- TPF201: gradients zeroed in place (`set_to_none=False`): a memset per parameter.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--items", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--depth", type=int, default=24)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.autograd.set_detect_anomaly(True)  # left on after chasing a NaN
    features = torch.randn(args.items, 32)
    labels = torch.randint(0, 10, (args.items,))
    batches = list(zip(features.split(args.batch_size), labels.split(args.batch_size)))
    model = make_model(32, 10, depth=args.depth, width=32)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        total = torch.zeros(())
        for inputs, targets in batches:
            optimizer.zero_grad(set_to_none=False)
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(f"epoch {epoch}: mean loss {total.item() / len(batches):.4f}")


if __name__ == "__main__":
    main()
