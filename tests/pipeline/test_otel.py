"""OpenTelemetry tracing: ``install_otel_tracing`` with the SDK's in-memory exporter."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio
import trio.testing
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from toolnursery import (
    Deny,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolError,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    install_timeout_policy,
    run_tool_calls,
)
from toolnursery._core._decisions import PreToolDecision
from toolnursery._pipeline._otel import install_otel_tracing


class QuotaError(ToolError):
    code = "QUOTA"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> trace.Tracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test")


async def body(args: Any, ctx: ToolRunContext) -> str:
    if args.get("fail") == "plain":
        raise RuntimeError("boom")
    if args.get("fail") == "coded":
        raise QuotaError("over quota")
    await trio.sleep(args.get("d", 0))
    return "ok"


def registry_with_tool() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "search",
            "Search the web",
            {"type": "object"},
            body,
            is_concurrency_safe=lambda a: True,
            timeout_ms=1000,
        )
    )
    return registry


def spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def call_id(span: ReadableSpan) -> str:
    return str((span.attributes or {})["gen_ai.tool.call.id"])


async def test_one_span_per_call_with_the_semantic_convention_attributes(
    tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """``execute_tool {name}``, INTERNAL, gen_ai.* attributes, no error on success."""
    registry = registry_with_tool()
    install_otel_tracing(registry, tracer)
    result = await registry.execute(ToolExecutionInput("call-1", "search", {}))
    assert not result.is_error
    (span,) = spans(exporter)
    assert span.name == "execute_tool search"
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Search the web",
    }
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(
    ("fail", "error_type"),
    [("coded", "QUOTA"), ("plain", "_OTHER")],
)
async def test_an_error_result_sets_error_type_and_status(
    tracer: trace.Tracer, exporter: InMemorySpanExporter, fail: str, error_type: str
) -> None:
    """error.type is the result's error code (``_OTHER`` without one); status ERROR."""
    registry = registry_with_tool()
    install_otel_tracing(registry, tracer)
    result = await registry.execute(ToolExecutionInput("c", "search", {"fail": fail}))
    assert result.is_error
    (span,) = spans(exporter)
    assert (span.attributes or {})["error.type"] == error_type
    assert span.status.status_code is StatusCode.ERROR


async def test_a_timeout_is_reported_with_its_code(
    autojump_clock: trio.testing.MockClock,
    tracer: trace.Tracer,
    exporter: InMemorySpanExporter,
) -> None:
    """Installed after the timeout policy, the span encloses it and sees TOOL_TIMEOUT."""
    registry = registry_with_tool()
    install_timeout_policy(registry)
    install_otel_tracing(registry, tracer)
    await registry.execute(ToolExecutionInput("c", "search", {"d": 5}))
    (span,) = spans(exporter)
    assert (span.attributes or {})["error.type"] == "TOOL_TIMEOUT"
    assert span.end_time is not None
    assert span.start_time is not None
    assert span.end_time > span.start_time


async def test_an_exception_from_an_inner_wrapper_is_recorded_and_propagates(
    tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """The wrapper never swallows: the registry still turns the failure into a result."""
    registry = registry_with_tool()

    async def broken(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        raise ValueError("wrapper bug")

    registry.on_execute(broken)
    install_otel_tracing(registry, tracer)
    result = await registry.execute(ToolExecutionInput("c", "search", {}))
    assert result.is_error
    (span,) = spans(exporter)
    assert (span.attributes or {})["error.type"] == "ValueError"
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]


async def test_the_span_is_current_while_the_body_runs(
    tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """A span the body opens is a child of the call's span (trio tasks carry the context)."""
    registry = ToolRegistry()

    async def traced(args: Any, ctx: ToolRunContext) -> str:
        with tracer.start_as_current_span("inner"):
            return "ok"

    registry.register(ToolDefinition("t", "t", {}, traced, is_concurrency_safe=lambda a: True))
    install_otel_tracing(registry, tracer)
    await run_tool_calls(registry, [ToolCall("c1", "t", "{}"), ToolCall("c2", "t", "{}")])
    finished = spans(exporter)
    outer = {call_id(s): s for s in finished if s.name != "inner"}
    inner = [s for s in finished if s.name == "inner"]
    assert sorted(outer) == ["c1", "c2"]
    assert len(inner) == 2
    parents = {s.parent.span_id for s in inner if s.parent is not None}
    assert parents == {s.context.span_id for s in outer.values()}


async def test_a_batch_opens_one_span_per_dispatched_call(
    tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """A denied call is resolved before dispatch: no span for it."""
    registry = registry_with_tool()

    async def deny(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        return Deny("no") if execution.call_id == "c2" else await next_()

    registry.on_pre_execute(deny)
    install_otel_tracing(registry, tracer)
    calls = [ToolCall(f"c{i}", "search", "{}") for i in range(1, 4)]
    await run_tool_calls(registry, calls)
    ids = sorted(call_id(s) for s in spans(exporter))
    assert ids == ["c1", "c3"]


async def test_a_scope_install_traces_only_that_scopes_calls_and_disposes(
    tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """Installed on a scope: only its calls; the disposer uninstalls."""
    registry = registry_with_tool()
    scope = registry.scope()
    dispose = install_otel_tracing(scope, tracer)
    await registry.execute(ToolExecutionInput("global", "search", {}))
    await registry.execute(ToolExecutionInput("scoped", "search", {}, agent=scope))
    dispose()
    await registry.execute(ToolExecutionInput("after", "search", {}, agent=scope))
    assert [call_id(s) for s in spans(exporter)] == ["scoped"]


async def test_the_default_tracer_comes_from_the_global_provider(
    monkeypatch: pytest.MonkeyPatch, tracer: trace.Tracer, exporter: InMemorySpanExporter
) -> None:
    """Without a tracer, ``trace.get_tracer("toolnursery")`` is used."""
    asked: list[str] = []

    def get_tracer(name: str, *args: Any, **kwargs: Any) -> trace.Tracer:
        asked.append(name)
        return tracer

    monkeypatch.setattr(trace, "get_tracer", get_tracer)
    registry = registry_with_tool()
    install_otel_tracing(registry)
    await registry.execute(ToolExecutionInput("c", "search", {}))
    assert asked == ["toolnursery"]
    assert len(spans(exporter)) == 1


def test_a_missing_opentelemetry_api_is_a_clear_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The message says which extra to install."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[otel\]'"):
        install_otel_tracing(ToolRegistry())
