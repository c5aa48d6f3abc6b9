"""Per-call cost of one ``ToolRegistry.execute()``, against bare trio in the same run.

Each row runs N ``execute()`` calls back to back and, in the same repetition, a bare
``trio.open_nursery()`` that ``start_soon``-s the same body N times; it prints µs per
call (CPU time of the trio thread: on a shared machine the time other processes hold the
CPU is not counted) and the ratio execute / bare, each as the median with the min–max
over the repetitions. The headline body awaits one checkpoint (as real tools do; it
runs in one cancel scope linked to the call's signal); the "no-await" rows use a body
with no ``await``, which needs no scope.

Rows, as in the scheduler's table (``benchmarks/bench_scheduler.py``) but for one call
at a time: no hooks; one listener in each of the five phases; one execute wrapper only;
``install_timeout_policy`` only (the tool budgeted); the timeout and retry policies
both installed (the tool idempotent, nothing fails); the same for a ``define_tool``
tool with a one-field schema ``{"x": {"type": "number"}}`` (validated before the body).
Each ``execute()`` input is built before the timed loop.

Run: ``python benchmarks/bench_pipeline.py`` (``--quick`` for a fast run, ``--calls N``
and ``--repeat R`` to change the sizes).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from typing import Any

import trio

from passthrough import guard, observe, post, pre, wrap
from toolnursery import (
    CancelSignal,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    install_retry_policy,
    install_timeout_policy,
)

ARGS: dict[str, Any] = {"x": 1}


async def noop(args: Any, ctx: ToolRunContext | None) -> str:
    return "ok"


def make_registry(definition: ToolDefinition, case: str) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(definition)
    if case == "five":
        registry.on_pre_execute(pre)
        registry.guard(guard)
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        registry.on_result(observe)
    elif case == "wrapper":
        registry.on_execute(wrap)
    elif case in ("timeout", "timeout+retry"):
        install_timeout_policy(registry)
        if case == "timeout+retry":
            install_retry_policy(registry, codes=["FLAKY"], backoff_ms=1)
    return registry


async def yields(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


async def run_execute(registry: ToolRegistry, n: int) -> float:
    inputs = [ToolExecutionInput(f"c{i}", "noop", ARGS, CancelSignal()) for i in range(n)]
    execute = registry.execute
    gc.collect()
    start = time.process_time()
    for input_ in inputs:
        result = await execute(input_)
    elapsed = time.process_time() - start
    assert not result.is_error, result
    return elapsed


async def run_bare(body: Any, n: int) -> float:
    gc.collect()
    start = time.process_time()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(body, ARGS, None)
    return time.process_time() - start


CASES = (
    ("no hooks", "none"),
    ("one listener in each of the five phases", "five"),
    ("one execute wrapper only", "wrapper"),
    ("install_timeout_policy only (budgeted)", "timeout"),
    ("timeout + retry, nothing fails", "timeout+retry"),
)


def build_rows() -> list[tuple[str, ToolRegistry, Any]]:
    rows: list[tuple[str, ToolRegistry, Any]] = []
    for body, kind in ((yields, ""), (noop, "no-await body: ")):
        raw = ToolDefinition(
            "noop", "does nothing", {"type": "object"}, body, timeout_ms=60_000, idempotent=True
        )
        for label, case in CASES:
            rows.append((f"{kind}{label}", make_registry(raw, case), body))
    defined = define_tool(
        name="noop",
        description="does nothing",
        parameters={"x": {"type": "number"}},
        execute=yields,
        timeout_ms=60_000,
        idempotent=True,
    )
    for label, case in CASES[:2]:
        rows.append((f"define_tool: {label}", make_registry(defined, case), yields))
    return rows


async def measure(calls: int, repeat: int) -> None:
    rows = build_rows()
    header = f"{'execute() case':<56} {'µs/call':>22} {'bare µs/call':>22} {'ratio':>20}"
    print(f"µs per call and ratio: median (min–max) over {repeat} repetitions of {calls} calls")
    print(header)
    print("-" * len(header))
    for label, registry, body in rows:
        await run_execute(registry, min(calls, 200))  # warm caches and code paths
        await run_bare(body, min(calls, 200))
        ours: list[float] = []
        bare: list[float] = []
        for _ in range(repeat):
            ours.append(await run_execute(registry, calls) / calls * 1e6)
            bare.append(await run_bare(body, calls) / calls * 1e6)
        ratios = [o / b for o, b in zip(ours, bare, strict=True)]
        print(
            f"{label:<56} {_spread(ours):>22} {_spread(bare):>22} {_spread(ratios):>20}", flush=True
        )


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per repetition")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per row")
    parser.add_argument("--quick", action="store_true", help="1000 calls per repetition")
    options = parser.parse_args()
    calls = 1000 if options.quick else options.calls
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    trio.run(measure, calls, options.repeat)


if __name__ == "__main__":
    main()
