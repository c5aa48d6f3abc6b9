"""The mixed read/write workload: exclusive barriers against resource keys, same run.

100 calls to a ``read``/``write`` tool pair, 20 % writes, over 10 paths (a fixed random
draw), each body sleeping 5 ms, the default cap of 10. The same batch runs twice in one
process: with *exclusive-barrier* scheduling (reads ``is_concurrency_safe``, writes
exclusive — what a yes/no classifier can say) and with *resource-keyed* scheduling
(``concurrency_keys``: a read or a write of the path). It prints wall ms per batch and
the speed-up; one keyed run first checks that conflicting bodies never overlap.

Run: ``python benchmarks/bench_keys.py`` (``--quick`` for fewer repetitions).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

import trio

from toolnursery import (
    ResourceKey,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)

MIXED_CALLS = 100
MIXED_WRITES = 20
MIXED_PATHS = 10
MIXED_SLEEP = 0.005


def always(args: Any) -> bool:
    return True


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions instead of 9")
    options = parser.parse_args()
    trio.run(main_mixed, 3 if options.quick else 9)


if __name__ == "__main__":
    main()
