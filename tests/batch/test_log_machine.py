"""The log under crashes and concurrent writers, as a hypothesis state machine.

Each step is one of: a subprocess runs a random batch into the log and is killed with
``SIGKILL`` at a random point (or finishes); this process opens the log and appends
while such a batch runs; a writer dies mid-line (a torn line); an edit or a merge puts
another call's result (no call line) into the log, in a batch of its own or in a killed
batch; a killed batch is resumed from the log (no committed call may run again, no call
gets another call's result, a batch holding another call's line is refused). After every step the
log reads back (torn lines skipped) with every result any batch reported committed —
``record()`` had returned — exactly once, every appended event, and replay pairs
each call with at most one result.

``TOOLNURSERY_LOG_EXAMPLES`` scales the run (the default keeps CI fast).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from toolnursery import (
    ResumeError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery.log import JsonlRecorder, ToolCallEvent, ToolResultEvent, read_log, replay_log

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL and flock")

EXAMPLES = int(os.environ.get("TOOLNURSERY_LOG_EXAMPLES", "8"))
RESUMED: list[int] = []  # how many calls each resume ran

CHILD = """
import sys
import trio
from toolnursery import ToolCall, ToolDefinition, ToolRegistry
from toolnursery.log import JsonlRecorder, ToolResultEvent
from toolnursery import run_tool_calls

path, tag, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lockstep = sys.argv[5] == "1"


async def body(args, ctx):
    await trio.sleep(0)
    return f"r-{ctx.call_id}-" + "x" * size


class Reporting:
    def __init__(self, inner):
        self.inner = inner

    def record(self, event):
        self.inner.record(event)
        if isinstance(event, ToolResultEvent):  # committed: record() returned
            print(f"C {event.batch} {event.index} {event.call_id}", flush=True)
            if lockstep:  # wait for the parent: it may kill us right here
                sys.stdin.readline()


registry = ToolRegistry()
for name in ("t", "i"):  # "i" is idempotent: resuming may run it again
    registry.register(
        ToolDefinition(
            name, name, {"type": "object"}, body, idempotent=name == "i",
            is_concurrency_safe=lambda a: True,
        )
    )
calls = [ToolCall(f"{tag}-{i}", "ti"[i % 2]) for i in range(count)]
with JsonlRecorder(path) as recorder:
    trio.run(lambda: run_tool_calls(registry, calls, recorder=Reporting(recorder)))
"""


def expected_text(call_id: str, size: int) -> str:
    return f"r-{call_id}-" + "x" * size


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(os.environ["TOOLNURSERY_MACHINE_DIR"]) / uuid.uuid4().hex
        self.dir.mkdir()
        self.path = self.dir / "log.jsonl"
        self.committed: dict[tuple[str, int], str] = {}  # (batch, index) -> expected text
        self.appended: list[ToolCallEvent] = []
        self.killed: list[tuple[str, int, int]] = []  # (tag, count, size) of killed batches
        self.committed_ids: set[str] = set()
        self.tampered: set[str] = set()  # tags of killed batches holding another call's line

    def append_one(self) -> None:
        event = ToolCallEvent(f"parent-{uuid.uuid4().hex}", 0, ToolCall("p", "t", "x"))
        with JsonlRecorder(self.path) as recorder:
            recorder.record(event)
        self.appended.append(event)

    @rule(
        count=st.integers(1, 12),
        size=st.sampled_from([0, 100, 100, 300_000, 2_000_000]),
        kill_after=st.none() | st.integers(0, 11) | st.integers(0, 11),
        concurrent=st.booleans(),
        lockstep=st.booleans(),
    )
    def run_batch(
        self, count: int, size: int, kill_after: int | None, concurrent: bool, lockstep: bool
    ) -> None:
        """Run a batch in a subprocess; kill it after ``kill_after`` commits (``lockstep``:
        exactly there, the child waiting inside ``record()``; else wherever it got to)."""
        tag = uuid.uuid4().hex[:8]
        argv = [str(self.path), tag, str(count), str(size), "1" if lockstep else "0"]
        with subprocess.Popen(
            [sys.executable, "-c", CHILD, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        ) as child:
            assert child.stdout is not None
            assert child.stdin is not None
            for seen, line in enumerate(child.stdout, 1):
                _, batch, index, call_id = line.decode().split()
                self.committed[batch, int(index)] = expected_text(call_id, size)
                self.committed_ids.add(call_id)
                if concurrent:
                    self.append_one()
                if kill_after is not None and seen > kill_after:
                    os.kill(child.pid, signal.SIGKILL)
                    break
                if lockstep:
                    child.stdin.write(b"go\n")
                    child.stdin.flush()
        assert child.returncode in (0, -signal.SIGKILL)
        if child.returncode:
            self.killed.append((tag, count, size))

    @precondition(lambda self: self.killed)
    @rule(data=st.data())
    def resume_a_killed_batch(self, data: st.DataObject) -> None:
        """Resuming never re-runs a committed call; afterwards every call has a result."""
        tag, count, size = self.killed.pop(data.draw(st.integers(0, len(self.killed) - 1)))
        ran: list[str] = []

        async def body(args: object, ctx: ToolRunContext) -> str:
            ran.append(ctx.call_id)
            await trio.sleep(0)
            return expected_text(ctx.call_id, size)

        registry = ToolRegistry()
        for name in ("t", "i"):
            registry.register(
                ToolDefinition(
                    name,
                    name,
                    {"type": "object"},
                    body,
                    idempotent=name == "i",
                    is_concurrency_safe=lambda a: True,
                )
            )
        calls = [ToolCall(f"{tag}-{i}", "ti"[i % 2]) for i in range(count)]
        started = {e.call.id for e in read_log(self.path) if isinstance(e, ToolCallEvent)}
        if tag in self.tampered:
            with pytest.raises(ResumeError, match="it records these calls, and its result line"):
                trio.run(partial(run_tool_calls, registry, calls, resume_from=self.path))
            assert ran == []
            return
        with JsonlRecorder(self.path) as recorder:
            results = trio.run(
                partial(run_tool_calls, registry, calls, recorder=recorder, resume_from=self.path)
            )
        assert not self.committed_ids & set(ran), "a committed call ran again"
        twice = {c.id for c in calls if c.name == "t" and c.id in started} & set(ran)
        assert not twice, "a started call of a tool that is not idempotent ran again"
        batches = {
            e.batch
            for e in read_log(self.path)
            if isinstance(e, ToolCallEvent) and e.call.id.startswith(tag)
        }
        (batch,) = batches  # the resumed calls joined the killed batch
        for index, result in enumerate(results):
            block = result.content[0]
            assert isinstance(block, TextContent)
            assert not block.text.startswith("other's"), "a call got another call's result"
            self.committed.setdefault((batch, index), block.text)
            assert self.committed[batch, index] == block.text
            self.committed_ids.add(calls[index].id)
        RESUMED.append(len(ran))

    @rule()
    def open_and_append(self) -> None:
        self.append_one()

    @rule(into_killed=st.booleans(), index=st.integers(0, 11))
    def another_calls_result_is_merged_in(self, into_killed: bool, index: int) -> None:
        """A ``tool_result`` line of another call, without its call line: in a batch of
        its own at an index these batches use, or in a killed batch."""
        batch = f"merged-{uuid.uuid4().hex}"
        if into_killed and self.killed:
            tag, count, _ = self.killed[index % len(self.killed)]
            batch = self.batch_of(tag)
            self.tampered.add(tag)
            index %= count
        other = f"other-{uuid.uuid4().hex[:8]}"
        event = ToolResultEvent(
            batch, index, other, ToolExecutionResult((TextContent(f"other's {other}"),), False)
        )
        with JsonlRecorder(self.path) as recorder:
            recorder.record(event)

    def batch_of(self, tag: str) -> str:
        """The batch id a killed batch's calls were recorded under."""
        (batch,) = {
            e.batch
            for e in read_log(self.path)
            if isinstance(e, ToolCallEvent) and e.call.id.startswith(tag)
        }
        return batch

    @rule(cut=st.floats(0.05, 0.95))
    def a_writer_dies_mid_line(self, cut: float) -> None:
        line = msgspec.json.encode(
            ToolResultEvent("torn", 0, "t", ToolExecutionResult((TextContent("y" * 500),), False))
        )
        with open(self.path, "ab") as file:
            file.write(line[: int(len(line) * cut)])

    @invariant()
    def nothing_committed_is_lost_or_doubled(self) -> None:
        if not self.path.exists():
            return
        events = read_log(self.path)
        results: dict[tuple[str, int], str] = {}
        for event in events:
            if isinstance(event, ToolResultEvent) and not event.call_id.startswith("other-"):
                key = (event.batch, event.index)
                assert key not in results, f"a result recorded twice: {key}"
                block = event.result.content[0]
                assert isinstance(block, TextContent)
                results[key] = block.text
        for key, text in self.committed.items():
            assert results.get(key) == text, f"a committed result is lost: {key}"
        assert "torn" not in {batch for batch, _ in results}
        starts = [e for e in events if isinstance(e, ToolCallEvent)]
        for event in self.appended:
            assert event in starts
        pairs = replay_log(self.path)
        assert len(pairs) == len({(e.batch, e.index) for e in starts})


@pytest.fixture
def machine_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLNURSERY_MACHINE_DIR", str(tmp_path))
    return tmp_path


def test_the_log_machine(machine_dir: Path) -> None:
    LogMachine.TestCase.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=8,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    LogMachine.TestCase("runTest").runTest()


def test_one_run_of_the_machine_kills_in_lockstep_and_resumes(machine_dir: Path) -> None:
    """The rules themselves, in an order the random runs may not reach on a small budget."""
    machine = LogMachine()
    machine.run_batch(count=7, size=100, kill_after=2, concurrent=True, lockstep=True)
    assert len(machine.killed) == 1
    machine.nothing_committed_is_lost_or_doubled()
    machine.a_writer_dies_mid_line(0.5)
    machine.open_and_append()
    machine.another_calls_result_is_merged_in(into_killed=False, index=0)
    resumed = len(RESUMED)

    class First:
        def draw(self, strategy: object) -> int:
            return 0

    machine.resume_a_killed_batch(First())
    assert len(RESUMED) == resumed + 1
    assert RESUMED[-1] >= 1  # the calls after the kill ran now
    machine.nothing_committed_is_lost_or_doubled()
    # Another call's result merged into a killed batch: resuming it is refused.
    machine.run_batch(count=3, size=0, kill_after=0, concurrent=False, lockstep=True)
    machine.another_calls_result_is_merged_in(into_killed=True, index=1)
    machine.nothing_committed_is_lost_or_doubled()
    machine.resume_a_killed_batch(First())
    assert len(RESUMED) == resumed + 1  # refused: nothing ran
    assert machine.killed == []
    machine.nothing_committed_is_lost_or_doubled()
