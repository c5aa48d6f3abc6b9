"""Anthropic Messages: ``tools``, ``tool_use`` blocks, one user message of ``tool_result``.

Works on the ``anthropic`` SDK's objects (``Message``, ``ToolUseBlock``, the raw
stream events) and on the same shapes as plain dicts; the SDK itself is never
imported here. What this module returns are plain dicts the SDK's request types
accept.

Placement: the results are one ``role: "user"`` message with one ``tool_result``
block per call, in model order (``is_error`` set on failures, images as image
blocks); the batch's ``additional_contexts`` follow the ``tool_result`` blocks as
text and image blocks of the same message (Anthropic wants the tool results first
in the user turn that answers the calls). An image of a type Anthropic does not take
becomes a one-line text note.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from typing import Any, Final

from .._core._arguments import NotArguments, kind_of, parse_arguments
from .._core._content import ImageContent, ToolCall, ToolExecutionResult
from .._core._errors import ToolArgsError
from .._pipeline._registry import ToolRegistry, ToolScope
from ._common import (
    Batch,
    ToolStream,
    blocks_of,
    content_parts,
    context_parts,
    get,
    getter,
    image_note,
    json_text,
)

__all__ = [
    "AnthropicToolStream",
    "assistant_messages",
    "calls",
    "result_messages",
    "stream_calls",
    "tools",
]

_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def tools(registry: ToolRegistry, scope: ToolScope | None = None) -> list[dict[str, Any]]:
    """The tools ``scope`` (or the whole registry) can see, as Messages ``tools``."""
    out: list[dict[str, Any]] = []
    for schema in registry.schemas(scope):
        tool: dict[str, Any] = {"name": schema.name}
        if schema.description:
            tool["description"] = schema.description
        tool["input_schema"] = schema.parameters
        out.append(tool)
    return out


def calls(message: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a message, in model order.

    Args:
        message: a ``Message``, a message dict, or its ``content`` list — SDK
            objects or dicts. Blocks of other types are skipped.

    Returns:
        One :class:`~toolnursery.ToolCall` per ``tool_use`` block, its ``input``
        as the arguments. An ``input`` that is not an object is passed on as it is,
        so that call gets an ``INVALID_ARGS`` result and does not run.
    """
    out: list[ToolCall] = []
    for block in blocks_of(message, "content", "tool_use"):
        arguments = get(block, "input")
        if arguments is None:
            arguments = {}
        elif isinstance(arguments, Mapping):
            if not isinstance(arguments, dict):
                arguments = dict(arguments)
        else:
            arguments = NotArguments(
                arguments, f'"input" must be an object, got {kind_of(arguments)}'
            )
        out.append(
            ToolCall(
                get(block, "id") or f"toolu_{len(out) + 1}", get(block, "name") or "", arguments
            )
        )
    return out


def result_messages(
    calls: Sequence[ToolCall], results: Sequence[ToolExecutionResult]
) -> list[dict[str, Any]]:
    """The user message answering ``calls``: ``tool_result`` blocks, then the contexts.

    Args:
        calls: the calls, in model order.
        results: their results, in the same order.

    Returns:
        A list holding one ``role: "user"`` message (empty when there are no calls).
    """
    blocks: list[dict[str, Any]] = []
    for call, result in zip(calls, results, strict=True):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id}
        content = _blocks(content_parts(result.content))
        if content:
            block["content"] = content
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    blocks.extend(_blocks(context_parts(results)))
    return [{"role": "user", "content": blocks}] if blocks else []


def _blocks(parts: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, value in parts:
        if kind == "image" and isinstance(value, ImageContent) and value.mime_type in _IMAGE_TYPES:
            out.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": value.mime_type, "data": value.data},
                }
            )
            continue
        text = value if kind == "text" else image_note(value)
        if text:  # Anthropic refuses empty text blocks
            out.append({"type": "text", "text": text})
    return out


def assistant_messages(stream: ToolStream) -> list[dict[str, Any]]:
    """The assistant message a streamed response amounts to, for the next request."""
    content: list[dict[str, Any]] = []
    if stream.text:
        content.append({"type": "text", "text": stream.text})
    for call in stream.calls:
        try:
            value = parse_arguments(call.arguments)
        except ToolArgsError:
            value = None
        content.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": value if isinstance(value, dict) else {},
            }
        )
    return [{"role": "assistant", "content": content}]


class AnthropicToolStream(ToolStream):
    """:class:`~toolnursery.providers.ToolStream` over Messages stream events.

    A call starts with ``content_block_start`` (a ``tool_use`` block), grows with
    ``input_json_delta`` and is complete at ``content_block_stop``; ``message_stop``
    ends the stream normally.
    """

    def _feed(self, event: Any) -> str | None:
        get = getter(event)
        kind = get(event, "type", None)
        index = get(event, "index", None)
        if kind == "content_block_delta":
            delta = get(event, "delta", None)
            delta_kind = get(delta, "type", None)
            if delta_kind == "text_delta":
                text = get(delta, "text", None)
                return text if isinstance(text, str) else None
            if delta_kind == "input_json_delta":
                self._append(index, get(delta, "partial_json", None))
        elif kind == "content_block_start":
            block = get(event, "content_block", None)
            if get(block, "type", None) != "tool_use":
                self._note(index)
                return None
            item = self._start(index, get(block, "id", None), get(block, "name", None))
            given = get(block, "input", None)
            if given and not item.parts:
                item.whole = json_text(given)
        elif kind == "content_block_stop":
            started = self._items.get(index)
            if started is not None and started.whole is not None and started.parts:
                started.whole = None  # streamed deltas replace a placeholder input
            self._complete(index)
        elif kind == "message_stop":
            self.finished = True
        return None


def stream_calls(stream: AsyncIterable[Any], batch: Batch) -> AnthropicToolStream:
    """Feed a streamed message's ``tool_use`` blocks into ``batch`` as they complete.

    Args:
        stream: the SDK's stream (``await client.messages.create(..., stream=True)``,
            or the events of ``client.messages.stream(...)``) or any async iterable
            of event dicts.
        batch: an open batch (:func:`~toolnursery.open_tool_batch`); it is closed
            when the stream ends.
    """
    return AnthropicToolStream(stream, batch)
