"""What the three provider formats share: field access, strict schemas, content.

Provider objects arrive either as the SDKs' own response objects (pydantic models,
read by attribute) or as plain dicts (read by key); :func:`get` reads both, so no
SDK is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from .._core._arguments import parse_arguments
from .._core._content import ImageContent, TextContent, ToolCall, ToolExecutionResult
from .._core._errors import StrictSchemaError, ToolArgsError
from .._core._json import thaw
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._strict import from_strict_arguments, strict_json_schema

__all__ = [
    "StrictReader",
    "blocks_of",
    "content_parts",
    "context_parts",
    "function_call",
    "get",
    "getter",
    "given_ids",
    "json_text",
    "made_up_id",
    "position",
    "sole_text",
    "strict_parameters",
]

_encode = msgspec.json.Encoder().encode


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
