"""The values that cross toolnursery's boundaries: content, results, calls, schemas.

Every value is a frozen :class:`msgspec.Struct` whose JSON form uses camelCase field
names (``isError``, ``additionalContexts``, ``mimeType``) and omits absent fields, so
``msgspec.json.decode(msgspec.json.encode(v), type=type(v)) == v``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

import msgspec
from msgspec.structs import force_setattr

__all__ = [
    "AudioContent",
    "ContentAnnotations",
    "ContentBlock",
    "EmbeddedResource",
    "HookContext",
    "ImageContent",
    "ResourceContents",
    "ResourceLink",
    "TextContent",
    "ToolCall",
    "ToolErrorInfo",
    "ToolExecutionResult",
    "ToolResult",
    "ToolReturn",
    "ToolSchema",
    "as_returned_value",
    "kept_marks",
    "with_contexts",
]


class ContentAnnotations(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """Hints about a content block for the client: who it is for and how much it matters.

    Attributes:
        audience: the roles it is meant for (``"user"``, ``"assistant"``).
        priority: importance from 0 (optional) to 1 (required).
        last_modified: an ISO 8601 timestamp (wire name ``lastModified``).
    """

    audience: tuple[str, ...] | None = None
    priority: float | None = None
    last_modified: str | None = None


class TextContent(
    msgspec.Struct, frozen=True, tag="text", tag_field="type", rename="camel", omit_defaults=True
):
    """A block of model-facing text.

    Attributes:
        text: the text.
        annotations: optional client hints.
        meta: optional JSON metadata (wire name ``_meta``).
    """

    text: str
    annotations: ContentAnnotations | None = None
    meta: Any = msgspec.field(default=None, name="_meta")


class _Media(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    data: str
    mime_type: str
    annotations: ContentAnnotations | None = None
    meta: Any = msgspec.field(default=None, name="_meta")


class ImageContent(_Media, frozen=True, tag="image", tag_field="type"):
    """A base64-encoded image (``data``, ``mime_type``; optional ``annotations``, ``meta``)."""


class AudioContent(_Media, frozen=True, tag="audio", tag_field="type"):
    """A base64-encoded audio clip (``mime_type`` such as ``audio/wav``)."""


class ResourceLink(
    msgspec.Struct,
    frozen=True,
    tag="resource_link",
    tag_field="type",
    rename="camel",
    omit_defaults=True,
):
    """A reference to a resource the client may read; its contents are not included.

    Attributes:
        uri: the resource's URI.
        name: its programmatic name.
        title: a human-readable name.
        description: what it is.
        mime_type: its MIME type, if known.
        size: its size in bytes before any encoding, if known.
        icons: icons for a UI, as JSON (``[{"src": ..., "mimeType": ...}]``).
        annotations: optional client hints.
        meta: optional JSON metadata (wire name ``_meta``).
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: Any = None
    annotations: ContentAnnotations | None = None
    meta: Any = msgspec.field(default=None, name="_meta")


class ResourceContents(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """The contents of a resource: exactly one of ``text`` or ``blob`` (base64).

    Attributes:
        uri: the resource's URI.
        text: its contents as text.
        blob: its contents as base64-encoded bytes.
        mime_type: its MIME type, if known.
        meta: optional JSON metadata (wire name ``_meta``).

    Raises:
        ValueError: raised when both or neither of ``text`` and ``blob`` are given
            (a ``msgspec.ValidationError`` when decoding).
    """

    uri: str
    text: str | None = None
    blob: str | None = None
    mime_type: str | None = None
    meta: Any = msgspec.field(default=None, name="_meta")

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("resource contents have exactly one of `text` and `blob`")


class EmbeddedResource(
    msgspec.Struct,
    frozen=True,
    tag="resource",
    tag_field="type",
    rename="camel",
    omit_defaults=True,
):
    """A resource's contents carried inside the result.

    ``resource`` holds text or blob contents, told apart by their ``text`` /
    ``blob`` key as on MCP's wire.
    """

    resource: ResourceContents
    annotations: ContentAnnotations | None = None
    meta: Any = msgspec.field(default=None, name="_meta")


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)
"""One block of a result's content, tagged
``type: "text" | "image" | "audio" | "resource_link" | "resource"``."""

CONTENT_BLOCK_TYPES: tuple[type, ...] = (
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
)
"""The classes of :data:`ContentBlock`, for ``type(block) in CONTENT_BLOCK_TYPES``."""


class ToolErrorInfo(msgspec.Struct, frozen=True, rename="camel"):
    """Machine-routable identity of a failure: the error class name and its code."""

    name: str
    code: str


class HookContext(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """Model-facing context for the next request, kept apart from the tool result.

    Attributes:
        content: the blocks to show the model.
        source: who produced it (a plugin or policy name), for audit.
        meta: optional JSON metadata.
    """

    content: tuple[ContentBlock, ...]
    source: str
    meta: Any = None

    def __post_init__(self) -> None:
        # Accept a list at run time (the common literal) and store the frozen form.
        if type(self.content) is not tuple:
            force_setattr(self, "content", tuple(self.content))


class ToolExecutionResult(
    msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, dict=True
):
    """The outcome of one tool call.

    Attributes:
        content: the model-facing blocks; a failure's text is ``Error: <message>``.
        is_error: whether the call failed.
        error: ``{name, code}`` when the failure carries a code, else ``None``.
        additional_contexts: contexts for the next request, in pipeline order.
        meta: the tool's private presentation payload (successful calls only).
        structured_content: the typed value of a tool that declares an output
            (MCP's ``structuredContent``, wire name ``structuredContent``): lossless
            JSON, frozen; ``content`` is its rendering for the model. Kept by a
            post-execute accept, dropped with ``meta`` by a block, an abort or a failure.
    """

    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolErrorInfo | None = None
    additional_contexts: tuple[HookContext, ...] = ()
    meta: Any = None
    structured_content: Any = None

    @property
    def text(self) -> str:
        """The text of the content: every text block's ``text``, concatenated in order.

        Other blocks (images) contribute nothing; a failure reads ``Error: …``.
        """
        return _text_of(self.content)

    @property
    def value(self) -> Any:
        """The result as a JSON value, for observers and policies: ``None`` when it has none.

        A tool that declares an output gives its ``structured_content``; a body that
        returned data (a dict, a list, a record: what toolnursery renders as JSON text)
        gives that data, read back from its text (the rendering is lossless JSON, so
        this is the returned value's JSON form); so does any other result whose whole
        text is one JSON object or array (a mounted MCP tool's). A body that returned a
        JSON scalar as data — a number, a boolean, or a value rendered as a JSON string
        (an enum, a date) — gives that scalar (``42``, ``True``, ``"2026-12-02"``), but
        only on the result the pipeline made from the return: text a body returned
        (``"42"`` as a ``str``), a result rebuilt with other content (a post-execute
        replacement), and one read back from a log or sent from another process are
        text, and their scalar-looking text gives ``None``. A failure, plain prose and
        non-text content give ``None`` (as does a returned ``None``). Decoded once, on
        first read (a mutable value read here is the same object on every read: do not
        change it).
        """
        memo = self.__dict__
        if "_value" in memo:
            return memo["_value"]
        value = self._read_value()
        force_setattr(self, "_value", value)
        return value

    def _read_value(self) -> Any:
        if self.is_error:
            return None
        structured = self.structured_content
        if structured is not None:
            return structured
        content = self.content
        if len(content) != 1 or type(content[0]) is not TextContent:
            return None
        text = content[0].text
        if not text or (text[0] not in "{[" and _RETURNED_VALUE not in self.__dict__):
            return None
        try:
            return _json_value.decode(text)
        except msgspec.DecodeError:
            return None


_json_value = msgspec.json.Decoder()
_RETURNED_VALUE: Final = "_returned_value"


def as_returned_value(result: ToolExecutionResult) -> ToolExecutionResult:
    """``result``, marked as the JSON rendering of a value a body returned (so a scalar's
    text reads back as its :attr:`~ToolExecutionResult.value`)."""
    force_setattr(result, _RETURNED_VALUE, True)
    return result


def with_contexts(
    result: ToolExecutionResult, contexts: tuple[HookContext, ...]
) -> ToolExecutionResult:
    """``result`` with ``contexts`` as its additional contexts: the same content, so what
    is known of it (how its text came to be, its decoded value) is kept."""
    return kept_marks(result, msgspec.structs.replace(result, additional_contexts=contexts))


def kept_marks(source: ToolExecutionResult, result: ToolExecutionResult) -> ToolExecutionResult:
    """``result`` (made from ``source``, with the same content) marked as ``source`` is:
    how its text came to be (a returned ``str``, a returned value's rendering)."""
    marks = source.__dict__
    if marks:
        for mark, value in marks.items():
            if mark != "_value":  # the decoded value is read anew (it may be frozen now)
                force_setattr(result, mark, value)
    return result


class ToolResult(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """What a result presenter sees: the content, whether it failed, ``meta``, and the
    structured value of a tool that declares an output (``None`` otherwise)."""

    content: tuple[ContentBlock, ...]
    is_error: bool
    meta: Any = None
    structured: Any = None

    @property
    def text(self) -> str:
        """The text of the content: every text block's ``text``, concatenated in order."""
        return _text_of(self.content)


def _text_of(content: Sequence[object]) -> str:
    return "".join(block.text for block in content if type(block) is TextContent)


class ToolReturn(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """The object form a tool body may return: content plus private ``meta``.

    ``content`` may be given as any sequence; it is stored as a tuple. ``structured``
    becomes the result's ``structured_content``; a tool with a declared output
    (:func:`~toolnursery.attach_output`) validates it and renders ``content`` from it
    when ``content`` is empty.
    """

    content: Sequence[ContentBlock] = ()
    meta: Any = None
    structured: Any = None

    def __post_init__(self) -> None:
        if type(self.content) is not tuple:
            force_setattr(self, "content", tuple(self.content))


class ToolSchema(msgspec.Struct, frozen=True, rename="camel"):
    """The model-facing projection of a tool: name, description, JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(msgspec.Struct, frozen=True, rename="camel"):
    """One tool call as a model emits it.

    Attributes:
        id: the model's call id.
        name: the tool name.
        arguments: the raw JSON text of the arguments (``""`` means ``{}``; text that
            is not JSON is passed on to the tool as the string itself, except an object
            cut off before its end, as a token limit leaves it, which gets
            ``INVALID_ARGS``), or the
            already-parsed arguments as a mapping (what Anthropic and MCP hand out),
            taken as the value its JSON text would parse to. Any other value gives the
            call an ``INVALID_ARGS`` result; it does not run.
    """

    id: str
    name: str
    arguments: str | dict[str, Any] = ""
