"""The timeline picture: every call a row, the legend, colours by code, the marks."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from timeline_batches import ListRecorder, many_calls, registry, run_rich

from toolnursery import (
    ApprovalOutcome,
    ApprovalRequest,
    Ask,
    PreToolDecision,
    ProgressReport,
    ResourceKey,
    TextContent,
    ToolCall,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    run_tool_calls,
    tool,
)
from toolnursery._timeline._draw import CODE_COLORS, code_colors
from toolnursery._timeline._model import read_timeline
from toolnursery.log import (
    ApprovalEvent,
    JsonlRecorder,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    read_log,
)
from toolnursery.timeline import draw_timeline

SVG = "{http://www.w3.org/2000/svg}"


def rows(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg.split("\n", 1)[1] if svg.startswith("<?xml") else svg)
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "call"]


def legend_codes(svg: str) -> dict[str, str]:
    """The legend's result codes and their swatches' colours."""
    root = ET.fromstring(svg.split("\n", 1)[1])
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "legend")
    out: dict[str, str] = {}
    for item in legend.iter(f"{SVG}g"):
        code = item.get("data-code")
        if code is not None:
            swatch = item.find(f"{SVG}rect")
            assert swatch is not None
            out[code] = swatch.get("fill", "")
    return out


def by_id(svg: str) -> dict[str, ET.Element]:
    return {row.get("data-call-id", ""): row for row in rows(svg)}


def shapes(row: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in row.iter() if e.get("class") == cls]


@pytest.fixture
def rich_log(tmp_path: Path) -> Path:
    path = tmp_path / "rich.jsonl"
    with JsonlRecorder(path) as recorder:
        trio.run(run_rich, recorder, clock=trio.testing.MockClock(autojump_threshold=0))
    return path


def test_the_svg_is_xml_with_a_row_per_call_a_legend_and_colours_by_code(
    rich_log: Path,
) -> None:
    svg = draw_timeline(rich_log)
    events = read_log(rich_log)
    called = [e.call.id for e in events if isinstance(e, ToolCallEvent)]
    drawn = rows(svg)
    assert [row.get("data-call-id") for row in drawn] == called
    legend = legend_codes(svg)
    assert set(legend) == {"ok", "TOOL_TIMEOUT", "UNKNOWN_TOOL"}
    assert legend["ok"] == CODE_COLORS["ok"]
    assert legend["TOOL_TIMEOUT"] == CODE_COLORS["TOOL_TIMEOUT"]
    for row in drawn:
        code = row.get("data-code", "")
        bars = shapes(row, "running") + shapes(row, "committing")
        assert bars, row.get("data-call-id")
        assert {bar.get("fill") for bar in bars} == {legend[code]}


def test_waits_barriers_timeouts_retries_and_progress_are_marked(rich_log: Path) -> None:
    svg = draw_timeline(rich_log)
    drawn = by_id(svg)
    data = {c.call.id: c for c in read_timeline(rich_log).calls}
    # w2 writes what w1 writes: it waits for w1, then runs when w1 has ended.
    assert data["w2"].waited_for == ("w1 (a)",)
    assert data["w2"].began == data["w1"].ended
    assert shapes(drawn["w2"], "waiting")
    assert "waited for w1 (a)" in "".join(drawn["w2"].itertext())
    # b1 is a barrier; a1 comes after it.
    assert data["b1"].mode == "exclusive"
    assert data["b1"].waited_for == ("a barrier: every earlier call to finish",)
    assert data["a1"].waited_for == ("barrier b1 barrier",)
    assert shapes(drawn["a1"], "queued")
    assert data["b1"].began is not None
    assert data["b1"].began >= max(
        c.ended for k, c in data.items() if k in ("p1", "w1", "w2", "t1", "r1") and c.ended
    )
    # t1 timed out: marked; r1 took three attempts: marked.
    assert shapes(drawn["t1"], "timeout")
    assert not shapes(drawn["p1"], "timeout")
    assert [e.text for e in shapes(drawn["r1"], "retried")] == ["↻3"]
    r1 = data["r1"]
    assert r1.attempts == 3
    assert len(r1.attempt_starts) == 3
    assert r1.began is not None
    assert r1.ended is not None
    assert r1.began == r1.attempt_starts[0] < r1.attempt_starts[1] < r1.attempt_starts[2]
    assert r1.attempt_starts[2] < r1.ended
    assert len(shapes(drawn["r1"], "attempt")) == 2  # a notch where each retry began
    # p1 reported progress four times: four ticks inside its running bar.
    ticks = shapes(drawn["p1"], "tick")
    assert len(ticks) == 4
    assert len(data["p1"].progress) == 4
    assert [f for _, f in data["p1"].progress] == [0.25, 0.5, 0.75, 1.0]
    (bar,) = shapes(drawn["p1"], "running")
    left, right = float(bar.get("x", 0)), float(bar.get("x", 0)) + float(bar.get("width", 0))
    assert all(left <= float(t.get("x1", -1)) <= right + 0.1 for t in ticks)
    # u1's tool is unknown: it runs alone (fail-closed), after a1 ended.
    assert data["u1"].mode == "exclusive"
    assert data["u1"].waited_for == ("a barrier: every earlier call to finish",)


def test_events_draw_the_same_picture_as_their_log(rich_log: Path) -> None:
    assert draw_timeline(read_log(rich_log), title="x") == draw_timeline(rich_log, title="x")


def _strip_times(path: Path, into: Path) -> None:
    lines = []
    for line in path.read_bytes().splitlines():
        event = msgspec.json.decode(line)
        for key in ("wall", "t", "mode", "keys", "admitted", "began", "ended"):
            event.pop(key, None)
        lines.append(msgspec.json.encode(event))
    into.write_bytes(b"\n".join(lines) + b"\n")


def test_an_old_log_draws_every_call_and_says_times_are_unknown(
    rich_log: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old.jsonl"
    _strip_times(rich_log, old)
    svg = draw_timeline(old)
    drawn = rows(svg)
    assert len(drawn) == 8
    assert "times unknown (this log was written before events carried times)" in svg
    assert not any(shapes(row, "running") for row in drawn)
    assert all(shapes(row, "unknown") for row in drawn)


@pytest.mark.timeout(60)
def test_a_thousand_calls_each_get_a_row_with_sparse_labels(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    with JsonlRecorder(path) as recorder:
        trio.run(
            lambda: run_tool_calls(registry(), many_calls(1000), recorder=recorder),
            clock=trio.testing.MockClock(autojump_threshold=0),
        )
    svg = draw_timeline(path)
    drawn = rows(svg)
    assert [row.get("data-call-id") for row in drawn] == [f"m{i}" for i in range(1000)]
    labels = [e for row in drawn for e in shapes(row, "label")]
    assert 50 <= len(labels) <= 500  # readable: not one per 3-pixel row
    assert all(shapes(row, "running") for row in drawn)
    root = ET.fromstring(svg.split("\n", 1)[1])
    assert float(root.get("height", 0)) < 5000


def test_the_html_page_has_the_svg_and_a_card_per_row(rich_log: Path) -> None:
    page = draw_timeline(rich_log, format="html")
    assert page.startswith("<!DOCTYPE html>")
    svg = page[page.index("<svg") : page.index("</svg>") + len("</svg>")]
    drawn = rows(svg)
    assert len(drawn) == 8
    cards = re.findall(r'<template id="card-(\d+)">(.*?)</template>', page, re.S)
    assert [int(i) for i, _ in cards] == list(range(8))
    # The card shows the call: its tool, and for a finished call its result.
    assert "slow" in cards[3][1]
    assert "ok at last" in cards[4][1]
    assert 'addEventListener("mousemove"' in page
    assert 'id="card"' in page


def test_a_bad_format_is_refused_naming_it(rich_log: Path) -> None:
    with pytest.raises(ValueError, match="'png'"):
        draw_timeline(rich_log, format="png")  # type: ignore[arg-type]


def test_unknown_codes_get_distinct_colours_after_the_known_ones() -> None:
    colors = code_colors(["ok", "ZETA", "ALPHA", "TOOL_TIMEOUT"])
    assert colors["ok"] == CODE_COLORS["ok"]
    assert len(set(colors.values())) == 4
    assert list(colors) == ["TOOL_TIMEOUT", "ok", "ALPHA", "ZETA"]


async def test_an_in_memory_batch_draws_without_a_file(
    autojump_clock: trio.testing.MockClock,
) -> None:
    recorder = ListRecorder()
    await run_rich(recorder)
    assert len(rows(draw_timeline(recorder.events))) == 8


def test_a_crashed_batch_draws_its_unfinished_call_open_to_the_end(
    rich_log: Path, tmp_path: Path
) -> None:
    lines = rich_log.read_bytes().splitlines(keepends=True)
    b1 = next(i for i, line in enumerate(lines) if b'"id":"b1"' in line)
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"".join(lines[: b1 + 1]) + lines[b1 + 1][:40])  # a torn line
    svg = draw_timeline(crashed)
    drawn = by_id(svg)
    assert list(drawn) == ["p1", "w1", "w2", "t1", "r1", "b1"]
    assert drawn["b1"].get("data-code") == "PENDING"
    assert shapes(drawn["b1"], "pending")
    assert not shapes(drawn["p1"], "pending")
    assert "no result recorded" in "".join(drawn["b1"].itertext())
    assert legend_codes(svg)["PENDING"] == CODE_COLORS["PENDING"]


def test_the_batches_of_a_log_follow_each_other_with_a_rule_between(
    rich_log: Path, tmp_path: Path
) -> None:
    two = tmp_path / "two.jsonl"
    with JsonlRecorder(two) as recorder:
        for _ in range(2):
            trio.run(run_rich, recorder, clock=trio.testing.MockClock(autojump_threshold=0))
    svg = draw_timeline(two)
    drawn = rows(svg)
    assert len(drawn) == 16
    assert len({row.get("data-batch") for row in drawn}) == 2
    assert svg.count('class="batch"') == 1
    assert "16 calls in 2 batches" in svg


_t = st.none() | st.floats(0, 100, allow_nan=False)
_event = st.one_of(
    st.builds(
        ToolCallEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 5),
        st.builds(ToolCall, st.sampled_from(["c1", "c2", "<&>"]), st.just("t")),
        st.none() | st.floats(1e9, 2e9, allow_nan=False),
        _t,
        st.none() | st.sampled_from(["parallel", "keyed", "exclusive"]),
        st.lists(
            st.builds(ResourceKey, st.sampled_from(["r", "s"]), st.sampled_from(["read", "write"])),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        ToolResultEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 5),
        st.just("c1"),
        st.builds(
            ToolExecutionResult,
            st.just((TextContent("r"),)),
            st.booleans(),
            st.none() | st.builds(ToolErrorInfo, st.just("E"), st.sampled_from(["X", "Y"])),
            st.just(()),
            st.none() | st.fixed_dictionaries({"attempts": st.integers(-1, 4)}),
        ),
        _t,
        _t,
        _t,
        _t,
        st.lists(st.floats(0, 100, allow_nan=False), max_size=3).map(tuple),
    ),
    st.builds(
        ProgressEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 5),
        st.just("c1"),
        st.builds(ProgressReport, progress=st.floats(0, 10), total=st.none() | st.floats(0, 10)),
        _t,
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_event, max_size=12))
def test_any_events_draw_a_row_per_call_of_each_batch(events: list[RecorderEvent]) -> None:
    svg = draw_timeline(events)
    keys = list(dict.fromkeys((e.batch, e.index) for e in events))
    drawn = rows(svg)
    assert sorted((r.get("data-batch"), int(r.get("data-index", -1))) for r in drawn) == sorted(
        keys
    )
    legend = legend_codes(svg)
    for row in drawn:
        assert row.get("data-color") == legend[row.get("data-code", "")]
    page = draw_timeline(events, format="html")
    assert page.count("<template id=") == len(keys)


def test_a_resumed_batch_shares_one_axis_with_its_first_run(tmp_path: Path) -> None:
    log = tmp_path / "resumed.jsonl"
    calls = [ToolCall(f"c{i}", "work", '{"s": 0.01}') for i in range(4)]

    class Dies(JsonlRecorder):
        def record(self, event: RecorderEvent, /) -> None:
            super().record(event)
            if isinstance(event, ToolCallEvent) and event.call.id == "c2":
                raise SystemError("the process died here")

    def run(recorder: JsonlRecorder, **kwargs: object) -> None:
        trio.run(
            lambda: run_tool_calls(registry(), calls, recorder=recorder, **kwargs),  # type: ignore[arg-type]
            clock=trio.testing.MockClock(autojump_threshold=0),
        )

    with Dies(log) as dies, pytest.raises(SystemError):
        run(dies)
    with JsonlRecorder(log) as again:
        run(again, resume_from=log)
    data = read_timeline(log)
    assert [c.call.id for c in data.calls] == ["c0", "c1", "c2", "c3"]
    assert len({c.batch for c in data.calls}) == 1  # resumed under its own id
    first, resumed = data.calls[0], data.calls[3]
    assert first.started is not None
    assert resumed.started is not None
    assert resumed.origin is not None
    assert resumed.origin > (first.origin or 0)  # the second run started later
    assert resumed.started >= first.started
    # c0-c2 started in the first run and never committed (not idempotent): interrupted.
    assert [c.code for c in data.calls] == ["INTERRUPTED"] * 3 + ["ok"]


def hostile_log(path: Path, walls: list[float], t: float = 0.5) -> Path:
    """A log of one call per wall clock (each its own batch), written line by line."""
    lines = []
    for n, wall in enumerate(walls):
        call = ToolCall(f"c{n}", "work", "{}")
        lines.append(msgspec.json.encode(ToolCallEvent(f"b{n}", 0, call, wall, t, "parallel")))
        result = ToolExecutionResult((TextContent("r"),), False)
        lines.append(msgspec.json.encode(ToolResultEvent(f"b{n}", 0, f"c{n}", result, t, t, t, t)))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(
    "walls",
    [
        [-1e20],  # a wall clock no date can name
        [1e308, -1e308],  # two batches whose difference is past the float range
        [1.7e9, -1.7e308, 1.7e308],
        [5e-324, 1.7e9],  # a subnormal start
    ],
)
def test_a_log_with_hostile_times_draws_a_well_formed_picture(
    tmp_path: Path, walls: list[float]
) -> None:
    log = hostile_log(tmp_path / "hostile.jsonl", walls)
    svg = draw_timeline(log)
    drawn = rows(svg)
    assert [row.get("data-call-id") for row in drawn] == [f"c{n}" for n in range(len(walls))]
    numbers = re.findall(r'\s(?:x|y|width|height|x1|x2|y1|y2)="([^"]*)"', svg)
    assert numbers
    assert all(re.fullmatch(r"-?\d+(\.\d+)?%?", n) for n in numbers), set(numbers)
    page = draw_timeline(log, format="html")
    assert page.count("<template id=") == len(walls)


_NASTY = "\x00\x07\x08\x0b\x0c\x1b\x7f\x85\x9b\ufffe\uffff\ud800\n\r\t"


@pytest.mark.parametrize("nasty", [*_NASTY, "\x1b]0;PWNED\x07", "fetch\x07"])
def test_control_characters_in_ids_names_and_codes_leave_the_svg_well_formed(nasty: str) -> None:
    call = ToolCall(f"id{nasty}", f"fetch{nasty}", "{}")
    failed = ToolExecutionResult(
        (TextContent(f"text{nasty}"),), True, ToolErrorInfo("E", f"CODE{nasty}")
    )
    events: list[RecorderEvent] = [
        ToolCallEvent(f"b{nasty}", 0, call, 1.7e9, 0.0, "parallel"),
        ToolResultEvent(f"b{nasty}", 0, call.id, failed, 0.1, 0.2, 0.3, 0.4),
    ]
    svg = draw_timeline(events, title=f"title{nasty}")
    svg.encode("utf-8")  # a lone surrogate never reaches the document
    (row,) = rows(svg)  # expat parses it: XML 1.0 well-formed
    assert row.get("data-call-id", "").startswith("id")
    page = draw_timeline(events, format="html")
    page.encode("utf-8")
    svg_part = page[page.index("<svg") : page.index("</svg>") + 6]
    assert len(rows(svg_part)) == 1
    if nasty not in "\n\t\r" and len(nasty) == 1:
        assert nasty not in svg
        assert (f"\\x{ord(nasty):02x}" if ord(nasty) < 256 else f"\\u{ord(nasty):04x}") in svg


_any_float = st.none() | st.floats()
_any_text = st.text(max_size=6)
_hostile_event = st.one_of(
    st.builds(
        ToolCallEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 3),
        st.builds(ToolCall, _any_text, _any_text),
        _any_float,
        _any_float,
        st.none() | st.sampled_from(["parallel", "keyed", "exclusive"]),
    ),
    st.builds(
        ToolResultEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 3),
        _any_text,
        st.builds(
            ToolExecutionResult,
            st.just((TextContent("r"),)),
            st.booleans(),
            st.none() | st.builds(ToolErrorInfo, st.just("E"), _any_text),
        ),
        _any_float,
        _any_float,
        _any_float,
        _any_float,
        st.lists(st.floats(), max_size=3).map(tuple),
    ),
    st.builds(
        ProgressEvent,
        st.sampled_from(["b1", "b2"]),
        st.integers(0, 3),
        _any_text,
        st.builds(ProgressReport, progress=st.floats(), total=st.none() | st.floats()),
        _any_float,
    ),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_hostile_event, max_size=8))
def test_any_times_and_any_text_draw_a_well_formed_picture(events: list[RecorderEvent]) -> None:
    svg = draw_timeline(events)
    svg.encode("utf-8")
    keys = {(e.batch, e.index) for e in events}
    assert len(rows(svg)) == len(keys)
    for number in re.findall(r'\s(?:x|y|width|height|x1|x2|y1|y2)="([^"]*)"', svg):
        assert re.fullmatch(r"-?\d+(\.\d+)?%?", number), number
    draw_timeline(events, format="html").encode("utf-8")


class SlowApproval:
    """An approval service a person answers after a second (trio's clock): c0 allowed,
    the others rejected."""

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        await trio.sleep(1)
        return "allowed-once" if request.call_id == "c0" else "rejected"


@tool(is_concurrency_safe=lambda args: True)
def send(to: str) -> str:
    """Send."""
    return "sent to " + to


def asked_events() -> list[RecorderEvent]:
    """Three asked calls: c0 allowed, c1 rejected, c2 asked in a process that died
    before the answer (its question is the log's last line)."""
    approvals = ToolRegistry(SlowApproval())
    approvals.register(send)

    async def ask(execution: ToolExecution, next_: Any) -> PreToolDecision:
        return Ask("check the recipient")

    approvals.on_pre_execute(ask)
    recorder = ListRecorder()
    calls = [ToolCall("c0", "send", {"to": "a"}), ToolCall("c1", "send", {"to": "b"})]

    async def main() -> None:
        await run_tool_calls(approvals, calls, recorder=recorder, agent=approvals.scope())

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    events = recorder.events
    asked = next(e for e in events if isinstance(e, ApprovalEvent) and e.call_id == "c1")
    died = [
        ToolCallEvent(batch=asked.batch, index=2, call=ToolCall("c2", "send", {"to": "c"}), t=0.0),
        msgspec.structs.replace(asked, index=2, call_id="c2"),
    ]
    wall = next(e.wall for e in events if isinstance(e, ToolCallEvent))
    died[0] = msgspec.structs.replace(died[0], wall=wall)
    return events + died


def test_an_asked_call_shows_the_question_its_wait_and_the_answer() -> None:
    events = asked_events()
    data = {c.call.id: c for c in read_timeline(events).calls}
    assert [(c.asked, c.answer, c.ask_reason) for c in data.values()] == [
        (True, "allowed-once", "check the recipient"),
        (True, "rejected", "check the recipient"),
        (True, None, "check the recipient"),
    ]
    for c in (data["c0"], data["c1"]):  # the person took a second to answer
        assert c.asked_at is not None
        assert c.answered_at is not None
        assert c.answered_at - c.asked_at == pytest.approx(1.0)
    assert data["c0"].code == "ok"
    assert data["c0"].began is not None
    assert data["c0"].began >= data["c0"].answered_at  # dispatched once allowed
    assert data["c1"].code == "DENIED"
    assert data["c2"].answered_at is None
    svg = draw_timeline(events)
    drawn = by_id(svg)
    notes = {k: "".join(e.text or "" for e in shapes(row, "note")) for k, row in drawn.items()}
    assert notes == {
        "c0": "asked: allowed-once",
        "c1": "DENIED; asked: rejected",
        "c2": "no result recorded (the batch did not finish); asked, no answer recorded",
    }
    for call_id in ("c0", "c1"):  # the wait for the answer, over the call's wait
        (bar,) = shapes(drawn[call_id], "asking")
        assert float(bar.get("width", 0)) > 10
    assert shapes(drawn["c2"], "asking")  # open: never answered
    tooltip = drawn["c1"].findtext(f"{SVG}title") or ""
    assert re.search(r"approval asked at [\d.]+ ms \(check the recipient\): rejected at", tooltip)
    assert "asking (approval)" in svg  # the legend names the mark
    assert "asking (approval)" not in draw_timeline(events[:1])
    page = draw_timeline(events, format="html")
    cards = dict(re.findall(r'<template id="card-(\d+)">(.*?)</template>', page, re.S))
    assert "(check the recipient): rejected at" in cards["1"]  # the row's card says it too
    assert "asked, no answer recorded" in cards["2"]


def test_a_resumed_call_keeps_the_answer_its_first_run_recorded() -> None:
    call = ToolCall("c0", "send", {"to": "a"})
    question = ApprovalEvent(batch="b", index=0, call_id="c0", tool="send", reason="r", t=0.1)
    events: list[RecorderEvent] = [
        ToolCallEvent(batch="b", index=0, call=call, wall=1000.0, t=0.0),
        question,
        msgspec.structs.replace(question, outcome="allowed-once", t=0.5),
        # the process died; the resumed run dispatches it without asking again
        ToolCallEvent(batch="b", index=0, call=call, wall=2000.0, t=0.0),
        ToolResultEvent(
            batch="b", index=0, call_id="c0", result=ok_result(), began=0.1, ended=0.2, t=0.3
        ),
    ]
    (c,) = read_timeline(events).calls
    assert (c.asked, c.answer, c.code) == (True, "allowed-once", "ok")
    assert (c.asked_at, c.answered_at) == (None, None)  # the first run's times, not this one's
    (row,) = rows(draw_timeline(events))
    assert not shapes(row, "asking")
    assert "".join(e.text or "" for e in shapes(row, "note")) == "asked: allowed-once"


def ok_result() -> ToolExecutionResult:
    return ToolExecutionResult((TextContent("sent"),), False)
