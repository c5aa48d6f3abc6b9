"""OpenAI Responses: ``tools``, ``function_call`` items, ``function_call_output`` items.

Works on the ``openai`` SDK's objects (``Response``, its output items, the
``ResponseStreamEvent`` events) and on the same shapes as plain dicts; the SDK
itself is never imported here. What this module returns are plain dicts the SDK's
request types accept.

Placement: each result is one ``function_call_output`` item, in model order; its
``output`` is the result's text, or a list of ``input_text`` / ``input_image``
parts when the result holds an image. The batch's ``additional_contexts`` follow
all of them as one user ``message`` item.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import Any, Final

from .._core._content import ToolCall, ToolExecutionResult
from .._pipeline._registry import ToolRegistry, ToolScope
from ._common import (
    StrictReader,
    blocks_of,
    content_parts,
    context_parts,
    data_url,
    function_call,
    get,
    getter,
    given_ids,
    json_text,
    made_up_id,
    position,
    sole_text,
    strict_parameters,
)
from ._stream import Batch, ToolStream

__all__ = [
    "ResponsesToolStream",
    "assistant_messages",
    "calls",
    "result_messages",
    "stream_calls",
    "tools",
]


def tools(
    registry: ToolRegistry, scope: ToolScope | None = None, *, strict: bool = False
) -> list[dict[str, Any]]:
    """The tools ``scope`` (or the whole registry) can see, as Responses ``tools``.

    Args:
        registry: where the tools are registered.
        scope: the agent scope whose view to project (default: every tool).
        strict: OpenAI's strict mode (see
            :func:`~toolnursery.providers.strict_parameters`).

    Raises:
        StrictSchemaError: ``strict`` and a schema strict mode cannot take.
    """
    out: list[dict[str, Any]] = []
    for schema in registry.schemas(scope):
        tool: dict[str, Any] = {"type": "function", "name": schema.name}
        if schema.description:
            tool["description"] = schema.description
        tool["parameters"] = (
            strict_parameters(schema.name, schema.parameters) if strict else schema.parameters
        )
        tool["strict"] = strict
        out.append(tool)
    return out


def calls(
    response: Any,
    *,
    strict: bool = False,
    registry: ToolRegistry | None = None,
    scope: ToolScope | None = None,
) -> list[ToolCall]:
    """The ``function_call`` items of a response, in model order.

    Args:
        response: a ``Response``, its ``output`` list, or one item — SDK objects
            or dicts. Items of other types (messages, reasoning) are skipped.
        strict: the tools were sent in strict mode (``tools(registry, scope,
            strict=True)``): each call's arguments are read back against its tool's
            own schema, so a ``null`` stands for "left out" only where that schema
            has the property optional and not nullable (see
            :class:`~toolnursery.providers.StrictReader`).
        registry: the registry whose tools were sent; required with ``strict``.
        scope: the scope whose view was sent (default: the global view).

    Returns:
        One :class:`~toolnursery.ToolCall` per ``function_call`` item (its
        ``call_id``). An item without one gets ``call_<n>`` (its position), with a
        ``_1``, ``_2``... suffix while a given id already is that.

    Raises:
        TypeError: ``strict`` without ``registry``.
    """
    reader = StrictReader.of(strict, registry, scope, "openai_responses.calls()")
    items = list(blocks_of(response, "output", "function_call"))
    given = [get(item, "call_id") or get(item, "id") for item in items]
    taken = given_ids(given)
    return [
        function_call(
            call_id or made_up_id("call_", number, taken),
            get(item, "name"),
            get(item, "arguments"),
            reader,
        )
        for number, (item, call_id) in enumerate(zip(items, given, strict=True), 1)
    ]


def result_messages(
    calls: Sequence[ToolCall], results: Sequence[ToolExecutionResult]
) -> list[dict[str, Any]]:
    """The ``function_call_output`` items answering ``calls``, then the contexts.

    Args:
        calls: the calls, in model order.
        results: their results, in the same order.

    Returns:
        One ``function_call_output`` per call, then — if any result carries
        ``additional_contexts`` — one user ``message`` item holding them all.
    """
    items: list[dict[str, Any]] = []
    for call, result in zip(calls, results, strict=True):
        output: str | list[dict[str, Any]] | None = sole_text(result.content)
        if output is not None:
            items.append({"type": "function_call_output", "call_id": call.id, "output": output})
            continue
        parts = content_parts(result.content)
        if all(kind == "text" for kind, _ in parts):
            output = "\n".join(value for _, value in parts)
        else:
            output = [_part(kind, value) for kind, value in parts]
        items.append({"type": "function_call_output", "call_id": call.id, "output": output})
    context = [_part(kind, value) for kind, value in context_parts(results)]
    if context:
        items.append({"type": "message", "role": "user", "content": context})
    return items


def _part(kind: str, value: Any) -> dict[str, Any]:
    if kind == "text":
        return {"type": "input_text", "text": value}
    return {"type": "input_image", "image_url": data_url(value), "detail": "auto"}


def assistant_messages(stream: ToolStream) -> list[dict[str, Any]]:
    """The input items a streamed response amounts to, for the next request.

    The assistant's text as one message, then its ``function_call`` items (reasoning
    items are not replayed: pass ``previous_response_id`` for models that need them).
    """
    items: list[dict[str, Any]] = []
    if stream.text:
        items.append({"role": "assistant", "content": stream.text})
    items.extend(
        {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": json_text(call.arguments),
        }
        for call in stream.calls
    )
    return items


class ResponsesToolStream(ToolStream):
    """:class:`~toolnursery.providers.ToolStream` over Responses stream events.

    A call starts with ``response.output_item.added``, grows with
    ``response.function_call_arguments.delta`` and is complete at
    ``response.function_call_arguments.done`` (or ``response.output_item.done``),
    whose full arguments are the ones that run. ``response.completed`` (or
    ``response.incomplete``) ends the stream normally.
    """

    def _feed(self, event: Any) -> str | None:
        get = getter(event)
        kind = get(event, "type", None)
        if kind == "response.output_text.delta":
            delta = get(event, "delta", None)  # text has no use for its index
            return delta if isinstance(delta, str) else None
        if kind in ("response.completed", "response.incomplete"):
            self.finished = True
            return None
        if kind not in _PLACED:
            return None
        raw = get(event, "output_index", None)
        index = position(raw)
        if kind == "response.output_item.added" or kind == "response.output_item.done":
            item = get(event, "item", None)
            is_call = get(item, "type", None) == "function_call"
            if index is None:
                call_id = get(item, "call_id", None) if is_call else None
                name = get(item, "name", None) if is_call else None
                self._unplaced(raw, f"a {kind} event", call_id, name)
            elif not is_call:
                self._note(index)
            else:
                self._start(index, get(item, "call_id", None), get(item, "name", None))
                if kind == "response.output_item.done":
                    self._complete(index, get(item, "arguments", None))
        elif index is None:
            self._unplaced(raw, f"a {kind} event")
        elif kind == "response.function_call_arguments.delta":
            self._append(index, get(event, "delta", None))
        else:
            self._complete(index, get(event, "arguments", None))
        return None


_PLACED: Final = frozenset(
    {
        "response.output_item.added",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    }
)
"""The events that place something at an ``output_index``."""


def stream_calls(
    stream: AsyncIterable[Any],
    batch: Batch,
    *,
    strict: bool = False,
    registry: ToolRegistry | None = None,
    scope: ToolScope | None = None,
) -> ResponsesToolStream:
    """Feed a streamed response's function calls into ``batch`` as they complete.

    Args:
        stream: the SDK's stream (``await client.responses.create(...,
            stream=True)``) or any async iterable of event dicts.
        batch: an open batch (:func:`~toolnursery.open_tool_batch`); it is closed
            when the stream ends.
        strict: the tools were sent in strict mode (see :func:`calls`).
        registry: the registry whose tools were sent (default: the batch's own, when
            it is a :class:`~toolnursery.ToolBatch`).
        scope: the scope whose view was sent (default: the batch's agent, when the
            registry is the batch's).

    Raises:
        TypeError: ``strict`` and no registry to read the calls against.
    """
    return ResponsesToolStream(stream, batch, strict=strict, registry=registry, scope=scope)
