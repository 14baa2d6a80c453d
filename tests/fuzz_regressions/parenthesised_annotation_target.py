"""Issue 11 item 4: a parenthesised annotation target was a false TPF001 (LibCST cannot parse it)."""
from torch.utils.data import DataLoader

(x): int = 1


def f(a):
    (a.y): int = 1


loader = DataLoader(dataset, batch_size=8)
