"""The retry policy on trio's autojump clock.

Every test installs the retry policy as the only (or innermost) execute wrapper, so a
second ``next()`` re-runs the base dispatch whether or not wrappers are position-bound.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnursery import (
    CancelSignal,
    HookContext,
    RegistrationError,
    TextContent,
    ToolDefinition,
    ToolDispatchExecution,
    ToolError,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
    install_timeout_policy,
    thaw,
)
from toolnursery._pipeline._retry import install_retry_policy

Next = Callable[[], Awaitable[ToolExecutionResult]]


class Flaky(ToolError):
    code = "FLAKY"


class DnsFlaky(Flaky):
    """A subclass: ``exceptions=(Flaky,)`` covers it by class name."""

    code = "DNS"


class Recorder:
    """A body that fails with ``failures[i]`` on attempt ``i`` and then succeeds."""

    def __init__(self, *failures: BaseException, result: Any = "ok") -> None:
        self.failures = list(failures)
        self.result = result
        self.contexts: list[ToolRunContext] = []
        self.times: list[float] = []

    @property
    def calls(self) -> int:
        return len(self.contexts)

    async def __call__(self, args: Any, ctx: ToolRunContext) -> Any:
        self.contexts.append(ctx)
        self.times.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        if self.failures:
            raise self.failures.pop(0)
        return self.result


def _tool(name: str, body: Any, *, idempotent: bool = True) -> ToolDefinition:
    return ToolDefinition(name, "t", {"type": "object"}, body, idempotent=idempotent)


def _flaky(n: int) -> list[BaseException]:
    return [ToolError(f"flaky {i + 1}", code="FLAKY") for i in range(n)]


async def _run(registry: ToolRegistry, name: str = "t", **kw: Any) -> ToolExecutionResult:
    return await registry.execute(ToolExecutionInput("c1", name, {}, **kw))


def _gaps(times: list[float]) -> list[float]:
    return [round((b - a) * 1000, 6) for a, b in itertools.pairwise(times)]


# -- what is retried ------------------------------------------------------------------


async def test_retries_a_listed_code_until_success(autojump_clock: trio.testing.MockClock) -> None:
    body = Recorder(*_flaky(2))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], attempts=5, jitter=0)
    result = await _run(registry)
    assert result == ToolExecutionResult((TextContent("ok"),), False, meta={"attempts": 3})
    assert body.calls == 3


async def test_gives_up_after_attempts_with_the_last_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(10))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], attempts=3, jitter=0)
    result = await _run(registry)
    assert result == ToolExecutionResult(
        (TextContent("Error: flaky 3"),),
        True,
        ToolErrorInfo("ToolError", "FLAKY"),
        meta={"attempts": 3},
    )
    assert body.calls == 3


@pytest.mark.parametrize(
    "failure",
    [
        ToolError("no such file", code="ENOENT"),
        ValueError("a plain exception leaves no code"),
        ToolError("bad", code="INVALID_ARGS"),
    ],
)
async def test_an_unlisted_failure_is_not_retried(failure: BaseException) -> None:
    body = Recorder(failure)
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])
    result = await _run(registry)
    assert result.is_error
    assert result.meta == {"attempts": 1}
    assert body.calls == 1


async def test_a_success_is_not_retried() -> None:
    body = Recorder()
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])
    result = await _run(registry)
    assert result == ToolExecutionResult((TextContent("ok"),), False, meta={"attempts": 1})
    assert body.calls == 1


async def test_attempts_one_never_retries() -> None:
    body = Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], attempts=1)
    result = await _run(registry)
    assert result.error == ToolErrorInfo("ToolError", "FLAKY")
    assert result.meta == {"attempts": 1}
    assert body.calls == 1


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"rows": 3}, {"rows": 3, "attempts": 2}),
        ({"attempts": "the tool's own"}, {"attempts": 2}),
        (["not", "a", "dict"], {"attempts": 2, "meta": ["not", "a", "dict"]}),
        ("text", {"attempts": 2, "meta": "text"}),
    ],
)
async def test_a_success_keeps_its_own_meta_beside_the_attempt_count(
    autojump_clock: trio.testing.MockClock, meta: Any, expected: Any
) -> None:
    body = Recorder(*_flaky(1), result=ToolReturn([TextContent("ok")], meta=meta))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])
    result = await _run(registry)
    assert thaw(result.meta) == expected
    assert not result.is_error


async def test_exceptions_match_the_class_name_and_its_subclasses(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(Flaky("first"), DnsFlaky("second"), ToolError("third", code="OTHER"))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, exceptions=(Flaky,), attempts=5, jitter=0)
    result = await _run(registry)
    assert result.error == ToolErrorInfo("ToolError", "OTHER")
    assert result.meta == {"attempts": 3}
    assert body.calls == 3


async def test_a_listed_exception_raised_by_an_inner_wrapper_is_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder()
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, exceptions=(Flaky,), jitter=0)
    raised: list[int] = []

    async def flaky_once(execution: ToolDispatchExecution, next: Next) -> ToolExecutionResult:
        if not raised:
            raised.append(1)
            raise Flaky("gateway hiccup")
        return await next()

    registry.on_execute(flaky_once)
    result = await _run(registry)
    assert result == ToolExecutionResult((TextContent("ok"),), False, meta={"attempts": 2})
    assert body.calls == 1


async def test_an_inner_wrapper_raising_on_the_last_attempt_keeps_its_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    registry = ToolRegistry()
    registry.register(_tool("t", Recorder()))
    install_retry_policy(registry, exceptions=(Flaky,), attempts=1)

    async def broken(execution: ToolDispatchExecution, next: Next) -> ToolExecutionResult:
        raise Flaky("gateway down")

    registry.on_execute(broken)
    result = await _run(registry)
    assert result.content == (TextContent("Error: gateway down"),)
    assert result.error == ToolErrorInfo("Flaky", "FLAKY")


# -- idempotency ----------------------------------------------------------------------


async def test_a_non_idempotent_tool_is_left_alone_when_no_tools_are_named(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("t", body, idempotent=False))
    install_retry_policy(registry, codes=["FLAKY"])
    result = await _run(registry)
    assert result.error == ToolErrorInfo("ToolError", "FLAKY")
    assert result.meta is None
    assert body.calls == 1


async def test_only_named_tools_are_retried(autojump_clock: trio.testing.MockClock) -> None:
    named, other = Recorder(*_flaky(1)), Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("named", named))
    registry.register(_tool("other", other))
    install_retry_policy(registry, codes=["FLAKY"], tools=["named", "not-yet-registered"])
    assert (await _run(registry, "named")).meta == {"attempts": 2}
    assert (await _run(registry, "other")).meta is None
    assert (named.calls, other.calls) == (2, 1)


def test_installing_refuses_a_named_tool_that_is_not_idempotent() -> None:
    registry = ToolRegistry()
    registry.register(_tool("write", Recorder(), idempotent=False))
    with pytest.raises(RegistrationError, match='tool "write" is named by a retry policy'):
        install_retry_policy(registry, codes=["FLAKY"], tools=["write"])


async def test_registering_a_named_non_idempotent_tool_later_is_refused_and_rolled_back() -> None:
    registry = ToolRegistry()
    dispose = install_retry_policy(registry, codes=["FLAKY"], tools=["write"])
    with pytest.raises(RegistrationError, match='tool "write" is named by a retry policy'):
        registry.register(_tool("write", Recorder(), idempotent=False))
    assert registry.get("write") is None
    assert [s.name for s in registry.schemas()] == []
    idempotent = _tool("write", Recorder())
    registry.register(idempotent)
    assert registry.get("write") is idempotent
    registry.register(_tool("other", Recorder(), idempotent=False))  # not named: fine
    dispose()
    registry.register(_tool("write2", Recorder(), idempotent=False))
    assert registry.get("write2") is not None


async def test_disposing_lifts_the_registration_check() -> None:
    registry = ToolRegistry()
    install_retry_policy(registry, codes=["FLAKY"], tools=["write"])()
    definition = _tool("write", Recorder(), idempotent=False)
    registry.register(definition)
    assert registry.get("write") is definition


async def test_a_scope_policy_checks_every_layer_it_inherits() -> None:
    registry = ToolRegistry()
    parent = registry.scope()
    child = registry.scope(parent)
    registry.register(_tool("global", Recorder(), idempotent=False))
    parent.restrict(deny=["global"])
    with pytest.raises(RegistrationError, match='"global"'):
        install_retry_policy(child, codes=["FLAKY"], tools=["global"])
    install_retry_policy(child, codes=["FLAKY"], tools=["write"])
    for owner in (registry, parent, child):
        with pytest.raises(RegistrationError, match='"write"'):
            owner.register(_tool("write", Recorder(), idempotent=False))
    assert registry.get("write", child) is None
    unrelated = registry.scope()
    unrelated.register(_tool("write", Recorder(), idempotent=False))  # not in the chain
    child.close()
    registry.register(_tool("write", Recorder(), idempotent=False))  # the check left with it
    assert registry.get("write") is not None


async def test_a_tool_replaced_by_a_non_idempotent_one_during_backoff_is_not_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first = Recorder(*_flaky(5))
    replacement = Recorder()
    registry = ToolRegistry()
    dispose_first = registry.register(_tool("t", first))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=1000, jitter=0)
    results: list[ToolExecutionResult] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await _run(registry))

        nursery.start_soon(run)
        await trio.sleep(0.5)
        dispose_first()
        registry.register(_tool("t", replacement, idempotent=False))
    assert results[0].error == ToolErrorInfo("ToolError", "FLAKY")
    assert results[0].meta == {"attempts": 1}
    assert (first.calls, replacement.calls) == (1, 0)


# -- backoff ----------------------------------------------------------------------------


async def test_backoff_is_exponential_and_capped(autojump_clock: trio.testing.MockClock) -> None:
    body = Recorder(*_flaky(5))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(
        registry, codes=["FLAKY"], attempts=6, backoff_ms=100, max_backoff_ms=300, jitter=0
    )
    await _run(registry)
    assert _gaps(body.times) == [100, 200, 300, 300, 300]


async def test_jitter_spreads_each_backoff_and_never_passes_the_cap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    draws: Iterator[float] = iter([0.0, 1.0, 0.5, 0.25])
    body = Recorder(*_flaky(4))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(
        registry,
        codes=["FLAKY"],
        attempts=5,
        backoff_ms=100,
        max_backoff_ms=250,
        multiplier=2,
        jitter=0.5,
        random=lambda: next(draws),
    )
    await _run(registry)
    # bases 100, 200, 250, 250; factors 0.5, 1.5, 1.0, 0.75; capped at 250
    assert _gaps(body.times) == [50, 250, 250, 187.5]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    jitter=st.floats(0, 1),
    u=st.floats(0, 1, exclude_max=True),
    base=st.floats(0, 4000),
)
async def test_a_jittered_backoff_stays_within_its_bounds(
    autojump_clock: trio.testing.MockClock, jitter: float, u: float, base: float
) -> None:
    body = Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(
        registry,
        codes=["FLAKY"],
        backoff_ms=base,
        max_backoff_ms=4000,
        jitter=jitter,
        random=lambda: u,
    )
    await _run(registry)
    (gap,) = _gaps(body.times)
    low = min(base, 4000) * (1 - jitter)
    high = min(4000, min(base, 4000) * (1 + jitter))
    assert low - 1e-3 <= gap <= high + 1e-3


async def test_no_jitter_never_draws() -> None:
    def refuse() -> float:
        raise AssertionError("random() called with jitter=0")

    body = Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=0, jitter=0, random=refuse)
    assert (await _run(registry)).meta == {"attempts": 2}


# -- cancellation -----------------------------------------------------------------------


async def test_an_abort_during_backoff_ends_it_at_once_with_the_last_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(5))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=10_000, jitter=0)
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await _run(registry, signal=signal))
            results_at.append(trio.current_time())

        results_at: list[float] = []
        nursery.start_soon(run)
        await trio.sleep(1)
        signal.cancel("user stop")
    assert results_at[0] - start == pytest.approx(1)
    assert results[0] == ToolExecutionResult(
        (TextContent("Error: flaky 1"),),
        True,
        ToolErrorInfo("ToolError", "FLAKY"),
        meta={"attempts": 1},
    )
    assert body.calls == 1


async def test_a_signal_fired_before_the_backoff_skips_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    signal = CancelSignal()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        signal.cancel("abort while failing")
        raise ToolError("flaky", code="FLAKY")

    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=10_000)
    start = trio.current_time()
    result = await _run(registry, signal=signal)
    assert trio.current_time() == start
    assert result.error == ToolErrorInfo("ToolError", "FLAKY")
    assert result.meta == {"attempts": 1}


async def test_an_enclosing_cancel_scope_during_backoff_propagates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(5))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=10_000)
    results: list[ToolExecutionResult] = []
    with trio.move_on_after(2) as scope:
        results.append(await _run(registry))
    assert scope.cancelled_caught
    assert results == []
    assert body.calls == 1


async def test_an_outer_timeout_covers_every_attempt_and_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(10))
    registry = ToolRegistry()
    registry.register(
        ToolDefinition("t", "t", {"type": "object"}, body, timeout_ms=250, idempotent=True)
    )
    install_timeout_policy(registry)  # outermost: one budget for the whole call
    install_retry_policy(registry, codes=["FLAKY"], attempts=10, backoff_ms=100, jitter=0)
    start = trio.current_time()
    result = await _run(registry)
    assert trio.current_time() - start == pytest.approx(0.25)
    assert result.error == ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT")
    # attempt 2 at 100ms; the 200ms backoff after it is cut short by the deadline
    assert _gaps(body.times) == [100]


# -- identity, contexts, scopes ---------------------------------------------------------


async def test_each_attempt_is_a_fresh_body_run_under_the_same_execution(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(2))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])
    await registry.execute(ToolExecutionInput("call-7", "t", {"q": 1}))
    first, second, third = body.contexts
    assert first is not second
    assert second is not third
    assert first.token is second.token is third.token
    assert {c.call_id for c in body.contexts} == {"call-7"}
    assert [dict(c.arguments) for c in body.contexts] == [{"q": 1}] * 3


async def test_contexts_deferred_by_every_attempt_are_kept_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempt = 0

    async def body(args: Any, ctx: ToolRunContext) -> str:
        nonlocal attempt
        attempt += 1
        ctx.defer_context(HookContext((TextContent(f"attempt {attempt}"),), "body"))
        if attempt < 3:
            raise ToolError("flaky", code="FLAKY")
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])
    result = await _run(registry)
    assert [c.content for c in result.additional_contexts] == [
        (TextContent("attempt 1"),),
        (TextContent("attempt 2"),),
        (TextContent("attempt 3"),),
    ]


async def test_a_scope_policy_applies_only_to_that_scopes_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = Recorder(*_flaky(3))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    agent = registry.scope()
    nested = registry.scope(agent)
    other = registry.scope()
    install_retry_policy(agent, codes=["FLAKY"], jitter=0)
    assert (await _run(registry)).meta is None
    assert (await _run(registry, agent=other)).meta is None
    assert body.calls == 2
    assert (await _run(registry, agent=nested)).meta == {"attempts": 2}
    assert body.calls == 4


async def test_disposing_uninstalls_the_wrapper() -> None:
    body = Recorder(*_flaky(1))
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])()
    result = await _run(registry)
    assert result.meta is None
    assert body.calls == 1


async def test_a_sync_body_is_retried_in_a_fresh_thread_each_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    runs: list[str] = []

    def body(args: Any, ctx: ToolRunContext) -> str:
        runs.append(ctx.call_id)
        if len(runs) < 2:
            raise ToolError("flaky", code="FLAKY")
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=0)
    result = await _run(registry)
    assert result.content == (TextContent("ok"),)
    assert runs == ["c1", "c1"]


# -- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "would retry nothing"),
        ({"codes": "FLAKY"}, "codes must be a collection of strings, not a string"),
        ({"codes": [1]}, "codes must hold strings"),
        ({"codes": 5}, "codes must be a collection"),
        ({"exceptions": (ValueError,)}, "exceptions must be ToolError subclasses, got ValueError"),
        ({"exceptions": [Flaky]}, "exceptions must be a tuple"),
        ({"exceptions": ("Flaky",)}, "exceptions must be ToolError subclasses"),
        ({"codes": ["X"], "attempts": 0}, "attempts must be a positive int"),
        ({"codes": ["X"], "attempts": 2.0}, "attempts must be a positive int"),
        ({"codes": ["X"], "attempts": True}, "attempts must be a positive int"),
        ({"codes": ["X"], "backoff_ms": -1}, "backoff_ms must be a finite number"),
        ({"codes": ["X"], "backoff_ms": float("nan")}, "backoff_ms must be"),
        ({"codes": ["X"], "max_backoff_ms": float("inf")}, "max_backoff_ms must be"),
        ({"codes": ["X"], "backoff_ms": 500, "max_backoff_ms": 100}, "at least backoff_ms"),
        ({"codes": ["X"], "multiplier": 0.5}, "multiplier must be"),
        ({"codes": ["X"], "jitter": -0.1}, "jitter must be"),
        ({"codes": ["X"], "jitter": 1.5}, "jitter must be between 0 and 1"),
        ({"codes": ["X"], "jitter": True}, "jitter must be"),
        ({"codes": ["X"], "tools": "t"}, "tools must be a collection of strings, not a string"),
        ({"codes": ["X"], "random": 0.5}, "random must be callable"),
        ({"codes": ["X"], "tools": []}, "tools is empty"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, Any], match: str) -> None:
    registry = ToolRegistry()
    with pytest.raises(RegistrationError, match=match):
        install_retry_policy(registry, **kwargs)


def test_a_closed_scope_is_refused() -> None:
    registry = ToolRegistry()
    scope = registry.scope()
    scope.close()
    with pytest.raises(RegistrationError, match="closed"):
        install_retry_policy(scope, codes=["FLAKY"])


def test_an_owner_that_is_neither_registry_nor_scope_is_refused() -> None:
    with pytest.raises(RegistrationError, match="takes a ToolRegistry or a ToolScope"):
        install_retry_policy(object(), codes=["FLAKY"])  # type: ignore[arg-type]


async def test_a_wrapper_returning_a_non_result_is_passed_on_untouched() -> None:
    body = Recorder()
    registry = ToolRegistry()
    registry.register(_tool("t", body))
    install_retry_policy(registry, codes=["FLAKY"])

    async def junk(execution: ToolDispatchExecution, next: Next) -> Any:
        return "not a result"

    registry.on_execute(junk)
    result = await _run(registry)
    assert result.content == (
        TextContent('Error: unreachable variant in tools/execute result: "not a result"'),
    )
    assert result.meta is None
    assert body.calls == 0


async def test_retry_outside_timeout_gives_each_attempt_its_own_budget(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Retry installed before the timeout policy wraps it: every attempt gets a fresh
    deadline, because a wrapper's ``next()`` re-runs the inner chain."""
    from toolnursery import ToolDefinition, ToolExecutionInput, ToolRegistry, install_timeout_policy
    from toolnursery._pipeline._retry import install_retry_policy

    durations = [1.0, 1.0, 0.01]
    starts: list[float] = []

    async def body(args: object, ctx: object) -> str:
        starts.append(trio.current_time())
        await trio.sleep(durations[len(starts) - 1])
        return "finally fast"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("flaky", "d", {"type": "object"}, body, timeout_ms=100, idempotent=True)
    )
    install_retry_policy(registry, codes=["TOOL_TIMEOUT"], attempts=3, backoff_ms=10, jitter=0)
    install_timeout_policy(registry)
    result = await registry.execute(ToolExecutionInput("c1", "flaky", {}))
    assert result.is_error is False
    assert result.meta == {"attempts": 3}
    assert len(starts) == 3
    # each attempt ran to its own 100 ms deadline, then a 10 ms / 20 ms backoff
    assert starts[1] - starts[0] == pytest.approx(0.11)
    assert starts[2] - starts[1] == pytest.approx(0.12)
