"""Reading a model's tool-call arguments: the one place a call's arguments are parsed.

A call's ``arguments`` is the raw JSON text a model sent (OpenAI) or an already-parsed
mapping (Anthropic, MCP). Anything else cannot be arguments: :func:`parse_arguments`
raises :class:`~toolnursery.ToolArgsError`, which a batch turns into that call's
``INVALID_ARGS`` result without running it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ._errors import ToolArgsError

__all__ = ["NotArguments", "kind_of", "parse_arguments", "safe_arguments"]

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class NotArguments:
    """What a provider adapter puts in ``ToolCall.arguments`` for a value that cannot be
    arguments (an Anthropic ``input`` that is not an object): the call gets
    ``INVALID_ARGS`` with ``reason`` and does not run."""

    __slots__ = ("reason", "value")

    def __init__(self, value: object, reason: str) -> None:
        self.value = value
        self.reason = reason

    def __repr__(self) -> str:
        return repr(self.value)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, NotArguments)
            and self.reason == other.reason
            and self.value == other.value
        )

    __hash__ = None  # type: ignore[assignment]


def parse_arguments(arguments: str | Mapping[str, Any]) -> Any:
    """Parse a call's arguments once.

    Text: ``""`` → ``{}``; JSON → its value; text that is not JSON → the text itself
    (the tool's schema then reports it) — except a JSON object that ends before it is
    complete (``'{"x": '``, what a response cut off at its token limit holds), which is
    refused as not valid JSON. A mapping is taken as the parsed value, the same value
    its JSON text would parse to.

    Args:
        arguments: the call's ``arguments``.

    Returns:
        The parsed value (a fresh ``dict`` for a mapping that is not a ``dict``).

    Raises:
        ToolArgsError: ``arguments`` is neither text nor a mapping, holds a lone
            surrogate (text no JSON encoder can write, so no log could record it), or
            is a cut-off JSON object (``"arguments" is not valid JSON: it ends after 6
            characters, before the object is complete``).
    """
    if type(arguments) is str:
        if not arguments:
            return {}
        try:
            return _decode(arguments)
        except msgspec.DecodeError as exc:
            if _cut_off_object(arguments, exc):
                raise ToolArgsError([_cut_off(arguments)]) from None
            return arguments
        except RecursionError:
            return arguments
        except UnicodeEncodeError as exc:
            raise ToolArgsError([_surrogate(arguments, exc)]) from None
    if isinstance(arguments, Mapping):
        value = arguments if isinstance(arguments, dict) else dict(arguments)
        try:
            _encode(value)
        except UnicodeEncodeError as exc:
            raise ToolArgsError(
                [f'"arguments" holds a lone surrogate ({exc.object[exc.start : exc.end]!a})']
            ) from None
        except (TypeError, msgspec.EncodeError, RecursionError) as exc:
            raise ToolArgsError([f'"arguments" is not JSON data: {exc}']) from None
        return value
    if isinstance(arguments, str):
        return parse_arguments(str(arguments))
    if isinstance(arguments, NotArguments):
        raise ToolArgsError([arguments.reason])
    raise ToolArgsError([f'"arguments" must be JSON text or an object, got {kind_of(arguments)}'])


def safe_arguments(arguments: object) -> str | dict[str, Any]:
    """A stand-in for arguments that :func:`parse_arguments` refused, safe to log.

    Lone surrogates become ``\\udcXX`` escapes; a value of another type becomes its
    ``repr``. Arguments it accepts are returned unchanged.
    """
    if isinstance(arguments, str):
        return arguments.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(arguments, dict):
        try:
            _encode(arguments)
        except Exception:
            return repr(arguments).encode("utf-8", "backslashreplace").decode("utf-8")
        return arguments
    return repr(arguments).encode("utf-8", "backslashreplace").decode("utf-8")


_AT_BYTE = re.compile(r"\(byte (\d+)\)$")


def _cut_off_object(text: str, exc: msgspec.DecodeError) -> bool:
    """Whether ``text`` is an object the decoder ran out of text inside (the model was
    cut off; it did not mean a string): it reached the end, or failed at the very end
    (a number cut off after its ``-``, ``.`` or ``e``)."""
    if not text.lstrip().startswith("{"):
        return False
    message = str(exc)
    if message.startswith("Input data was truncated"):
        return True
    at = _AT_BYTE.search(message)
    return at is not None and int(at.group(1)) >= len(text.encode())


def _cut_off(text: str) -> str:
    return (
        f'"arguments" is not valid JSON: it ends after {len(text)} characters, '
        "before the object is complete"
    )


def _surrogate(text: str, exc: UnicodeEncodeError) -> str:
    start = exc.start
    if exc.object is not text:  # the encoder's own copy: find the position again
        start = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
    return (
        f'"arguments" holds a lone surrogate ({text[start]!a} at index {start}), '
        "which is not valid Unicode text"
    )


def kind_of(value: object) -> str:
    """How a message names a value's JSON kind: ``a string``, ``an array``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    return type(value).__name__
