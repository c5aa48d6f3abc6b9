"""Every value Struct round-trips losslessly through msgspec JSON, with camelCase keys and
absent fields omitted (DESIGN "Values"; reference B084/B085/B092 result shapes, B143)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    Accept,
    Allow,
    Ask,
    Block,
    ContentBlock,
    Deny,
    HookContext,
    ImageContent,
    PostToolDecision,
    PreToolDecision,
    TextContent,
    ToolCall,
    ToolErrorInfo,
    ToolExecutionMode,
    ToolExecutionResult,
    ToolRestriction,
    ToolResult,
    ToolReturn,
    ToolSchema,
)

TEXT = TextContent("hello")
IMAGE = ImageContent("aGk=", "image/png")
CTX = HookContext((TEXT,), "policy", {"k": 1})

# (value, the type to decode as, the exact wire form)
CASES: list[tuple[Any, Any, Any]] = [
    (TEXT, TextContent, {"type": "text", "text": "hello"}),
    (IMAGE, ImageContent, {"type": "image", "data": "aGk=", "mimeType": "image/png"}),
    (TEXT, ContentBlock, {"type": "text", "text": "hello"}),
    (IMAGE, ContentBlock, {"type": "image", "data": "aGk=", "mimeType": "image/png"}),
    (
        ToolSchema("read", "Read a file", {"type": "object", "properties": {}}),
        ToolSchema,
        {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {}},
        },
    ),
    (
        ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL"),
        ToolErrorInfo,
        {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"},
    ),
    (
        HookContext((TEXT,), "policy"),
        HookContext,
        {"content": [{"type": "text", "text": "hello"}], "source": "policy"},
    ),
    (
        CTX,
        HookContext,
        {"content": [{"type": "text", "text": "hello"}], "source": "policy", "meta": {"k": 1}},
    ),
    (
        ToolExecutionResult((TEXT,), False),
        ToolExecutionResult,
        {"content": [{"type": "text", "text": "hello"}], "isError": False},
    ),
    (
        ToolExecutionResult(
            (TEXT, IMAGE), True, ToolErrorInfo("ToolError", "BOOM"), (CTX,), {"m": "x"}
        ),
        ToolExecutionResult,
        {
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            ],
            "isError": True,
            "error": {"name": "ToolError", "code": "BOOM"},
            "additionalContexts": [
                {
                    "content": [{"type": "text", "text": "hello"}],
                    "source": "policy",
                    "meta": {"k": 1},
                }
            ],
            "meta": {"m": "x"},
        },
    ),
    (
        ToolExecutionResult((TEXT,), False, structured_content={"n": [1, None]}),
        ToolExecutionResult,
        {
            "content": [{"type": "text", "text": "hello"}],
            "isError": False,
            "structuredContent": {"n": [1, None]},
        },
    ),
    (
        ToolResult((TEXT,), False, {"m": 1}, {"n": 2}),
        ToolResult,
        {
            "content": [{"type": "text", "text": "hello"}],
            "isError": False,
            "meta": {"m": 1},
            "structured": {"n": 2},
        },
    ),
    (ToolReturn(), ToolReturn, {}),
    (ToolReturn(structured={"n": 2}), ToolReturn, {"structured": {"n": 2}}),
    (
        ToolResult((TEXT,), True),
        ToolResult,
        {"content": [{"type": "text", "text": "hello"}], "isError": True},
    ),
    (
        ToolResult((TEXT,), False, {"a": None}),
        ToolResult,
        {"content": [{"type": "text", "text": "hello"}], "isError": False, "meta": {"a": None}},
    ),
    (ToolReturn((TEXT,)), ToolReturn, {"content": [{"type": "text", "text": "hello"}]}),
    (
        ToolReturn((TEXT,), meta=3),
        ToolReturn,
        {"content": [{"type": "text", "text": "hello"}], "meta": 3},
    ),
    (Allow(), Allow, {"kind": "allow"}),
    (Deny("no"), Deny, {"kind": "deny", "reason": "no"}),
    (Ask(), Ask, {"kind": "ask"}),
    (Ask("why"), Ask, {"kind": "ask", "reason": "why"}),
    (Allow(), PreToolDecision, {"kind": "allow"}),
    (Deny("no"), PreToolDecision, {"kind": "deny", "reason": "no"}),
    (Ask("why"), PreToolDecision, {"kind": "ask", "reason": "why"}),
    (Accept(), Accept, {"kind": "accept"}),
    (Accept(content=()), Accept, {"kind": "accept", "content": []}),
    (
        Accept(content=(TEXT,), additional_contexts=(CTX,)),
        PostToolDecision,
        {
            "kind": "accept",
            "content": [{"type": "text", "text": "hello"}],
            "additionalContexts": [
                {
                    "content": [{"type": "text", "text": "hello"}],
                    "source": "policy",
                    "meta": {"k": 1},
                }
            ],
        },
    ),
    (
        Block(feedback=(TEXT,)),
        Block,
        {"kind": "block", "feedback": [{"type": "text", "text": "hello"}]},
    ),
    (
        Block(feedback=(TEXT,), additional_contexts=(HookContext((IMAGE,), "p"),)),
        PostToolDecision,
        {
            "kind": "block",
            "feedback": [{"type": "text", "text": "hello"}],
            "additionalContexts": [
                {
                    "content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
                    "source": "p",
                }
            ],
        },
    ),
    (PARALLEL, ToolExecutionMode, {"kind": "parallel"}),
    (EXCLUSIVE, ToolExecutionMode, {"kind": "exclusive"}),
    (ToolRestriction(), ToolRestriction, {}),
    (ToolRestriction(allow=("a",), deny=()), ToolRestriction, {"allow": ["a"], "deny": []}),
    (
        ToolCall("call_1", "read", '{"path": "/a"}'),
        ToolCall,
        {"id": "call_1", "name": "read", "arguments": '{"path": "/a"}'},
    ),
]


@pytest.mark.parametrize(("value", "as_type", "expected"), CASES)
def test_value_round_trips_with_camel_case_and_omitted_absent_fields(
    value: Any, as_type: Any, expected: Any
) -> None:
    """Each value encodes to its exact wire form and decodes back equal."""
    encoded = msgspec.json.encode(value)
    assert msgspec.json.decode(encoded) == expected
    decoded = msgspec.json.decode(encoded, type=as_type)
    assert decoded == value
    assert type(decoded) is type(value)
    assert msgspec.json.encode(decoded) == encoded


def test_every_public_value_struct_is_covered() -> None:
    """The table above exercises every value Struct the package exports."""
    covered = {type(value) for value, _, _ in CASES}
    assert covered == {
        TextContent,
        ImageContent,
        ToolSchema,
        ToolErrorInfo,
        HookContext,
        ToolExecutionResult,
        ToolResult,
        ToolReturn,
        Allow,
        Deny,
        Ask,
        Accept,
        Block,
        ToolExecutionMode,
        ToolRestriction,
        ToolCall,
    }


def test_values_are_frozen() -> None:
    """Values are immutable: assigning a field raises."""
    for value, _, _ in CASES:
        field = value.__struct_fields__[0] if value.__struct_fields__ else None
        if field is None:
            continue
        with pytest.raises(AttributeError):
            setattr(value, field, None)


def test_sequences_given_as_lists_are_stored_as_tuples() -> None:
    """Decisions, ToolReturn and HookContext built from lists are frozen and hashable."""
    accept = Accept(content=[TEXT], additional_contexts=[CTX])
    block = Block(feedback=[TEXT], additional_contexts=[CTX])
    returned = ToolReturn([TEXT])
    context = HookContext([TEXT], "p")  # type: ignore[arg-type]
    assert accept.content == (TEXT,)
    assert accept.additional_contexts == (CTX,)
    assert block.feedback == (TEXT,)
    assert block.additional_contexts == (CTX,)
    assert returned.content == (TEXT,)
    assert context.content == (TEXT,)
    assert msgspec.json.decode(msgspec.json.encode(accept), type=Accept) == accept
    assert msgspec.json.decode(msgspec.json.encode(block), type=Block) == block
    plain = HookContext((TEXT,), "p")
    assert hash(Block(feedback=[TEXT], additional_contexts=[plain])) == hash(
        Block(feedback=(TEXT,), additional_contexts=(plain,))
    )
    assert Accept().content is None


def test_decoding_rejects_wrong_tags_and_missing_fields() -> None:
    """Tagged unions are closed: an unknown tag or a missing field fails validation."""
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"type":"video","url":"x"}', type=ContentBlock)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"maybe"}', type=PreToolDecision)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"deny"}', type=Deny)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"content":[]}', type=ToolExecutionResult)


json_meta = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
blocks = st.builds(TextContent, st.text()) | st.builds(ImageContent, st.text(), st.text())
contexts = st.builds(HookContext, st.lists(blocks, max_size=2).map(tuple), st.text(), json_meta)
results = st.builds(
    ToolExecutionResult,
    st.lists(blocks, max_size=3).map(tuple),
    st.booleans(),
    st.none() | st.builds(ToolErrorInfo, st.text(), st.text()),
    st.lists(contexts, max_size=2).map(tuple),
    json_meta,
    json_meta,
)


@given(results)
def test_any_result_round_trips_at_the_json_level(result: ToolExecutionResult) -> None:
    """Encode → decode → encode is the identity for any result (``meta`` is plain JSON, so
    arrays come back as lists; the JSON text is what must not change)."""
    encoded = msgspec.json.encode(result)
    decoded = msgspec.json.decode(encoded, type=ToolExecutionResult)
    assert msgspec.json.encode(decoded) == encoded
    assert decoded.content == result.content
    assert decoded.is_error == result.is_error
    assert decoded.error == result.error
    wire = msgspec.json.decode(encoded)
    assert ("error" in wire) == (result.error is not None)
    assert ("meta" in wire) == (result.meta is not None)
    assert ("structuredContent" in wire) == (result.structured_content is not None)
    assert ("additionalContexts" in wire) == bool(result.additional_contexts)
