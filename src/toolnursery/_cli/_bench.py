"""``toolnursery bench``: what the pipeline costs on a registry's own calls.

The calls run through :func:`run_tool_calls` on the registry as it is — its hooks,
policies and per-tool limits included — and, in the same process, the same tool bodies
run in a bare trio nursery: one ``start_soon`` per call of a task that decodes the
call's arguments and runs the body (a plain ``def`` body through
``trio.to_thread.run_sync``, as the pipeline runs it), under a ``CapacityLimiter`` when
``--max-parallel`` is below the number of calls. The bodies' contexts are built before
the clock starts, so the bare side is the floor: the ratio is everything toolnursery
adds (the arguments' freezing, policy, scheduling, results).

The two sides alternate, after one untimed warm-up run of each; the report gives
µs per call (median, min and max over the repetitions), the ratio of each
repetition's pair, and the share of each pipeline phase, from one more run with the
registry's per-phase timings on (when the registry keeps them). Nothing is drawn or
recorded while a side is timed: the progress display moves between runs only.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import cycle, islice
from pathlib import PurePosixPath
from typing import Any, Final, cast

import msgspec
import trio

from .._batch._scheduler import run_tool_calls
from .._core._arguments import parse_arguments
from .._core._bodies import is_async
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import ToolArgsError
from .._core._execution import ToolExecution, ToolExecutionToken, ToolRunContext
from .._core._json import snapshot
from .._core._signal import CancelSignal
from .._core._statistics import outcome
from .._examples._sandbox import fill_sandbox
from .._examples._toolset import example_registry
from .._pipeline._registry import ToolRegistry
from .._tools._definition import ToolDefinition
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    MAX_CALLS,
    MAX_PARALLEL,
    MAX_REPEAT,
    UsageError,
    bounded_int,
    load_registry,
    read_calls,
    say,
    version,
)

__all__ = [
    "BenchReport",
    "Spread",
    "add_bench_parser",
    "bench_command",
    "bundled_calls",
    "measure",
    "render",
    "resized",
]

DEFAULT_CALLS: Final = 1000
DEFAULT_REPEAT: Final = 3
PHASES_UNAVAILABLE: Final = "phase timings unavailable"


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


class BenchReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one ``toolnursery bench`` measured (``--json`` prints it).

    Attributes:
        calls: the calls in the batch.
        tools: how many calls each tool got.
        max_parallel: the batch's cap (and the bare nursery's limiter).
        repeat: the timed repetitions of each side.
        toolnursery_us: µs per call through ``run_tool_calls``.
        bare_us: µs per call for the same bodies in a bare trio nursery.
        ratio: toolnursery / bare, per repetition.
        phase_mean_us: the mean time a call spent in each pipeline phase, in µs, as the
            registry's phase timers saw it (the calls' phases overlap, so these can
            exceed the wall time per call), or ``None`` when the registry keeps no
            per-phase timings.
        phase_share: each phase's share of the calls' summed phase time, or ``None``.
        results_by_code: the last timed run's results by outcome (``"ok"`` or the
            error code; a benchmark of failing calls measures the failures).
        python: the interpreter's version.
        trio: trio's version.
        toolnursery: toolnursery's version.
    """

    calls: int
    tools: dict[str, int]
    max_parallel: int
    repeat: int
    toolnursery_us: Spread
    bare_us: Spread
    ratio: Spread
    phase_mean_us: dict[str, float] | None
    phase_share: dict[str, float] | None
    results_by_code: dict[str, int]
    python: str
    trio: str
    toolnursery: str


# -- the command line ---------------------------------------------------------------------


def add_bench_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand to the ``toolnursery`` parser."""
    bench = commands.add_parser(
        "bench",
        help="measure the pipeline's cost per call against a bare trio nursery",
        description=(
            "Run tool calls through the registry's pipeline and scheduler, and the same "
            "tool bodies in a bare trio nursery, in one process; print µs per call, the "
            "ratio, the spread over repetitions and each phase's share. The calls run "
            "for real (repeat + 2 times through the pipeline, repeat + 1 times bare): give "
            "it calls that are safe to repeat. Default: the bundled example tools on a generated read-only batch "
            "in a temporary sandbox."
        ),
    )
    bench.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="a ToolRegistry, or a callable returning one (MODULE may be a path to a .py "
        "file), as for run; needs --calls",
    )
    bench.add_argument(
        "--calls",
        metavar="FILE",
        help="the tool calls to run, as for run (JSON or JSON lines; - for stdin)",
    )
    bench.add_argument(
        "-n",
        type=bounded_int(MAX_CALLS),
        metavar="N",
        help=f"the batch's size: the calls repeated (or cut) to N, at most {MAX_CALLS} "
        f"(default: the calls given, or {DEFAULT_CALLS} generated ones)",
    )
    bench.add_argument(
        "--max-parallel",
        type=bounded_int(MAX_PARALLEL),
        metavar="K",
        help=f"the most tool bodies running at once, on both sides, at most {MAX_PARALLEL} "
        "(default: N, no cap)",
    )
    bench.add_argument(
        "--repeat",
        type=bounded_int(MAX_REPEAT),
        default=DEFAULT_REPEAT,
        metavar="R",
        help=f"timed runs of each side; the report gives their median and spread "
        f"(default: {DEFAULT_REPEAT}, at most {MAX_REPEAT})",
    )
    bench.add_argument("--json", action="store_true", help="print the report as one JSON object")
    bench.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="a progress display on stderr (auto: when stderr is a terminal; needs rich)",
    )


def bench_command(options: argparse.Namespace) -> int:
    """Run ``toolnursery bench`` with parsed ``options``; return the exit code."""
    if options.tools is not None and options.calls is None:
        raise UsageError(
            "--tools needs --calls: the bench runs the calls you give it on your tools"
        )
    calls = read_calls(options.calls) if options.calls is not None else None
    registry = load_registry(options.tools) if options.tools is not None else None
    if calls is not None and not calls:
        source = "<stdin>" if options.calls == "-" else options.calls
        raise UsageError(f"no tool calls in {source}; nothing to benchmark")
    with ExitStack() as stack:
        if registry is None:
            sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-"))
            paths = fill_sandbox(sandbox)
            registry = example_registry(sandbox)
            if calls is None:
                calls = bundled_calls(paths, options.n or DEFAULT_CALLS)
        assert calls is not None
        if options.n is not None:
            calls = resized(calls, options.n)
        _check_tools(registry, calls)
        max_parallel = options.max_parallel or len(calls)
        with _progress(options.progress, options.repeat) as tick:
            try:
                report = trio.run(measure, registry, calls, max_parallel, options.repeat, tick)
            except Exception as exc:
                say(f"error: the batch failed: {type(exc).__name__}: {exc}")
                return EXIT_FAILED
    sys.stdout.write(_encode(report).decode() + "\n" if options.json else render(report))
    sys.stdout.flush()
    return EXIT_OK


_encode = msgspec.json.Encoder().encode


def bundled_calls(paths: Sequence[str], n: int) -> list[ToolCall]:
    """``n`` read-only calls on the example tools: reads of ``paths``, listings of their
    directories and a search, in turn."""
    directories = sorted({str(PurePosixPath(p).parent) for p in paths})
    shapes: list[tuple[str, dict[str, Any]]] = [("read_file", {"path": p}) for p in paths]
    shapes += [("list_dir", {"path": d}) for d in directories]
    shapes.append(("search_text", {"pattern": "TODO"}))
    return [
        ToolCall(f"c{i}", name, _encode(arguments).decode())
        for i, (name, arguments) in enumerate(islice(cycle(shapes), n), 1)
    ]


def resized(calls: Sequence[ToolCall], n: int) -> list[ToolCall]:
    """``calls`` repeated or cut to ``n``; a repeated call's id gets ``#2``, ``#3``, …"""
    out = list(calls[:n])
    round_ = 1
    while len(out) < n:
        round_ += 1
        out.extend(ToolCall(f"{c.id}#{round_}", c.name, c.arguments) for c in calls[: n - len(out)])
    return out


def _check_tools(registry: ToolRegistry, calls: Sequence[ToolCall]) -> None:
    unknown = sorted({c.name for c in calls if registry.get(c.name) is None})
    if unknown:
        names = ", ".join(f'"{name}"' for name in unknown)
        raise UsageError(
            f"the calls name tools the registry does not have: {names} "
            "(a bare nursery has no body to run for them)"
        )


# -- measuring ----------------------------------------------------------------------------

Tick = Callable[[str], None]


async def measure(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    max_parallel: int,
    repeat: int,
    tick: Tick | None = None,
) -> BenchReport:
    """Time ``calls`` through ``registry`` and through a bare nursery, ``repeat`` times.

    Args:
        registry: the registry to measure, as configured (its hooks and policies run).
        calls: the batch; every call must name a tool the registry has.
        max_parallel: the batch's cap, and the bare nursery's limiter when below
            ``len(calls)``.
        repeat: timed runs of each side.
        tick: called with a description before each run (for a progress display).
    """
    step = tick if tick is not None else _ignore
    n = len(calls)
    definitions = [registry.get(c.name) for c in calls]
    bodies = [d for d in definitions if d is not None]
    if len(bodies) != n:
        raise ValueError("every call must name a tool the registry has")
    limiter = trio.CapacityLimiter(max_parallel) if max_parallel < n else None

    async def ours() -> list[ToolExecutionResult]:
        return await run_tool_calls(registry, calls, max_parallel=max_parallel)

    step("warm-up")
    await ours()
    await _bare(_jobs(calls, bodies), limiter)
    ours_us: list[float] = []
    bare_us: list[float] = []
    results: list[ToolExecutionResult] = []
    for rep in range(1, repeat + 1):
        step(f"toolnursery {rep}/{repeat}")
        gc.collect()
        start = time.perf_counter()
        results = await ours()
        ours_us.append((time.perf_counter() - start) / n * 1e6)
        step(f"bare nursery {rep}/{repeat}")
        jobs = _jobs(calls, bodies)
        gc.collect()
        start = time.perf_counter()
        await _bare(jobs, limiter)
        bare_us.append((time.perf_counter() - start) / n * 1e6)
    step("phase timings")
    phases = await _phase_seconds(registry, ours)
    phase_mean_us = share = None
    if phases is not None:
        total = sum(phases.values())
        phase_mean_us = {k: v / n * 1e6 for k, v in phases.items()}
        share = {k: v / total for k, v in phases.items()}
    return BenchReport(
        calls=n,
        tools=dict(Counter(c.name for c in calls)),
        max_parallel=max_parallel,
        repeat=repeat,
        toolnursery_us=Spread.of(ours_us),
        bare_us=Spread.of(bare_us),
        ratio=Spread.of([a / b for a, b in zip(ours_us, bare_us, strict=True)]),
        phase_mean_us=phase_mean_us,
        phase_share=share,
        results_by_code=dict(sorted(Counter(outcome(r) for r in results).items())),
        python=sys.version.split()[0],
        trio=trio.__version__,
        toolnursery=version(),
    )


def _ignore(_: str) -> None:
    return None


async def _phase_seconds(
    registry: ToolRegistry, run: Callable[[], Awaitable[object]]
) -> dict[str, float] | None:
    """Each phase's seconds over one more run, with the registry's per-phase timings on
    for it when the registry has the switch; ``None`` when it keeps none."""
    switch = hasattr(registry, "phase_timings")
    settable = cast(Any, registry)
    was = getattr(registry, "phase_timings", None)
    if switch:
        settable.phase_timings = True
    try:
        before = dict(registry.statistics().phase_seconds)
        await run()
        after = dict(registry.statistics().phase_seconds)
    finally:
        if switch:
            settable.phase_timings = was
    spent = {k: max(after.get(k, 0.0) - before.get(k, 0.0), 0.0) for k in after}
    return spent if sum(spent.values()) > 0 else None


class _Job:
    """One call of the bare side: its body, its arguments as sent, and a context."""

    __slots__ = ("arguments", "body", "ctx", "threaded")

    def __init__(self, call: ToolCall, definition: ToolDefinition, parsed: Any) -> None:
        try:
            parsed = snapshot(parsed)
        except ValueError:
            pass  # not lossless JSON: the context holds what was parsed
        signal = CancelSignal()
        execution = ToolExecution(
            call.id, call.name, parsed, signal, None, None, ToolExecutionToken()
        )
        self.arguments = call.arguments
        self.body = definition.execute
        self.ctx = ToolRunContext(execution, signal, [])
        self.threaded = not is_async(self.body)


def _jobs(calls: Sequence[ToolCall], definitions: Sequence[ToolDefinition]) -> list[_Job]:
    """The bare side's jobs: a call whose arguments cannot be parsed has none (the
    pipeline answers it ``INVALID_ARGS`` without running its body)."""
    jobs: list[_Job] = []
    for call, definition in zip(calls, definitions, strict=True):
        try:
            parsed = parse_arguments(call.arguments)
        except ToolArgsError:
            continue
        jobs.append(_Job(call, definition, parsed))
    return jobs


async def _bare(jobs: Sequence[_Job], limiter: trio.CapacityLimiter | None) -> None:
    """Every job in one nursery: decode its arguments, run its body. A body that raises
    is done (the pipeline turns the exception into a result)."""

    async def one(job: _Job) -> None:
        try:
            args = parse_arguments(job.arguments)
            if job.threaded:
                await trio.to_thread.run_sync(job.body, args, job.ctx)
            else:
                await job.body(args, job.ctx)
        except Exception:
            pass

    async def limited(job: _Job) -> None:
        assert limiter is not None
        async with limiter:
            await one(job)

    task = one if limiter is None else limited
    async with trio.open_nursery() as nursery:
        for job in jobs:
            nursery.start_soon(task, job)


# -- showing ------------------------------------------------------------------------------


def render(report: BenchReport) -> str:
    """The report as text, for a terminal."""
    tools = ", ".join(f"{name} x{count}" for name, count in report.tools.items())
    lines = [
        f"toolnursery bench: {report.calls} calls ({tools}), max_parallel "
        f"{report.max_parallel}, {report.repeat} repetition{'s' if report.repeat > 1 else ''}",
        f"{'':<22} {'median':>9} {'min':>9} {'max':>9} {'spread':>7}",
    ]
    for label, spread, unit in (
        ("toolnursery µs/call", report.toolnursery_us, ""),
        ("bare nursery µs/call", report.bare_us, ""),
        ("ratio", report.ratio, "x"),
    ):
        lines.append(
            f"{label:<22} {_num(spread.median, unit):>9} {_num(spread.min, unit):>9} "
            f"{_num(spread.max, unit):>9} {spread.relative:>7.0%}"
        )
    if report.phase_mean_us is None or report.phase_share is None:
        lines.append(f"phases: {PHASES_UNAVAILABLE}")
    else:
        mean = report.phase_mean_us
        lines.append(
            "phase shares: " + ", ".join(f"{k} {v:.0%}" for k, v in report.phase_share.items())
        )
        lines.append(
            "mean µs per call in each phase (calls overlap): "
            + ", ".join(f"{k} {_num(v, '')}" for k, v in mean.items())
        )
    results = ", ".join(f"{code} {count}" for code, count in report.results_by_code.items())
    lines.append(f"results: {results}")
    return "\n".join(lines) + "\n"


def _num(value: float, unit: str) -> str:
    if unit:
        return f"{value:.2f}{unit}"
    return f"{value:.2f}" if value < 1000 or not math.isfinite(value) else f"{value:.0f}"


@contextmanager
def _progress(mode: str, repeat: int) -> Iterator[Tick | None]:
    """A rich progress bar on stderr, moved between runs; ``None`` when there is none."""
    isatty = getattr(sys.stderr, "isatty", None)
    on = mode == "always" or (mode == "auto" and isatty is not None and bool(isatty()))
    if not on:
        yield None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    except ImportError:
        if mode == "always":
            say("--progress always needs rich: pip install 'toolnursery[cli]'")
        yield None
        return
    total = 2 + 2 * repeat  # the warm-up, each side's repetitions, the phase run
    console = Console(file=sys.stderr, force_terminal=mode == "always" or None)
    with Progress(
        TextColumn("toolnursery bench: {task.description:<20}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        auto_refresh=False,
    ) as progress:
        task = progress.add_task("starting", total=total)
        started = False

        def tick(description: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=description, refresh=True)

        yield tick
        progress.update(task, completed=total, refresh=True)
