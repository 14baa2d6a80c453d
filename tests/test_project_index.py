"""The project index: names across modules, importers, laziness, stat keys, callers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from project_tree import index_of, write_project

from pytorch_perflint.project import ProjectIndex, stat_key
from pytorch_perflint.project.forms import Call, Lit, Ref
from pytorch_perflint.project.summary import ModuleSummary

PACKAGE = {
    "train.py": """
        import pkg.models.resnet as rn
        import pkg.models
        from pkg import Net, get_device, build as make
        from pkg.loaders import *
        from helpers import DataLoader, Alias
        """,
    "pkg/__init__.py": """
        from .models import Net
        from .utils import get_device
        from . import loaders
        build = Net
        """,
    "pkg/models/__init__.py": "from .resnet import ResNet as Net\n",
    "pkg/models/resnet.py": """
        import torch.nn as nn
        class ResNet(nn.Module):
            def __init__(self, depth=18, bias=True):
                super().__init__()
                self.conv = nn.Conv2d(3, 64, 7, bias=bias)
            def _make_layer(self, planes, stride=1):
                return nn.Sequential()
            def forward(self, x):
                return self.conv(x)
        def resnet18(**kw):
            return ResNet(18, **kw)
        """,
    "pkg/utils.py": """
        import torch
        def get_device():
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        """,
    "pkg/loaders.py": """
        __all__ = ["make_loader"]
        from torch.utils.data import DataLoader
        def make_loader(ds):
            return DataLoader(ds, pin_memory=True)
        def _private():
            pass
        """,
    "helpers.py": """
        from torch.utils.data import DataLoader
        from pkg.models import Net as Alias
        """,
}


@pytest.fixture
def project(tmp_path):
    return index_of(tmp_path, PACKAGE)


def _where(index: ProjectIndex, definition) -> str:
    return f"{definition.kind} {Path(definition.path).relative_to(index.root).as_posix()}:{definition.name}"


def test_names_resolve_through_imports_and_reexports(project):
    train = Path(project.root) / "train.py"
    assert _where(project, project.resolve(train, "Net")) == "class pkg/models/resnet.py:ResNet"
    assert _where(project, project.resolve(train, "make")) == "class pkg/models/resnet.py:ResNet"  # build = Net
    assert _where(project, project.resolve(train, "get_device")) == "function pkg/utils.py:get_device"
    assert _where(project, project.resolve(train, "rn.resnet18")) == "function pkg/models/resnet.py:resnet18"
    assert _where(project, project.resolve(train, "pkg.models.Net")) == "class pkg/models/resnet.py:ResNet"
    assert _where(project, project.resolve(train, "Net._make_layer")) == "method pkg/models/resnet.py:ResNet._make_layer"
    assert _where(project, project.resolve(train, "make_loader")) == "function pkg/loaders.py:make_loader"  # star import
    assert project.resolve(train, "_private") is None  # not exported by __all__
    assert _where(project, project.resolve(train, "Alias")) == "class pkg/models/resnet.py:ResNet"
    module = project.resolve(train, "rn")
    assert module.kind == "module" and module.path.endswith("resnet.py")


def test_external_names_keep_their_qualified_name(project):
    train = Path(project.root) / "train.py"
    external = project.resolve(train, "DataLoader")  # re-exported by a project module
    assert external.kind == "external" and external.qualname == "torch.utils.data.DataLoader"
    nn = project.resolve(Path(project.root) / "pkg/models/resnet.py", "nn.Conv2d")
    assert nn.kind == "external" and nn.qualname == "torch.nn.Conv2d"
    assert project.resolve(train, "nothing_here") is None


def test_import_cycles_and_depth_end(tmp_path):
    index = index_of(
        tmp_path,
        {
            "a.py": "from b import x\nfrom b import *\n",
            "b.py": "from a import x\nfrom a import *\n",
            "c.py": "from a import x, y\n",
            **{f"chain{i}.py": f"from chain{i + 1} import v\n" for i in range(40)},
            "chain40.py": "v = 1\n",
        },
    )
    assert index.resolve(tmp_path / "c.py", "x") is None
    assert index.resolve(tmp_path / "c.py", "y") is None
    assert index.resolve(tmp_path / "chain35.py", "v").kind == "binding"
    assert index.resolve(tmp_path / "chain0.py", "v") is None  # deeper than the limit: unknown
    assert index.importers(tmp_path / "a.py") == {str(tmp_path / "b.py"), str(tmp_path / "c.py")}


def test_rebound_and_unparsable_modules_are_unknown(tmp_path):
    index = index_of(
        tmp_path,
        {
            "train.py": "from model import Net, make\nfrom broken import thing\n",
            "model.py": "try:\n    from fast import Net\nexcept ImportError:\n    Net = None\ndef make(): pass\ndef make(): pass\n",
            "broken.py": "def thing(:\n",
        },
    )
    train = tmp_path / "train.py"
    assert index.resolve(train, "Net") is None
    assert index.resolve(train, "make") is None
    assert index.resolve(train, "thing") is None
    assert not index.summary(tmp_path / "broken.py").ok


def test_imported_modules_and_importers(project):
    root = Path(project.root)
    imported = {Path(p).relative_to(root).as_posix() for p in project.imported_modules(root / "train.py")}
    assert imported == {"pkg/models/resnet.py", "pkg/models/__init__.py", "pkg/__init__.py", "pkg/loaders.py", "helpers.py"}
    importers = {Path(p).relative_to(root).as_posix() for p in project.importers(root / "pkg/utils.py")}
    assert importers == {"pkg/__init__.py", "train.py"}
    assert project.importers(root / "train.py") == frozenset()


def test_function_level_imports_are_edges(tmp_path):
    index = index_of(tmp_path, {"main.py": "def run():\n    from worker import go\n    go()\n", "worker.py": "def go(): pass\n"})
    assert index.imported_modules(tmp_path / "main.py") == {str(tmp_path / "worker.py")}


def test_modules_are_read_only_when_reached(project):
    root = Path(project.root)
    project.summary(root / "train.py")
    assert set(project.entries()) == {str(root / "train.py")}
    project.resolve(root / "train.py", "get_device")
    read = {Path(p).relative_to(root).as_posix() for p in project.entries()}
    assert read == {"train.py", "pkg/__init__.py", "pkg/utils.py"}


def test_summaries_are_kept_until_the_file_changes(tmp_path):
    index = index_of(tmp_path, {"model.py": "import torch\nclass Net(torch.nn.Module):\n    pass\n"})
    path = tmp_path / "model.py"
    first = index.summary(path)
    assert index.summary(path) is first
    path.write_text("import torch\nclass Other(torch.nn.Module):\n    pass\n\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    second = index.summary(path)
    assert second is not first and second.klass("Other") is not None and second.klass("Net") is None
    key, kept = index.entries()[str(path)]
    assert key == stat_key(str(path)) and kept is second


def test_summaries_handed_in_by_a_cache_are_used_while_the_stat_key_matches(tmp_path):
    index = index_of(tmp_path, {"model.py": "x = 1\n"}, summarizers=(("k", lambda tree, source: 1),))
    path = tmp_path / "model.py"
    cached = ModuleSummary(ok=True, rebound=("from-the-cache",), extras=(("k", 1),))
    assert index.add(path, stat_key(str(path)), cached)
    assert index.summary(path) is cached
    assert index.add(path, (0, 0, 0), cached)  # a stale key: the file is read again
    assert index.summary(path).rebound == () and index.summary(path).extra("k") == 1
    other = ModuleSummary(ok=True, extras=(("other", 1),))  # built with other summarisers
    assert not index.add(path, stat_key(str(path)), other)
    assert index.summary(path) is not other


def test_text_in_memory_wins_over_the_file(tmp_path):
    index = index_of(tmp_path, {"train.py": "from model import Net\n", "model.py": "class Net: pass\n"})
    train = tmp_path / "train.py"
    assert index.resolve(train, "Net").kind == "class"
    index.summary(train, source="from model import Other\n")
    assert index.resolve(train, "Net") is None
    assert index.text(train) == "from model import Other\n"


def test_reading_a_project_never_runs_it(tmp_path):
    marker = tmp_path / "ran"
    payload = f"open({str(marker)!r}, 'w').write('x')\nimport os\nos.system('touch {marker}')\n"
    index = index_of(tmp_path, {"train.py": "import evil\nfrom evil import thing\n", "evil.py": payload + "def thing(): pass\n"})
    train = tmp_path / "train.py"
    index.resolve(train, "thing")
    index.runs_on_accelerator(train)
    index.callers(index.resolve(train, "thing"))
    assert not marker.exists()


def test_odd_files_are_unknown_not_errors(tmp_path):
    index = index_of(
        tmp_path,
        {"train.py": "from big import x\nfrom latin import y\nfrom garbage import z\n", "big.py": "x = 1\n" * 100},
        max_bytes=200,
    )
    (tmp_path / "latin.py").write_bytes("# -*- coding: latin-1 -*-\ny = 'caf\xe9'\ndef y2(): pass\n".encode("latin-1"))
    (tmp_path / "garbage.py").write_bytes(b"z = '\xff\xfe\xfa'\n")
    index = ProjectIndex(tmp_path, max_bytes=200)
    big = index.summary(tmp_path / "big.py")
    assert not big.ok and "larger than" in big.error
    assert index.summary(tmp_path / "latin.py").function("y2") is not None
    garbage = index.summary(tmp_path / "garbage.py")
    assert not garbage.ok and "decode" in garbage.error
    assert index.resolve(tmp_path / "train.py", "x") is None
    assert index.summary(tmp_path / "missing.py").error == "cannot stat"


def test_function_and_class_bodies_are_read_on_demand(project):
    train = Path(project.root) / "train.py"
    make_loader = project.resolve(train, "make_loader")
    body = project.function_body(make_loader)
    assert body.returns == (Call(Ref("DataLoader", "torch.utils.data.DataLoader"), (Ref("ds"),), (("pin_memory", Lit(True)),)),)
    assert project.function_body(make_loader) is body  # kept
    method = project.resolve(train, "Net._make_layer")
    assert project.function_body(method).returns == (Call(Ref("nn.Sequential", "torch.nn.Sequential")),)
    net = project.resolve(train, "Net")
    attributes = project.class_body(net).attributes
    assert [(a.name, a.form.callee) for a in attributes] == [("conv", "torch.nn.Conv2d")]
    assert project.is_nn_module(net) and project.external_bases(net) == {"torch.nn.Module"}
    assert project.function_body(project.resolve(train, "get_device")).returns[0].callee == "torch.device"


def test_bodies_of_methods_indented_with_tabs_and_after_edits(tmp_path):
    index = index_of(tmp_path, {"m.py": "class A:\n\tdef f(self):\n\t\treturn 1\n"})
    method = index.resolve(tmp_path / "m.py", "A.f")
    assert index.function_body(method).returns == (Lit(1),)
    (tmp_path / "m.py").write_text("class A:\n\tdef f(self):\n\t\treturn 2\n\n")
    method = index.resolve(tmp_path / "m.py", "A.f")
    assert index.function_body(method).returns == (Lit(2),)


def test_subclasses_through_project_bases(tmp_path):
    index = index_of(
        tmp_path,
        {
            "base.py": "import torch.nn as nn\nclass Base(nn.Sequential):\n    pass\nclass Plain:\n    pass\n",
            "model.py": "from base import Base, Plain\nclass Net(Base):\n    pass\nclass Data(Plain):\n    pass\n",
        },
    )
    model = tmp_path / "model.py"
    assert index.is_nn_module(index.resolve(model, "Net"))
    assert not index.is_nn_module(index.resolve(model, "Data"))


CALLERS = {
    "layers.py": """
        import torch.nn as nn
        def conv_bn(c_in, c_out, stride=1, bias=True):
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, bias=bias), nn.BatchNorm2d(c_out))
        def conv_relu(c, bias=True):
            return nn.Conv2d(c, c, 3, bias=bias)
        def spread(c, bias=True):
            return nn.Conv2d(c, c, 3, bias=bias)
        def escapes(c, bias=True):
            return nn.Conv2d(c, c, 3, bias=bias)
        class Block(nn.Module):
            def __init__(self, c, bias=True):
                super().__init__()
                self.conv = conv_bn(c, c, 2)
            def _make(self, n, bias=True):
                return n
            def build(self, bias=True):
                return self._make(2)
        class Deeper(Block):
            def __init__(self, c):
                super().__init__(c)
        class Passes(Block):
            pass
        """,
    "net.py": """
        import layers
        from functools import partial
        from layers import conv_relu, Deeper, Passes
        a = layers.conv_bn(3, 8)
        b = conv_relu(8, bias=False)
        c = layers.spread(8, **extra)
        d = partial(layers.escapes, 3)
        e = Deeper(3)
        """,
}


def test_callers_and_defaults_nobody_passes(tmp_path):
    index = index_of(tmp_path, CALLERS)
    layers = tmp_path / "layers.py"

    def find(name):
        return index.resolve(layers, name)

    sites = index.callers(find("conv_bn"))
    assert sorted((Path(p).name, s.callee, s.positional) for p, s in sites) == [("layers.py", "conv_bn", 3), ("net.py", "layers.conv_bn", 2)]
    assert index.never_passed(find("conv_bn"), "bias")
    assert not index.never_passed(find("conv_bn"), "stride")  # passed by position in layers.py
    assert not index.never_passed(find("conv_relu"), "bias")  # passed by keyword
    assert not index.never_passed(find("spread"), "bias")  # **extra may pass it
    assert index.callers(find("escapes")) is None and not index.never_passed(find("escapes"), "bias")
    assert index.never_passed(find("Block._make"), "bias")  # private: called through self only
    assert index.callers(find("Block.build")) is None  # public methods are called on objects
    assert not index.never_passed(find("conv_bn"), "missing")


def test_class_callers_include_subclasses(tmp_path):
    index = index_of(tmp_path, {**CALLERS, "more.py": "from layers import Passes\np = Passes(4, bias=False)\n"})
    block = index.resolve(tmp_path / "layers.py", "Block")
    callees = sorted(s.callee for _, s in index.callers(block))
    assert callees == ["Passes", "super().__init__"]
    assert not index.never_passed(block, "bias")  # Passes(4, bias=False) runs Block.__init__
    index = index_of(tmp_path / "second", CALLERS)
    assert index.never_passed(index.resolve(tmp_path / "second" / "layers.py", "Block"), "bias")


def test_callers_are_unknown_for_unresolved_star_imports_and_library_named_modules(tmp_path):
    index = index_of(
        tmp_path,
        {
            "ops.py": "def conv(c, bias=True):\n    return c\n",
            "main.py": "from ops import *\nconv(3)\n",
            # A library's star import first: this `conv` may be the library's.
            "other.py": "from mystery_lib import *\nfrom ops import *\nconv(4)\n",
            "scripts/profile.py": "def run(x, fast=True):\n    return x\n",
        },
    )
    assert index.callers(index.resolve(tmp_path / "ops.py", "conv")) is None
    assert index.callers(index.resolve(tmp_path / "scripts" / "profile.py", "run")) is None


def test_callers_through_star_imports_are_read_when_every_use_resolves(tmp_path):
    index = index_of(
        tmp_path,
        {
            "ops.py": "def conv(c, bias=True):\n    return c\n",
            "main.py": "from ops import *\nconv(3)\n",
            "lib.py": "from ops import *\ndef conv2(x):\n    return conv(x, bias=False)\n",
        },
    )
    sites = index.callers(index.resolve(tmp_path / "ops.py", "conv"))
    assert sorted((Path(path).name, site.line) for path, site in sites) == [("lib.py", 3), ("main.py", 2)]


def test_decorated_functions_and_dataclasses_have_no_known_defaults(tmp_path):
    index = index_of(
        tmp_path,
        {
            "m.py": """
                import functools
                from dataclasses import dataclass
                def wrap(f):
                    return f
                @wrap
                def conv(c, bias=True):
                    return c
                @functools.lru_cache
                def cached(c, bias=True):
                    return c
                @dataclass
                class Config:
                    def __init__(self, bias=True):
                        pass
                """
        },
    )
    m = tmp_path / "m.py"
    assert not index.never_passed(index.resolve(m, "conv"), "bias")
    assert index.never_passed(index.resolve(m, "cached"), "bias")
    assert not index.never_passed(index.resolve(m, "Config"), "bias")


def test_call_sites_record_context(tmp_path):
    index = index_of(
        tmp_path,
        {
            "m.py": """
                import torch
                def evaluate(model, data):
                    return [model(x) for x in data]
                def run(model, loaders):
                    with torch.no_grad():
                        evaluate(model, loaders[0])
                    for loader in loaders:
                        evaluate(model, loader)
                    results = [evaluate(model, l) for l in evaluate(model, loaders)]
                    check = isinstance(model, Net)
                def annotated(x: "Net") -> evaluate:
                    pass
                class Net(torch.nn.Module):
                    pass
                """
        },
    )
    sites = [(s.line, s.caller, s.contexts, s.in_loop) for _, s in index.callers(index.resolve(tmp_path / "m.py", "evaluate"))]
    assert sites == [(6, "run", ("torch.no_grad",), False), (8, "run", (), True), (9, "run", (), True), (9, "run", (), False)]
    assert index.callers(index.resolve(tmp_path / "m.py", "Net")) == ()  # isinstance and annotations are not uses


def test_paths_outside_the_discovered_files_are_still_summarised(tmp_path):
    write_project(tmp_path, {"model.py": "import torch\nx = torch.zeros(1).cuda()\n", "train.py": "import model\n"})
    index = ProjectIndex(tmp_path, files=[str(tmp_path / "train.py")])
    assert index.summary(tmp_path / "model.py").accelerator is not None
    assert index.resolve(tmp_path / "train.py", "model").kind == "external"  # not a project module
    assert not index.runs_on_accelerator(tmp_path / "train.py")


def test_method_calls_on_any_receiver(tmp_path):
    index = index_of(
        tmp_path,
        {
            "trainer.py": "class Trainer:\n    def train_step(self, batch):\n        return batch\n",
            "train.py": """
                from trainer import Trainer
                trainer = Trainer()
                for batch in loader:
                    trainer.train_step(batch)
                agents[0].train_step(1, fast=True)
                step = trainer.train_step  # not a call
                """,
            "notes.py": "# trainer.train_step(batch) in a comment\n",
        },
    )
    sites = [(Path(p).name, s.callee, s.in_loop, s.positional, s.keywords) for p, s in index.method_calls("train_step")]
    assert sites == [("train.py", "trainer.train_step", True, 1, ()), ("train.py", "?.train_step", False, 1, ("fast",))]


def test_the_values_a_parameter_gets_from_its_callers(tmp_path):
    index = index_of(
        tmp_path,
        {
            "blocks.py": """
                def conv(c, bias=True):
                    return c
                def conv_true(c, bias=True):
                    return c
                def conv_unknown(c, bias=True):
                    return c
                def unused(c, bias=True):
                    return c
                """,
            "net.py": """
                from blocks import conv, conv_true, conv_unknown
                a = conv(3)
                b = conv(3, False)
                c = conv(3, bias=FLAG)
                d = conv_true(3, bias=True)
                e = conv_true(4)
                f = conv_unknown(3, *rest)
                """,
        },
    )

    def values(name):
        return index.argument_values(index.resolve(tmp_path / "blocks.py", name), "bias")

    assert values("conv") == (Lit(True), Lit(False), Ref("FLAG"))
    assert values("conv_true") == (Lit(True), Lit(True))  # no caller sets it false
    assert values("conv_unknown") is None
    assert values("unused") == (Lit(True),)
    assert index.argument_values(index.resolve(tmp_path / "blocks.py", "conv"), "missing") is None


def test_recording_what_answers_depended_on(project):
    from pytorch_perflint.project.index import ALL_FILES

    root = Path(project.root)
    for _ in range(2):  # a remembered answer still names what it read
        with project.recording() as used:
            project.resolve(root / "train.py", "get_device")
        assert {Path(p).relative_to(root).as_posix() for p in used} == {"train.py", "pkg/__init__.py", "pkg/utils.py"}
    with project.recording() as used:
        project.runs_on_accelerator(root / "pkg/utils.py")  # selects one itself: nothing else read
    assert used == {str(root / "pkg/utils.py")}
    with project.recording() as used:
        project.runs_on_accelerator(root / "helpers.py")
    assert ALL_FILES in used


def test_nested_recordings_each_see_what_was_read_inside_them(project):
    root = Path(project.root)
    with project.recording() as outer:
        with project.recording() as inner:
            pass  # nothing read: equal to the outer set so far
        project.summary(root / "helpers.py")
    assert inner == set() and outer == {str(root / "helpers.py")}


def test_recordings_on_other_threads_neither_lose_nor_take_reads(project):
    """The language server lints on several threads over one index: one lint's ``unnoted``
    block must not hide another's reads (a result cached without a dependency goes stale),
    and one lint's reads are not another's dependencies."""
    root = Path(project.root)
    recording, hidden, read = threading.Event(), threading.Event(), threading.Event()
    other: set = set()

    def other_lint() -> None:
        recording.wait(5)
        with project.recording() as used:
            with project.unnoted():
                hidden.set()
                read.wait(5)
        other.update(used)

    thread = threading.Thread(target=other_lint)
    thread.start()
    with project.recording() as mine:
        recording.set()
        hidden.wait(5)  # the other thread is inside its unnoted block now
        project.summary(root / "helpers.py")
        read.set()
    thread.join(5)
    assert mine == {str(root / "helpers.py")}
    assert other == set()


def test_a_linted_text_equal_to_the_file_keeps_the_import_graph(project):
    root = Path(project.root)
    graph = project.import_graph()
    train = root / "train.py"
    project.summary(train, source=train.read_text())  # the engine hands in the file's own text
    assert project.import_graph() is graph
    project.summary(train, source=train.read_text() + "\nx = 1\n")  # new binding, same imports
    assert project.import_graph() is graph
    project.summary(train, source="import helpers\n")  # other imports: the graph is rebuilt
    assert project.import_graph() is not graph
    assert project.imported_modules(train) == {str(root / "helpers.py")}


def test_uses_through_star_imports_depend_only_on_the_texts_that_spell_the_name(tmp_path):
    """``star_uses`` reads the texts of the modules that spell the name, noted with the word,
    not every module's text: a comment in a module every other imports (the issue-25 comment
    edit) must leave a cached answer that asked it valid."""
    from pytorch_perflint.project.index import TEXT_OF, TEXTS_NAMING

    index = index_of(tmp_path, {
        "helpers.py": "def evaluate(model, loader):\n    return [model(x) for x in loader]\n",
        "knobs.py": "DEVICE = 'cuda'\n",
        "main.py": "import knobs\nfrom helpers import *\n\nevaluate(net, data)\n",
        "other.py": "import knobs\nfrom helpers import *\n\nprint(knobs.DEVICE)\n",
    })
    with index.recording() as used:
        found = index.star_uses("evaluate", os.path.abspath(tmp_path / "helpers.py"))
    assert [os.path.basename(path) for path, _ in found] == ["main.py"]
    texts = {os.path.basename(u[len(TEXT_OF):]) for u in used if u.startswith(TEXT_OF)}
    assert texts == {"main.py"}  # not knobs.py, not other.py: they do not spell the name
    assert TEXTS_NAMING + "evaluate" in used
