"""What a hostile or unlucky provider sends: events without a usable index, inputs that
are not objects, calls without ids. Every call the provider sent gets exactly one
result, the batch is closed, and the well-formed calls run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import pydantic
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from provider_events import BUILDERS, parse
from provider_helpers import registry
from toolnursery import open_tool_batch, run_tool_calls
from toolnursery.providers import ToolStream, anthropic, openai_chat, openai_responses

FORMATS = ("chat", "responses", "anthropic")
MODULES: dict[str, Any] = {
    "chat": openai_chat,
    "responses": openai_responses,
    "anthropic": anthropic,
}
BAD_INDICES = [None, "1", -1, 1.0, True]
THREE_CALLS = [
    ("call", 0, "c1", "echo"),
    ("args", 0, '{"path": "a"}'),
    ("done", 0),
    ("call", 1, "c2", "echo"),
    ("args", 1, '{"path": "b"}'),
    ("done", 1),
    ("call", 2, "c3", "echo"),
    ("args", 2, '{"path": "c"}'),
    ("done", 2),
    ("end",),
]
_INDEX_KEYS = ("index", "output_index")


async def _aiter(events: Iterable[Any]) -> AsyncIterator[Any]:
    for event in events:
        await trio.lowlevel.checkpoint()
        yield event


def _replace_dict(value: Any, target: int, bad: object) -> Any:
    """``value`` with every ``index``/``output_index`` equal to ``target`` set to ``bad``."""
    if isinstance(value, dict):
        return {
            k: bad
            if k in _INDEX_KEYS and v == target and type(v) is int
            else _replace_dict(v, target, bad)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_replace_dict(v, target, bad) for v in value]
    return value


def _replace_sdk(value: Any, target: int, bad: object) -> Any:
    """The same, in place, on an SDK object (unvalidated assignment, as a broken
    server's event would be)."""
    if isinstance(value, pydantic.BaseModel):
        for name in type(value).model_fields:
            field = getattr(value, name)
            if name in _INDEX_KEYS and field == target and type(field) is int:
                object.__setattr__(value, name, bad)
            else:
                _replace_sdk(field, target, bad)
    elif isinstance(value, list):
        for item in value:
            _replace_sdk(item, target, bad)
    return value


def _events(fmt: str, script: list[Any], *, sdk: bool, target: int, bad: object) -> list[Any]:
    events = BUILDERS[fmt](script)
    if sdk:
        return [_replace_sdk(parse(fmt, e), target, bad) for e in events]
    return [_replace_dict(e, target, bad) for e in events]


async def _stream(fmt: str, events: list[Any], ran: list[Any]) -> tuple[ToolStream, list[Any]]:
    async with open_tool_batch(registry(ran)) as batch:
        stream = MODULES[fmt].stream_calls(_aiter(events), batch)
        await stream.drain()
        pairs = [pair async for pair in stream.pairs()]
    return stream, pairs


def _answers_every_call(fmt: str, stream: ToolStream) -> None:
    """What goes back to the provider: each call the assistant turn holds has one result."""
    module = MODULES[fmt]
    turn = module.assistant_messages(stream)
    answer = module.result_messages(stream.calls, stream.results)
    if fmt == "chat":
        sent = [c["id"] for c in turn[0]["tool_calls"]]
        answered = [m["tool_call_id"] for m in answer if m["role"] == "tool"]
    elif fmt == "responses":
        sent = [i["call_id"] for i in turn if i.get("type") == "function_call"]
        answered = [i["call_id"] for i in answer if i["type"] == "function_call_output"]
    else:
        sent = [b["id"] for b in turn[0]["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in answer[0]["content"] if b["type"] == "tool_result"]
    assert sorted(sent) == sorted(answered)
    assert len(set(answered)) == len(answered)


# -- an index that is not one ----------------------------------------------------------


@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
@pytest.mark.parametrize("bad", BAD_INDICES, ids=repr)
@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_call_without_a_usable_index_is_refused_and_the_others_run(
    fmt: str, bad: object, sdk: bool
) -> None:
    ran: list[Any] = []
    stream, pairs = await _stream(fmt, _events(fmt, THREE_CALLS, sdk=sdk, target=1, bad=bad), ran)
    assert stream.ended
    assert stream.finished
    assert stream.error is None
    assert ran == [("echo", {"path": "a"}), ("echo", {"path": "c"})]
    by_id = {call.id: result for call, result in pairs}
    assert sorted(by_id) == ["c1", "c2", "c3"]
    assert len(pairs) == 3
    assert not by_id["c1"].is_error
    assert not by_id["c3"].is_error
    refused = by_id["c2"]
    assert refused.is_error
    assert refused.error is not None
    assert refused.error.code == "INCOMPLETE_CALL"
    shown = "none" if bad is None else repr(bad)
    assert refused.content[0].text == (  # type: ignore[union-attr]
        f"Error: the response stream sent this call without a usable index ({shown}); "
        "it did not run"
    )
    assert stream.anomalies  # the ignored argument and end events are reported
    _answers_every_call(fmt, stream)


STRAY: dict[str, dict[str, Any]] = {
    "chat": {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": None, "function": {"arguments": "{}"}}]},
                "finish_reason": None,
            }
        ]
    },
    "responses": {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_9",
        "output_index": None,
        "delta": "{}",
    },
    "anthropic": {
        "type": "content_block_delta",
        "index": None,
        "delta": {"type": "input_json_delta", "partial_json": "{}"},
    },
}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_event_without_an_index_and_without_a_call_is_ignored_and_reported(
    fmt: str,
) -> None:
    """Only an argument piece arrives at no index: no call to answer, nothing else runs."""
    events = BUILDERS[fmt](
        [("call", 0, "c1", "echo"), ("args", 0, '{"path": "a"}'), ("done", 0), ("end",)]
    )
    events.insert(len(events) - 2, STRAY[fmt])
    ran: list[Any] = []
    stream, pairs = await _stream(fmt, events, ran)
    assert [(c.id, r.is_error) for c, r in pairs] == [("c1", False)]
    assert ran == [("echo", {"path": "a"})]
    assert any("without a usable index (none): ignored" in a for a in stream.anomalies)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_call_at_a_negative_index_gets_a_result_the_provider_accepts(fmt: str) -> None:
    """A tool_use the model sent always gets its tool_result."""
    script = [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "neg", "echo"),
        ("args", 1, '{"path": "b"}'),
        ("done", 1),
        ("end",),
    ]
    ran: list[Any] = []
    stream, pairs = await _stream(fmt, _events(fmt, script, sdk=True, target=1, bad=-3), ran)
    assert [c.id for c in stream.calls] == ["c1", "neg"]
    assert [(c.id, r.is_error) for c, r in pairs] == [("c1", False), ("neg", True)]
    assert "(-3)" in pairs[1][1].content[0].text  # type: ignore[union-attr]
    assert ran == [("echo", {"path": "a"})]
    _answers_every_call(fmt, stream)


async def test_a_refused_call_sent_again_at_an_index_does_not_run() -> None:
    """The call has its one result already; the same id later at a usable index is not a
    second call."""
    events = [
        {
            "type": "content_block_start",
            "index": None,
            "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "x"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    ran: list[Any] = []
    stream, pairs = await _stream("anthropic", events, ran)
    assert [(c.id, r.is_error) for c, r in pairs] == [("t1", True)]
    assert ran == []
    _answers_every_call("anthropic", stream)


# -- an Anthropic input that is not an object ------------------------------------------


@pytest.mark.parametrize(
    "given",
    [["path", "b"], 7, '{"path": "b"}', [], "", False],
    ids=["array", "number", "text", "empty-array", "empty-text", "false"],
)
async def test_a_streamed_input_that_is_not_an_object_is_refused_as_unstreamed(
    given: object,
) -> None:
    ran: list[Any] = []
    block = {"type": "tool_use", "id": "t1", "name": "echo", "input": given}
    (expected,) = await run_tool_calls(registry(), anthropic.calls([block]))
    events = [
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    _, pairs = await _stream("anthropic", events, ran)
    assert [result for _, result in pairs] == [expected]
    assert expected.error is not None
    assert expected.error.code == "INVALID_ARGS"
    assert ran == []


@pytest.mark.parametrize(
    ("partial", "kind"),
    [('["path", "b"]', "an array"), ("7", "a number"), ('"text"', "a string")],
)
@pytest.mark.parametrize("sdk", [True, False], ids=["sdk", "dict"])
async def test_streamed_input_json_that_is_not_an_object_is_refused_as_unstreamed(
    partial: str, kind: str, sdk: bool
) -> None:
    script = [
        ("call", 0, "t0", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "t1", "echo"),
        ("args", 1, partial),
        ("done", 1),
        ("end",),
    ]
    events = BUILDERS["anthropic"](script)
    ran: list[Any] = []
    stream, pairs = await _stream(
        "anthropic", [parse("anthropic", e) for e in events] if sdk else events, ran
    )
    assert ran == [("echo", {"path": "a"})]
    result = pairs[1][1]
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert result.content[0].text == (  # type: ignore[union-attr]
        f'Error: invalid arguments: "input" must be an object, got {kind}'
    )
    _answers_every_call("anthropic", stream)


# -- made-up ids -------------------------------------------------------------------------


async def test_a_made_up_chat_id_never_takes_a_given_one() -> None:
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "echo", "arguments": '{"path": "a"}'},
                        },
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "echo", "arguments": '{"path": "b"}'},
                        },
                    ],
                },
            }
        ]
    }
    ran: list[Any] = []
    calls = openai_chat.calls(completion)
    assert [c.id for c in calls] == ["call_1_1", "call_1"]
    assert openai_chat.calls(completion) == calls  # the same response, the same ids
    results = await run_tool_calls(registry(ran), calls)
    assert [r.is_error for r in results] == [False, False]
    assert [a["path"] for _, a in ran] == ["a", "b"]


async def test_a_made_up_anthropic_id_never_takes_a_given_one() -> None:
    blocks = [
        {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"path": "a"}},
        {"type": "tool_use", "name": "echo", "input": {"path": "b"}},
        {"type": "tool_use", "id": "toolu_2_1", "name": "echo", "input": {"path": "c"}},
    ]
    ran: list[Any] = []
    calls = anthropic.calls(blocks)
    assert [c.id for c in calls] == ["toolu_2", "toolu_2_2", "toolu_2_1"]
    results = await run_tool_calls(registry(ran), calls)
    assert [r.is_error for r in results] == [False, False, False]
    assert [a["path"] for _, a in ran] == ["a", "b", "c"]


def test_a_made_up_responses_id_never_takes_a_given_one() -> None:
    output = [
        {"type": "function_call", "name": "echo", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_1", "name": "echo", "arguments": "{}"},
    ]
    assert [c.id for c in openai_responses.calls(output)] == ["call_1_1", "call_1"]


@given(st.lists(st.none() | st.sampled_from(["call_1", "call_2", "call_1_1", "x", ""])))
def test_made_up_ids_are_distinct_from_given_ones_and_each_other(ids: list[str | None]) -> None:
    items = [
        {"type": "function", "function": {"name": "echo", "arguments": "{}"}, "id": i} for i in ids
    ]
    got = [c.id for c in openai_chat.calls(items)]
    given_ids = [i for i in ids if i]
    made = [g for g, i in zip(got, ids, strict=True) if not i]
    assert [g for g, i in zip(got, ids, strict=True) if i] == given_ids
    assert len(set(made)) == len(made)
    assert not set(made) & set(given_ids)
    assert [c.id for c in openai_chat.calls(items)] == got


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_streamed_call_without_an_id_runs_beside_a_call_given_its_made_up_id(
    fmt: str,
) -> None:
    prefix = "toolu_" if fmt == "anthropic" else "call_"
    script = [
        ("call", 0, "placeholder", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, f"{prefix}0", "echo"),
        ("args", 1, '{"path": "b"}'),
        ("done", 1),
        ("end",),
    ]
    events = [_drop_id(e, "placeholder") for e in BUILDERS[fmt](script)]
    ran: list[Any] = []
    stream, pairs = await _stream(fmt, events, ran)
    assert [(c.id, r.is_error) for c, r in pairs] == [
        (f"{prefix}0_1", False),
        (f"{prefix}0", False),
    ]
    assert [a["path"] for _, a in ran] == ["a", "b"]
    _answers_every_call(fmt, stream)


def _drop_id(value: Any, placeholder: str) -> Any:
    if isinstance(value, dict):
        return {
            k: _drop_id(v, placeholder)
            for k, v in value.items()
            if not (k in ("id", "call_id") and v == placeholder)
        }
    if isinstance(value, list):
        return [_drop_id(v, placeholder) for v in value]
    return value


# -- arguments cut off at the token limit ----------------------------------------------

CUT_OFF = (
    'Error: invalid arguments: "arguments" is not valid JSON: it ends after 9 characters, '
    "before the object is complete"
)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_arguments_cut_off_at_the_token_limit_are_not_valid_json(fmt: str) -> None:
    """The provider ends the response normally (its length/max_tokens stop) mid-object."""
    script = [
        ("call", 0, "c1", "echo"),
        ("args", 0, '{"path": "a"}'),
        ("done", 0),
        ("call", 1, "c2", "echo"),
        ("args", 1, '{"path": '),
        ("done", 1),
        ("end",),
    ]
    ran: list[Any] = []
    stream, pairs = await _stream(fmt, BUILDERS[fmt](script), ran)
    assert ran == [("echo", {"path": "a"})]
    assert [(c.id, r.is_error) for c, r in pairs] == [("c1", False), ("c2", True)]
    assert pairs[1][1].content[0].text == CUT_OFF  # type: ignore[union-attr]
    _answers_every_call(fmt, stream)


async def test_unstreamed_arguments_cut_off_are_not_valid_json() -> None:
    completion = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "echo", "arguments": '{"path": '},
                        }
                    ],
                },
            }
        ]
    }
    (result,) = await run_tool_calls(registry(), openai_chat.calls(completion))
    assert result.content[0].text == CUT_OFF  # type: ignore[union-attr]
