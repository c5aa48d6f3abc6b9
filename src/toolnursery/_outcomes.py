"""Building results: normalization, materialization, and failure texts.

Everything here is synchronous and allocation-light: the canonical cancellation
results are built once, a body's return value is normalized into a result, a final
result is checked to be lossless JSON and frozen (else the B099 error), and an
exception becomes ``Error: <message>`` with ``{name, code}`` for a :class:`ToolError`.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ._content import (
    CONTENT_BLOCK_TYPES,
    HookContext,
    ImageContent,
    TextContent,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolReturn,
)
from ._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, ToolError
from ._json import NotJSONError, snapshot


def _text_result(text: str, error: ToolErrorInfo | None = None) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), True, error)


ABORTED_RESULT: Final = _text_result(
    "Error: tool call aborted", ToolErrorInfo("AbortError", TOOL_ABORTED)
)
ABORTED_BEFORE_DISPATCH_RESULT: Final = _text_result(
    "Error: tool call aborted before dispatch",
    ToolErrorInfo("AbortError", TOOL_ABORTED_BEFORE_DISPATCH),
)
_ARGS_NOT_JSON: Final = _text_result(
    "Error: tool execution arguments must be losslessly JSON-serializable"
)
_RESULT_NOT_JSON: Final = _text_result("Error: tool result must be losslessly JSON-serializable")


def _normalize(value: Any, name: str) -> ToolExecutionResult:
    t = type(value)
    if t is str:
        return ToolExecutionResult((TextContent(value),), False)
    if t is tuple:
        return ToolExecutionResult(value, False)
    if t is list:
        return ToolExecutionResult(tuple(value), False)
    if t is ToolReturn:
        content = value.content
        return ToolExecutionResult(
            tuple(content) if type(content) is not tuple else content,
            False,
            meta=value.meta,
            structured_content=value.structured,
        )
    if t in CONTENT_BLOCK_TYPES:
        return ToolExecutionResult((value,), False)
    return _text_result(
        f'Error: tool "{name}" returned {t.__name__}; a tool body returns a str, '
        "a sequence of content blocks, or a ToolReturn"
    )


def _materialize(result: ToolExecutionResult) -> ToolExecutionResult:
    """Check the final result is lossless JSON and deep-frozen; else the B099 error."""
    try:
        content = result.content
        for block in content:
            if not _valid_block(block):
                return _RESULT_NOT_JSON
        error = result.error
        if error is not None and not (
            type(error) is ToolErrorInfo and type(error.name) is str and type(error.code) is str
        ):
            return _RESULT_NOT_JSON
        contexts = result.additional_contexts
        meta = result.meta
        structured = result.structured_content
        if (
            type(content) is tuple
            and not contexts
            and type(contexts) is tuple
            and meta is None
            and structured is None
            and type(result.is_error) is bool
        ):
            return result
        frozen_contexts = tuple(_freeze_context(c) for c in contexts)
        return ToolExecutionResult(
            tuple(content),
            bool(result.is_error) if type(result.is_error) is not bool else result.is_error,
            error,
            frozen_contexts,
            None if meta is None else snapshot(meta),
            None if structured is None else snapshot(structured),
        )
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
    return t in CONTENT_BLOCK_TYPES and _round_trips(block)


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


class _Unreachable(Exception):
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


def _unreachable(what: str, value: object) -> ToolExecutionResult:
    return _failure(_Unreachable(what, value))


def _message(exc: BaseException) -> str:
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


def _failure(exc: BaseException) -> ToolExecutionResult:
    text = "Error: " + _message(exc)
    if isinstance(exc, ToolError):
        try:
            info: ToolErrorInfo | None = ToolErrorInfo(str(exc.name), str(exc.code))
        except Exception:
            info = None
        return _text_result(text, info)
    return _text_result(text)
