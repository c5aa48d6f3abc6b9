"""Streamed responses: a model's stream feeding a batch, each call submitted once complete.

The three providers' stream adapters share :class:`ToolStream`; each turns its
provider's events into the stream's calls, text deltas and ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Final, Protocol

import msgspec

from .._core._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from .._core._errors import IncompleteCallError
from .._pipeline._registry import ToolRegistry, ToolScope
from ._common import StrictReader, made_up_id

__all__ = ["Batch", "ToolStream", "incomplete"]

_decode = msgspec.json.Decoder().decode


class Batch(Protocol):
    """What a stream adapter needs of a batch: :class:`~toolnursery.ToolBatch`, or
    :class:`~toolnursery.aio.AsyncioToolBatch` under asyncio."""

    def submit(self, call: ToolCall, /) -> int: ...

    def close(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[tuple[ToolCall, ToolExecutionResult]]: ...


_INCOMPLETE: Final = ToolErrorInfo("IncompleteCallError", IncompleteCallError.code)


def incomplete(message: str) -> ToolExecutionResult:
    """The result of a streamed call that did not run: ``Error: <message>``."""
    return ToolExecutionResult((TextContent(f"Error: {message}"),), True, _INCOMPLETE)


class _Item:
    """One output position of the stream (a call, or something else: text, reasoning)."""

    __slots__ = ("call_id", "complete", "extra", "index", "is_call", "name", "parts", "whole")

    def __init__(self, index: int, is_call: bool) -> None:
        self.index = index
        self.is_call = is_call
        self.call_id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        # The provider's own final arguments (text; an Anthropic block's given input).
        self.whole: Any = None
        self.complete = False
        # Calls the stream started again at this index with another id: they get an
        # error result each, right after this one.
        self.extra: list[tuple[str, str | None]] = []


class ToolStream:
    """A model's streamed response feeding a :class:`~toolnursery.ToolBatch`.

    Iterate it (``async for text in stream``) to receive the text deltas while the
    calls are assembled: each call is submitted to the batch the moment its
    arguments are complete (in model order), so its body can start while the model
    is still streaming the next one. When the stream ends the batch is closed; then
    :meth:`pairs` gives every call with its result, in model order.

    A stream that breaks off (it raises, or ends without the provider's final event)
    ends the text; the calls that were complete run and return, and every call that
    was not gets an ``INCOMPLETE_CALL`` error result and does not run. The stream's
    exception is kept in :attr:`error`, not raised.

    Every call the stream sent gets exactly one result. A call that arrives without
    a usable index (missing, text, negative) has no place in the model's order: it
    gets an ``INCOMPLETE_CALL`` result and does not run; any other event without one
    is ignored and noted in :attr:`anomalies`. A call sent without an id gets a
    made-up one (``call_<index>``; ``toolu_<index>`` for Anthropic) that is never an
    id the stream gave, so it is submitted only once the stream has ended and every
    given id is known.

    Attributes:
        text: the text streamed so far.
        calls: the calls, in model order (complete once the stream has ended).
        results: their results, filled as :meth:`pairs` yields them.
        error: the exception the stream raised, if it broke off that way.
        finished: whether the provider's final event arrived.
        anomalies: what the stream sent that could not be used (descriptions).
    """

    # Whether a call is complete as soon as its arguments are a whole JSON object
    # (Chat Completions sends no per-call end event).
    _complete_on_json = False
    # How an id made up for a call sent without one starts.
    _id_prefix = "call_"

    def __init__(
        self,
        stream: AsyncIterable[Any],
        batch: Batch,
        *,
        strict: bool = False,
        registry: ToolRegistry | None = None,
        scope: ToolScope | None = None,
    ) -> None:
        if strict and registry is None:
            # A ToolBatch knows its registry and the agent scope it runs for.
            registry = getattr(batch, "registry", None)
            scope = getattr(batch, "agent", None)
        self._strict = StrictReader.of(strict, registry, scope, type(self).__name__)
        self._events = stream.__aiter__()
        self._batch = batch
        self._items: dict[int, _Item] = {}
        self._next = 0  # the lowest index not yet passed on (model order)
        self._order: list[tuple[ToolCall, ToolExecutionResult | None]] = []
        self._text: list[str] = []
        self._ended = False
        self._read = 0
        self._batch_pairs = batch.__aiter__()
        self._given: set[str] = set()  # every call id the stream gave
        self._refused: set[str] = set()  # ids of calls refused for want of an index
        self.calls: list[ToolCall] = []
        self.results: list[ToolExecutionResult] = []
        self.error: Exception | None = None
        self.finished = False
        self.anomalies: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def ended(self) -> bool:
        """Whether the stream has ended (and the batch is closed)."""
        return self._ended

    # -- text out -----------------------------------------------------------------------

    def __aiter__(self) -> ToolStream:
        return self

    async def __anext__(self) -> str:
        if self._ended:
            raise StopAsyncIteration
        # Most events carry no text: one call of this method reads many, so what the
        # loop uses is bound once, outside it.
        next_event = self._events.__anext__
        feed = self._feed
        while True:
            try:
                event = await next_event()
            except StopAsyncIteration:
                self._end()
                raise
            except Exception as exc:
                # The stream broke off: keep what was complete, end the batch.
                self.error = exc
                self._end()
                raise StopAsyncIteration from None
            try:
                text = feed(event)
            except (TypeError, AttributeError, KeyError, ValueError) as exc:
                # A garbled event (a field of the wrong shape): noted, not fatal; a call
                # it leaves unfinished gets its INCOMPLETE_CALL result at the end.
                self.anomalies.append(f"an event that could not be read: {exc!r}")
                continue
            if text:
                self._text.append(text)
                return text

    async def drain(self) -> None:
        """Read the rest of the stream (its text is kept in :attr:`text`)."""
        async for _ in self:
            pass

    # -- results out --------------------------------------------------------------------

    def pairs(self) -> _Pairs:
        """Every call with its result, in model order, each as soon as it commits.

        Reads the rest of the stream first if it has not ended.
        """
        return _Pairs(self)

    # -- assembly (the provider modules call these from _feed) --------------------------

    def _feed(self, event: Any) -> str | None:  # pragma: no cover - every adapter overrides
        raise NotImplementedError

    def _note(self, index: int) -> None:
        """Something that is not a call occupies ``index`` (text, reasoning)."""
        if index not in self._items:
            self._items[index] = _Item(index, False)
            self._advance()

    def _unplaced(
        self, raw: object, what: str, call_id: object = None, name: object = None
    ) -> None:
        """An event whose index ``raw`` is not one (see :func:`position`).

        An event that starts a call with an id refuses that call (its one result says
        why); anything else is ignored and noted.
        """
        shown = "none" if raw is None else repr(raw)
        if isinstance(call_id, str) and call_id and call_id not in self._given:
            self._given.add(call_id)
            self._refused.add(call_id)
            self.anomalies.append(f'call "{call_id}" sent without a usable index ({shown})')
            self._fixed(
                ToolCall(call_id, name if isinstance(name, str) else "", ""),
                f"the response stream sent this call without a usable index ({shown}); "
                "it did not run",
            )
        else:
            self.anomalies.append(f"{what} without a usable index ({shown}): ignored")

    def _start(self, index: int, call_id: str | None, name: str | None) -> _Item:
        item = self._items.get(index)
        if call_id is not None and call_id in self._refused:
            # The call already has its refusal: what follows at this index is not a call.
            self.anomalies.append(f'call "{call_id}" sent again at index {index}: ignored')
            if item is None:
                item = self._items[index] = _Item(index, False)
                self._advance()
            return item
        if item is None:
            item = self._items[index] = _Item(index, True)
        elif not item.is_call:
            self.anomalies.append(f"a call started at index {index}, which holds no call")
            return item
        if call_id is not None:
            self._given.add(call_id)
            if item.call_id is None:
                item.call_id = call_id
            elif call_id != item.call_id:
                self.anomalies.append(
                    f'a second call ("{call_id}") started at index {index}, '
                    f'which holds "{item.call_id}"'
                )
                if item.index < self._next:  # already passed on: answer it now
                    self._fixed(ToolCall(call_id, name or "", ""), _twice(index, item.call_id))
                else:
                    item.extra.append((call_id, name))
                return item
        if name is not None and item.name is None:
            item.name = name
        return item

    def _append(self, index: int, delta: str | None) -> None:
        if not delta:
            return
        item = self._items.get(index)
        if item is None or not item.is_call:
            item = self._start(index, None, None)
        if index < self._next:
            self.anomalies.append(f"arguments for index {index} after its call was complete")
            return
        parts = item.parts
        parts.append(delta)
        if not self._complete_on_json:
            return
        # The common last character first: rstrip() only when the delta ends in space.
        last = delta[-1]
        if last != "}" and not (last.isspace() and delta.rstrip().endswith("}")):
            return
        try:
            whole = _decode(parts[0] if len(parts) == 1 else "".join(parts))
        except (msgspec.DecodeError, UnicodeEncodeError, RecursionError):
            return
        if type(whole) is dict and item.is_call:
            item.complete = True
            self._advance()

    def _complete(self, index: int, whole: str | None = None) -> None:
        item = self._items.get(index)
        if item is None or not item.is_call:
            return
        if whole is not None:
            item.whole = whole
        item.complete = True
        self._advance()

    def _advance(self) -> None:
        """Pass on every item at the front of model order that is ready."""
        items = self._items
        while True:
            item = items.get(self._next)
            if item is None:
                return
            if item.is_call and (not item.complete or item.call_id is None):
                return  # an id-less call waits for the end (see the class docstring)
            self._pass(item, torn=False)
            self._next += 1

    def _pass(self, item: _Item, *, torn: bool) -> None:
        if not item.is_call:
            return
        arguments = self._arguments(item)
        name = item.name
        if self._strict is not None and name is not None:
            arguments = self._strict(name, arguments)
        call_id = item.call_id
        assert call_id is not None  # given, or made up by _end
        call = ToolCall(call_id, name if name is not None else "", arguments)
        if torn:
            self._fixed(
                call,
                "the response stream ended before this call's arguments were complete "
                f"({len(''.join(item.parts))} characters received); the call did not run",
            )
        elif name is None:
            self._fixed(call, "the response stream never named this call's tool; it did not run")
        else:
            self._batch.submit(call)
            self.calls.append(call)
            self._order.append((call, None))
        for extra_id, extra_name in item.extra:
            self._fixed(ToolCall(extra_id, extra_name or "", ""), _twice(item.index, call_id))

    def _arguments(self, item: _Item) -> Any:
        """The arguments a complete call runs with: the provider's own final text, else
        the deltas joined."""
        return item.whole if item.whole is not None else "".join(item.parts)

    def _fixed(self, call: ToolCall, message: str) -> None:
        self.calls.append(call)
        self._order.append((call, incomplete(message)))

    def _end(self) -> None:
        """The stream is over: pass on what is left in model order, close the batch."""
        self._ended = True
        broken = self.error is not None or not self.finished
        taken = self._given
        for index in sorted(self._items):
            item = self._items[index]
            if item.is_call and item.call_id is None:
                item.call_id = made_up_id(self._id_prefix, index, taken)
        for index in sorted(i for i in self._items if i >= self._next):
            item = self._items[index]
            self._pass(item, torn=broken and item.is_call and not item.complete)
        self._next = max(self._items, default=-1) + 1
        self._batch.close()


def _twice(index: int, holder: str | None) -> str:
    return (
        f"the response stream sent this call at index {index}, which already held call "
        f'"{holder}"; it did not run'
    )


class _Pairs:
    """The async iterator :meth:`ToolStream.pairs` returns."""

    def __init__(self, stream: ToolStream) -> None:
        self._stream = stream

    def __aiter__(self) -> AsyncIterator[tuple[ToolCall, ToolExecutionResult]]:
        return self

    async def __anext__(self) -> tuple[ToolCall, ToolExecutionResult]:
        stream = self._stream
        if not stream._ended:
            await stream.drain()
        read = stream._read
        if read >= len(stream._order):
            raise StopAsyncIteration
        call, fixed = stream._order[read]
        stream._read = read + 1
        if fixed is None:
            committed, result = await stream._batch_pairs.__anext__()
            assert committed is call
        else:
            result = fixed
        stream.results.append(result)
        return call, result
