"""Issue 11 item 1: a module-level `global` beside a function's looped forever in Scope.lookup_import."""
from torch.utils.data import DataLoader

global x
if x:
    global y


def f():
    global x
    x()


loader = DataLoader(dataset, batch_size=8)
