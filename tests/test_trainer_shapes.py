"""The cross-module "trainer shape" of real training code, taught from review-11's misses,
each on a scratch project with its look-alikes.

TPF202: an epoch function of another module (``fit_one_epoch(model, train_util, ...)``)
whose loop calls a method of a trainer object handed in as a parameter
(``train_util.train_step(...)``, which runs backward and an optimizer step) is a training
loop: the ``.item()`` of the losses the method returns runs every step; so does a loop
calling it on the attribute the trainer is kept in (``self.trainer = trainer``). Look-alikes: the
same function's validation loop calling a method that trains nothing, a parameter whose
``step_``-named method trains nothing, and the epoch loop of the caller (an epoch loop, not
a step loop).

TPF203: reading an optimizer's settings or state after an evaluation loop
(``optimizer.param_groups[1]["lr"]`` in a snapshot name, ``torch.save(optimizer
.state_dict(), ...)``) differentiates nothing the loop made: the loop is still evaluation
(``Variable(x, volatile=True)`` does nothing since torch 0.4). Look-alike: a step after the
loop. And a model put in eval mode inside an outer loop (``for area in areas: ...
model.eval(); for batch in loader: model(batch)``): the loop reported is the one that
begins in eval mode, not the outer loop around the ``.eval()`` call; a loop whose own body
calls ``.eval()`` before the forward is still the one reported.
"""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

# --- TPF202: a trainer object handed to an epoch function ------------------------------------
TRAINER = {
    "nets/__init__.py": "",
    "nets/trainer.py": """
        import torch
        import torch.nn as nn

        class Trainer(nn.Module):
            def __init__(self, model_train, optimizer):
                super().__init__()
                self.model_train = model_train
                self.optimizer = optimizer

            def forward(self, imgs):
                out = self.model_train(imgs)
                return [out.mean(), out.sum()]

            def train_step(self, imgs, fp16=False):
                self.optimizer.zero_grad()
                losses = self.forward(imgs)
                losses[-1].backward()
                self.optimizer.step()
                return losses

            def eval_step(self, imgs):
                return self.forward(imgs)

        class Meter:
            def __init__(self):
                self.seen = []

            def step_count(self, n):
                self.seen.append(n)
                return n
    """,
    "utils/__init__.py": "",
    "utils/fit.py": """
        import torch

        def fit_one_epoch(model, train_util, meter, gen, gen_val, cuda):
            total_loss = 0
            for iteration, batch in enumerate(gen):
                images = batch[0]
                if cuda:
                    images = images.cuda()
                part, total = train_util.train_step(images)
                total_loss += total.item()  #!
                total_loss += part.item()  #!
            val_loss = 0
            for iteration, batch in enumerate(gen_val):
                part, total = train_util.eval_step(batch[0].cuda())
                val_loss += total.item()
            for iteration, batch in enumerate(gen):
                n = meter.step_count(len(batch))
                val_loss += batch[0].cuda().sum().item()
            return total_loss
    """,
    "utils/fitter.py": """
        class Fitter:
            def __init__(self, trainer, log):
                self.trainer = trainer
                self.log = log

            def run(self, gen):
                seen = 0
                for batch in gen:
                    part, total = self.trainer.train_step(batch[0].cuda())
                    seen += total.item()  #!
                for batch in gen:
                    self.log.step_count(len(batch))
                    seen += batch[0].cuda().sum().item()
                return seen
    """,
    "train.py": """
        import torch
        import torch.optim as optim
        from nets.trainer import Meter, Trainer
        from utils.fit import fit_one_epoch
        from utils.fitter import Fitter

        if __name__ == "__main__":
            model = torch.nn.Conv2d(3, 3, 3).cuda()
            optimizer = optim.Adam(model.parameters())
            train_util = Trainer(model, optimizer)
            meter = Meter()
            for epoch in range(10):
                fit_one_epoch(model, train_util, meter, [], [], True)
                Fitter(train_util, meter).run([])
                print(torch.zeros(1).cuda().item())
    """,
}


def test_trainer_handed_to_an_epoch_function(tmp_path: Path) -> None:
    expected = sorted((Path(name).name, row) for name, row in _marked(TRAINER))
    assert _findings(tmp_path, TRAINER, "TPF202") == expected


# --- TPF203: optimizer state read after an evaluation loop ------------------------------------
AFTER_EVAL = {
    "train.py": """
        import os
        from torch import optim
        from torch.autograd import Variable

        def validate(val_loader, net, criterion, optimizer, epoch):
            net.eval()
            predictions = []
            for vi, data in enumerate(val_loader):  #!
                inputs, gts = data
                inputs = Variable(inputs, volatile=True).cuda()
                outputs = net(inputs)
                predictions.append(outputs.data.max(1)[1].cpu().numpy())
            name = 'epoch_%d_lr_%.10f' % (epoch, optimizer.param_groups[1]['lr'])
            save(net.state_dict(), os.path.join('ckpt', name + '.pth'))
            save(optimizer.state_dict(), os.path.join('ckpt', 'opt_' + name + '.pth'))
            net.train()
            return predictions

        def refine(val_loader, net, criterion, optimizer):
            net.eval()
            outputs = []
            for vi, data in enumerate(val_loader):
                outputs.append(net(Variable(data[0], volatile=True).cuda()))
            loss = criterion(outputs)
            loss.backward()
            optimizer.step()
    """,
}


def test_optimizer_state_after_an_evaluation_loop(tmp_path: Path) -> None:
    assert _findings(tmp_path, AFTER_EVAL, "TPF203") == _marked(AFTER_EVAL)


# --- TPF203: eval mode switched on inside an outer loop ---------------------------------------
INNER_EVAL = {
    "test.py": """
        import torch
        import torch.nn as nn

        def test(args, make_loader, make_model):
            results = []
            for area in range(1, 7):
                loader = make_loader(area)
                model = nn.DataParallel(make_model(args)).cuda()
                model = model.eval()
                for data, seg in loader:  #!
                    pred = model(data.cuda())
                    results.append(pred.max(dim=2)[1])
            return results

        def sweep(model, loaders):
            model.eval()
            for loader in loaders:  #!
                for data in loader:
                    model(data.cuda())

        def rounds(model, loader):
            for data in loader:  #!
                model.eval()
                model(data.cuda())
    """,
}


def test_eval_mode_inside_an_outer_loop(tmp_path: Path) -> None:
    assert _findings(tmp_path, INNER_EVAL, "TPF203") == _marked(INNER_EVAL)
