"""What the three provider formats share: field access, strict schemas, content, streams.

Provider objects arrive either as the SDKs' own response objects (pydantic models,
read by attribute) or as plain dicts (read by key); :func:`get` reads both, so no
SDK is imported here.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

import msgspec

from .._core._arguments import parse_arguments
from .._core._content import ImageContent, TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from .._core._errors import IncompleteCallError, StrictSchemaError, ToolArgsError
from .._core._json import thaw
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._strict import from_strict_arguments, strict_json_schema

__all__ = [
    "Batch",
    "StrictReader",
    "ToolStream",
    "blocks_of",
    "content_parts",
    "context_parts",
    "function_call",
    "get",
    "getter",
    "given_ids",
    "incomplete",
    "json_text",
    "made_up_id",
    "position",
    "sole_text",
    "strict_parameters",
]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class Batch(Protocol):
    """What a stream adapter needs of a batch: :class:`~toolnursery.ToolBatch`, or
    :class:`~toolnursery.aio.AsyncioToolBatch` under asyncio."""

    def submit(self, call: ToolCall, /) -> int: ...

    def close(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[tuple[ToolCall, ToolExecutionResult]]: ...


_MISSING: Final = object()


def get(value: Any, key: str) -> Any:
    """``value[key]`` of a mapping, ``value.key`` of an SDK object; ``None`` if absent."""
    if type(value) is dict:
        return value.get(key)
    found = getattr(value, key, _MISSING)  # an SDK object has every field as an attribute
    if found is _MISSING:
        return value.get(key) if isinstance(value, Mapping) else None
    return found


def _get3(value: Any, key: str, default: Any) -> Any:
    found = get(value, key)
    return default if found is None else found


def getter(event: Any) -> Any:
    """The fastest ``(value, key, default)`` reader for an event and what it holds.

    ``dict.get`` for plain dicts, ``getattr`` for the SDKs' objects (both C calls, so
    reading a field costs no Python frame); anything else goes through :func:`get`.
    """
    kind = type(event)
    if kind is dict:
        return dict.get
    reader = _READERS.get(kind)
    if reader is None:
        # An SDK's event classes are few: the isinstance check runs once per class.
        reader = _get3 if isinstance(event, Mapping) else getattr
        if len(_READERS) < _MAX_READERS:
            _READERS[kind] = reader
    return reader


_READERS: dict[type, Any] = {}
_MAX_READERS: Final = 256


def blocks_of(value: Any, key: str, kind: str) -> Iterator[Any]:
    """The items of type ``kind`` in ``value``'s ``key`` list, in order.

    ``value`` may also be that list itself, or one item.
    """
    items = get(value, key)
    if items is None:
        items = value if isinstance(value, list | tuple) else [value]
    for item in items:
        if get(item, "type") == kind:
            yield item


def json_text(arguments: object) -> str:
    """A call's arguments as JSON text (mappings encoded, text as it is)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return _encode(arguments).decode()
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError):
        return "{}"


def position(value: object) -> int | None:
    """A stream event's index, if it is one: an ``int`` of at least 0 (not a ``bool``).

    Every adapter reads an event's index through this one check; an event whose index
    is missing, text, negative or of any other kind has no place in the model's
    order (``None``).
    """
    return value if type(value) is int and value >= 0 else None


def made_up_id(prefix: str, number: int, taken: set[str]) -> str:
    """An id for a call the provider sent without one, and adds it to ``taken``.

    ``prefix`` and ``number`` (``toolu_2``), or with a ``_1``, ``_2``... suffix while
    that id is in ``taken`` — the ids the provider gave in the same response and
    those made up before — so a made-up id never takes a given one's place, and the
    same response always gets the same ids.
    """
    candidate = f"{prefix}{number}"
    suffix = 0
    while candidate in taken:
        suffix += 1
        candidate = f"{prefix}{number}_{suffix}"
    taken.add(candidate)
    return candidate


def given_ids(values: Iterable[object]) -> set[str]:
    """The ids a response gave its calls (text values only: ``None``/``""`` are none)."""
    return {value for value in values if isinstance(value, str) and value}


# -- strict mode ------------------------------------------------------------------------


def strict_parameters(tool_name: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The strict-mode form of a tool's parameter schema (see :func:`strict_json_schema`).

    Every object gets ``additionalProperties: false`` and lists every property as
    required; a property that was optional becomes nullable, so the model sends
    ``null`` where it would have left it out.

    Raises:
        StrictSchemaError: the schema holds something strict mode cannot take; the
            message names the tool, the keyword and the path.
    """
    if parameters.get("type") == "object" and "properties" not in parameters:
        parameters = {**parameters, "properties": {}}  # a tool without parameters
    try:
        return strict_json_schema(parameters)
    except StrictSchemaError as exc:
        raise StrictSchemaError(
            str(exc), keyword=exc.keyword, path=exc.path, tool_name=tool_name
        ) from exc


class StrictReader:
    """Reads arguments a model sent against strict schemas back into each tool's own form.

    A strict schema lists every property as required and makes an optional one
    nullable, so the model sends ``null`` where it would have left a property out. A
    ``null`` is removed only where the tool's own schema has that property optional and
    not nullable (:func:`~toolnursery.from_strict_arguments`): a ``null`` the schema
    takes — a required ``int | None`` — stays, at every depth.
    """

    __slots__ = ("_registry", "_schemas", "_scope")

    def __init__(self, registry: ToolRegistry, scope: ToolScope | None) -> None:
        self._registry = registry
        self._scope = scope
        self._schemas: dict[str, tuple[object, dict[str, Any]]] = {}

    @classmethod
    def of(
        cls, strict: bool, registry: ToolRegistry | None, scope: ToolScope | None, where: str
    ) -> StrictReader | None:
        """The reader ``strict`` asks for (``None`` when it is off).

        Raises:
            TypeError: ``strict`` without the registry whose schemas were sent.
        """
        if not strict:
            return None
        if registry is None:
            raise TypeError(
                f"{where}: strict=True reads each call against its tool's own schema: "
                "pass registry= (and scope=, the scope whose tools were sent)"
            )
        return cls(registry, scope)

    def _schema(self, name: str) -> dict[str, Any] | None:
        definition = self._registry.get(name, self._scope)
        if definition is None:
            return None  # an unknown tool: its call fails as such, arguments untouched
        cached = self._schemas.get(name)
        if cached is None or cached[0] is not definition:
            cached = self._schemas[name] = (definition, thaw(definition.parameters))
        return cached[1]

    def __call__(self, name: str, arguments: object) -> Any:
        """``arguments`` (text or a mapping) in the named tool's own form.

        Text that is not a JSON object, and anything else, is returned as it is (the
        call reports it); text that needs no change stays the very text.
        """
        schema = self._schema(name)
        if schema is None:
            return arguments
        if isinstance(arguments, str):
            try:
                parsed = parse_arguments(arguments)
            except ToolArgsError:
                return arguments
            if not isinstance(parsed, dict):
                return arguments
            restored = from_strict_arguments(schema, parsed)
            return arguments if restored is parsed else restored
        if isinstance(arguments, Mapping):
            return from_strict_arguments(schema, dict(arguments))
        return arguments


def function_call(call_id: str, name: Any, arguments: Any, strict: StrictReader | None) -> ToolCall:
    """A call as the OpenAI formats give it: no arguments are empty text, no name is ``""``.

    ``strict``: the tools were sent in strict mode; the arguments are read back into
    the tool's own form (see :class:`StrictReader`).
    """
    if arguments is None:
        arguments = ""
    name = name or ""
    return ToolCall(call_id, name, strict(name, arguments) if strict is not None else arguments)


# -- content ----------------------------------------------------------------------------


def image_note(block: ImageContent) -> str:
    """The text that stands in for an image where a format takes only text."""
    data = block.data.rstrip()
    size = len(data) * 3 // 4 - data[-2:].count("=")
    return f"[image: {block.mime_type}, {size} bytes, not shown: this message takes text only]"


def content_parts(blocks: Sequence[Any]) -> list[tuple[str, Any]]:
    """The blocks as ``("text", str)`` / ``("image", ImageContent)`` parts.

    A kind of block a provider format has no place for becomes a text part that
    names it (its own ``text`` if it has one).
    """
    parts: list[tuple[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(("text", block.text))
        elif isinstance(block, ImageContent):
            parts.append(("image", block))
        else:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                parts.append(("text", text))
            else:
                kind = getattr(block, "type", None) or type(block).__name__
                parts.append(("text", f"[{kind} content: not shown in this format]"))
    return parts


def context_parts(results: Iterable[ToolExecutionResult]) -> Iterator[tuple[str, Any]]:
    """The parts (see :func:`content_parts`) of every result's ``additional_contexts``, in order."""
    for result in results:
        for context in result.additional_contexts:
            yield from content_parts(context.content)


def sole_text(blocks: Sequence[Any]) -> str | None:
    """The text of ``blocks`` when they are one text block (most results), else ``None``."""
    if len(blocks) == 1:
        block = blocks[0]
        if type(block) is TextContent:
            return block.text
    return None


def flat_text(blocks: Sequence[Any]) -> str:
    """The blocks as one text: text blocks joined by newlines, images as a note."""
    text = sole_text(blocks)
    if text is not None:
        return text
    return "\n".join(
        value if kind == "text" else image_note(value) for kind, value in content_parts(blocks)
    )


def data_url(block: ImageContent) -> str:
    return f"data:{block.mime_type};base64,{block.data}"


# -- streaming --------------------------------------------------------------------------

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
