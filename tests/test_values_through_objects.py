"""Values known through objects (review-6's misses by mechanism, in scratch projects of our
own): a config object's attributes, arrays that a base class's method returns through the
subclass it is called on, a loop that overwrites what it made, a public method's callers on
objects of other classes, ``np.load`` results after arithmetic, and a tensor moved only
where another one is on the GPU. Every line marked ``#!`` must be reported, nothing else."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List, Mapping, Tuple

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project
from test_tensors_project import _marked

MARK = "#!"


def _findings(root: Path, files: Mapping[str, str], code: str) -> List[Tuple[str, int]]:
    write_project(root, {"pyproject.toml": f'[tool.pytorch-perflint]\nselect = ["{code}"]\n', **files})
    settings = load_settings([root])
    results, _ = runner.run(sorted(root.rglob("*.py")), settings, jobs=1)
    return sorted(
        (Path(d.path).relative_to(root).as_posix(), d.location.row)
        for result in results
        for d in result.diagnostics
        if d.code == code
    )


# -- 1. a config object: class attributes, `__init__`, a module-level instance ----------------
CONFIG = {
    # Python 2 style: the package's `__init__` names itself, meaning its sibling module
    "options/__init__.py": "from options import *\n",
    "options/options.py": """
        class Settings(object):
            workers = 2
            device = "cuda"

            def parse(self, overrides):
                for key, value in overrides.items():
                    setattr(self, key, value)


        class Fixed(object):
            def __init__(self):
                self.workers = 3


        class Plain(object):
            workers = 4


        class Loose(object):
            workers = 4

            def quiet(self):
                self.workers = 0


        shared = Fixed()
    """,
    "train.py": """
        import torch
        from torch.utils import data
        from options import Settings, Fixed, Plain, Loose, shared


        def build(cfg, ds):
            return data.DataLoader(ds, batch_size=8, num_workers=cfg.workers, pin_memory=True)  #!


        def main(ds):
            opt = Settings()
            fixed = Fixed()
            loose = Loose()
            dev = torch.device("cuda")
            by_parse = data.DataLoader(ds, num_workers=opt.workers, pin_memory=True)
            by_init = data.DataLoader(ds, num_workers=fixed.workers, pin_memory=True)  #!
            by_class = build(Plain(), ds)
            by_method = data.DataLoader(ds, num_workers=loose.workers, pin_memory=True)
            by_module = data.DataLoader(ds, num_workers=shared.workers, pin_memory=True)  #!
            for epoch in range(10):
                for x in by_parse:
                    x = x.to(dev, non_blocking=True)
                for x in by_init:
                    pass
                for x in by_class:
                    pass
                for x in by_method:
                    pass
                for x in by_module:
                    pass
    """,
}


def test_config_object_values_reach_loader_arguments(tmp_path):
    """``Fixed().workers`` (``__init__``), ``Plain.workers`` through a helper's parameter and a
    module-level ``shared = Fixed()`` are known; a class whose ``parse`` sets attributes by
    ``setattr`` from outside data, or whose method rebinds the attribute, is not."""
    assert _findings(tmp_path, CONFIG, "TPF103") == _marked(CONFIG)


# -- 2. arrays through objects ---------------------------------------------------------------
POOL = """
    import numpy as np


    class BasePool(object):
        def send_all(self, moves):
            raise NotImplementedError

        def gather(self):
            pass

        def run(self, moves):
            self.send_all(moves)
            return self.gather()


    class ProcessPool(BasePool):
        def __init__(self, makers):
            self.pipes = [make() for make in makers]

        def send_all(self, moves):
            for pipe, move in zip(self.pipes, moves):
                pipe.send(move)

        def gather(self):
            got = [pipe.recv() for pipe in self.pipes]
            seen, gains, ends = zip(*got)
            return np.stack(seen), np.stack(gains), np.stack(ends)

        def restart(self):
            return np.stack([pipe.recv() for pipe in self.pipes])


    class ListPool(BasePool):
        def gather(self):
            return [1.0], [0.0], [False]
"""

ARRAYS = {
    "pool.py": POOL.replace("\n\n    class ListPool(BasePool):\n        def gather(self):\n            return [1.0], [0.0], [False]\n", "\n"),
    "rollout.py": """
        import torch
        from pool import ProcessPool

        pool = ProcessPool([])
        seen = pool.restart()
        for step in range(100):
            seen = torch.FloatTensor(seen)  #!
            after, gain, end = pool.run([0])
            g = torch.FloatTensor(gain)  #!
            m = torch.FloatTensor(1 - end)  #!
            seen = after

        looked = pool.restart()
        for step in range(100):
            looked = torch.FloatTensor(looked)
            if step % 7 == 0:
                continue
            later, _, _ = pool.run([0])
            looked = later
    """,
    "frames.py": """
        import numpy as np
        import torch


        def scaled(path):
            grid = np.load(path) * 0.5
            return torch.Tensor(grid)  #!


        def typed(path):
            return torch.Tensor(np.load(path).astype(np.float32))  #!


        def either(path):
            image = np.load(path)
            if image.dtype == np.uint8:
                image = image.astype(np.float32)
                image = image / 127.5 - 1.0
            elif image.dtype == np.float32:
                image = image * 2 - 1.0
            else:
                raise ValueError(path)
            return torch.Tensor(image)  #!


        def maybe_untouched(path):
            image = np.load(path)
            if image.dtype == np.uint8:
                image = image.astype(np.float32)
            elif image.dtype == np.float32:
                image = image * 2 - 1.0
            return torch.Tensor(image)  #!


        def archive(path):
            return torch.Tensor(np.load(path))  #!


        def keyed(path):
            return torch.Tensor(np.load(path).keys())
    """,
    "agents/a.py": """
        import torch


        class Memory:
            def store(self, seen, act):
                seen = torch.tensor(seen)
                act = torch.tensor(act)  #!
                return seen, act


        class Player:
            def __init__(self):
                self.memory = Memory()
                self.net = torch.nn.Linear(3, 2)

            def choose(self, seen):
                return torch.tanh(self.net(torch.as_tensor(seen))).detach().cpu().numpy()


        def play(player, seen):
            for t in range(10):
                act = player.choose(seen)
                player.memory.store(seen, act)


        play(Player(), [0.0, 1.0, 2.0])
    """,
    "agents/b.py": """
        import torch


        class Memory:
            def store(self, transition):
                return torch.tensor(transition[0])


        class Player:
            def __init__(self):
                self.memory = Memory()


        player = Player()
        player.memory.store(([0.0], [1.0]))
    """,
}


def test_arrays_through_objects(tmp_path):
    """An inherited ``run`` returns its subclass's ``gather`` (a base that only raises or
    passes gives nothing); a loop that overwrites ``seen`` with the next array never hands
    its tensor to the next step (but one with a ``continue`` may); ``np.load`` after
    arithmetic or ``.astype`` is an array, plain ``np.load`` handed to the constructor is one
    too (an archive would make it raise), and an
    ``if``/``elif`` whose ``else`` raises rebinds it on every path (without the ``else``,
    the untouched load may reach the read: an array there too, as the constructor takes it); ``store``'s
    callers on another script's ``Memory`` class do not count."""
    assert _findings(tmp_path, ARRAYS, "TPF401") == _marked(ARRAYS)


def test_a_subclass_that_returns_lists_leaves_the_base_unknown(tmp_path):
    """``run`` read for an object that may be either subclass: ``ListPool.gather`` returns
    lists, so the join is unknown and nothing is reported."""
    files = {
        "pool.py": POOL,
        "rollout.py": """
            import torch
            from pool import BasePool


            def roll(pool: BasePool):
                after, gain, end = pool.run([0])
                return torch.FloatTensor(gain)


            def main(pool):
                return roll(pool)
        """,
    }
    assert _findings(tmp_path, files, "TPF401") == []


# -- 3. a tensor moved where another one is ----------------------------------------------------
MOVES = {
    "heads.py": """
        import torch
        from torch.autograd import Variable


        def pick(out, y):
            rows = Variable(torch.LongTensor(range(out.size(0))))
            if y.is_cuda:
                rows = rows.cuda()  #!
            return out[rows, y]


        def onehot(scores, label):
            hot = torch.zeros(scores.size())
            hot = hot.cuda() if scores.is_cuda else hot  #!
            hot.scatter_(1, label.view(-1, 1), 1)
            return hot


        def used_between(out, y):
            rows = torch.arange(out.size(0))
            print(rows.sum())
            if y.is_cuda:
                rows = rows.cuda()
            return rows


        def read_before_in_if(out, y):
            rows = torch.arange(out.size(0))
            if y.is_cuda:
                print(rows)
                rows = rows.cuda()
            return rows


        def other_arm(out, y):
            rows = torch.arange(out.size(0))
            if y.is_cuda:
                rows = rows.cuda()
            else:
                rows = rows + 1
            return rows


        def in_elif(out, y, flag):
            rows = torch.arange(out.size(0))
            if flag:
                print(rows)
            elif y.is_cuda:
                rows = rows.cuda()
            return rows


        def flag_test(out, use_gpu):
            rows = torch.arange(out.size(0))
            if use_gpu:
                rows = rows.cuda()  #!
            return rows


        def flag_expr(scores, use_gpu):
            hot = torch.zeros(scores.size())
            hot = hot.cuda() if use_gpu else hot  #!
            return hot


        def identity(trans):
            ident = torch.eye(trans.size(1))[None, :, :]
            if trans.is_cuda:
                ident = ident.cuda()  #!
            return ident


        def gathered(trans, idx):
            ident = torch.eye(trans.size(1))[idx]
            if trans.is_cuda:
                ident = ident.cuda()
            return ident


        def kept_otherwise(scores):
            hot = torch.zeros(scores.size())
            hot = hot.cuda() if scores.is_cuda else hot + 1
            return hot
    """,
}


def test_moves_that_follow_another_tensor(tmp_path):
    """``if y.is_cuda: z = z.cuda()`` right after ``z``'s factory, and ``z.cuda() if
    x.is_cuda else z``, are reported (without a fix), also through basic indexing (``[None,
    :, :]``, a view), and so are the same moves under a flag named for the GPU (``use_gpu``:
    ``test_tpf402_flags_casts``); a use in between, an ``else`` or an ``elif`` that may read
    it, or an index by another tensor, stay silent."""
    assert _findings(tmp_path, MOVES, "TPF402") == _marked(MOVES)


def test_conditional_moves_carry_no_fix(tmp_path):
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF402"]\n', **MOVES})
    settings = load_settings([tmp_path])
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), settings, jobs=1)
    found = [d for result in results for d in result.diagnostics if d.code == "TPF402"]
    assert len(found) == 5 and all(d.fix is None for d in found)


def _scope_of(source: str):
    import ast

    from pytorch_perflint.project.scopes import build_scope

    tree = ast.parse(textwrap.dedent(source))
    return build_scope(tree.body[0], {}, "m.py", "f")


def _bound_lines(answer) -> List[int]:
    status, value, line = answer
    assert status == "value"
    return sorted(at for _, at in value.forms) if hasattr(value, "forms") else [line]


def test_the_other_arm_of_an_if_reaches_only_round_a_loop():
    """A binding in an ``if``'s body does not reach a read in its ``else``, but round a loop
    it does (the next step may take the other arm)."""
    straight = _scope_of(
        """
        def f(c):
            x = 1
            if c:
                x = 2
            else:
                y = x
        """
    )
    assert _bound_lines(straight.value_at("x", 7)) == [3]
    looped = _scope_of(
        """
        def f(c):
            x = 1
            for i in range(3):
                if c:
                    x = 2
                else:
                    y = x
        """
    )
    assert _bound_lines(looped.value_at("x", 8)) == [3, 6]


def test_the_other_arm_of_an_if_reaches_no_read_when_earlier_bindings_are_in_arms_too():
    """``x`` bound in both arms of one ``if``, then rebound in the body of a second one: a
    read in the second one's ``else`` sees the first ``if``'s arms only (review-10's
    wavenet collate function: ``torch.FloatTensor(y)`` after ``y = torch.LongTensor(y)``
    in the other arm); round a loop the other arm reaches it again."""
    straight = _scope_of(
        """
        def f(c):
            if c:
                x = 1
            else:
                x = 2
            if c:
                x = 3
            else:
                y = x
        """
    )
    assert _bound_lines(straight.value_at("x", 10)) == [4, 6]
    looped = _scope_of(
        """
        def f(c):
            for i in range(3):
                if c:
                    x = 1
                else:
                    x = 2
                if c:
                    x = 3
                else:
                    y = x
        """
    )
    assert _bound_lines(looped.value_at("x", 11)) == [5, 7, 9]


def test_an_if_whose_arms_all_rebind_or_raise_hides_the_first_binding():
    scope = _scope_of(
        """
        def f(c, d):
            x = 1
            if c:
                x = 2
            elif d:
                x = 3
            else:
                raise ValueError(c)
            y = x
            if c:
                x = 4
            elif d:
                x = 5
            z = x
        """
    )
    assert _bound_lines(scope.value_at("x", 10)) == [5, 7]
    assert _bound_lines(scope.value_at("x", 15)) == [5, 7, 12, 14]


# -- 4. an import read before a later loop rebinds its name --------------------------------
SHADOWED = {
    "prep/__init__.py": "",
    "prep/frames.py": """
        from torch.utils import data


        class Frames(data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                return i


        if __name__ == "__main__":
            preview = data.DataLoader(Frames(), batch_size=4)  #! TPF101
            for i, data in enumerate(preview):
                print(data)
    """,
    "train.py": """
        import torch
        from torch.utils import data
        from prep.frames import Frames


        class Options(object):
            workers = 2


        if __name__ == "__main__":
            opt = Options()
            device = torch.device("cuda")
            loader = data.DataLoader(Frames(), batch_size=4, num_workers=opt.workers)  #! TPF102 TPF103
            for epoch in range(3):
                again = data.DataLoader(Frames(), batch_size=4, num_workers=2)
                for step, data in enumerate(loader):
                    data = data.to(device)
            later = data.DataLoader(Frames(), batch_size=4, num_workers=2)
    """,
    # An entry script whose own code selects nothing, importing a module that does: its
    # `__main__` block is the program, and shares the imported module's accelerator.
    "gpu_helpers.py": """
        import torch

        def to_gpu(x):
            return x.cuda()
    """,
    "launch.py": """
        from torch.utils.data import DataLoader
        from gpu_helpers import to_gpu
        from prep.frames import Frames

        if __name__ == "__main__":
            loader = DataLoader(Frames(), batch_size=4, num_workers=2)  #! TPF102
            for batch in loader:
                to_gpu(batch)
    """,
}


def _marked_for(files: Mapping[str, str], code: str) -> List[Tuple[str, int]]:
    out = []
    for name, source in files.items():
        lines = textwrap.dedent(source).lstrip("\n").splitlines()
        out += [(name, row) for row, line in enumerate(lines, start=1) if MARK in line and code in line.split(MARK)[-1].split()]
    return sorted(out)


def test_an_import_holds_its_name_until_a_later_loop_rebinds_it(tmp_path):
    """``data.DataLoader`` read before ``for i, data in ...`` rebinds ``data`` is the loader;
    read inside a loop that rebinds it, or after, it may be a batch. A loader in the
    ``__main__`` preview of a module that selects no GPU itself is not asked to pin memory,
    though a CUDA script imports the module."""
    assert _findings(tmp_path / "a", SHADOWED, "TPF102") == _marked_for(SHADOWED, "TPF102")
    assert _findings(tmp_path / "b", SHADOWED, "TPF101") == _marked_for(SHADOWED, "TPF101")
    assert _findings(tmp_path / "c", SHADOWED, "TPF103") == _marked_for(SHADOWED, "TPF103")  # through the loop walk's own lookup


# -- 5. a legacy typed constructor bound to an attribute or a name ---------------------------
BOUND = {
    "solver.py": """
        import numpy as np
        import torch


        class Base(object):
            def __init__(self, gpu):
                self.Tensor = torch.cuda.FloatTensor if gpu else torch.FloatTensor
                self.Other = torch.FloatTensor if gpu else list


        class Solver(Base):
            def flip(self, v):
                arr = v.data.cpu().numpy()
                flipped = arr[:, ::-1].copy()
                out = self.Tensor(flipped)  #!
                same = self.Other(flipped)
                empty = self.Tensor()
                sized = self.Tensor(2, 3)
                return out, same, empty, sized


        Make = torch.FloatTensor


        def build():
            return Make(np.zeros(3))  #!
    """,
}


def test_a_typed_constructor_bound_to_an_attribute(tmp_path):
    """``self.Tensor = torch.cuda.FloatTensor if gpu else torch.FloatTensor`` then
    ``self.Tensor(array)`` copies the array (either way; no fix, since which one is not
    known); an attribute that may be something else, or a call with sizes, is not a copy."""
    assert _findings(tmp_path, BOUND, "TPF401") == _marked(BOUND)
    write_project(tmp_path, BOUND)
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    assert all(d.fix is None for result in results for d in result.diagnostics if d.code == "TPF401")


# -- 6. bindings that cover every path round a loop -----------------------------------------
COVERED = {
    "steps.py": """
        import numpy as np
        import torch


        def every_arm(a, b):
            for i in range(3):
                if a:
                    x = np.zeros(3)
                elif b:
                    x = np.ones(3)
                else:
                    x = np.full(3, 2.0)
                y = torch.tensor(x)  #!
                x = [1]
            return y


        def elif_without_else(a, b):
            for i in range(3):
                if a:
                    x = np.zeros(3)
                elif b:
                    x = np.ones(3)
                y = torch.tensor(x)
                x = [1]
            return y
    """,
}


def test_an_elif_without_else_does_not_cover_every_path(tmp_path):
    """Round a loop, bindings in every arm of an ``if``/``elif``/``else`` hide the later
    ``x = [1]`` from the read; without the ``else``, the list of the last step may reach it
    (a false positive on main)."""
    assert _findings(tmp_path, COVERED, "TPF401") == _marked(COVERED)
