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

Every ``execute`` that validates its own arguments carries a mark (:data:`VALIDATES_ATTR`)
saying how: a raw wrapper's check and the body behind it, or ``define_tool``'s parser and
the body that takes the parsed arguments. :func:`argument_check` reads either as one pair,
so the pipeline can check a call's arguments before a person is asked about it and then
run the body on what the check parsed (the check is not repeated).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .._core._bodies import is_async, mark_may_suspend
from .._core._errors import ToolArgsError
from .._core._json import thaw
from ._validator import SchemaCompileError, Validator, compile_schema

__all__ = [
    "VALIDATES_ATTR",
    "ArgumentCheck",
    "RawSchemaError",
    "argument_check",
    "compile_raw_validator",
    "inline_check",
    "mark_validating",
    "mark_wrapper",
    "validating_execute",
]

VALIDATES_ATTR: Final = "__toolnursery_validates__"
"""Set on an ``execute`` that validates its own arguments: the :class:`_Parsing` of
``define_tool``'s (or of a wrapper around a validating ``execute``), or the :class:`_Mark`
of a raw wrapper (which a wrapper around either may copy)."""

ArgumentCheck: TypeAlias = tuple[Callable[[Any], Any], Callable[[Any, Any, Any], Any]]
"""``(parse, run)``: ``parse(args)`` returns the parsed arguments or raises
:class:`ToolArgsError`; ``run(args, parsed, ctx)`` does what ``execute(args, ctx)`` does
after its check (the body's value, or its awaitable for an async ``execute``)."""


class _Parsing:
    """How an ``execute`` checks its arguments: ``execute(args, ctx)`` is
    ``run(args, parse(args), ctx)``. ``parameters``: the raw schema the check is for
    (``None``: ``define_tool``'s own, which no raw schema replaces)."""

    __slots__ = ("execute", "parameters", "parse", "run")

    def __init__(
        self,
        execute: Callable[..., Any],
        parse: Callable[[Any], Any],
        run: Callable[[Any, Any, Any], Any],
        parameters: object = None,
    ) -> None:
        self.execute = execute
        self.parse = parse
        self.run = run
        self.parameters = parameters


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


def mark_validating(
    execute: Callable[..., Any],
    parse: Callable[[Any], Any],
    run: Callable[[Any, Any, Any], Any],
    parameters: object = None,
) -> None:
    """Record that ``execute`` validates its arguments itself, as ``run(args, parse(args),
    ctx)`` (``define_tool``'s does; so does a wrapper around a validating ``execute``)."""
    setattr(execute, VALIDATES_ATTR, _Parsing(execute, parse, run, parameters))


def argument_check(execute: Callable[..., Any]) -> ArgumentCheck | None:
    """``execute``'s argument check split from its body (:data:`ArgumentCheck`), or
    ``None`` when ``execute`` checks nothing, or its mark belongs to another function
    (a wrapper that copied it, but did not say how it checks)."""
    mark = getattr(execute, VALIDATES_ATTR, None)
    if isinstance(mark, _Parsing) and mark.execute is execute:
        return mark.parse, mark.run
    if isinstance(mark, _Mark) and mark.wrapper is execute:
        return _raw_parse(mark.check), _raw_run(mark.body)
    return None


def mark_wrapper(
    wrapper: Callable[..., Any],
    inner: Callable[..., Any],
    around: Callable[[Callable[[Any, Any, Any], Any]], Callable[[Any, Any, Any], Any]],
) -> None:
    """Mark ``wrapper``, which calls the validating ``inner``, as checking the way
    ``inner`` does: its ``run`` is ``around(inner's run)``. Nothing when ``inner``'s
    check cannot be split from its body (:func:`argument_check`)."""
    split = argument_check(inner)
    if split is None:
        return
    parse, run = split
    parameters = getattr(inner, VALIDATES_ATTR).parameters
    setattr(wrapper, VALIDATES_ATTR, _Parsing(wrapper, parse, around(run), parameters))


def _raw_parse(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse(args: Any) -> Any:
        violations = check(args)
        if violations:
            raise ToolArgsError(violations)
        return args

    return parse


def _raw_run(body: Callable[..., Any]) -> Callable[[Any, Any, Any], Any]:
    def run(args: Any, parsed: Any, ctx: Any) -> Any:
        return body(args, ctx)

    return run


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
    if isinstance(mark, _Parsing | _Mark) and (
        mark.parameters is None or mark.parameters is parameters
    ):
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
