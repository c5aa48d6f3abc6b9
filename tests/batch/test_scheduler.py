"""The batch scheduler: ``run_tool_calls`` and its streaming form ``open_tool_batch``.

Reference behaviours B145-B163 (scheduler), B133-B136 (context ordering) and B127/B128
in their batch form, plus the Python-side contract: bad caps, duplicate call ids,
internal failures, enclosing cancel scopes and quiescence.

Every timing test runs on a virtual clock (trio's autojump clock, or the asyncio
harness's): a body sleeps ``d`` for its duration and the log records ``(event, call_id,
time since the test began)``, so overlap and order are checked exactly. The tests that take
the ``driver`` fixture run on both drivers (``tests/drivers.py``): ``toolnursery`` under trio
and ``toolnursery.aio`` on the native asyncio driver; the rest are about the trio driver
itself (its tasks, cancel scopes and internals).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

import toolnursery._machine._intake as intake_module
from drivers import Driver, current, neutral
from support import (
    RecorderBrokeError,
    always,
    registry_with,
    replace_batch_dispatch,
    text,
)
from toolnursery import (
    EXCLUSIVE,
    Accept,
    CancelSignal,
    Deny,
    FrozenDict,
    HookContext,
    TextContent,
    ToolBatch,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    open_tool_batch,
    parse_arguments,
    run_tool_calls,
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision
from toolnursery._pipeline._call import CallRecord as Call
from toolnursery._pipeline._dispatch import dispatch
from toolnursery.log import (
    ContextEvent,
    JsonlRecorder,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    replay_log,
)

ABORTED_BEFORE_DISPATCH = ToolExecutionResult(
    (TextContent("Error: tool call aborted before dispatch"),),
    True,
    ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH"),
)
ABORTED = ToolExecutionResult(
    (TextContent("Error: tool call aborted"),), True, ToolErrorInfo("AbortError", "ABORTED")
)


# -- helpers ------------------------------------------------------------------------


class Log:
    """``(event, call_id, time)`` in the order things happened; time is since creation."""

    def __init__(self) -> None:
        self.t0 = current().now()
        self.entries: list[tuple[str, str, float]] = []

    def add(self, event: str, call_id: str) -> None:
        self.entries.append((event, call_id, current().now() - self.t0))

    def now(self) -> float:
        return current().now() - self.t0

    def ids(self, event: str) -> list[str]:
        return [cid for e, cid, _ in self.entries if e == event]

    def at(self, event: str, call_id: str) -> float:
        (time,) = [t for e, cid, t in self.entries if e == event and cid == call_id]
        return time

    def max_running(self) -> int:
        running = peak = 0
        for event, _, _ in self.entries:
            if event == "start":
                running += 1
                peak = max(peak, running)
            elif event == "end":
                running -= 1
        return peak


class ListRecorder:
    """A recorder that keeps events (and, given a log, notes when each arrived)."""

    def __init__(self, log: Log | None = None) -> None:
        self.events: list[RecorderEvent] = []
        self.log = log

    def record(self, event: RecorderEvent, /) -> None:
        self.events.append(event)
        if self.log is not None:
            kind, call_id = describe(event)
            self.log.add(kind, call_id)

    def trace(self) -> list[str]:
        return [":".join(describe(e)) for e in self.events]


def describe(event: RecorderEvent) -> tuple[str, str]:
    if isinstance(event, ToolCallEvent):
        return "tool_call", event.call.id
    if isinstance(event, ToolResultEvent):
        return "tool_result", event.call_id
    return "context", event.call_id


def duration(args: Any) -> float:
    if isinstance(args, Mapping):
        return float(args.get("d", 0))
    return 0.0


def sleeper(
    name: str,
    log: Log,
    *,
    parallel: bool = True,
    text: str | None = None,
    live: set[str] | None = None,
) -> ToolDefinition:
    """A tool whose body sleeps ``args["d"]`` and logs start/end (end also on cancel)."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.add("start", ctx.call_id)
        if live is not None:
            live.add(ctx.call_id)
        try:
            await current().sleep(duration(args))
        finally:
            log.add("end", ctx.call_id)
            if live is not None:
                live.discard(ctx.call_id)
        return f"{text or name}:{ctx.call_id}"

    return ToolDefinition(
        name,
        f"the {name} tool",
        {"type": "object"},
        neutral(body),
        is_concurrency_safe=always if parallel else None,
    )


def neutral_registry(*definitions: ToolDefinition) -> ToolRegistry:
    """``registry_with``, each body marked loop-neutral (it awaits only what
    ``drivers.current()`` gives, or nothing)."""
    for definition in definitions:
        # The body the definition wraps (its validating ``execute`` keeps it as __wrapped__).
        neutral(getattr(definition.execute, "__wrapped__", definition.execute))
    return registry_with(*definitions)


def call(call_id: str, name: str = "p", d: float | None = None) -> ToolCall:
    return ToolCall(call_id, name, "{}" if d is None else json.dumps({"d": d}))


def context(label: str, source: str = "policy", meta: Any = None) -> HookContext:
    return HookContext((TextContent(label),), source, meta)


def post_with_context(
    seen: list[str] | None = None,
) -> Callable[
    [ToolExecution, ToolExecutionResult, Callable[[], Awaitable[PostToolDecision]]],
    Awaitable[PostToolDecision],
]:
    async def post(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        if seen is not None:
            seen.append(execution.call_id)
        return Accept(additional_contexts=(context(f"ctx-{execution.call_id}"),))

    return post


async def cancel_at(signal: CancelSignal, when: float, reason: str = "user stop") -> None:
    await current().sleep(when)
    signal.cancel(reason)


# -- B145 input planning ------------------------------------------------------------


@pytest.mark.spec("B145")
def test_each_argument_text_is_parsed_once_into_its_own_execution(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B145: ``""`` → ``{}``, invalid JSON → the raw string, each call its own execution."""

    async def main() -> None:
        parsed: list[str] = []

        def counting_parse(raw: str) -> Any:
            parsed.append(raw)
            return parse_arguments(raw)

        monkeypatch.setattr(intake_module, "parse_arguments", counting_parse)
        seen: list[tuple[str, Any, object]] = []
        classified: list[Any] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            seen.append((ctx.call_id, args, ctx.token))
            return "ok"

        def classifier(args: Any) -> bool:
            classified.append(args)
            return True

        registry = neutral_registry(
            ToolDefinition(
                "p", "p", {"type": "object"}, body, is_concurrency_safe=classifier, validate=False
            )
        )
        raws = ["", '{"a": [1, {"b": null}]}', "{not json", "5"]
        calls = [ToolCall(f"c{i}", "p", raw) for i, raw in enumerate(raws, 1)]
        results = await driver.run_tool_calls(registry, calls)

        assert [r.is_error for r in results] == [False] * 4
        assert parsed == raws  # once per call, although each is classified and executed
        # the classifier sees the same frozen value the body gets (one frozen truth)
        assert classified == [{}, {"a": (1, {"b": None})}, "{not json", 5]
        assert isinstance(classified[1], FrozenDict)
        assert [cid for cid, _, _ in seen] == ["c1", "c2", "c3", "c4"]
        assert [args for _, args, _ in seen] == [{}, {"a": (1, {"b": None})}, "{not json", 5]
        assert isinstance(seen[1][1], FrozenDict)
        assert len({id(token) for _, _, token in seen}) == 4

    driver.run(main)


@pytest.mark.spec("B145")
def test_parse_arguments_falls_back_to_the_raw_text() -> None:
    """B145: the parse rule itself, including text too deep to decode."""
    assert parse_arguments("") == {}
    assert parse_arguments("null") is None
    assert parse_arguments('{"x": 1.5}') == {"x": 1.5}
    assert parse_arguments("[1,") == "[1,"
    deep = "[" * 100_000
    assert parse_arguments(deep) == deep


@pytest.mark.spec("B033", "B145")
def test_unparseable_text_reaches_a_validating_tool_as_a_string(driver: Driver) -> None:
    """B033/B145: a define_tool tool answers the raw string with its invalid-arguments error."""

    async def main() -> None:

        async def read(args: Any, ctx: ToolRunContext) -> str:
            raise AssertionError("the body must not run")

        registry = neutral_registry(
            define_tool(
                name="read",
                description="read a file",
                parameters={"path": {"type": "string", "required": True}},
                execute=read,
            )
        )
        (result,) = await driver.run_tool_calls(registry, [ToolCall("c1", "read", '{"path" "a"}')])
        assert result.is_error
        assert text(result) == 'Error: invalid arguments: "arguments" must be an object'

    driver.run(main)


# -- B146-B149 grouping, barriers, lazy classification --------------------------------


@pytest.mark.spec("B146")
def test_parallel_siblings_all_start_before_any_completes_in_model_order(driver: Driver) -> None:
    """B146: three parallel calls all start (in model order) before any completes.

    trio runs tasks spawned together in either order, so this repeats the batch.
    """

    async def main() -> None:
        for _ in range(20):
            log = Log()
            registry = neutral_registry(sleeper("p", log))
            await driver.run_tool_calls(
                registry, [call("c1", d=1), call("c2", d=1), call("c3", d=1)]
            )
            assert [(e, cid) for e, cid, _ in log.entries[:3]] == [
                ("start", "c1"),
                ("start", "c2"),
                ("start", "c3"),
            ]
            assert [t for e, _, t in log.entries if e == "start"] == [0, 0, 0]
            assert [t for e, _, t in log.entries if e == "end"] == [1, 1, 1]

    driver.run(main)


@pytest.mark.spec("B147")
def test_an_exclusive_call_is_a_barrier(driver: Driver) -> None:
    """B147: [r(A1) parallel, w(A2) exclusive, r(A3) parallel] runs as three groups."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("r", log), sleeper("w", log, parallel=False))
        await driver.run_tool_calls(
            registry, [call("A1", "r", 1), call("A2", "w", 1), call("A3", "r", 1)]
        )
        assert log.entries == [
            ("start", "A1", 0),
            ("end", "A1", 1),
            ("start", "A2", 1),
            ("end", "A2", 2),
            ("start", "A3", 2),
            ("end", "A3", 3),
        ]

    driver.run(main)


@pytest.mark.spec("B147")
def test_parallel_runs_overlap_on_either_side_of_a_barrier(driver: Driver) -> None:
    """B147: [p1 p2 | x | p3 p4]: each pair overlaps; x overlaps nothing."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log), sleeper("x", log, parallel=False))
        calls = [
            call("p1", d=2),
            call("p2", d=1),
            call("x", "x", 1),
            call("p3", d=1),
            call("p4", d=2),
        ]
        await driver.run_tool_calls(registry, calls)
        assert log.at("start", "p2") == 0
        assert log.at("start", "x") == 2  # after the slower of p1/p2
        assert log.at("start", "p3") == log.at("start", "p4") == 3
        assert log.max_running() == 2

    driver.run(main)


@pytest.mark.spec("B148")
def test_pending_calls_are_reclassified_after_a_barrier_replaces_their_tool(driver: Driver) -> None:
    """B148: the barrier's body swaps ``x`` for an exclusive tool; c2 and c3 run one at a time."""

    async def main() -> None:
        log = Log()
        registry = ToolRegistry()
        dispose_safe = registry.register(sleeper("x", log, text="old"))

        async def replace(args: Any, ctx: ToolRunContext) -> str:
            dispose_safe()
            registry.register(sleeper("x", log, parallel=False, text="new"))
            return "replaced"

        registry.register(ToolDefinition("replace", "swap x", {"type": "object"}, neutral(replace)))
        results = await driver.run_tool_calls(
            registry, [call("c1", "replace"), call("c2", "x", 1), call("c3", "x", 1)]
        )
        assert [text(r) for r in results] == ["replaced", "new:c2", "new:c3"]
        assert log.at("start", "c3") == log.at("end", "c2") == 1

    driver.run(main)


@pytest.mark.spec("B148", "B103")
def test_a_result_observer_that_makes_the_next_call_exclusive_stops_the_pool(
    driver: Driver,
) -> None:
    """B148/B103: reclassification happens after earlier commits and their observers."""

    async def main() -> None:
        log = Log()
        registry = ToolRegistry()
        dispose_initial = registry.register(sleeper("x", log, text="old"))

        def observer(execution: ToolExecution, result: ToolExecutionResult) -> None:
            if execution.call_id == "c1":
                dispose_initial()
                registry.register(sleeper("x", log, parallel=False, text="new"))

        registry.on_result(observer)
        results = await driver.run_tool_calls(
            registry, [call("c1", "x", 1), call("c2", "x", 3), call("c3", "x", 1)], max_parallel=2
        )
        assert [text(r) for r in results] == ["old:c1", "old:c2", "new:c3"]
        # c3 could have taken c1's slot at t=1; now exclusive, it waits for c2 to drain.
        assert log.at("start", "c3") == log.at("end", "c2") == 3

    driver.run(main)


@pytest.mark.spec("B149")
def test_started_calls_keep_their_definition_and_mode(driver: Driver) -> None:
    """B149/B086: a started call keeps its body and mode; the tool resolves at dispatch."""

    async def main() -> None:
        log = Log()
        registry = ToolRegistry()
        dispose_old = registry.register(sleeper("x", log, text="old"))

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            if execution.call_id == "c2":
                await driver.sleep(0.5)  # c1's body is running by now
                dispose_old()
                registry.register(sleeper("x", log, parallel=False, text="new"))
            return await next_()

        registry.on_pre_execute(pre)
        results = await driver.run_tool_calls(registry, [call("c1", "x", 2), call("c2", "x", 1)])
        # c1 keeps the old body; c2 was prepared under the old definition but resolves
        # its tool at dispatch, so it runs the new body — still in the parallel pool
        # it started in (its classification is not revisited).
        assert [text(r) for r in results] == ["old:c1", "new:c2"]
        assert log.at("start", "c2") == 0.5 < log.at("end", "c1") == 2

    driver.run(main)


# -- B150-B152 the rolling pool and its cap -------------------------------------------


@pytest.mark.spec("B150")
def test_rolling_pool_starts_at_most_the_cap_and_replenishes(driver: Driver) -> None:
    """B150: cap 2, four calls: tool_call c1, c2, tool_result c1, tool_call c3, ..."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log))
        calls = [call("c1", d=1), call("c2", d=3), call("c3", d=1), call("c4", d=1)]
        results = await driver.run_tool_calls(registry, calls, max_parallel=2, recorder=recorder)
        assert recorder.trace()[:4] == [
            "tool_call:c1",
            "tool_call:c2",
            "tool_result:c1",
            "tool_call:c3",
        ]
        assert [r for r in recorder.trace() if r.startswith("tool_result")] == [
            "tool_result:c1",
            "tool_result:c2",
            "tool_result:c3",
            "tool_result:c4",
        ]
        assert [text(r) for r in results] == ["p:c1", "p:c2", "p:c3", "p:c4"]
        assert log.max_running() == 2
        assert (log.at("start", "c3"), log.at("start", "c4")) == (1, 2)

    driver.run(main)


@pytest.mark.spec("B150")
def test_a_settled_call_frees_its_slot_before_it_commits(driver: Driver) -> None:
    """B150: c2 settles first; c3 takes its slot although c2 waits to commit behind c1."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder(log)
        registry = neutral_registry(sleeper("p", log))
        calls = [call("c1", d=5), call("c2", d=1), call("c3", d=1)]
        await driver.run_tool_calls(registry, calls, max_parallel=2, recorder=recorder)
        assert log.at("start", "c3") == 1
        assert log.at("tool_result", "c2") == 5
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_call:c2",
            "tool_call:c3",
            "tool_result:c1",
            "tool_result:c2",
            "tool_result:c3",
        ]

    driver.run(main)


@pytest.mark.spec("B151")
def test_a_cap_of_one_is_fully_serial(driver: Driver) -> None:
    """B151: with max_parallel=1 the second body starts only after the first settles."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        await driver.run_tool_calls(registry, [call("c1", d=1), call("c2", d=1)], max_parallel=1)
        assert [(e, cid) for e, cid, _ in log.entries] == [
            ("start", "c1"),
            ("end", "c1"),
            ("start", "c2"),
            ("end", "c2"),
        ]
        assert log.at("start", "c2") == 1

    driver.run(main)


@pytest.mark.spec("B152")
@pytest.mark.parametrize("cap", [0, -1, 1.5, True, False, "2", None, 2.0])
def test_max_parallel_must_be_a_positive_integer(driver: Driver, cap: Any) -> None:
    """B152: 0, -1, 1.5, True … are rejected before anything runs."""

    async def main() -> None:
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append(ctx.call_id)
            return "ok"

        registry = neutral_registry(ToolDefinition("p", "p", {"type": "object"}, body))
        with pytest.raises(ValueError, match="max_parallel must be a positive integer"):
            await driver.run_tool_calls(registry, [call("c1")], max_parallel=cap)
        with pytest.raises(ValueError, match="max_parallel must be a positive integer"):
            async with driver.open_tool_batch(registry, max_parallel=cap):
                pass  # pragma: no cover - never entered
        assert ran == []

    driver.run(main)


@pytest.mark.spec("B152")
def test_the_default_cap_is_ten(driver: Driver) -> None:
    """B152: omitting max_parallel caps a batch at 10 bodies."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        await driver.run_tool_calls(registry, [call(f"c{i}", d=1) for i in range(25)])
        assert log.max_running() == 10
        assert log.now() == 3

    driver.run(main)


def test_signal_must_be_a_cancel_signal(driver: Driver) -> None:
    """A batch signal that is not a CancelSignal is a TypeError, not a silent no-op."""

    async def main() -> None:
        registry = ToolRegistry()
        with pytest.raises(TypeError, match="signal must be a CancelSignal"):
            await driver.run_tool_calls(registry, [], signal=trio.Event())  # type: ignore[arg-type]

    driver.run(main)


def test_an_empty_batch_returns_no_results(driver: Driver) -> None:
    """No calls: no events, no results, and it returns at once."""

    async def main() -> None:
        recorder = ListRecorder()
        assert await driver.run_tool_calls(ToolRegistry(), [], recorder=recorder) == []
        assert recorder.events == []

    driver.run(main)


# -- B153-B156 ordered prepare and commit ---------------------------------------------


@pytest.mark.spec("B153")
def test_pre_and_post_execute_observe_model_order(driver: Driver) -> None:
    """B153: pre-execute runs one call at a time in model order; post-execute at commit."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            log.add("pre-enter", execution.call_id)
            await driver.sleep(0.25)
            log.add("pre-exit", execution.call_id)
            return await next_()

        async def post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[PostToolDecision]],
        ) -> PostToolDecision:
            log.add("post", execution.call_id)
            return await next_()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        # Bodies settle in reverse model order.
        await driver.run_tool_calls(registry, [call("c1", d=3), call("c2", d=2), call("c3", d=1)])
        prepare = [(e, cid) for e, cid, _ in log.entries if e.startswith("pre")]
        assert prepare == [
            ("pre-enter", "c1"),
            ("pre-exit", "c1"),
            ("pre-enter", "c2"),
            ("pre-exit", "c2"),
            ("pre-enter", "c3"),
            ("pre-exit", "c3"),
        ]
        assert log.ids("post") == ["c1", "c2", "c3"]
        assert log.ids("end") == ["c3", "c2", "c1"]
        # Only dispatch overlaps: c1's body runs while c2 and c3 are being prepared.
        assert log.at("start", "c1") == 0.25 < log.at("pre-exit", "c3") == 0.75
        assert log.at("post", "c1") == 3.25

    driver.run(main)


@pytest.mark.spec("B154")
def test_results_commit_in_model_order_when_a_later_call_settles_first(driver: Driver) -> None:
    """B154: no tool_result is recorded until every earlier call has committed."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder(log)
        registry = neutral_registry(sleeper("p", log))
        results = await driver.run_tool_calls(
            registry, [call("c1", d=3), call("c2", d=1)], recorder=recorder
        )
        assert log.at("end", "c2") == 1
        assert log.at("tool_result", "c1") == log.at("tool_result", "c2") == 3
        assert log.ids("tool_result") == ["c1", "c2"]
        assert [text(r) for r in results] == ["p:c1", "p:c2"]

    driver.run(main)


@pytest.mark.spec("B155")
def test_durable_events_carry_the_raw_call_and_pair_by_batch_and_index(driver: Driver) -> None:
    """B155: tool_call before pre-execute with the raw arguments; tool_result at commit."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder(log)
        registry = neutral_registry(sleeper("p", log))

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            log.add("pre", execution.call_id)
            return await next_()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post_with_context())
        raw = '{"d": 1,   "note": "kept verbatim"}'
        calls = [ToolCall("c1", "p", raw), call("c2")]
        await driver.run_tool_calls(registry, calls, recorder=recorder)
        await driver.run_tool_calls(registry, [call("c3")], recorder=recorder)

        assert [(e, cid) for e, cid, _ in log.entries if e in ("tool_call", "pre")][:2] == [
            ("tool_call", "c1"),
            ("pre", "c1"),
        ]
        first = recorder.events[0]
        assert isinstance(first, ToolCallEvent)
        assert first.call is calls[0]
        assert first.call.arguments == raw
        results = [e for e in recorder.events if isinstance(e, ToolResultEvent)]
        assert [(e.call_id, e.index) for e in results] == [("c1", 0), ("c2", 1), ("c3", 0)]
        assert results[0].batch == results[1].batch != results[2].batch
        # Contexts are never on tool_result: each is recorded once, as a context event.
        assert all(e.result.additional_contexts == () for e in results)
        contexts = [e for e in recorder.events if isinstance(e, ContextEvent)]
        assert [(e.call_id, e.index) for e in contexts] == [("c1", 0), ("c2", 1), ("c3", 0)]
        wire = msgspec.json.decode(msgspec.json.encode(results[0]))
        # The times (see test_recorder.py) ride along: admitted <= began <= ended <= committed.
        times = [wire.pop(key) for key in ("admitted", "began", "ended", "t")]
        assert times == sorted(times)
        assert wire == {
            "event": "tool_result",
            "batch": results[0].batch,
            "index": 0,
            "callId": "c1",
            "result": {"content": [{"type": "text", "text": "p:c1"}], "isError": False},
        }

    driver.run(main)


@pytest.mark.spec("B156")
def test_calls_resolved_in_prepare_commit_in_order_without_dispatch(driver: Driver) -> None:
    """B156: [c1 ok, c2 denied, c3 pre raises]: only c1 runs; post sees c1, c2."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        post_seen: list[str] = []

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            if execution.call_id == "c2":
                return Deny("blocked by policy")
            if execution.call_id == "c3":
                raise RuntimeError("pre exploded")
            return await next_()

        async def post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[PostToolDecision]],
        ) -> PostToolDecision:
            post_seen.append(execution.call_id)
            return await next_()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        results = await driver.run_tool_calls(registry, [call("c1", d=1), call("c2"), call("c3")])
        assert log.ids("start") == ["c1"]
        assert post_seen == ["c1", "c2"]
        assert [text(r) for r in results] == [
            "p:c1",
            "Error: blocked by policy",
            "Error: pre exploded",
        ]
        assert [r.is_error for r in results] == [False, True, True]

    driver.run(main)


@pytest.mark.spec("B156")
def test_calls_resolved_in_prepare_do_not_occupy_pool_slots(driver: Driver) -> None:
    """B156: with cap 2, a denied call between two long calls leaves the slot free."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))

        def guard(execution: ToolExecution) -> str | None:
            return "no" if execution.call_id == "c2" else None

        registry.guard(guard)
        results = await driver.run_tool_calls(
            registry, [call("c1", d=5), call("c2", d=5), call("c3", d=5)], max_parallel=2
        )
        assert log.ids("start") == ["c1", "c3"]
        assert log.at("start", "c3") == 0
        assert text(results[1]) == "Error: no"

    driver.run(main)


# -- B157-B161 abort --------------------------------------------------------------------


class HookCounter:
    """Registers one hook in every phase and records which call each saw."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.seen: dict[str, list[str]] = {p: [] for p in ("pre", "guard", "wrap", "post", "obs")}

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            self.seen["pre"].append(execution.call_id)
            return await next_()

        def guard(execution: ToolExecution) -> None:
            self.seen["guard"].append(execution.call_id)

        async def wrap(
            view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
        ) -> ToolExecutionResult:
            self.seen["wrap"].append(view.call_id)
            return await next_()

        async def post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[PostToolDecision]],
        ) -> PostToolDecision:
            self.seen["post"].append(execution.call_id)
            return await next_()

        def observer(execution: ToolExecution, result: ToolExecutionResult) -> None:
            self.seen["obs"].append(execution.call_id)

        registry.on_pre_execute(pre)
        registry.guard(guard)
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        registry.on_result(observer)


@pytest.mark.spec("B157", "B161")
def test_an_already_aborted_batch_records_synthetic_pairs_only(driver: Driver) -> None:
    """B157/B161: no hook, no body; every call gets tool_call + ABORTED_BEFORE_DISPATCH."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log))
        hooks = HookCounter(registry)
        signal = CancelSignal()
        signal.cancel("user stop")
        results = await driver.run_tool_calls(
            registry, [call("c1"), call("c2")], signal=signal, recorder=recorder
        )
        assert results == [ABORTED_BEFORE_DISPATCH, ABORTED_BEFORE_DISPATCH]
        assert log.entries == []
        assert all(seen == [] for seen in hooks.seen.values())
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_result:c1",
            "tool_call:c2",
            "tool_result:c2",
        ]
        assert msgspec.json.encode(results[0]) == (
            b'{"content":[{"type":"text","text":"Error: tool call aborted before dispatch"}],'
            b'"isError":true,"error":{"name":"AbortError","code":"ABORTED_BEFORE_DISPATCH"}}'
        )

    driver.run(main)


@pytest.mark.spec("B158")
def test_abort_during_ordered_pre_execute_stops_starting_siblings(driver: Driver) -> None:
    """B158: c1 resolves ABORTED_BEFORE_DISPATCH through post-execute; c2 is synthetic."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log))
        signal = CancelSignal()
        post_seen: list[str] = []

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            if execution.call_id == "c1":
                signal.cancel("user stop")
            return await next_()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post_with_context(post_seen))
        results = await driver.run_tool_calls(
            registry, [call("c1"), call("c2")], signal=signal, recorder=recorder
        )
        assert log.entries == []
        assert post_seen == ["c1"]
        assert results[0].error == ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH")
        assert results[0].additional_contexts == (context("ctx-c1"),)  # it went through post
        assert results[1] == ABORTED_BEFORE_DISPATCH
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_result:c1",
            "tool_call:c2",
            "tool_result:c2",
            "context:c1",
        ]

    driver.run(main)


@pytest.mark.spec("B159", "B136")
def test_abort_drains_the_pool_then_contexts_follow_every_result(driver: Driver) -> None:
    """B159/B136: no replenishment; in-flight bodies drain and commit; contexts come last."""

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log, live=live))
        post_seen: list[str] = []
        registry.on_post_execute(post_with_context(post_seen))
        signal = CancelSignal()
        async with driver.background(cancel_at, signal, 1):
            results = await driver.run_tool_calls(
                registry,
                [call(f"c{i}", d=5) for i in range(1, 5)],
                signal=signal,
                max_parallel=2,
                recorder=recorder,
            )
            assert log.now() == 1
            assert live == set()
        assert log.ids("start") == ["c1", "c2"]
        assert (log.at("end", "c1"), log.at("end", "c2")) == (1, 1)  # cancelled, finally ran
        assert [r.error.code if r.error else None for r in results] == [
            "ABORTED",
            "ABORTED",
            "ABORTED_BEFORE_DISPATCH",
            "ABORTED_BEFORE_DISPATCH",
        ]
        assert results[2:] == [ABORTED_BEFORE_DISPATCH] * 2
        assert post_seen == ["c1", "c2"]
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_call:c2",
            "tool_result:c1",
            "tool_result:c2",
            "tool_call:c3",
            "tool_result:c3",
            "tool_call:c4",
            "tool_result:c4",
            "context:c1",
            "context:c2",
        ]

    driver.run(main)


@pytest.mark.spec("B159")
@pytest.mark.parametrize("how", ["pooled", "with-wrapper", "inline"])
def test_abort_waits_for_an_uncooperative_body(driver: Driver, how: str) -> None:
    """B159/B089/B125: a started body is never abandoned; its late success is ABORTED.

    Pooled bodies are cancelled through the pool's scope (trio) or their task (asyncio),
    wrapped ones and a barrier (run inline by the driver) through a scope or a task of
    their own.
    """

    async def main() -> None:
        log = Log()

        async def stubborn(args: Any, ctx: ToolRunContext) -> str:
            log.add("start", ctx.call_id)
            await driver.sleep_shielded(3)
            log.add("end", ctx.call_id)
            return "finished anyway"

        registry = neutral_registry(
            ToolDefinition(
                "s",
                "stubborn",
                {"type": "object"},
                stubborn,
                is_concurrency_safe=None if how == "inline" else always,
            )
        )
        if how == "with-wrapper":

            async def wrap(
                view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
            ) -> ToolExecutionResult:
                return await next_()

            registry.on_execute(wrap)
        signal = CancelSignal()
        async with driver.background(cancel_at, signal, 1):
            results = await driver.run_tool_calls(
                registry, [call("c1", "s"), call("c2", "s")], signal=signal, max_parallel=1
            )
            assert log.now() == 3
        assert results == [ABORTED, ABORTED_BEFORE_DISPATCH]
        assert log.ids("end") == ["c1"]

    driver.run(main)


@pytest.mark.spec("B160", "B161")
def test_abort_skips_the_exclusive_barrier_after_a_parallel_group(driver: Driver) -> None:
    """B160/B161: the barrier never runs; its synthetic pair bypasses every hook."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log), sleeper("x", log, parallel=False))
        hooks = HookCounter(registry)
        signal = CancelSignal()
        async with driver.background(cancel_at, signal, 1):
            results = await driver.run_tool_calls(
                registry,
                [call("c1", d=5), call("c2", d=5), call("c3", "x", 1)],
                signal=signal,
                max_parallel=2,
                recorder=recorder,
            )
        assert log.ids("start") == ["c1", "c2"]
        assert results[-1] == ABORTED_BEFORE_DISPATCH
        assert recorder.trace()[-2:] == ["tool_call:c3", "tool_result:c3"]
        for phase, seen in hooks.seen.items():
            assert "c3" not in seen, phase
        assert hooks.seen["post"] == hooks.seen["obs"] == ["c1", "c2"]

    driver.run(main)


# -- B162 internal failures -----------------------------------------------------------


@pytest.mark.spec("B162")
def test_a_raising_recorder_stops_starting_drains_and_raises_unwrapped(driver: Driver) -> None:
    """B162: nothing new starts, in-flight bodies settle (finally ran), first failure as itself."""

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        registry = neutral_registry(sleeper("p", log, live=live))
        events: list[str] = []

        class Broken:
            def record(self, event: RecorderEvent, /) -> None:
                kind, call_id = describe(event)
                if kind == "tool_result" and call_id == "c1":
                    raise RecorderBrokeError("disk full")
                events.append(f"{kind}:{call_id}")

        calls = [call("c1", d=1), call("c2", d=5), call("c3", d=5), call("c4", d=1)]
        with pytest.raises(RecorderBrokeError, match="disk full") as info:
            await driver.run_tool_calls(registry, calls, max_parallel=3, recorder=Broken())
        assert type(info.value) is RecorderBrokeError  # not an ExceptionGroup
        assert log.now() == 5  # waited for c2 and c3
        assert log.ids("start") == ["c1", "c2", "c3"]
        assert (log.at("end", "c2"), log.at("end", "c3")) == (5, 5)  # ran to the end
        assert live == set()
        assert events == ["tool_call:c1", "tool_call:c2", "tool_call:c3"]  # c4 never started

    driver.run(main)


class SchedulerExplodedError(Exception):
    pass


class SiblingFailedError(Exception):
    pass


@pytest.mark.spec("B162")
async def test_a_failing_stage_surfaces_the_first_failure_after_draining(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B162: c1's dispatch raises while c3 is in prepare: c3 never dispatches, c2 drains."""
    log = Log()
    recorder = ListRecorder()
    registry = registry_with(sleeper("p", log))
    real_dispatch = dispatch

    async def failing_dispatch(call: Call, *, carried: bool = False) -> None:
        call_id = call.execution.call_id
        if call_id == "c1":
            await trio.sleep(1)
            raise SchedulerExplodedError("scheduler exploded")
        await real_dispatch(call, carried=carried)
        raise SiblingFailedError("sibling failed while draining")

    async def pre(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        if execution.call_id == "c3":
            await trio.sleep(2)
        return await next_()

    replace_batch_dispatch(monkeypatch, failing_dispatch)
    registry.on_pre_execute(pre)
    with pytest.raises(SchedulerExplodedError) as info:
        await run_tool_calls(
            registry,
            [call("c1"), call("c2", d=3), call("c3", d=1)],
            max_parallel=3,
            recorder=recorder,
        )
    assert type(info.value) is SchedulerExplodedError
    assert log.ids("start") == ["c2"]
    assert log.at("end", "c2") == 3 == log.now()
    # No result is fabricated: the started calls' tool_call events stay unmatched.
    assert recorder.trace() == ["tool_call:c1", "tool_call:c2", "tool_call:c3"]


@pytest.mark.spec("B162")
@pytest.mark.parametrize("driver", ["waiting", "in-post-execute"])
async def test_a_worker_failure_reaches_the_driver_wherever_it_is(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch, driver: str
) -> None:
    """B162: the driver notices a worker's failure when it wakes or after a hook returns."""
    log = Log()
    recorder = ListRecorder()
    registry = registry_with(sleeper("p", log))

    async def failing_dispatch(call: Call, *, carried: bool = False) -> None:
        if call.execution.call_id == "c2":
            await trio.sleep(1)
            raise SchedulerExplodedError("worker exploded")
        await dispatch(call, carried=carried)

    async def slow_post(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        await trio.sleep(2)
        return await next_()

    replace_batch_dispatch(monkeypatch, failing_dispatch)
    if driver == "in-post-execute":
        registry.on_post_execute(slow_post)
    calls = [call("c1", d=0 if driver == "in-post-execute" else 3), call("c2"), call("c3", d=1)]
    with pytest.raises(SchedulerExplodedError) as info:
        await run_tool_calls(registry, calls, recorder=recorder)
    assert type(info.value) is SchedulerExplodedError
    if driver == "waiting":
        assert log.now() == 3  # c1 and c3 drained first
        assert recorder.trace() == ["tool_call:c1", "tool_call:c2", "tool_call:c3"]
    else:
        assert log.now() == 2  # c1's post-execute finished; its result is not recorded
        assert "tool_result:c1" not in recorder.trace()
    assert sorted(log.ids("end")) == ["c1", "c3"]


async def test_an_internal_failure_after_the_block_raised_keeps_the_blocks_exception(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The block's exception came first; a recorder failure while draining is its context."""
    log = Log()
    registry = registry_with(sleeper("p", log))

    class Broken:
        def record(self, event: RecorderEvent, /) -> None:
            if isinstance(event, ToolResultEvent):
                raise RecorderBrokeError("log closed")

    async def stream_then_fail() -> None:
        async with open_tool_batch(registry, recorder=Broken()) as batch:
            batch.submit(call("c1", d=5))
            await trio.sleep(1)
            raise BlockFailedError("stream broke")

    with pytest.raises(BlockFailedError) as info:
        await stream_then_fail()
    assert log.at("end", "c1") == 1
    context = info.value.__context__
    assert isinstance(context, BaseExceptionGroup)
    assert context.subgroup(RecorderBrokeError) is not None


# -- B163 the cap is per batch ----------------------------------------------------------


@pytest.mark.spec("B163")
def test_the_cap_is_per_batch_and_bodies_see_distinct_executions(driver: Driver) -> None:
    """B163: two concurrent batches each honour their own cap; executions are distinct."""

    async def main() -> None:
        log = Log()
        tokens: list[object] = []
        registry = neutral_registry(sleeper("p", log))

        def observer(execution: ToolExecution, result: ToolExecutionResult) -> None:
            tokens.append(execution.token)

        registry.on_result(observer)

        async def batch(prefix: str) -> None:
            await driver.run_tool_calls(
                registry, [call(f"{prefix}{i}", d=1) for i in range(4)], max_parallel=2
            )

        async with driver.open_nursery() as nursery:
            nursery.start_soon(batch, "a")
            nursery.start_soon(batch, "b")
        assert log.max_running() == 4
        for prefix in ("a", "b"):
            starts = [t for e, cid, t in log.entries if e == "start" and cid.startswith(prefix)]
            assert starts == [0, 0, 1, 1]
        assert len({id(t) for t in tokens}) == 8

    driver.run(main)


# -- B133-B136 contexts -----------------------------------------------------------------


@pytest.mark.spec("B133")
def test_deferred_contexts_follow_the_outer_result_in_call_order(driver: Driver) -> None:
    """B133: defer_context never injects immediately; contexts keep source and meta."""

    async def main() -> None:
        recorder = ListRecorder()
        during: list[int] = []

        async def composite(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("first", "tool-a", {"k": 1}))
            during.append(len(recorder.events))
            ctx.defer_context(context("second", "tool-b"))
            during.append(len(recorder.events))
            return "outer"

        registry = neutral_registry(ToolDefinition("c", "composite", {"type": "object"}, composite))
        (result,) = await driver.run_tool_calls(registry, [call("c1", "c")], recorder=recorder)
        assert during == [1, 1]  # only the tool_call was recorded while the body ran
        assert recorder.trace() == ["tool_call:c1", "tool_result:c1", "context:c1", "context:c1"]
        recorded = [e.context for e in recorder.events if isinstance(e, ContextEvent)]
        assert recorded == [context("first", "tool-a", {"k": 1}), context("second", "tool-b")]
        assert result.additional_contexts == tuple(recorded)

    driver.run(main)


@pytest.mark.spec("B134")
def test_contexts_come_after_all_results_in_model_order(driver: Driver) -> None:
    """B134: contexts never interleave with results and follow model, not settlement, order."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log))
        registry.on_post_execute(post_with_context())
        results = await driver.run_tool_calls(
            registry, [call("c1", d=2), call("c2", d=1)], max_parallel=2, recorder=recorder
        )
        assert log.ids("end") == ["c2", "c1"]
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_call:c2",
            "tool_result:c1",
            "tool_result:c2",
            "context:c1",
            "context:c2",
        ]
        contexts = [e.context for e in recorder.events if isinstance(e, ContextEvent)]
        assert contexts == [context("ctx-c1"), context("ctx-c2")]
        assert [r.additional_contexts for r in results] == [
            (context("ctx-c1"),),
            (context("ctx-c2"),),
        ]

    driver.run(main)


@pytest.mark.spec("B135")
def test_contexts_are_snapshotted_when_the_call_commits(driver: Driver) -> None:
    """B135 (snapshot part): mutating a deferred context's list later changes nothing.

    ``agent.inject()`` has no counterpart here: toolnursery has no agent inbox.
    """

    async def main() -> None:
        recorder = ListRecorder()
        shared: list[Any] = [TextContent("original")]

        async def defer(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(HookContext(shared, "tool"))  # type: ignore[arg-type]
            return "deferred"

        async def mutate(args: Any, ctx: ToolRunContext) -> str:
            shared.append(TextContent("added later"))
            return "mutated"

        registry = neutral_registry(
            ToolDefinition("defer", "d", {"type": "object"}, defer),
            ToolDefinition("mutate", "m", {"type": "object"}, mutate),
        )
        results = await driver.run_tool_calls(
            registry, [call("c1", "defer"), call("c2", "mutate")], recorder=recorder
        )
        (event,) = [e for e in recorder.events if isinstance(e, ContextEvent)]
        assert event.context.content == (TextContent("original"),)
        assert results[0].additional_contexts[0].content == (TextContent("original"),)

    driver.run(main)


# -- B127/B128 in batch form ------------------------------------------------------------


@pytest.mark.spec("B127")
@pytest.mark.parametrize("which", ["caller", "batch"])
def test_a_body_that_aborts_the_batch_and_returns_success_is_aborted(
    driver: Driver, which: str
) -> None:
    """B127: its result is ABORTED, siblings are synthetic, its contexts still follow."""

    async def main() -> None:
        recorder = ListRecorder()
        signal = CancelSignal()
        ran: list[str] = []

        async def stopper(args: Any, ctx: ToolRunContext) -> str:
            ran.append(ctx.call_id)
            (signal if which == "caller" else ctx.signal).cancel("stop requested")
            return "done"

        async def sibling(args: Any, ctx: ToolRunContext) -> str:
            ran.append(ctx.call_id)
            return "never"

        registry = neutral_registry(
            ToolDefinition("stop", "s", {"type": "object"}, stopper),
            ToolDefinition("p", "p", {"type": "object"}, sibling, is_concurrency_safe=always),
        )
        registry.on_post_execute(post_with_context())
        results = await driver.run_tool_calls(
            registry, [call("c1", "stop"), call("c2")], signal=signal, recorder=recorder
        )
        assert ran == ["c1"]
        assert results[0] == msgspec.structs.replace(
            ABORTED, additional_contexts=(context("ctx-c1"),)
        )
        assert results[1] == ABORTED_BEFORE_DISPATCH
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_result:c1",
            "tool_call:c2",
            "tool_result:c2",
            "context:c1",
        ]
        # Aborting the batch from inside never fires the caller's signal.
        assert signal.cancelled is (which == "caller")

    driver.run(main)


@pytest.mark.spec("B128")
def test_a_batch_cancelled_before_tools_run_leaves_a_balanced_log(
    driver: Driver, tmp_path: Path
) -> None:
    """B128: bodies never run, yet every recorded call replays with an error result."""

    async def main() -> None:
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append(ctx.call_id)
            return "ok"

        registry = neutral_registry(ToolDefinition("p", "p", {"type": "object"}, body))
        signal = CancelSignal()
        signal.cancel("agent.cancel()")
        path = tmp_path / "log.jsonl"
        calls = [call("c1"), call("c2")]
        with JsonlRecorder(path) as recorder:
            await driver.run_tool_calls(registry, calls, signal=signal, recorder=recorder)
        assert ran == []
        assert replay_log(path) == [(c, ABORTED_BEFORE_DISPATCH) for c in calls]

    driver.run(main)


# -- duplicates, unknown tools ----------------------------------------------------------


def test_a_duplicate_call_id_gets_an_error_result_without_running(driver: Driver) -> None:
    """The later duplicate gets DUPLICATE_CALL_ID and bypasses the registry; both get results."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log), sleeper("x", log, parallel=False))
        hooks = HookCounter(registry)
        calls = [call("c1", d=1), call("c1", "x", 1), call("c2", d=1)]
        results = await driver.run_tool_calls(registry, calls, recorder=recorder)
        assert len(results) == 3
        assert text(results[0]) == "p:c1"
        assert results[1] == ToolExecutionResult(
            (TextContent('Error: duplicate tool call id "c1" in this batch'),),
            True,
            ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID"),
        )
        assert text(results[2]) == "p:c2"
        assert log.ids("start") == ["c1", "c2"]
        assert hooks.seen["pre"] == hooks.seen["obs"] == ["c1", "c2"]
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_call:c1",
            "tool_call:c2",
            "tool_result:c1",
            "tool_result:c1",
            "tool_result:c2",
        ]
        assert [e.index for e in recorder.events if isinstance(e, ToolResultEvent)] == [0, 1, 2]

    driver.run(main)


def test_an_unknown_tool_mid_batch_is_an_exclusive_error_and_the_rest_run(driver: Driver) -> None:
    """B086/B138: ``ghost`` is UNKNOWN_TOOL (through post-execute); its neighbours run."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        post_seen: list[str] = []
        registry.on_post_execute(post_with_context(post_seen))
        results = await driver.run_tool_calls(
            registry, [call("c1", d=1), call("c2", "ghost"), call("c3", d=1)]
        )
        assert results[1].error == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
        assert text(results[1]) == 'Error: unknown tool "ghost"'
        assert [text(r) for r in (results[0], results[2])] == ["p:c1", "p:c3"]
        assert post_seen == ["c1", "c2", "c3"]
        # An unknown tool classifies exclusive: a barrier between c1 and c3.
        assert log.at("start", "c3") == log.at("end", "c1") == 1

    driver.run(main)


# -- cancellation from outside, quiescence ----------------------------------------------


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "with-wrapper"])
@pytest.mark.parametrize("barrier", [False, True], ids=["in-pool", "in-barrier"])
def test_an_enclosing_cancel_scope_cancels_the_batch_and_leaves_nothing_running(
    driver: Driver, wrapped: bool, barrier: bool
) -> None:
    """Cancelled from the caller's scope (trio) or an enclosing ``asyncio.timeout``
    propagates, as one cancellation, after the bodies unwind; nothing is left running.

    Where the drivers differ: trio's cancellation is level-triggered, so the trio driver
    commits nothing more once its caller is cancelled (no result reaches the recorder); the
    asyncio driver aborts the batch and drains it, so every call commits (``ABORTED``,
    ``ABORTED_BEFORE_DISPATCH``) before ``CancelledError`` propagates.
    """
    recorded: list[str] = []

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log, live=live), sleeper("x", log, parallel=False))
        if wrapped:
            HookCounter(registry)
        calls = [call("c1", d=5), call("c2", d=5), call("c3", "x", 1)]
        if barrier:
            calls = [call("c0", "x", 5), *calls]
        before = driver.tasks()
        propagated: list[BaseException] = []
        async with driver.move_on_after(1) as scope:
            try:
                await driver.run_tool_calls(registry, calls, recorder=recorder)
            except driver.Cancelled as exc:
                propagated.append(exc)
                raise
        assert scope.cancelled_caught
        assert len(propagated) == 1
        assert log.now() == 1
        assert live == set()
        assert sorted(log.ids("end")) == (["c0"] if barrier else ["c1", "c2"])
        assert driver.tasks() == before
        recorded.extend(r for r in recorder.trace() if r.startswith("tool_result"))

    driver.run(main)
    if driver.name == "trio":
        assert recorded == []
    else:
        assert recorded == [f"tool_result:c{i}" for i in range(0 if barrier else 1, 4)]


def test_nothing_started_is_running_when_run_tool_calls_returns(driver: Driver) -> None:
    """Quiescence: every body (and every scheduler task) has finished on return."""

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        registry = neutral_registry(sleeper("p", log, live=live), sleeper("x", log, parallel=False))
        before = driver.tasks()
        calls = [call("c1", d=2), call("c2", d=1), call("c3", "x", 1), call("c4", d=3)]
        await driver.run_tool_calls(registry, calls, max_parallel=2)
        assert live == set()
        assert len(log.ids("end")) == 4
        assert driver.tasks() == before

    driver.run(main)


# -- the streaming form -----------------------------------------------------------------


def test_streaming_calls_start_as_soon_as_they_are_submitted(driver: Driver) -> None:
    """A call starts while the model is still streaming; results arrive in model order."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log), sleeper("x", log, parallel=False))
        received: list[tuple[str, str, float]] = []
        async with driver.open_tool_batch(registry, max_parallel=4) as batch:
            assert batch.submit(call("c1", d=4)) == 0
            await driver.sleep(1)  # the model is still streaming
            assert log.ids("start") == ["c1"]
            batch.submit(call("c2", d=1))
            await driver.sleep(1)
            assert log.at("start", "c2") == 1
            batch.submit(call("c3", "x", 1))  # exclusive: waits its turn
            batch.close()
            async for tool_call, result in batch:
                received.append((tool_call.id, text(result), log.now()))
        assert received == [("c1", "p:c1", 4), ("c2", "p:c2", 4), ("c3", "x:c3", 5)]
        assert log.at("start", "c3") == 4
        assert [text(r) for r in batch.results] == ["p:c1", "p:c2", "x:c3"]

    driver.run(main)


def test_streaming_results_are_yielded_as_they_commit(driver: Driver) -> None:
    """Async iteration hands out each pair when it commits, not when the batch ends."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        times: list[float] = []
        async with driver.open_tool_batch(registry) as batch:
            for c in (call("c1", d=1), call("c2", d=3)):
                batch.submit(c)
            batch.close()
            async for _ in batch:
                times.append(log.now())
                assert len(batch.results) == len(times)
        assert times == [1, 3]

    driver.run(main)


def test_leaving_the_block_waits_for_every_submitted_call(driver: Driver) -> None:
    """Without iterating or closing, leaving the block still runs everything to the end."""

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        registry = neutral_registry(sleeper("p", log, live=live))
        before = driver.tasks()
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(call("c1", d=2))
            batch.submit(call("c2", d=1))
        assert log.now() == 2
        assert live == set()
        assert [text(r) for r in batch.results] == ["p:c1", "p:c2"]
        assert driver.tasks() == before
        with pytest.raises(RuntimeError, match="closed"):
            batch.submit(call("c3"))
        # Iterating a finished batch yields what it committed, then stops.
        assert [c.id async for c, _ in batch] == ["c1", "c2"]

    driver.run(main)


class BlockFailedError(Exception):
    pass


def test_an_exception_in_the_block_aborts_the_batch_and_propagates_unwrapped(
    driver: Driver,
) -> None:
    """Started calls drain and commit, the rest are synthetic, then the block's error."""

    async def main() -> None:
        log = Log()
        live: set[str] = set()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log, live=live), sleeper("x", log, parallel=False))
        signal = CancelSignal()
        opened: list[ToolBatch] = []

        async def stream_then_fail() -> None:
            async with driver.open_tool_batch(registry, signal=signal, recorder=recorder) as batch:
                opened.append(batch)
                batch.submit(call("c1", d=5))
                batch.submit(call("c2", "x", 1))
                await driver.sleep(1)
                raise BlockFailedError("the model stream broke")

        with pytest.raises(BlockFailedError) as info:
            await stream_then_fail()
        assert type(info.value) is BlockFailedError
        (batch,) = opened
        assert log.now() == 1
        assert live == set()
        assert log.ids("start") == ["c1"]
        assert batch.results == [ABORTED, ABORTED_BEFORE_DISPATCH]
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_result:c1",
            "tool_call:c2",
            "tool_result:c2",
        ]
        assert not signal.cancelled  # the caller's signal is not touched

    driver.run(main)


def test_submit_rejects_what_is_not_a_tool_call(driver: Driver) -> None:
    """submit() and run_tool_calls take ToolCall values only."""

    async def main() -> None:
        with pytest.raises(TypeError, match="a batch takes ToolCall values, not tuple"):
            await driver.run_tool_calls(ToolRegistry(), [("c1", "p", "{}")])  # type: ignore[list-item]
        async with driver.open_tool_batch(ToolRegistry()) as batch:
            with pytest.raises(TypeError, match="a batch takes ToolCall values, not dict"):
                batch.submit({"id": "c1", "name": "p"})  # type: ignore[arg-type]
            batch.close()
            with pytest.raises(RuntimeError, match="this batch is closed"):
                batch.submit(call("c1"))

    driver.run(main)


def test_a_batch_aborted_while_streaming_gives_later_submissions_synthetic_results(
    driver: Driver,
) -> None:
    """After an abort, calls the model still streams are recorded and skipped."""

    async def main() -> None:
        log = Log()
        recorder = ListRecorder()
        registry = neutral_registry(sleeper("p", log))
        signal = CancelSignal()
        async with driver.open_tool_batch(registry, signal=signal, recorder=recorder) as batch:
            batch.submit(call("c1", d=1))
            await driver.sleep(2)
            signal.cancel("user stop")
            await driver.sleep(1)
            batch.submit(call("c2"))
            batch.close()
            pairs = [(c.id, r) async for c, r in batch]
        assert log.ids("start") == ["c1"]
        assert [cid for cid, _ in pairs] == ["c1", "c2"]
        assert text(pairs[0][1]) == "p:c1"
        assert pairs[1][1] == ABORTED_BEFORE_DISPATCH
        assert recorder.trace() == [
            "tool_call:c1",
            "tool_result:c1",
            "tool_call:c2",
            "tool_result:c2",
        ]

    driver.run(main)


def test_run_tool_calls_accepts_any_iterable_of_calls(driver: Driver) -> None:
    """``calls`` may be a generator; results keep its order."""

    async def main() -> None:
        registry = neutral_registry(
            ToolDefinition("p", "p", {"type": "object"}, lambda args, ctx: "sync ok")
        )
        calls = [call("c1"), call("c2")]
        results = await driver.run_tool_calls(registry, (c for c in calls))
        assert [text(r) for r in results] == ["sync ok", "sync ok"]

    driver.run(main)


def test_an_internal_failure_while_streaming_reaches_the_block_owner_unwrapped(
    driver: Driver,
) -> None:
    """B162 in the streaming form: the reader is interrupted; the failure leaves the block."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(sleeper("p", log))
        received: list[str] = []

        class Broken:
            def record(self, event: RecorderEvent, /) -> None:
                if describe(event) == ("tool_result", "c2"):
                    raise RecorderBrokeError("log closed")

        async def stream() -> None:
            async with driver.open_tool_batch(registry, recorder=Broken()) as batch:
                for c in (call("c1", d=1), call("c2", d=2), call("c3", d=3)):
                    batch.submit(c)
                batch.close()
                async for tool_call, _ in batch:
                    received.append(tool_call.id)

        with pytest.raises(RecorderBrokeError, match="log closed") as info:
            await stream()
        assert type(info.value) is RecorderBrokeError
        assert received == ["c1"]
        assert log.now() == 3  # c3 was in flight: it settled before the failure surfaced
        assert log.ids("end") == ["c1", "c2", "c3"]

    driver.run(main)


def test_an_enclosing_cancel_scope_cancels_a_streaming_batch(driver: Driver) -> None:
    """The cancellation reaching the block cancels the batch at once and propagates.

    Where the drivers differ (see above): on trio nothing commits after the caller's
    cancellation; on asyncio the batch drains first, so the cancelled call commits as
    ``ABORTED`` before ``CancelledError`` leaves the block.
    """

    async def main() -> Any:
        log = Log()
        live: set[str] = set()
        registry = neutral_registry(sleeper("p", log, live=live))
        async with driver.move_on_after(1) as scope, driver.open_tool_batch(registry) as batch:
            batch.submit(call("c1", d=5))
            batch.close()
            async for _ in batch:
                raise AssertionError("nothing commits before the cancellation")
        assert scope.cancelled_caught
        assert live == set()
        assert log.ids("end") == ["c1"]
        assert log.now() == 1
        return batch

    batch = driver.run(main)
    assert batch.results == ([] if driver.name == "trio" else [ABORTED])


def test_open_tool_batch_checks_its_signal(driver: Driver) -> None:
    """open_tool_batch rejects a signal that is not a CancelSignal before opening."""

    async def main() -> None:
        with pytest.raises(TypeError, match="signal must be a CancelSignal, not Event"):
            async with driver.open_tool_batch(ToolRegistry(), signal=trio.Event()):  # type: ignore[arg-type]
                pass  # pragma: no cover - never entered

    driver.run(main)


def test_a_classifier_cannot_change_the_arguments_that_run(driver: Driver) -> None:
    """One frozen truth: the classifier gets the frozen snapshot the body gets, so an
    attempt to rewrite it fails (and a raising classifier is exclusive, B141)."""

    async def main() -> None:
        seen: list[Any] = []

        def sneaky(args: Any) -> bool:
            args["path"] = "/etc/shadow"
            return True

        async def body(args: Any, ctx: ToolRunContext) -> str:
            seen.append(args)
            return "ok"

        registry = neutral_registry(
            ToolDefinition("t", "t", {"type": "object"}, body, is_concurrency_safe=sneaky)
        )
        assert (
            registry.execution_mode(ToolExecutionInput("c0", "t", {"path": "ok.txt"})) == EXCLUSIVE
        )
        results = await driver.run_tool_calls(registry, [ToolCall("c1", "t", '{"path": "ok.txt"}')])
        assert results[0].is_error is False
        assert seen == [{"path": "ok.txt"}]

    driver.run(main)


async def test_a_body_that_cannot_suspend_runs_in_the_driver_without_a_task() -> None:
    """A parallel ``async def`` body with no ``await`` could overlap nothing, so the
    scheduler runs it inline (no task); one that awaits gets a pool task."""
    tasks: dict[str, object] = {}

    async def pure(args: Any, ctx: ToolRunContext) -> str:
        tasks[ctx.call_id] = trio.lowlevel.current_task()
        return "pure"

    async def awaits(args: Any, ctx: ToolRunContext) -> str:
        tasks[ctx.call_id] = trio.lowlevel.current_task()
        await trio.lowlevel.checkpoint()
        return "awaited"

    registry = registry_with(
        ToolDefinition("pure", "p", {"type": "object"}, pure, is_concurrency_safe=lambda a: True),
        ToolDefinition(
            "awaits", "a", {"type": "object"}, awaits, is_concurrency_safe=lambda a: True
        ),
    )
    events: list[RecorderEvent] = []

    class Events:
        def record(self, event: RecorderEvent, /) -> None:
            events.append(event)

    results = await run_tool_calls(
        registry,
        [ToolCall("c1", "pure", ""), ToolCall("c2", "awaits", ""), ToolCall("c3", "pure", "")],
        recorder=Events(),
    )
    assert [r.content for r in results] == [
        (TextContent("pure"),),
        (TextContent("awaited"),),
        (TextContent("pure"),),
    ]
    me = trio.lowlevel.current_task()
    assert tasks["c1"] is me
    assert tasks["c3"] is me
    assert tasks["c2"] is not me
    # c1 settled at once, so it committed before c2 started; results stay in model order
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds[:3] == [("ToolCallEvent", 0), ("ToolResultEvent", 0), ("ToolCallEvent", 1)]
    assert [e.index for e in events if isinstance(e, ToolResultEvent)] == [0, 1, 2]


async def test_a_one_call_batch_starts_no_task_and_is_still_a_cancel_point() -> None:
    """A lone call runs inline (no pool, no nursery, no task); an already-cancelled
    enclosing scope still stops ``run_tool_calls`` before the call starts."""
    ran: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(ctx.call_id)
        return "ok"

    registry = registry_with(
        ToolDefinition("t", "t", {"type": "object"}, body, is_concurrency_safe=always)
    )

    class Spawned(trio.abc.Instrument):
        def __init__(self) -> None:
            self.count = 0

        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            self.count += 1

    spawned = Spawned()
    trio.lowlevel.add_instrument(spawned)
    try:
        results = await run_tool_calls(registry, [ToolCall("c1", "t", "{}")])
    finally:
        trio.lowlevel.remove_instrument(spawned)
    assert [text(r) for r in results] == ["ok"]
    assert spawned.count == 0
    with trio.CancelScope() as scope:
        scope.cancel()
        await run_tool_calls(registry, [ToolCall("c2", "t", "{}")])
    assert scope.cancelled_caught
    assert ran == ["c1"]
