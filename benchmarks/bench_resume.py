"""Resume: a 10,000-call batch killed halfway resumes without re-running a committed call.

A subprocess runs ``--calls`` calls of a non-idempotent tool whose body appends its call
id to an effects file (its side effect), recorded to a JSON-lines log; it is killed with
``SIGKILL`` once half of the results have committed. This process then resumes the batch
from the log (``run_tool_calls(..., resume_from=LOG)``, recording to the same log) with a
body that appends to a second effects file. Checked, and printed:

* no committed call ran again (no call id of a committed result in the resume's effects);
* no side effect happened twice (no call id twice across both effects files);
* every call has exactly one final result; the interrupted ones (started, uncommitted,
  not idempotent) are ``INTERRUPTED``;
* how long reading and planning the log took, and the resumed run.

Usage: ``python benchmarks/bench_resume.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from toolnursery import ToolCall, ToolDefinition, ToolRegistry, ToolRunContext, run_tool_calls
from toolnursery._batch._resume import is_idempotent, plan_resume
from toolnursery.log import JsonlRecorder, ToolResultEvent, read_log, replay_log

CHILD = """
import os, sys
import trio
from toolnursery import ToolCall, ToolDefinition, ToolRegistry
from toolnursery.log import JsonlRecorder, ToolResultEvent
from toolnursery import run_tool_calls

log, effects, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open(effects, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


async def effect(args, ctx):
    await trio.sleep(0)
    os.write(fd, (ctx.call_id + "\\n").encode())
    return "done " + ctx.call_id


class Reporting:
    def __init__(self, inner):
        self.inner = inner

    def record(self, event):
        self.inner.record(event)
        if isinstance(event, ToolResultEvent):
            print(event.index, flush=True)


registry = ToolRegistry()
registry.register(
    ToolDefinition("effect", "e", {"type": "object"}, effect, is_concurrency_safe=lambda a: True)
)
calls = [ToolCall(f"c{i}", "effect") for i in range(count)]
with JsonlRecorder(log) as recorder:
    trio.run(lambda: run_tool_calls(registry, calls, recorder=Reporting(recorder)))
"""


def crash_halfway(log: Path, effects: Path, count: int) -> int:
    """Run the batch in a subprocess and SIGKILL it after half the results committed."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log), str(effects), str(count)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as child:
        assert child.stdout is not None
        seen = 0
        for _ in child.stdout:
            seen += 1
            if seen >= count // 2:
                os.kill(child.pid, signal.SIGKILL)
                break
    return seen


async def resume(log: Path, effects: Path, count: int) -> dict[str, Any]:
    fd = os.open(effects, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    async def effect(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(0)
        os.write(fd, (ctx.call_id + "\n").encode())
        return "done " + ctx.call_id

    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "effect", "e", {"type": "object"}, effect, is_concurrency_safe=lambda a: True
        )
    )
    calls = [ToolCall(f"c{i}", "effect") for i in range(count)]
    start = time.perf_counter()
    plan = plan_resume(read_log(log), calls, is_idempotent(registry, None))
    planned = time.perf_counter() - start
    start = time.perf_counter()
    with JsonlRecorder(log) as recorder:
        results = await run_tool_calls(registry, calls, recorder=recorder, resume_from=log)
    ran = time.perf_counter() - start
    os.close(fd)
    return {"plan": plan, "results": results, "planned": planned, "ran": ran}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    options = parser.parse_args()
    count = options.calls
    with tempfile.TemporaryDirectory() as tmp:
        log, first, second = Path(tmp) / "log.jsonl", Path(tmp) / "1.txt", Path(tmp) / "2.txt"
        seen = crash_halfway(log, first, count)
        committed = {f"c{e.index}" for e in read_log(log) if isinstance(e, ToolResultEvent)}
        out = trio.run(resume, log, second, count)
        before = first.read_text().split()
        after = second.read_text().split()
        pairs = replay_log(log)
    plan, results = out["plan"], out["results"]
    rerun_committed = committed & set(after)
    twice = [i for i, n in Counter(before + after).items() if n > 1]
    interrupted = [r for r in results if r.error is not None and r.error.code == "INTERRUPTED"]
    print(f"calls                     {count:,}")
    print(f"committed before the kill {len(committed):,} (the child reported {seen:,})")
    print(
        f"plan                      replay {plan.count('replay'):,}, run {plan.count('run'):,}, "
        f"interrupted {plan.count('interrupted'):,}"
    )
    print(f"committed calls re-run    {len(rerun_committed)}")
    print(f"side effects twice        {len(twice)}")
    print(f"interrupted results       {len(interrupted):,}")
    print(f"results                   {len(results):,}; replay pairs {len(pairs):,}")
    print(f"read + plan the log       {out['planned'] * 1e3:.1f} ms")
    print(f"resumed run               {out['ran']:.2f} s")
    if rerun_committed or twice or len(results) != count or len(pairs) != count:
        raise SystemExit("FAILED")


if __name__ == "__main__":
    main()
