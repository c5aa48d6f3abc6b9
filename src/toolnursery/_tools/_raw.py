"""Raw JSON Schema tools: arguments checked by the validation engine before the body runs.

A :class:`~toolnursery.ToolDefinition` built directly — a mounted MCP tool, an
imported framework tool, a hand-written schema — gets an ``execute`` that validates
the call's arguments against its ``parameters`` first (unless ``validate=False``),
the way ``define_tool``'s does. :func:`compile_raw_validator` does the schema work
once per definition with the engine of :mod:`._validator` (jsonschema-rs): the draft
``$schema`` names (Draft 2020-12 when absent), the schema checked under its
metaschema, nothing retrieved, patterns matched in linear time, formats checked or
refused. Each call then costs one compiled check; violations read like the DSL's
(``missing required property "path"``, ``"limit" must be >= 1``) and are raised as
:class:`~toolnursery.ToolArgsError`, which the registry reports as ``INVALID_ARGS``.

Arguments are read as JSON: a read-only ``dict`` is an object and a ``tuple`` an array
(frozen arguments are made of both).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from .._core._bodies import is_async, mark_may_suspend
from .._core._errors import ToolArgsError
from .._core._json import thaw
from ._validator import SchemaCompileError, Validator, compile_schema

__all__ = [
    "VALIDATES_ATTR",
    "RawSchemaError",
    "compile_raw_validator",
    "inline_check",
    "mark_validating",
    "validating_execute",
]

VALIDATES_ATTR: Final = "__toolnursery_validates__"
"""Set on an ``execute`` that validates its own arguments: ``True`` (``define_tool``'s)
or the :class:`_Mark` of a raw wrapper (which a wrapper around it may copy)."""


class _Mark:
    """What a raw wrapper checks against, and what it wraps."""

    __slots__ = ("body", "check", "parameters", "wrapper")

    def __init__(
        self,
        parameters: object,
        body: Callable[..., Any],
        wrapper: Callable[..., Any],
        check: Callable[[Any], Any],
    ) -> None:
        self.parameters = parameters
        self.body = body
        self.wrapper = wrapper
        self.check = check  # arguments -> their violations (falsy: valid)


def inline_check(
    execute: Callable[..., Any],
) -> tuple[Callable[..., Any], Callable[[Any], Any]] | None:
    """The body behind a raw wrapper made by :func:`validating_execute`, and its check.

    The check is a plain function of the frozen arguments returning their violations
    (a falsy value when they are valid; else the list :class:`ToolArgsError` takes), so
    the pipeline can call it in place of the wrapper, with no coroutine layer around the
    body. ``None``: ``execute`` is not such a wrapper (it is called as it is).
    """
    mark = getattr(execute, VALIDATES_ATTR, None)
    if isinstance(mark, _Mark) and mark.wrapper is execute:
        return mark.body, mark.check
    return None


class RawSchemaError(ValueError):
    """Raised when ``parameters`` is not a schema the engine validates; the message says where."""


def mark_validating(execute: Callable[..., Any]) -> None:
    """Record that ``execute`` validates its arguments itself (``define_tool``'s does)."""
    setattr(execute, VALIDATES_ATTR, True)


def compile_raw_validator(schema: Mapping[str, Any]) -> Validator:
    """Check ``schema`` once and return ``args -> violations`` for it.

    A plain synchronous function: the batch core calls it inline, before dispatch.

    Args:
        schema: a JSON Schema for a tool's arguments; ``$schema`` picks the draft
            (4, 6, 7, 2019-09 or 2020-12; absent means 2020-12).

    Returns:
        A function that never raises: ``[]`` for valid arguments, else the
        violations in the DSL's words; arguments that are not an object give
        ``['"arguments" must be an object']``.

    Raises:
        RawSchemaError: ``$schema`` names no draft the engine knows, the schema is
            invalid under its draft's metaschema (the message names the keyword's
            path), a ``$ref`` does not resolve inside it (nothing is ever
            retrieved), a pattern needs a backtracking regex engine, or a
            ``format`` cannot be checked.
    """
    try:
        schema = thaw(schema)  # a copy of its own, with JSON arrays as lists
    except RecursionError:
        raise RawSchemaError("not a valid JSON Schema: it contains itself") from None
    if not isinstance(schema, dict):
        raise RawSchemaError(f"not a valid JSON Schema: a {type(schema).__name__}, not an object")
    try:
        return compile_schema(schema)
    except SchemaCompileError as exc:
        raise RawSchemaError(str(exc)) from None
    except RecursionError:
        raise RawSchemaError("not a valid JSON Schema: it is nested too deeply") from None


def validating_execute(
    parameters: Mapping[str, Any], execute: Callable[..., Any]
) -> Callable[..., Any]:
    """Return ``execute`` wrapped to validate its arguments against ``parameters``.

    ``execute`` comes back as it is when it already validates them (``define_tool``'s,
    or one made here for the same ``parameters`` object, perhaps wrapped again); a
    wrapper made here for other ``parameters`` is replaced. The wrapper is async
    exactly when ``execute`` is and carries its ``__toolnursery_*`` marks (an output
    schema, whether it may suspend).

    Raises:
        RawSchemaError: as for :func:`compile_raw_validator`.
    """
    mark = getattr(execute, VALIDATES_ATTR, None)
    if mark is True or (isinstance(mark, _Mark) and mark.parameters is parameters):
        return execute
    if isinstance(mark, _Mark) and mark.wrapper is execute:
        execute = mark.body  # the same body, checked against the new parameters
    validate = compile_raw_validator(parameters)
    wrapper: Callable[..., Any]
    if is_async(execute):

        async def execute_async(args: Any, ctx: Any) -> Any:
            violations = validate(args)
            if violations:
                raise ToolArgsError(violations)
            return await execute(args, ctx)

        wrapper = execute_async
    else:

        def execute_sync(args: Any, ctx: Any) -> Any:
            violations = validate(args)
            if violations:
                raise ToolArgsError(violations)
            return execute(args, ctx)

        wrapper = execute_sync
    for attr, value in getattr(execute, "__dict__", {}).items():
        if attr.startswith("__toolnursery_"):
            setattr(wrapper, attr, value)
    mark_may_suspend(wrapper, execute)
    setattr(wrapper, VALIDATES_ATTR, _Mark(parameters, execute, wrapper, validate))
    setattr(wrapper, "__wrapped__", execute)  # noqa: B010 (what inspect.unwrap follows)
    return wrapper
