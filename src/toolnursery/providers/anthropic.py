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

import msgspec

from .._core._arguments import NotArguments, kind_of, parse_arguments
from .._core._content import ImageContent, ToolCall, ToolExecutionResult
from .._core._errors import ToolArgsError
from .._pipeline._registry import ToolRegistry, ToolScope
from ._common import (
    blocks_of,
    content_parts,
    context_parts,
    get,
    getter,
    given_ids,
    image_note,
    made_up_id,
    position,
    sole_text,
)
from ._stream import Batch, ToolStream

_decode = msgspec.json.Decoder().decode

__all__ = [
    "AnthropicToolStream",
    "assistant_messages",
    "calls",
    "result_messages",
    "stream_calls",
    "tool_input",
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
        as the arguments. An ``input`` that is not an object gives that call an
        ``INVALID_ARGS`` result (see :func:`tool_input`); it does not run. A block
        without an id gets ``toolu_<n>`` (its position), with a ``_1``, ``_2``...
        suffix while a given id already is that.
    """
    blocks = list(blocks_of(message, "content", "tool_use"))
    taken = given_ids(get(block, "id") for block in blocks)
    out: list[ToolCall] = []
    for number, block in enumerate(blocks, 1):
        given = get(block, "input")
        call_id = get(block, "id") or made_up_id("toolu_", number, taken)
        out.append(ToolCall(call_id, get(block, "name") or "", tool_input(given)))
    return out


def tool_input(given: object) -> Any:
    """A ``tool_use`` block's ``input`` as a call's arguments.

    No input is ``{}``; a mapping is the arguments; anything else cannot be: the call
    gets ``INVALID_ARGS`` (``"input" must be an object, got an array``) and does not
    run — the same refusal whether the block was streamed or not.
    """
    if given is None:
        return {}
    if isinstance(given, Mapping):
        return given if isinstance(given, dict) else dict(given)
    return NotArguments(given, f'"input" must be an object, got {kind_of(given)}')


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
        text = sole_text(result.content)
        if text is None:
            content = _blocks(content_parts(result.content))
        else:  # Anthropic refuses empty text blocks
            content = [{"type": "text", "text": text}] if text else []
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
    ends the stream normally. An input that is not an object — the block's own or the
    streamed JSON — is refused as :func:`calls` refuses it.
    """

    _id_prefix = "toolu_"

    def _feed(self, event: Any) -> str | None:
        get = getter(event)
        kind = get(event, "type", None)
        if kind == "message_stop":
            self.finished = True
            return None
        if kind not in ("content_block_delta", "content_block_start", "content_block_stop"):
            return None
        raw = get(event, "index", None)
        index = position(raw)
        if kind == "content_block_delta":
            delta = get(event, "delta", None)
            delta_kind = get(delta, "type", None)
            if delta_kind == "text_delta":
                text = get(delta, "text", None)  # text has no use for its index
                return text if isinstance(text, str) else None
            if delta_kind == "input_json_delta":
                if index is None:
                    self._unplaced(raw, "an input_json_delta")
                else:
                    self._append(index, get(delta, "partial_json", None))
        elif kind == "content_block_start":
            block = get(event, "content_block", None)
            is_call = get(block, "type", None) == "tool_use"
            call_id = get(block, "id", None) if is_call else None
            name = get(block, "name", None) if is_call else None
            if index is None:
                self._unplaced(raw, "a content_block_start", call_id, name)
            elif not is_call:
                self._note(index)
            else:
                item = self._start(index, call_id, name)
                given = get(block, "input", None)
                if given is not None and given != {} and not item.parts:
                    item.whole = given  # the input itself (read by _arguments)
        elif index is None:
            self._unplaced(raw, "a content_block_stop")
        else:
            started = self._items.get(index)
            if started is not None and started.whole is not None and started.parts:
                started.whole = None  # streamed deltas replace a placeholder input
            self._complete(index)
        return None

    def _arguments(self, item: Any) -> Any:
        if item.whole is not None:
            return tool_input(item.whole)
        text = "".join(item.parts)
        if not text or text.lstrip().startswith("{"):
            return text  # an object, or not JSON at all: parse_arguments reads it once
        try:
            value = _decode(text)
        except (msgspec.DecodeError, UnicodeEncodeError, RecursionError):
            return text  # not JSON: parse_arguments says so
        return text if isinstance(value, dict) else tool_input(value)


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
