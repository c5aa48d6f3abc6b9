"""Resuming a batch after a crash: the pure plan, then the runs that use it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import (
    HookContext,
    InterruptedCallError,
    LogReport,
    ResumeError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._batch._recorder import ContextEvent, ProgressEvent
from toolnursery._batch._resume import plan_resume
from toolnursery._cli._cards import read_batches
from toolnursery._cli._main import main
from toolnursery._core._outcomes import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    ABORTED_RESULT,
    failure_result,
)
from toolnursery.log import (
    JsonlRecorder,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    read_log,
    replay_log,
)


def ok(text: str) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), False)


CALLS = [ToolCall(f"c{i}", "write" if i % 2 else "read", f'{{"n": {i}}}') for i in range(6)]


def idempotent(call: ToolCall) -> bool:
    return call.name == "read"


def test_each_kind_of_call_gets_its_action() -> None:
    events: list[RecorderEvent] = [
        ToolCallEvent("old", 0, ToolCall("x", "read")),  # another batch, finished
        ToolResultEvent("old", 0, "x", ok("x")),
        ToolCallEvent("b", 0, CALLS[0]),
        ToolCallEvent("b", 1, CALLS[1]),
        ToolResultEvent("b", 0, "c0", ok("read 0")),
        ToolCallEvent("b", 2, CALLS[2]),  # read, started: runs again
        ToolCallEvent("b", 3, CALLS[3]),  # write, started: interrupted
        ToolResultEvent("b", 1, "c1", ok("wrote 1")),
        ToolCallEvent("b", 4, CALLS[4]),
        ToolResultEvent("b", 4, "c4", ABORTED_BEFORE_DISPATCH_RESULT),
        ContextEvent("b", 1, "c1", HookContext((TextContent("ctx"),), "tool")),
        # c5 never started
    ]
    plan = plan_resume(events, CALLS, idempotent)
    assert plan.batch_id == "b"
    assert [(e.action, e.started) for e in plan.calls] == [
        ("replay", True),
        ("replay", True),
        ("run", True),
        ("interrupted", True),
        ("run", True),
        ("run", False),
    ]
    assert plan.calls[0].result == ok("read 0")
    assert plan.calls[1].result == ToolExecutionResult(
        (TextContent("wrote 1"),), False, None, (HookContext((TextContent("ctx"),), "tool"),)
    )
    interrupted = plan.calls[3].result
    assert interrupted == failure_result(InterruptedCallError("write"))
    assert interrupted.error is not None
    assert (interrupted.error.name, interrupted.error.code) == (
        "InterruptedCallError",
        "INTERRUPTED",
    )
    assert (plan.count("replay"), plan.count("run"), plan.count("interrupted")) == (2, 3, 1)


def test_an_aborted_result_reruns_only_an_idempotent_tool() -> None:
    events: list[RecorderEvent] = []
    for i in (0, 1):
        events += [
            ToolCallEvent("b", i, CALLS[i]),
            ToolResultEvent("b", i, f"c{i}", ABORTED_RESULT),
        ]
    plan = plan_resume(events, CALLS[:2], idempotent)
    assert [e.action for e in plan.calls] == ["run", "replay"]
    assert plan.calls[1].result == ABORTED_RESULT


def test_the_last_matching_batch_is_resumed_and_none_matching_runs_everything_fresh() -> None:
    events: list[RecorderEvent] = [
        ToolCallEvent("first", 0, CALLS[0]),
        ToolResultEvent("first", 0, "c0", ok("first")),
        ToolCallEvent("other", 0, ToolCall("zz", "read")),
        ToolCallEvent("second", 0, CALLS[0]),
    ]
    plan = plan_resume(events, CALLS[:1], idempotent)
    assert plan.batch_id == "second"
    assert plan.calls[0].action == "run"
    fresh = plan_resume(events, [ToolCall("new", "write")], idempotent)
    assert fresh.batch_id is None
    assert [(e.action, e.started) for e in fresh.calls] == [("run", False)]
    assert plan_resume([], CALLS, idempotent).count("run") == len(CALLS)


def test_a_named_batch_must_hold_these_calls() -> None:
    events: list[RecorderEvent] = [ToolCallEvent("b", 1, CALLS[2])]
    with pytest.raises(ResumeError, match='cannot resume batch "b": the log records call'):
        plan_resume(events, CALLS, idempotent, batch_id="b")
    with pytest.raises(ResumeError, match="at index 1, and there are 1 calls"):
        plan_resume(events, CALLS[:1], idempotent, batch_id="b")
    plan = plan_resume(events, CALLS, idempotent, batch_id="unrecorded")
    assert plan.batch_id == "unrecorded"
    assert plan.count("run") == len(CALLS)


# -- lines of other calls: edited, merged, torn logs ---------------------------------


async def test_another_calls_result_is_never_replayed_and_the_call_runs(tmp_path: Path) -> None:
    paid: list[str] = []

    async def pay(args: object, ctx: ToolRunContext) -> str:
        paid.append(ctx.call_id)
        return "paid"

    registry = ToolRegistry()
    registry.register(ToolDefinition("pay", "Pay.", {"type": "object"}, pay))
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:  # a result line with no call line, of "other"
        recorder.record(ToolResultEvent("b1", 0, "other", ok("other's result")))
    calls = [ToolCall("mine", "pay", '{"amount": 5}')]
    plan = plan_resume(read_log(log), calls, idempotent)
    assert plan.batch_id is None
    assert [e.action for e in plan.calls] == ["run"]
    assert plan.notes == (
        "batch \"b1\" not resumed: its result line at index 0 is for call 'other', "
        "not 'mine', and it has no call line",
    )
    results = await run_tool_calls(registry, calls, resume_from=log)
    assert texts(results) == ["paid"]
    assert paid == ["mine"]


def test_a_result_without_its_call_line_is_not_trusted_and_never_runs_twice() -> None:
    events: list[RecorderEvent] = [
        ToolCallEvent("b", 0, CALLS[0]),
        ToolResultEvent("b", 0, "c0", ok("read 0")),
        ToolResultEvent("b", 1, "c1", ok("wrote 1")),  # its call line was edited out
        ToolResultEvent("b", 2, "c2", ABORTED_BEFORE_DISPATCH_RESULT),  # idem, no call line
        ProgressEvent("b", 3, "c3", LogReport(level="info", data="half")),  # no call line
        ToolResultEvent("b", 5, "c5", ABORTED_BEFORE_DISPATCH_RESULT),  # write, no call line
    ]
    plan = plan_resume(events, CALLS, idempotent)
    assert plan.batch_id == "b"
    assert [(e.action, e.started, e.note is not None) for e in plan.calls] == [
        ("replay", True, False),
        ("interrupted", True, True),
        ("run", True, True),
        ("interrupted", True, True),
        ("run", False, False),
        ("interrupted", True, True),
    ]
    assert plan.calls[1].note == (
        "the log holds a result of call 'c1' at index 1 without its call line; not trusted"
    )
    assert plan.calls[3].note is not None
    assert plan.calls[3].note.startswith("the log holds a line of call 'c3'")
    assert plan.notes == tuple(e.note for e in plan.calls if e.note is not None)


def test_a_batch_of_these_calls_holding_another_calls_line_is_refused() -> None:
    started: list[RecorderEvent] = [
        ToolCallEvent("b", 0, CALLS[0]),
        ToolCallEvent("b", 1, CALLS[1]),
    ]
    merged: list[RecorderEvent] = [*started, ToolResultEvent("b", 1, "other", ok("not c1's"))]
    with pytest.raises(
        ResumeError,
        match='batch "b": it records these calls, and its result line at index 1 is '
        "for call 'other', not 'c1'",
    ):
        plan_resume(merged, CALLS[:2], idempotent)
    # No call line, but a result of c0 at index 0 beside another call's: refused too.
    edited: list[RecorderEvent] = [
        ToolResultEvent("b", 0, "c0", ok("c0's")),
        ContextEvent("b", 1, "x", HookContext((TextContent("ctx"),), "tool")),
    ]
    with pytest.raises(ResumeError, match="its context line at index 1 is for call 'x'"):
        plan_resume(edited, CALLS[:2], idempotent)
    past: list[RecorderEvent] = [ToolResultEvent("b", 7, "c7", ok("c7's"))]
    with pytest.raises(ResumeError, match="past the last of 2 calls"):
        plan_resume(past, CALLS[:2], idempotent, batch_id="b")
    with pytest.raises(ResumeError, match="for call 'other', not 'c1'"):
        plan_resume(merged, CALLS[:2], idempotent, batch_id="b")
    # A later batch of these very calls is resumed; the contradictory one is older.
    later = [*merged, ToolCallEvent("b2", 0, CALLS[0])]
    assert plan_resume(later, CALLS[:2], idempotent).batch_id == "b2"


async def test_resuming_an_untrusted_result_records_the_call_line_then_replays(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    async def write(args: object, ctx: ToolRunContext) -> str:
        ran.append(ctx.call_id)
        return "wrote"

    registry = ToolRegistry()
    registry.register(ToolDefinition("write", "Write.", {"type": "object"}, write))
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        recorder.record(ToolResultEvent("b", 0, "w", ok("wrote once")))
    calls = [ToolCall("w", "write")]
    with JsonlRecorder(log) as recorder:
        first = await run_tool_calls(registry, calls, recorder=recorder, resume_from=log)
    assert first[0].error is not None
    assert first[0].error.code == "INTERRUPTED"
    assert replay_log(log) == [(calls[0], first[0])]
    again = plan_resume(read_log(log), calls, idempotent)
    assert [(e.action, e.note) for e in again.calls] == [("replay", None)]
    assert ran == []


def test_replay_pairs_a_result_only_with_its_own_call(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        recorder.record(ToolCallEvent("b", 0, CALLS[0]))
        recorder.record(ToolResultEvent("b", 0, "other", ok("other's")))
    assert replay_log(log) == [(CALLS[0], None)]


# -- properties ------------------------------------------------------------------------

STATES = ["none", "started", "ok", "failed", "aborted", "aborted_before"]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[ToolCall], list[bool], list[str], list[Any]]:
    n = draw(st.integers(1, 8))
    calls = [ToolCall(f"c{i}", f"t{i}", "") for i in range(n)]
    flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    states = draw(st.lists(st.sampled_from(STATES), min_size=n, max_size=n))
    # A batch records starts in model order; results commit in model order too.
    events: list[RecorderEvent] = []
    for i, state in enumerate(states):
        if state != "none":
            events.append(ToolCallEvent("b", i, calls[i]))
    results = {
        "ok": ok("done"),
        "failed": ToolExecutionResult((TextContent("Error: no"),), True),
        "aborted": ABORTED_RESULT,
        "aborted_before": ABORTED_BEFORE_DISPATCH_RESULT,
    }
    for i, state in enumerate(states):
        if state in results:
            events.append(ToolResultEvent("b", i, f"c{i}", results[state]))
    cut = draw(st.integers(0, len(events)))  # a crash may have cut the log anywhere
    kept = events[:cut]
    return calls, flags, states, kept


@settings(max_examples=200)
@given(histories())
def test_a_plan_never_runs_a_side_effect_twice_and_loses_no_committed_result(
    history: tuple[list[ToolCall], list[bool], list[str], list[RecorderEvent]],
) -> None:
    calls, flags, _, events = history

    def is_idem(call: ToolCall) -> bool:
        return flags[calls.index(call)]

    plan = plan_resume(events, calls, is_idem)
    started = {e.index for e in events if isinstance(e, ToolCallEvent)}
    committed = {e.index: e.result for e in events if isinstance(e, ToolResultEvent)}
    assert [e.index for e in plan.calls] == list(range(len(calls)))
    for entry in plan.calls:
        i = entry.index
        result = committed.get(i)
        body_may_have_run = i in started and result != ABORTED_BEFORE_DISPATCH_RESULT
        if entry.action == "run" and body_may_have_run:
            assert flags[i], "a non-idempotent tool that may have run ran again"
        if result is not None and result.error is None:
            assert entry.action == "replay"
            assert entry.result == result
        if i not in started and result is None:
            assert entry.action == "run"
        if entry.action == "interrupted":
            assert i in started
            assert result is None
            assert not flags[i]

    # Resuming records what it does; resuming again then replays every call.
    after = list(events)
    for entry in plan.calls:
        if entry.action != "replay":
            after.append(ToolCallEvent(plan.batch_id or "new", entry.index, entry.call))
            final = entry.result if entry.result is not None else ok(f"ran {entry.index}")
            after.append(ToolResultEvent(plan.batch_id or "new", entry.index, entry.call.id, final))
    again = plan_resume(after, calls, is_idem)
    assert again.count("replay") == len(calls)
    for first, second in zip(plan.calls, again.calls, strict=True):
        assert second.result == (first.result or ok(f"ran {first.index}"))


@st.composite
def tampered(
    draw: st.DrawFn,
) -> tuple[list[ToolCall], list[bool], list[RecorderEvent], list[RecorderEvent]]:
    """A history as above, then edited and merged: call lines dropped, other calls'
    results (no call line) put into its batch or a batch of their own, another batch's
    lines interleaved."""
    calls, flags, _, events = draw(histories())
    kept = [e for e in events if not (isinstance(e, ToolCallEvent) and draw(st.booleans()))]
    foreign = draw(
        st.lists(
            st.builds(
                lambda batch, index, k: ToolResultEvent(batch, index, f"x{k}", ok("foreign")),
                st.sampled_from(["b", "e"]),
                st.integers(0, len(calls) + 1),
                st.integers(0, 3),
            ),
            max_size=3,
        )
    )
    other = [ToolCallEvent("o", 0, ToolCall("o0", "t0")), ToolResultEvent("o", 0, "o0", ok("o"))]
    for event in [*foreign, *other]:
        kept.insert(draw(st.integers(0, len(kept))), event)
    return calls, flags, events, kept


@settings(max_examples=300)
@given(tampered())
def test_a_tampered_log_never_gives_a_call_another_calls_result_or_a_second_run(
    history: tuple[list[ToolCall], list[bool], list[RecorderEvent], list[RecorderEvent]],
) -> None:
    calls, flags, _, events = history
    ids = [call.id for call in calls]

    def agrees(event: RecorderEvent) -> bool:
        if isinstance(event, ToolCallEvent):
            return event.index < len(calls) and event.call == calls[event.index]
        return event.index < len(ids) and event.call_id == ids[event.index]

    in_b = [e for e in events if e.batch == "b"]
    contradicts = any(agrees(e) for e in in_b) and not all(agrees(e) for e in in_b)
    if contradicts:
        with pytest.raises(ResumeError, match='batch "b"'):
            plan_resume(events, calls, lambda call: flags[ids.index(call.id)])
        return
    plan = plan_resume(events, calls, lambda call: flags[ids.index(call.id)])
    if plan.batch_id is None and any(e.batch == "e" for e in events):
        assert any(note.startswith('batch "e" not resumed') for note in plan.notes)
    mine = [e for e in events if e.batch == plan.batch_id]
    lines = {(e.index, type(e)) for e in mine}
    for entry in plan.calls:
        i = entry.index
        assert entry.result is None or entry.result.text != "foreign"
        if entry.action == "replay":
            assert (i, ToolCallEvent) in lines
            assert ToolResultEvent(plan.batch_id or "", i, ids[i], entry.result) in mine  # type: ignore[arg-type]
        if entry.action == "run" and not flags[i]:  # a side effect: it may not have begun
            assert (i, ToolCallEvent) not in lines or [
                e.result for e in mine if isinstance(e, ToolResultEvent) and e.index == i
            ][-1:] == [ABORTED_BEFORE_DISPATCH_RESULT]
            assert (
                not any(e.index == i for e in mine if not isinstance(e, ToolCallEvent))
                or (
                    i,
                    ToolCallEvent,
                )
                in lines
            )
    if plan.batch_id is None:
        assert not any(agrees(e) for e in events)


# -- resuming for real: a process killed mid-batch -------------------------------------

TOOLS = """
import os
import trio
from toolnursery import ToolDefinition, ToolRegistry

EFFECTS = os.environ["TOOLNURSERY_TEST_EFFECTS"]


def note(ctx, what):
    with open(EFFECTS, "a", encoding="utf-8") as file:
        file.write(f"{what} {ctx.call_id} {ctx.idempotency_key}\\n")


async def write(args, ctx):
    note(ctx, "write")
    await trio.sleep(0)
    return "wrote " + ctx.call_id


async def read(args, ctx):
    note(ctx, "read")
    await trio.sleep(0)
    return "read " + ctx.call_id


async def crash(args, ctx):
    note(ctx, "crash")
    if os.environ.get("TOOLNURSERY_TEST_CRASH"):
        os._exit(3)  # the process dies with this call started and not committed
    return "survived " + ctx.call_id


def make(idempotent_crash=False):
    registry = ToolRegistry()
    registry.register(ToolDefinition("write", "w", {}, write))
    registry.register(ToolDefinition("read", "r", {}, read, idempotent=True))
    registry.register(ToolDefinition("crash", "c", {}, crash, idempotent=idempotent_crash))
    return registry


registry = make()
idempotent = make(idempotent_crash=True)
"""

RUN_CALLS = [
    ToolCall("c0", "write", ""),
    ToolCall("c1", "read", ""),
    ToolCall("c2", "crash", ""),
    ToolCall("c3", "write", ""),
    ToolCall("c3", "read", ""),  # a repeated id: the duplicate-id result, never run
]


def effects(path: Path) -> list[tuple[str, str, str]]:
    return [tuple(line.split()) for line in path.read_text().splitlines()]  # type: ignore[misc]


def run_command(
    module: Path, calls: Path, log: Path, *extra: str, crash: bool = False
) -> subprocess.CompletedProcess[str]:
    """``toolnursery run CALLS --tools MODULE:registry --log LOG`` in a subprocess."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if crash:
        env["TOOLNURSERY_TEST_CRASH"] = "1"
    command = ["run", str(calls), "--tools", f"{module}:registry", "--log", str(log), *extra]
    return subprocess.run(
        [sys.executable, "-m", "toolnursery", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A batch whose process died in c2: c0 and c1 committed, c3 never started."""
    module = tmp_path / "crashtools.py"
    module.write_text(TOOLS, encoding="utf-8")
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(msgspec.json.encode(c).decode() + "\n" for c in RUN_CALLS))
    log, fx = tmp_path / "log.jsonl", tmp_path / "effects.txt"
    monkeypatch.setenv("TOOLNURSERY_TEST_EFFECTS", str(fx))
    died = run_command(module, calls, log, crash=True)
    assert died.returncode == 3, died.stderr
    assert [e[:2] for e in effects(fx)] == [("write", "c0"), ("read", "c1"), ("crash", "c2")]
    return module, calls, log


def load(path: Path) -> Any:
    """The tools module of this test (a fresh module object: it reads its env at import)."""
    spec = importlib.util.spec_from_file_location(f"crashtools_{id(path)}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def texts(results: list[ToolExecutionResult]) -> list[str]:
    return [b.text for r in results for b in r.content if isinstance(b, TextContent)]


async def test_resume_runs_what_never_ran_and_nothing_twice(
    crashed: tuple[Path, Path, Path],
) -> None:
    _, _, log = crashed
    crashtools = load(crashed[0])
    fx = Path(os.environ["TOOLNURSERY_TEST_EFFECTS"])
    first_run = effects(fx)
    with JsonlRecorder(log) as recorder:
        results = await run_tool_calls(
            crashtools.registry, RUN_CALLS, recorder=recorder, resume_from=log
        )
    assert texts(results) == [
        "wrote c0",
        "read c1",
        f"Error: {InterruptedCallError('crash').message}",
        "wrote c3",
        'Error: duplicate tool call id "c3" in this batch',
    ]
    assert results[2].error is not None
    assert results[2].error.code == "INTERRUPTED"
    # Only c3 ran: c0 and c1 committed, c2 may have had its effect, the duplicate never runs.
    assert [e[:2] for e in effects(fx)] == [*[e[:2] for e in first_run], ("write", "c3")]
    # One batch, one id: c3's idempotency key carries the crashed batch's id.
    batch_id = first_run[0][2].split(":")[0]
    assert effects(fx)[-1][2] == f"{batch_id}:c3"
    assert [r for _, r in replay_log(log)] == results
    (batch,), torn = read_batches(log)  # what `toolnursery replay` shows: each call once
    assert torn == []
    assert [(entry.call.id, entry.result) for entry in batch.calls] == [
        (call.id, result) for call, result in zip(RUN_CALLS, results, strict=True)
    ]
    # Resuming again replays everything and runs nothing.
    with JsonlRecorder(log) as recorder:
        again = await run_tool_calls(
            crashtools.registry, RUN_CALLS, recorder=recorder, resume_from=log
        )
    assert again == results
    assert len(effects(fx)) == len(first_run) + 1
    assert len(replay_log(log)) == len(RUN_CALLS)


async def test_an_interrupted_idempotent_call_runs_again_with_the_same_key(
    crashed: tuple[Path, Path, Path],
) -> None:
    _, _, log = crashed
    crashtools = load(crashed[0])
    fx = Path(os.environ["TOOLNURSERY_TEST_EFFECTS"])
    results = await run_tool_calls(crashtools.idempotent, RUN_CALLS, resume_from=log)
    assert texts(results)[2] == "survived c2"
    crash_runs = [e for e in effects(fx) if e[0] == "crash"]
    assert len(crash_runs) == 2
    assert crash_runs[0][2] == crash_runs[1][2]  # ctx.idempotency_key is stable


def test_the_command_resumes_and_prints_every_result_in_model_order(
    crashed: tuple[Path, Path, Path],
) -> None:
    module, calls, log = crashed
    resumed = run_command(module, calls, log, "--resume", "--progress", "always")
    assert resumed.returncode == 0, resumed.stderr
    lines = [msgspec.json.decode(line) for line in resumed.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["c0", "c1", "c2", "c3", "c3"]
    assert lines[2]["result"]["error"] == {"name": "InterruptedCallError", "code": "INTERRUPTED"}
    assert lines[3]["result"]["content"][0]["text"] == "wrote c3"
    assert "2 recorded, 1 to run, 1 interrupted" in resumed.stderr


def test_resume_needs_a_log_and_refuses_a_file_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text('{"id": "a", "name": "list_dir"}\n')
    assert main(["run", str(calls), "--resume"]) == 2
    assert "--resume needs --log" in capsys.readouterr().err
    notes = tmp_path / "notes.md"
    notes.write_text("# not a log\n")
    assert main(["run", str(calls), "--log", str(notes), "--resume"]) == 2
    assert "not a toolnursery event" in capsys.readouterr().err
