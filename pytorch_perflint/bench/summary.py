"""The Markdown summary of a device check (``scripts/gpu_check.sh``), from its JSON files.

``python -m pytorch_perflint.bench.summary OUT`` reads ``OUT/machine.txt``, ``OUT/bench.json``
(the scenario harness) and ``OUT/script-*.json`` (``bench SCRIPT`` on the examples) and
prints Markdown. The headline is what the fixes gain on whole scripts; the per-rule
scenarios follow, labelled micro-benchmarks. Figures are the JSON's own, formatted as the
terminal tables format them, so the summary cannot disagree with them. Needs no torch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from .report import format_bytes, format_seconds


def _speedup(verdict: Dict[str, Any]) -> str:
    if verdict.get("speedup") is None:
        return "-"
    return f"{verdict['speedup']:.2f}x [{verdict['ratio_min']:.2f}-{verdict['ratio_max']:.2f}]"


def _noise(verdict: Dict[str, Any]) -> str:
    threshold = verdict.get("noise_threshold")
    return f"±{100 * (threshold - 1):.1f}%" if threshold else "-"


def _verdict(verdict: Dict[str, Any]) -> str:
    kind = verdict.get("kind", "?")
    return f"{kind}: {verdict['reason']}" if kind == "skipped" and verdict.get("reason") else kind


def _read(path: Path) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def scripts_section(scripts: Dict[str, Optional[Dict[str, Any]]]) -> List[str]:
    lines = ["## What the fixes gain on whole scripts (`bench SCRIPT`)", ""]
    if not scripts:
        return lines + ["No script was measured.", ""]
    lines += ["| script | device | fixes | before | after | speed-up [range] | noise | verdict | result |", "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name, data in scripts.items():
        if data is not None and data.get("stopped"):
            notes.append(f"- {name}: the run was {data['stopped']}; the rows use the rounds that finished.")
        if data is not None:
            notes.extend(f"- {name}: {note}" for note in data.get("measurement_notes", ()))
        if data is None:
            lines.append(f"| {name} | - | - | - | - | - | - | no JSON: the run failed or ran out of time (see its log) | - |")
            continue
        device = data.get("device", "?")
        if not data.get("results"):
            lines.append(f"| {name} | {device} | none applied | - | - | - | - | - | - |")
        for row in data.get("results", ()):
            verdict = row.get("verdict", {})
            fingerprint = row.get("fingerprint") or {}
            same = {True: "same", False: "differs", None: "-"}[fingerprint.get("same")]
            lines.append(
                f"| {name} | {device} | {row.get('label', row.get('program'))} | {format_seconds(verdict.get('before_median_s'))} "
                f"| {format_seconds(verdict.get('after_median_s'))} | {_speedup(verdict)} | {_noise(verdict)} | {_verdict(verdict)} | {same} |"
            )
    return lines + [""] + (notes + [""] if notes else [])


def scenarios_section(bench: Optional[Dict[str, Any]]) -> List[str]:
    lines = ["## Each rule's scenario (micro-benchmarks)", ""]
    if bench is None:
        return lines + ["No JSON from the scenario run: it failed or ran out of time (its log shows the scenarios that finished).", ""]
    lines += _progress(bench)
    lines += [
        "Each scenario times one rule's pattern in a small program built to show it; \"op alone\" times the "
        "operation and nothing else, an upper bound of what a program gains. Speed-up = median before / median "
        "after over the measured rounds, [range] = lowest-highest per-round ratio; noise = widest A/A deviation.",
        "",
        "| rule | device | before | after | speed-up [range] | noise | verdict | checks | peak memory before / after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in bench.get("results", ()):
        verdict = result.get("verdict", {})
        alone = " (op alone)" if "operation alone" in str(result.get("benchmark", "")) else ""
        checks = "ok" if result.get("checks", {}).get("ok") else "FAILED: " + "; ".join(result.get("checks", {}).get("problems", ()))
        peak = result.get("peak_memory")
        memory = f"{format_bytes(peak.get('before_bytes'))} / {format_bytes(peak.get('after_bytes'))}" if peak else "-"
        lines.append(
            f"| {result.get('code')}{alone} | {result.get('device')} | {format_seconds(verdict.get('before_median_s'))} "
            f"| {format_seconds(verdict.get('after_median_s'))} | {_speedup(verdict)} | {_noise(verdict)} | {_verdict(verdict)} | {checks} | {memory} |"
        )
    gpu = [r for r in bench.get("results", ()) if r.get("needs") == "cuda" and r.get("device") == "cuda"]
    not_faster = [r for r in gpu if r.get("verdict", {}).get("kind") != "faster"]
    if not_faster:
        lines += ["", "GPU rules whose fix was not `faster` above the A/A noise here (their docs must say why, or the rule change):", ""]
        lines += [f"- {r.get('code')}: {_verdict(r.get('verdict', {}))}" for r in not_faster]
    return lines + [""]


def _progress(bench: Dict[str, Any]) -> List[str]:
    """Whether the scenario run finished; if not, why and what did not run. A JSON without
    the fields (written before they existed) is taken as complete."""
    if bench.get("complete", True):
        return []
    done = len(bench.get("results", ()))
    planned = len(bench.get("planned", ())) or done
    missing = ", ".join(bench.get("not_run", ())) or "none"
    why = bench.get("stopped") or "killed before it could finish (the JSON holds the scenarios finished before that)"
    return [f"**The scenario run did not finish**: {why}, after {done} of {planned} scenario runs. Not run: {missing}.", ""]


def markdown(out: Path) -> str:
    machine = (out / "machine.txt").read_text(encoding="utf-8").strip() if (out / "machine.txt").exists() else "not recorded"
    bench = _read(out / "bench.json")
    scripts = {p.stem[len("script-"):]: _read(p) for p in sorted(out.glob("script-*.json"))}
    for log in sorted(out.glob("script-*.log")):  # a run that left no JSON still gets a row
        scripts.setdefault(log.stem[len("script-"):], None)
    title = "GPU check" if bench and any(r.get("device") == "cuda" for r in bench.get("results", ())) else "Device check"
    lines = [f"# pytorch-perflint {title}", "", "## Machine", "", "```", machine, "```", ""]
    lines += scripts_section(scripts)
    lines += scenarios_section(bench)
    files = sorted(p.name for p in out.iterdir() if p.is_file() and p.name != "summary.md")
    lines += ["## Files", ""] + [f"- `{name}`" for name in files] + [""]
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pytorch_perflint.bench.summary OUT", file=sys.stderr)
        return 2
    print(markdown(Path(argv[0])))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
