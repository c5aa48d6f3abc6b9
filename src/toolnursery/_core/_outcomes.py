"""Building results: normalization, materialization, and failure texts.

Everything here is synchronous and allocation-light: the canonical cancellation
results are built once, a body's return value is normalized into a result, a final
result is checked to be lossless JSON and frozen (else the result-not-JSON error), and an
exception becomes ``Error: <message>`` with ``{name, code}`` for a :class:`ToolError`.

Materialization also makes every string of a result JSON-safe, once: a lone
surrogate (what ``os.fsdecode`` makes of a file name's undecodable byte) cannot be
encoded as UTF-8, so it is escaped — ``\\xNN`` for an undecodable byte ``NN``
(U+DC80–U+DCFF), ``\\uXXXX`` for any other lone surrogate, and a high-low pair is
joined into the character it encodes. After that, nothing downstream (a recorder,
the command's output) can fail to encode a result the pipeline accepted.
"""

from __future__ import annotations

import re
import typing
from typing import Any, Final, TypeVar

import msgspec

from ._content import (
    ContentBlock,
    HookContext,
    ImageContent,
    TextContent,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolReturn,
)
from ._errors import AbortError, NotJSONError, ToolError
from ._json import FrozenDict, snapshot

__all__ = [
    "ABORTED_BEFORE_DISPATCH_RESULT",
    "ABORTED_RESULT",
    "ARGS_NOT_JSON_RESULT",
    "UnreachableError",
    "encode_value",
    "error_message",
    "failure_result",
    "json_safe",
    "json_safe_text",
    "materialize",
    "normalize",
    "text_result",
    "unreachable",
]

T = TypeVar("T")


def text_result(text: str, error: ToolErrorInfo | None = None) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), True, error)


def _error_result(exc: ToolError) -> ToolExecutionResult:
    return text_result("Error: " + exc.message, ToolErrorInfo(exc.name, exc.code))


ABORTED_RESULT: Final = _error_result(AbortError())
ABORTED_BEFORE_DISPATCH_RESULT: Final = _error_result(AbortError(before_dispatch=True))
ARGS_NOT_JSON_RESULT: Final = text_result(
    "Error: tool execution arguments must be losslessly JSON-serializable"
)
_RESULT_NOT_JSON: Final = text_result("Error: tool result must be losslessly JSON-serializable")


_BLOCK_TYPES: Final = frozenset(typing.get_args(ContentBlock))


def normalize(value: Any, name: str) -> ToolExecutionResult:
    """Turn a body's return value into a result.

    Text, content blocks (a list or tuple all of whose items are blocks) and a
    :class:`ToolReturn` are content; any other JSON-encodable value becomes one text
    block holding its JSON (see :func:`encode_value`).
    """
    t = type(value)
    if t is str:
        return ToolExecutionResult((TextContent(value),), False)
    if t is ToolReturn:
        content = value.content
        return ToolExecutionResult(
            tuple(content) if type(content) is not tuple else content,
            False,
            meta=value.meta,
            structured_content=value.structured,
        )
    if t in _BLOCK_TYPES:
        return ToolExecutionResult((value,), False)
    if (t is tuple or t is list) and all(type(item) in _BLOCK_TYPES for item in value):
        return ToolExecutionResult(value if t is tuple else tuple(value), False)
    try:
        text = encode_value(value)
    except NotJSONError as exc:
        return text_result(
            f'Error: tool "{name}" returned {t.__name__}, which is not JSON-encodable ({exc}); '
            "a tool body returns a str, content blocks, a ToolReturn or a JSON-encodable value"
        )
    return ToolExecutionResult((TextContent(text),), False)


def encode_value(value: object) -> str:
    """Encode a tool's return value as compact, deterministic JSON text.

    Anything msgspec can encode is accepted — dicts, lists, tuples, numbers,
    booleans, ``None``, Structs, dataclasses, ``datetime``/``UUID``/``Decimal``
    (as strings), enums (as their values), sets (as sorted arrays) — provided the
    result is lossless JSON (no ``nan``, infinities or ``-0.0``). Dict keys are
    sorted (non-string keys become strings); Struct and dataclass fields keep their
    declaration order. So equal values always give the same text.

    Raises:
        NotJSONError: the value cannot be encoded, or not losslessly.
    """
    try:
        builtins = msgspec.to_builtins(value, str_keys=True, order="deterministic")
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise NotJSONError(str(exc)) from None
    snapshot(builtins)
    return msgspec.json.encode(builtins).decode()


def materialize(result: ToolExecutionResult) -> ToolExecutionResult:
    """Check the final result is lossless JSON and deep-frozen; else the result-not-JSON error.

    Every string in it is made JSON-safe (lone surrogates escaped) on the way.
    """
    try:
        content = result.content
        escape = False
        others = False  # a block other than text, whose strings are not checked here
        for block in content:
            if not _valid_block(block):
                return _RESULT_NOT_JSON
            if type(block) is TextContent:
                if not _text_is_safe(block.text):
                    escape = True
            else:
                others = True
        error = result.error
        if error is not None:
            if not (
                type(error) is ToolErrorInfo and type(error.name) is str and type(error.code) is str
            ):
                return _RESULT_NOT_JSON
            escape = escape or not (_text_is_safe(error.name) and _text_is_safe(error.code))
        contexts = result.additional_contexts
        meta = result.meta
        structured = result.structured_content
        if (
            not escape
            and type(content) is tuple
            and not contexts
            and type(contexts) is tuple
            and meta is None
            and structured is None
            and type(result.is_error) is bool
        ):
            return result
        frozen_contexts = tuple(_freeze_context(c) for c in contexts)
        frozen_meta = None if meta is None else snapshot(meta)
        frozen_structured = None if structured is None else snapshot(structured)
        final = ToolExecutionResult(
            tuple(content),
            bool(result.is_error) if type(result.is_error) is not bool else result.is_error,
            error,
            frozen_contexts,
            frozen_meta,
            frozen_structured,
        )
        if not escape and _utf8_safe(
            (frozen_contexts, frozen_meta, frozen_structured, content if others else ())
        ):
            return final  # what json_safe returns when it has nothing to escape
        return json_safe(final)
    except Exception:
        return _RESULT_NOT_JSON


def _valid_block(block: object) -> bool:
    t = type(block)
    if t is TextContent:
        if block.meta is None and block.annotations is None:  # type: ignore[attr-defined]
            return type(block.text) is str  # type: ignore[attr-defined]
        return _round_trips(block)
    if t is ImageContent:
        if block.meta is None and block.annotations is None:  # type: ignore[attr-defined]
            return type(block.data) is str and type(block.mime_type) is str  # type: ignore[attr-defined]
        return _round_trips(block)
    return t in _BLOCK_TYPES and _round_trips(block)


def _round_trips(block: object) -> bool:
    # The kinds beyond plain text and images are rare: check their JSON form in full.
    try:
        return msgspec.convert(msgspec.to_builtins(block), type(block)) == block
    except (msgspec.ValidationError, TypeError, ValueError):
        return False


def _freeze_context(context: object) -> HookContext:
    if type(context) is not HookContext:
        raise NotJSONError("additional context is not a HookContext")
    for block in context.content:
        if not _valid_block(block):
            raise NotJSONError("context content is not a content block")
    if type(context.source) is not str:
        raise NotJSONError("context source is not a string")
    meta = context.meta
    content = context.content if type(context.content) is tuple else tuple(context.content)
    return HookContext(content, context.source, None if meta is None else snapshot(meta))


# -- JSON-safe strings -------------------------------------------------------------------

_SURROGATES: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _utf8_safe(parts: object) -> bool:
    # msgspec encodes a string as UTF-8, which fails on a lone surrogate (a high-low
    # pair too): when the encoding succeeds there is nothing for json_safe to escape,
    # and one C-level pass replaces its walk. Any failure falls back to the walk.
    try:
        msgspec.json.encode(parts)
    except Exception:
        return False
    return True


def _text_is_safe(text: str) -> bool:
    # ``isascii`` is O(1) in CPython: the common case costs no scan at all.
    return text.isascii() or _SURROGATES.search(text) is None


def _escape_surrogate(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 2:  # a high-low pair: the character it encodes
        return chr(0x10000 + ((ord(found[0]) - 0xD800) << 10) + (ord(found[1]) - 0xDC00))
    point = ord(found)
    if 0xDC80 <= point <= 0xDCFF:  # an undecodable byte, as os.fsdecode escapes it
        return f"\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}"


def json_safe_text(text: str) -> str:
    """Return ``text`` with every lone surrogate escaped, so it encodes as UTF-8.

    ``\\xNN`` for an undecodable byte ``NN`` (U+DC80–U+DCFF, as ``os.fsdecode`` makes
    it), ``\\uXXXX`` for any other lone surrogate; a high-low surrogate pair becomes
    the character it encodes. Text without surrogates is returned as is.
    """
    if _text_is_safe(text):
        return text
    return _SURROGATES.sub(_escape_surrogate, text)


def json_safe(value: T) -> T:
    """Return ``value`` with every string in it made JSON-safe by :func:`json_safe_text`.

    Walks Structs, tuples, lists and dicts (keys too); returns the very same object
    when nothing needed escaping, so a clean value costs no copies.
    """
    return _safe(value)  # type: ignore[no-any-return]


def _safe(value: Any) -> Any:
    t = type(value)
    if t is str:
        return json_safe_text(value)
    if t is tuple or t is list:
        items = [_safe(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return tuple(items) if t is tuple else items
    if isinstance(value, dict):
        pairs = [(_safe(k), _safe(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return FrozenDict(pairs) if isinstance(value, FrozenDict) else dict(pairs)
    if isinstance(value, msgspec.Struct):
        changes = {}
        for name in value.__struct_fields__:
            old = getattr(value, name)
            new = _safe(old)
            if new is not old:
                changes[name] = new
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


class UnreachableError(Exception):
    """Raised (as a result, never out of a call) when a hook returns a value of no known variant."""

    def __init__(self, what: str, value: object) -> None:
        super().__init__(f"unreachable variant in {what}: {_render(value)}")


def _render(value: object) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except Exception:
        try:
            return repr(value)
        except Exception:
            return "<unprintable thrown value>"


def unreachable(what: str, value: object) -> ToolExecutionResult:
    """The failure result for a value of no known variant where ``what`` expects one."""
    return failure_result(UnreachableError(what, value))


def error_message(exc: BaseException) -> str:
    """The text a failure shows for ``exc``: its message, never raising."""
    if isinstance(exc, ToolError):
        message = exc.message
        if isinstance(message, str):
            return message
    try:
        text = str(exc)
    except Exception:
        return "<unprintable thrown value>"
    if not isinstance(text, str):  # pragma: no cover - str() always returns str
        return "<unprintable thrown value>"
    return text or type(exc).__name__


def failure_result(exc: BaseException) -> ToolExecutionResult:
    """The error result for ``exc`` (with its name and code when it is a ``ToolError``)."""
    text = "Error: " + error_message(exc)
    if isinstance(exc, ToolError):
        try:
            info: ToolErrorInfo | None = ToolErrorInfo(str(exc.name), str(exc.code))
        except Exception:
            info = None
        return text_result(text, info)
    return text_result(text)
