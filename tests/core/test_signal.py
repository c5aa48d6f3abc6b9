"""Signals: the latch and its O(1) links, and signals under execute wrappers (a
replacement signal, fusion with the caller's).

Reference behaviours B077–B083.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import FrameType
from typing import Any

import pytest
import trio
import trio.testing

from support import OK, Trace, call, tool, wire
from toolnursery import (
    TOOL_ABORTED,
    CancelSignal,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
)
from toolnursery._core._signal import ScopeLink, fired_before, fuse, link, unlink


@pytest.mark.spec("B077")
async def test_replacement_is_refused_with_the_caller_signal() -> None:
    """B077: the body gets a fused signal, neither caller's nor replacement, firing on either."""
    registry = ToolRegistry()
    body_signals: list[CancelSignal] = []
    replacements: list[CancelSignal] = []
    gate = trio.Event()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        body_signals.append(ctx.signal)
        await gate.wait()
        return "ok"

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        replacement = CancelSignal()
        replacements.append(replacement)
        view.signal = replacement
        return await next_()

    registry.register(tool(body=body))
    registry.on_execute(wrap)
    caller = CancelSignal()
    async with _in_flight(registry, caller) as results:
        (fused,) = body_signals
        assert fused is not caller
        assert fused is not replacements[0]
        assert not fused.cancelled
        replacements[0].cancel("deadline")
        assert fused.cancelled
        assert fused.reason == "deadline"
        assert not caller.cancelled
    assert results[0].error == ToolErrorInfo("AbortError", TOOL_ABORTED)


@asynccontextmanager
async def _in_flight(
    registry: ToolRegistry, caller: CancelSignal
) -> AsyncIterator[list[ToolExecutionResult]]:
    """One call under ``caller``'s signal, running until its body blocks; its result lands
    in the yielded list when it settles (by the end of the block)."""
    results: list[ToolExecutionResult] = []

    async def collect() -> None:
        results.append(await registry.execute(call(signal=caller)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect)
        await trio.testing.wait_all_tasks_blocked()
        yield results


def _replacing(signal: CancelSignal) -> Callable[..., Awaitable[Any]]:
    """An execute wrapper that hands the rest of the chain ``signal`` instead."""

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        view.signal = signal
        return await next_()

    return wrap


@pytest.mark.spec("B078")
async def test_caller_abort_reaches_the_body_but_not_the_replacement() -> None:
    """B078: a caller abort fires the fused signal; the replacement stays un-aborted → ABORTED."""
    registry = ToolRegistry()
    body_signals: list[CancelSignal] = []
    replacement = CancelSignal()
    finished: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        body_signals.append(ctx.signal)
        try:
            await trio.sleep_forever()
        finally:
            finished.append("body unwound")

    registry.register(tool(body=body))
    registry.on_execute(_replacing(replacement))
    caller = CancelSignal()
    async with _in_flight(registry, caller) as results:
        caller.cancel("user stop")
    assert body_signals[0].cancelled
    assert body_signals[0].reason == "user stop"
    assert not replacement.cancelled
    assert finished == ["body unwound"]
    assert wire(results[0]) == {
        "content": [{"type": "text", "text": "Error: tool call aborted"}],
        "isError": True,
        "error": {"name": "AbortError", "code": "ABORTED"},
    }


@pytest.mark.spec("B079")
async def test_without_replacement_the_body_gets_the_callers_signal_itself() -> None:
    """B079: no replacement → identity preserved, with or without pass-through wrappers."""
    registry = ToolRegistry()
    seen: list[CancelSignal] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        return "ok"

    async def wrap(view: Any, next_: Any) -> Any:
        return await next_()

    registry.register(tool(body=body))
    caller = CancelSignal()
    await registry.execute(call(signal=caller))
    registry.on_execute(wrap)
    await registry.execute(call(signal=caller))
    assert seen == [caller, caller]


@pytest.mark.spec("B080")
async def test_registry_checks_use_the_captured_caller_signal() -> None:
    """B080: a wrapper that leaves a fired replacement behind does not abort the call;
    post-execute and observers still see the caller's signal."""
    registry = ToolRegistry()
    registry.register(tool())
    replacement = CancelSignal()
    after: list[CancelSignal] = []

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        view.signal = replacement
        result = await next_()
        after.append(view.signal)
        replacement.cancel("late")  # never restored, and fired after the body settled
        return result

    caller = CancelSignal()
    trace = Trace(registry)
    registry.on_execute(wrap)
    result = await registry.execute(call(signal=caller))
    assert result == OK
    assert after == [replacement]
    assert [e.signal for e in trace.executions] == [caller] * 4


@pytest.mark.spec("B081")
async def test_already_aborted_replacement_skips_dispatch() -> None:
    """B081: a replacement already fired at dispatch → ABORTED_BEFORE_DISPATCH, body not run."""
    registry = ToolRegistry()
    ran: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append("body")
        return "ok"

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        fired = CancelSignal()
        fired.cancel("expired")
        view.signal = fired
        return await next_()

    registry.register(tool(body=body))
    registry.on_execute(wrap)
    caller = CancelSignal()
    result = await registry.execute(call(signal=caller))
    assert ran == []
    assert not caller.cancelled
    assert wire(result) == {
        "content": [{"type": "text", "text": "Error: tool call aborted before dispatch"}],
        "isError": True,
        "error": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
    }


@pytest.mark.spec("B082")
async def test_fused_reason_is_the_first_aborter_and_links_are_removed() -> None:
    """B082: the fused signal carries the first reason; fusion unlinks when the body settles."""
    registry = ToolRegistry()
    seen: list[CancelSignal] = []
    replacement = CancelSignal()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        replacement.cancel("first")
        ctx.execution.signal.cancel("second")
        return "ok"

    registry.register(tool(body=body))
    registry.on_execute(_replacing(replacement))
    await registry.execute(call())
    assert seen[0].reason == "first"

    # A fresh caller signal and replacement: after the call no callbacks stay linked.
    registry2 = ToolRegistry()
    slow_gate = trio.Event()
    replacement2 = CancelSignal()

    async def body2(args: Any, ctx: ToolRunContext) -> str:
        await slow_gate.wait()
        return "ok"

    registry2.register(tool(body=body2))
    registry2.on_execute(_replacing(replacement2))
    caller = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(registry2.execute, call(signal=caller))
        await trio.testing.wait_all_tasks_blocked()
        assert caller._callbacks
        assert replacement2._callbacks
        slow_gate.set()
    assert not caller._callbacks
    assert not replacement2._callbacks


@pytest.mark.spec("B082")
async def test_same_object_replacement_does_not_fuse() -> None:
    """B082: assigning the caller's own signal is no replacement — the body gets it as is."""
    registry = ToolRegistry()
    seen: list[CancelSignal] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        return "ok"

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        view.signal = view.signal
        return await next_()

    registry.register(tool(body=body))
    registry.on_execute(wrap)
    caller = CancelSignal()
    await registry.execute(call(signal=caller))
    assert seen == [caller]


@pytest.mark.spec("B083")
async def test_wrappers_nest_in_order_and_inner_sees_outer_replacement() -> None:
    """B083: first registered (or prepended) is outermost; the inner sees the outer's signal."""
    registry = ToolRegistry()
    registry.register(tool())
    order: list[str] = []
    outer_signal = CancelSignal()
    inner_saw: list[CancelSignal] = []

    async def outer(view: ToolDispatchExecution, next_: Any) -> Any:
        order.append("outer")
        view.signal = outer_signal
        return await next_()

    async def middle(view: ToolDispatchExecution, next_: Any) -> Any:
        order.append("middle")
        return await next_()

    async def inner(view: ToolDispatchExecution, next_: Any) -> Any:
        order.append("inner")
        inner_saw.append(view.signal)
        return await next_()

    registry.on_execute(middle)
    registry.on_execute(inner)
    registry.on_execute(outer, prepend=True)
    await registry.execute(call())
    assert order == ["outer", "middle", "inner"]
    assert inner_saw == [outer_signal]


# -- the latch and its links on their own ---------------------------------------------


def test_the_first_reason_wins_and_links_fire_once() -> None:
    signal = CancelSignal()
    seen: list[Any] = []

    def callback(fired: CancelSignal) -> None:
        seen.append(fired.reason)

    link(signal, callback)
    link(signal, callback)  # linked twice: called once
    signal.cancel("first")
    signal.cancel("second")
    assert signal.cancelled
    assert signal.reason == "first"
    assert seen == ["first"]


def test_a_link_after_the_signal_fired_is_called_at_once() -> None:
    signal = CancelSignal()
    signal.cancel("done")
    seen: list[Any] = []
    link(signal, lambda fired: seen.append(fired.reason))
    assert seen == ["done"]


def test_unlinking_removes_only_that_link() -> None:
    signal = CancelSignal()
    seen: list[str] = []

    def a(_: CancelSignal) -> None:
        seen.append("a")

    def b(_: CancelSignal) -> None:
        seen.append("b")

    link(signal, a)
    link(signal, b)
    unlink(signal, a)
    unlink(signal, a)  # unlinking twice does nothing
    signal.cancel()
    assert seen == ["b"]


def _opcodes_while(fn: Any) -> int:
    """How many bytecode instructions run inside ``fn()`` (Python-level operations).

    ``fn`` must be callable twice: the first call is not counted. CPython 3.12.0 and
    3.12.1 report no ``opcode`` events for a code object the first time it is traced
    (``f_trace_opcodes`` set from the tracer takes effect from its second run on), so a
    cold count would read 0 there.
    """
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return trace

    for _ in range(2):
        count = 0
        sys.settrace(trace)
        try:
            fn()
        finally:
            sys.settrace(None)
    assert count > 0, "the tracer saw no opcode: it measured nothing"
    return count


class _CountingLink:
    """A link that counts how often the signal's container hashes or compares it."""

    probes = 0

    def __call__(self, signal: CancelSignal) -> None:
        return None

    def __hash__(self) -> int:
        _CountingLink.probes += 1
        return id(self) >> 4

    def __eq__(self, other: object) -> bool:
        _CountingLink.probes += 1
        return self is other


def _linked(n: int) -> tuple[CancelSignal, list[ScopeLink]]:
    """A signal with ``n`` links, and the links in the order to unlink them (middle first)."""
    signal = CancelSignal()
    links = [ScopeLink(trio.CancelScope()) for _ in range(n)]
    for each in links:
        link(signal, each)
    return signal, links[n // 2 :] + links[: n // 2]


def _unlink_all(n: int) -> int:
    """Bytecode operations to unlink ``n`` links (two signals: one per run, the first
    not counted)."""
    prepared = [_linked(n), _linked(n)]

    def unlink_them() -> None:
        signal, links = prepared.pop()
        for each in links:
            unlink(signal, each)
        assert not signal._callbacks

    return _opcodes_while(unlink_them)


def test_unlinking_ten_thousand_links_is_linear() -> None:
    """Counted in bytecode operations, not time: 10x the links costs 10x the work."""
    small = _unlink_all(1_000)
    large = _unlink_all(10_000)
    assert large <= small * 10 * 1.1
    assert large / 10_000 < 40  # a constant number of operations per unlink


def test_unlinking_probes_each_link_a_constant_number_of_times() -> None:
    """What bytecode cannot see: a container searched in C (a list's ``remove``) would
    compare every link before the one it removes."""
    signal = CancelSignal()
    links = [_CountingLink() for _ in range(10_000)]
    for each in links:
        link(signal, each)
    _CountingLink.probes = 0
    for each in links[5_000:] + links[:5_000]:
        unlink(signal, each)
    assert not signal._callbacks
    assert _CountingLink.probes <= 2 * len(links)


async def test_a_scope_link_cancels_its_scope() -> None:
    signal = CancelSignal()
    with trio.CancelScope() as scope:
        link(signal, ScopeLink(scope))
        signal.cancel("stop")
        await trio.sleep_forever()
    assert scope.cancelled_caught


def test_a_fusion_fires_with_the_first_source_and_detaches() -> None:
    a, b = CancelSignal(), CancelSignal()
    fusion = fuse(a, b)
    b.cancel("b first")
    a.cancel("a later")
    assert fusion.signal.reason == "b first"
    assert not a._callbacks
    fused = fuse(a)
    assert fused.signal.cancelled  # a source that already fired fires the fusion at once


def test_firing_records_the_trio_time_only_under_trio() -> None:
    outside = CancelSignal()
    outside.cancel()
    assert fired_before(outside, 0.0)  # an unknown time counts as before anything

    async def main() -> tuple[bool, bool]:
        signal = CancelSignal()
        now = trio.current_time()
        signal.cancel()
        return fired_before(signal, now + 1), fired_before(signal, now - 1)

    assert trio.run(main) == (True, False)
    assert not fired_before(CancelSignal(), 1e9)
