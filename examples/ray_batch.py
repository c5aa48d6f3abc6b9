"""Run a model's batch of CPU-bound tool calls on a Ray cluster.

    python examples/ray_batch.py

starts a local 2-CPU cluster (no dashboard); with ``RAY_ADDRESS`` set it joins that
cluster instead, which is all it takes to point the same code at a real one (or call
``ray.init(address="ray://head:10001")`` / ``ray.init(address="auto")`` yourself).
Only the tool bodies run on the cluster: the policies, the scheduler and the results
stay in this process.
"""

from __future__ import annotations

import json
import os
import time

import ray
import trio

from toolnursery import ToolCall, ToolRegistry, define_tool, install_timeout_policy, run_tool_calls
from toolnursery.ray import ray_tool


def count_primes(args: dict[str, float], ctx: object) -> str:
    """Pure-Python CPU work: the primes below ``limit`` (slow on purpose)."""
    limit = int(args["limit"])
    found = sum(1 for n in range(2, limit) if all(n % d for d in range(2, int(n**0.5) + 1)))
    return f"{found} primes below {limit}"


primes = define_tool(
    name="count_primes",
    description="Count the primes below a limit.",
    parameters={"limit": {"type": "number", "required": True}},
    execute=count_primes,
    is_concurrency_safe=lambda args: True,
    timeout_ms=60_000,
)


async def main() -> None:
    registry = ToolRegistry()
    install_timeout_policy(registry)
    # The body becomes a Ray task (1 CPU each); every other part of the tool stays here.
    registry.register(ray_tool(primes, num_cpus=1))
    calls = [
        ToolCall(f"call-{i}", "count_primes", json.dumps({"limit": 20_000 + 1_000 * i}))
        for i in range(8)
    ]
    started = time.perf_counter()
    results = await run_tool_calls(registry, calls, max_parallel=8)
    elapsed = time.perf_counter() - started
    for call, result in zip(calls, results, strict=True):
        print(f"{call.id}: {result.content[0].text}")  # type: ignore[union-attr]
    errors = sum(result.is_error for result in results)
    print(f"{len(calls)} calls in {elapsed:.2f}s, errors: {errors}")


if __name__ == "__main__":
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)  # join the cluster RAY_ADDRESS names
    else:
        ray.init(num_cpus=2, include_dashboard=False)
    try:
        trio.run(main)
    finally:
        ray.shutdown()
