"""The worker side of a Ray placement: run a body on msgspec bytes, answer in bytes.

Everything that crosses between the agent and a Ray worker is bytes this module writes
and reads: the arguments as JSON (the frozen snapshot, thawed), the answer as a
msgpack pair ``(kind, payload)``. A body's return crosses as the result it makes —
built on the worker by the same ``normalize`` and ``materialize`` the agent runs, so
text, blocks, a ``ToolReturn`` and any rendered value (or the error for a value with
no JSON form) are exactly what a local body gives. A failure the body raised crosses
as its model-facing parts (class name, code, message), so the agent raises an
equivalent error and the pipeline builds the same result it would have built locally.
This module does not import Ray: workers import it to run calls.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import trio

from .._core._bodies import is_async
from .._core._content import ToolExecutionResult
from .._core._errors import REMOTE_RESULT_NOT_ENCODABLE, RemoteToolError, ToolError
from .._core._json import snapshot
from .._core._outcomes import (
    SettledResult,
    error_message,
    json_safe_text,
    materialize,
    normalize,
)

__all__ = ["RemoteContext", "decode_arguments", "encode_arguments", "read_answer", "run_call"]

_RESULT: Final = 7
_TOOL_ERROR: Final = 4
_ERROR: Final = 5
_json_encoder: Final = msgspec.json.Encoder()
_json_decoder: Final = msgspec.json.Decoder()
_msgpack_encoder: Final = msgspec.msgpack.Encoder()
_envelope: Final = msgspec.msgpack.Decoder(tuple[int, msgspec.Raw])
_result_decoder: Final = msgspec.json.Decoder(ToolExecutionResult)
_strings_decoder: Final = msgspec.msgpack.Decoder(tuple[str, ...])
_text_decoder: Final = msgspec.msgpack.Decoder(str)


class RemoteContext:
    """What a body placed on Ray receives as ``ctx``, in place of a ``ToolRunContext``.

    The agent-side context (its signal, ``defer_context``) stays in the agent's
    process; cancellation reaches a remote body through Ray (``KeyboardInterrupt``
    in a task, see :mod:`toolnursery.ray`).

    Attributes:
        call_id: the id of the call being run.
        name: the tool name.
        state: for an actor pool, what the pool's ``setup()`` returned in this actor
            (kept across the calls that actor runs); ``None`` for a task.
    """

    __slots__ = ("call_id", "name", "state")

    def __init__(self, call_id: str, name: str, state: Any = None) -> None:
        self.call_id: str = call_id
        self.name: str = name
        self.state: Any = state

    def __repr__(self) -> str:
        return f"RemoteContext(call_id={self.call_id!r}, name={self.name!r})"


def encode_arguments(arguments: Any) -> bytes:
    """The frozen argument snapshot as JSON bytes (read-only mappings and tuples thaw)."""
    return _json_encoder.encode(arguments)


def decode_arguments(payload: bytes) -> Any:
    """JSON bytes back to a deep-frozen snapshot, as the body would see it locally."""
    return snapshot(_json_decoder.decode(payload))


def run_call(body: Any, payload: bytes, call_id: str, name: str, state: Any = None) -> bytes:
    """Run ``body`` on the decoded arguments in this worker and encode its answer.

    An ``async def`` body runs in a fresh ``trio.run``. A ``KeyboardInterrupt`` (how
    ``ray.cancel`` interrupts a task) is not caught: it ends the task as cancelled.
    """
    arguments = decode_arguments(payload)
    ctx = RemoteContext(call_id, name, state)
    try:
        value = trio.run(body, arguments, ctx) if is_async(body) else body(arguments, ctx)
    except ToolError as exc:
        # Escaped here as materialize escapes them there: a surrogate cannot cross.
        parts = (exc.name, exc.code, error_message(exc))
        return _msgpack_encoder.encode((_TOOL_ERROR, tuple(map(_safe_str, parts))))
    except Exception as exc:
        return _msgpack_encoder.encode((_ERROR, json_safe_text(error_message(exc))))
    return encode_answer(value, name)


def _safe_str(value: object) -> str:
    return json_safe_text(value if isinstance(value, str) else str(value))


def encode_answer(value: Any, name: str) -> bytes:
    """Encode a body's return as the result it makes here: ``materialize(normalize())``.

    The worker builds the very result the agent would build for the same value (the
    same rendering, the same error for a value with no JSON form, surrogates escaped),
    so a placed tool returns exactly what the local one returns; the result is
    lossless JSON by then, so it always crosses.
    """
    result = materialize(normalize(value, name))
    return _msgpack_encoder.encode((_RESULT, _json_encoder.encode(result)))


class _RelayedToolError(ToolError):
    """A ``ToolError`` a remote body raised, with its class name, code and message."""

    def __init__(self, name: str, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self._name = name

    @property
    def name(self) -> str:
        return self._name


class _RelayedError(Exception):
    """Any other exception a remote body raised: its model-facing text only."""


def read_answer(answer: bytes) -> Any:
    """Decode an answer into what the body returned (or raise what it raised).

    A returned value comes back as a :class:`SettledResult` (its result, built on the
    worker). An answer this agent cannot read (a worker on another version of
    toolnursery) is a ``REMOTE_RESULT_NOT_ENCODABLE`` error.
    """
    try:
        kind, raw = _envelope.decode(answer)
        if kind == _RESULT:
            return SettledResult(_result_decoder.decode(msgspec.msgpack.decode(raw, type=bytes)))
        if kind == _TOOL_ERROR:
            name, code, message = _strings_decoder.decode(raw)
            error: Exception = _RelayedToolError(name, code, message)
        elif kind == _ERROR:
            error = _RelayedError(_text_decoder.decode(raw))
        else:
            error = RemoteToolError(
                f"unknown answer kind {kind!r} from a Ray worker",
                code=REMOTE_RESULT_NOT_ENCODABLE,
            )
    except msgspec.DecodeError as exc:
        raise RemoteToolError(
            f"the answer from a Ray worker cannot be read ({exc}): is the worker running "
            "the same version of toolnursery?",
            code=REMOTE_RESULT_NOT_ENCODABLE,
        ) from None
    raise error
