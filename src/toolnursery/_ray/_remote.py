"""The worker side of a Ray placement: run a body on msgspec bytes, answer in bytes.

Everything that crosses between the agent and a Ray worker is bytes this module writes
and reads: the arguments as JSON (the frozen snapshot, thawed), the answer as a
msgpack pair ``(kind, payload)``. The kinds keep a body's return lossless — text, a
``ToolReturn``, content blocks, any other JSON value — and carry a failure the body
raised as its model-facing parts (class name, code, message), so the agent raises an
equivalent error and the pipeline builds the same result it would have built locally.
This module does not import Ray: workers import it to run calls.
"""

from __future__ import annotations

import typing
from typing import Any, Final

import msgspec
import trio

from .._core._bodies import is_async
from .._core._content import ContentBlock, ToolReturn
from .._core._errors import REMOTE_RESULT_NOT_ENCODABLE, RemoteToolError, ToolError
from .._core._json import snapshot
from .._core._outcomes import error_message

__all__ = ["RemoteContext", "decode_arguments", "encode_arguments", "read_answer", "run_call"]

_TEXT: Final = 0
_RETURN: Final = 1
_BLOCKS: Final = 2
_VALUE: Final = 3
_TOOL_ERROR: Final = 4
_ERROR: Final = 5
_NOT_ENCODABLE: Final = 6

_BLOCK_TYPES: Final = frozenset(typing.get_args(ContentBlock))
_json_encoder: Final = msgspec.json.Encoder()
_json_decoder: Final = msgspec.json.Decoder()
_msgpack_encoder: Final = msgspec.msgpack.Encoder()
_envelope: Final = msgspec.msgpack.Decoder(tuple[int, msgspec.Raw])
_return_decoder: Final = msgspec.msgpack.Decoder(ToolReturn)
_blocks_decoder: Final = msgspec.msgpack.Decoder(tuple[ContentBlock, ...])
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
        self.call_id = call_id
        self.name = name
        self.state = state

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
        return _msgpack_encoder.encode((_TOOL_ERROR, (exc.name, exc.code, error_message(exc))))
    except Exception as exc:
        return _msgpack_encoder.encode((_ERROR, error_message(exc)))
    return encode_answer(value, name)


def encode_answer(value: Any, name: str) -> bytes:
    """Encode a body's return as ``(kind, payload)``; a value that cannot cross is a
    ``REMOTE_RESULT_NOT_ENCODABLE`` answer, never an exception."""
    t = type(value)
    try:
        if t is str:
            return _msgpack_encoder.encode((_TEXT, value))
        if t is ToolReturn:
            return _msgpack_encoder.encode((_RETURN, value))
        if t in _BLOCK_TYPES:
            return _msgpack_encoder.encode((_BLOCKS, (value,)))
        if (t is list or t is tuple) and value and all(type(v) in _BLOCK_TYPES for v in value):
            return _msgpack_encoder.encode((_BLOCKS, value))
        return _msgpack_encoder.encode((_VALUE, _json_encoder.encode(value)))
    except (TypeError, ValueError, OverflowError) as exc:
        message = (
            f'tool "{name}" returned a {t.__name__} that cannot be sent back from its Ray '
            f"worker as msgspec-encoded bytes: {exc}"
        )
        return _msgpack_encoder.encode((_NOT_ENCODABLE, message))


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
    """Decode an answer into what the body returned (or raise what it raised)."""
    kind, raw = _envelope.decode(answer)
    if kind == _TEXT:
        return _text_decoder.decode(raw)
    if kind == _RETURN:
        return _return_decoder.decode(raw)
    if kind == _BLOCKS:
        return _blocks_decoder.decode(raw)
    if kind == _VALUE:
        return _json_decoder.decode(msgspec.msgpack.decode(raw, type=bytes))
    if kind == _TOOL_ERROR:
        name, code, message = _strings_decoder.decode(raw)
        raise _RelayedToolError(name, code, message)
    if kind == _ERROR:
        raise _RelayedError(_text_decoder.decode(raw))
    if kind == _NOT_ENCODABLE:
        raise RemoteToolError(_text_decoder.decode(raw), code=REMOTE_RESULT_NOT_ENCODABLE)
    raise RemoteToolError(f"unknown answer kind {kind!r} from a Ray worker")
