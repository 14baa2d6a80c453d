"""Module summaries: what they hold, bad input, JSON and pickle, registered summarisers."""

from __future__ import annotations

import ast
import json
import pickle
import textwrap

import pytest

from pytorch_perflint.project import summarize
from pytorch_perflint.project.bodies import class_body, function_body, locate
from pytorch_perflint.project.codec import DecodeError, from_json, to_json
from pytorch_perflint.project.forms import Call, Dict, Either, Item, Lit, Ref, Seq, Unknown
from pytorch_perflint.project.summarizer import register_summarizer, registered_summarizers
from pytorch_perflint.project.summary import ImportRecord


def _dedent(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def _summary(code: str, **options):
    return summarize(None, _dedent(code), **options)


def _body(code: str, name: str):
    text = _dedent(code)
    summary = summarize(None, text)
    function = summary.function(name)
    node = locate(text, function.line, function.end_line, name, want_class=False)
    return function_body(node, dict(summary.aliases))


def test_imports_of_every_shape():
    summary = _summary(
        """
        import os
        import torch.nn as nn
        import a.b.c
        from . import sibling
        from ..pkg.mod import thing as other
        from models import *
        try:
            import apex
        except ImportError:
            apex = None

        def main():
            from utils import helper
        """
    )
    assert summary.imports == (
        ImportRecord("os", 0, None, None, 1),
        ImportRecord("torch.nn", 0, None, "nn", 2),
        ImportRecord("a.b.c", 0, None, None, 3),
        ImportRecord("", 1, "sibling", None, 4),
        ImportRecord("pkg.mod", 2, "thing", "other", 5),
        ImportRecord("models", 0, "*", None, 6),
        ImportRecord("apex", 0, None, None, 8),
        ImportRecord("utils", 0, "helper", None, 13, module_scope=False),
    )
    bound = [r.bound for r in summary.imports]
    assert bound == ["os", "nn", "a", "sibling", "other", "*", "apex", "helper"]
    assert summary.imports[5].star
    assert "apex" in summary.rebound  # an import with a fallback binding: not known
    aliases = dict(summary.aliases)
    assert aliases["nn"] == "torch.nn" and aliases["a"] == "a" and aliases["other"] == ".." + "pkg.mod.thing"
    assert "apex" not in aliases


def test_functions_parameters_decorators_and_training_calls():
    summary = _summary(
        """
        import torch
        from torch import nn

        @torch.no_grad()
        @staticmethod
        def evaluate(model, loader, /, limit=10, *args, device="cuda", scale=-1.5, cfg=CONFIG, **kw):
            pass

        def train_step(model, batch, optimizer, scaler):
            def closure():
                loss = model(batch).sum()
                loss.backward()
                return loss
            optimizer.step(closure)
            scaler.step(optimizer)
            self.opts[0].step()

        async def fetch():
            pass
        """
    )
    evaluate = summary.function("evaluate")
    assert [(p.name, p.kind, p.positional_only) for p in evaluate.params] == [
        ("model", "positional", True),
        ("loader", "positional", True),
        ("limit", "positional", False),
        ("args", "vararg", False),
        ("device", "keyword", False),
        ("scale", "keyword", False),
        ("cfg", "keyword", False),
        ("kw", "kwarg", False),
    ]
    assert evaluate.param("limit").default == Lit(10)
    assert evaluate.param("device").default == Lit("cuda")
    assert evaluate.param("scale").default == Lit(-1.5)
    assert evaluate.param("cfg").default == Ref("CONFIG")
    assert evaluate.param("model").default is None
    assert evaluate.decorators == (Call(Ref("torch.no_grad", "torch.no_grad")), Ref("staticmethod"))
    assert not evaluate.backward and evaluate.steps == ()
    step = summary.function("train_step")
    assert step.backward  # through the closure it defines
    assert [(s.receiver, s.args) for s in step.steps] == [("optimizer", 1), ("scaler", 1), ("self.opts", 0)]
    assert summary.function("fetch").is_async


def test_backward_in_comments_and_strings_does_not_count():
    summary = _summary(
        '''
        def describe():
            """Call loss.backward() then optimizer.step()."""
            # loss.backward()
            return "backward"
        '''
    )
    assert not summary.function("describe").backward and summary.function("describe").steps == ()


def test_what_a_function_returns():
    code = """
        import numpy as np
        from torch.utils.data import DataLoader

        def loaders(ds, workers):
            kwargs = {"num_workers": workers}
            kwargs.update({"pin_memory": True})
            train = DataLoader(ds, batch_size=32, pin_memory=True, **kwargs)
            return train, DataLoader(ds)

        def stats(path):
            arr = np.load(path)
            return arr.mean(axis=0)

        def device():
            return "cuda" if ok() else "cpu"

        def pick(models, arch):
            return models.__dict__[arch]()

        def numbers():
            yield 1
            return
        """
    body = _body(code, "loaders")
    train = Call(
        Ref("DataLoader", "torch.utils.data.DataLoader"),
        (Ref("ds"),),
        (("batch_size", Lit(32)), ("pin_memory", Lit(True))),
        dstar=(Ref("kwargs"),),
    )
    assert body.returns == (Seq("tuple", (Ref("train"), Call(Ref("DataLoader", "torch.utils.data.DataLoader"), (Ref("ds"),)))),)
    assert body.binding("train").form == train
    kwargs = body.binding("kwargs")  # read through train's ``**kwargs``
    assert kwargs.form == Dict(((Lit("num_workers"), Ref("workers")),)) and kwargs.mutated
    assert body.binding("ds") is None  # a parameter, not a binding
    assert train.callee == "torch.utils.data.DataLoader" and train.keyword("pin_memory") == Lit(True)
    stats = _body(code, "stats")
    assert stats.binding("arr").form == Call(Ref("np.load", "numpy.load"), (Ref("path"),))
    assert _body(code, "device").returns == (Either(Lit("cuda"), Lit("cpu")),)
    assert _body(code, "pick").returns == (Call(Item(Ref("models.__dict__"), Ref("arch"))),)
    numbers = _body(code, "numbers")
    assert numbers.is_generator and numbers.returns == (Lit(None),)


def test_a_local_bound_twice_is_not_followed():
    body = _body(
        """
        def make(flag):
            loader = A()
            if flag:
                loader = B()
            return loader
        """,
        "make",
    )
    assert body.returns == (Ref("loader"),) and body.bindings == ()


def test_classes_bases_methods_and_init_attributes():
    code = """
        import numpy as np
        import torch.nn as nn
        from .blocks import Block

        class Net(Block, nn.Module):
            scale = 2.0

            def __init__(self, cfg):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.mean = np.array([0.5, 0.5])
                self.step = 0
                self.a, self.b = cfg
                if cfg.big:
                    self.head = nn.Linear(8, 2)
                else:
                    self.head = nn.Identity()

            def forward(me, x):
                me.step += 1
                return me.head(me.conv(x))

            def reset(self):
                self.mean = None
        """
    text = _dedent(code)
    summary = summarize(None, text)
    net = summary.klass("Net")
    assert net.bases == (Ref("Block", ".blocks.Block"), Ref("nn.Module", "torch.nn.Module"))
    assert [m.name for m in net.methods] == ["__init__", "forward", "reset"]
    assert net.bindings[0].name == "scale" and net.bindings[0].form == Lit(2.0)
    node = locate(text, net.line, net.end_line, "Net", want_class=True)
    attributes = {a.name: a for a in class_body(node, dict(summary.aliases)).attributes}
    assert attributes["conv"].form == Call(Ref("nn.Conv2d", "torch.nn.Conv2d"), (Lit(3), Lit(8), Lit(3)))
    assert not attributes["conv"].rebound
    assert attributes["mean"].form == Call(Ref("np.array", "numpy.array"), (Seq("list", (Lit(0.5), Lit(0.5))),))
    assert attributes["mean"].rebound  # reset() assigns it again
    assert attributes["step"].rebound  # forward() changes it (through its own first parameter)
    assert attributes["a"].form == Unknown("unpack")
    assert attributes["head"].rebound  # two assignments in __init__


def test_module_bindings_rebound_mutated_and_exports():
    summary = _summary(
        """
        __all__ = ["Net", "make"]
        DEVICE = "cuda"
        LOADER = {"num_workers": 0}
        CFG = dict(batch_size=8)
        STATS = [1, 2]
        x = 1
        x = 2
        for item in range(3):
            pass

        def main():
            LOADER["num_workers"] = 4
            STATS.append(3)
            global counter
            counter = 1
        counter = 0
        """
    )
    names = {b.name: b for b in summary.bindings}
    assert names["DEVICE"].form == Lit("cuda") and not names["DEVICE"].mutated
    assert names["LOADER"].mutated and names["STATS"].mutated  # changed inside main()
    assert not names["CFG"].mutated
    assert names["item"].form == Unknown("for")
    assert "x" in summary.rebound and "x" not in names
    assert "counter" in summary.rebound  # also bound through ``global`` in main()
    assert summary.exports == ("Net", "make")


ACCELERATOR_SELECTIONS = [
    ("model.cuda()", ".cuda()"),
    ("x = x.cuda(non_blocking=True)", ".cuda()"),
    ('t.to(device="cuda:1")', "'cuda:1'"),
    ('device = torch.device("cuda")', "'cuda'"),
    ('t.to("mps")', "'mps'"),
    ('DEVICE = "xpu"', "'xpu'"),
    ("ok = torch.cuda.is_available()", "torch.cuda.is_available()"),
    ("ok = th.backends.mps.is_available()", "torch.backends.mps.is_available()"),
    ("dev = torch.accelerator.current_accelerator()", "torch.accelerator.current_accelerator()"),
    ("n = torch.accelerator.device_count()", "torch.accelerator.device_count()"),
    ('torch.set_default_device("cuda")', "'cuda'"),
    ("batch = batch.to(device, non_blocking=True)", "non_blocking="),
    ("scaler = torch.cuda.amp.GradScaler()", "torch.cuda.amp.GradScaler()"),
    ("scaler = torch.amp.GradScaler()", "torch.amp.GradScaler()"),
    ("with torch.autocast(device_type=dev.type):\n    pass", "torch.autocast()"),
    ("with autocast():\n    pass", "torch.cuda.amp.autocast()"),
    ("accelerator = Accelerator()", "accelerate.Accelerator()"),
    ('parser.add_argument("--device", default="cuda")', "'cuda'"),
    ('parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")', "torch.cuda.is_available()"),
    ('parser.add_argument("--device", default="cuda" if has_gpu else "cpu")', "'cuda'"),
    ('device = args.device or "cuda"', "'cuda'"),
    ('CONFIG = {"device": "cuda", "lr": 0.1}', "'cuda'"),
    ('def main(device="cuda"):\n    pass', "'cuda'"),
    ("def main():\n    import torch\n    return torch.cuda.is_available()", "torch.cuda.is_available()"),
]

PREAMBLE = "import torch\nimport torch as th\nfrom torch.cuda.amp import autocast\nfrom accelerate import Accelerator\n"


@pytest.mark.parametrize(("code", "what"), ACCELERATOR_SELECTIONS, ids=[c for c, _ in ACCELERATOR_SELECTIONS])
def test_each_way_of_selecting_an_accelerator(code, what):
    evidence = summarize(None, PREAMBLE + code + "\n").accelerator
    assert evidence is not None and evidence.what == what
    assert evidence.line >= 5


NOT_SELECTIONS = [
    "# model.cuda()",
    '"""Move the model with model.cuda() first; device="cuda" is the default."""',
    'x = "train on cuda when you can"',
    'if device == "cuda":\n    pass',
    'if args.device in ("cuda", "mps"):\n    pass',
    'parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])',
    'print(f"using {device}")',
    "ok = torch.cuda",
    "with torch.autocast(\"cpu\", dtype=torch.bfloat16):\n    pass",
    "scaler = torch.amp.GradScaler(device=\"cpu\")",
    "ok = other.is_available()",
    "t = torch.randn(3)",
    'name = cfg["cuda"]',
    'x = "cuda" in device_name',
]


@pytest.mark.parametrize("code", NOT_SELECTIONS)
def test_look_alikes_do_not_select_an_accelerator(code):
    assert summarize(None, PREAMBLE + code + "\n").accelerator is None


def test_a_shared_tree_gives_the_same_summary():
    code = textwrap.dedent(
        """
        import torch
        class Net(torch.nn.Module):
            def forward(self, x):
                return x.cuda()
        """
    )
    assert summarize(ast.parse(code), code) == summarize(None, code)


@pytest.mark.parametrize(
    "code",
    ["def broken(:\n    pass\n", "x = 1\x00\n", "x = (" * 300 + ")" * 300 + "\n", "x = " + "+".join(["a"] * 50000) + "\n"],
    ids=["syntax error", "null byte", "too nested", "too deep"],
)
def test_bad_input_gives_an_unknown_summary_not_an_error(code):
    summary = summarize(None, code)
    assert not summary.ok and summary.error
    assert summary.functions == () and summary.accelerator is None


def test_deep_expressions_that_parse_are_read_without_recursion():
    summary = summarize(None, "x = " + "+".join(["a.cuda()"] * 900) + "\n")
    assert summary.ok and summary.accelerator is not None


def test_summaries_round_trip_through_json_and_pickle():
    summary = _summary(
        """
        import torch.nn as nn
        __all__ = ["Net"]
        LOADER = {"num_workers": 0, **extra}
        class Net(nn.Module):
            def __init__(self, c=3, *, bias=True):
                self.conv = nn.Conv2d(c, 8, 3, bias=bias)
        def f(x=-2, y=(1, "a"), z=float("inf")):
            x.cuda()
        """
    )
    data = json.loads(json.dumps(to_json(summary)))
    assert from_json(data) == summary
    assert pickle.loads(pickle.dumps(summary)) == summary


@pytest.mark.parametrize(
    "data",
    [{"os.system": [1]}, {"Lit": []}, {"Lit": [1, 2]}, {"Ref": "x"}, {"Lit": [1], "Ref": ["x"]}, {"": [1]}, 3j],
    ids=["unknown class", "missing field", "extra field", "not a list", "two keys", "plain dict not a dict", "not json"],
)
def test_a_damaged_cache_value_is_a_decode_error(data):
    with pytest.raises(DecodeError):
        from_json(data)


def test_trailing_defaults_are_left_out_of_the_json():
    assert to_json(Ref("x")) == {"Ref": ["x"]}
    assert to_json(Call(Ref("f"), (Lit(1),))) == {"Call": [{"Ref": ["f"]}, [{"Lit": [1]}]]}
    assert to_json(Lit(None)) == {"Lit": [None]}  # a required field is always written
    assert from_json(to_json(Seq("list", (), False))) == Seq("list", ())
    assert json.dumps(to_json(Lit(0))) != json.dumps(to_json(Lit(False)))  # 0 and False stay apart
    assert from_json(json.loads(json.dumps(to_json(Lit(False))))).value is False


def test_registered_summarizers_add_their_values(monkeypatch):
    monkeypatch.setattr("pytorch_perflint.project.summarizer._SUMMARIZERS", {})

    def count_convs(tree, source):
        return {"convs": source.count("Conv2d"), "lines": [1, 2]}

    register_summarizer("layers.convs", count_convs)
    assert registered_summarizers() == (("layers.convs", count_convs),)
    summary = summarize(None, "a = nn.Conv2d(1, 2, 3)\nb = nn.Conv2d(2, 2, 3)\n")
    assert summary.extra("layers.convs") == {"convs": 2, "lines": [1, 2]}
    assert summary.extra("missing", "default") == "default"
    assert from_json(json.loads(json.dumps(to_json(summary)))).extra("layers.convs") == {"convs": 2, "lines": (1, 2)}
    # Summarisers can also be given per call (an index built for a test, say).
    assert summarize(None, "x = 1\n", summarizers=()).extras == ()


def test_a_summarizer_value_that_is_not_json_fails_loudly(monkeypatch):
    monkeypatch.setattr("pytorch_perflint.project.summarizer._SUMMARIZERS", {})
    register_summarizer("bad", lambda tree, source: {1: object()})
    with pytest.raises(TypeError):
        summarize(None, "x = 1\n")


def test_forms_stay_small():
    code = "x = f(" + ", ".join(str(i) for i in range(40)) + ", " + ", ".join(f"k{i}={i}" for i in range(40)) + ")\n"
    code += "y = [" + ", ".join(str(i) for i in range(40)) + "]\n"
    code += "z = a(b(c(d(e(f(g(1)))))))\n"
    code += "s = '" + "x" * 500 + "'\n"
    names = {b.name: b.form for b in summarize(None, code).bindings}
    call = names["x"]
    assert len(call.args) == 16 and call.star  # later positions are not known
    assert call.dstar == (Unknown("more keywords"),)  # so no keyword reads as absent
    assert len(names["y"].items) == 16 and names["y"].truncated
    deep, levels = names["z"], 0
    while isinstance(deep, Call):
        deep, levels = deep.args[0] if deep.args else deep.func, levels + 1
    assert deep == Unknown("deep") and levels < 7
    assert names["s"] == Unknown("long string")
