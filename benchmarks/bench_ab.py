"""Same-process A/B of the scheduler's hot rows: another checkout against this one.

Imports the package of another checkout (``--before DIR``, a ``src`` directory holding
``toolnursery/``) under the name ``toolnursery_before`` — copied to a temporary
directory, its absolute ``toolnursery`` imports rewritten — next to the ``toolnursery``
on the path, and runs the hot rows of ``benchmarks/bench_scheduler.py`` for both sides
and the bare ``trio.open_nursery()`` baseline of ``bench_scheduler.run_bare``,
interleaved sample by sample in ONE trio run, so that both sides see the same CPU,
caches and load:

* N = 1000 ``parallel`` calls, no hooks; one listener in each of the five phases;
  ``install_timeout_policy`` only (the tool budgeted);
* N = 10 and N = 2, no hooks and five phases; N = 1, no hooks.

The body awaits one checkpoint. Time is CPU time of the process (``time.process_time``:
on a shared machine the time other processes hold the CPU is not counted). For each row
it prints, per side, µs per call and the ratio to the bare nursery (median, with the
min–max over the repetitions), and the ratio after / before of the per-call µs.

Run: ``git worktree add ../before REV`` and then
``PYTHONPATH=src python benchmarks/bench_ab.py --before ../before/src``
(``--repeat R``, ``--calls N`` per sample and side).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import trio

import bench_scheduler
from bench_scheduler import yields

BEFORE_NAME = "toolnursery_before"
PHASES = ("pre", "guard", "execute", "post", "result")
_IMPORT = re.compile(r"^(\s*)(from|import) toolnursery(?=[\s.])", re.MULTILINE)


def load_before(src: Path) -> ModuleType:
    """Import ``src/toolnursery`` as :data:`BEFORE_NAME` (a renamed copy in a temp dir)."""
    root = Path(tempfile.mkdtemp(prefix="bench_ab_"))
    target = root / BEFORE_NAME
    shutil.copytree(src / "toolnursery", target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        text = path.read_text()
        rewritten = _IMPORT.sub(rf"\1\2 {BEFORE_NAME}", text)
        if rewritten != text:
            path.write_text(rewritten)
    sys.path.insert(0, str(root))
    return importlib.import_module(BEFORE_NAME)


def make_registry(pkg: ModuleType, phases: tuple[str, ...] = (), timeout: bool = False) -> Any:
    return bench_scheduler.make_registry(
        phases, policies=("timeout",) if timeout else (), package=pkg
    )


async def run_bare(n: int) -> None:
    await bench_scheduler.run_bare(n, yields)


async def timed(fn: Callable[[], Awaitable[object]], loops: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(loops):
        await fn()
    return time.process_time() - start


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


async def row(
    label: str,
    sides: list[tuple[ModuleType, Any]],
    n: int,
    reps: int,
    calls: int,
) -> str:
    runners: list[Callable[[], Awaitable[object]]] = []
    for pkg, registry in sides:
        tool_calls = [pkg.ToolCall(f"c{i}", "noop", "{}") for i in range(n)]

        async def sched(
            pkg: Any = pkg, registry: Any = registry, tool_calls: Any = tool_calls
        ) -> object:
            return await pkg.run_tool_calls(registry, tool_calls, max_parallel=n)

        runners.append(sched)

    async def bare() -> object:
        await run_bare(n)
        return None

    runners.append(bare)
    for run in runners:
        await run()  # warm the plans and hook tuples
    chunk = max(1, calls // n)
    samples = 7
    per_rep: list[list[float]] = [[] for _ in runners]  # µs per call, per repetition
    for _ in range(reps):
        taken: list[list[float]] = [[] for _ in runners]
        for sample in range(samples):
            # Alternate the order, so neither side always runs right after the other.
            order = range(len(runners)) if sample % 2 else reversed(range(len(runners)))
            for i in order:
                taken[i].append(await timed(runners[i], chunk) / (chunk * n) * 1e6)
        for i in range(len(runners)):
            per_rep[i].append(statistics.median(taken[i]))
    before, after, base = per_rep
    ratio_before = [b / z for b, z in zip(before, base, strict=True)]
    ratio_after = [a / z for a, z in zip(after, base, strict=True)]
    after_over_before = [a / b for a, b in zip(after, before, strict=True)]
    return (
        f"{label:<26} {spread(before, '.2f'):>20} {spread(ratio_before, '.2f'):>17} "
        f"{spread(after, '.2f'):>20} {spread(ratio_after, '.2f'):>17} "
        f"{spread(after_over_before, '.3f'):>20}"
    )


async def main_async(before: ModuleType, after: ModuleType, reps: int, calls: int) -> None:
    cases: list[tuple[str, int, tuple[str, ...], bool]] = [
        ("N=1000 no hooks", 1000, (), False),
        ("N=1000 five phases", 1000, PHASES, False),
        ("N=1000 timeout policy", 1000, (), True),
        ("N=10 no hooks", 10, (), False),
        ("N=10 five phases", 10, PHASES, False),
        ("N=2 no hooks", 2, (), False),
        ("N=2 five phases", 2, PHASES, False),
        ("N=1 no hooks", 1, (), False),
    ]
    header = (
        f"{'case':<26} {'before µs/call':>20} {'before/bare':>17} "
        f"{'after µs/call':>20} {'after/bare':>17} {'after/before':>20}"
    )
    print(f"median (min–max) over {reps} repetitions of 7 interleaved samples each")
    print(header)
    print("-" * len(header))
    warm_until = time.perf_counter() + 1.0  # a steady CPU first
    warm = [(pkg, make_registry(pkg)) for pkg in (before, after)]
    while time.perf_counter() < warm_until:
        for pkg, registry in warm:
            await pkg.run_tool_calls(
                registry, [pkg.ToolCall(f"c{i}", "noop", "{}") for i in range(100)]
            )
        await run_bare(100)
    for label, n, phases, timeout in cases:
        sides = [(pkg, make_registry(pkg, phases, timeout)) for pkg in (before, after)]
        print(await row(label, sides, n, reps, calls), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--before", type=Path, required=True, help="a src directory holding toolnursery/"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per row")
    parser.add_argument("--calls", type=int, default=1000, help="calls per sample and side")
    args = parser.parse_args()
    before = load_before(args.before)
    after = importlib.import_module("toolnursery")
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    print(f"before: {Path(before.__file__).parent} (from {args.before})")
    print(f"after:  {Path(after.__file__).parent}")
    trio.run(main_async, before, after, args.repeat, args.calls)


if __name__ == "__main__":
    main()
