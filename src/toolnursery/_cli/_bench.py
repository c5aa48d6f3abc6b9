"""``toolnursery bench``: what the pipeline costs per call, against a bare trio nursery.

By default the workload is the benchmarks page's headline (``bench_scheduler.py``):
one bundled tool whose body awaits one checkpoint and returns, ``N`` calls with ``{}``
arguments, no hooks. ``--tools`` runs the user's registry as it is — its hooks,
policies and per-tool limits included — on the user's calls; ``--examples`` (or
``--calls`` alone) runs the bundled example tools, which do real file I/O.

Each call goes through :func:`run_tool_calls` and, in the same process, through a bare
trio nursery: one ``start_soon`` per call of a task that decodes the call's arguments
with ``json.loads``, awaits the body (a plain ``def`` body through
``trio.to_thread.run_sync``, as the pipeline runs it) and stores its result, under a
``CapacityLimiter`` when ``--max-parallel`` is below the number of calls. The bodies'
contexts are built before the clock starts, so the bare side is the floor: the ratio is
everything toolnursery adds (the arguments' freezing, policy, scheduling, results).

Both clocks are read around every sample: the process's CPU time (every thread's, so
a ``def`` body's worker thread counts on both sides) and the wall clock (which also
counts waiting: I/O, sleeps, other processes holding the CPU). A sample is one run of
each side, alternating (for the bundled trivial tool, as many batches as make about
1000 calls); a repetition is the median of its samples, and the report gives the
median, min and max over the repetitions. One more run, with the registry's per-phase
timings on, gives each phase's share. Nothing is drawn or recorded while a side is
timed: the progress display moves between repetitions only.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from itertools import cycle, islice
from pathlib import PurePosixPath
from typing import Any, Final, TypeVar, cast

import msgspec
import trio

from .._batch._scheduler import run_tool_calls
from .._core._arguments import parse_arguments
from .._core._bodies import is_async
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import ToolArgsError, ToolNotFoundError, ToolTimeoutError
from .._core._execution import ToolExecution, ToolExecutionToken, ToolRunContext
from .._core._json import snapshot
from .._core._signal import CancelSignal
from .._core._statistics import outcome
from .._examples._sandbox import fill_sandbox
from .._examples._toolset import example_registry
from .._pipeline._registry import ToolRegistry
from .._tools._definition import ToolDefinition
from ._bench_report import BenchReport, Clock, render
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
    "add_bench_parser",
    "bench_command",
    "bundled_calls",
    "measure",
    "resized",
    "trivial_calls",
    "trivial_registry",
]

DEFAULT_CALLS: Final = 1000
DEFAULT_REPEAT: Final = 3
SAMPLES: Final = 5
"""Interleaved samples per repetition (a repetition is their median)."""
SAMPLE_CALLS: Final = 1000
"""About how many calls a sample of the bundled trivial tool runs through each side."""
TRIVIAL_TOOL: Final = "noop"
BARE_LIMIT_FACTOR: Final = 20
BARE_LIMIT_S: Final = 10.0
"""The bare side gives up after this many seconds, or ``BARE_LIMIT_FACTOR`` times what
toolnursery's warm-up batch took, whichever is longer."""
_T = TypeVar("_T")

# -- the command line ---------------------------------------------------------------------


def add_bench_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand to the ``toolnursery`` parser."""
    bench = commands.add_parser(
        "bench",
        help="measure the pipeline's cost per call against a bare trio nursery",
        description=(
            "Run tool calls through the registry's pipeline and scheduler, and the same "
            "tool bodies in a bare trio nursery, interleaved in one process; print µs "
            "per call on the CPU clock and on the wall clock, the ratios, the spread over "
            "repetitions and each phase's share. Default: the benchmarks page's "
            "workload, a bundled tool whose body awaits one checkpoint. With --tools (or "
            "--examples) the calls run for real, many times: give it calls that are safe "
            "to repeat."
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
        help="the tool calls to run, as for run (JSON or JSON lines; - for stdin); "
        "without --tools, on the bundled example tools",
    )
    bench.add_argument(
        "--examples",
        action="store_true",
        help="the bundled example tools (real file I/O in a temporary sandbox) on a "
        "generated read-only batch, instead of the trivial tool",
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
        help=f"repetitions, each the median of {SAMPLES} interleaved samples; the report "
        f"gives their median and spread (default: {DEFAULT_REPEAT}, at most {MAX_REPEAT})",
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
    if options.examples and options.tools is not None:
        raise UsageError("--examples runs the bundled example tools: not with --tools")
    calls = read_calls(options.calls) if options.calls is not None else None
    registry = load_registry(options.tools) if options.tools is not None else None
    if calls is not None and not calls:
        source = "<stdin>" if options.calls == "-" else options.calls
        raise UsageError(f"no tool calls in {source}; nothing to benchmark")
    with ExitStack() as stack:
        if registry is not None:
            workload = "tools"
        elif options.examples or calls is not None:
            workload = "examples"
            sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-"))
            paths = fill_sandbox(sandbox)
            registry = example_registry(sandbox)
            if calls is None:
                calls = bundled_calls(paths, options.n or DEFAULT_CALLS)
        else:
            workload = "trivial"
            registry = trivial_registry()
            calls = trivial_calls(options.n or DEFAULT_CALLS)
        assert calls is not None
        if options.n is not None:
            calls = resized(calls, options.n)
        _check_tools(registry, calls)
        max_parallel = options.max_parallel or len(calls)
        batches = max(1, SAMPLE_CALLS // len(calls)) if workload == "trivial" else 1
        with _progress(options.progress, options.repeat) as tick:
            try:
                report = trio.run(
                    measure,
                    registry,
                    calls,
                    max_parallel,
                    options.repeat,
                    tick,
                    batches,
                    workload,
                )
            except BareSideHung as exc:
                say(f"error: {exc}")
                return EXIT_FAILED
            except Exception as exc:
                say(f"error: the batch failed: {type(exc).__name__}: {exc}")
                return EXIT_FAILED
    sys.stdout.write(_encode(report).decode() + "\n" if options.json else render(report))
    sys.stdout.flush()
    return EXIT_OK


_encode = msgspec.json.Encoder().encode


async def _checkpoint_body(args: Any, ctx: ToolRunContext) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


def _always(args: Any) -> bool:
    return True


def trivial_registry() -> ToolRegistry:
    """The benchmarks page's registry: one parallel-safe tool whose body awaits one
    checkpoint and returns ``"ok"``; no hooks, no policies."""
    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            TRIVIAL_TOOL,
            "does nothing",
            {"type": "object"},
            _checkpoint_body,
            is_concurrency_safe=_always,
        )
    )
    return registry


def trivial_calls(n: int) -> list[ToolCall]:
    """``n`` calls of the trivial tool, each with ``{}`` as its arguments."""
    return [ToolCall(f"c{i}", TRIVIAL_TOOL, "{}") for i in range(1, n + 1)]


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


def _unknown(registry: ToolRegistry, name: str) -> str:
    """``"name"``, with the registry's closest tool name when one is close."""
    try:
        registry.require(name)
    except ToolNotFoundError as exc:
        if exc.suggestion is not None:
            return f'"{name}" (did you mean "{exc.suggestion}"?)'
    return f'"{name}"'


def _check_tools(registry: ToolRegistry, calls: Sequence[ToolCall]) -> None:
    unknown = sorted({c.name for c in calls if registry.get(c.name) is None})
    if unknown:
        names = ", ".join(_unknown(registry, name) for name in unknown)
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
    batches_per_sample: int = 1,
    workload: str = "tools",
) -> BenchReport:
    """Time ``calls`` through ``registry`` and through a bare nursery, interleaved.

    Args:
        registry: the registry to measure, as configured (its hooks and policies run).
        calls: the batch; every call must name a tool the registry has.
        max_parallel: the batch's cap, and the bare nursery's limiter when below
            ``len(calls)``.
        repeat: repetitions; each is the median of :data:`SAMPLES` samples, a sample
            being ``batches_per_sample`` batches through each side, one side after the
            other.
        tick: called with a description before each sample (for a progress display).
        batches_per_sample: the batches each side runs in one sample.
        workload: what the report calls the workload (see :class:`BenchReport`).
    """
    step = tick if tick is not None else _ignore
    n = len(calls)
    definitions = [registry.get(c.name) for c in calls]
    bodies = [d for d in definitions if d is not None]
    if len(bodies) != n:
        raise ValueError("every call must name a tool the registry has")
    limiter = trio.CapacityLimiter(max_parallel) if max_parallel < n else None
    results: list[ToolExecutionResult] = []

    async def ours() -> None:
        nonlocal results
        for _ in range(batches_per_sample):
            results = await run_tool_calls(registry, calls, max_parallel=max_parallel)

    async def bare(jobs: Sequence[_Job]) -> None:
        for _ in range(batches_per_sample):
            await _bare(jobs, limiter)

    step("warm-up")
    began = trio.current_time()
    await ours()
    # The bare side enforces each tool's own timeout_ms; a deadline only the registry's
    # policy knows (its default_timeout_ms) it cannot: past this, it gives up.
    limit = max(BARE_LIMIT_FACTOR * (trio.current_time() - began), BARE_LIMIT_S)
    jobs = _jobs(calls, bodies)
    await _bounded(partial(bare, jobs), limit)
    per_call = 1e6 / (n * batches_per_sample)
    cpu: tuple[list[float], list[float]] = ([], [])
    wall: tuple[list[float], list[float]] = ([], [])
    for rep in range(1, repeat + 1):
        step(f"repetition {rep}/{repeat}")
        samples: list[tuple[float, float, float, float]] = []
        for _ in range(SAMPLES):
            ours_cpu, ours_wall = await _timed(ours)
            jobs = _jobs(calls, bodies)
            bare_cpu, bare_wall = await _bounded(partial(_timed, partial(bare, jobs)), limit)
            samples.append((ours_cpu, bare_cpu, ours_wall, bare_wall))
        for column, into in zip(zip(*samples, strict=True), (*cpu, *wall), strict=True):
            into.append(statistics.median(column) * per_call)
    step("phase timings")
    phases = await _phase_seconds(registry, ours)
    phase_mean_us = share = None
    if phases is not None:
        total = sum(phases.values())
        phase_mean_us = {k: v * per_call for k, v in phases.items()}
        share = {k: v / total for k, v in phases.items()}
    return BenchReport(
        workload=workload,
        calls=n,
        tools=dict(Counter(c.name for c in calls)),
        max_parallel=max_parallel,
        repeat=repeat,
        samples=SAMPLES,
        batches_per_sample=batches_per_sample,
        cpu=Clock.of(*cpu),
        wall=Clock.of(*wall),
        phase_mean_us=phase_mean_us,
        phase_share=share,
        results_by_code=dict(sorted(Counter(outcome(r) for r in results).items())),
        load_average=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        python=sys.version.split()[0],
        trio=trio.__version__,
        toolnursery=version(),
    )


class BareSideHung(RuntimeError):
    """The bare side did not finish where toolnursery's did (a deadline only the
    registry's timeout policy enforces)."""


async def _bounded(run: Callable[[], Awaitable[_T]], limit: float) -> _T:
    """``run()``, given up after ``limit`` seconds with :class:`BareSideHung`."""
    with trio.move_on_after(limit):
        return await run()
    raise BareSideHung(
        f"the bare side did not finish within {limit:g}s where toolnursery's did: its "
        "bodies rely on a deadline the bare nursery does not enforce (it honours each "
        "tool's timeout_ms, not a timeout policy's default_timeout_ms); give the tools "
        "their own timeout_ms"
    )


async def _timed(run: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """The process's CPU seconds and the wall seconds ``run`` took."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    await run()
    return time.process_time() - cpu, time.perf_counter() - wall


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
    """One call of the bare side: its body, its arguments, and a context.

    ``text`` is the arguments' JSON text, decoded with ``json.loads`` inside the timed
    run; arguments that are not JSON text (a mapping, ``""``) are given to the body as
    the pipeline parsed them (``parsed``).
    """

    __slots__ = ("body", "budget", "ctx", "parsed", "signal", "text", "threaded")

    def __init__(self, call: ToolCall, definition: ToolDefinition, parsed: Any) -> None:
        self.parsed = parsed
        self.text: str | None = None
        if isinstance(call.arguments, str):
            try:
                json.loads(call.arguments)
            except ValueError:
                pass
            else:
                self.text = call.arguments
        try:
            parsed = snapshot(parsed)
        except ValueError:
            pass  # not lossless JSON: the context holds what was parsed
        signal = CancelSignal()
        execution = ToolExecution(
            call.id, call.name, parsed, signal, None, None, ToolExecutionToken()
        )
        self.body = definition.execute
        self.signal = signal
        self.ctx = ToolRunContext(execution, signal, [])
        self.threaded = not is_async(self.body)
        budget = definition.timeout_ms
        self.budget = None if budget is None else budget / 1000  # seconds


def _jobs(calls: Sequence[ToolCall], definitions: Sequence[ToolDefinition]) -> list[_Job]:
    """The bare side's jobs: a call whose arguments cannot be parsed, or are not an
    object, has none (the pipeline answers it ``INVALID_ARGS`` without running its
    body)."""
    jobs: list[_Job] = []
    for call, definition in zip(calls, definitions, strict=True):
        try:
            parsed = parse_arguments(call.arguments)
        except ToolArgsError:
            continue
        if not isinstance(parsed, dict):
            continue
        jobs.append(_Job(call, definition, parsed))
    return jobs


async def _bare(jobs: Sequence[_Job], limiter: trio.CapacityLimiter | None) -> list[object]:
    """Every job in one nursery: decode its arguments, run its body, store what it
    returned. A body that raises is done (the pipeline turns the exception into a
    result)."""
    results: list[object] = [None] * len(jobs)

    async def one(i: int, job: _Job) -> None:
        try:
            args = job.parsed if job.text is None else json.loads(job.text)
            if job.budget is not None:
                results[i] = await _within_budget(job, args)
            elif job.threaded:
                results[i] = await trio.to_thread.run_sync(job.body, args, job.ctx)
            else:
                results[i] = await job.body(args, job.ctx)
        except Exception as exc:
            results[i] = exc

    async def limited(i: int, job: _Job) -> None:
        assert limiter is not None
        async with limiter:
            await one(i, job)

    task = one if limiter is None else limited
    async with trio.open_nursery() as nursery:
        for i, job in enumerate(jobs):
            nursery.start_soon(task, i, job)
    return results


async def _within_budget(job: _Job, args: Any) -> object:
    """The body under its tool's ``timeout_ms``, as the timeout policy runs it: an
    ``async`` body is cancelled at the deadline; a thread body's ``ctx.signal`` fires
    then (it polls it). A body cut short returns :class:`ToolTimeoutError`."""
    assert job.budget is not None
    deadline = trio.current_time() + job.budget
    if job.threaded:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fire_at, job.signal, deadline)
            result = await trio.to_thread.run_sync(job.body, args, job.ctx)
            nursery.cancel_scope.cancel()
        timed_out = job.signal.cancelled
    else:
        with trio.CancelScope(deadline=deadline) as scope:
            result = await job.body(args, job.ctx)
        timed_out = scope.cancelled_caught
    return ToolTimeoutError(job.budget * 1000) if timed_out else result


async def _fire_at(signal: CancelSignal, deadline: float) -> None:
    await trio.sleep_until(deadline)
    signal.cancel("timed out")


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
            say("--progress always needs rich: pip install -e '.[cli]'")
        yield None
        return
    total = 2 + repeat  # the warm-up, the repetitions, the phase run
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
