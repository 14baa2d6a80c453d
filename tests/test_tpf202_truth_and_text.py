"""TPF202: more spellings of a backpropagated loss read on the host every step. The truth
value of ``torch.isnan(loss).any()`` and ``torch.isfinite(loss)`` in an ``if``; a ``while`` whose test compares the loss
its body backpropagates; ``"...".format(loss)`` handed to any call (a progress bar's
description), as ``%`` and f-strings already were; and the statements of a loop that runs
its own backward and optimizer step around an inner training loop (a GAN's generator step
after its critic's loop). Look-alikes stay silent: ``.any()`` of a batch, ``torch.isnan`` of a host tensor, a host number
read once before the loop and compared in it, ``.format`` of a host number, a ``while`` on
counters, a guarded print in the alternating loop, and an outer loop whose only step runs
inside the inner loop."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "adversary.py": """
        import torch


        def duel(maker, judge, make_opt, judge_opt, pictures, rounds, every):
            maker.cuda()
            judge.cuda()
            for r in range(rounds):
                for k in range(3):
                    real = next(pictures).cuda()
                    critic = judge(real).mean()
                    critic.backward()
                    judge_opt.step()
                noise = torch.randn(8, 32, device="cuda")
                fooled = judge(maker(noise)).mean()
                fooled.backward()
                make_opt.step()
                print(f"round {r}: {fooled}")  #!
                if r % every == 0:
                    print(f"round {r}: {fooled}")


        def epochs(net, opt, loader, epochs):
            net.cuda()
            for epoch in range(epochs):
                for x in loader:
                    loss = net(x.cuda()).mean()
                    loss.backward()
                    opt.step()
                print(f"epoch {epoch}: {loss}")
    """,
    "checks.py": """
        import torch


        def guarded(net, opt, loader, bar, limit):
            net.cuda()
            first = net(next(iter(loader)).cuda()).mean().item()
            for x in loader:
                x = x.cuda()
                loss = net(x).mean()
                if torch.isnan(loss).any():  #!
                    break
                if torch.isnan(x).any():
                    continue
                if first > limit:
                    continue
                loss.backward()
                opt.step()
                bar.set_description("loss {:.4f}".format(loss))  #!
                bar.set_postfix_str("first {:.4f}".format(first))


        def settle(net, opt, x, tol):
            net.cuda()
            err = net(x.cuda()).mean()
            while err > tol:  #!
                err = net(x.cuda()).mean()
                err.backward()
                opt.step()


        def finite(net, opt, loader):
            net.cuda()
            for x in loader:
                loss = net(x.cuda()).mean()
                if not torch.isfinite(loss):  #!
                    continue
                loss.backward()
                opt.step()
                scale = torch.ones(1)
                if torch.isnan(scale):
                    break


        def counted(net, opt, x, n):
            net.cuda()
            i = 0
            while i < n:
                out = net(x.cuda()).mean()
                out.backward()
                opt.step()
                i += 1
    """,
}


def test_truth_values_and_text_of_the_loss_every_step(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF202") == _marked(PROJECT)
