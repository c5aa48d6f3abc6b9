"""A batch's intake: each call's arguments read once, and the results decided without the
registry (a repeated call id, arguments that cannot be arguments).

Arguments are parsed once and frozen once: the classifier and the body see the same
frozen value, so a classifier cannot change what runs (or what was logged). Text fresh
from the JSON decoder is frozen without re-validation (it is detached, acyclic and keyed
by strings already); a mapping the caller passed is snapshotted.
"""

from __future__ import annotations

import math
from random import getrandbits as _random_bits
from typing import Any, Final

from .._core._arguments import parse_arguments, safe_arguments
from .._core._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from .._core._errors import ToolArgsError
from .._core._json import MAX_JSON_DEPTH, FrozenDict, snapshot
from .._pipeline._call import UNPARSED, CallRecord

__all__ = ["arguments", "check_batch_id", "duplicate", "loggable", "new_batch_id"]

_DUPLICATE: Final = ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID")


def duplicate(call_id: str) -> ToolExecutionResult:
    """The result of a call whose id repeats an earlier call's id in its batch."""
    return ToolExecutionResult(
        (TextContent(f'Error: duplicate tool call id "{call_id}" in this batch'),),
        True,
        _DUPLICATE,
    )


def check_batch_id(value: object) -> str:
    if type(value) is not str or not value:
        raise ValueError(f"batch_id must be a non-empty string, got {value!r}")
    return value


def loggable(call: ToolCall) -> ToolCall:
    """The call as a log can hold it: refused arguments replaced by a safe stand-in."""
    arguments = safe_arguments(call.arguments)
    return call if arguments == call.arguments else ToolCall(call.id, call.name, arguments)


def new_batch_id() -> str:
    """A globally unique batch id: 128 random bits, as 32 hex digits.

    From :mod:`random`'s generator, which is seeded from the OS at start-up and
    reseeded in every forked child, so two processes never share a sequence.
    """
    return _random_bits(128).to_bytes(16, "big").hex()


_SCALARS: Final = frozenset((str, int, bool, type(None)))
_EMPTY: Final = FrozenDict()  # read-only, so every call without arguments shares it


def _freeze_decoded(value: Any, depth: int = 0) -> Any:
    """Deep-freeze a value fresh from the JSON decoder (as :func:`snapshot` would).

    Decoded JSON is already detached, acyclic and keyed by strings, so only floats
    and depth need checking; anything else goes to :func:`snapshot` (which raises).
    """
    t = type(value)
    if t in _SCALARS:
        return value
    if depth < MAX_JSON_DEPTH:
        if t is dict:
            if not value:
                return _EMPTY
            for v in value.values():
                if type(v) not in _SCALARS:
                    break
            else:
                return FrozenDict(value)  # flat: a copy, nothing to freeze inside
            return FrozenDict(
                {
                    k: v if type(v) in _SCALARS else _freeze_decoded(v, depth + 1)
                    for k, v in value.items()
                }
            )
        if t is list:
            return tuple([_freeze_decoded(v, depth + 1) for v in value])
        if t is float and value - value == 0.0 and (value or math.copysign(1.0, value) > 0):
            return value  # finite, not -0.0
    raise _NotDecoded


class _NotDecoded(Exception):
    pass


def arguments(call: CallRecord) -> Any:
    """The call's arguments, parsed and frozen once (the classifier and the body see
    the same frozen value, so a classifier cannot change what runs or what was logged).

    Arguments that cannot be arguments at all make the call's fixed result.
    """
    args = call.args
    if args is UNPARSED:
        tool_call = call.tool_call
        assert tool_call is not None
        raw = tool_call.arguments
        try:
            args = parse_arguments(raw)
        except ToolArgsError as exc:
            # Not arguments at all: this call's error result; it never runs.
            call.fixed = ToolExecutionResult(
                (TextContent(f"Error: {exc.message}"),), True, ToolErrorInfo(exc.name, exc.code)
            )
            call.args = None
            return None
        if type(args) is dict and type(raw) is str:
            # _freeze_decoded(args), inlined for a flat object (the common case).
            for value in args.values():
                if type(value) not in _SCALARS:
                    break
            else:
                call.args = FrozenDict(args) if args else _EMPTY
                call.frozen = True
                return call.args
        try:
            args = _freeze_decoded(args) if type(raw) is str else snapshot(args)
        except _NotDecoded:
            try:
                args = snapshot(args)
            except Exception:
                pass  # not lossless JSON: start() reports it
            else:
                call.frozen = True
        except Exception:
            pass  # not lossless JSON: start() reports it
        else:
            call.frozen = True
        call.args = args
    return args
