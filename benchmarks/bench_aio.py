"""A batch awaited from asyncio, against a bare asyncio ``TaskGroup`` doing the same work.

Per-call work on both sides: ``json.loads`` of the call's arguments (``{"q": "<i>"}``),
a body that awaits ``asyncio.sleep(0)`` once, the result stored. Ours:
``await toolnursery.aio.run_tool_calls(registry, calls, max_parallel=N)`` with the body
declared ``asyncio_tool`` against a one-property raw schema that is validated, which
runs on the native asyncio driver; the bare side: one ``TaskGroup``, one task per call.

Cases: N = 1, 2, 10 without hooks; N = 10 with five pass-through hooks (one per
phase, ``passthrough.py``); N = 10 with the body a trio ``async def`` (undeclared,
awaiting ``trio.lowlevel.checkpoint()``), which runs in the trio guest run.

Clock: ``time.process_time_ns`` (the guest run's I/O wait happens in a second thread,
which a thread clock would miss). Each block runs in a fresh ``asyncio.run`` after two
untimed warm-up batches; the two sides alternate block by block, the order rotating;
the ratio of a run is the ratio of the sides' medians. Three runs: their spread is
printed (the machine is shared: a single figure would lie).

Run: ``python benchmarks/bench_aio.py`` (``--quick``: fewer blocks).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import toolnursery.aio
from passthrough import add_five
from toolnursery import ToolCall, ToolDefinition, ToolRegistry

loads = json.loads
PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}}


async def abody(args: Any, ctx: Any) -> str:
    await asyncio.sleep(0)
    return "ok"


async def tbody(args: Any, ctx: Any) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


def always(args: Any) -> bool:
    return True


def make_calls(n: int) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "noop", json.dumps({"q": str(i)})) for i in range(n)]


def make_registry(hooks: bool, trio_body: bool) -> ToolRegistry:
    body = tbody if trio_body else toolnursery.aio.asyncio_tool(abody)
    registry = ToolRegistry()
    registry.register(
        ToolDefinition("noop", "does nothing", PARAMETERS, body, is_concurrency_safe=always)
    )
    if hooks:
        add_five(registry)
    return registry


def ours(n: int, hooks: bool = False, trio_body: bool = False) -> Callable[[], Awaitable[Any]]:
    registry = make_registry(hooks, trio_body)
    calls = make_calls(n)

    def run() -> Awaitable[Any]:
        return toolnursery.aio.run_tool_calls(registry, calls, max_parallel=n)

    return run


def bare(n: int) -> Callable[[], Awaitable[Any]]:
    raws = [call.arguments for call in make_calls(n)]

    async def run() -> list[Any]:
        out: list[Any] = [None] * n

        async def one(i: int, raw: str) -> None:
            out[i] = await abody(loads(raw), None)

        async with asyncio.TaskGroup() as group:
            for i, raw in enumerate(raws):
                group.create_task(one(i, raw))
        return out

    return run


def block(make: Callable[[], Callable[[], Awaitable[Any]]], batches: int) -> int:
    """CPU ns of ``batches`` batches in a fresh loop, after two warm-up batches."""

    async def main() -> int:
        run = make()
        await run()
        await run()
        gc.collect()
        start = time.process_time_ns()
        for _ in range(batches):
            await run()
        return time.process_time_ns() - start

    return asyncio.run(main())


def one_run(
    a: Callable[[], Callable[[], Awaitable[Any]]],
    b: Callable[[], Callable[[], Awaitable[Any]]],
    batches: int,
    blocks: int,
) -> tuple[float, float, float]:
    """The ratio a ÷ b and each side's median CPU ns per batch, from one interleaved run."""
    times: dict[str, list[int]] = {"a": [], "b": []}
    for k in range(blocks):
        order = [("a", a), ("b", b)] if k % 2 == 0 else [("b", b), ("a", a)]
        for name, make in order:
            times[name].append(block(make, batches))
    ours, theirs = statistics.median(times["a"]), statistics.median(times["b"])
    return ours / theirs, ours / batches, theirs / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer blocks")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    blocks = 6 if options.quick else 12
    cases: list[tuple[str, int, bool, bool, str]] = [
        ("N=1, no hooks", 1, False, False, "≤ 1.1×"),
        ("N=2, no hooks", 2, False, False, "≤ 1.7×"),
        ("N=10, no hooks", 10, False, False, "≤ 1.5×"),
        ("N=10, five hooks", 10, True, False, "≤ 1.9×"),
        ("N=10, a trio tool (guest run)", 10, False, True, "stated"),
    ]
    print(f"ours ÷ a bare asyncio TaskGroup, process CPU clock; {options.runs} runs")
    print("ratio spread over the runs; µs per call: ours vs bare, medians of the same runs")
    print(f"load average: {os.getloadavg()}")
    for label, n, hooks, trio_body, goal in cases:
        batches = max(20, 2000 // n)
        runs = [
            one_run(
                functools.partial(ours, n, hooks, trio_body),
                functools.partial(bare, n),
                batches,
                blocks,
            )
            for _ in range(options.runs)
        ]
        ratios = [ratio for ratio, _, _ in runs]
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}×"
        ours_us = statistics.median(r[1] for r in runs) / n / 1000
        bare_us = statistics.median(r[2] for r in runs) / n / 1000
        each = f"{ours_us:.2f} vs {bare_us:.2f} µs/call"
        print(f"  {label:<32} {spread:<14} {each:<26} (goal {goal})", flush=True)


if __name__ == "__main__":
    main()
