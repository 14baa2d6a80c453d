"""Peak memory for the memory rules' scenarios (``Scenario(measure_memory=True)``).

On a CPU the figure is the growth of a fresh process's peak resident set size over one
run; these tests compare a run that allocates 256 MiB with one that allocates nothing. A
memory figure, not a timing.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytorch_perflint.bench import memory
from pytorch_perflint.bench.scenario import Scenario, discover

PROGRAM = """
import torch

def setup(size, device):
    return {"n": size["mib"] * 2**20 // 4, "device": device}

def run(state):
    if not state["n"]:
        return torch.zeros(1)
    x = torch.ones(state["n"], device=state["device"])
    return x.sum()
"""


def test_scenarios_opt_in_and_the_old_ones_stay_valid():
    """New fields have defaults: scenarios written before them (and by other rules' authors)
    still build."""
    fields = {f.name: f for f in dataclasses.fields(Scenario)}
    assert fields["measure_memory"].default is False and fields["operation_alone"].default is False
    assert all(isinstance(s.measure_memory, bool) for s in discover())


def test_a_cpu_run_s_peak_is_measured_in_a_fresh_process(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    big = memory.cpu_peak(path, {"mib": 256}, 0)
    small = memory.cpu_peak(path, {"mib": 0}, 0)
    assert big >= 200 * 2**20, big  # the 256 MiB tensor, seen though tracemalloc would not see it
    assert small < 64 * 2**20, small


def test_a_failing_memory_run_says_why(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "broken.py"
    path.write_text("def setup(size, device):\n    raise ValueError('no data')\n\ndef run(state):\n    pass\n")
    with pytest.raises(RuntimeError, match="ValueError: no data"):
        memory.cpu_peak(path, {}, 0)


def test_the_report_and_json_carry_the_peak():
    from types import SimpleNamespace

    from pytorch_perflint.bench.report import memory_line

    peak = memory.Peak(3 * 2**30, 512 * 2**20, memory.CUDA_MEASURE)
    line = memory_line(SimpleNamespace(code="TPF206", device="cuda", memory=peak))
    assert "before 3 GiB, after 512 MiB" in line and "max_memory_allocated" in line
    assert peak.as_dict()["before_bytes"] == 3 * 2**30


@pytest.mark.slow
def test_the_harness_reports_peak_memory_for_a_scenario_that_asks(tmp_path):
    """A scenario with measure_memory=True gets before and after figures in its result and
    its JSON; the others get none."""
    pytest.importorskip("torch")
    from pytorch_perflint.bench import export, harness
    from pytorch_perflint.bench.scenario import select

    scenario = dataclasses.replace(select(("TPF204",))[0], measure_memory=True)
    options = harness.Options(quick=True, rounds=2, min_run_time=0.01)
    (result,) = harness.run_all([scenario], ["cpu"], options)
    assert result.ok, result.problems
    assert result.memory is not None and result.memory.error is None, result.memory
    assert isinstance(result.memory.before, int) and isinstance(result.memory.after, int)
    assert export.result_dict(result)["peak_memory"]["measure"] == memory.CPU_MEASURE
    (plain,) = harness.run_all([select(("TPF204",))[0]], ["cpu"], harness.Options(quick=True, check_only=True))
    assert plain.memory is None



@pytest.mark.slow
def test_tpf205_quick_size_shows_the_graphs_it_keeps(tmp_path):
    """`bench --quick` is what CI and a first-time user run: TPF205's memory line must show
    the kept graphs there too (at 8 steps both programs read the same 8.27 MiB, as if the
    fix changed nothing). The "after" is the program with the rule's fix, `loss.detach()`."""
    pytest.importorskip("torch")
    from pytorch_perflint.bench.scenario import select

    (scenario,) = select(("TPF205",))
    assert scenario.before.count("total += loss\n") == 1
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(scenario.before)
    after.write_text(scenario.before.replace("total += loss\n", "total += loss.detach()\n"))
    size = scenario.sizes["quick"]
    kept, detached = memory.cpu_peak(before, size, 0), memory.cpu_peak(after, size, 0)
    assert kept - detached >= 2**20, (kept, detached)  # each step's graph, about 8 KiB
