"""The terminal table: one row per rule and device, and the problems under it."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .harness import ScenarioResult
from .verdicts import Kind, speedup_text

_STYLES = {
    Kind.FASTER: "bold green",
    Kind.SMALL: "green",
    Kind.INCONCLUSIVE: "yellow",
    Kind.SLOWER: "bold red",
    Kind.SKIPPED: "dim",
    Kind.UNJUDGED: "dim",
}


def format_seconds(value: Optional[float]) -> str:
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


TITLE = "pytorch-perflint bench: micro-benchmarks, each rule's pattern in a small program, before / after the tool's fix"
ALONE_MARK = " (op alone)"
HEADLINE_NOTE = (
    "these are micro-benchmarks: each times one rule's pattern in a program built to show it "
    "(\"op alone\": the operation and nothing else, an upper bound). What a fix gains on real "
    "training is what `pytorch-perflint bench SCRIPT` measures on your own script"
)


def row_label(result: ScenarioResult) -> str:
    """The rule cell: the code, marked when the scenario times the operation alone."""
    return result.code + (ALONE_MARK if result.scenario.operation_alone else "")


def ratio_text(result: ScenarioResult) -> str:
    return speedup_text(result.verdict)


def equivalence_text(result: ScenarioResult) -> str:
    if result.orders is not None:  # an orders scenario: its orders are the check
        return "[green]orders ok[/]" if result.orders.ok else "[red]orders wrong[/]"
    if result.equivalence is None:
        return "[red]not run[/]" if result.error else "-"
    if not result.equivalence.ok:
        return "[red]differs[/]"
    if result.determinism is not None and not result.determinism.ok:
        return "[red]not deterministic[/]"
    return f"[green]ok[/] ({result.equivalence.max_abs_diff:.1g})"


def orders_text(orders: Any, shown: int = 8) -> str:
    """The epoch orders of an orders scenario, the first ``shown`` items of each epoch."""

    def epochs(values: Any) -> str:
        return " | ".join(" ".join(str(i) for i in epoch[:shown]) + (" ..." if len(epoch) > shown else "") for epoch in values)

    return f"epoch orders before: {epochs(orders.before)}; after: {epochs(orders.after)}"


def checks_text(result: ScenarioResult) -> str:
    check = result.programs.check
    if not check.rule_exists:
        return "[red]no rule[/]"
    if check.problems:
        return "[red]failed[/]"
    fixed = "hand-written" if check.after_source == "hand-written" else f"fixed x{check.fix_applied}"
    return f"[green]fires[/], {fixed}"


def table(results: Sequence[ScenarioResult]) -> Any:
    """A rich Table of the results."""
    from rich.table import Table

    out = Table(title=TITLE, show_lines=False)
    out.add_column("rule", no_wrap=True)
    out.add_column("device", no_wrap=True)
    out.add_column("before", justify="right", no_wrap=True)
    out.add_column("after", justify="right", no_wrap=True)
    out.add_column("speed-up \\[range]", justify="right", no_wrap=True)  # "\\[": not rich markup
    out.add_column("noise", justify="right", no_wrap=True)
    out.add_column("verdict")
    out.add_column("checks")
    out.add_column("equivalence", no_wrap=True)
    for result in results:
        verdict = result.verdict
        style = _STYLES[verdict.kind]
        label = f"[{style}]{verdict.kind}[/]"
        if verdict.kind is Kind.SKIPPED:
            label += f": {verdict.reason}"
        elif verdict.kind is Kind.UNJUDGED:
            label += " (--quick)"
        noise = f"±{100 * (verdict.threshold - 1):.1f}%" if verdict.threshold else "-"
        out.add_row(
            row_label(result),
            result.device,
            format_seconds(result.verdict.before_s),
            format_seconds(result.verdict.after_s),
            ratio_text(result),
            noise,
            label,
            checks_text(result),
            equivalence_text(result),
        )
    return out


def format_bytes(value: Optional[int]) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} B"


def memory_line(result: ScenarioResult) -> str:
    """The peak memory of a memory rule's scenario, under the table."""
    peak = result.memory
    if peak.error:
        return f"{result.code} {result.device}: peak memory not measured: {peak.error}"
    return f"{result.code} {result.device}: peak memory of one run, before {format_bytes(peak.before)}, after {format_bytes(peak.after)} ({peak.measure})"


def what_ran(options: Any) -> str:
    """The footer's account of the measuring: what this run actually did."""
    if options.check_only:
        return "checks only (the rule fires, the fix applies, before and after agree); nothing timed"
    rounds = f"{options.measured_rounds} rounds + 1 warm-up"
    if options.quick:
        return f"--quick: small sizes, {rounds} of short timings; these check the harness, not the speed, so no verdicts"
    return f"{rounds}; speed-up = median before / median after, \\[range] = lowest-highest per-round ratio, noise = widest A/A deviation"


def print_report(console: Any, results: Sequence[ScenarioResult], machine: Any, options: Any) -> None:
    console.print(table(results))
    gpus = ", ".join(machine.gpus) if machine.gpus else "none"
    console.print(
        f"[dim]{machine.cpu_model}, {machine.cpus_available}/{machine.cpu_count} CPUs, GPUs: {gpus}; "
        f"torch {machine.torch_version}; {options.num_threads} thread(s); {what_ran(options)}[/]"
    )
    console.print(f"[dim]{HEADLINE_NOTE}[/]")
    for result in results:
        if result.memory is not None:
            console.print(memory_line(result), markup=False, highlight=False)
    for result in results:
        if result.orders is not None:
            console.print(f"{result.code} {result.device}: {orders_text(result.orders)}")
        for problem in result.problems:
            console.print(f"[red]{result.code} {result.device}:[/] {problem}")
