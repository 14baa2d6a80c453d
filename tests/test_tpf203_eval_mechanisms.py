"""TPF203 mechanisms taught from review-6's misses, each on a scratch project with its
look-alikes: an argument that says it needs no gradient (``requires_grad=False``) is no
reason to think the loop trains; a ``test_*`` function that the program calls itself is
evaluation code, not a pytest test; a helper's model parameter is evaluated when its
callers pass on a parameter of their own that their callers put in eval mode."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

# --- requires_grad=False -----------------------------------------------------------------
KEYWORDS = {
    "score.py": """
        import torch
        from torch.autograd import Variable

        def run_scoring(net, batches):
            net.eval()
            hits = []
            for batch in batches:  #!
                feats = Variable(batch["x"].float(), requires_grad=False).cuda()
                hits.append(net(feats).argmax(1))
            return hits

        def attack(net, batches):
            net.eval()
            for batch in batches:
                feats = Variable(batch["x"].float(), requires_grad=True).cuda()
                net(feats).sum().backward()

        def probe(net, batches, flag):
            net.eval()
            for batch in batches:
                feats = batch["x"].cuda().requires_grad_(flag)
                net(feats)
    """,
}

# --- a test_* function the program calls -------------------------------------------------
CALLED_TESTS = {
    "agent.py": """
        import torch
        import torch.nn as nn

        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 2)

            def forward(self, x):
                return self.body(x)

        world = make_world()
        model = Policy().cuda()

        def test_policy(render=False):
            obs = world.reset()
            done = False
            score = 0
            while not done:  #!
                logits = model(torch.as_tensor(obs).cuda())
                obs, reward, done = world.step(logits.argmax().item())
                score += reward
            return score

        def test_forward_shape():
            for size in (1, 2):
                model(torch.zeros(size, 4))

        scores = [test_policy() for _ in range(5)]
    """,
}

# --- a model handed on through a caller's own parameter ------------------------------------
CHAINED = {
    "features.py": """
        import torch

        def embed_all(model, paths):
            out = []
            for path in paths:  #!
                out.append(model(load(path)))
            return out

        def match_pairs(model, paths, pairs):
            feats = embed_all(model, paths)
            return score(feats, pairs)
    """,
    "train.py": """
        import torch
        from features import match_pairs

        def main(net, paths, pairs, loader, opt):
            for epoch in range(3):
                net.train()
                for x, y in loader:
                    loss = net(x).sum()
                    loss.backward()
                    opt.step()
                net.eval()
                acc = match_pairs(net, paths, pairs)
    """,
    "report.py": """
        import torch
        from features import match_pairs

        if __name__ == "__main__":
            net = build().cuda()
            net.eval()
            match_pairs(net, list_paths(), list_pairs())
    """,
}

CHAINED_LOOKALIKES = {
    "features.py": CHAINED["features.py"],
    "train.py": CHAINED["train.py"],
    # One caller hands the model on in train mode: not every caller evaluates.
    "finetune.py": """
        import torch
        from features import match_pairs

        def tune(net, paths, pairs):
            net.train()
            return match_pairs(net, paths, pairs)
    """,
}

CHAINED_NO_GRAD = {
    "features.py": CHAINED["features.py"],
    "report.py": """
        import torch
        from features import match_pairs

        def run(net, paths, pairs):
            net.eval()
            with torch.no_grad():
                return match_pairs(net, paths, pairs)
    """,
}


def test_requires_grad_false_does_not_make_an_evaluation_loop_train(tmp_path: Path):
    # `requires_grad=True` then backward, and `requires_grad_(flag)`, still need gradients.
    assert _findings(tmp_path, KEYWORDS, "TPF203") == _marked(KEYWORDS)


def test_a_test_function_the_program_calls_is_evaluation(tmp_path: Path):
    # `test_forward_shape` is never called: a pytest test, silent.
    assert _findings(tmp_path, CALLED_TESTS, "TPF203") == _marked(CALLED_TESTS)


def test_a_model_handed_on_through_a_callers_parameter_is_evaluated(tmp_path: Path):
    assert _findings(tmp_path, CHAINED, "TPF203") == _marked(CHAINED)


def test_a_chain_with_a_caller_in_train_mode_or_under_no_grad_stays_silent(tmp_path: Path):
    assert _findings(tmp_path / "train", CHAINED_LOOKALIKES, "TPF203") == []
    assert _findings(tmp_path / "nograd", CHAINED_NO_GRAD, "TPF203") == []


# --- callers that reach a helper through a star import --------------------------------------
_STAR_HELPERS = """
    import torch

    def score_all(net, items):
        out = []
        for item in items:  #!
            out.append(net(item))
        return out
"""
STARRED = {
    "helpers.py": _STAR_HELPERS,
    "main.py": """
        import torch
        from helpers import *

        if __name__ == "__main__":
            net = build().cuda()
            net.eval()
            score_all(net, load_items())
    """,
}
STARRED_LOOKALIKES = {
    "helpers.py": _STAR_HELPERS.replace("  #!", ""),
    "main.py": STARRED["main.py"],
    # A second star-importing module calls it in train mode: not every caller evaluates.
    "tune.py": """
        from helpers import *

        def tune(net, items):
            net.train()
            return score_all(net, items)
    """,
}
STARRED_UNKNOWN = {
    "helpers.py": _STAR_HELPERS.replace("  #!", ""),
    "main.py": STARRED["main.py"],
    # A library's star import first: which `score_all` this module calls is not known.
    "other.py": """
        from mystery_lib import *
        from helpers import *

        def run(net, items):
            return score_all(net, items)
    """,
}


def test_callers_through_a_star_import_are_read(tmp_path: Path):
    assert _findings(tmp_path, STARRED, "TPF203") == _marked(STARRED)


def test_star_import_callers_in_train_mode_or_unresolved_stay_silent(tmp_path: Path):
    assert _findings(tmp_path / "train", STARRED_LOOKALIKES, "TPF203") == []
    assert _findings(tmp_path / "unknown", STARRED_UNKNOWN, "TPF203") == []
