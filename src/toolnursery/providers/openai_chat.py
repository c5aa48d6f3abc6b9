"""OpenAI Chat Completions: ``tools``, ``message.tool_calls``, ``role: "tool"`` messages.

Works on the ``openai`` SDK's objects (``ChatCompletion``, ``ChatCompletionMessage``,
``ChatCompletionChunk``) and on the same shapes as plain dicts; the SDK itself is
never imported here. What this module returns are plain dicts the SDK's request
types accept.

Placement: each result is one ``role: "tool"`` message, in model order; the
batch's ``additional_contexts`` follow all of them as one ``role: "user"`` message
(text and image parts). A tool message takes text only, so an image in a result
becomes a one-line note (``[image: image/png, 1024 bytes, not shown: ...]``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import Any

from .._core._content import ToolCall, ToolExecutionResult
from .._pipeline._registry import ToolRegistry, ToolScope
from ._common import (
    StrictReader,
    context_parts,
    data_url,
    flat_text,
    function_call,
    get,
    getter,
    given_ids,
    json_text,
    made_up_id,
    position,
    strict_parameters,
)
from ._stream import Batch, ToolStream

__all__ = [
    "ChatToolStream",
    "assistant_messages",
    "calls",
    "result_messages",
    "stream_calls",
    "tools",
]


def tools(
    registry: ToolRegistry, scope: ToolScope | None = None, *, strict: bool = False
) -> list[dict[str, Any]]:
    """The tools ``scope`` (or the whole registry) can see, as Chat Completions ``tools``.

    Args:
        registry: where the tools are registered.
        scope: the agent scope whose view to project (default: every tool).
        strict: OpenAI's strict mode (``"strict": true``, see
            :func:`~toolnursery.providers.strict_parameters`).

    Raises:
        StrictSchemaError: ``strict`` and a schema strict mode cannot take.
    """
    out: list[dict[str, Any]] = []
    for schema in registry.schemas(scope):
        function: dict[str, Any] = {"name": schema.name}
        if schema.description:
            function["description"] = schema.description
        if strict:
            function["parameters"] = strict_parameters(schema.name, schema.parameters)
            function["strict"] = True
        else:
            function["parameters"] = schema.parameters
        out.append({"type": "function", "function": function})
    return out


def calls(
    response: Any,
    *,
    strict: bool = False,
    registry: ToolRegistry | None = None,
    scope: ToolScope | None = None,
) -> list[ToolCall]:
    """The function calls of a response, in model order.

    Args:
        response: a ``ChatCompletion`` (one choice), its ``message``, or the list
            of ``tool_calls`` — SDK objects or dicts.
        strict: the tools were sent in strict mode (``tools(registry, scope,
            strict=True)``): each call's arguments are read back against its tool's
            own schema, so a ``null`` stands for "left out" only where that schema
            has the property optional and not nullable (see
            :class:`~toolnursery.providers.StrictReader`).
        registry: the registry whose tools were sent; required with ``strict``.
        scope: the scope whose view was sent (default: the global view).

    Returns:
        One :class:`~toolnursery.ToolCall` per function call; ``arguments`` is the
        text the model sent (with ``strict``, the object read back when a ``null``
        was taken out). A call without an id gets ``call_<n>`` (its position), with
        a ``_1``, ``_2``... suffix while a given id already is that.

    Raises:
        ValueError: a completion with several choices, or a tool call that is not a
            function call.
        TypeError: ``strict`` without ``registry``.
    """
    reader = StrictReader.of(strict, registry, scope, "openai_chat.calls()")
    choices = get(response, "choices")
    if choices is not None:
        if len(choices) != 1:
            raise ValueError(f"a chat completion with {len(choices)} choices: pass one message")
        response = get(choices[0], "message")
    items = response if isinstance(response, list | tuple) else get(response, "tool_calls")
    items = list(items or ())
    taken = given_ids(get(item, "id") for item in items)
    out: list[ToolCall] = []
    for number, item in enumerate(items, 1):
        kind = get(item, "type") or "function"
        function = get(item, "function")
        if kind != "function" or function is None:
            raise ValueError(f"tool call {number} is a {kind!r} call, not a function call")
        out.append(
            function_call(
                get(item, "id") or made_up_id("call_", number, taken),
                get(function, "name"),
                get(function, "arguments"),
                reader,
            )
        )
    return out


def result_messages(
    calls: Sequence[ToolCall], results: Sequence[ToolExecutionResult]
) -> list[dict[str, Any]]:
    """The ``role: "tool"`` messages answering ``calls``, then the contexts.

    Args:
        calls: the calls, in model order.
        results: their results, in the same order.

    Returns:
        One tool message per call (``content`` the result's text; an error's text
        starts with ``Error:``), then — if any result carries
        ``additional_contexts`` — one user message holding them all.
    """
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": call.id, "content": flat_text(result.content)}
        for call, result in zip(calls, results, strict=True)
    ]
    context = [_user_part(kind, value) for kind, value in context_parts(results)]
    if context:
        messages.append({"role": "user", "content": context})
    return messages


def _user_part(kind: str, value: Any) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": value}
    return {"type": "image_url", "image_url": {"url": data_url(value)}}


def assistant_messages(stream: ToolStream) -> list[dict[str, Any]]:
    """The assistant message a streamed response amounts to, for the next request."""
    message: dict[str, Any] = {"role": "assistant", "content": stream.text or None}
    if stream.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json_text(call.arguments)},
            }
            for call in stream.calls
        ]
    return [message]


class ChatToolStream(ToolStream):
    """:class:`~toolnursery.providers.ToolStream` over ``ChatCompletionChunk`` events.

    A call is complete when its arguments form a whole JSON object, or when the
    choice's ``finish_reason`` arrives (so arguments that are not JSON still reach
    the tool, which reports them). Only choice 0 is read.
    """

    _complete_on_json = True

    def _feed(self, chunk: Any) -> str | None:
        g = getter(chunk)
        text: str | None = None
        for choice in g(chunk, "choices", None) or ():
            if g(choice, "index", None) not in (0, None):
                continue
            delta = g(choice, "delta", None)
            if delta is not None:
                text = g(delta, "content", None)
                for part in g(delta, "tool_calls", None) or ():
                    raw = g(part, "index", None)
                    index = position(raw)
                    function = g(part, "function", None)
                    call_id = g(part, "id", None)
                    name = g(function, "name", None) if function is not None else None
                    if index is None:
                        self._unplaced(raw, "a tool call delta", call_id, name)
                        continue
                    if call_id is not None or name is not None:
                        self._start(index, call_id, name)
                    if function is not None:
                        self._append(index, g(function, "arguments", None))
            if g(choice, "finish_reason", None) is not None:
                self.finished = True
        return text


def stream_calls(
    stream: AsyncIterable[Any],
    batch: Batch,
    *,
    strict: bool = False,
    registry: ToolRegistry | None = None,
    scope: ToolScope | None = None,
) -> ChatToolStream:
    """Feed a streamed chat completion's tool calls into ``batch`` as they complete.

    Args:
        stream: the SDK's stream (``await client.chat.completions.create(...,
            stream=True)``) or any async iterable of chunk dicts.
        batch: an open batch (:func:`~toolnursery.open_tool_batch`); it is closed
            when the stream ends.
        strict: the tools were sent in strict mode (see :func:`calls`).
        registry: the registry whose tools were sent (default: the batch's own, when
            it is a :class:`~toolnursery.ToolBatch`).
        scope: the scope whose view was sent (default: the batch's agent, when the
            registry is the batch's).

    Raises:
        TypeError: ``strict`` and no registry to read the calls against.

    Returns:
        A :class:`ChatToolStream`: iterate it for the text, then
        :meth:`~toolnursery.providers.ToolStream.pairs` for the results.
    """
    return ChatToolStream(stream, batch, strict=strict, registry=registry, scope=scope)
