"""What ``toolnursery bench`` reports: the figures it measured and their text form."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Final

import msgspec

__all__ = ["PHASES_UNAVAILABLE", "WORKLOADS", "BenchReport", "Clock", "Spread", "render"]

PHASES_UNAVAILABLE: Final = "phase timings unavailable"
WORKLOADS: Final = {
    "trivial": "the bundled trivial tool (json.loads of the arguments, the body awaits "
    "one checkpoint, results stored), as on the benchmarks page",
    "examples": "the bundled example tools on real files (reads, listings, searches)",
    "tools": "your registry's bodies, hooks and policies",
}


class Spread(msgspec.Struct, frozen=True):
    """One figure over the repetitions: its median, extremes, and every run's value."""

    median: float
    min: float
    max: float
    runs: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of ``values`` (at least one)."""
        return cls(statistics.median(values), min(values), max(values), tuple(values))

    @property
    def relative(self) -> float:
        """``(max - min) / median``: how far apart the repetitions landed."""
        return (self.max - self.min) / self.median if self.median else 0.0


class Clock(msgspec.Struct, frozen=True, kw_only=True):
    """Both sides' µs per call on one clock, and their ratio.

    Attributes:
        toolnursery_us: µs per call through ``run_tool_calls``.
        bare_us: µs per call for the same bodies in a bare trio nursery.
        ratio: toolnursery / bare, per repetition.
    """

    toolnursery_us: Spread
    bare_us: Spread
    ratio: Spread

    @classmethod
    def of(cls, ours: Sequence[float], bare: Sequence[float]) -> Clock:
        """The clock's figures from each repetition's µs per call on either side."""
        ratios = [a / b if b else math.inf for a, b in zip(ours, bare, strict=True)]
        return cls(toolnursery_us=Spread.of(ours), bare_us=Spread.of(bare), ratio=Spread.of(ratios))


class BenchReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one ``toolnursery bench`` measured (``--json`` prints it).

    Attributes:
        workload: ``"trivial"`` (the bundled tool whose body awaits one checkpoint),
            ``"examples"`` (the bundled example tools, real file I/O) or ``"tools"``
            (the user's registry).
        calls: the calls in the batch.
        tools: how many calls each tool got.
        max_parallel: the batch's cap (and the bare nursery's limiter).
        repeat: the repetitions; each is the median of ``samples`` samples.
        samples: the interleaved samples per repetition.
        batches_per_sample: the batches each side runs in one sample.
        cpu: the process's CPU time per call (every thread's).
        wall: the wall-clock time per call (waiting included).
        phase_mean_us: the mean wall time a call spent in each pipeline phase, in µs,
            as the registry's phase timers saw it (the calls' phases overlap, so these
            can exceed the wall time per call), or ``None`` when the registry keeps no
            per-phase timings.
        phase_share: each phase's share of the calls' summed phase time, or ``None``.
        results_by_code: the last timed run's results by outcome (``"ok"`` or the
            error code; a benchmark of failing calls measures the failures).
        load_average: the system's one-minute load average when the run ended
            (``None`` where the system has none).
        python: the interpreter's version.
        trio: trio's version.
        toolnursery: toolnursery's version.
    """

    workload: str
    calls: int
    tools: dict[str, int]
    max_parallel: int
    repeat: int
    samples: int
    batches_per_sample: int
    cpu: Clock
    wall: Clock
    phase_mean_us: dict[str, float] | None
    phase_share: dict[str, float] | None
    results_by_code: dict[str, int]
    load_average: float | None
    python: str
    trio: str
    toolnursery: str


# -- showing ------------------------------------------------------------------------------


def render(report: BenchReport) -> str:
    """The report as text, for a terminal."""
    tools = ", ".join(f"{name} x{count}" for name, count in report.tools.items())
    reps = f"{report.repeat} repetition{'s' if report.repeat > 1 else ''}"
    lines = [
        f"toolnursery bench: {report.calls} calls ({tools}), max_parallel "
        f"{report.max_parallel}, {reps} of {report.samples} interleaved samples",
        f"workload: {WORKLOADS.get(report.workload, report.workload)}",
        f"{'':<22} {'median':>9} {'min':>9} {'max':>9} {'spread':>7}",
    ]
    for title, clock in (("CPU µs/call", report.cpu), ("wall µs/call", report.wall)):
        lines.append(title)
        for label, spread, unit in (
            ("toolnursery", clock.toolnursery_us, ""),
            ("bare nursery", clock.bare_us, ""),
            ("ratio", clock.ratio, "x"),
        ):
            lines.append(
                f"  {label:<20} {_num(spread.median, unit):>9} {_num(spread.min, unit):>9} "
                f"{_num(spread.max, unit):>9} {spread.relative:>7.0%}"
            )
    lines.append(
        "clocks: CPU is the process's CPU time (every thread); wall also counts waiting "
        "(I/O, sleeps, other processes on the CPU)"
    )
    if report.load_average is not None:
        lines.append(
            f"load average: {report.load_average:.2f} (a busy machine moves both clocks; "
            "quote figures from a quiet one)"
        )
    if report.phase_mean_us is None or report.phase_share is None:
        lines.append(f"phases: {PHASES_UNAVAILABLE}")
    else:
        mean = report.phase_mean_us
        lines.append(
            "phase shares: " + ", ".join(f"{k} {v:.0%}" for k, v in report.phase_share.items())
        )
        lines.append(
            "mean wall µs per call in each phase (calls overlap): "
            + ", ".join(f"{k} {_num(v, '')}" for k, v in mean.items())
        )
    results = ", ".join(f"{code} {count}" for code, count in report.results_by_code.items())
    lines.append(f"results: {results}")
    return "\n".join(lines) + "\n"


def _num(value: float, unit: str) -> str:
    if unit:
        return f"{value:.2f}{unit}"
    return f"{value:.2f}" if value < 1000 or not math.isfinite(value) else f"{value:.0f}"
