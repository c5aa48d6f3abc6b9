"""Scripted model streams as the SDKs' own event types, for all three formats.

A script is a list of steps, the same for every format:

* ``("text", index, text)``: a text delta (output item / content block ``index``);
* ``("call", index, call_id, name)``: a tool call starts at ``index``;
* ``("args", index, piece)``: a piece of that call's argument JSON;
* ``("done", index)``: the item at ``index`` is complete;
* ``("end",)``: the response is complete (the format's final events).

Each builder returns the events as dicts in the wire form and checks every one by
parsing it into the SDK's own event type (so a builder cannot drift from the SDK).
The recorded sequences in ``tests/data/streams`` are these builders' output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

Step = tuple[Any, ...]

_responses_event: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
_anthropic_event: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def chat_events(script: Sequence[Step]) -> list[dict[str, Any]]:
    """``ChatCompletionChunk`` dicts."""
    out: list[dict[str, Any]] = []
    called = False
    # Chat numbers the calls alone (text has no index): rank among the call indices.
    ranks = {i: r for r, i in enumerate(sorted({s[1] for s in script if s[0] == "call"}))}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        out.append(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    chunk({"role": "assistant", "content": ""})
    for step in script:
        kind = step[0]
        if kind == "text":
            chunk({"content": step[2]})
        elif kind == "call":
            called = True
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": ranks[step[1]],
                            "id": step[2],
                            "type": "function",
                            "function": {"name": step[3], "arguments": ""},
                        }
                    ]
                }
            )
        elif kind == "args":
            chunk({"tool_calls": [{"index": ranks[step[1]], "function": {"arguments": step[2]}}]})
        elif kind == "end":
            chunk({}, "tool_calls" if called else "stop")
    for event in out:
        ChatCompletionChunk.model_validate(event)
    return out


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "scripted",
        "status": status,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": output,
    }


def responses_events(script: Sequence[Step]) -> list[dict[str, Any]]:
    """Responses stream event dicts (``ResponseStreamEvent``)."""
    out: list[dict[str, Any]] = []
    items: dict[int, dict[str, Any]] = {}

    def emit(event: dict[str, Any]) -> None:
        event["sequence_number"] = len(out)
        out.append(event)

    emit({"type": "response.created", "response": _response("in_progress", [])})
    for step in script:
        kind = step[0]
        if kind == "text":
            index = step[1]
            if index not in items:
                items[index] = {
                    "type": "message",
                    "id": f"msg_{index}",
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                }
                emit(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": dict(items[index]),
                    }
                )
            items[index].setdefault("text", "")
            items[index]["text"] += step[2]
            emit(
                {
                    "type": "response.output_text.delta",
                    "item_id": f"msg_{index}",
                    "output_index": index,
                    "content_index": 0,
                    "delta": step[2],
                    "logprobs": [],
                }
            )
        elif kind == "call":
            index = step[1]
            items[index] = {
                "type": "function_call",
                "id": f"fc_{index}",
                "call_id": step[2],
                "name": step[3],
                "arguments": "",
                "status": "in_progress",
            }
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": dict(items[index]),
                }
            )
        elif kind == "args":
            index = step[1]
            items[index]["arguments"] += step[2]
            emit(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": items[index]["id"],
                    "output_index": index,
                    "delta": step[2],
                }
            )
        elif kind == "done":
            index = step[1]
            item = items[index]
            if item["type"] == "function_call":
                emit(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "arguments": item["arguments"],
                    }
                )
            emit({"type": "response.output_item.done", "output_index": index, "item": _final(item)})
        elif kind == "end":
            output = [_final(items[i]) for i in sorted(items)]
            emit({"type": "response.completed", "response": _response("completed", output)})
    for event in out:
        _responses_event.validate_python(event)
    return out


def _final(item: dict[str, Any]) -> dict[str, Any]:
    done = {k: v for k, v in item.items() if k != "text"}
    done["status"] = "completed"
    if item["type"] == "message":
        done["content"] = [{"type": "output_text", "text": item.get("text", ""), "annotations": []}]
    return done


def anthropic_events(script: Sequence[Step]) -> list[dict[str, Any]]:
    """Anthropic raw stream event dicts (``RawMessageStreamEvent``)."""
    out: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "scripted",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
    ]
    started: set[int] = set()
    called = False
    for step in script:
        kind = step[0]
        if kind == "text":
            index = step[1]
            if index not in started:
                started.add(index)
                out.append(
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    }
                )
            out.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": step[2]},
                }
            )
        elif kind == "call":
            called = True
            started.add(step[1])
            out.append(
                {
                    "type": "content_block_start",
                    "index": step[1],
                    "content_block": {
                        "type": "tool_use",
                        "id": step[2],
                        "name": step[3],
                        "input": {},
                    },
                }
            )
        elif kind == "args":
            out.append(
                {
                    "type": "content_block_delta",
                    "index": step[1],
                    "delta": {"type": "input_json_delta", "partial_json": step[2]},
                }
            )
        elif kind == "done":
            out.append({"type": "content_block_stop", "index": step[1]})
        elif kind == "end":
            out.append(
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": "tool_use" if called else "end_turn",
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": 10},
                }
            )
            out.append({"type": "message_stop"})
    for event in out:
        _anthropic_event.validate_python(event)
    return out


BUILDERS = {"chat": chat_events, "responses": responses_events, "anthropic": anthropic_events}


def parse(fmt: str, event: dict[str, Any]) -> Any:
    """The SDK's own object for one event dict."""
    if fmt == "chat":
        return ChatCompletionChunk.model_validate(event)
    if fmt == "responses":
        return _responses_event.validate_python(event)
    return _anthropic_event.validate_python(event)


# The recorded scenarios (tests/data/streams/<format>-<name>.jsonl).
SCENARIOS: dict[str, list[Step]] = {
    # Three calls whose argument deltas interleave, with text before them.
    "interleaved": [
        ("text", 0, "Reading "),
        ("text", 0, "three files."),
        ("done", 0),
        ("call", 1, "c1", "echo"),
        ("call", 2, "c2", "echo"),
        ("args", 1, '{"path": '),
        ("call", 3, "c3", "echo"),
        ("args", 2, '{"path": "b"'),
        ("args", 3, '{"path": "c"}'),
        ("args", 1, '"a"}'),
        ("done", 1),
        ("args", 2, "}"),
        ("done", 2),
        ("done", 3),
        ("end",),
    ],
    # The second call's arguments are not JSON: it reaches the tool, which refuses it.
    "invalid-json": [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "c2", "echo"),
        ("args", 1, '{"path": "b",,'),
        ("done", 1),
        ("call", 2, "c3", "echo"),
        ("args", 2, '{"path": "c"}'),
        ("done", 2),
        ("end",),
    ],
    # The stream stops in the middle of the third call's arguments.
    "broken": [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "c2", "echo"),
        ("args", 1, '{"path": "b"}'),
        ("done", 1),
        ("call", 2, "c3", "echo"),
        ("args", 2, '{"path": "c'),
    ],
    # Index 2 starts before index 1; index 1's start is sent twice; a second call
    # ("c9") starts at index 2, which already holds "c3".
    "out-of-order": [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 2, "c3", "echo"),
        ("args", 2, '{"path": "c"}'),
        ("done", 2),
        ("call", 1, "c2", "echo"),
        ("call", 1, "c2", "echo"),
        ("args", 1, '{"path": "b"}'),
        ("done", 1),
        ("call", 2, "c9", "echo"),
        ("end",),
    ],
}


def recorded(fmt: str, name: str) -> str:
    """The JSON-lines text of one recorded scenario."""
    import json

    return "".join(json.dumps(event) + "\n" for event in BUILDERS[fmt](SCENARIOS[name]))


if __name__ == "__main__":
    from pathlib import Path

    here = Path(__file__).parent / "data" / "streams"
    for fmt in BUILDERS:
        for name in SCENARIOS:
            (here / f"{fmt}-{name}.jsonl").write_text(recorded(fmt, name))
