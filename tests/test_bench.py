"""The benchmark harness: scenarios, fixes, equivalence, JSON, CLI and verdict logic.

CI runs the machinery on the CPU at --quick sizes. No test asserts a measured speed-up:
timings on a shared CI machine prove nothing; the verdict logic is tested on synthetic
numbers instead. Tests that need torch skip cleanly without it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pytorch_perflint.bench import verdicts
from pytorch_perflint.bench.cli import bench
from pytorch_perflint.bench.programs import build
from pytorch_perflint.bench.scenario import Need, ScenarioError, discover, select
from pytorch_perflint.bench.verdicts import Kind, decide, noise_threshold
from pytorch_perflint.registry import all_rules
from pytorch_perflint.types import Applicability

RULES_MD = Path(__file__).resolve().parent.parent.parent / "shared" / "RULES.md"
# Every list comes from the registry or the scenarios, never written out here.
EXPECTED_CODES = [rule.code for rule in all_rules()]
# Rules whose only fix is shown, never applied: their scenario's "after" is hand-written.
DISPLAY_ONLY = {rule.code for rule in all_rules() if rule.applicabilities() == (Applicability.DISPLAY_ONLY,)}
SCENARIOS = discover()
# Whether a rule can be measured without a GPU is the scenario's to say.
GPU_ONLY = {s.code for s in SCENARIOS if s.needs is Need.CUDA}
MULTI_GPU = {s.code for s in SCENARIOS if s.needs is Need.MULTI_GPU}
IDS = [s.code for s in SCENARIOS]


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# -- scenarios and programs (no torch needed) --------------------------------------------


def test_every_rule_has_one_scenario():
    assert [s.code for s in SCENARIOS] == EXPECTED_CODES
    if RULES_MD.exists():  # the catalogue beside the design doc, when checked out
        in_catalogue = set(re.findall(r"^\*\*(TPF[1-9]\d\d) ", RULES_MD.read_text(encoding="utf-8"), re.M))
        assert in_catalogue <= set(EXPECTED_CODES)


def test_gpu_only_rules_are_marked_so():
    needs = {s.code: s.needs for s in SCENARIOS}
    # A rule that only matters on a GPU (it skips files that never mention CUDA) cannot be
    # measured on the CPU: its scenario must say so.
    assert {r.code for r in all_rules() if r.needs_cuda} <= GPU_ONLY | MULTI_GPU
    assert needs["TPF501"] is Need.MULTI_GPU
    assert select(("TPF501",))[0].skip_reason("cpu", 0) == "needs 2+ GPUs"
    assert select(("TPF102",))[0].skip_reason("cpu", 0) == "needs CUDA"
    assert select(("TPF102",))[0].skip_reason("cuda", 1) is None


def test_only_display_only_rules_ship_a_hand_written_after():
    assert {s.code for s in SCENARIOS if s.hand_written} == DISPLAY_ONLY


def test_unknown_rule_is_an_error():
    with pytest.raises(ScenarioError):
        select(("TPF999",))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_rule_fires_before_and_not_after_the_fix(scenario):
    programs = build(scenario)
    check = programs.check
    assert check.rule_exists, f"rule {scenario.code} is not implemented"
    assert check.fires_before > 0, f"{scenario.code} does not fire on its scenario"
    assert check.fires_after == 0, f"{scenario.code} still fires after the fix:\n{programs.diff}"
    assert not check.errors, check.errors
    if scenario.code in DISPLAY_ONLY:
        assert check.after_source == "hand-written"
        assert check.applicability == "display-only"
    else:
        assert check.after_source == "tool-fix"
        assert check.fix_applied > 0 and programs.after != programs.before
        assert programs.diff.startswith("---")


# -- running the programs (torch) ---------------------------------------------------------


@pytest.fixture(scope="module")
def checked():
    """Every scenario run once at quick sizes on the CPU: checks and equivalence, no timing."""
    pytest.importorskip("torch")
    from pytorch_perflint.bench.harness import Options, run_all

    results = run_all(SCENARIOS, ["cpu"], Options(quick=True, check_only=True))
    return {r.code: r for r in results}


ORDERS = {s.code for s in SCENARIOS if s.orders}


@pytest.mark.parametrize("code", sorted(ORDERS))
def test_an_orders_scenario_shows_the_epoch_orders_change(checked, code):
    """A correctness scenario (TPF105): the same order every epoch before the fix, a new
    order after it, the first epoch unchanged; checked, not timed."""
    result = checked[code]
    assert result.error is None, result.error
    assert result.orders is not None and result.orders.ok, result.orders
    assert len(set(result.orders.before)) == 1 and len(set(result.orders.after)) == len(result.orders.after) >= 2
    assert result.determinism is not None and result.determinism.ok
    assert result.ok, result.problems
    assert result.verdict.kind is Kind.SKIPPED and result.verdict.reason == "epoch orders, not timed"


def test_orders_that_do_not_show_the_fix_are_problems(torch):
    from pytorch_perflint.bench.orders import check_orders

    same = [torch.tensor([2, 0, 1]), torch.tensor([2, 0, 1])]
    other = [torch.tensor([2, 0, 1]), torch.tensor([1, 2, 0])]
    assert check_orders(same, other).ok
    assert "already differ" in check_orders(other, other).describe()
    assert "still share an order" in check_orders(same, same).describe()
    assert "first epoch's order changed" in check_orders(same, [torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0])]).describe()
    assert "two epochs" in check_orders(same, torch.tensor([1, 2])).describe()


@pytest.mark.parametrize("code", [code for code in IDS if code not in ORDERS])
def test_before_and_after_compute_the_same(checked, code):
    result = checked[code]
    assert result.error is None, result.error
    assert result.equivalence is not None and result.equivalence.ok, result.equivalence
    assert result.determinism is not None and result.determinism.ok, result.determinism
    assert result.ok, result.problems
    expected = "needs CUDA" if code in GPU_ONLY else ("needs 2+ GPUs" if code in MULTI_GPU else "check only")
    assert result.verdict.kind is Kind.SKIPPED and result.verdict.reason == expected


def test_global_flags_of_one_program_do_not_leak(torch):
    from pytorch_perflint.bench.loading import Workspace

    scenario = select(("TPF204",))[0]  # sets anomaly detection at import
    with Workspace() as workspace:
        program = workspace.load(scenario.before, "leak_before", "before")
        assert not torch.is_anomaly_enabled()
        with program.active():
            assert torch.is_anomaly_enabled()
        program.setup(scenario.size_for(True, "cpu"), torch.device("cpu"), 0)
        program.run_once(0)
        assert not torch.is_anomaly_enabled()


def test_equivalence_names_the_mismatch(torch):
    from pytorch_perflint.bench.equivalence import compare

    assert compare((torch.ones(3), 2.0), (torch.ones(3), 2.0), 1e-5, 1e-6).ok
    assert compare(torch.ones(3), torch.ones(3) + 1e-7, 1e-5, 1e-6).ok
    assert "shape" in compare(torch.ones(3), torch.ones(4), 1e-5, 1e-6).detail
    assert "dtype" in compare(torch.ones(3), torch.ones(3, dtype=torch.float64), 1e-5, 1e-6).detail
    assert not compare({"a": 1.0}, {"a": 1.1}, 1e-5, 1e-6).ok
    assert not compare(torch.ones(3), torch.ones(3) * 1.01, 1e-5, 1e-6).ok


def _quick_run(codes):
    import datetime

    from pytorch_perflint.bench import export, harness, machine

    options = harness.Options(quick=True, rounds=2, min_run_time=0.005)
    now = datetime.datetime.now().astimezone()
    results = harness.run_all(select(codes), ["cpu"], options)
    return export.run_dict(results, machine.describe(), options, now, now, machine.load_average(), None)


def test_json_has_every_round_and_the_machine(torch):
    data = json.loads(json.dumps(_quick_run(("TPF401", "TPF102")), default=str))
    for key in ("cpu_model", "cpu_count", "cpus_available", "gpus", "torch_version", "default_num_threads", "python_version"):
        assert key in data["machine"]
    assert data["options"]["num_threads"] == 1 and data["options"]["rounds"] == 2
    assert set(data["thresholds"]) == {"noise_floor", "meaningful", "min_rounds"}
    timed, skipped = data["results"]
    assert timed["code"] == "TPF401" and timed["device"] == "cpu"
    assert timed["checks"]["ok"] and timed["checks"]["equivalence"]["ok"]
    assert timed["verdict"]["kind"] == "not judged"  # --quick: figures, no verdict
    for key in ("speedup", "ratio_min", "ratio_max", "noise_threshold"):
        assert isinstance(timed["verdict"][key], float)
    rounds = timed["timing"]["rounds"]
    assert [r["warmup"] for r in rounds] == [True, False, False]
    assert rounds[1]["order"] == list(reversed(rounds[2]["order"]))
    for round_ in rounds:
        assert set(round_["programs"]) == {"before", "after", "control"}
        assert round_["ratio"] > 0 and round_["aa_ratio"] > 0
        for figures in round_["programs"].values():
            assert figures["block_times_s"] and figures["number_per_run"] >= 1
            assert figures["clock"] == "process-cpu"
    assert timed["timing"]["num_threads"] == 1 and timed["diff"].startswith("---")
    assert skipped["verdict"] == {**skipped["verdict"], "kind": "skipped", "reason": "needs CUDA"}
    assert skipped["timing"]["rounds"] == [] and skipped["checks"]["equivalence"]["ok"]


def test_cli_writes_table_json_and_plot(torch, tmp_path):
    pytest.importorskip("matplotlib")
    out_json, out_png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--quick", "--rule", "TPF401", "--rule", "TPF501", "--device", "cpu", "--rounds", "2"]
    args += ["--min-run-time", "0.005", "--json", str(out_json), "--plot", str(out_png)]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, result.output
    assert "TPF401" in result.output and "needs 2+ GPUs" in result.output
    assert [r["code"] for r in json.loads(out_json.read_text())["results"]] == ["TPF401", "TPF501"]
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_usage_errors_exit_2(torch):
    assert CliRunner().invoke(bench, ["--rule", "TPF999"]).exit_code == 2
    if not torch.cuda.is_available():
        result = CliRunner().invoke(bench, ["--device", "cuda", "--rule", "TPF401"])
        assert result.exit_code == 2 and "CUDA" in result.output


def test_cli_without_torch_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    result = CliRunner().invoke(bench, ["--quick"])
    assert result.exit_code == 2
    assert "pytorch-perflint[bench]" in result.output and "torch==" in result.output


# -- verdicts on synthetic timings (no torch) --------------------------------------------

QUIET = [1.0, 1.01, 0.995, 1.005]  # A/A ratios: 1% noise


def test_noise_threshold_is_the_widest_aa_deviation():
    assert noise_threshold([1.0, 1.03, 0.95]) == pytest.approx(1 / 0.95)
    assert noise_threshold([1.0, 1.001]) == verdicts.NOISE_FLOOR
    assert noise_threshold([]) == verdicts.NOISE_FLOOR


def test_faster_needs_every_round_past_the_threshold_and_a_meaningful_median():
    verdict = decide([1.30, 1.25, 1.28, 1.31], QUIET)
    assert verdict.kind is Kind.FASTER
    assert verdict.ratio_min == 1.25 and verdict.ratio_max == 1.31 and verdict.rounds == 4
    assert verdict.threshold == pytest.approx(1.01)


def test_small_is_faster_in_every_round_but_under_the_margin():
    verdict = decide([1.03, 1.025, 1.04, 1.035], QUIET)
    assert verdict.kind is Kind.SMALL


def test_one_bad_round_prevents_faster():
    verdict = decide([1.30, 1.25, 1.005, 1.31], QUIET)
    assert verdict.kind is Kind.INCONCLUSIVE
    assert "1 of 4" in verdict.reason


def test_a_noisy_aa_round_raises_the_bar():
    ratios = [1.08, 1.10, 1.09]
    assert decide(ratios, QUIET).kind is Kind.FASTER
    assert decide(ratios, [1.0, 1.12, 0.99]).kind is Kind.INCONCLUSIVE


def test_slower_is_reported_as_slower():
    assert decide([0.80, 0.85, 0.82], QUIET).kind is Kind.SLOWER
    assert decide([0.80, 1.20, 0.82], QUIET).kind is Kind.INCONCLUSIVE


def test_too_few_rounds_are_inconclusive():
    assert decide([2.0], QUIET).kind is Kind.INCONCLUSIVE
    assert decide([], QUIET).kind is Kind.INCONCLUSIVE


def test_skipped_carries_its_reason():
    verdict = verdicts.skipped("needs CUDA")
    assert verdict.kind is Kind.SKIPPED and verdict.label == "skipped: needs CUDA"


def test_block_size_targets_equal_durations():
    pytest.importorskip("torch")
    from pytorch_perflint.bench.timing import block_size

    assert block_size(0.5, 0.4) == 1
    assert block_size(1e-6, 0.4) == 40_000
    assert block_size(0.004, 0.4) == 10
