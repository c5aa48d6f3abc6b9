"""Per-call cost of the batch scheduler, against a bare trio nursery in the same run.

What it measures (median of several repetitions, each printed as µs per call):

* ``run_tool_calls`` over batches of N = 1, 10, 100 and 1000 no-op ``parallel`` calls
  (a no-op body has no ``await``, so the scheduler runs it inline, without a task; the
  "awaiting body" rows use a body that awaits one checkpoint, as real tools do)
  (``max_parallel = N``, so the cap is not the bottleneck), with no hooks and with one
  listener in each of the five phases (pre-execute, guard, execute wrapper,
  post-execute, result observer); for N = 1000 also each phase alone and the default
  cap of 10; and batches of ``exclusive`` calls (the default classification), which
  run one at a time (the bare nursery still runs them all at once). Beside each, a bare ``trio.open_nursery()`` that ``start_soon``-s the
  same body once per call, and the ratio scheduler / bare.
* 50 calls that each ``await trio.sleep(0.010)`` (``max_parallel = 50``): wall time
  of the batch against the bare nursery's.
* A mixed read/write file workload: 100 calls to a ``read``/``write`` tool pair, 20 %
  writes, over 10 paths (a fixed random draw), each body sleeping 5 ms, default cap
  of 10. The same batch is run twice in the same process: with *exclusive-barrier*
  scheduling (reads ``is_concurrency_safe``, writes exclusive — what a unary
  classifier can say) and with *resource-keyed* scheduling (``concurrency_keys``:
  read or write of the path). Wall ms per batch and the speed-up; the keyed run is
  also checked to never overlap conflicting bodies.
* Memory: a 10,000-call and a 100,000-call batch, each in a fresh interpreter, with
  peak RSS (``resource.getrusage``) before and after and µs per call, for the
  scheduler (``max_parallel`` = N and the default 10) and for the bare nursery.

Run: ``python benchmarks/bench_scheduler.py`` (``--quick`` for fewer repetitions,
``--mixed-only`` for just the mixed workload).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from toolnursery import (
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._decisions import PostToolDecision, PreToolDecision, ResourceKey

PHASES = ("pre", "guard", "execute", "post", "result")


async def noop(args: Any, ctx: ToolRunContext | None) -> str:
    return "ok"


async def sleepy(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.sleep(0.010)
    return "ok"


def always(args: Any) -> bool:
    return True


async def pre(execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]) -> Any:
    return await next_()


def guard(execution: ToolExecution) -> str | None:
    return None


async def wrapper(
    view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
) -> ToolExecutionResult:
    return await next_()


async def post(
    execution: ToolExecution,
    result: ToolExecutionResult,
    next_: Callable[[], Awaitable[PostToolDecision]],
) -> Any:
    return await next_()


def observer(execution: ToolExecution, result: ToolExecutionResult) -> None:
    return None


def make_registry(
    phases: tuple[str, ...] = (), body: Any = noop, *, parallel: bool = True
) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "noop",
            "does nothing",
            {"type": "object"},
            body,
            is_concurrency_safe=always if parallel else None,
        )
    )
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
    return registry


def make_calls(n: int) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "noop", "{}") for i in range(n)]


async def run_bare(n: int, body: Any = noop) -> None:
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(body, {}, None)


async def timed(fn: Callable[[], Awaitable[object]], loops: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(loops):
        await fn()
    return time.perf_counter() - start


async def yields(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


async def per_call(
    registry: ToolRegistry,
    n: int,
    cap: int,
    reps: int,
    calls_per_rep: int,
    body: Any = noop,
) -> tuple[float, float]:
    """Median µs per call for the scheduler and for the bare nursery (interleaved)."""
    calls = make_calls(n)
    loops = max(1, calls_per_rep // n)

    async def sched() -> object:
        return await run_tool_calls(registry, calls, max_parallel=cap)

    async def bare() -> object:
        await run_bare(n, body)
        return None

    await sched()  # warm caches (hook tuples, views)
    await bare()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(reps):
        ours.append(await timed(sched, loops) / (loops * n) * 1e6)
        theirs.append(await timed(bare, loops) / (loops * n) * 1e6)
    return statistics.median(ours), statistics.median(theirs)


def row(label: str, ours: float, bare: float) -> str:
    return f"{label:<34} {ours:>10.2f} {bare:>10.2f} {ours / bare:>7.2f}x"


async def main_timing(reps: int, calls_per_rep: int) -> None:
    header = f"{'batch':<34} {'sched µs':>10} {'bare µs':>10} {'ratio':>8}"
    print("no-op parallel calls, µs per call (median of", reps, "reps)")
    print(header)
    print("-" * len(header))
    plain = make_registry()
    hooked = make_registry(PHASES)
    for n in (1, 10, 100, 1000):
        ours, bare = await per_call(plain, n, n, reps, calls_per_rep)
        print(row(f"N={n:<5} no hooks", ours, bare))
        ours, bare = await per_call(hooked, n, n, reps, calls_per_rep)
        print(row(f"N={n:<5} all five phases", ours, bare))
    for phase in PHASES:
        ours, bare = await per_call(make_registry((phase,)), 1000, 1000, reps, calls_per_rep)
        print(row(f"N=1000  only {phase}", ours, bare))
    ours, bare = await per_call(plain, 1000, 10, reps, calls_per_rep)
    print(row("N=1000  no hooks, cap 10 (default)", ours, bare))
    ours, bare = await per_call(hooked, 1000, 10, reps, calls_per_rep)
    print(row("N=1000  all five, cap 10 (default)", ours, bare))
    # A body with no ``await`` cannot suspend, so the scheduler runs it inline (no
    # task); a body that awaits gets a task and (with wrappers) a cancel scope, like
    # most real tools. Both bodies are measured against the bare nursery running them.
    for label, phases in (("no hooks", ()), ("all five phases", PHASES)):
        registry = make_registry(phases, body=yields)
        ours, bare = await per_call(registry, 1000, 1000, reps, calls_per_rep, body=yields)
        print(row(f"N=1000  awaiting body, {label}", ours, bare))
    serial = make_registry(parallel=False)
    for n in (1, 100):
        ours, bare = await per_call(serial, n, 10, reps, calls_per_rep)
        print(row(f"N={n:<5} exclusive (one at a time)", ours, bare))

    print()
    print("50 calls that each sleep 10 ms (max_parallel=50), wall ms per batch")
    registry = make_registry(body=sleepy)
    calls = [ToolCall(f"s{i}", "noop", "{}") for i in range(50)]
    walls: list[float] = []
    bare_walls: list[float] = []
    for _ in range(reps):
        start = time.perf_counter()
        await run_tool_calls(registry, calls, max_parallel=50)
        walls.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        await run_bare(50, sleepy)
        bare_walls.append((time.perf_counter() - start) * 1e3)
    ours, bare = statistics.median(walls), statistics.median(bare_walls)
    print(f"{'sleep 50 x 10 ms':<34} {ours:>9.2f}ms {bare:>8.2f}ms {ours / bare:>7.2f}x")


MIXED_CALLS = 100
MIXED_WRITES = 20
MIXED_PATHS = 10
MIXED_SLEEP = 0.005


def mixed_calls(seed: int = 7) -> list[ToolCall]:
    """100 calls, 20 of them writes, over 10 paths: the same draw every run."""
    rng = random.Random(seed)
    writes = set(rng.sample(range(MIXED_CALLS), MIXED_WRITES))
    return [
        ToolCall(
            f"m{i}",
            "write" if i in writes else "read",
            json.dumps({"path": f"/repo/file{rng.randrange(MIXED_PATHS)}.py"}),
        )
        for i in range(MIXED_CALLS)
    ]


def mixed_registry(keyed: bool, live: dict[str, list[str]] | None = None) -> ToolRegistry:
    """read/write tools whose bodies sleep 5 ms; classified by barrier or by keys.

    With ``live``, each body checks that no conflicting body runs beside it.
    """

    def body(mode: str) -> Any:
        async def run(args: Any, ctx: ToolRunContext) -> str:
            path = args["path"]
            if live is not None:
                others = live.setdefault(path, [])
                assert (mode == "read" and all(m == "read" for m in others)) or not others, (
                    f"{mode} of {path} overlaps {others}"
                )
                others.append(mode)
            await trio.sleep(MIXED_SLEEP)
            if live is not None:
                live[path].remove(mode)
            return "ok"

        return run

    def read_keys(args: Any) -> list[ResourceKey]:
        return [ResourceKey.read(args["path"])]

    def write_keys(args: Any) -> list[ResourceKey]:
        return [ResourceKey.write(args["path"])]

    registry = ToolRegistry()
    for mode, keys in (("read", read_keys), ("write", write_keys)):
        if keyed:
            definition = ToolDefinition(
                mode, f"{mode} a file", {"type": "object"}, body(mode), concurrency_keys=keys
            )
        else:
            definition = ToolDefinition(
                mode,
                f"{mode} a file",
                {"type": "object"},
                body(mode),
                is_concurrency_safe=always if mode == "read" else None,
            )
        registry.register(definition)
    return registry


async def main_mixed(reps: int) -> float:
    """Wall time of the mixed workload, exclusive barriers vs resource keys."""
    print()
    print(
        f"mixed file workload: {MIXED_CALLS} calls, {MIXED_WRITES} writes over "
        f"{MIXED_PATHS} paths, {MIXED_SLEEP * 1e3:.0f} ms bodies, cap 10; wall ms per batch"
    )
    calls = mixed_calls()
    # One checked run first: keyed scheduling never overlaps conflicting bodies.
    results = await run_tool_calls(mixed_registry(True, live={}), calls)
    assert not any(r.is_error for r in results), results
    walls: dict[bool, list[float]] = {False: [], True: []}
    registries = {keyed: mixed_registry(keyed) for keyed in (False, True)}
    for _ in range(reps):
        for keyed in (False, True):
            start = time.perf_counter()
            await run_tool_calls(registries[keyed], calls)
            walls[keyed].append((time.perf_counter() - start) * 1e3)
    barrier = statistics.median(walls[False])
    keyed_ms = statistics.median(walls[True])
    floor = MIXED_CALLS / 10 * MIXED_SLEEP * 1e3
    print(f"{'exclusive barriers':<34} {barrier:>9.2f}ms")
    print(f"{'resource keys':<34} {keyed_ms:>9.2f}ms")
    print(f"{'speed-up (barriers / keys)':<34} {barrier / keyed_ms:>9.2f}x")
    print(f"{'floor (calls / cap x body)':<34} {floor:>9.2f}ms")
    return barrier / keyed_ms


def rss_mib() -> float:
    # ru_maxrss is KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def memory_child(n: int, kind: str) -> dict[str, float]:
    registry = make_registry()
    calls = make_calls(n)
    await run_tool_calls(registry, calls[:100], max_parallel=100)  # warm up
    gc.collect()
    before = rss_mib()
    start = time.perf_counter()
    if kind == "bare":
        await run_bare(n)
    else:
        cap = n if kind == "sched-capN" else 10
        results = await run_tool_calls(registry, calls, max_parallel=cap)
        assert len(results) == n
    elapsed = time.perf_counter() - start
    after = rss_mib()
    return {"before": before, "after": after, "us": elapsed / n * 1e6}


def main_memory() -> None:
    print()
    print("peak RSS per batch (fresh interpreter each)")
    header = (
        f"{'batch':<28} {'before MiB':>10} {'after MiB':>10} {'Δ MiB':>8} "
        f"{'B/call':>8} {'µs/call':>8}"
    )
    print(header)
    print("-" * len(header))
    for n in (10_000, 100_000):
        for kind in ("sched-capN", "sched-cap10", "bare"):
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(n), kind],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            m = json.loads(out)
            delta = m["after"] - m["before"]
            print(
                f"{f'N={n} {kind}':<28} {m['before']:>10.1f} {m['after']:>10.1f} "
                f"{delta:>8.1f} {delta * 1024 * 1024 / n:>8.0f} {m['us']:>8.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--no-memory", action="store_true", help="skip the RSS measurements")
    parser.add_argument("--mixed-only", action="store_true", help="only the mixed workload")
    parser.add_argument("--memory-child", nargs=2, metavar=("N", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        n, kind = int(args.memory_child[0]), args.memory_child[1]
        print(json.dumps(trio.run(memory_child, n, kind)))
        return
    reps, calls_per_rep = (3, 2000) if args.quick else (7, 5000)
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    if not args.mixed_only:
        trio.run(main_timing, reps, calls_per_rep)
    trio.run(main_mixed, reps)
    if not args.no_memory and not args.mixed_only:
        main_memory()


if __name__ == "__main__":
    main()
