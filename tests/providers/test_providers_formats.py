"""Schemas out, calls in, results back: each provider format on the SDKs' own types."""

from __future__ import annotations

from typing import Any

import anthropic.types as at
import msgspec
import pydantic
import pytest
from openai.types import responses as rt
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)

from provider_helpers import PARAMS, PNG, accepts, registry
from toolnursery import (
    StrictSchemaError,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery.providers import anthropic, openai_chat, openai_responses, strict_parameters


def _completion(tool_calls: list[dict[str, Any]]) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                }
            ],
        }
    )


def _fn(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- schemas out ------------------------------------------------------------------------


def test_chat_tools_are_accepted_by_the_sdk_request_type() -> None:
    tools = openai_chat.tools(registry())
    for tool in tools:
        accepts(ChatCompletionToolUnionParam, tool)
    assert [t["function"]["name"] for t in tools] == ["echo", "picture", "hint"]
    assert tools[0]["function"]["parameters"] == PARAMS
    assert "description" not in tools[2]["function"]


def test_responses_tools_are_accepted_by_the_sdk_request_type() -> None:
    tools = openai_responses.tools(registry(), strict=True)
    for tool in tools:
        accepts(rt.ToolParam, tool)
    assert tools[0]["strict"] is True
    assert openai_responses.tools(registry())[0]["strict"] is False


def test_anthropic_tools_are_accepted_by_the_sdk_request_type() -> None:
    tools = anthropic.tools(registry())
    for tool in tools:
        accepts(at.ToolParam, tool)
    assert tools[0] == {"name": "echo", "description": "Echo a path.", "input_schema": PARAMS}


def test_strict_parameters_require_everything_and_make_optional_nullable() -> None:
    strict = strict_parameters("echo", PARAMS)
    assert strict == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where."},
            "limit": {"type": ["integer", "null"]},
            "mode": {"type": ["string", "null"], "enum": ["fast", "slow", None]},
        },
        "required": ["path", "limit", "mode"],
        "additionalProperties": False,
    }
    assert PARAMS["required"] == ["path"]  # the registry's schema is untouched
    assert strict_parameters("none", {"type": "object"}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_strict_mode_recurses_into_nested_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
        },
    }
    strict = strict_parameters("t", schema)
    inner = (
        strict["properties"]["items"]["anyOf"][0]
        if "anyOf" in strict["properties"]["items"]
        else strict["properties"]["items"]
    )
    assert inner["items"]["additionalProperties"] is False
    assert inner["items"]["required"] == ["a"]
    assert inner["items"]["properties"]["a"]["type"] == ["string", "null"]


@pytest.mark.parametrize(
    ("schema", "keyword", "path"),
    [
        (
            {"type": "object", "properties": {"x": {"allOf": []}}},
            "allOf",
            "#/properties/x",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "object"}}},
            "properties",
            "#/properties/x",
        ),
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            "additionalProperties",
            "#",
        ),
        ({"type": "object", "properties": {"x": {}}}, "type", "#/properties/x"),
        (
            {"type": "object", "properties": {"x": {"type": "array", "contains": {}}}},
            "contains",
            "#/properties/x",
        ),
    ],
)
def test_strict_mode_refuses_what_it_cannot_take_naming_tool_and_keyword(
    schema: dict[str, Any], keyword: str, path: str
) -> None:
    reg = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        return ""

    odd = ToolDefinition(
        name="odd", description="", parameters=schema, execute=body, validate=False
    )
    reg.register(odd)  # validate=False: "allOf": [] is not valid JSON Schema to begin with
    with pytest.raises(StrictSchemaError) as info:
        openai_chat.tools(reg, strict=True)
    assert info.value.tool_name == "odd"
    assert info.value.keyword == keyword
    assert info.value.path == path
    assert str(info.value).startswith('tool "odd": strict mode ')
    assert f'"{keyword}"' in str(info.value)
    assert isinstance(info.value, ValueError)


# -- calls in ---------------------------------------------------------------------------


def test_chat_calls_from_the_sdk_object_and_from_a_dict_are_the_same() -> None:
    raw = [_fn("a", "echo", '{"path": "x"}'), _fn("b", "picture", "")]
    completion = _completion(raw)
    from_sdk = openai_chat.calls(completion)
    assert from_sdk == [ToolCall("a", "echo", '{"path": "x"}'), ToolCall("b", "picture", "")]
    assert openai_chat.calls(completion.model_dump()) == from_sdk
    assert openai_chat.calls(completion.choices[0].message) == from_sdk
    assert openai_chat.calls(raw) == from_sdk


def test_chat_strict_calls_drop_the_nulls_strict_mode_sends() -> None:
    calls = openai_chat.calls(
        [_fn("a", "echo", '{"path": "x", "limit": null, "mode": null}')],
        strict=True,
        registry=registry(),
    )
    assert calls[0].arguments == {"path": "x"}


def test_chat_refuses_several_choices_and_custom_tool_calls() -> None:
    completion = _completion([]).model_dump()
    completion["choices"].append(completion["choices"][0])
    with pytest.raises(ValueError, match="2 choices"):
        openai_chat.calls(completion)
    with pytest.raises(ValueError, match="'custom' call"):
        openai_chat.calls([{"id": "a", "type": "custom", "custom": {"name": "x", "input": ""}}])


def test_responses_calls_from_a_response_object() -> None:
    response = rt.Response.model_validate(
        {
            "id": "r",
            "object": "response",
            "created_at": 0,
            "model": "m",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {"type": "reasoning", "id": "rs", "summary": []},
                {
                    "type": "function_call",
                    "id": "fc1",
                    "call_id": "c1",
                    "name": "echo",
                    "arguments": '{"path": "p"}',
                },
                {
                    "type": "message",
                    "id": "m",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                },
                {
                    "type": "function_call",
                    "id": "fc2",
                    "call_id": "c2",
                    "name": "hint",
                    "arguments": "{}",
                },
            ],
        }
    )
    calls = openai_responses.calls(response)
    assert calls == [ToolCall("c1", "echo", '{"path": "p"}'), ToolCall("c2", "hint", "{}")]
    assert openai_responses.calls(response.output) == calls
    assert openai_responses.calls(response.output[1]) == calls[:1]


def test_anthropic_calls_from_a_message_object() -> None:
    message = at.Message.model_validate(
        {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "tu1", "name": "echo", "input": {"path": "src"}},
                {"type": "tool_use", "id": "tu2", "name": "hint", "input": {}},
            ],
        }
    )
    calls = anthropic.calls(message)
    assert calls == [ToolCall("tu1", "echo", {"path": "src"}), ToolCall("tu2", "hint", {})]
    assert anthropic.calls(message.model_dump()) == calls
    assert anthropic.calls(message.content) == calls


async def test_an_anthropic_input_that_is_not_an_object_is_a_per_call_error() -> None:
    """The issue's bad input: the call does not run with arguments it did not get."""
    ran: list[tuple[str, Any]] = []
    blocks = [
        {"type": "tool_use", "id": "1", "name": "echo", "input": {"path": "a"}},
        {"type": "tool_use", "id": "2", "name": "echo", "input": ["path", "b"]},
        {"type": "tool_use", "id": "3", "name": "echo", "input": 7},
        {"type": "tool_use", "id": "4", "name": "echo", "input": '{"path": "c"}'},
        {"type": "tool_use", "id": "5", "name": "echo", "input": {"path": "d"}},
    ]
    results = await run_tool_calls(registry(ran), anthropic.calls(blocks))
    assert [r.is_error for r in results] == [False, True, True, True, False]
    assert [r.error.code for r in results if r.error is not None] == ["INVALID_ARGS"] * 3
    assert ran == [("echo", {"path": "a"}), ("echo", {"path": "d"})]
    assert results[1].content[0].text == (  # type: ignore[union-attr]
        'Error: invalid arguments: "input" must be an object, got an array'
    )
    assert results[3].content[0].text.endswith("got a string")  # type: ignore[union-attr]


# -- results back -----------------------------------------------------------------------


async def _results() -> tuple[list[ToolCall], list[Any]]:
    calls = [
        ToolCall("a", "echo", {"path": "x"}),
        ToolCall("b", "picture", ""),
        ToolCall("c", "hint", ""),
        ToolCall("d", "nope", ""),
    ]
    return calls, await run_tool_calls(registry(), calls)


async def test_chat_result_messages_in_model_order_then_the_contexts() -> None:
    calls, results = await _results()
    messages = openai_chat.result_messages(calls, results)
    for message in messages:
        accepts(ChatCompletionMessageParam, message)
    assert [m["role"] for m in messages] == ["tool", "tool", "tool", "tool", "user"]
    assert [m.get("tool_call_id") for m in messages[:4]] == ["a", "b", "c", "d"]
    assert messages[0]["content"] == "echo x"
    assert messages[1]["content"] == (
        "a picture\n[image: image/png, 8 bytes, not shown: this message takes text only]"
    )
    assert messages[3]["content"].startswith("Error: ")
    assert messages[4]["content"] == [
        {"type": "text", "text": "remember this"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]


async def test_responses_result_items_take_images_as_image_parts() -> None:
    calls, results = await _results()
    items = openai_responses.result_messages(calls, results)
    for item in items:
        accepts(rt.ResponseInputItemParam, item)
    assert [i["type"] for i in items] == ["function_call_output"] * 4 + ["message"]
    assert items[0]["output"] == "echo x"
    assert items[1]["output"] == [
        {"type": "input_text", "text": "a picture"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
    ]
    assert items[4]["role"] == "user"
    assert items[4]["content"][0] == {"type": "input_text", "text": "remember this"}


async def test_anthropic_results_are_one_user_message_tool_results_first() -> None:
    calls, results = await _results()
    messages = anthropic.result_messages(calls, results)
    assert len(messages) == 1
    accepts(at.MessageParam, messages[0])
    content = messages[0]["content"]
    assert [b["type"] for b in content] == ["tool_result"] * 4 + ["text", "image"]
    assert [b.get("tool_use_id") for b in content[:4]] == ["a", "b", "c", "d"]
    assert content[1]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    assert content[3]["is_error"] is True
    assert "is_error" not in content[0]
    assert anthropic.result_messages([], []) == []


def test_an_image_anthropic_does_not_take_becomes_a_note() -> None:
    from toolnursery import ImageContent, TextContent, ToolExecutionResult

    result = ToolExecutionResult((ImageContent(PNG, "image/tiff"), TextContent("")), False)
    (message,) = anthropic.result_messages([ToolCall("a", "x", "")], [result])
    assert message["content"][0]["content"] == [
        {
            "type": "text",
            "text": "[image: image/tiff, 8 bytes, not shown: this message takes text only]",
        }
    ]


def test_a_wrong_shape_is_rejected_by_the_sdk_types_so_the_checks_can_fail() -> None:
    with pytest.raises(pydantic.ValidationError):
        accepts(
            ChatCompletionMessageParam, {"role": "tool", "content": [{"type": "text", "text": 1}]}
        )
    assert msgspec.json.encode(openai_chat.tools(registry()))
