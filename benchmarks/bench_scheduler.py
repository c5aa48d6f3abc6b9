"""Per-call cost of the batch scheduler, against a bare trio nursery in the same run.

Prints the rows of the scheduler's cost table. Each row runs ``run_tool_calls`` on N
``parallel`` calls carrying ``{"q": "<i>"}`` against a one-property raw JSON Schema
(validated, as every raw definition is) and, interleaved in the same trio run with the
order alternating, a bare ``trio.open_nursery()`` that ``start_soon``-s one task per call
doing the least work the scheduler's contract implies (``json.loads`` of the call's
arguments, the same body awaited, its value stored in model order: :func:`run_bare`); a
repetition is the median of interleaved samples of both (about 1000 calls each), timed on
the CPU clock, and the row shows µs per call and the ratio scheduler / bare as the median
with the min–max over the repetitions. The headline body awaits one checkpoint (as real tools do); the
rows marked "no-await" use a body with no ``await``, which the scheduler runs inline.

Rows (N = 1000 and ``max_parallel = N`` unless said):

* no hooks; one listener in each of the five phases (pre-execute, guard, execute
  wrapper, post-execute, result observer); one execute wrapper only;
  ``install_timeout_policy`` only with every tool budgeted; the timeout and retry
  policies both installed (the tool idempotent, nothing fails);
* ``max_parallel=10`` against the same bodies under a ``trio.CapacityLimiter(10)``;
* N = 1, no hooks (single-call latency); N = 10 (a typical model turn) and N = 2, each
  with no hooks and with one listener in each of the five phases;
* 50 calls that each sleep 10 ms: wall time against the bare nursery's;
* peak memory per call of a 10,000- and a 100,000-call batch (``tracemalloc`` peak in a
  fresh interpreter; the scheduler at ``max_parallel = N`` and at the default 10, and the
  bare nursery), which should be flat in N.

Run: ``python benchmarks/bench_scheduler.py`` (``--quick`` for a fast run,
``--repeat R``, ``--no-memory``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import trio

import toolnursery
from passthrough import guard, post, pre
from passthrough import observe as observer
from passthrough import wrap as wrapper
from toolnursery import (
    ToolCall,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)

PHASES = ("pre", "guard", "execute", "post", "result")


async def yields(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


async def noop(args: Any, ctx: ToolRunContext | None) -> str:
    return "ok"


async def sleepy(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.sleep(0.010)
    return "ok"


def always(args: Any) -> bool:
    return True


def make_registry(
    phases: tuple[str, ...] = (),
    body: Any = yields,
    *,
    policies: tuple[str, ...] = (),
    package: Any = None,
) -> ToolRegistry:
    """The benchmark's registry: one ``noop`` tool, the given hooks and policies.

    ``package`` is the toolnursery module to build it with (``bench_ab.py`` passes an
    older checkout's); ``None`` is this one.
    """
    tn: Any = toolnursery if package is None else package
    registry = tn.ToolRegistry()
    registry.register(
        tn.ToolDefinition(
            "noop",
            "does nothing",
            PARAMETERS,
            body,
            is_concurrency_safe=always,
            timeout_ms=60_000,
            idempotent=True,
        )
    )
    if "timeout" in policies:
        tn.install_timeout_policy(registry)
    if "retry" in policies:
        tn.install_retry_policy(registry, codes=["FLAKY"], backoff_ms=1)
    if "pre" in phases:
        registry.on_pre_execute(pre)
    if "guard" in phases:
        registry.guard(guard)
    if "execute" in phases:
        registry.on_execute(wrapper)
    if "post" in phases:
        registry.on_post_execute(post)
    if "result" in phases:
        registry.on_result(observer)
    return registry  # type: ignore[no-any-return]


PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}}
"""The tool's raw schema: one property, checked for every call."""


def make_calls(n: int) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "noop", json.dumps({"q": str(i)})) for i in range(n)]


async def run_bare(n: int, body: Any, cap: int | None = None) -> list[Any]:
    """The baseline: a bare trio nursery doing the least per-call work the scheduler's
    contract implies — the call's JSON arguments decoded (``json.loads``), the body
    awaited, its value stored in model order — under ``trio.CapacityLimiter(cap)`` when
    ``cap`` is given."""
    results: list[Any] = [None] * n
    texts = [json.dumps({"q": str(i)}) for i in range(n)]

    async def one(i: int) -> None:
        results[i] = await body(json.loads(texts[i]), None)

    if cap is None:
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(one, i)
        return results
    limiter = trio.CapacityLimiter(cap)

    async def limited(i: int) -> None:
        async with limiter:
            results[i] = await body(json.loads(texts[i]), None)

    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(limited, i)
    return results


async def timed(fn: Callable[[], Awaitable[object]], loops: int) -> float:
    """CPU seconds of ``loops`` runs (process time: on a shared machine, the time other
    processes hold the CPU is not counted; everything here runs on the trio thread)."""
    gc.collect()
    start = time.process_time()
    for _ in range(loops):
        await fn()
    return time.process_time() - start


class Row:
    """One table row: per-repetition µs per call for the scheduler and the bare run."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.ours: list[float] = []
        self.bare: list[float] = []

    def ratios(self) -> list[float]:
        return [o / b for o, b in zip(self.ours, self.bare, strict=True)]

    def render(self) -> str:
        def spread(values: list[float], fmt: str) -> str:
            med = statistics.median(values)
            return f"{med:{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"

        return (
            f"{self.label:<44} {spread(self.ours, '.2f'):>22} {spread(self.bare, '.2f'):>22} "
            f"{spread(self.ratios(), '.2f'):>20}"
        )


async def measure(
    label: str,
    registry: ToolRegistry,
    *,
    n: int,
    cap: int | None,
    body: Any,
    reps: int,
    calls_per_rep: int,
) -> Row:
    calls = make_calls(n)
    loops = max(1, calls_per_rep // n)
    max_parallel = n if cap is None else cap

    async def sched() -> object:
        return await run_tool_calls(registry, calls, max_parallel=max_parallel)

    async def bare() -> object:
        await run_bare(n, body, cap)
        return None

    await sched()  # warm caches (plans, hook tuples)
    await bare()
    # A repetition is the median of interleaved samples (a sample: about 1000 calls
    # through each side), so a burst of other load on a shared machine moves one
    # sample, not the repetition.
    chunk = max(1, 1000 // n)
    samples = max(5, loops // chunk)
    row = Row(label)
    for _ in range(reps):
        ours: list[float] = []
        base: list[float] = []
        for sample in range(samples):
            if sample % 2:  # the order alternates: neither side always runs first
                base.append(await timed(bare, chunk) / (chunk * n) * 1e6)
                ours.append(await timed(sched, chunk) / (chunk * n) * 1e6)
            else:
                ours.append(await timed(sched, chunk) / (chunk * n) * 1e6)
                base.append(await timed(bare, chunk) / (chunk * n) * 1e6)
        row.ours.append(statistics.median(ours))
        row.bare.append(statistics.median(base))
    return row


async def main_timing(reps: int, calls_per_rep: int) -> None:
    header = (
        f"{'case (N=1000, max_parallel=N unless said)':<44} {'sched µs/call':>22} "
        f"{'bare µs/call':>22} {'ratio':>20}"
    )
    print(f"µs per call and ratio: median (min–max) over {reps} repetitions")
    print(header)
    print("-" * len(header))
    cases: list[tuple[str, ToolRegistry, int, int | None, Any]] = [
        ("no hooks", make_registry(), 1000, None, yields),
        ("one listener in each of the five phases", make_registry(PHASES), 1000, None, yields),
        ("one execute wrapper only", make_registry(("execute",)), 1000, None, yields),
        (
            "install_timeout_policy only (budgeted)",
            make_registry(policies=("timeout",)),
            1000,
            None,
            yields,
        ),
        (
            "timeout + retry, nothing fails",
            make_registry(policies=("timeout", "retry")),
            1000,
            None,
            yields,
        ),
        ("max_parallel=10 (bare: CapacityLimiter(10))", make_registry(), 1000, 10, yields),
        ("N=1, no hooks", make_registry(), 1, None, yields),
        ("N=10, no hooks", make_registry(), 10, None, yields),
        ("N=10, five phases", make_registry(PHASES), 10, None, yields),
        ("N=2, no hooks", make_registry(), 2, None, yields),
        ("N=2, five phases", make_registry(PHASES), 2, None, yields),
        ("no-await body: no hooks", make_registry(body=noop), 1000, None, noop),
        ("no-await body: five phases", make_registry(PHASES, body=noop), 1000, None, noop),
        ("no-await body: N=1, no hooks", make_registry(body=noop), 1, None, noop),
    ]
    warm_until = time.perf_counter() + 1.0  # a second of batches first: a steady CPU
    while time.perf_counter() < warm_until:
        await run_bare(1000, yields)
        await run_tool_calls(cases[0][1], make_calls(1000), max_parallel=1000)
    for label, registry, n, cap, body in cases:
        row = await measure(
            label, registry, n=n, cap=cap, body=body, reps=reps, calls_per_rep=calls_per_rep
        )
        print(row.render(), flush=True)

    print()
    print("50 calls that each sleep 10 ms (max_parallel=50): wall ms per batch (at least 11 reps)")
    registry = make_registry(body=sleepy)
    calls = [ToolCall(f"s{i}", "noop", "{}") for i in range(50)]
    walls = Row("50 x sleep 10 ms (wall ms)")
    for _ in range(max(reps, 11)):  # wall time on a shared machine: more repetitions
        start = time.perf_counter()
        await run_tool_calls(registry, calls, max_parallel=50)
        walls.ours.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        await run_bare(50, sleepy)
        walls.bare.append((time.perf_counter() - start) * 1e3)
    print(walls.render())


async def memory_child(n: int, kind: str) -> dict[str, float]:
    registry = make_registry()
    calls = make_calls(n)
    await run_tool_calls(registry, calls[:100], max_parallel=100)  # warm up
    await run_bare(100, yields)
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    if kind == "bare":
        await run_bare(n, yields)
    else:
        cap = n if kind == "scheduler" else 10
        results = await run_tool_calls(registry, calls, max_parallel=cap)
        assert len(results) == n
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"peak": peak, "us": elapsed / n * 1e6}


def main_memory() -> None:
    print()
    print("peak memory per call (tracemalloc, fresh interpreter each; the results are")
    print("included for the scheduler, the ToolCall list is not): max_parallel=N (every")
    print("call in flight at once, as the bare nursery) and the default cap of 10")
    header = f"{'batch':<30} {'peak MiB':>10} {'B/call':>8}"
    print(header)
    print("-" * len(header))
    for n in (10_000, 100_000):
        for kind in ("scheduler", "scheduler-cap10", "bare"):
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(n), kind],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            m = json.loads(out)
            print(f"{f'N={n} {kind}':<30} {m['peak'] / 2**20:>10.1f} {m['peak'] / n:>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a fast run (fewer calls)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per row")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory rows")
    parser.add_argument("--memory-child", nargs=2, metavar=("N", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        n, kind = int(args.memory_child[0]), args.memory_child[1]
        print(json.dumps(trio.run(memory_child, n, kind)))
        return
    calls_per_rep = 2000 if args.quick else 10_000
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    trio.run(main_timing, args.repeat, calls_per_rep)
    if not args.no_memory:
        main_memory()


if __name__ == "__main__":
    main()
