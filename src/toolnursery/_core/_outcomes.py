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
    as_returned_value,
    kept_marks,
)
from ._errors import AbortError, NotJSONError, ToolError
from ._json import snapshot
from ._jsonform import json_safe, json_safe_text, render_value, text_is_safe, utf8_safe

__all__ = [
    "ABORTED_BEFORE_DISPATCH_RESULT",
    "ABORTED_RESULT",
    "ARGS_NOT_JSON_RESULT",
    "UnreachableError",
    "JSON_STARTS",
    "SettledResult",
    "encode_value",
    "error_message",
    "failure_result",
    "json_safe",
    "json_safe_text",
    "materialize",
    "normalize",
    "not_json_message",
    "returned_text",
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


class SettledResult:
    """A body's return already made into its final result elsewhere (by a Ray worker).

    :func:`normalize` passes the result through, so a placed body ends exactly as the
    same body would here: the worker ran ``materialize(normalize(value))``.
    """

    __slots__ = ("result",)

    def __init__(self, result: ToolExecutionResult) -> None:
        self.result = result


def normalize(value: Any, name: str) -> ToolExecutionResult:
    """Turn a body's return value into a result.

    Text, content blocks (a non-empty list or tuple all of whose items are blocks) and
    a :class:`ToolReturn` are content; any other value becomes one text block holding
    its JSON (see :func:`encode_value`), or, when it has no JSON form, an error result
    that says what was returned and where.
    """
    t = type(value)
    if t is str:
        result = ToolExecutionResult((TextContent(value),), False)
        if value and value[0] in JSON_STARTS:
            # Text that may read as a number, a boolean, null, an object or an array:
            # a framework keeping the returned value must still be given this text.
            msgspec.structs.force_setattr(result, _TEXT_MARK, True)
        return result
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
    if (t is tuple or t is list) and value and all(type(item) in _BLOCK_TYPES for item in value):
        return ToolExecutionResult(value if t is tuple else tuple(value), False)
    if t is SettledResult:
        return value.result  # type: ignore[no-any-return]
    try:
        text = render_value(value)
    except NotJSONError as exc:
        return text_result(not_json_message(name, value, str(exc)))
    except Exception as exc:  # a hostile __hash__, __lt__ or property: still a result
        why = f"rendering it raised {type(exc).__name__}: {error_message(exc)}"
        return text_result(not_json_message(name, value, why))
    result = ToolExecutionResult((TextContent(text),), False)
    return result if text[0] in "{[" else as_returned_value(result)  # a scalar: marked


JSON_STARTS: Final = frozenset("-0123456789tfn[{")
"""First characters of text that may read as a JSON value other than a string."""
_TEXT_MARK: Final = "_returned_text"


def returned_text(result: ToolExecutionResult) -> bool:
    """Whether ``result`` is the text a body returned as a ``str`` that could read as JSON.

    Frameworks that keep a tool's returned value (pydantic-ai, fastmcp's client) read a
    one-text result back as the JSON value it renders; a body that returned ``"42"`` as
    text is given ``"42"``, not ``42``. (A result rebuilt later, e.g. by a post-execute
    replacement, carries no mark and reads as its text's JSON.)
    """
    return result.__dict__.get(_TEXT_MARK, False) is True


def not_json_message(name: str, value: object, why: str) -> str:
    """The error text for a return value with no JSON form (``why`` names where)."""
    return (
        f'Error: tool "{name}" returned a {type(value).__qualname__} with no JSON form: '
        f"{json_safe_text(why)}; a tool returns text, content blocks, a ToolReturn, or "
        "data JSON can hold (dicts, lists, numbers, strings, records, enums, dates, sets)"
    )


def encode_value(value: object) -> str:
    """Render a tool's return value as compact, deterministic JSON text.

    Plain data, dataclasses, attrs classes, msgspec Structs, pydantic models
    (``model_dump(mode="json")``), enums (their values), dates and times (ISO 8601),
    UUIDs, decimals (strings), bytes (base64), paths (strings), sets and frozensets
    (sorted arrays), tuples (arrays), at any depth. Dict keys are sorted (int, float,
    enum, date and UUID keys become their JSON text); record fields keep their
    declaration order; lone surrogates are escaped. Equal values give the same text
    in every process.

    Raises:
        NotJSONError: the value has no JSON form: a non-finite float, two keys that
            render alike, a key or an object JSON cannot hold, a cycle. The message
            names where, as ``result[...]``.
    """
    return render_value(value)


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
                if not text_is_safe(block.text):
                    escape = True
            else:
                others = True
        error = result.error
        if error is not None:
            if not (
                type(error) is ToolErrorInfo and type(error.name) is str and type(error.code) is str
            ):
                return _RESULT_NOT_JSON
            escape = escape or not (text_is_safe(error.name) and text_is_safe(error.code))
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
        if not escape and utf8_safe(
            (frozen_contexts, frozen_meta, frozen_structured, content if others else ())
        ):
            return kept_marks(result, final)  # what json_safe returns with nothing to escape
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
