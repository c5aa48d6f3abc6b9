"""CPU-bound tool calls on a local Ray cluster against the agent's own threads.

What it measures (one local cluster, ``ray.init(num_cpus=2)``, started by the script):

* **batch**: wall time of one batch of N = 200 ``parallel`` calls whose body is
  ~50 ms of pure-Python work (calibrated at start-up), run three ways —
  *bare threads*: a trio nursery running each body in ``trio.to_thread.run_sync``
  (no toolnursery); *threads*: ``run_tool_calls`` with the body as a plain ``def``
  tool (it runs in ``trio.to_thread``, as any sync tool does); *ray*: the same
  definition placed with ``ray_tool`` (one Ray task per call, 1 CPU each). The goal
  is *threads / ray* ≥ 1.7× on 2 cores: threads serialise on the GIL, Ray workers
  are processes.
* **overhead**: µs per call, sequential, of a no-op body — ``ray.get(f.remote(b))``
  of a bare Ray task against ``registry.execute()`` of the placed tool (the
  pipeline, argument/answer encoding and the trio-side wait on the ref's future);
  the difference is the placement's cost over a bare task round trip.

Workers are warmed up before anything is timed. The body is calibrated in CPU time,
and each mode reports how many cores its bodies actually got (their CPU seconds over
the wall time: at most 1 for threads, 2 for Ray): on a machine shared with other work
the Ray workers get less than two, and the ratio shrinks with them.

Run: ``python benchmarks/bench_ray.py`` (``--quick``: 40 calls, fewer repetitions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import ray
import trio

from toolnursery import (
    CancelSignal,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    run_tool_calls,
)
from toolnursery.ray import ray_tool


def spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def cpu_body(args: Any, ctx: Any) -> str:
    """The CPU-bound body; returns the CPU seconds it used (of its own thread)."""
    start = time.thread_time()
    spin(args["n"])
    return repr(time.thread_time() - start)


def noop_body(args: Any, ctx: Any) -> str:
    return "ok"


def calibrate(target_s: float) -> int:
    """Loop iterations that take about ``target_s`` of CPU time (best of several)."""
    n = 50_000
    while True:
        best = min(_timed(n) for _ in range(5))
        if best > 0.01:
            return int(n * target_s / best)
        n *= 2


def _timed(n: int) -> float:
    start = time.thread_time()
    spin(n)
    return time.thread_time() - start


def definition(name: str, body: Any) -> ToolDefinition:
    return ToolDefinition(
        name, name, {"type": "object"}, body, is_concurrency_safe=lambda args: True
    )


async def bare_threads(n: int, calls: int) -> tuple[float, float]:
    cpu: list[float] = []

    async def one() -> None:
        cpu.append(float(await trio.to_thread.run_sync(cpu_body, {"n": n}, None)))

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(calls):
            nursery.start_soon(one)
    return time.perf_counter() - start, sum(cpu)


async def batch(registry: ToolRegistry, name: str, n: int, calls: int) -> tuple[float, float]:
    """Wall seconds of one batch, and the CPU seconds its bodies used."""
    batch_calls = [ToolCall(str(i), name, json.dumps({"n": n})) for i in range(calls)]
    start = time.perf_counter()
    results = await run_tool_calls(registry, batch_calls, max_parallel=calls)
    elapsed = time.perf_counter() - start
    assert not any(r.is_error for r in results), results[0]
    return elapsed, sum(float(r.content[0].text) for r in results)  # type: ignore[union-attr]


async def placed_overhead(registry: ToolRegistry, repeat: int) -> float:
    start = time.perf_counter()
    for i in range(repeat):
        result = await registry.execute(ToolExecutionInput(str(i), "noop", {}, CancelSignal()))
        assert not result.is_error
    return (time.perf_counter() - start) / repeat


def bare_overhead(task: Any, repeat: int) -> float:
    payload = b"{}"
    start = time.perf_counter()
    for _ in range(repeat):
        ray.get(task.remote(payload))
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 calls, fewer repetitions")
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--ms", type=float, default=50.0, help="body duration (ms)")
    options = parser.parse_args()
    calls = options.calls or (40 if options.quick else 200)
    repeat = 50 if options.quick else 300
    rounds = 1 if options.quick else 2

    n = calibrate(options.ms / 1000)
    # Ray starts its workers niced (priority below this process); on a machine shared
    # with other work that alone starves them. Run them at this process's priority, as
    # the threads they are compared with run (no difference on a quiet machine).
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        local, placed = ToolRegistry(), ToolRegistry()
        local.register(definition("cpu", cpu_body))
        placed.register(ray_tool(definition("cpu", cpu_body)))
        placed.register(ray_tool(definition("noop", noop_body)))
        bare_task = ray.remote(max_retries=0)(lambda payload: b"ok")

        async def run() -> dict[str, list[float]]:
            await batch(placed, "cpu", n // 10, 8)  # warm up both workers
            await placed_overhead(placed, 10)
            bare_overhead(bare_task, 10)
            times: dict[str, list[float]] = {
                k: [] for k in ("bare", "threads", "ray", "ray_get", "placed")
            }
            cores: dict[str, list[float]] = {k: [] for k in ("bare", "threads", "ray")}
            for _ in range(rounds):
                for key, runner in (
                    ("bare", bare_threads(n, calls)),
                    ("threads", batch(local, "cpu", n, calls)),
                    ("ray", batch(placed, "cpu", n, calls)),
                ):
                    wall, cpu = await runner
                    times[key].append(wall)
                    cores[key].append(cpu / wall)
                times["ray_get"].append(bare_overhead(bare_task, repeat))
                times["placed"].append(await placed_overhead(placed, repeat))
            times.update({f"{k}_cores": v for k, v in cores.items()})
            return times

        times = trio.run(run)
    finally:
        ray.shutdown()

    med = {k: statistics.median(v) for k, v in times.items()}
    body_ms = statistics.median(_timed(n) for _ in range(5)) * 1000
    print(
        f"body: {n} iterations, calibrated to {options.ms:.0f} ms of CPU, measured now "
        f"{body_ms:.0f} ms; {calls} calls, 2 CPUs; load average {os.getloadavg()[0]:.1f}"
    )
    print("  wall time of the batch, and the cores its bodies got (body CPU s / wall s)")
    for key, label in (
        ("bare", "bare threads (trio.to_thread nursery)"),
        ("threads", "threads (plain def tool)             "),
        ("ray", "ray (ray_tool, 1 task per call)      "),
    ):
        print(f"  {label} : {med[key]:7.2f} s   {med[key + '_cores']:4.2f} cores")
    print(f"  speed-up threads / ray                : {med['threads'] / med['ray']:7.2f}x")
    print(f"per-call overhead, no-op body, sequential, {repeat} calls")
    print(f"  bare ray.get(task.remote(...))        : {med['ray_get'] * 1e6:9.0f} µs")
    print(f"  registry.execute() of the placed tool : {med['placed'] * 1e6:9.0f} µs")
    print(
        f"  placement over a bare ray.get         : "
        f"{(med['placed'] - med['ray_get']) * 1e6:9.0f} µs"
    )


if __name__ == "__main__":
    main()
