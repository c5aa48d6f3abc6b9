"""The cost of one recorded event: ``JsonlRecorder.record`` with and without ``fsync``.

Rows (per event, µs, and the ratio to a bare ``os.write`` of the same bytes to an
``O_APPEND`` file — what any append-only log pays at least):

* ``bare os.write``: encoding done beforehand, one write per event, no lock;
* ``record(fsync=False)``: encode + per-event ``flock`` + size check + write;
* ``record(fsync=True)``: the same plus ``fdatasync`` per event (the device flush; on a
  laptop SSD or a VM disk this dominates, and varies by an order of magnitude).

Usage: ``python benchmarks/bench_recorder.py [--events N] [--fsync-events M]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import msgspec

from toolnursery import TextContent, ToolExecutionResult
from toolnursery.log import JsonlRecorder, ToolResultEvent


def event(i: int) -> ToolResultEvent:
    return ToolResultEvent(
        "bench", i, f"c{i}", ToolExecutionResult((TextContent(f"result {i} " * 8),), False)
    )


def bare(path: Path, events: list[ToolResultEvent]) -> float:
    lines = [msgspec.json.encode(e) + b"\n" for e in events]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for line in lines:
        os.write(fd, line)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed / len(events)


def recorded(path: Path, events: list[ToolResultEvent], fsync: bool) -> float:
    with JsonlRecorder(path, fsync=fsync) as recorder:
        start = time.perf_counter()
        for e in events:
            recorder.record(e)
        elapsed = time.perf_counter() - start
    return elapsed / len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--fsync-events", type=int, default=500)
    options = parser.parse_args()
    events = [event(i) for i in range(options.events)]
    with tempfile.TemporaryDirectory() as tmp:
        base = bare(Path(tmp) / "bare.jsonl", events)
        plain = recorded(Path(tmp) / "plain.jsonl", events, fsync=False)
        synced = recorded(Path(tmp) / "synced.jsonl", events[: options.fsync_events], fsync=True)
    print(f"{'row':<24}{'µs/event':>12}{'x bare':>10}")
    for name, value in (
        ("bare os.write", base),
        ("record(fsync=False)", plain),
        ("record(fsync=True)", synced),
    ):
        print(f"{name:<24}{value * 1e6:>12.2f}{value / base:>10.1f}")


if __name__ == "__main__":
    main()
