"""The adapters' per-call shortcuts give what the general paths give: a result of one
text block, an event class read by its cached reader, a chat call whose JSON closes
with trailing space."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest
import trio

from toolnursery import TextContent, ToolCall, ToolExecutionResult
from toolnursery.providers import anthropic, openai_chat, openai_responses

CALL = ToolCall("c1", "echo", "{}")


class Text(TextContent, frozen=True):
    """A subclass: the one-block shortcut does not take it, the general path does."""


@pytest.mark.parametrize("text", ["", "x", "two\nlines"])
def test_one_text_block_gives_what_the_general_path_gives(text: str) -> None:
    short = [ToolExecutionResult((TextContent(text),), False)]
    general = [ToolExecutionResult((Text(text),), False)]
    for module in (openai_chat, openai_responses, anthropic):
        assert module.result_messages([CALL], short) == module.result_messages([CALL], general)
    assert openai_chat.result_messages([CALL], short)[0]["content"] == text
    assert openai_responses.result_messages([CALL], short)[0]["output"] == text
    block = anthropic.result_messages([CALL], short)[0]["content"][0]
    if text:
        assert block["content"] == [{"type": "text", "text": text}]
    else:
        assert "content" not in block  # Anthropic refuses empty text blocks


class Event(Mapping[str, Any]):
    """An event that is a mapping but not a dict (read by key, not by attribute)."""

    def __init__(self, **fields: Any) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


class Collector:
    """A batch stand-in: records each submission and how many events had been read."""

    def __init__(self, read: list[int]) -> None:
        self.read = read
        self.submitted: list[tuple[int, ToolCall]] = []

    def submit(self, call: ToolCall) -> int:
        self.submitted.append((len(self.read), call))
        return len(self.submitted) - 1

    def close(self) -> None:
        pass

    def __aiter__(self) -> AsyncIterator[tuple[ToolCall, ToolExecutionResult]]:
        return self._pairs()

    async def _pairs(self) -> AsyncIterator[tuple[ToolCall, ToolExecutionResult]]:
        for _, call in self.submitted:
            yield call, ToolExecutionResult((TextContent("ok"),), False)


def anthropic_events(index: int, call_id: str) -> list[Event]:
    block = Event(type="tool_use", id=call_id, name="echo", input={})
    delta = Event(type="input_json_delta", partial_json='{"n": 1}')
    return [
        Event(type="content_block_start", index=index, content_block=block),
        Event(type="content_block_delta", index=index, delta=delta),
        Event(type="content_block_stop", index=index),
    ]


async def stream_of(events: list[Any], read: list[int]) -> AsyncIterator[Any]:
    for event in events:
        read.append(1)
        await trio.lowlevel.checkpoint()
        yield event


async def test_mapping_events_are_read_by_key_every_time() -> None:
    for _ in range(2):  # the second stream reads the class through the cached reader
        read: list[int] = []
        batch = Collector(read)
        events = [*anthropic_events(0, "a"), *anthropic_events(1, "b"), Event(type="message_stop")]
        stream = anthropic.stream_calls(stream_of(events, read), batch)
        await stream.drain()
        assert [(n, c.id, c.arguments) for n, c in batch.submitted] == [
            (3, "a", '{"n": 1}'),
            (6, "b", '{"n": 1}'),
        ]
        assert stream.finished
        assert stream.anomalies == []


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def part(arguments: str, **start: Any) -> dict[str, Any]:
    function = {"arguments": arguments, **({"name": start["name"]} if start else {})}
    return {
        "tool_calls": [{"index": 0, **({"id": start["id"]} if start else {}), "function": function}]
    }


@pytest.mark.parametrize(
    ("closing", "at"),
    [("}", 3), ("} ", 3), ("}\n\t", 3), ("} x", 4), ("", 4)],
)
async def test_a_chat_call_is_submitted_when_its_object_closes(closing: str, at: int) -> None:
    read: list[int] = []
    batch = Collector(read)
    events = [
        chunk(part("", id="c1", name="echo")),
        chunk(part('{"a": {"b": 1}')),  # a nested object closes: not yet the call's end
        chunk(part(closing)),
        chunk({}, "tool_calls"),  # the finish: what is not yet complete completes here
    ]
    stream = openai_chat.stream_calls(stream_of(events, read), batch)
    await stream.drain()
    assert [(n, c.id, c.arguments) for n, c in batch.submitted] == [
        (at, "c1", '{"a": {"b": 1}' + closing)
    ]
    assert stream.anomalies == []
