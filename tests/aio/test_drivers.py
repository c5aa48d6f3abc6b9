"""One contract, two drivers: a batch from asyncio on the native asyncio driver and in the
trio guest run.

Most tests take the ``driver`` fixture (``"asyncio"``, ``"trio"``) and pass it to
``toolnursery.aio``: the same batch, the same results, the same durable events, the
same abort and cancellation behaviour on both. The bodies and hooks here are asyncio
code declared with ``asyncio_tool`` (they run on the loop either way) or plain ``def``
bodies. Where asyncio cannot do what trio does (its cancellation is edge-triggered),
the difference is tested as such. The choice of driver itself (``batch_driver``, the
log record) is tested first.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import msgspec
import pytest
import trio

import toolnursery.aio as aio
from toolnursery import (
    CancelSignal,
    ResourceKey,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    install_retry_policy,
    install_timeout_policy,
)
from toolnursery.log import ToolCallEvent, ToolResultEvent

T = TypeVar("T")
OBJECT: dict[str, Any] = {"type": "object"}
PARALLEL: Callable[[Any], bool] = lambda args: True  # noqa: E731


@pytest.fixture(params=["asyncio", "trio"])
def driver(request: pytest.FixtureRequest) -> str:
    """The driver a test's batches ask ``toolnursery.aio`` for."""
    return str(request.param)


def _run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())``; the loop reported nothing, nothing of ours outlived it."""
    reported: list[dict[str, Any]] = []

    async def guarded() -> T:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: reported.append(ctx))
        return await main()

    result = asyncio.run(guarded())
    assert reported == []
    assert not trio.lowlevel.in_trio_run()
    return result


def _quiet() -> None:
    """Only the test's own task runs on the loop: nothing a batch started is left."""
    assert asyncio.all_tasks() == {asyncio.current_task()}


class Gate:
    """Opens once ``n`` arrivals have come (the bodies that must have started)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.event = asyncio.Event()

    def arrive(self) -> None:
        self.n -= 1
        if self.n <= 0:
            self.event.set()

    async def wait(self) -> None:
        await self.event.wait()


def summary(result: ToolExecutionResult) -> str:
    error = result.error
    if error is not None:
        return str(error.code or error.name)
    return result.text


def _define(
    name: str,
    body: Any,
    *,
    parallel: bool = True,
    keys: Callable[[Any], Any] | None = None,
    timeout_ms: float | None = None,
    max_concurrency: int | None = None,
) -> ToolDefinition:
    return ToolDefinition(
        name,
        f"the {name} tool",
        OBJECT,
        body,
        is_concurrency_safe=PARALLEL if parallel else None,
        concurrency_keys=keys,
        timeout_ms=timeout_ms,
        max_concurrency=max_concurrency,
    )


class ListRecorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def record(self, event: Any, /) -> None:
        self.events.append(event)

    def normalized(self) -> list[Any]:
        times = ("wall", "t", "admitted", "began", "ended")
        return [
            msgspec.structs.replace(
                e, batch="B", **{f: None for f in times if getattr(e, f, None) is not None}
            )
            for e in self.events
        ]


@aio.asyncio_tool
async def echo(args: Any, ctx: ToolRunContext) -> str:
    await asyncio.sleep(0)
    return f"echo {args.get('q', '')}"


@aio.asyncio_tool
async def fail(args: Any, ctx: ToolRunContext) -> str:
    await asyncio.sleep(0)
    raise ValueError("no")


def shout(args: Any, ctx: ToolRunContext) -> str:
    return f"SHOUT {args.get('q', '')}"


@aio.asyncio_tool
async def hang(args: Any, ctx: ToolRunContext) -> str:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")  # pragma: no cover


# -- which driver -------------------------------------------------------------------------


def test_the_rule_picks_the_driver_from_the_tools_and_hooks() -> None:
    async def trio_body(args: Any, ctx: ToolRunContext) -> str:
        await trio.lowlevel.checkpoint()
        return "t"

    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.register(_define("shout", shout))
    registry.register(_define("trio_tool", trio_body))

    def trio_sync(args: Any, ctx: ToolRunContext) -> str:
        return str(trio.current_time())  # pragma: no cover

    registry.register(_define("marked", aio.needs_trio(trio_sync)))  # a def marked as trio code
    native = [ToolCall("1", "echo"), ToolCall("2", "shout"), ToolCall("3", "missing")]
    assert aio.batch_driver(registry, native) == aio.BatchDriver("asyncio")
    choice = aio.batch_driver(registry, [*native, ToolCall("4", "trio_tool")])
    assert choice.driver == "trio"
    assert choice.reason == 'tool "trio_tool" is an async def not declared with asyncio_tool'
    assert aio.batch_driver(registry, [ToolCall("5", "marked")]).driver == "trio"
    # A streamed batch's calls are not known: every tool of the view counts.
    assert aio.batch_driver(registry).driver == "trio"
    assert aio.batch_driver(registry, native, driver="trio").driver == "trio"
    with pytest.raises(ValueError, match=r"driver='asyncio' cannot run this batch: tool"):
        aio.batch_driver(registry, [ToolCall("4", "trio_tool")], driver="asyncio")
    with pytest.raises(ValueError, match="driver must be one of"):
        aio.batch_driver(registry, native, driver="anyio")  # type: ignore[arg-type]


def test_hooks_are_loop_neutral_unless_marked_and_trio_policies_need_trio() -> None:
    calls = [ToolCall("1", "echo")]

    def fresh() -> ToolRegistry:
        registry = ToolRegistry()
        registry.register(_define("echo", echo))
        return registry

    registry = fresh()

    async def passing(execution: ToolExecution, next_: Any) -> Any:
        return await next_()

    registry.on_pre_execute(passing)
    registry.on_execute(passing)
    assert aio.batch_driver(registry, calls).driver == "asyncio"
    registry.on_result(aio.needs_trio(lambda execution, result: None))
    assert aio.batch_driver(registry, calls).reason is not None
    registry = fresh()
    install_timeout_policy(registry, default_timeout_ms=1000)  # the only wrapper: native deadlines
    assert aio.batch_driver(registry, calls).driver == "asyncio"
    registry.on_execute(passing)  # now the policy is one wrapper of two
    assert aio.batch_driver(registry, calls).reason == (
        "a timeout policy is not the only execute wrapper"
    )
    registry = fresh()
    install_retry_policy(registry, codes=["X"])
    assert aio.batch_driver(registry, calls).driver == "trio"
    registry = fresh()
    registry.register(_define("limited", echo, max_concurrency=1))
    assert aio.batch_driver(registry, [ToolCall("1", "limited")]).reason == (
        'tool "limited" has a max_concurrency limit'
    )


def test_the_driver_is_logged_and_visible_on_a_streamed_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register(_define("echo", echo))

    async def main() -> list[str]:
        await aio.run_tool_calls(registry, [ToolCall("1", "echo")])
        drivers = []
        for driver in ("auto", "trio"):
            async with aio.open_tool_batch(registry, driver=driver) as batch:  # type: ignore[arg-type]
                drivers.append(batch.driver)
        return drivers

    with caplog.at_level(logging.DEBUG, logger="toolnursery.aio"):
        assert _run(main) == ["asyncio", "trio"]
    fields = [(r.driver, r.reason) for r in caplog.records]  # type: ignore[attr-defined]
    assert fields == [
        ("asyncio", None),
        ("asyncio", None),
        ("trio", "driver='trio' was asked for"),
    ]


# -- the same batch on both drivers ------------------------------------------------------


def _mixed_registry(observed: list[str]) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.register(_define("fail", fail))
    registry.register(_define("shout", shout))
    registry.register(_define("alone", echo, parallel=False))
    registry.register(_define("keyed", echo, keys=lambda args: [ResourceKey.write("k")]))
    registry.on_result(lambda execution, result: observed.append(execution.call_id))
    return registry


MIXED = [
    ToolCall("a", "echo", '{"q": "1"}'),
    ToolCall("b", "shout", '{"q": "2"}'),
    ToolCall("c", "fail"),
    ToolCall("d", "keyed", '{"q": "3"}'),
    ToolCall("e", "keyed", '{"q": "4"}'),
    ToolCall("f", "alone", '{"q": "5"}'),
    ToolCall("g", "missing"),
    ToolCall("a", "echo"),  # a repeated id
    ToolCall("h", "echo", "[1]"),  # arguments that cannot be arguments
    ToolCall("i", "echo", '{"q": "6"}'),
]
MIXED_RESULTS = [
    "echo 1",
    "SHOUT 2",
    "Error: no",
    "echo 3",
    "echo 4",
    "echo 5",
    "UNKNOWN_TOOL",
    "DUPLICATE_CALL_ID",
    "INVALID_ARGS",
    "echo 6",
]


@pytest.mark.parametrize("max_parallel", [1, 2, 10])
def test_a_mixed_batch_gives_the_same_results_and_events_on_both_drivers(
    max_parallel: int,
) -> None:
    def under(driver: str) -> tuple[list[str], list[Any], list[str], Any]:
        observed: list[str] = []
        recorder = ListRecorder()

        async def main() -> tuple[list[str], Any]:
            results = await aio.run_tool_calls(
                _mixed_registry(observed),
                MIXED,
                max_parallel=max_parallel,
                recorder=recorder,
                driver=driver,  # type: ignore[arg-type]
            )
            _quiet()
            return [summary(r) for r in results], results

        summaries, results = _run(main)
        return summaries, recorder.normalized(), observed, results

    native = under("asyncio")
    guest = under("trio")
    assert native[0] == MIXED_RESULTS
    # The durable log: the same events; how starts and commits interleave is the
    # scheduler's timing (each result still follows its call's start).
    for kind in (ToolCallEvent, ToolResultEvent):
        assert [e for e in native[1] if isinstance(e, kind)] == [
            e for e in guest[1] if isinstance(e, kind)
        ]
    for log in (native[1], guest[1]):
        started = [e.index for e in log if isinstance(e, ToolCallEvent)]
        for position, event in enumerate(log):
            if isinstance(event, ToolResultEvent):
                before = [e for e in log[:position] if isinstance(e, ToolCallEvent)]
                assert event.index in [e.index for e in before]
        assert started == sorted(started)
    assert native[2] == guest[2] == ["a", "b", "c", "d", "e", "f", "g", "h", "i"]  # model order
    assert native[3] == guest[3]


def test_a_streamed_batch_runs_calls_as_they_are_submitted(driver: str) -> None:
    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.register(_define("shout", shout))

    async def main() -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        async with aio.open_tool_batch(registry, driver=driver) as batch:  # type: ignore[arg-type]
            assert batch.driver == driver
            batch.submit(ToolCall("1", "echo", '{"q": "x"}'))
            call, result = await batch.__anext__()  # the first ran before the second came
            pairs.append((call.id, summary(result)))
            batch.submit(ToolCall("2", "shout", '{"q": "y"}'))
            batch.close()
            with pytest.raises(RuntimeError, match="this batch is closed"):
                batch.submit(ToolCall("3", "echo"))
            async for call, result in batch:
                pairs.append((call.id, summary(result)))
            assert batch.statistics().committed == 2
        _quiet()
        return pairs

    assert _run(main) == [("1", "echo x"), ("2", "SHOUT y")]


# -- abort and cancellation ---------------------------------------------------------------


def _abort_registry(events: list[str], entered: Gate) -> ToolRegistry:
    """``waits`` arrives at ``entered`` once it waits; so does call 1's commit."""

    @aio.asyncio_tool
    async def waits(args: Any, ctx: ToolRunContext) -> str:
        entered.arrive()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            events.append(f"{ctx.call_id} cancelled")
            await asyncio.sleep(0)  # cleanup that awaits still runs
            events.append(f"{ctx.call_id} cleaned up")
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    registry = ToolRegistry()
    registry.register(_define("waits", waits))
    registry.register(_define("echo", echo))
    registry.register(_define("alone", echo, parallel=False))

    def observe(execution: ToolExecution, result: ToolExecutionResult) -> None:
        events.append(f"{execution.call_id} {summary(result)}")
        if execution.call_id == "1":
            entered.arrive()

    registry.on_result(observe)
    return registry


ABORT_CALLS = [
    ToolCall("1", "echo"),
    ToolCall("2", "waits"),
    ToolCall("3", "waits"),
    ToolCall("4", "alone"),  # a barrier: never starts
]
ABORT_EVENTS = [
    "1 echo ",
    "2 cancelled",
    "3 cancelled",
    "2 cleaned up",
    "3 cleaned up",
    "2 ABORTED",
    "3 ABORTED",
]


def check_abort_events(events: list[str]) -> None:
    """Call 1 committed first; both waiting calls were cancelled and cleaned up (in any
    order) before their ABORTED results were observed, in model order."""
    assert events[0] == "1 echo "
    middle, tail = events[1:5], events[5:]
    assert sorted(middle) == sorted(ABORT_EVENTS[1:5])
    assert middle.index("2 cancelled") < middle.index("2 cleaned up")
    assert tail == ["2 ABORTED", "3 ABORTED"]


ABORT_RESULTS = ["echo ", "ABORTED", "ABORTED", "ABORTED_BEFORE_DISPATCH"]


def test_the_batch_signal_aborts_drains_and_commits_in_model_order(driver: str) -> None:
    events: list[str] = []

    async def main() -> list[str]:
        entered = Gate(3)  # both waiting calls wait, call 1 committed
        signal = CancelSignal()
        recorder = ListRecorder()
        task = asyncio.create_task(
            aio.run_tool_calls(
                _abort_registry(events, entered),
                ABORT_CALLS,
                signal=signal,
                recorder=recorder,
                driver=driver,  # type: ignore[arg-type]
            )
        )
        await entered.wait()
        signal.cancel("stop")
        results = await task
        _quiet()
        logged = [e.call_id for e in recorder.events if isinstance(e, ToolResultEvent)]
        assert logged == ["1", "2", "3", "4"]
        return [summary(r) for r in results]

    assert _run(main) == ABORT_RESULTS
    check_abort_events(events)


def test_cancelling_the_awaiting_task_drains_commits_then_raises(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        entered = Gate(3)
        task = asyncio.create_task(
            aio.run_tool_calls(
                _abort_registry(events, entered),
                ABORT_CALLS,
                driver=driver,  # type: ignore[arg-type]
            )
        )
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        _quiet()

    _run(main)
    check_abort_events(events)  # every started call settled and was observed first


def test_an_outer_asyncio_timeout_is_not_swallowed(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        registry = _abort_registry(events, Gate(3))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await aio.run_tool_calls(registry, ABORT_CALLS, driver=driver)  # type: ignore[arg-type]
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
        _quiet()
        # The task goes on: its next batch runs normally.
        results = await aio.run_tool_calls(registry, [ToolCall("x", "echo")], driver=driver)  # type: ignore[arg-type]
        assert [summary(r) for r in results] == ["echo "]

    _run(main)
    check_abort_events(events[: len(ABORT_EVENTS)])


def test_a_lone_call_cancelled_from_outside_raises_after_its_cleanup(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        entered = Gate(1)
        registry = _abort_registry(events, entered)
        task = asyncio.create_task(
            aio.run_tool_calls(registry, [ToolCall("2", "waits")], driver=driver)  # type: ignore[arg-type]
        )
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        _quiet()

    _run(main)
    assert events == ["2 cancelled", "2 cleaned up", "2 ABORTED"]


def test_a_repeated_cancellation_does_not_cut_the_drain_short(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        entered = asyncio.Event()
        release = asyncio.Event()
        cleaning = asyncio.Event()

        @aio.asyncio_tool
        async def slow_cleanup(args: Any, ctx: ToolRunContext) -> str:
            entered.set()
            try:
                await asyncio.Event().wait()
            finally:
                cleaning.set()
                await release.wait()  # the body's cleanup awaits: it is not cut short
                events.append("cleaned up")
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(_define("slow", slow_cleanup))
        registry.on_result(lambda execution, result: events.append(summary(result)))
        calls = [ToolCall("1", "slow"), ToolCall("2", "slow")]
        task = asyncio.create_task(aio.run_tool_calls(registry, calls, driver=driver))  # type: ignore[arg-type]
        await entered.wait()
        task.cancel()
        await cleaning.wait()
        task.cancel()  # again, while the batch drains
        await asyncio.sleep(0)
        assert not task.done()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        _quiet()

    _run(main)
    assert events == ["cleaned up", "cleaned up", "ABORTED", "ABORTED"]


def test_a_body_aborting_its_own_batch_ends_it_without_a_stray_cancellation(
    driver: str,
) -> None:
    @aio.asyncio_tool
    async def quits(args: Any, ctx: ToolRunContext) -> str:
        ctx.signal.cancel("enough")
        return "done"

    registry = ToolRegistry()
    registry.register(_define("quits", quits))
    registry.register(_define("echo", echo, parallel=False))

    async def main() -> list[list[str]]:
        out = []
        for calls in ([ToolCall("1", "quits")], [ToolCall("1", "quits"), ToolCall("2", "echo")]):
            results = await aio.run_tool_calls(registry, calls, driver=driver)  # type: ignore[arg-type]
            out.append([summary(r) for r in results])
            await asyncio.sleep(0)  # no cancellation is left pending on this task
            _quiet()
        return out

    assert _run(main) == [["ABORTED"], ["ABORTED", "ABORTED_BEFORE_DISPATCH"]]


def test_a_block_that_raises_aborts_the_streamed_batch(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        entered = Gate(1)
        registry = _abort_registry(events, entered)

        async def block() -> None:
            async with aio.open_tool_batch(registry, driver=driver) as batch:  # type: ignore[arg-type]
                batch.submit(ToolCall("2", "waits"))
                await entered.wait()
                raise LookupError("the model stream broke")

        with pytest.raises(LookupError):
            await block()
        _quiet()

    _run(main)
    assert events == ["2 cancelled", "2 cleaned up", "2 ABORTED"]


# -- deadlines, threads, hooks ------------------------------------------------------------


def test_the_timeout_policy_times_out_a_call_on_both_drivers(driver: str) -> None:
    registry = ToolRegistry()
    registry.register(_define("hang", hang, timeout_ms=20))
    registry.register(_define("echo", echo, timeout_ms=20))
    install_timeout_policy(registry)

    async def main() -> list[str]:
        calls = [ToolCall("1", "hang"), ToolCall("2", "echo"), ToolCall("3", "hang")]
        results = await aio.run_tool_calls(registry, calls, driver=driver)  # type: ignore[arg-type]
        lone = await aio.run_tool_calls(registry, [ToolCall("4", "hang")], driver=driver)  # type: ignore[arg-type]
        _quiet()
        return [summary(r) for r in [*results, *lone]]

    assert _run(main) == ["TOOL_TIMEOUT", "echo ", "TOOL_TIMEOUT", "TOOL_TIMEOUT"]


def test_a_sync_body_in_a_thread_is_waited_for_on_abort(driver: str) -> None:
    started = threading.Event()
    release = threading.Event()
    finished: list[str] = []

    def blocking(args: Any, ctx: ToolRunContext) -> str:
        started.set()
        release.wait(30)
        finished.append("body returned")
        return "late"

    registry = ToolRegistry()
    registry.register(_define("blocking", blocking))
    registry.register(_define("echo", echo))

    async def main() -> list[str]:
        signal = CancelSignal()
        task = asyncio.create_task(
            aio.run_tool_calls(
                registry,
                [ToolCall("1", "blocking"), ToolCall("2", "echo")],
                signal=signal,
                driver=driver,  # type: ignore[arg-type]
            )
        )
        await asyncio.to_thread(started.wait, 30)
        signal.cancel()
        await asyncio.sleep(0)
        assert not task.done()  # the thread cannot be interrupted: the batch waits
        release.set()
        results = await task
        assert finished == ["body returned"]  # before the batch returned
        _quiet()
        return [summary(r) for r in results]

    # A success committed after the abort is ABORTED (the quick call waited for the first
    # to commit: model order).
    assert _run(main) == ["ABORTED", "ABORTED"]


def test_a_policy_hook_that_ignores_the_abort_is_cut_after_the_grace() -> None:
    cut: list[float] = []

    async def stubborn(execution: ToolExecution, next_: Any) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cut.append(asyncio.get_running_loop().time())
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.on_pre_execute(stubborn)
    registry.hook_abort_grace = 0.05

    async def main() -> list[str]:
        signal = CancelSignal()
        loop = asyncio.get_running_loop()
        task = asyncio.create_task(
            aio.run_tool_calls(
                registry, [ToolCall("1", "echo"), ToolCall("2", "echo")], signal=signal
            )
        )
        await asyncio.sleep(0)
        aborted = loop.time()
        signal.cancel()
        results = await task
        assert cut
        assert cut[0] - aborted >= 0.05
        current = asyncio.current_task()
        assert current is not None
        assert current.cancelling() == 0
        _quiet()
        return [summary(r) for r in results]

    assert aio.batch_driver(registry, [ToolCall("1", "echo")]).driver == "asyncio"
    assert _run(main) == ["ABORTED_BEFORE_DISPATCH"] * 2


def test_a_post_execute_hook_that_awaits_asyncio_runs_at_commit_in_model_order() -> None:
    seen: list[str] = []

    async def post(execution: ToolExecution, result: ToolExecutionResult, next_: Any) -> Any:
        await asyncio.sleep(0)  # suspends: the driver awaits it
        seen.append(execution.call_id)
        return await next_()

    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.on_post_execute(post)

    async def main() -> list[str]:
        calls = [ToolCall(str(i), "echo") for i in range(5)]
        results = await aio.run_tool_calls(registry, calls, max_parallel=2)
        _quiet()
        return [summary(r) for r in results]

    assert _run(main) == ["echo "] * 5
    assert seen == ["0", "1", "2", "3", "4"]


def test_a_signal_can_be_awaited_from_an_asyncio_body() -> None:
    entered = Gate(2)

    @aio.asyncio_tool
    async def until_aborted(args: Any, ctx: ToolRunContext) -> str:
        entered.arrive()
        try:
            await ctx.signal.wait()
        except asyncio.CancelledError:
            return "cancelled while waiting"
        return "woke"  # pragma: no cover

    registry = ToolRegistry()
    registry.register(_define("until", until_aborted))

    async def main() -> list[ToolExecutionResult]:
        signal = CancelSignal()
        task = asyncio.create_task(
            aio.run_tool_calls(
                registry, [ToolCall("1", "until"), ToolCall("2", "until")], signal=signal
            )
        )
        await entered.wait()
        signal.cancel()
        return await task

    results = _run(main)
    assert [summary(r) for r in results] == ["ABORTED"] * 2  # a success after the abort


def test_asyncio_cancellation_is_edge_triggered_a_body_may_await_after_catching_it() -> None:
    """The documented difference: trio cancels again at every checkpoint of a cancelled
    scope; asyncio delivers one ``CancelledError``. A body that catches it and awaits
    again runs on (its result, a success, still becomes ``ABORTED``)."""
    steps: list[str] = []
    entered = Gate(2)

    @aio.asyncio_tool
    async def stubborn(args: Any, ctx: ToolRunContext) -> str:
        entered.arrive()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            steps.append("caught")
        await asyncio.sleep(0)  # not cancelled again on asyncio
        steps.append("went on")
        return "swallowed"

    registry = ToolRegistry()
    registry.register(_define("stubborn", stubborn))

    async def main() -> list[str]:
        signal = CancelSignal()
        calls = [ToolCall("1", "stubborn"), ToolCall("2", "stubborn")]
        task = asyncio.create_task(
            aio.run_tool_calls(registry, calls, signal=signal, driver="asyncio")
        )
        await entered.wait()
        signal.cancel()
        results = await task
        _quiet()
        return [summary(r) for r in results]

    assert _run(main) == ["ABORTED"] * 2
    assert steps == ["caught", "caught", "went on", "went on"]


def test_a_failing_recorder_surfaces_as_itself_after_the_calls_settle(driver: str) -> None:
    class Raising:
        def record(self, event: Any, /) -> None:
            if isinstance(event, ToolResultEvent):
                raise OSError("disk full")

    registry = ToolRegistry()
    registry.register(_define("echo", echo))

    async def main() -> None:
        with pytest.raises(OSError, match="disk full"):
            await aio.run_tool_calls(
                registry,
                [ToolCall("1", "echo"), ToolCall("2", "echo")],
                recorder=Raising(),
                driver=driver,  # type: ignore[arg-type]
            )
        _quiet()

    _run(main)


def test_the_trio_driver_still_serves_a_trio_tool_from_asyncio() -> None:
    async def trio_body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(0)
        return "from trio"

    registry = ToolRegistry()
    registry.register(_define("t", trio_body))
    registry.register(_define("echo", echo))

    async def main() -> list[str]:
        calls = [ToolCall("1", "t"), ToolCall("2", "echo")]
        assert aio.batch_driver(registry, calls).driver == "trio"
        results = await aio.run_tool_calls(registry, calls)
        return [summary(r) for r in results]

    assert _run(main) == ["from trio", "echo "]


def _text(results: list[ToolExecutionResult]) -> list[Any]:
    return [r.content[0] if r.content else None for r in results]


_ = (_text, TextContent, Awaitable)


def test_a_body_whose_awaited_task_is_cancelled_by_someone_else_is_aborted() -> None:
    """On the asyncio driver a body's ``CancelledError`` that no cancellation of the
    batch caused (the task it awaited was cancelled elsewhere) is ``ABORTED``, as the
    guest run maps an asyncio tool cancelled on the asyncio side."""
    inner: list[asyncio.Task[None]] = []
    entered = Gate(1)

    @aio.asyncio_tool
    async def awaits_inner(args: Any, ctx: ToolRunContext) -> str:
        task = asyncio.create_task(asyncio.Event().wait())  # type: ignore[arg-type]
        inner.append(task)
        entered.arrive()
        await task
        return "unreachable"  # pragma: no cover

    registry = ToolRegistry()
    registry.register(_define("inner", awaits_inner))

    async def main() -> list[str]:
        out = []
        for calls in ([ToolCall("1", "inner")], [ToolCall("1", "inner"), ToolCall("2", "inner")]):
            nonlocal entered
            entered = Gate(len(calls))
            batch = asyncio.create_task(aio.run_tool_calls(registry, calls, driver="asyncio"))
            await entered.wait()
            for task in inner:
                task.cancel()
            inner.clear()
            out.extend(summary(r) for r in await batch)
        entered = Gate(1)
        single = asyncio.create_task(
            aio.execute(registry, ToolExecutionInput("x", "inner", {}), driver="asyncio")
        )
        await entered.wait()
        inner.pop().cancel()
        out.append(summary(await single))
        _quiet()
        return out

    assert _run(main) == ["ABORTED"] * 4


def test_execute_runs_natively_and_an_outside_cancellation_reaches_the_observers() -> None:
    seen: list[str] = []
    entered = Gate(1)

    @aio.asyncio_tool
    async def waits(args: Any, ctx: ToolRunContext) -> str:
        entered.arrive()
        await asyncio.Event().wait()
        return "unreachable"  # pragma: no cover

    registry = ToolRegistry()
    registry.register(_define("waits", waits))
    registry.register(_define("echo", echo))
    registry.on_result(lambda execution, result: seen.append(summary(result)))

    async def main() -> None:
        result = await aio.execute(
            registry, ToolExecutionInput("1", "echo", {"q": "n"}), driver="asyncio"
        )
        assert summary(result) == "echo n"
        task = asyncio.create_task(
            aio.execute(registry, ToolExecutionInput("2", "waits", {}), driver="asyncio")
        )
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        _quiet()

    _run(main)
    assert seen == ["echo n", "ABORTED"]


@pytest.mark.parametrize("suspending", [0, 3, 9])
def test_a_post_execute_that_suspends_in_a_tasks_commit_keeps_model_order(
    suspending: int,
) -> None:
    """Once every call has started, the dispatch tasks commit (post-execute and
    observers included); one whose post-execute suspends leaves it to the driver, and
    the later calls still commit after it, in model order."""
    seen: list[str] = []

    async def post(execution: ToolExecution, result: ToolExecutionResult, next_: Any) -> Any:
        if execution.call_id == str(suspending):
            await asyncio.sleep(0)
        seen.append(execution.call_id)
        return await next_()

    registry = ToolRegistry()
    registry.register(_define("echo", echo))
    registry.on_post_execute(post)
    registry.on_result(lambda execution, result: seen.append(f"observed {execution.call_id}"))

    async def main() -> list[str]:
        calls = [ToolCall(str(i), "echo", f'{{"q": "{i}"}}') for i in range(10)]
        results = await aio.run_tool_calls(registry, calls, driver="asyncio")
        _quiet()
        return [summary(r) for r in results]

    assert _run(main) == [f"echo {i}" for i in range(10)]
    assert seen == [item for i in range(10) for item in (str(i), f"observed {i}")]


def test_a_streamed_batch_under_an_outer_timeout_drains_and_raises_timeout(driver: str) -> None:
    events: list[str] = []

    async def main() -> None:
        entered = Gate(1)
        registry = _abort_registry(events, entered)

        async def block() -> None:
            async with asyncio.timeout(0.05):
                async with aio.open_tool_batch(registry, driver=driver) as batch:  # type: ignore[arg-type]
                    batch.submit(ToolCall("2", "waits"))
                    batch.close()
                    async for _ in batch:
                        pass  # pragma: no cover - the call never commits in time

        with pytest.raises(TimeoutError):
            await block()
        current = asyncio.current_task()
        assert current is not None
        assert current.cancelling() == 0
        _quiet()

    _run(main)
    assert events == ["2 cancelled", "2 cleaned up", "2 ABORTED"]


def test_a_streamed_batch_whose_recorder_fails_raises_at_the_end_of_the_block(
    driver: str,
) -> None:
    class Raising:
        def record(self, event: Any, /) -> None:
            if isinstance(event, ToolResultEvent):
                raise OSError("disk full")

    registry = ToolRegistry()
    registry.register(_define("echo", echo))

    async def main() -> None:
        async def block() -> None:
            async with aio.open_tool_batch(registry, recorder=Raising(), driver=driver) as batch:  # type: ignore[arg-type]
                batch.submit(ToolCall("1", "echo"))
                batch.submit(ToolCall("2", "echo"))
                batch.close()
                async for _ in batch:
                    pass  # pragma: no cover - nothing commits

        with pytest.raises(OSError, match="disk full"):
            await block()
        _quiet()

    _run(main)
