"""Per-call cost of one ``ToolRegistry.execute()``, against bare trio in the same run.

What it measures (µs per call; the median over several repetitions, each repetition
running N calls back to back in one trio run):

* ``execute()`` of a no-op ``async def`` tool (a raw ``ToolDefinition``)
  (a) with no listeners at all, and
  (b) with one pre-execute listener, one guard, one execute wrapper, one post-execute
      listener and one result observer, all pass-through.
* The same two cases for a body that awaits one checkpoint (``execute awaiting``),
  beside ``bare start_soon, awaiting`` running that body: a body with no ``await``
  cannot be cancelled and runs without a cancel scope, one that awaits pays a scope.
* If ``toolnursery.define_tool`` imports: the same two cases for a ``define_tool``
  tool with a one-field ``SchemaSpec`` ``{"x": {"type": "number"}}`` (arguments are
  validated before the body), called with ``{"x": 1}``.
* Baselines, measured in the same run on the same body:
  ``bare start_soon`` — one nursery, ``nursery.start_soon(body, args, None)`` once per
  call (spawn + run of one trio task, the unit DESIGN.md budgets against; the ratios
  are taken against it); ``bare nursery/call`` — ``async with open_nursery()`` +
  ``start_soon`` per call (what running each call as its own joined task costs); and
  ``direct await`` — ``await body(args, None)``, the floor.

Each ``execute()`` input is built before the timed loop (a fresh
``ToolExecutionInput`` and ``CancelSignal`` per call), so the numbers are the
pipeline's own cost: snapshotting the arguments, the phases, the body's cancel scope,
normalizing, materializing and notifying.

Run: ``python benchmarks/bench_pipeline.py`` (``--quick`` for fewer repetitions,
``--calls N`` and ``--repeat R`` to change the sizes).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from toolnursery import (
    CancelSignal,
    ToolDefinition,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
)
from toolnursery._decisions import PostToolDecision, PreToolDecision

ARGS: dict[str, Any] = {"x": 1}


async def noop(args: Any, ctx: ToolRunContext | None) -> str:
    return "ok"


async def pre(
    execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
) -> PreToolDecision:
    return await next_()


def guard(execution: ToolExecution) -> str | None:
    return None


async def wrap(
    view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
) -> ToolExecutionResult:
    return await next_()


async def post(
    execution: ToolExecution,
    result: ToolExecutionResult,
    next_: Callable[[], Awaitable[PostToolDecision]],
) -> PostToolDecision:
    return await next_()


def observe(execution: ToolExecution, result: ToolExecutionResult) -> None:
    return None


def make_registry(definition: ToolDefinition, hooks: bool) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(definition)
    if hooks:
        registry.on_pre_execute(pre)
        registry.guard(guard)
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        registry.on_result(observe)
    return registry


Timed = Callable[[int], Awaitable[float]]


def execute_case(registry: ToolRegistry, name: str) -> Timed:
    async def run(n: int) -> float:
        inputs = [ToolExecutionInput(f"c{i}", name, ARGS, CancelSignal()) for i in range(n)]
        execute = registry.execute
        start = time.perf_counter()
        for input_ in inputs:
            result = await execute(input_)
        elapsed = time.perf_counter() - start
        assert not result.is_error, result
        return elapsed

    return run


async def bare_start_soon(n: int) -> float:
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(noop, ARGS, None)
    return time.perf_counter() - start


async def yields(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


async def bare_start_soon_yields(n: int) -> float:
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(yields, ARGS, None)
    return time.perf_counter() - start


async def bare_nursery_per_call(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(noop, ARGS, None)
    return time.perf_counter() - start


async def direct_await(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await noop(ARGS, None)
    return time.perf_counter() - start


def build_cases() -> tuple[dict[str, Timed], str | None]:
    raw = ToolDefinition("noop", "does nothing", {"type": "object"}, noop)
    cases: dict[str, Timed] = {
        "bare start_soon": bare_start_soon,
        "bare nursery/call": bare_nursery_per_call,
        "direct await": direct_await,
        "execute raw, no hooks": execute_case(make_registry(raw, False), "noop"),
        "execute raw, 5 hooks": execute_case(make_registry(raw, True), "noop"),
        # A body that awaits can be cancelled, so it runs in a cancel scope of its own.
        "bare start_soon, awaiting": bare_start_soon_yields,
        "execute awaiting, no hooks": execute_case(
            make_registry(ToolDefinition("noop", "awaits", {"type": "object"}, yields), False),
            "noop",
        ),
        "execute awaiting, 5 hooks": execute_case(
            make_registry(ToolDefinition("noop", "awaits", {"type": "object"}, yields), True),
            "noop",
        ),
    }
    try:
        from toolnursery import define_tool
    except ImportError as exc:
        return cases, f"define_tool variant skipped: {exc}"
    defined = define_tool(
        name="noop",
        description="does nothing",
        parameters={"x": {"type": "number"}},
        execute=noop,
    )
    cases["execute define_tool, no hooks"] = execute_case(make_registry(defined, False), "noop")
    cases["execute define_tool, 5 hooks"] = execute_case(make_registry(defined, True), "noop")
    return cases, None


async def measure(cases: dict[str, Timed], calls: int, repeat: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for timed in cases.values():  # warm-up: caches, code paths, allocator
        await timed(min(calls, 200))
    for _ in range(repeat):
        # Interleave the cases so drift (thermal, other load) hits them alike.
        for name, timed in cases.items():
            gc.collect()
            elapsed = await timed(calls)
            samples[name].append(elapsed / calls * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per repetition")
    parser.add_argument("--repeat", type=int, default=9, help="repetitions per case")
    parser.add_argument("--quick", action="store_true", help="1000 calls x 5 repetitions")
    options = parser.parse_args()
    calls, repeat = (1000, 5) if options.quick else (options.calls, options.repeat)
    cases, note = build_cases()
    samples = trio.run(measure, cases, calls, repeat)
    baseline = statistics.median(samples["bare start_soon"])
    print(f"toolnursery execute() per call — {calls} calls x {repeat} repetitions, median µs")
    print(f"{'case':<32} {'median':>8} {'min':>8} {'max':>8} {'x bare':>8}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:<32} {median:8.2f} {min(values):8.2f} {max(values):8.2f} "
            f"{median / baseline:8.2f}"
        )
    if note:
        print(note)


if __name__ == "__main__":
    main()
