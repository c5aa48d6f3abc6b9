"""Per-call cost of a batch awaited from asyncio, against trio.run and asyncio.gather.

What it measures (µs per call; the median of ``--repeat`` timed batches per round,
then the median over ``--rounds`` rounds that alternate the runs, all in this process):

* **trio**: ``await toolnursery.run_tool_calls(...)`` inside one ``trio.run`` — a batch
  of N = 1000 no-op ``parallel`` calls.
* **aio**: ``await toolnursery.aio.run_tool_calls(...)`` on the same registry and calls
  inside one ``asyncio.run``, the trio side running as a guest of that loop (the
  host is started by a warm-up batch, so a timed batch never pays a trio start-up).
* **gather**: ``await asyncio.gather(*(body(args, None) for each call))`` — the same
  no-op body awaited bare on asyncio, with no pipeline or scheduler at all.
* **aio+asyncio tool**: as *aio*, but the body is declared with ``asyncio_tool``, so
  every call also starts an asyncio task on the host loop and awaits it from trio.

Each is run with ``max_parallel = N`` (the cap is not the bottleneck) and with the
default cap of 10. The ratio the issue asks for is *aio / trio* (goal ≤ 1.5×).

Run: ``python benchmarks/bench_aio.py`` (``--quick`` for fewer repetitions).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

import toolnursery.aio
from toolnursery import ToolCall, ToolDefinition, ToolRegistry, ToolRunContext, run_tool_calls


async def noop(args: Any, ctx: ToolRunContext | None) -> str:
    return "ok"


def always(args: Any) -> bool:
    return True


def make_registry(*, asyncio_body: bool = False) -> ToolRegistry:
    definition = ToolDefinition(
        "noop", "does nothing", {"type": "object"}, noop, is_concurrency_safe=always
    )
    registry = ToolRegistry()
    registry.register(toolnursery.aio.asyncio_tool(definition) if asyncio_body else definition)
    return registry


def make_calls(n: int) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "noop", "{}") for i in range(n)]


async def _median_us(batch: Callable[[], Awaitable[object]], n: int, repeat: int) -> float:
    await batch()  # warm-up (and, for asyncio, the host's start-up)
    times: list[float] = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        await batch()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / n * 1e6


def measure_trio(n: int, cap: int, repeat: int) -> float:
    registry = make_registry()
    calls = make_calls(n)

    async def main() -> float:
        return await _median_us(
            lambda: run_tool_calls(registry, calls, max_parallel=cap), n, repeat
        )

    return trio.run(main)


def measure_asyncio(n: int, cap: int, repeat: int) -> dict[str, float]:
    registry = make_registry()
    asyncio_registry = make_registry(asyncio_body=True)
    calls = make_calls(n)

    async def gather() -> object:
        return await asyncio.gather(*(noop({}, None) for _ in calls))

    async def main() -> dict[str, float]:
        return {
            "aio": await _median_us(
                lambda: toolnursery.aio.run_tool_calls(registry, calls, max_parallel=cap),
                n,
                repeat,
            ),
            "gather": await _median_us(gather, n, repeat),
            "aio+asyncio tool": await _median_us(
                lambda: toolnursery.aio.run_tool_calls(asyncio_registry, calls, max_parallel=cap),
                n,
                repeat,
            ),
        }

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()
    n = options.calls
    repeat, rounds = (5, 3) if options.quick else (20, 5)
    print(f"N = {n} no-op parallel calls; µs per call (median of {rounds} rounds)")
    for cap in (n, 10):
        figures: dict[str, list[float]] = {}
        for _ in range(rounds):
            figures.setdefault("trio", []).append(measure_trio(n, cap, repeat))
            for name, value in measure_asyncio(n, cap, repeat).items():
                figures.setdefault(name, []).append(value)
        med = {name: statistics.median(values) for name, values in figures.items()}
        trio_us = med["trio"]
        print(f"\nmax_parallel = {cap}")
        for name, value in med.items():
            print(f"  {name:<18} {value:7.2f} µs/call   {value / trio_us:5.2f}× trio")
        print(f"  aio / trio   = {med['aio'] / trio_us:.2f}×  (goal ≤ 1.5×)")
        print(f"  aio / gather = {med['aio'] / med['gather']:.2f}×")


if __name__ == "__main__":
    main()
