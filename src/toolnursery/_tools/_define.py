"""define_tool and @tool: typed tool definitions that validate their arguments.

:func:`define_tool` takes the parameters as a :data:`~toolnursery.SchemaSpec` (the body
receives the validated, frozen argument mapping) or as a frozen :class:`msgspec.Struct`
subclass (the body receives an instance of it) or, with pydantic installed, a
``BaseModel`` subclass. :func:`tool` derives the same from a typed function signature
and its docstring (Google, Sphinx or NumPy style).

Either way the definition's ``execute`` validates before the body runs and raises
:class:`~toolnursery.ToolArgsError` on violations; presenters and the concurrency
classifier validate *softly* — invalid arguments make them answer ``None`` / ``False``
without calling the author's function, because UIs call presenters on replayed logs
and the scheduler must fail closed. All validation work that depends only on the
schema is done here, once per definition.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias, TypeVar, Unpack, overload

import msgspec

from .._core._bodies import is_async, mark_may_suspend
from .._core._content import ToolResult
from .._core._decisions import ResourceKey
from .._core._errors import (
    NotJSONError,
    RegistrationError,
    StrictSchemaError,
    StructSchemaError,
    ToolArgsError,
)
from .._core._execution import ToolRunContext
from .._core._json import snapshot
from ._definition import MAX_TIMEOUT_MS as MAX_TIMEOUT_MS  # re-exported for callers
from ._definition import ToolDefinition, ToolOptionArgs, ToolOptions, option_problem
from ._docstrings import field_docs as _field_docs
from ._docstrings import parse_docstring as parse_docstring
from ._inject import DependsHook
from ._output import OutputRenderer, attach_output
from ._pydantic_params import model_plan, signature_plan, uses_pydantic
from ._raw import mark_validating
from ._schema import SchemaProp, compile_spec
from ._signature import (
    Kind,
    Param,
    closed_plan,
    for_pydantic,
    for_struct,
    invoker,
    read_signature,
)
from ._sinks import merge_sink_markers
from ._strict import from_strict_arguments, strict_json_schema
from ._struct_check import MSGSPEC_FORMATS, field_path, pattern_free, readable
from ._struct_schema import struct_schema
from ._validator import SchemaCompileError, Validator, compile_schema

__all__ = ["define_tool", "tool"]

S = TypeVar("S", bound=msgspec.Struct)

_Parse: TypeAlias = Callable[[Any], Any]
_Invoke: TypeAlias = Callable[[Any, ToolRunContext], Any]


# --- define_tool ----------------------------------------------------------------------


@overload
def define_tool(
    *,
    name: str,
    description: str,
    parameters: type[S],
    execute: Callable[[S, ToolRunContext], Any],
    **options: Unpack[ToolOptionArgs[S]],
) -> ToolDefinition: ...


@overload
def define_tool(
    *,
    name: str,
    description: str,
    parameters: Mapping[str, SchemaProp],
    execute: Callable[[Any, ToolRunContext], Any],
    **options: Unpack[ToolOptionArgs[Any]],
) -> ToolDefinition: ...


def define_tool(
    *,
    name: str,
    description: str,
    parameters: Mapping[str, SchemaProp] | type[msgspec.Struct],
    execute: Callable[[Any, ToolRunContext], Any],
    **options: Unpack[ToolOptionArgs[Any]],
) -> ToolDefinition:
    """Define a tool whose arguments are validated before its body runs.

    Example::

        class ReadArgs(msgspec.Struct, frozen=True):
            path: str
            limit: int | None = None

        async def read(args: ReadArgs, ctx: ToolRunContext) -> str:
            return open(args.path).read()

        read_tool = define_tool(
            name="read", description="Read a file", parameters=ReadArgs, execute=read
        )

    Args:
        name: the tool name the model calls.
        description: the model-facing description.
        parameters: a :data:`SchemaSpec` — the body then receives the frozen argument
            mapping as given (defaults are not applied) — or a ``frozen=True``
            :class:`msgspec.Struct` subclass — the body then receives an instance of it
            (field defaults applied). Nested Structs are inlined into the JSON Schema.
        execute: the body ``(args, ctx)``; an ``async def`` body stays async, a plain
            ``def`` one stays sync (the registry runs it in a worker thread, or inline
            with ``nonblocking=True``).
        **options: the tool's options, keyword-only (:class:`ToolOptionArgs`): every
            field of :class:`ToolOptions` — ``timeout_ms``, ``idempotent``,
            ``max_concurrency``, ``nonblocking``, and the hooks ``is_concurrency_safe``,
            ``concurrency_keys``, ``present_call`` and ``present_result``, which
            receive the *validated* arguments (invalid arguments, or a hook that
            raises, give ``False`` / exclusive / ``None`` without calling it) — plus
            ``output``, a structured-output schema (the subset) or a
            ``msgspec.Struct`` type the body then returns (validated, rendered to
            content, kept as the result's ``structured_content``; see
            :func:`attach_output`), and ``render_output``, ``(args, value) -> str |
            content blocks`` for ``output`` (default: the value as indented JSON).

    Returns:
        A :class:`ToolDefinition` ready to register.

    Raises:
        RegistrationError: an option is unknown or invalid (``timeout_ms`` not a
            positive finite number of at most a year, ``max_concurrency`` not a
            positive ``int``, …), the parameters are neither a valid spec nor a
            frozen Struct subclass, or a Struct field has a type the schema cannot
            express.
    """
    owner = f"define_tool({name})"
    checked, output, render_output, strict = _options(owner, options)
    if not callable(execute):
        raise RegistrationError(f"{owner}: execute must be callable")
    if (
        isinstance(parameters, type)
        and issubclass(parameters, msgspec.Struct)
        and parameters is not msgspec.Struct
    ):
        schema, parse = _struct_plan(parameters, owner, None, "field")
    elif isinstance(parameters, type) and uses_pydantic([parameters]):
        schema, parse = model_plan(parameters, owner, _field_docs(parameters))
    elif isinstance(parameters, Mapping):
        try:
            schema, validate = compile_spec(parameters)
        except (TypeError, ValueError) as exc:
            raise RegistrationError(f"{owner}: {exc}") from exc
        parse = _spec_parser(validate)
    else:
        raise RegistrationError(
            f"{owner}: parameters must be a SchemaSpec (a dict of SchemaProp) "
            "or a frozen msgspec.Struct subclass"
        )
    if strict:
        schema, parse = _strict_plan(owner, schema, parse)
    definition = _definition(name, description, schema, parse, execute, is_async(execute), checked)
    mark_may_suspend(definition.execute, execute)
    return _with_output(owner, definition, output, render_output)


def _options(
    owner: str, given: Mapping[str, Any]
) -> tuple[ToolOptions, Any, OutputRenderer | None, bool]:
    """Check the keyword options once: ``(ToolOptions, output, render_output, strict)``."""
    options = dict(given)
    output = options.pop("output", None)
    render_output = options.pop("render_output", None)
    strict = options.pop("strict", False)
    if type(strict) is not bool:
        raise RegistrationError(f"{owner}: strict must be a bool")
    unknown = sorted(set(options) - set(ToolOptions.__struct_fields__))
    if unknown:
        raise RegistrationError(f"{owner}: unknown option {unknown[0]!r}")
    checked = ToolOptions(**options)
    problem = option_problem(checked)
    if problem is not None:
        raise RegistrationError(f"{owner}: {problem}")
    return checked, output, render_output, strict


def _strict_plan(
    owner: str, schema: dict[str, Any], parse: _Parse
) -> tuple[dict[str, Any], _Parse]:
    """Advertise the provider-strict schema; read ``null`` for an optional as absent."""
    try:
        strict = strict_json_schema(schema)
    except StrictSchemaError as exc:
        raise StrictSchemaError(f"{owner}: {exc}", keyword=exc.keyword, path=exc.path) from None

    def parse_strict(args: Any) -> Any:
        restored = from_strict_arguments(schema, args)
        if restored is not args:
            try:
                restored = snapshot(restored)
            except NotJSONError:
                restored = args
        return parse(restored)

    return strict, parse_strict


def _with_output(
    owner: str,
    definition: ToolDefinition,
    output: Mapping[str, Any] | type[msgspec.Struct] | None,
    render: OutputRenderer | None,
) -> ToolDefinition:
    if output is None:
        if render is not None:
            raise RegistrationError(f"{owner}: render_output needs output")
        return definition
    return attach_output(definition, output, render=render)


def _spec_parser(validate: Validator) -> _Parse:
    def parse(args: Any) -> Any:
        violations = validate(args)
        if violations:
            raise ToolArgsError(violations)
        return args

    return parse


def _definition(
    name: str,
    description: str,
    schema: dict[str, Any],
    parse: _Parse,
    invoke: _Invoke,
    is_async: bool,
    options: ToolOptions,
) -> ToolDefinition:
    execute: Callable[[Any, ToolRunContext], Any]
    if is_async:

        async def execute_async(args: Any, ctx: ToolRunContext) -> Any:
            return await invoke(parse(args), ctx)

        execute = execute_async
    else:

        def execute_sync(args: Any, ctx: ToolRunContext) -> Any:
            return invoke(parse(args), ctx)

        execute = execute_sync

    def run(args: Any, parsed: Any, ctx: ToolRunContext) -> Any:
        return invoke(parsed, ctx)

    # Validated above: the raw-schema check is not repeated; the pipeline may parse
    # before asking a person about the call, then run the body on what it parsed.
    mark_validating(execute, parse, run)
    fields = msgspec.structs.asdict(options)
    for hook, soften in _SOFT_HOOKS.items():
        if fields[hook] is not None:
            fields[hook] = soften(parse, fields[hook])
    return ToolDefinition(name, description, schema, execute, **fields)


_INVALID: Any = object()


def _try_parse(parse: _Parse, args: Any) -> Any:
    try:
        return parse(args)
    except Exception:
        return _INVALID


def _soft_classifier(parse: _Parse, classifier: Callable[[Any], object]) -> Callable[[Any], Any]:
    def is_concurrency_safe(args: Any) -> Any:
        typed = _try_parse(parse, args)
        if typed is _INVALID:
            return False
        try:
            return classifier(typed)
        except Exception:
            return False

    is_concurrency_safe.__wrapped__ = classifier  # type: ignore[attr-defined]  # (what MCP serving reads)
    return is_concurrency_safe


def _soft_keys(parse: _Parse, keys: Callable[[Any], Iterable[ResourceKey]]) -> Callable[[Any], Any]:
    def concurrency_keys(args: Any) -> Any:
        typed = _try_parse(parse, args)
        if typed is _INVALID:
            return None  # not an iterable of keys: the registry classifies it exclusive
        try:
            return keys(typed)
        except Exception:
            return None

    return concurrency_keys


def _soft_call(parse: _Parse, presenter: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def present_call(args: Any) -> Any:
        typed = _try_parse(parse, args)
        if typed is _INVALID:
            return None
        try:
            return presenter(typed)
        except Exception:
            return None

    return present_call


def _soft_result(
    parse: _Parse, presenter: Callable[[Any, ToolResult], Any]
) -> Callable[[Any, ToolResult], Any]:
    def present_result(args: Any, result: ToolResult) -> Any:
        typed = _try_parse(parse, args)
        if typed is _INVALID:
            return None
        try:
            return presenter(typed, result)
        except Exception:
            return None

    return present_result


_SOFT_HOOKS: dict[str, Callable[[_Parse, Any], Callable[..., Any]]] = {
    "is_concurrency_safe": _soft_classifier,
    "concurrency_keys": _soft_keys,
    "present_call": _soft_call,
    "present_result": _soft_result,
}
"""The options that receive the call's arguments: each gets them validated (softly)."""


# --- Struct parameters --------------------------------------------------------------------


def _struct_plan(
    cls: type[msgspec.Struct],
    owner: str,
    descriptions: Mapping[str, str] | None,
    noun: str,
) -> tuple[dict[str, Any], _Parse]:
    """Return the JSON Schema of ``cls`` and a parser ``args -> instance of cls``."""
    if descriptions is None:
        descriptions = _field_docs(cls)
    try:
        schema = struct_schema(cls, descriptions, noun, _field_docs)
        validate = compile_schema(schema, formats=MSGSPEC_FORMATS)
    except StructSchemaError as exc:
        raise RegistrationError(f"{owner}: {exc}") from None
    except SchemaCompileError as exc:
        where = field_path(exc.path)
        raise RegistrationError(f'{owner}: {noun} "{where}": {exc.reason}') from None
    convert = msgspec.convert
    twin = pattern_free(cls)  # msgspec would match patterns again, with Python's re
    target, rebuild = (cls, None) if twin is None else twin

    def parse(args: Any) -> Any:
        violations = validate(args)
        if violations:
            raise ToolArgsError(violations)
        try:
            # Lax mode only widens integral floats to int: the validator has
            # already rejected everything else lax mode would coerce.
            value: Any = convert(args, target, strict=False)
        except msgspec.ValidationError as exc:
            raise ToolArgsError([readable(exc)]) from exc
        return value if rebuild is None else rebuild(value)

    return schema, parse


# --- @tool ------------------------------------------------------------------------------------


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    depends: DependsHook | None = None,
    ignore_unknown_arguments: bool = False,
    **options: Unpack[ToolOptionArgs[Any]],
) -> ToolDefinition: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    depends: DependsHook | None = None,
    ignore_unknown_arguments: bool = False,
    **options: Unpack[ToolOptionArgs[Any]],
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    depends: DependsHook | None = None,
    ignore_unknown_arguments: bool = False,
    **options: Unpack[ToolOptionArgs[Any]],
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Turn a typed function into a :class:`ToolDefinition` (use as ``@tool`` or ``@tool(...)``).

    The decorated name is bound to the **definition**, not to the function: register
    it, or call ``definition.execute(args, ctx)``. The tool's parameters are the
    function's annotated parameters (a parameter with a default is optional), except
    two kinds the model never sees: one annotated :class:`ToolRunContext` (or
    ``ToolRunContext[Deps]``) receives the run context, and one marked
    :func:`Depends` — its default, or ``Annotated[T, Depends(...)]`` — receives a
    value resolved from the run's ``deps`` for each call (a missing one fails the call
    with :class:`DependencyError`, naming the parameter, before the body runs).
    The name defaults to the function's name, the description to the docstring's
    summary and free text (no section: arguments, returns, raises, examples), and each
    parameter's description comes from the docstring's entry for it (Google, Sphinx or
    NumPy style; line breaks kept), or, overriding it, ``Annotated[T, "text"]`` or
    ``Annotated[T, msgspec.Meta(description=...)]``. Supported annotations: ``str``,
    ``int``, ``float``, ``bool``, ``datetime``, ``date``, ``time``, ``timedelta``,
    ``UUID``, ``Decimal``, ``Literal``/``Enum``, unions of those, ``list``,
    ``tuple[T, ...]``, ``set``, ``dict`` (string keys), frozen Structs, TypedDict,
    dataclass and attrs classes (the body receives instances of them), ``T | None``,
    ``Any``, ``Annotated[T, msgspec.Meta(...)]``; with pydantic installed,
    ``BaseModel`` parameters and ``pydantic.Field`` / ``annotated_types`` metadata
    (the whole signature is then checked by pydantic, ``msgspec.Meta`` included).
    Any other ``Annotated`` metadata is refused on either path. Annotations must be
    resolvable at decoration time. The schema is the same whichever path reads the
    signature: records inlined, no ``title`` keywords.

    An argument the function does not take refuses the call before the body runs
    (``unknown argument "extra" (the tool takes: foo, bar)``), and the schema says so
    with ``"additionalProperties": false``; ``ignore_unknown_arguments=True`` accepts
    and drops such arguments instead (the schema then allows them). An argument
    naming the context or an injected parameter is refused either way (``argument
    "inbox" is supplied by the host, not the model``).

    Example::

        @tool(timeout_ms=5_000)
        async def grep(pattern: str, path: str = ".", ctx: ToolRunContext) -> str:
            \"\"\"Search files for a regular expression.

            Args:
                pattern: the regular expression.
                path: the directory to search.
            \"\"\"

    The hooks (classifiers and presenters) receive the validated arguments as a
    frozen Struct whose attributes are the parameters (``lambda a:
    a.path.startswith("/")``).

    Args:
        fn: the function (when used as a bare ``@tool``).
        name: the tool name; defaults to ``fn.__name__``.
        description: the model-facing description; defaults to the docstring summary.
        depends: maps another library's dependency markers to :func:`Depends`:
            called with each ``Annotated`` metadata item and each default value, it
            returns a :class:`Dependency` to inject the parameter, or ``None``
            (``lambda m: Depends(m.name) if isinstance(m, TheirDepends) else None``).
        ignore_unknown_arguments: accept arguments the function does not take, and
            drop them before the body runs (default: refuse the call, naming them);
            one naming the context or an injected parameter is refused still.
        **options: the tool's options, as for :func:`define_tool`.

    Returns:
        The definition, or (when called without ``fn``) a decorator producing it.

    Raises:
        RegistrationError: a parameter is unannotated, variadic, has an annotation
            the schema cannot express or ``Annotated`` metadata nothing reads (the
            message names the parameter), a ``Depends()`` without a dependency
            annotates no class, a sync body depends on an async callable, or an
            option is unknown or invalid.
    """

    def decorate(function: Callable[..., Any]) -> ToolDefinition:
        tool_name = name if name is not None else getattr(function, "__name__", "tool")
        owner = f"@tool {tool_name}"
        checked, output, render_output, strict = _options(owner, options)
        if type(ignore_unknown_arguments) is not bool:
            raise RegistrationError(f"{owner}: ignore_unknown_arguments must be a bool")
        definition = _tool_from_function(
            function, tool_name, description, checked, strict, depends, ignore_unknown_arguments
        )
        return _with_output(owner, definition, output, render_output)

    if fn is None:
        return decorate
    return decorate(fn)


def _tool_from_function(
    fn: Callable[..., Any],
    tool_name: str,
    description: str | None,
    options: ToolOptions,
    strict: bool,
    depends: DependsHook | None = None,
    ignore_unknown: bool = False,
) -> ToolDefinition:
    owner = f"@tool {tool_name}"
    options = merge_sink_markers(fn, options)
    body_async = is_async(fn)
    params, plan, pydantic_seen = read_signature(fn, owner, depends, body_async)
    doc = getattr(fn, "__doc__", None)  # as written: whether a summary line opens it
    summary, arg_docs = parse_docstring(doc if isinstance(doc, str) else inspect.getdoc(fn))
    defaults = [p.default for p in params]
    if pydantic_seen or uses_pydantic([p.annotation for p in params], defaults):
        params, converters = for_pydantic(params, owner)
        schema, parse = signature_plan(
            tool_name, owner, [tuple(p) for p in params], arg_docs, inspect.Parameter.empty
        )
    else:
        params, converters = for_struct(params, owner)
        schema, parse = _signature_struct_plan(fn, tool_name, owner, params, arg_docs)
    if converters:
        plan = [
            p._replace(kind=Kind.CONVERTED, payload=converters[p.name])
            if p.name in converters
            else p
            for p in plan
        ]
    hosted = [p.name for p in plan if p.kind is Kind.CONTEXT or p.kind is Kind.INJECTED]
    names = [p.name for p in params]
    schema, parse = closed_plan(schema, parse, names, hosted, closed=not ignore_unknown)
    if strict:
        schema, parse = _strict_plan(owner, schema, parse)
    invoke, suspends = invoker(fn, plan, body_async)
    definition = _definition(
        tool_name,
        description if description is not None else summary,
        schema,
        parse,
        invoke,
        body_async,
        options,
    )
    mark_may_suspend(definition.execute, suspends)
    return definition


def _signature_struct_plan(
    fn: Callable[..., Any],
    tool_name: str,
    owner: str,
    params: list[Param],
    arg_docs: Mapping[str, str],
) -> tuple[dict[str, Any], _Parse]:
    fields = [(n, a) if d is inspect.Parameter.empty else (n, a, d) for n, a, d in params]
    try:
        args_type = msgspec.defstruct(
            f"{tool_name}_args", fields, frozen=True, kw_only=True, module=fn.__module__
        )
    except (TypeError, ValueError) as exc:
        raise RegistrationError(f"{owner}: {exc}") from exc
    return _struct_plan(args_type, owner, arg_docs, "parameter")
