"""Typed tool outputs: a body returns a value, the model reads its rendering.

:func:`attach_output` gives a definition a declared output — a structured-output
schema (the subset of :mod:`toolnursery._tools._structured`) or a :class:`msgspec.Struct`
type. Its body then returns the *value*; the wrapper validates it, renders it to
model-facing content, and keeps it on the result as ``structured_content`` (MCP's
``structuredContent``), so programmatic callers and post-execute policies read typed
data while the model reads text. A value that does not fit is a
:class:`ToolOutputError` result naming the path — a call that failed, never a crash.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias, cast

import msgspec

from .._core._bodies import is_async, mark_may_suspend
from .._core._content import CONTENT_BLOCK_TYPES, ContentBlock, TextContent, ToolReturn
from .._core._errors import (
    OutputSchemaError,
    RegistrationError,
    ToolError,
    ToolOutputError,
)
from .._core._execution import ToolRunContext
from .._core._json import NotJSONError, snapshot
from ._definition import ToolDefinition
from ._raw import mark_wrapper
from ._structured import assert_supported_output_schema, validate_structured_value

__all__ = [
    "OUTPUT_SCHEMA_ATTR",
    "OutputRenderer",
    "attach_output",
    "output_schema",
]

"""Code of a call whose body returned a value outside its declared output."""

OutputRenderer: TypeAlias = Callable[[Any, Any], str | Sequence[ContentBlock] | ContentBlock]
"""``render(args, value)``: the model-facing content of an output value."""

OUTPUT_SCHEMA_ATTR: Final = "__toolnursery_output_schema__"
"""The tool body attribute that carries its frozen output schema (see :func:`output_schema`)."""


def output_schema(definition: ToolDefinition) -> dict[str, Any] | None:
    """Return the JSON Schema of a definition's declared output, or ``None``.

    The schema is frozen (a read-only mapping with tuples for arrays); for a Struct
    output it is msgspec's schema of the type, rooted at the object itself (nested
    types stay under ``$defs``). It is what an MCP server advertises as a tool's
    ``outputSchema``.
    """
    schema = getattr(definition.execute, OUTPUT_SCHEMA_ATTR, None)
    return schema if isinstance(schema, dict) else None


def attach_output(
    definition: ToolDefinition,
    output: Mapping[str, Any] | type[msgspec.Struct],
    *,
    render: OutputRenderer | None = None,
) -> ToolDefinition:
    """Return ``definition`` with a declared output: its body returns a typed value.

    The new ``execute`` wraps the body (an ``async def`` body stays async, a plain
    ``def`` one stays sync). The body returns the value — a dict for a schema output,
    an instance of the Struct (or a dict that converts to it) for a Struct output —
    or a :class:`ToolReturn` whose ``structured`` is the value (to set ``meta``, or
    to give ``content`` of its own instead of the rendering). The wrapper then:

    1. checks the value is lossless JSON and fits the output (the JSON form of a
       Struct is ``msgspec.to_builtins`` of the converted instance);
    2. renders it: ``render(args, value)`` with the call's arguments and the value
       (the Struct instance, or the frozen dict), or by default the value as JSON
       indented by two spaces;
    3. returns ``ToolReturn(content, meta, structured=<the JSON form>)``, which the
       pipeline puts on the result as ``structured_content``.

    A value that does not fit raises :class:`ToolOutputError` (code
    ``INVALID_TOOL_OUTPUT``) naming every violation with its path (a Struct output
    reports msgspec's first one); a ``render`` that raises or returns something that
    is not content raises ``ToolOutputError("output.render failed: …")``. Either
    becomes an ``is_error`` result; nothing escapes the call.

    Args:
        definition: the tool; its ``execute`` is wrapped, everything else is kept.
        output: a structured-output schema (asserted here, once) or a
            :class:`msgspec.Struct` subclass (its schema derived with msgspec).
        render: ``(args, value) -> str | Sequence[ContentBlock]``; defaults to JSON.

    Returns:
        A new definition; :func:`output_schema` reads its output schema.

    Raises:
        OutputSchemaError: the schema is outside the structured-output subset, or
            the Struct has no object-rooted JSON Schema.
        RegistrationError: ``output`` is neither, ``render`` is not callable, or the
            definition already declares an output.
    """
    name = definition.name
    if output_schema(definition) is not None:
        raise RegistrationError(f'tool "{name}" already declares an output')
    if render is not None and not callable(render):
        raise RegistrationError(f'tool "{name}": render must be callable')
    check: Callable[[Any], tuple[Any, Any]]
    if isinstance(output, type) and issubclass(output, msgspec.Struct):
        schema = _struct_schema(output)
        check = _struct_check(name, output)
    elif isinstance(output, Mapping):
        assert_supported_output_schema(output)
        try:
            frozen = snapshot(output)
        except NotJSONError as exc:
            raise OutputSchemaError([f"schema is not lossless JSON: {exc}"]) from None
        schema = frozen
        check = _schema_check(name, frozen)
    else:
        raise RegistrationError(
            f'tool "{name}": output must be a structured-output schema (a dict) '
            f"or a msgspec.Struct subclass, not {_kind(output)}"
        )
    finish = _finisher(name, check, render)
    body = definition.execute
    wrapper: Callable[[Any, ToolRunContext], Any]
    if is_async(body):

        @functools.wraps(body)
        async def execute_async(args: Any, ctx: ToolRunContext) -> ToolReturn:
            return finish(args, await body(args, ctx))

        wrapper = execute_async
    else:

        @functools.wraps(body)
        def execute_sync(args: Any, ctx: ToolRunContext) -> ToolReturn:
            return finish(args, body(args, ctx))

        wrapper = execute_sync
    setattr(wrapper, OUTPUT_SCHEMA_ATTR, schema)
    mark_may_suspend(wrapper, body)
    mark_wrapper(wrapper, body, functools.partial(_finished_run, finish, is_async(body)))
    return msgspec.structs.replace(definition, execute=wrapper)


def _finished_run(
    finish: Callable[[Any, Any], ToolReturn], is_async: bool, run: Callable[[Any, Any, Any], Any]
) -> Callable[[Any, Any, Any], Any]:
    """The wrapper's ``run`` (see :func:`mark_wrapper`): the body's, then ``finish``."""
    if is_async:

        async def run_async(args: Any, parsed: Any, ctx: Any) -> ToolReturn:
            return finish(args, await run(args, parsed, ctx))

        return run_async

    def run_sync(args: Any, parsed: Any, ctx: Any) -> ToolReturn:
        return finish(args, run(args, parsed, ctx))

    return run_sync


def _kind(value: object) -> str:
    return value.__name__ if isinstance(value, type) else type(value).__name__


def _finisher(
    name: str, check: Callable[[Any], tuple[Any, Any]], render: OutputRenderer | None
) -> Callable[[Any, Any], ToolReturn]:
    def finish(args: Any, returned: Any) -> ToolReturn:
        meta = None
        content: Sequence[ContentBlock] = ()
        value = returned
        if type(returned) is ToolReturn:
            value, meta, content = returned.structured, returned.meta, returned.content
        typed, structured = check(value)
        if not content:
            content = _render(name, render, args, typed, structured)
        return ToolReturn(content, meta, structured)

    return finish


def _render(
    name: str, render: OutputRenderer | None, args: Any, typed: Any, structured: Any
) -> tuple[ContentBlock, ...]:
    if render is None:
        return (TextContent(json.dumps(structured, indent=2, ensure_ascii=False)),)
    try:
        rendered: object = render(args, typed)
    except Exception as exc:
        raise _render_failed(name, _describe(exc)) from exc
    if isinstance(rendered, str):
        return (TextContent(rendered),)
    if isinstance(rendered, CONTENT_BLOCK_TYPES):
        return (cast(ContentBlock, rendered),)
    if isinstance(rendered, Sequence) and all(
        isinstance(block, CONTENT_BLOCK_TYPES) for block in rendered
    ):
        return tuple(rendered)
    raise _render_failed(
        name,
        f"render returned {type(rendered).__name__}; expected a str or a sequence of "
        "content blocks",
    )


def _render_failed(name: str, reason: str) -> ToolOutputError:
    return ToolOutputError(name, (reason,), message=f"output.render failed: {reason}")


def _describe(exc: Exception) -> str:
    if isinstance(exc, ToolError) and isinstance(exc.message, str):
        return exc.message
    try:
        text = str(exc)
    except Exception:
        return "<unprintable thrown value>"
    return text or type(exc).__name__


def _lossless(name: str, value: Any) -> Any:
    try:
        return snapshot(value)
    except NotJSONError as exc:
        raise ToolOutputError(name, [str(exc)]) from None


# -- schema outputs ----------------------------------------------------------------------


def _schema_check(name: str, schema: dict[str, Any]) -> Callable[[Any], tuple[Any, Any]]:
    def check(value: Any) -> tuple[Any, Any]:
        frozen = _lossless(name, value)
        violations = validate_structured_value(schema, frozen)
        if violations:
            raise ToolOutputError(name, violations)
        return frozen, frozen

    return check


# -- Struct outputs ----------------------------------------------------------------------


def _struct_schema(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """msgspec's schema of ``cls``, rooted at the object (``$defs`` kept when used)."""
    if cls.__struct_config__.array_like:
        raise OutputSchemaError(
            [
                f"output Struct {cls.__name__} must not be array_like (structured output is "
                "object-rooted)"
            ]
        )
    try:
        generated = msgspec.json.schema(cls)
    except (TypeError, ValueError, NameError) as exc:  # NameError: an unresolved annotation
        reason = " ".join(str(exc).split())
        raise OutputSchemaError(
            [f"output Struct {cls.__name__} has no JSON Schema: {reason}"]
        ) from exc
    defs: dict[str, Any] = generated.get("$defs", {})
    ref = generated.get("$ref")
    if not isinstance(ref, str):  # pragma: no cover - msgspec refs every Struct
        return dict(snapshot(generated))
    root = dict(defs[ref.rsplit("/", 1)[1]])
    if '"#/$defs/' in json.dumps(root):
        root["$defs"] = defs
    try:
        frozen: dict[str, Any] = snapshot(root)
    except NotJSONError as exc:
        raise OutputSchemaError(
            [f"output Struct {cls.__name__} schema is not JSON: {exc}"]
        ) from exc
    return frozen


_AT: Final = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)
_MISSING: Final = re.compile(r"^Object missing required field `(.*)`$", re.DOTALL)
_UNKNOWN: Final = re.compile(r"^Object contains unknown field `(.*)`$", re.DOTALL)


def _violation(exc: msgspec.ValidationError) -> str:
    """msgspec's message with its ``$`` path rooted at ``value``, in the subset's words."""
    match = _AT.match(str(exc))
    assert match is not None  # the pattern matches any text
    message, path = match[1], "value" + (match[2] or "")
    if (found := _MISSING.match(message)) is not None:
        return f'missing required property "{path}.{found[1]}"'
    if (found := _UNKNOWN.match(message)) is not None:
        return f'"{path}.{found[1]}" is not a declared property'
    return f'"{path}" is invalid: {message}'


def _struct_check(name: str, cls: type[msgspec.Struct]) -> Callable[[Any], tuple[Any, Any]]:
    convert = msgspec.convert
    to_builtins = msgspec.to_builtins

    def check(value: Any) -> tuple[Any, Any]:
        try:
            if isinstance(value, msgspec.Struct):
                # A Struct's constructor checks no types: a round trip through builtins does.
                value = to_builtins(value)
            typed = convert(value, cls)
            builtins = to_builtins(typed)
        except msgspec.ValidationError as exc:
            raise ToolOutputError(name, [_violation(exc)]) from None
        except (TypeError, ValueError) as exc:
            raise ToolOutputError(name, [f"value is not JSON data: {exc}"]) from None
        return typed, _lossless(name, builtins)

    return check
