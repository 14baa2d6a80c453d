"""`bench` says what it measured: no verdicts from --quick timings, a footer that names what
ran, output paths checked before any work, and a chart whose axis an outlier cannot squash."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from pytorch_perflint.bench import harness
from pytorch_perflint.bench.cli import bench, unwritable
from pytorch_perflint.bench.plot import clip_limit
from pytorch_perflint.bench.report import what_ran
from pytorch_perflint.bench.verdicts import Kind, Verdict, decide, unjudged


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_quick_run_draws_no_verdicts_but_keeps_the_figures(torch, tmp_path):
    out = tmp_path / "quick.json"
    args = ["--quick", "--rule", "TPF401", "--device", "cpu", "--rounds", "2", "--min-run-time", "0.005", "--json", str(out)]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "TPF401" in line)
    assert "not judged" in row
    assert not any(word in row for word in ("faster", "slower", "inconclusive", "small"))
    assert "no verdicts" in result.output and "rounds + 1 warm-up" in result.output
    verdict = json.loads(out.read_text())["results"][0]["verdict"]
    assert verdict["kind"] == "not judged" and isinstance(verdict["speedup"], float)


def test_unjudged_keeps_the_ratios():
    judged = decide([0.5, 0.5, 0.5], [1.0, 1.0])
    assert judged.kind is Kind.SLOWER
    quick = unjudged(judged)
    assert quick.kind is Kind.UNJUDGED and quick.speedup == 0.5 and "--quick" in quick.reason


def test_check_only_footer_says_nothing_was_timed(torch):
    result = CliRunner().invoke(bench, ["--check-only", "--quick", "--rule", "TPF501", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "nothing timed" in result.output and "warm-up" not in result.output


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (harness.Options(check_only=True), "checks only"),
        (harness.Options(quick=True), "--quick: small sizes, 3 rounds + 1 warm-up"),
        (harness.Options(rounds=7), "7 rounds + 1 warm-up; speed-up = median before / median after"),
    ],
)
def test_footer_names_what_ran(options, expected):
    assert what_ran(options).startswith(expected)


@pytest.mark.parametrize("flag", ["--json", "--plot"])
def test_unwritable_output_paths_exit_2_before_any_work(tmp_path, monkeypatch, flag):
    monkeypatch.setattr(harness, "run_all", lambda *a, **k: pytest.fail("measured before checking the paths"))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = blocker / "out" / "bench.json"
    result = CliRunner().invoke(bench, ["--rule", "TPF401", flag, str(target)])
    assert result.exit_code == 2, result.output
    assert f"error: {flag} {target}: {blocker} is not a folder" in result.output
    assert "Traceback" not in result.output
    folder = CliRunner().invoke(bench, ["--rule", "TPF401", flag, str(tmp_path)])
    assert folder.exit_code == 2 and "is a directory" in folder.output


def test_unwritable_says_why(tmp_path):
    (tmp_path / "f").write_text("x")
    assert unwritable(tmp_path / "new" / "deeper" / "out.json") is None
    assert not (tmp_path / "new").exists()  # checking creates nothing
    assert unwritable(tmp_path) == "is a folder"
    assert unwritable(tmp_path / "f" / "x.png") == f"{tmp_path / 'f'} is not a folder"
    assert unwritable(tmp_path / "f") is None


def test_an_outlier_clips_the_axis_and_ordinary_ranges_do_not():
    assert clip_limit([1858.0, 3.4, 2.4, 1.15]) == pytest.approx(3.4 * 3)
    assert clip_limit([893.0, 1.06]) == pytest.approx(6.0)  # the others are at least 2x wide
    assert clip_limit([3.4, 2.4, 1.15]) is None
    assert clip_limit([40.0, 8.0]) is None
    assert clip_limit([1858.0]) is None


def test_the_chart_draws_an_outlier_clipped_and_labelled(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pytorch_perflint.bench import plot

    def result(code, median, kind=Kind.FASTER):
        verdict = Verdict(kind, "", median, median * 0.95, median * 1.05, 1.02, 3)
        return SimpleNamespace(code=code, device="cpu", verdict=verdict)

    results = [result("TPF101", 2.4), result("TPF201", 1.15), result("TPF401", 1858.0), result("TPF301", 1.06, Kind.UNJUDGED)]
    saved = {}
    monkey_close = plt.close
    plt.close = lambda fig: saved.setdefault("fig", fig)
    try:
        assert plot.write_plot(tmp_path / "chart.png", results, "t") == 4
    finally:
        plt.close = monkey_close
    ax = saved["fig"].axes[0]
    assert ax.get_xlim()[1] == pytest.approx(2.4 * 1.05 * 3)
    texts = [t.get_text() for t in ax.texts]
    assert "1858.00x faster (axis clipped) " in texts  # the table's figure, to the same digits
    assert " 1.06x" in texts  # not judged: the figure, no verdict word
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_a_log_gets_one_line_per_scenario(torch):
    """Not a terminal (CI, a device run's log): a line as each scenario finishes, not
    minutes of silence."""
    result = CliRunner().invoke(bench, ["--check-only", "--quick", "--rule", "TPF501", "--rule", "TPF204", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("[")]
    assert [line.split(":")[0] for line in lines] == ["[1/2] TPF501 cpu", "[2/2] TPF204 cpu"]  # in the order asked
    assert "left" in lines[0] and "almost done" in lines[1]


def test_the_time_left_never_grows():
    from pytorch_perflint.bench.eta import Eta, eta_text

    now = [0.0]
    eta = Eta(clock=lambda: now[0])
    shown = []
    # Uneven work: two quick units, then slow ones, and the total grows midway.
    for elapsed, done, total in ((1, 1, 10), (2, 2, 10), (30, 3, 10), (60, 4, 12), (61, 5, 12), (200, 6, 12)):
        now[0] = elapsed
        shown.append(eta.update(done, total))
    assert all(later <= earlier for earlier, later in zip(shown, shown[1:])), shown
    assert eta_text(None) == "time left not known yet" and eta_text(0.2) == "under 1 s left" and eta_text(0.0) == "almost done" and eta_text(600) == "about 10 min left"
