"""The content kinds MCP carries: audio, resource links, embedded resources — values,
wire JSON, results and renderers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    AudioContent,
    ContentAnnotations,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
)
from toolnursery.presentation import call_view, render_markdown, render_terminal

BLOCKS: list[ContentBlock] = [
    TextContent("t", annotations=ContentAnnotations(audience=("user",), priority=1.0)),
    ImageContent("aW1n", "image/png", meta={"k": [1, 2]}),
    AudioContent("YXVk", "audio/wav"),
    ResourceLink(
        uri="file:///x.md",
        name="x",
        title="The X",
        description="about x",
        mime_type="text/markdown",
        size=12,
        icons=[{"src": "data:,", "mimeType": "image/svg+xml"}],
    ),
    EmbeddedResource(resource=ResourceContents("file:///a.txt", text="alpha\n")),
    EmbeddedResource(
        resource=ResourceContents("file:///b.bin", blob="AAEC", mime_type="application/x"),
        annotations=ContentAnnotations(last_modified="2026-01-01T00:00:00Z"),
    ),
]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: type(b).__name__)
def test_every_kind_round_trips_through_wire_json(block: ContentBlock) -> None:
    wire = msgspec.json.encode(block)
    assert msgspec.json.decode(wire, type=ContentBlock) == block


def test_wire_names_are_mcps() -> None:
    assert msgspec.to_builtins(BLOCKS[2]) == {
        "type": "audio",
        "data": "YXVk",
        "mimeType": "audio/wav",
    }
    assert msgspec.to_builtins(BLOCKS[1])["_meta"] == {"k": [1, 2]}
    assert msgspec.to_builtins(BLOCKS[3])["type"] == "resource_link"
    embedded = msgspec.to_builtins(BLOCKS[5])
    assert embedded["resource"] == {
        "uri": "file:///b.bin",
        "blob": "AAEC",
        "mimeType": "application/x",
    }
    assert embedded["annotations"] == {"lastModified": "2026-01-01T00:00:00Z"}
    assert msgspec.json.encode(TextContent("plain")) == b'{"type":"text","text":"plain"}'


def test_resource_contents_hold_exactly_one_of_text_and_blob() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ResourceContents("u")
    with pytest.raises(ValueError, match="exactly one"):
        ResourceContents("u", text="a", blob="b")
    with pytest.raises(msgspec.ValidationError, match="exactly one"):
        msgspec.json.decode(b'{"type":"resource","resource":{"uri":"u"}}', type=ContentBlock)


@given(
    st.lists(
        st.one_of(
            st.builds(AudioContent, st.text(), st.text()),
            st.builds(
                ResourceLink,
                uri=st.text(),
                name=st.text(),
                size=st.none() | st.integers(0, 2**40),
            ),
            st.builds(
                lambda uri, text: EmbeddedResource(resource=ResourceContents(uri, text=text)),
                st.text(),
                st.text(),
            ),
        ),
        max_size=5,
    )
)
def test_results_with_the_new_kinds_round_trip(blocks: list[Any]) -> None:
    result = ToolExecutionResult(tuple(blocks), False)
    assert msgspec.json.decode(msgspec.json.encode(result), type=ToolExecutionResult) == result


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: type(b).__name__)
async def test_a_body_may_return_any_kind(block: ContentBlock) -> None:
    async def body(args: Any, ctx: Any) -> Any:
        return block

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "d", {"type": "object"}, body))
    result = await registry.execute(ToolExecutionInput("c", "t", {}))
    assert result.content == (block,)
    assert not result.is_error


async def test_a_malformed_new_kind_is_the_not_json_error() -> None:
    async def body(args: Any, ctx: Any) -> Any:
        return [AudioContent(data=3, mime_type="audio/wav")]  # type: ignore[arg-type]

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "d", {"type": "object"}, body))
    result = await registry.execute(ToolExecutionInput("c", "t", {}))
    assert result.is_error


def test_markdown_shows_each_kind() -> None:
    view = call_view(None, {}, name="t")
    text = render_markdown(view, raw=ToolExecutionResult(tuple(BLOCKS), False))
    assert "![image](data:image/png;base64,aW1n)" in text
    assert "*[audio: audio/wav]*" in text
    assert "[The X](file:///x.md)" in text
    assert "`file:///a.txt`\n\n```text\nalpha\n```" in text
    assert "*[resource: file:///b.bin (application/x)]*" in text


def test_terminal_shows_each_kind() -> None:
    view = call_view(None, {}, name="t")
    text = render_terminal(view, raw=ToolExecutionResult(tuple(BLOCKS), False), width=80)
    for label in (
        "[image: image/png]",
        "[audio: audio/wav]",
        "[link: The X <file:///x.md>]",
        "[resource: file:///a.txt (text)]",
        "alpha",
        "[resource: file:///b.bin (application/x)]",
    ):
        assert label in text, label
