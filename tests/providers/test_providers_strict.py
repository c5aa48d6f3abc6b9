"""Strict mode end to end: the strict schema out, the model's arguments back in the
tool's own form — a ``null`` the schema takes stays, a ``null`` for a left-out optional
goes, at every depth."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provider_events import BUILDERS
from toolnursery import (
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    parse_arguments,
    run_tool_calls,
    strict_json_schema,
)
from toolnursery.providers import openai_chat, openai_responses

JUDGE = jsonschema.Draft202012Validator

# A required ``v: int | None`` beside an optional ``n: int``, alone, in an array of
# objects and in a nested object.
ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {"v": {"type": ["integer", "null"]}, "n": {"type": "integer"}},
    "required": ["v"],
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "v": {"type": ["integer", "null"]},
        "n": {"type": "integer"},
        "rows": {"type": "array", "items": ITEM},
        "inner": ITEM,
        "maybe": {"anyOf": [ITEM, {"type": "null"}]},
    },
    "required": ["v", "rows", "inner"],
}
SENT: dict[str, Any] = {
    "v": None,
    "n": None,
    "rows": [{"v": None, "n": None}, {"v": 1, "n": 2}],
    "inner": {"v": None, "n": 3},
    "maybe": {"v": None, "n": None},
}
MEANT: dict[str, Any] = {
    "v": None,
    "rows": [{"v": None}, {"v": 1, "n": 2}],
    "inner": {"v": None, "n": 3},
    "maybe": {"v": None},
}


def _registry(schema: Mapping[str, Any], ran: list[Any] | None = None) -> ToolRegistry:
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        if ran is not None:
            ran.append(args)
        return "ok"

    registry.register(
        ToolDefinition(name="t", description="", parameters=dict(schema), execute=body)
    )
    return registry


def _chat(arguments: str) -> list[dict[str, Any]]:
    return [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": arguments}}]


def _responses(arguments: str) -> list[dict[str, Any]]:
    return [{"type": "function_call", "call_id": "c1", "name": "t", "arguments": arguments}]


def test_the_sent_arguments_are_what_strict_mode_allows() -> None:
    """The fixture is real: the model may send SENT, and MEANT is valid for the tool."""
    assert JUDGE(
        openai_chat.tools(_registry(SCHEMA), strict=True)[0]["function"]["parameters"]
    ).is_valid(SENT)
    assert JUDGE(SCHEMA).is_valid(MEANT)
    assert not JUDGE(SCHEMA).is_valid(SENT)


@pytest.mark.parametrize("fmt", ["chat", "responses"])
async def test_a_null_the_schema_requires_is_kept_in_strict_mode(fmt: str) -> None:
    module, wrap = (openai_chat, _chat) if fmt == "chat" else (openai_responses, _responses)
    ran: list[Any] = []
    registry = _registry(SCHEMA, ran)
    calls = module.calls(wrap(json.dumps(SENT)), strict=True, registry=registry)
    assert calls[0].arguments == MEANT
    results = await run_tool_calls(registry, calls)
    assert not results[0].is_error
    assert json.loads(json.dumps(ran[0])) == MEANT


@pytest.mark.parametrize("fmt", ["chat", "responses"])
async def test_a_strict_stream_reads_the_nulls_against_the_batchs_registry(fmt: str) -> None:
    ran: list[Any] = []
    events = BUILDERS[fmt](
        [("call", 0, "c1", "t"), ("args", 0, json.dumps(SENT)), ("done", 0), ("end",)]
    )

    async def aiter() -> Any:
        for event in events:
            await trio.lowlevel.checkpoint()
            yield event

    module = openai_chat if fmt == "chat" else openai_responses
    async with open_tool_batch(_registry(SCHEMA, ran)) as batch:
        stream = module.stream_calls(aiter(), batch, strict=True)
        await stream.drain()
        results = [result async for _, result in stream.pairs()]
    assert [r.is_error for r in results] == [False]
    assert stream.calls[0].arguments == MEANT


def test_text_that_needs_no_change_stays_the_very_text() -> None:
    text = json.dumps(MEANT)
    (call,) = openai_chat.calls(_chat(text), strict=True, registry=_registry(SCHEMA))
    assert call.arguments is text


def test_an_unknown_tool_keeps_its_arguments() -> None:
    text = '{"a": null}'
    calls = openai_chat.calls(
        [{"id": "c1", "type": "function", "function": {"name": "nope", "arguments": text}}],
        strict=True,
        registry=_registry(SCHEMA),
    )
    assert calls[0].arguments == text


@pytest.mark.parametrize("module", [openai_chat, openai_responses])
def test_strict_without_the_registry_is_refused(module: Any) -> None:
    with pytest.raises(TypeError, match=r"strict=True reads each call against its tool's own"):
        module.calls([], strict=True)


# -- the round trip, for any schema strict mode takes -------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "d"])
_SCALARS = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "string", "enum": ["x", "y"]},
    ]
)


def _nullable(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``schema`` and the ways a schema also takes ``null``."""
    ways = [st.just(schema), st.just({"anyOf": [schema, {"type": "null"}]})]
    if isinstance(schema.get("type"), str):
        typed = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:
            typed["enum"] = [*schema["enum"], None]
        ways.append(st.just(typed))
    return st.one_of(ways)


def _object(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(_NAMES, inner, max_size=3).flatmap(
        lambda props: st.lists(st.booleans(), min_size=len(props), max_size=len(props)).map(
            lambda flags: {
                "type": "object",
                "properties": props,
                "required": [n for n, f in zip(props, flags, strict=True) if f],
            }
        )
    )


_SCHEMAS = st.recursive(
    _SCALARS.flatmap(_nullable),
    lambda inner: st.one_of(
        inner.map(lambda s: {"type": "array", "items": s}), _object(inner)
    ).flatmap(_nullable),
    max_leaves=8,
)
_ROOTS = _object(_SCHEMAS)


def _takes_null(schema: Mapping[str, Any]) -> bool:
    return JUDGE(schema).is_valid(None)


def _values(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for ``schema``; an optional property that takes ``null`` is never
    left out (strict mode says "left out" and "null" the same way for it)."""
    if "anyOf" in schema:
        return st.one_of([_values(m) for m in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    out: list[st.SearchStrategy[Any]] = []
    for kind in kinds:
        if kind == "null":
            out.append(st.none())
        elif kind == "string":
            out.append(st.text(max_size=4))
        elif kind == "integer":
            out.append(st.integers(-5, 5))
        elif kind == "number":
            out.append(
                st.floats(-10, 10, allow_nan=False).filter(lambda x: x != 0 or str(x) == "0.0")
            )
        elif kind == "boolean":
            out.append(st.booleans())
        elif kind == "array":
            out.append(st.lists(_values(schema["items"]), max_size=3))
        else:
            props = schema["properties"]
            required = set(schema["required"])
            always = {n: _values(s) for n, s in props.items() if n in required or _takes_null(s)}
            maybe = {n: _values(s) for n, s in props.items() if n not in always}
            out.append(st.fixed_dictionaries(always, optional=maybe))
    return st.one_of(out)


def _as_sent(schema: Mapping[str, Any], value: Any) -> Any:
    """What a model in strict mode sends for ``value``: every property, ``null`` for one
    left out."""
    if value is None:
        return None
    if "anyOf" in schema:
        member = next(m for m in schema["anyOf"] if JUDGE(m).is_valid(value))
        return _as_sent(member, value)
    if isinstance(value, dict):
        return {
            name: _as_sent(sub, value[name]) if name in value else None
            for name, sub in schema["properties"].items()
        }
    if isinstance(value, list):
        return [_as_sent(schema["items"], v) for v in value]
    return value


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None, max_examples=150)
@given(st.data())
def test_any_valid_value_survives_the_strict_round_trip(data: st.DataObject) -> None:
    schema = data.draw(_ROOTS, label="schema")
    value = data.draw(_values(schema), label="value")
    assert JUDGE(schema).is_valid(value)
    sent = _as_sent(schema, value)
    assert JUDGE(strict_json_schema(schema)).is_valid(sent)  # strict mode lets it through
    registry = _registry(schema)
    text = json.dumps(sent)
    for module, wrap in ((openai_chat, _chat), (openai_responses, _responses)):
        (call,) = module.calls(wrap(text), strict=True, registry=registry)
        assert parse_arguments(call.arguments) == value
