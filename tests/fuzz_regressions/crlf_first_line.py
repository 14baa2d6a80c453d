"""Issue 21 item 4: the first line ends CRLF, the others LF (LibCST takes the newline from line 1)."""
import torch
from torch.utils.data import DataLoader
opt = torch.optim.Adam(params)
loader = DataLoader(ds)
for epoch in range(10):
    for x in loader:
        x.cuda()
