"""The streaming adapters, driven by recorded event sequences of all three formats."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
import trio

from provider_events import BUILDERS, SCENARIOS, parse, recorded
from provider_helpers import registry
from support import no_deadlock
from toolnursery import ToolCall, ToolDefinition, ToolRegistry, ToolRunContext, open_tool_batch
from toolnursery.providers import ToolStream, anthropic, openai_chat, openai_responses

DATA = Path(__file__).parents[1] / "data" / "streams"
FORMATS = ("chat", "responses", "anthropic")
ADAPTERS = {
    "chat": openai_chat.stream_calls,
    "responses": openai_responses.stream_calls,
    "anthropic": anthropic.stream_calls,
}


def _load(fmt: str, name: str, *, sdk: bool) -> list[Any]:
    events = [json.loads(line) for line in (DATA / f"{fmt}-{name}.jsonl").read_text().splitlines()]
    return [parse(fmt, e) for e in events] if sdk else events


async def _aiter(events: Iterable[Any], *, fail: Exception | None = None) -> AsyncIterator[Any]:
    for event in events:
        await trio.lowlevel.checkpoint()
        yield event
    if fail is not None:
        raise fail


async def _run(
    fmt: str, events: AsyncIterator[Any], ran: list[Any]
) -> tuple[ToolStream, list[tuple[str, bool, str]]]:
    async with open_tool_batch(registry(ran)) as batch:
        stream = ADAPTERS[fmt](events, batch)
        texts = [text async for text in stream]
        pairs = [(c.id, r.is_error, r.content[0].text) async for c, r in stream.pairs()]  # type: ignore[union-attr]
    assert "".join(texts) == stream.text
    return stream, pairs


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_recorded_sequences_are_what_the_sdk_typed_builders_make(fmt: str, name: str) -> None:
    assert (DATA / f"{fmt}-{name}.jsonl").read_text() == recorded(fmt, name)
    assert BUILDERS[fmt]  # every event was parsed by the SDK's type while building


@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
@pytest.mark.parametrize("fmt", FORMATS)
async def test_interleaved_deltas_assemble_each_call(fmt: str, sdk: bool) -> None:
    ran: list[Any] = []
    stream, pairs = await _run(fmt, _aiter(_load(fmt, "interleaved", sdk=sdk)), ran)
    assert pairs == [("c1", False, "echo a"), ("c2", False, "echo b"), ("c3", False, "echo c")]
    if fmt != "chat":  # Chat's text is not part of an indexed item
        assert stream.text == "Reading three files."
    assert stream.finished
    assert stream.error is None
    assert stream.anomalies == []
    assert [c.arguments for c in stream.calls] == [
        '{"path": "a"}',
        '{"path": "b"}',
        '{"path": "c"}',
    ]


@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
@pytest.mark.parametrize("fmt", FORMATS)
async def test_invalid_json_arguments_reach_the_tool_which_refuses_them(
    fmt: str, sdk: bool
) -> None:
    ran: list[Any] = []
    _, pairs = await _run(fmt, _aiter(_load(fmt, "invalid-json", sdk=sdk)), ran)
    assert [(i, e) for i, e, _ in pairs] == [("c1", False), ("c2", True), ("c3", False)]
    assert pairs[1][2] == 'Error: invalid arguments: "path" must be a string'
    assert [a["path"] for _, a in ran] == ["a", "c"]


@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_stream_that_stops_mid_call_runs_the_complete_calls_only(
    fmt: str, sdk: bool
) -> None:
    ran: list[Any] = []
    stream, pairs = await _run(fmt, _aiter(_load(fmt, "broken", sdk=sdk)), ran)
    assert pairs[:2] == [("c1", False, "echo a"), ("c2", False, "echo b")]
    assert pairs[2][:2] == ("c3", True)
    assert pairs[2][2] == (
        "Error: the response stream ended before this call's arguments were complete "
        "(11 characters received); the call did not run"
    )
    assert [a["path"] for _, a in ran] == ["a", "b"]
    assert not stream.finished
    assert stream.results[2].error is not None
    assert stream.results[2].error.code == "INCOMPLETE_CALL"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_stream_that_raises_mid_call_keeps_the_error_and_the_complete_calls(
    fmt: str,
) -> None:
    ran: list[Any] = []
    reset = ConnectionResetError("peer went away")
    stream, pairs = await _run(fmt, _aiter(_load(fmt, "broken", sdk=True), fail=reset), ran)
    assert stream.error is reset
    assert [(i, e) for i, e, _ in pairs] == [("c1", False), ("c2", False), ("c3", True)]
    assert len(ran) == 2


@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
@pytest.mark.parametrize("fmt", FORMATS)
async def test_out_of_order_and_duplicate_indices(fmt: str, sdk: bool) -> None:
    ran: list[Any] = []
    stream, pairs = await _run(fmt, _aiter(_load(fmt, "out-of-order", sdk=sdk)), ran)
    assert pairs[:3] == [("c1", False, "echo a"), ("c2", False, "echo b"), ("c3", False, "echo c")]
    assert pairs[3] == (
        "c9",
        True,
        'Error: the response stream sent this call at index 2, which already held call "c3"; '
        "it did not run",
    )
    assert [a["path"] for _, a in ran] == ["a", "b", "c"]  # model order, each once
    assert len(stream.anomalies) == 1


async def test_strict_streams_drop_nulls() -> None:
    ran: list[Any] = []
    events = BUILDERS["chat"](
        [("call", 0, "c1", "echo"), ("args", 0, '{"path": "a", "limit": null}'), ("end",)]
    )
    async with open_tool_batch(registry(ran)) as batch:
        stream = openai_chat.stream_calls(_aiter(events), batch, strict=True)
        await stream.drain()
        [pair async for pair in stream.pairs()]
    assert ran == [("echo", {"path": "a"})]


@no_deadlock
@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_parallel_safe_first_call_starts_before_the_last_call_has_streamed(
    fmt: str, autojump_clock: trio.abc.Clock
) -> None:
    """The latency win: bodies overlap the model's streaming."""
    started: dict[str, float] = {}
    reg = ToolRegistry()

    async def slow(args: Any, ctx: ToolRunContext) -> str:
        started[args["path"]] = trio.current_time()
        await trio.sleep(5)
        return "done"

    reg.register(
        ToolDefinition(
            name="echo",
            description="",
            parameters={"type": "object"},
            execute=slow,
            is_concurrency_safe=lambda _: True,
        )
    )
    script = [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "c2", "echo"),
        *[("args", 1, piece) for piece in ['{"pa', 'th": ', '"b"', "}"]],
        ("done", 1),
        ("end",),
    ]
    events = BUILDERS[fmt](script)
    last_event: list[float] = []

    async def paced() -> AsyncIterator[Any]:
        for event in events:
            await trio.sleep(1)  # the model takes a second per event
            last_event.append(trio.current_time())
            yield event

    t0 = trio.current_time()
    async with open_tool_batch(reg) as batch:
        stream = ADAPTERS[fmt](paced(), batch)
        await stream.drain()
        results = [r async for _, r in stream.pairs()]
    assert [r.is_error for r in results] == [False, False]
    assert started["a"] < last_event[-1] - 1  # c1 ran while c2 was still streaming
    assert started["a"] - t0 < started["b"] - t0


def test_plain_dicts_need_no_sdk_installed() -> None:
    code = """
import sys
sys.modules["openai"] = None
sys.modules["anthropic"] = None
import trio
from toolnursery import ToolCall, ToolDefinition, ToolRegistry, open_tool_batch
from toolnursery.providers import anthropic

async def echo(args, ctx):
    return "ok " + args["path"]

async def main():
    reg = ToolRegistry()
    reg.register(ToolDefinition(name="echo", description="", parameters={"type": "object"}, execute=echo))
    assert anthropic.tools(reg)[0]["name"] == "echo"
    events = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "echo", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"path": "x"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    async def gen():
        for e in events:
            yield e
    async with open_tool_batch(reg) as batch:
        stream = anthropic.stream_calls(gen(), batch)
        await stream.drain()
        pairs = [p async for p in stream.pairs()]
    (message,) = anthropic.result_messages(stream.calls, stream.results)
    print(message["content"][0]["content"][0]["text"])

trio.run(main)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok x\n"


def test_the_assistant_messages_replay_the_stream() -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fmt, module in (
            ("chat", openai_chat),
            ("responses", openai_responses),
            ("anthropic", anthropic),
        ):
            async with open_tool_batch(registry()) as batch:
                stream = ADAPTERS[fmt](_aiter(_load(fmt, "interleaved", sdk=True)), batch)
                await stream.drain()
                [p async for p in stream.pairs()]
            out[fmt] = module.assistant_messages(stream)
        return out

    got = trio.run(main)
    chat = got["chat"][0]
    assert [c["id"] for c in chat["tool_calls"]] == ["c1", "c2", "c3"]
    assert got["responses"][0] == {"role": "assistant", "content": "Reading three files."}
    assert [i["call_id"] for i in got["responses"][1:]] == ["c1", "c2", "c3"]
    content = got["anthropic"][0]["content"]
    assert content[0] == {"type": "text", "text": "Reading three files."}
    assert content[1] == {"type": "tool_use", "id": "c1", "name": "echo", "input": {"path": "a"}}


def test_a_submitted_call_is_a_toolcall() -> None:
    assert ToolCall("a", "b", {}).arguments == {}


@pytest.mark.parametrize("sdk_like", [False, True], ids=["dict", "mapping"])
async def test_a_garbled_event_is_noted_and_its_call_does_not_run(sdk_like: bool) -> None:
    from types import MappingProxyType

    ran: list[Any] = []
    events: list[Any] = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}},
        },
        {"type": "content_block_delta", "index": 0, "delta": None},  # garbled
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t2", "name": "echo", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "b"}'},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    if sdk_like:
        events = [MappingProxyType(e) for e in events]
    stream, pairs = await _run("anthropic", _aiter(events), ran)
    assert len(stream.anomalies) == (1 if not sdk_like else 0)
    assert [(i, e) for i, e, _ in pairs] == [("t1", True), ("t2", False)]
    assert ran == [("echo", {"path": "b"})]
