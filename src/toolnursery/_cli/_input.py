"""Reading the ``toolnursery run`` input: tool calls as JSON or JSON lines.

Accepted, for the whole input or for each line of JSON lines:

* a call in toolnursery's shape, ``{"id", "name", "arguments"}`` (``arguments`` a
  JSON string as the model sent it, or a JSON value, which is encoded);
* a call in the OpenAI chat shape, ``{"id", "type": "function", "function":
  {"name", "arguments"}}``;
* an assistant message holding calls, ``{"tool_calls": [...]}``, or a chat
  completion with one choice, ``{"choices": [{"message": {...}}]}``;
* an Anthropic ``tool_use`` block, ``{"type": "tool_use", "id", "name", "input"}``,
  or a whole Anthropic message, ``{"role": "assistant", "content": [...]}`` (its
  other blocks are skipped);
* an OpenAI Responses ``function_call`` item, ``{"type": "function_call",
  "call_id", "name", "arguments"}``, or a whole response, ``{"output": [...]}``
  (its other items are skipped);
* a JSON array of any of these.

An object of any other shape is refused (it is never run with arguments it did not
give); an Anthropic ``input`` that is not an object gives that call an
``INVALID_ARGS`` result.

Nothing runs unless the whole input parses: an error names the line (JSON lines,
or the line of a syntax error in one JSON document) or the call's position.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from .._core._arguments import NotArguments, kind_of
from .._core._content import ToolCall, ToolExecutionResult

__all__ = ["FORMATS", "CallsInputError", "parse_calls", "provider_messages"]

FORMATS: Final = ("toolnursery", "openai-chat", "openai-responses", "anthropic")
"""The output formats of ``toolnursery run --format``."""

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_BYTE = re.compile(r"\(byte (\d+)\)")
_MAX_NESTING: Final = 4
_OUR_KEYS: Final = frozenset({"id", "name", "arguments"})
_CHAT_KEYS: Final = frozenset({"id", "type", "function", "index"})
# Items of a message or response that are not calls: skipped, not refused.
_NOT_CALLS: Final = frozenset(
    {
        "text",
        "thinking",
        "redacted_thinking",
        "message",
        "reasoning",
        "output_text",
        "image",
        "document",
        "server_tool_use",
        "web_search_tool_result",
    }
)


class CallsInputError(ValueError):
    """Raised when the CALLS input is not JSON or holds something that is not a call.

    The message starts with where: ``<source> line N`` or ``<source> call N``.
    """


def parse_calls(text: str, source: str) -> list[ToolCall]:
    """Parse every tool call in ``text``, in order.

    Args:
        text: the whole input.
        source: how to name the input in messages (a path, or ``<stdin>``).

    Returns:
        The calls; a call without an ``id`` gets ``call_<n>`` (``toolu_<n>`` for an
        Anthropic block; ``n`` is its 1-based position), with a ``_1``, ``_2``...
        suffix while another call of the input was given that id.

    Raises:
        CallsInputError: the input is not JSON / JSON lines, or an item is not a call.
    """
    data = text.encode("utf-8", errors="surrogateescape")
    lines = data.splitlines(keepends=True)
    items: list[tuple[str, Any]]
    whole_line = False
    try:
        items = [(source, _decode(data))] if data.strip() else []
    except (msgspec.DecodeError, RecursionError) as whole:
        items = _json_lines(lines, source, whole)
        whole_line = True
    calls: list[ToolCall] = []
    for where, value in items:
        _collect(value, where, calls, 0, whole=whole_line)
    return _name_unnamed(calls)


# A made-up id is held as this prefix + the fallback until every given id is known.
_MADE_UP = "\x00made-up:"


def _name_unnamed(calls: list[ToolCall]) -> list[ToolCall]:
    """Give the calls that came without an id one no given id takes."""
    if not any(call.id.startswith(_MADE_UP) for call in calls):
        return calls
    from ..providers._common import given_ids, made_up_id

    taken = given_ids(call.id for call in calls if not call.id.startswith(_MADE_UP))
    named: list[ToolCall] = []
    for call in calls:
        if call.id.startswith(_MADE_UP):
            prefix, _, number = call.id[len(_MADE_UP) :].rpartition("_")
            call = msgspec.structs.replace(call, id=made_up_id(prefix + "_", int(number), taken))
        named.append(call)
    return named


def _json_lines(
    lines: list[bytes], source: str, whole: msgspec.DecodeError | RecursionError
) -> list[tuple[str, Any]]:
    """Decode line by line; if the first line is not JSON by itself, the input was
    one multi-line document and its own error (with the line it happened on) is the
    one to report."""
    items: list[tuple[str, Any]] = []
    first = True
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = _decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            if first:
                raise CallsInputError(_document_error(lines, source, whole)) from None
            reason = _reason(exc, _offset(exc))
            raise CallsInputError(f"{source} line {number}: not JSON: {reason}") from None
        first = False
        items.append((f"{source} line {number}", value))
    return items


def _document_error(lines: list[bytes], source: str, exc: BaseException) -> str:
    offset = _offset(exc)
    if offset is None:
        # A truncated document ends early: the last non-blank line is where it broke.
        last = max((i for i, line in enumerate(lines, 1) if line.strip()), default=1)
        return f"{source} line {last}: not JSON: {_reason(exc)}"
    start = 0
    for number, line in enumerate(lines, 1):
        if offset < start + len(line) or number == len(lines):
            return f"{source} line {number}: not JSON: {_reason(exc, offset - start)}"
        start += len(line)
    return f"{source}: not JSON: {_reason(exc)}"  # pragma: no cover - lines is non-empty


def _offset(exc: BaseException) -> int | None:
    match = _BYTE.search(str(exc))
    return int(match.group(1)) if match is not None else None


def _reason(exc: BaseException, offset: int | None = None) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = _BYTE.sub("", str(exc)).strip().removeprefix("JSON is malformed: ")
    if text == "Input data was truncated":
        text = "the JSON text ends early"
    return text if offset is None else f"{text} at column {offset + 1}"


def _collect(value: Any, base: str, out: list[ToolCall], depth: int, *, whole: bool) -> None:
    """Append the calls ``value`` holds.

    ``base`` names where ``value`` came from; when ``whole`` is true, ``value`` is all
    of it (one JSON line), so a message names just the line, else the call's position.
    """
    if depth > _MAX_NESTING:
        raise CallsInputError(f"{_label(base, out, whole)}: nested too deeply to be tool calls")
    if isinstance(value, list):
        for item in value:
            _collect(item, base, out, depth + 1, whole=False)
        return
    if not isinstance(value, dict):
        raise CallsInputError(
            f"{_label(base, out, whole)}: expected a tool call object, got {_kind(value)}"
        )
    if "choices" in value and "name" not in value and "function" not in value:
        _collect(_only_message(value, base), base, out, depth + 1, whole=whole)
        return
    if "tool_calls" in value and "name" not in value and "function" not in value:
        calls = value["tool_calls"]
        if calls is None:
            return
        if not isinstance(calls, list):
            raise CallsInputError(
                f'{_label(base, out, whole)}: "tool_calls" must be an array, got {_kind(calls)}'
            )
        for item in calls:
            _collect(item, base, out, depth + 1, whole=whole and len(calls) == 1)
        return
    container = _items(value)
    if container is not None:
        key, items = container
        if not isinstance(items, list):
            raise CallsInputError(
                f'{_label(base, out, whole)}: "{key}" must be an array, got {_kind(items)}'
            )
        for item in items:
            if isinstance(item, dict) and item.get("type") in _NOT_CALLS:
                continue
            _collect(item, base, out, depth + 1, whole=False)
        return
    out.append(_to_call(value, _label(base, out, whole), len(out) + 1))


def _items(value: dict[str, Any]) -> tuple[str, Any] | None:
    """An Anthropic message's ``content`` or a Responses response's ``output``."""
    if "name" in value or "function" in value:
        return None
    if "content" in value and ("role" in value or value.get("type") == "message"):
        content = value["content"]
        return None if isinstance(content, str) or content is None else ("content", content)
    if "output" in value and (value.get("object") == "response" or "type" not in value):
        return "output", value["output"]
    return None


def _label(base: str, out: list[ToolCall], whole: bool) -> str:
    return base if whole else f"{base}: call {len(out) + 1}"


def _only_message(value: dict[str, Any], where: str) -> Any:
    choices = value["choices"]
    if not isinstance(choices, list) or len(choices) != 1:
        count = len(choices) if isinstance(choices, list) else 0
        raise CallsInputError(
            f"{where}: a chat completion must have exactly one choice to run, not {count}"
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise CallsInputError(f'{where}: the choice has no "message" object')
    return message


def _to_call(value: dict[str, Any], where: str, position: int) -> ToolCall:
    kind = value.get("type")
    if kind == "tool_use":
        return _tool_use(value, where, position)
    if kind == "function_call":
        return _function_call(value, where, position)
    function = value.get("function")
    unknown = sorted(set(value) - (_CHAT_KEYS if function is not None else _OUR_KEYS))
    if unknown and (function is not None or kind is None or kind == "function"):
        keys = ", ".join(_encode(k).decode() for k in unknown)
        raise CallsInputError(
            f"{where}: not a tool call shape toolnursery knows (unexpected {keys}); "
            "expected {id, name, arguments}, an OpenAI tool call, an Anthropic tool_use "
            "block or a Responses function_call item"
        )
    if kind is not None and function is None:
        raise CallsInputError(f"{where}: unsupported item type {_encode(kind).decode()}")
    if function is not None:
        if not isinstance(function, dict):
            raise CallsInputError(f'{where}: "function" must be an object, got {_kind(function)}')
        kind = value.get("type", "function")
        if kind != "function":
            raise CallsInputError(f"{where}: unsupported tool call type {_encode(kind).decode()}")
        name = _name(function, where, "function.")
        arguments = function.get("arguments")
    else:
        name = _name(value, where)
        arguments = value.get("arguments")
    call_id = _id(value.get("id"), "id", where, f"call_{position}")
    return ToolCall(call_id, name, _text(arguments))


def _name(value: dict[str, Any], where: str, prefix: str = "") -> str:
    name = value.get("name")
    if name is None:
        raise CallsInputError(f'{where}: missing "{prefix}name" (the tool to call)')
    if not isinstance(name, str):
        raise CallsInputError(f'{where}: "{prefix}name" must be a string, got {_kind(name)}')
    return name


def _id(value: Any, key: str, where: str, fallback: str) -> str:
    if value is None:
        return _MADE_UP + fallback
    if not isinstance(value, str):
        raise CallsInputError(f'{where}: "{key}" must be a string, got {_kind(value)}')
    return value


def _tool_use(value: dict[str, Any], where: str, position: int) -> ToolCall:
    name = _name(value, where)
    call_id = _id(value.get("id"), "id", where, f"toolu_{position}")
    arguments = value.get("input", {})
    if not isinstance(arguments, dict):
        # The call gets INVALID_ARGS and does not run; the rest of the batch does.
        arguments = NotArguments(arguments, f'"input" must be an object, got {kind_of(arguments)}')
    return ToolCall(call_id, name, arguments)


def _function_call(value: dict[str, Any], where: str, position: int) -> ToolCall:
    name = _name(value, where)
    call_id = _id(value.get("call_id", value.get("id")), "call_id", where, f"call_{position}")
    return ToolCall(call_id, name, _text(value.get("arguments")))


def _text(arguments: Any) -> str:
    """Arguments as the JSON text a call carries (none: empty text)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return _encode(arguments).decode()


_kind = kind_of


def provider_messages(
    fmt: str, calls: Sequence[ToolCall], results: Sequence[ToolExecutionResult]
) -> list[dict[str, Any]]:
    """The messages answering ``calls`` in a provider format (one of :data:`FORMATS`)."""
    from ..providers import anthropic, openai_chat, openai_responses

    module = {
        "openai-chat": openai_chat,
        "openai-responses": openai_responses,
        "anthropic": anthropic,
    }[fmt]
    messages: list[dict[str, Any]] = module.result_messages(calls, results)
    return messages
