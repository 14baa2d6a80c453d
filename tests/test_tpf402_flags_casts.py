"""TPF402 follows a fresh host tensor through a dtype cast spelled ``.to(dtype)`` and to a
move that runs under a flag named for the GPU (``if self.use_gpu: t = t.cuda()``); a flag
named for anything else, a cast whose argument may be a device, and a use between creation
and move stay silent."""

from __future__ import annotations

from pathlib import Path

from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import fix_example

from test_tensors_project import _findings, _marked

DECODER = {
    "decoder.py": """
        import torch
        from torch.autograd import Variable


        class Tagger(torch.nn.Module):
            def __init__(self, tags, use_gpu):
                super().__init__()
                self.tags = tags
                self.use_gpu = use_gpu
                self.scale = 2

            def pad(self, batch, length):
                filler = Variable(torch.zeros(batch, length)).long()
                if self.use_gpu:
                    filler = filler.cuda()  #!
                slots = Variable(torch.LongTensor(length, batch))
                if self.use_gpu:
                    slots = slots.cuda()  #!
                bias = torch.ones(batch)
                bias = bias.cuda() if torch.cuda.is_available() else bias  #!
                return filler, slots, bias

            def empty_term(self, scores):
                kind = scores.dtype
                term = torch.tensor(0).to(kind).cuda()  #!
                half = torch.zeros(3).to(torch.float16).cuda()  #!
                return term, half

            def quiet(self, batch, length, where):
                a = torch.zeros(batch)
                if self.scale:
                    a = a.cuda()
                b = torch.zeros(batch)
                b[0] = 1.0
                if self.use_gpu:
                    b = b.cuda()
                c = torch.zeros(batch)
                if self.use_gpu:
                    c = c.cuda()
                else:
                    c = c + 1
                d = torch.tensor(0).to(where).cuda()
                e = torch.zeros(batch)
                if not_gpu_flag(self):
                    e = e.cuda()
                return a, b, c, d, e


        def not_gpu_flag(obj):
            return obj.scale > 1
    """,
    "run.py": """
        import argparse
        import torch
        from decoder import Tagger

        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()
        model = Tagger(5, args.cuda)
        start = torch.zeros(4, 5)
        if args.cuda:
            start = start.cuda()  #!
        cpu_only = torch.zeros(4)
        if args.cpu:
            cpu_only = cpu_only.cuda()
    """,
}


def test_moves_under_gpu_flags_and_after_dtype_casts(tmp_path: Path) -> None:
    assert _findings(tmp_path, DECODER, "TPF402") == _marked(DECODER)


def test_a_cast_to_a_dtype_still_gets_its_fix(tmp_path: Path) -> None:
    """``torch.tensor(0).to(kind).cuda()``: the device goes to the factory, the cast stays."""
    source = "import torch\ndef f(x):\n    kind = x.dtype\n    return torch.tensor(0).to(kind).cuda()\n"
    fixed = fix_example(rule_by_code("TPF402"), source, unsafe=True)
    assert fixed == 'import torch\ndef f(x):\n    kind = x.dtype\n    return torch.tensor(0, device="cuda").to(kind)\n'
