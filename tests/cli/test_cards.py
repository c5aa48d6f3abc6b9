"""The replay's pairing of calls with their results (``_cli/_cards.read_batches``)."""

from __future__ import annotations

from pathlib import Path

from toolnursery import TextContent, ToolCall, ToolExecutionResult
from toolnursery._cli._cards import read_batches
from toolnursery.log import JsonlRecorder, ToolCallEvent, ToolResultEvent


def ok(text: str) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), False)


def test_a_result_for_another_call_at_the_same_index_is_never_shown_as_this_calls(
    tmp_path: Path,
) -> None:
    """An edited or merged log: index 0 holds a call line for "mine" and a result for
    "other". The replay shows two rows; "mine" has no result."""
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        recorder.record(ToolCallEvent("b1", 0, ToolCall("mine", "pay", "{}")))
        recorder.record(ToolResultEvent("b1", 0, "other", ok("other's result")))
    batches, torn = read_batches(log)
    assert torn == []
    rows = {(entry.call.id, entry.result) for entry in batches[0].calls}
    assert rows == {("mine", None), ("other", ok("other's result"))}


def test_a_call_and_its_result_pair_by_index_and_id(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        recorder.record(ToolCallEvent("b1", 1, ToolCall("y", "t", "{}")))
        recorder.record(ToolCallEvent("b1", 0, ToolCall("x", "t", "{}")))
        recorder.record(ToolResultEvent("b1", 1, "y", ok("y done")))
        recorder.record(ToolResultEvent("b1", 0, "x", ok("x done")))
    batches, _ = read_batches(log)
    assert [(e.position, e.call.id, e.result) for e in batches[0].calls] == [
        (0, "x", ok("x done")),
        (1, "y", ok("y done")),
    ]
