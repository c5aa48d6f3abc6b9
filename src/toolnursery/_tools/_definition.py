"""ToolDefinition: a registered tool — its model-facing schema plus host-only parts.

A tool's *options* (everything but the four model-facing parts) are declared once, in
:class:`ToolOptions`; :class:`ToolDefinition` extends it, and :func:`define_tool` and
:func:`tool` take the same options as keyword arguments typed by
:class:`ToolOptionArgs`. :func:`option_problem` is the one place their values are
checked, for the registry and for both constructors.

Adding an option:

1. a field on :class:`ToolOptions` (type, default, an ``Attributes:`` entry);
2. the same key on :class:`ToolOptionArgs` (a test keeps the two in step);
3. if its values are constrained, a check in :func:`option_problem`; if it is a hook
   that receives the call's arguments, an entry in ``_define._SOFT_HOOKS`` so
   ``define_tool``/``@tool`` hand it the validated arguments.

Nothing else changes: ``ToolDefinition(...)``, ``define_tool``, ``@tool`` and the
registry's check pick the option up.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeAlias, TypedDict, TypeVar

import msgspec

from .._core._content import ContentBlock, ToolResult, ToolReturn
from .._core._decisions import ResourceKey
from .._core._errors import RegistrationError
from .._core._execution import ToolRunContext
from .._core._provenance import Sink, record_steps, sink_kind
from ._annotations import McpAnnotations
from ._presentation import ToolCallView, ToolResultView

__all__ = [
    "MAX_TIMEOUT_MS",
    "ToolBody",
    "ToolBodyReturn",
    "ToolDefinition",
    "ToolOptionArgs",
    "ToolOptions",
    "option_problem",
    "records_problem",
    "sinks_problem",
    "timeout_problem",
]

ToolBodyReturn: TypeAlias = str | ToolReturn | Sequence[ContentBlock] | ContentBlock
"""What a body may return: text, content blocks, or content plus ``meta``."""

ToolBody: TypeAlias = Callable[[Any, ToolRunContext], Awaitable[Any] | Any]
"""A tool body: ``async def`` (runs in the caller's task) or plain ``def`` (runs in a
worker thread via ``trio.to_thread.run_sync``, or inline when declared ``nonblocking``)."""

MAX_TIMEOUT_MS: Final = 31_536_000_000
"""The largest accepted ``timeout_ms``: one year."""

A = TypeVar("A")


class ToolOptions(msgspec.Struct, frozen=True, kw_only=True):
    """A tool's host-side options: never sent to the model, all keyword-only.

    :class:`ToolDefinition` extends this Struct; :func:`define_tool` and
    :func:`tool` accept the same names as keyword arguments.

    Attributes:
        timeout_ms: cooperative time budget in milliseconds (positive, finite, at
            most one year), enforced by the timeout policy.
        is_concurrency_safe: pure classifier ``args -> bool``; only an exact ``True``
            lets the call overlap its siblings.
        present_call: optional ``args -> ToolCallView | None`` for UIs.
        present_result: optional ``(args, ToolResult) -> ToolResultView | None``.
        idempotent: the tool may safely run again for the same arguments (a retry
            policy refuses tools that do not declare it).
        concurrency_keys: pure classifier ``args -> Iterable[ResourceKey]``,
            consulted when ``is_concurrency_safe`` is absent or returns anything but
            ``True`` (one that raises makes the call exclusive): the call may overlap
            its siblings except the earlier calls whose keys conflict with its own
            (``keyed``, see :class:`ToolExecutionMode`). One that raises or returns
            anything but an iterable of ``ResourceKey`` makes the call exclusive.
        max_concurrency: the most bodies of this tool name that run at once through
            the registry it is registered in, across batches and ``execute()``
            calls (a positive ``int``; ``None``: unlimited).
        mcp_annotations: the MCP hints and title the tool is listed with when it is
            served over MCP (:class:`McpAnnotations`); a mounted MCP tool carries its
            server's. They are hints for clients and policies (such as
            :func:`install_destructive_ask`); how the call runs here is decided by
            the other options.
        nonblocking: the body is a plain ``def`` that is cheap and never blocks (no
            I/O, no sleeping, no long computation): it runs inline on the trio thread
            instead of in a worker thread. Nothing can interrupt it while it runs.
            No effect on an ``async def`` body.
        sinks: the parameters where an outbound value lands, each with its
            :class:`Sink` kind or kinds (``{"to": Sink.PARTY}``; ``@tool`` also reads
            ``Annotated[str, Sink.PARTY]``), for provenance policies
            (:func:`install_provenance_guard`). Host-side only: never in the schema.
        records: the fields of this tool's JSON result that hold trusted records, as
            paths (``"contacts[].email"``, ``"[].iban"``, ``"owner"``): a sink value
            equal to such a field counts as a record the model read, not as text
            lifted from a result.
    """

    timeout_ms: float | None = None
    is_concurrency_safe: Callable[[Any], bool] | None = None
    present_call: Callable[[Any], ToolCallView | None] | None = None
    present_result: Callable[[Any, ToolResult], ToolResultView | None] | None = None
    idempotent: bool = False
    concurrency_keys: Callable[[Any], Iterable[ResourceKey]] | None = None
    max_concurrency: int | None = None
    mcp_annotations: McpAnnotations | None = None
    nonblocking: bool = False
    sinks: Mapping[str, Sink | tuple[Sink, ...]] | None = None
    records: tuple[str, ...] = ()


class ToolOptionArgs(TypedDict, Generic[A], total=False):
    """The options :func:`define_tool` and :func:`tool` take as keyword arguments.

    The keys of :class:`ToolOptions` (typed for the arguments ``A`` the hooks
    receive) plus three that shape the definition instead of being stored on it:
    ``output`` and ``render_output`` (see :func:`attach_output`), and ``strict``
    (advertise the provider-strict form of the parameters, see
    :func:`strict_json_schema`; a ``null`` sent for an optional parameter then means
    "absent"). Omitted keys take the defaults of :class:`ToolOptions` (``strict``:
    ``False``).
    """

    timeout_ms: float | None
    is_concurrency_safe: Callable[[A], object] | None
    present_call: Callable[[A], ToolCallView | None] | None
    present_result: Callable[[A, ToolResult], ToolResultView | None] | None
    idempotent: bool
    concurrency_keys: Callable[[A], Iterable[ResourceKey]] | None
    max_concurrency: int | None
    mcp_annotations: McpAnnotations | None
    nonblocking: bool
    sinks: Mapping[str, Sink | tuple[Sink, ...]] | None
    records: tuple[str, ...]
    output: Mapping[str, Any] | type[msgspec.Struct] | None
    render_output: Callable[[Any, Any], str | Sequence[ContentBlock] | ContentBlock] | None
    strict: bool


class _RawOptions(ToolOptions, frozen=True, kw_only=True):
    """The option only a raw definition has (keyword-only, like the others)."""

    validate: bool = True


class ToolDefinition(_RawOptions, frozen=True):
    """A raw tool definition.

    ``parameters`` is JSON Schema projected verbatim to the model. The arguments of
    a call are validated against it before the body runs, by ``jsonschema`` (the
    draft ``$schema`` names, Draft 2020-12 when absent; ``format`` checked for
    ``date``, ``date-time``, ``time``, ``email``, ``uri``, ``uuid`` and more): the
    stored ``execute`` is the body wrapped with that check, compiled once here, and
    a violation raises :class:`ToolArgsError` (an ``INVALID_ARGS`` result; the body
    never runs). ``validate=False`` keeps the body as given (MCP style: the body
    checks, or trusts, its arguments). Definitions from :func:`define_tool` and
    :func:`tool` validate in their own ``execute`` and are not checked twice.
    The model-facing parts may be given positionally; the options
    (:class:`ToolOptions`) are keyword-only.

    Attributes:
        name: the tool name the model calls.
        description: the model-facing description.
        parameters: the JSON Schema of the arguments.
        execute: the body, ``(args, ctx) -> str | ToolReturn | list[ContentBlock]``
            (with ``validate``, the body behind the argument check).
        validate: check the arguments against ``parameters`` before the body
            (default ``True``).

    Raises:
        RegistrationError: (on construction, with ``validate``) ``parameters`` is
            not a valid JSON Schema, or names a ``$schema`` no validator knows.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ToolBody

    def __post_init__(self) -> None:
        if self.validate is not True:
            return
        if not isinstance(self.parameters, dict) or not callable(self.execute):
            return  # not a definition at all: the registry refuses it, by name
        from ._raw import RawSchemaError, validating_execute

        try:
            execute = validating_execute(self.parameters, self.execute)
        except RawSchemaError as exc:
            raise RegistrationError(f'tool "{self.name}" parameters are {exc}') from None
        if execute is not self.execute:
            msgspec.structs.force_setattr(self, "execute", execute)


_HOOKS: Final = ("is_concurrency_safe", "present_call", "present_result", "concurrency_keys")


def timeout_problem(value: object, what: str = "timeout_ms") -> str | None:
    """Return why ``value`` is not a valid time budget in milliseconds, or ``None``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return f"{what} must be a positive finite number"
    if value > MAX_TIMEOUT_MS:
        return f"{what} must be at most one year ({MAX_TIMEOUT_MS} ms)"
    return None


def option_problem(options: ToolOptions) -> str | None:
    """Return the first invalid option of ``options`` as a sentence, or ``None``.

    The one check of option values: the registry runs it on every definition it is
    given, :func:`define_tool` and :func:`tool` before they build one.
    """
    if options.timeout_ms is not None and (problem := timeout_problem(options.timeout_ms)):
        return problem
    limit = options.max_concurrency
    if limit is not None and (type(limit) is not int or limit < 1):
        return f"max_concurrency must be a positive integer, got {limit!r}"
    if type(options.idempotent) is not bool:
        return "idempotent must be a bool"
    hints = options.mcp_annotations
    if hints is not None and not isinstance(hints, McpAnnotations):
        return f"mcp_annotations must be McpAnnotations, not {type(hints).__name__}"
    if type(options.nonblocking) is not bool:
        return "nonblocking must be a bool"
    if isinstance(options, ToolDefinition) and type(options.validate) is not bool:
        return "validate must be a bool"
    for hook in _HOOKS:
        value = getattr(options, hook)
        if value is not None and not callable(value):
            return f"{hook} must be callable"
    problem = sinks_problem(options.sinks)
    if problem is None and isinstance(options, ToolDefinition) and options.sinks:
        problem = _sink_names_problem(options.sinks, options.parameters)
    return problem or records_problem(options.records)


def sinks_problem(sinks: object) -> str | None:
    """Why ``sinks`` is not a mapping of parameter names to sink kinds, or ``None``."""
    if sinks is None:
        return None
    if not isinstance(sinks, Mapping):
        return (
            f"sinks must be a mapping of parameter names to Sink kinds, not {type(sinks).__name__}"
        )
    for name, kinds in sinks.items():
        if not isinstance(name, str) or not name:
            return f"sinks keys must be parameter names, got {name!r}"
        for kind in kinds if isinstance(kinds, tuple | list) else (kinds,):
            try:
                sink_kind(kind)
            except ValueError as exc:
                return f'sinks["{name}"]: {exc}'
    return None


def _sink_names_problem(sinks: Mapping[str, object], parameters: object) -> str | None:
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(properties, dict):
        return None  # a schema without named properties: nothing to check names against
    for name in sinks:
        if name not in properties:
            return f'sinks names "{name}", which is not a parameter of the tool'
    return None


def records_problem(records: object) -> str | None:
    """Why ``records`` is not a tuple of record paths (``contacts[].email``), or ``None``."""
    if type(records) is not tuple:
        return f"records must be a tuple of paths, not {type(records).__name__}"
    for path in records:
        if not isinstance(path, str) or record_steps(path) is None:
            return (
                f"records: {path!r} is not a record path (field names joined by dots, "
                '"[]" after a list: "contacts[].email")'
            )
    return None
