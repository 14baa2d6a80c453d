"""RULES.md's "runs on an accelerator" across a project, and the ``accelerator`` setting."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from project_tree import index_of, write_project

from pytorch_perflint.config import ConfigError, Settings, load_settings
from pytorch_perflint.project.accelerator import sharing_modules

GPU_REPO = {
    "train_gpu.py": """
        import torch
        from model import Net
        from data import make_loader
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Net().to(device)
        """,
    "train_cpu.py": """
        from model import Net
        from data import make_loader
        model = Net()
        """,
    "export.py": """
        from exporter_model import Small
        """,
    "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    "exporter_model.py": "import torch.nn as nn\nclass Small(nn.Module):\n    pass\n",
    "data.py": "from torch.utils.data import DataLoader\ndef make_loader(ds):\n    return DataLoader(ds)\n",
}


def _runs(index, *names):
    return {name: index.runs_on_accelerator(Path(index.root) / name) for name in names}


def test_a_cpu_script_beside_gpu_scripts_stays_on_the_cpu(tmp_path):
    index = index_of(tmp_path, GPU_REPO)
    assert _runs(index, "train_gpu.py", "model.py", "data.py", "train_cpu.py", "export.py", "exporter_model.py") == {
        "train_gpu.py": True,
        "model.py": True,  # imported by a GPU script
        "data.py": True,
        "train_cpu.py": False,  # imports the same modules but selects nothing itself
        "export.py": False,
        "exporter_model.py": False,  # imported by no GPU script
    }


def test_a_device_chosen_in_an_imported_module_is_shared_by_the_entry_script(tmp_path):
    index = index_of(
        tmp_path,
        {
            "train.py": "from utils import get_device\nfrom data import loaders\nfrom trainer import Trainer\n",
            "utils.py": "import torch\ndef get_device():\n    return torch.accelerator.current_accelerator()\n",
            "data.py": "from torch.utils.data import DataLoader\ndef loaders(ds):\n    return DataLoader(ds)\n",
            "trainer.py": "class Trainer:\n    def __init__(self, device):\n        self.device = device\n",
            "plot.py": "from data import loaders\n",
        },
    )
    assert _runs(index, "train.py", "utils.py", "data.py", "trainer.py", "plot.py") == {
        "train.py": True,
        "utils.py": True,
        "data.py": True,  # imported by an entry script that reaches utils.py
        "trainer.py": True,
        "plot.py": False,  # reaches data.py only
    }
    source, evidence = index.accelerator_evidence(Path(index.root) / "data.py")
    assert Path(source).name == "utils.py" and evidence.what == "torch.accelerator.current_accelerator()"
    assert index.accelerator_evidence(Path(index.root) / "plot.py") is None


def test_import_cycles_share_the_fact_without_looping(tmp_path):
    index = index_of(
        tmp_path,
        {
            "a.py": "import b\nimport torch\nx = torch.zeros(1).cuda()\n",
            "b.py": "import c\n",
            "c.py": "import a\n",
            "d.py": "import e\n",
            "e.py": "import d\n",
        },
    )
    assert _runs(index, "a.py", "b.py", "c.py", "d.py", "e.py") == {"a.py": True, "b.py": True, "c.py": True, "d.py": False, "e.py": False}


def test_package_imports_share_through_init_reexports(tmp_path):
    index = index_of(
        tmp_path,
        {
            "scripts/train.py": "from pkg import Net\nimport torch\nmodel = Net().cuda()\n",
            "scripts/infer.py": "from pkg.data import load\n",
            "pkg/__init__.py": "from .nets import Net\n",
            "pkg/nets.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
            "pkg/data.py": "def load():\n    pass\n",
        },
    )
    assert _runs(index, "pkg/nets.py", "pkg/__init__.py", "scripts/infer.py", "pkg/data.py") == {
        "pkg/nets.py": True,
        "pkg/__init__.py": True,
        "scripts/infer.py": False,
        "pkg/data.py": False,
    }


@pytest.mark.parametrize(("mode", "expected"), [("always", True), ("never", False)])
def test_the_setting_decides_alone_unless_auto(tmp_path, mode, expected):
    write_project(tmp_path, GPU_REPO)
    from pytorch_perflint.project import ProjectIndex

    settings = dataclasses.replace(Settings(project_root=str(tmp_path)), accelerator=mode)
    index = ProjectIndex(tmp_path, settings)
    assert set(_runs(index, "train_gpu.py", "train_cpu.py", "exporter_model.py").values()) == {expected}
    assert index._graph is None  # decided without reading the project


def test_a_linted_text_not_on_disk_is_part_of_the_graph(tmp_path):
    index = index_of(tmp_path, {"model.py": "class Net:\n    pass\n"})
    new = tmp_path / "new_script.py"
    index.summary(new, source="from model import Net\nimport torch\nNet().cuda()\n")
    assert index.runs_on_accelerator(new) and index.runs_on_accelerator(tmp_path / "model.py")


def test_sharing_modules_on_a_plain_graph():
    graph = {"s": {"m", "u"}, "u": set(), "m": {"n"}, "n": set(), "c": {"m"}, "g": {"gpu_lib"}, "gpu_lib": {"n2"}, "n2": set()}
    assert sharing_modules(["u"], graph) == {"s", "u", "m", "n"}
    assert sharing_modules(["gpu_lib"], graph) == {"g", "gpu_lib", "n2"}
    assert sharing_modules([], graph) == frozenset()


def test_accelerator_setting_in_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\naccelerator = "always"\n')
    assert load_settings([str(tmp_path)]).accelerator == "always"
    assert Settings().accelerator == "auto"
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\naccelerator = "gpu"\n')
    with pytest.raises(ConfigError, match="expected one of auto, always, never"):
        load_settings([str(tmp_path)])
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\naccelerator = true\n")
    with pytest.raises(ConfigError, match="accelerator"):
        load_settings([str(tmp_path)])


def test_a_device_template_filled_in_selects_only_where_it_is_a_device(tmp_path):
    """``torch.device("cuda:{}".format(gpu))`` in a trainer module selects the accelerator,
    and an entry script that imports the trainer shares it (Dual-Path-RNN's layout); the same
    template logged, compared or kept under another name selects nothing."""
    index = index_of(
        tmp_path,
        {
            "train.py": "from torch.utils.data import DataLoader\nfrom trainer import trainer_gpu\n",
            "trainer/__init__.py": "",
            "trainer/trainer_gpu.py": """
                import torch
                class Trainer:
                    def __init__(self, loader, gpuid):
                        if gpuid:
                            self.device = torch.device('cuda:{}'.format(gpuid[0]))
                        else:
                            self.device = torch.device('cpu')
                """,
            "percent.py": "import torch\ndev = 'cuda:%d' % 0\n",
            "to_call.py": "def move(x, rank):\n    return x.to('cuda:{}'.format(rank))\n",
            "cpu_train.py": "from trainer import trainer_cpu\n",
            "trainer/trainer_cpu.py": """
                import torch
                class Trainer:
                    def __init__(self, loader, gpuid):
                        print('cuda:{}'.format(gpuid))
                        if name == 'cuda:{}'.format(gpuid):
                            pass
                        label = 'cuda:{}'.format(gpuid)
                        self.device = torch.device('cpu')
                """,
        },
    )
    assert _runs(index, "train.py", "trainer/trainer_gpu.py", "percent.py", "to_call.py", "cpu_train.py", "trainer/trainer_cpu.py") == {
        "train.py": True,  # the entry script shares its trainer module's device
        "trainer/trainer_gpu.py": True,
        "percent.py": True,
        "to_call.py": True,
        "cpu_train.py": False,
        "trainer/trainer_cpu.py": False,  # logged, compared, a label: no device chosen
    }
    source, evidence = index.accelerator_evidence(Path(index.root) / "train.py")
    assert Path(source).name == "trainer_gpu.py" and evidence.what == "'cuda:{}'"
