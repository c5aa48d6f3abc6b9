"""Soak: a million calls in 1,000 batches through a JsonlRecorder, with random aborts.

Every batch runs ``--batch-size`` parallel calls (bodies that await one checkpoint)
recorded to one JSON-lines log; in a random ``--abort-rate`` share of the batches one
random body aborts its batch (``ctx.signal.cancel()``), so the rest of the batch drains
as ``ABORTED`` / ``ABORTED_BEFORE_DISPATCH``. Checked, and printed:

* zero lost results: every batch returns one result per call, and the log holds
  exactly one ``tool_result`` per call;
* the log replays to the same results (a digest per batch, compared after the run);
* memory stays flat: resident set size after the first batch, after a tenth of them
  and at the end (the run keeps only one digest per batch).

Usage: ``python benchmarks/soak_recorder.py [--calls N] [--batch-size B]`` — e.g.
``--calls 20000`` for a quick run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from toolnursery import (
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery.log import JsonlRecorder, ToolResultEvent, iter_log

_encode = msgspec.json.Encoder().encode


def rss_mib() -> float:
    """The current resident set size (Linux ``/proc``), else the peak."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):  # pragma: no cover - not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def digest(results: list[ToolExecutionResult]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for result in results:
        h.update(_encode(result))
    return h.hexdigest()


async def soak(options: argparse.Namespace, log: Path) -> dict[str, Any]:
    rng = random.Random(options.seed)

    async def body(args: Any, ctx: ToolRunContext) -> str:
        if args.get("abort"):
            ctx.signal.cancel("soak abort")
        await trio.lowlevel.checkpoint()
        return f"ok {args['i']}"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("t", "t", {"type": "object"}, body, is_concurrency_safe=lambda a: True)
    )
    batches = options.calls // options.batch_size
    digests: dict[int, str] = {}
    lost = aborted = 0
    rss_first = rss_tenth = 0.0
    start = time.perf_counter()
    with JsonlRecorder(log) as recorder:
        for b in range(batches):
            abort_at = (
                rng.randrange(options.batch_size) if rng.random() < options.abort_rate else -1
            )
            calls = [
                ToolCall(
                    f"b{b}c{i}",
                    "t",
                    f'{{"i": {i}, "abort": true}}' if i == abort_at else f'{{"i": {i}}}',
                )
                for i in range(options.batch_size)
            ]
            results = await run_tool_calls(
                registry, calls, recorder=recorder, max_parallel=options.max_parallel
            )
            lost += len(calls) - len(results)
            aborted += sum(1 for r in results if r.is_error)
            digests[b] = digest(results)
            if b == 0:
                rss_first = rss_mib()
            elif b == batches // 10:
                rss_tenth = rss_mib()
    elapsed = time.perf_counter() - start
    return {
        "batches": batches,
        "digests": digests,
        "lost": lost,
        "aborted": aborted,
        "rss_first": rss_first,
        "rss_tenth": rss_tenth,
        "rss_end": rss_mib(),
        "elapsed": elapsed,
    }


def replay_digests(log: Path) -> tuple[dict[str, str], dict[str, int], int]:
    """Per batch id: the digest of its recorded results in index order, and the count."""
    per_batch: dict[str, list[ToolExecutionResult]] = {}
    torn = 0
    for _, event, _ in iter_log(log):
        if event is None:
            torn += 1
        elif isinstance(event, ToolResultEvent):
            per_batch.setdefault(event.batch, []).append(event.result)
    return (
        {batch: digest(results) for batch, results in per_batch.items()},
        {batch: len(results) for batch, results in per_batch.items()},
        torn,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--max-parallel", type=int, default=64)
    parser.add_argument("--abort-rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--fsync", action="store_true", help="JsonlRecorder(fsync=True)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "soak.jsonl"
        run = trio.run(soak, options, log)
        size = log.stat().st_size
        replay_start = time.perf_counter()
        replayed, counts, torn = replay_digests(log)
        replay_elapsed = time.perf_counter() - replay_start
    # Batches are appended in run order, so the n-th batch id of the log is batch n.
    ordered = list(replayed)
    same = len(ordered) == run["batches"] and all(
        replayed[batch] == run["digests"][n] for n, batch in enumerate(ordered)
    )
    short = sum(1 for c in counts.values() if c != options.batch_size)
    calls = run["batches"] * options.batch_size
    print(f"calls                 {calls:,} in {run['batches']:,} batches of {options.batch_size}")
    print(f"aborted results       {run['aborted']:,} (batches aborted at random)")
    print(f"lost results          {run['lost']} returned, {short} batches short in the log")
    print(f"log                   {size / 2**20:,.1f} MiB, {torn} torn lines")
    print(f"replays to the same   {'yes' if same else 'NO'}")
    print(f"RSS after batch 1     {run['rss_first']:.1f} MiB")
    print(f"RSS after 10 %        {run['rss_tenth']:.1f} MiB")
    print(f"RSS at the end        {run['rss_end']:.1f} MiB")
    print(
        f"run                   {run['elapsed']:.1f} s ({run['elapsed'] / calls * 1e6:.1f} µs/call)"
    )
    print(f"replay                {replay_elapsed:.1f} s")
    if run["lost"] or short or not same or torn:
        raise SystemExit("FAILED: a result was lost or the log does not replay to the same")


if __name__ == "__main__":
    main()
