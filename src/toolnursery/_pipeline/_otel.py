"""OpenTelemetry tracing: one span per tool call, with the GenAI semantic conventions.

:func:`install_otel_tracing` adds an outermost ``tools/execute`` wrapper that opens a
span named ``execute_tool {gen_ai.tool.name}`` around the call's dispatch (every inner
wrapper — timeout, retry — and the body), current while the body runs, so spans the
body opens are its children. ``opentelemetry-api`` is imported when the policy is
installed, not when toolnursery is (``pip install -e '.[otel]'``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from .._core._content import ToolExecutionResult
from .._core._execution import ToolDispatchExecution
from ._registry import Disposer, ToolRegistry, ToolScope

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer
else:  # the annotation's name at runtime, for help() and typing.get_type_hints
    try:
        from opentelemetry.trace import Tracer
    except ImportError:  # the extra is optional: install_otel_tracing says so when called
        Tracer = Any

__all__ = ["install_otel_tracing"]

OPERATION: Final = "execute_tool"
_OTHER: Final = "_OTHER"  # the semantic conventions' error.type for an unknown class


def install_otel_tracing(owner: ToolRegistry | ToolScope, tracer: Tracer | None = None) -> Disposer:
    """Trace every call through ``owner``: one span per call.

    Each span is named ``execute_tool {tool name}`` (kind ``INTERNAL``) and carries
    ``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``,
    ``gen_ai.tool.call.id``, ``gen_ai.tool.type = "function"`` and, when the tool is
    visible, ``gen_ai.tool.description``. A result with ``is_error`` sets the span
    status to ``ERROR`` and ``error.type`` to the result's error code (``"_OTHER"``
    when it has none); an exception out of the inner wrappers is recorded on the span,
    which ends with ``error.type`` set to the exception's class name, and propagates.
    A cancellation from an enclosing scope ends the span without marking an error
    (as OpenTelemetry treats ``BaseException``; the call has no result).

    The wrapper is prepended, so it is the outermost one at install time: install it
    after the timeout and retry policies and its span covers every attempt. Calls
    resolved before dispatch (a denial, a guard) open no span.

    Args:
        owner: the registry (every call) or a scope (that scope's calls).
        tracer: the tracer to use; default ``opentelemetry.trace.get_tracer
            ("toolnursery")`` from the global tracer provider.

    Returns:
        A :class:`Disposer` that uninstalls the wrapper.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode
    except ImportError as exc:
        raise ImportError(
            "install_otel_tracing() needs the opentelemetry-api package: pip install -e '.[otel]'"
        ) from exc
    if tracer is None:
        tracer = trace.get_tracer("toolnursery")
    registry = owner if isinstance(owner, ToolRegistry) else owner.registry
    internal = SpanKind.INTERNAL
    use_span = trace.use_span

    async def otel_wrapper(
        execution: ToolDispatchExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        name = execution.name
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": execution.call_id,
            "gen_ai.tool.type": "function",
        }
        definition = registry.get(name, execution.agent)
        if definition is not None and definition.description:
            attributes["gen_ai.tool.description"] = definition.description
        span = tracer.start_span(f"{OPERATION} {name}", kind=internal, attributes=attributes)
        try:
            # The span is current while the body runs; we record outcomes ourselves.
            with use_span(span, record_exception=False, set_status_on_exception=False):
                result = await next()
        except Exception as exc:  # recorded, then re-raised untouched
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            raise
        else:
            if result.is_error:
                error = result.error
                code = error.code if error is not None else _OTHER
                span.set_attribute("error.type", code)
                span.set_status(Status(StatusCode.ERROR, code))
            return result
        finally:
            span.end()

    return owner.on_execute(otel_wrapper, prepend=True)
