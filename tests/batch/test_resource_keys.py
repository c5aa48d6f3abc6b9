"""Resource-keyed scheduling: ``ResourceKey``, ``concurrency_keys`` and the ``keyed`` mode.

Classification (fail-closed), the value types, ``define_tool``/``@tool`` soft
validation, and the scheduler on trio's autojump clock: a keyed call waits for the
earlier calls it conflicts with — and only those — without holding a pool slot.

The stateful property (:class:`KeyedBatches`) grows batch scripts of keyed, limited,
parallel and exclusive calls and runs each on a mock clock: no two conflicting bodies
overlap, the cap and the tool limit hold, prepare/commit/results stay in model order,
nothing deadlocks or outlives the batch, and the schedule is work-conserving (a call
that waits has an earlier conflict, a full pool or its tool at its limit to wait for).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from drivers import ASYNCIO, DEADLOCK, TRIO, Driver, current, neutral, neutral_registry
from support import noop as _noop
from support import registry_with, text
from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    CancelSignal,
    FrozenDict,
    RegistrationError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionMode,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    tool,
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision, ResourceKey

ABORTED_BEFORE_DISPATCH = ToolExecutionResult(
    (TextContent("Error: tool call aborted before dispatch"),),
    True,
    ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH"),
)
R = ResourceKey.read
W = ResourceKey.write


class Log:
    """``(event, call_id, time since creation)`` in the order things happened."""

    def __init__(self) -> None:
        self.t0 = current().now()
        self.entries: list[tuple[str, str, float]] = []

    def add(self, event: str, call_id: str) -> None:
        self.entries.append((event, call_id, current().now() - self.t0))

    def at(self, event: str, call_id: str) -> float:
        (time,) = [t for e, c, t in self.entries if e == event and c == call_id]
        return time

    def ids(self, event: str) -> list[str]:
        return [c for e, c, _ in self.entries if e == event]

    def max_running(self) -> int:
        running = peak = 0
        for event, _, _ in self.entries:
            if event == "start":
                running += 1
                peak = max(peak, running)
            elif event == "end":
                running -= 1
        return peak


def file_keys(args: Any) -> list[ResourceKey]:
    return [ResourceKey(args["path"], args["mode"])]


def fs_tool(log: Log, name: str = "fs", **extra: Any) -> ToolDefinition:
    """Reads or writes ``args["path"]`` (``args["mode"]``), sleeping ``args["d"]``."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.add("start", ctx.call_id)
        try:
            await current().sleep(args.get("d", 1))
        finally:
            log.add("end", ctx.call_id)
        return f"{args['mode']}:{args['path']}:{ctx.call_id}"

    return ToolDefinition(
        name, "file access", {"type": "object"}, neutral(body), concurrency_keys=file_keys, **extra
    )


def sleeper(log: Log, name: str, *, parallel: bool) -> ToolDefinition:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.add("start", ctx.call_id)
        await current().sleep(args.get("d", 1))
        log.add("end", ctx.call_id)
        return f"{name}:{ctx.call_id}"

    return ToolDefinition(
        name,
        name,
        {"type": "object"},
        neutral(body),
        is_concurrency_safe=(lambda args: True) if parallel else None,
    )


def read(call_id: str, path: str, d: float = 1) -> ToolCall:
    return ToolCall(call_id, "fs", json.dumps({"path": path, "mode": "read", "d": d}))


def write(call_id: str, path: str, d: float = 1) -> ToolCall:
    return ToolCall(call_id, "fs", json.dumps({"path": path, "mode": "write", "d": d}))


def keyed_tool(keys: Any, safe: Any = None) -> ToolDefinition:
    return ToolDefinition(
        "t", "t", {"type": "object"}, _noop, is_concurrency_safe=safe, concurrency_keys=keys
    )


def mode_of(definition: ToolDefinition, arguments: Any = None) -> ToolExecutionMode:
    registry = registry_with(definition)
    return registry.execution_mode(
        ToolExecutionInput("c1", definition.name, {} if arguments is None else arguments)
    )


# -- values -------------------------------------------------------------------------


def test_resource_key_is_a_frozen_hashable_value_with_helpers() -> None:
    """ResourceKey.read/.write build the same values as the constructor; JSON round-trips."""
    assert R("a") == ResourceKey("a", "read")
    assert W("a") == ResourceKey("a", "write")
    assert R("a") != W("a")
    assert len({R("a"), R("a"), W("a")}) == 2
    with pytest.raises(AttributeError):
        R("a").mode = "write"  # type: ignore[misc]
    wire = msgspec.json.encode(W("fs:/x"))
    assert wire == b'{"resource":"fs:/x","mode":"write"}'
    assert msgspec.json.decode(wire, type=ResourceKey) == W("fs:/x")
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"resource":"x","mode":"append"}', type=ResourceKey)


def test_keyed_mode_is_a_third_tag_and_the_constants_are_unchanged() -> None:
    """B143 stays true: a tagged object; PARALLEL/EXCLUSIVE encode as before."""
    assert msgspec.json.encode(PARALLEL) == b'{"kind":"parallel"}'
    assert msgspec.json.encode(EXCLUSIVE) == b'{"kind":"exclusive"}'
    keyed = ToolExecutionMode("keyed", [R("a"), W("b")])  # type: ignore[arg-type]
    assert keyed.keys == (R("a"), W("b"))  # stored as a tuple
    wire = msgspec.json.encode(keyed)
    assert wire == (
        b'{"kind":"keyed","keys":[{"resource":"a","mode":"read"},{"resource":"b","mode":"write"}]}'
    )
    assert msgspec.json.decode(wire, type=ToolExecutionMode) == keyed
    assert hash(keyed) == hash(ToolExecutionMode("keyed", (R("a"), W("b"))))
    assert msgspec.json.encode(ToolExecutionMode("keyed")) == b'{"kind":"keyed"}'


def test_keys_on_a_parallel_or_exclusive_mode_are_rejected() -> None:
    """Only the keyed kind carries keys: building or decoding anything else fails."""
    for kind in ("parallel", "exclusive"):
        with pytest.raises(ValueError, match="takes no keys"):
            ToolExecutionMode(kind, (R("a"),))
    with pytest.raises(msgspec.ValidationError, match="takes no keys"):
        msgspec.json.decode(
            b'{"kind":"parallel","keys":[{"resource":"a","mode":"read"}]}',
            type=ToolExecutionMode,
        )


# -- classification (fail-closed) ---------------------------------------------------------


def test_keys_classify_as_a_canonical_keyed_mode() -> None:
    """One key per resource, a write subsumes a read, sorted by resource."""
    mode = mode_of(keyed_tool(lambda args: [R("b"), W("a"), R("a"), R("b"), R("c")]))
    assert mode == ToolExecutionMode("keyed", (W("a"), R("b"), R("c")))


@pytest.mark.parametrize(
    "returned",
    [
        [],
        (),
        set(),
        frozenset({R("x")}),
        iter([W("x")]),
    ],
    ids=["list", "tuple", "set", "frozenset", "iterator"],
)
def test_any_iterable_of_keys_is_accepted(returned: Iterable[ResourceKey]) -> None:
    """Lists, tuples, sets, iterators; an empty one conflicts with nothing."""
    expected = tuple(returned) if not isinstance(returned, Iterator) else (W("x"),)
    mode = mode_of(keyed_tool(lambda args: returned))
    assert mode == ToolExecutionMode("keyed", tuple(sorted(expected, key=lambda k: k.resource)))


def test_a_generator_of_keys_is_accepted() -> None:
    """A generator function's result is an iterable like any other."""

    def keys(args: Any) -> Iterator[ResourceKey]:
        yield R(args["a"])
        yield W(args["b"])

    assert mode_of(keyed_tool(keys), {"a": "x", "b": "y"}) == ToolExecutionMode(
        "keyed", (R("x"), W("y"))
    )


class Key(ResourceKey, frozen=True):
    pass


@pytest.mark.parametrize(
    "returned",
    [
        None,
        "",
        "abc",
        b"",
        {},
        {R("a"): 1},
        [1],
        [("a", "read")],
        [R("a"), "b"],
        [ResourceKey(1, "read")],  # type: ignore[arg-type]
        [ResourceKey("a", "append")],  # type: ignore[arg-type]
        True,
        R("a"),
    ],
)
def test_garbage_keys_are_exclusive(returned: Any) -> None:
    """Anything but an iterable of well-formed ResourceKeys never widens what runs."""
    assert mode_of(keyed_tool(lambda args: returned)) == EXCLUSIVE


def test_a_subclass_of_resource_key_is_a_key() -> None:
    """Subclassed keys count (their fields are checked like any key's)."""
    assert mode_of(keyed_tool(lambda args: [Key("a", "write")])) == ToolExecutionMode(
        "keyed", (W("a"),)
    )


def test_too_many_keys_are_exclusive() -> None:
    """A classifier that yields without end cannot hang the scheduler."""

    def endless(args: Any) -> Iterator[ResourceKey]:
        i = 0
        while True:
            yield R(f"r{i}")
            i += 1

    assert mode_of(keyed_tool(lambda args: [R(f"r{i}") for i in range(4096)])).kind == "keyed"
    assert mode_of(keyed_tool(lambda args: [R(f"r{i}") for i in range(4097)])) == EXCLUSIVE
    assert mode_of(keyed_tool(endless)) == EXCLUSIVE


def test_a_raising_keys_classifier_is_exclusive() -> None:
    """Raising when called, or while being iterated, is exclusive."""

    def raises(args: Any) -> list[ResourceKey]:
        raise KeyError("path")

    def breaks(args: Any) -> Iterator[ResourceKey]:
        yield R("a")
        raise RuntimeError("half-way")

    assert mode_of(keyed_tool(raises)) == EXCLUSIVE
    assert mode_of(keyed_tool(breaks)) == EXCLUSIVE


def test_precedence_of_the_two_classifiers() -> None:
    """Exactly True → parallel; a raising is_concurrency_safe → exclusive; else keys."""
    keys = [W("a")]
    keyed = ToolExecutionMode("keyed", (W("a"),))
    assert mode_of(keyed_tool(lambda a: keys, safe=lambda a: True)) == PARALLEL
    assert mode_of(keyed_tool(lambda a: keys, safe=lambda a: False)) == keyed
    assert mode_of(keyed_tool(lambda a: keys, safe=lambda a: "yes")) == keyed
    assert mode_of(keyed_tool(lambda a: keys, safe=lambda a: 1 / 0)) == EXCLUSIVE
    assert mode_of(keyed_tool(None, safe=lambda a: False)) == EXCLUSIVE


def test_keys_classifier_receives_the_arguments_as_given() -> None:
    """Like B142: a raw definition's classifier sees the input's arguments, frozen."""
    seen: list[Any] = []

    def keys(args: Any) -> list[ResourceKey]:
        seen.append(args)
        return []

    arguments = {"path": "a"}
    mode_of(keyed_tool(keys), arguments)
    assert seen == [arguments]
    assert isinstance(seen[0], FrozenDict)


def test_concurrency_keys_must_be_callable_to_register() -> None:
    """A non-callable classifier is a registration error, not a silent exclusive."""
    registry = ToolRegistry()
    with pytest.raises(RegistrationError, match='tool "t" concurrency_keys must be callable'):
        registry.register(keyed_tool([R("a")]))
    assert registry.get("t") is None


# -- define_tool and @tool ------------------------------------------------------------------


class PathArgs(msgspec.Struct, frozen=True):
    path: str
    write: bool = False


def test_define_tool_keys_receive_typed_arguments_and_fail_closed() -> None:
    """Typed args reach the classifier; invalid args are exclusive without calling it (B140)."""
    seen: list[Any] = []

    def keys(args: PathArgs) -> list[ResourceKey]:
        seen.append(args)
        return [W(args.path) if args.write else R(args.path)]

    definition = define_tool(
        name="t", description="d", parameters=PathArgs, execute=_noop, concurrency_keys=keys
    )
    assert mode_of(definition, {"path": "a", "write": True}) == ToolExecutionMode(
        "keyed", (W("a"),)
    )
    assert seen == [PathArgs("a", True)]
    assert mode_of(definition, {"path": 3}) == EXCLUSIVE
    assert mode_of(definition, "not an object") == EXCLUSIVE
    assert len(seen) == 1  # not called for invalid arguments
    assert definition.concurrency_keys is not None
    assert definition.concurrency_keys({"path": 3}) is None


def test_define_tool_keys_that_raise_are_exclusive() -> None:
    """The soft wrapper swallows the author's error; the call is exclusive."""

    def keys(args: Any) -> list[ResourceKey]:
        raise RuntimeError("bug")

    definition = define_tool(
        name="t",
        description="d",
        parameters={"path": {"type": "string", "required": True}},
        execute=_noop,
        concurrency_keys=keys,
    )
    assert mode_of(definition, {"path": "a"}) == EXCLUSIVE


def test_tool_decorator_takes_concurrency_keys() -> None:
    """@tool(concurrency_keys=...) classifies by the typed parameters."""

    @tool(concurrency_keys=lambda a: [R(a.path)])
    async def cat(path: str) -> str:
        """Print a file."""
        return path

    assert mode_of(cat, {"path": "x"}) == ToolExecutionMode("keyed", (R("x"),))
    assert mode_of(cat, {}) == EXCLUSIVE


# -- scheduling -----------------------------------------------------------------------------


def test_a_write_runs_beside_another_resource_but_after_a_read_of_its_own(driver: Driver) -> None:
    """write(A) waits for read(A) only; read(B) and write(B) go their own way."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        calls = [read("rA", "A", 2), write("wA", "A", 1), read("rB", "B", 1), write("wB", "B", 1)]
        results = await driver.run_tool_calls(registry, calls)
        assert [text(r) for r in results] == [
            "read:A:rA",
            "write:A:wA",
            "read:B:rB",
            "write:B:wB",
        ]
        assert log.at("start", "rA") == log.at("start", "rB") == 0
        assert log.at("start", "wB") == 1  # after read(B), while read(A) still runs
        assert log.at("start", "wA") == 2  # after read(A), and only after it
        assert log.at("end", "wA") == 3

    driver.run(main, deadlock=DEADLOCK)


def test_reads_of_one_resource_overlap(driver: Driver) -> None:
    """read/read never conflicts."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        await driver.run_tool_calls(registry, [read(f"r{i}", "A") for i in range(4)])
        assert [log.at("start", f"r{i}") for i in range(4)] == [0, 0, 0, 0]

    driver.run(main, deadlock=DEADLOCK)


def test_writes_of_one_resource_run_one_at_a_time_in_model_order(driver: Driver) -> None:
    """write/write conflicts: each waits for the previous one."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        await driver.run_tool_calls(registry, [write(f"w{i}", "A") for i in range(3)])
        assert log.entries == [
            ("start", "w0", 0),
            ("end", "w0", 1),
            ("start", "w1", 1),
            ("end", "w1", 2),
            ("start", "w2", 2),
            ("end", "w2", 3),
        ]

    driver.run(main, deadlock=DEADLOCK)


def test_a_read_after_a_write_waits_and_later_reads_after_it_do_too(driver: Driver) -> None:
    """[w(A), r(A), r(A)]: both reads wait for the write, then overlap each other."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        await driver.run_tool_calls(
            registry, [write("w", "A", 2), read("r1", "A"), read("r2", "A")]
        )
        assert (log.at("start", "r1"), log.at("start", "r2")) == (2, 2)

    driver.run(main, deadlock=DEADLOCK)


def test_a_call_waits_only_for_the_calls_it_conflicts_with(driver: Driver) -> None:
    """A write of A waits for r(A), not for the long unrelated calls around it."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log), sleeper(log, "p", parallel=True))
        calls = [
            ToolCall("long", "p", '{"d": 10}'),
            read("rA", "A", 1),
            write("wB", "B", 10),
            write("wA", "A", 1),
        ]
        await driver.run_tool_calls(registry, calls)
        assert log.at("start", "wA") == 1
        assert log.at("end", "long") == log.at("end", "wB") == 10

    driver.run(main, deadlock=DEADLOCK)


def test_a_keys_classifier_naming_several_resources_waits_for_each(driver: Driver) -> None:
    """A call writing A and B waits for the readers of both."""

    async def main() -> None:
        log = Log()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            log.add("start", ctx.call_id)
            await driver.sleep(args["d"])
            log.add("end", ctx.call_id)
            return "ok"

        def keys(args: Any) -> list[ResourceKey]:
            return [ResourceKey(p, args["mode"]) for p in args["paths"]]

        registry = neutral_registry(ToolDefinition("m", "m", {}, body, concurrency_keys=keys))

        def multi(call_id: str, mode: str, paths: list[str], d: float) -> ToolCall:
            return ToolCall(call_id, "m", json.dumps({"mode": mode, "paths": paths, "d": d}))

        await driver.run_tool_calls(
            registry,
            [
                multi("rA", "read", ["A"], 1),
                multi("rB", "read", ["B"], 3),
                multi("wAB", "write", ["A", "B"], 1),
                multi("rC", "read", ["C"], 1),
            ],
        )
        assert log.at("start", "wAB") == 3
        assert log.at("start", "rC") == 0

    driver.run(main, deadlock=DEADLOCK)


def test_keyed_and_plain_parallel_calls_share_the_pool(driver: Driver) -> None:
    """A plain parallel call conflicts with nothing; an exclusive call is still a barrier."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(
            fs_tool(log), sleeper(log, "p", parallel=True), sleeper(log, "x", parallel=False)
        )
        calls = [
            write("w1", "A", 2),
            ToolCall("p1", "p", '{"d": 1}'),
            write("w2", "A", 1),
            ToolCall("x", "x", '{"d": 1}'),
            read("r", "A", 1),
        ]
        await driver.run_tool_calls(registry, calls)
        assert log.at("start", "p1") == 0
        assert log.at("start", "w2") == 2
        assert log.at("start", "x") == 3  # after everything before it drained
        assert log.at("start", "r") == 4
        assert log.max_running() == 2

    driver.run(main, deadlock=DEADLOCK)


def test_an_empty_key_set_runs_like_a_parallel_call(driver: Driver) -> None:
    """Keys ``[]`` conflict with nothing, the pool's cap still applies."""

    async def main() -> None:
        log = Log()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            log.add("start", ctx.call_id)
            await driver.sleep(1)
            log.add("end", ctx.call_id)
            return "ok"

        registry = neutral_registry(
            ToolDefinition("e", "e", {}, body, concurrency_keys=lambda a: [])
        )
        await driver.run_tool_calls(
            registry, [ToolCall(f"c{i}", "e", "{}") for i in range(5)], max_parallel=2
        )
        assert [log.at("start", f"c{i}") for i in range(5)] == [0, 0, 1, 1, 2]

    driver.run(main, deadlock=DEADLOCK)


def test_a_waiting_call_holds_no_slot(driver: Driver) -> None:
    """Cap 2: w(A) waits behind r(A) without its slot, so r(B) starts at once."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        calls = [read("rA", "A", 3), write("wA", "A", 1), read("rB", "B", 1), read("rC", "C", 1)]
        in_flight: list[int] = []

        async def probe() -> None:
            await driver.sleep(0.5)
            in_flight.append(registry.statistics().in_flight)

        async with driver.open_nursery() as nursery:
            nursery.start_soon(probe)
            await driver.run_tool_calls(registry, calls, max_parallel=2)
        assert log.at("start", "rB") == 0
        assert log.at("start", "rC") == 1  # the cap: two bodies at a time
        assert log.at("start", "wA") == 3
        assert log.max_running() == 2
        assert in_flight == [3]  # rA and rB running, wA waiting; rC not started

    driver.run(main, deadlock=DEADLOCK)


def test_at_most_max_parallel_calls_wait(driver: Driver) -> None:
    """Waiting calls hold no slot, but the driver starts none while the cap of them wait."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        seen: list[tuple[int, int]] = []
        async with driver.open_tool_batch(registry, max_parallel=2) as batch:
            for call in [
                read("r", "A", 5),
                write("w1", "A"),
                write("w2", "A"),
                write("w3", "A"),
                read("z", "Z"),
            ]:
                batch.submit(call)
            batch.close()
            await driver.sleep(1)
            stats = batch.statistics()
            seen.append((stats.in_flight, stats.waiting))
        assert seen == [(3, 2)]  # r running; w1, w2 waiting; w3 and z not started
        assert log.at("start", "w1") == 5
        assert log.at("start", "z") == 6  # started when w1 left the waiting line
        assert log.at("start", "w3") == 7

    driver.run(main, deadlock=DEADLOCK)


def test_keyed_results_prepare_and_commit_stay_in_model_order(driver: Driver) -> None:
    """Bodies run out of order; pre-execute, post-execute and results do not."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        pre: list[str] = []
        post: list[str] = []

        async def on_pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            pre.append(execution.call_id)
            return await next_()

        async def on_post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[PostToolDecision]],
        ) -> PostToolDecision:
            post.append(execution.call_id)
            return await next_()

        registry.on_pre_execute(on_pre)
        registry.on_post_execute(on_post)
        calls = [write("w", "A", 3), read("r", "A", 1), read("b", "B", 1)]
        results = await driver.run_tool_calls(registry, calls)
        assert log.ids("start") == ["w", "b", "r"]
        assert pre == post == ["w", "r", "b"]
        assert [text(r) for r in results] == ["write:A:w", "read:A:r", "read:B:b"]

    driver.run(main, deadlock=DEADLOCK)


def test_a_call_denied_in_prepare_blocks_nobody(driver: Driver) -> None:
    """A denied write never runs, so the read after it does not wait for it."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        registry.guard(lambda execution: "no" if execution.call_id == "w" else None)
        results = await driver.run_tool_calls(
            registry, [write("w", "A"), read("r", "A", 2), write("w2", "A")]
        )
        assert text(results[0]) == "Error: no"
        assert log.ids("start") == ["r", "w2"]
        assert log.at("start", "r") == 0
        assert log.at("start", "w2") == 2

    driver.run(main, deadlock=DEADLOCK)


def test_abort_skips_calls_that_are_waiting_for_their_turn(driver: Driver) -> None:
    """An abort while w(A) waits behind r(A): w(A) never runs and is aborted before dispatch."""

    async def main() -> None:
        for wrapped in (False, True):
            log = Log()
            registry = neutral_registry(fs_tool(log))
            wrappers_saw: list[str] = []
            if wrapped:

                async def wrap(
                    view: ToolDispatchExecution,
                    next_: Callable[[], Awaitable[ToolExecutionResult]],
                    seen: list[str] = wrappers_saw,
                ) -> ToolExecutionResult:
                    seen.append(view.call_id)
                    return await next_()

                registry.on_execute(wrap)
            signal = CancelSignal()

            async def abort(signal: CancelSignal = signal) -> None:
                await driver.sleep(1)
                signal.cancel("stop")

            async with driver.open_nursery() as nursery:
                nursery.start_soon(abort)
                results = await driver.run_tool_calls(
                    registry,
                    [read("r", "A", 5), write("w", "A"), read("late", "B", 5)],
                    signal=signal,
                )
            assert log.ids("start") == ["r", "late"], wrapped
            assert [r.error.code if r.error else None for r in results] == [
                "ABORTED",
                "ABORTED_BEFORE_DISPATCH",
                "ABORTED",
            ], wrapped
            assert results[1] == ABORTED_BEFORE_DISPATCH
            # The skipped call never reached its execute wrappers either.
            assert wrappers_saw == (["r", "late"] if wrapped else [])

    driver.run(main, deadlock=DEADLOCK)


def test_streaming_a_conflicting_call_waits_for_the_one_already_running(driver: Driver) -> None:
    """A write submitted while a read of its path runs starts when the read ends."""

    async def main() -> None:
        log = Log()
        registry = neutral_registry(fs_tool(log))
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(read("r", "A", 3))
            await driver.sleep(1)
            batch.submit(write("w", "A", 1))
            batch.submit(read("o", "B", 1))
            batch.close()
            pairs = [(c.id, text(r)) async for c, r in batch]
        assert pairs == [("r", "read:A:r"), ("w", "write:A:w"), ("o", "read:B:o")]
        assert log.at("start", "o") == 1
        assert log.at("start", "w") == 3

    driver.run(main, deadlock=DEADLOCK)


def test_keys_are_reclassified_just_before_each_call_starts(driver: Driver) -> None:
    """B148 for keys: a call starts with the keys its tool gives at that moment."""

    async def main() -> None:
        log = Log()
        registry = ToolRegistry()
        dispose = registry.register(fs_tool(log))

        def observer(execution: ToolExecution, result: ToolExecutionResult) -> None:
            if execution.call_id == "first":
                dispose()
                # From now on every call writes one shared resource.
                registry.register(
                    msgspec.structs.replace(fs_tool(log), concurrency_keys=lambda a: [W("all")])
                )

        registry.on_result(observer)
        calls = [
            read("first", "A", 1),
            read("a", "A", 5),
            read("b", "B", 1),
            read("c", "C", 2),
            read("d", "D", 1),
        ]
        await driver.run_tool_calls(registry, calls, max_parallel=3)
        assert log.at("start", "c") == 1  # classified after "first" committed
        assert log.at("start", "d") == 3  # now conflicts with c: both write "all"

    driver.run(main, deadlock=DEADLOCK)


def test_execution_mode_reports_keys_for_the_callers_scope(driver: Driver) -> None:
    """B144 for keys: a scope's shadowing tool reports its own keys."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(keyed_tool(lambda a: [R("global")]))
        scope = registry.scope()
        scope.register(keyed_tool(lambda a: [W("mine")]))
        assert registry.execution_mode(ToolExecutionInput("c", "t", {})) == ToolExecutionMode(
            "keyed", (R("global"),)
        )
        assert registry.execution_mode(
            ToolExecutionInput("c", "t", {}, agent=scope)
        ) == ToolExecutionMode("keyed", (W("mine"),))

    driver.run(main, deadlock=DEADLOCK)


# -- properties: a stateful exploration of keyed batches ---------------------------------

LIMIT = 2  # max_concurrency of the "l" tool


@dataclass(frozen=True)
class Op:
    """One call of a script: ``k``/``l`` keyed (``l`` also limited), ``p``, ``x``."""

    kind: str
    mode: str
    resources: tuple[str, ...]
    duration: int


@dataclass(frozen=True)
class Script:
    ops: tuple[Op, ...]
    cap: int
    abort_at: float | None
    streaming: bool
    wrapped: bool


def conflicts(a: Op, b: Op) -> bool:
    if a.kind == "x" or b.kind == "x":
        return True
    if a.kind == "p" or b.kind == "p":
        return False
    shared = set(a.resources) & set(b.resources)
    return bool(shared) and (a.mode == "write" or b.mode == "write")


async def check_script(script: Script, driver: Driver = TRIO) -> None:
    """Run one script on ``driver``'s virtual clock and check every invariant."""
    ops = script.ops
    ids = [f"c{i}" for i in range(len(ops))]
    op_of = dict(zip(ids, ops, strict=True))
    index = {call_id: i for i, call_id in enumerate(ids)}
    t0 = driver.now()
    bodies: list[tuple[str, str, float]] = []  # (start | end | cancelled, id, t)
    prepared: dict[str, float] = {}
    committed: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        bodies.append(("start", ctx.call_id, driver.now() - t0))
        try:
            await driver.sleep(args["d"])
        except driver.Cancelled:
            bodies.append(("cancelled", ctx.call_id, driver.now() - t0))
            raise
        bodies.append(("end", ctx.call_id, driver.now() - t0))
        return f"ok:{ctx.call_id}"

    def keys(args: Any) -> list[ResourceKey]:
        return [ResourceKey(r, args["mode"]) for r in args["resources"]]

    registry = ToolRegistry()
    registry.register(ToolDefinition("k", "k", {}, neutral(body), concurrency_keys=keys))
    if driver is TRIO:  # a limit is a trio capacity limiter: not on the asyncio driver
        registry.register(
            ToolDefinition(
                "l", "l", {}, neutral(body), concurrency_keys=keys, max_concurrency=LIMIT
            )
        )
    registry.register(
        ToolDefinition("p", "p", {}, neutral(body), is_concurrency_safe=lambda a: True)
    )
    registry.register(ToolDefinition("x", "x", {}, neutral(body)))

    async def pre(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        prepared[execution.call_id] = driver.now() - t0
        return await next_()

    async def post(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        committed.append(execution.call_id)
        return await next_()

    async def wrap(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        return await next_()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)
    if script.wrapped:
        registry.on_execute(wrap)
    calls = [
        ToolCall(
            call_id,
            op.kind,
            json.dumps({"mode": op.mode, "resources": list(op.resources), "d": op.duration}),
        )
        for call_id, op in zip(ids, ops, strict=True)
    ]
    signal = CancelSignal()
    before = driver.tasks()

    async def abort(at: float | None) -> None:
        if at is not None:
            await driver.sleep(at)
            signal.cancel("abort")
        await driver.sleep_forever()

    # A deadlock jumps the virtual clock to the deadline here.
    async with driver.fail_after(10_000), driver.background(abort, script.abort_at):
        if script.streaming:
            async with driver.open_tool_batch(
                registry, signal=signal, max_parallel=script.cap
            ) as batch:
                for tool_call in calls:
                    batch.submit(tool_call)
                batch.close()
                results = [r async for _, r in batch]
        else:
            results = await driver.run_tool_calls(
                registry, calls, signal=signal, max_parallel=script.cap
            )
        assert driver.tasks() == before + 1  # the abort's task aside
    aborted = signal.cancelled
    assert driver.tasks() == before

    # One result per call, in model order; prepare and commit in model order.
    assert len(results) == len(ops)
    assert list(prepared) == ids[: len(prepared)]
    assert committed == list(prepared)
    if not aborted:
        assert [text(r) for r in results] == [f"ok:{c}" for c in ids]

    # Intervals: no two conflicting bodies overlap; the cap and the limit hold.
    start = {c: t for e, c, t in bodies if e == "start"}
    end = {c: t for e, c, t in bodies if e != "start"}
    assert set(start) == set(end)
    for a in start:
        for b in start:
            if index[a] < index[b] and start[a] < end[b] and start[b] < end[a]:
                assert not conflicts(op_of[a], op_of[b]), (a, b, bodies)
    times = sorted({t for _, _, t in bodies} | set(prepared.values()))
    for t in times:
        running = [c for c in start if start[c] <= t < end[c]]
        assert len(running) <= script.cap, (t, running)
        assert sum(op_of[c].kind == "l" for c in running) <= LIMIT, (t, running)

    # Work conservation at each stable instant before any abort: a prepared call that
    # has not started waits for a reason, and the driver starts the next call unless
    # something holds it back.
    horizon = script.abort_at if script.abort_at is not None else float("inf")
    for t in times:
        if t >= horizon:
            break
        running = [c for c in start if start[c] <= t < end[c]]
        waiting = [
            c for c, at in prepared.items() if at <= t and not (c in start and start[c] <= t)
        ]
        unfinished = set(running) | set(waiting)
        full = len(running) >= script.cap
        for c in waiting:
            op = op_of[c]
            assert op.kind != "x", (t, c)
            earlier = [u for u in unfinished if index[u] < index[c] and conflicts(op_of[u], op)]
            at_limit = op.kind == "l" and sum(op_of[r].kind == "l" for r in running) >= LIMIT
            assert earlier or full or at_limit, (t, c, running, waiting)
        unstarted = [c for c in ids if c not in prepared or prepared[c] > t]
        if unstarted:
            head = op_of[unstarted[0]]
            barrier_running = any(op_of[r].kind == "x" for r in running)
            if head.kind == "x":
                assert unfinished or barrier_running, (t, unstarted[0])
            else:
                assert barrier_running or full or len(waiting) >= script.cap, (
                    t,
                    unstarted[0],
                    running,
                    waiting,
                )


ops = st.builds(
    Op,
    kind=st.sampled_from(["k", "k", "k", "l", "p", "x"]),
    mode=st.sampled_from(["read", "write"]),
    resources=st.lists(st.sampled_from("ABC"), max_size=2, unique=True).map(tuple),
    duration=st.integers(1, 3),
)


class KeyedBatches(RuleBasedStateMachine):
    """Grow a batch script call by call (keys, limits, barriers, caps, aborts); run it on
    trio (subclasses: another driver)."""

    driver: Driver = TRIO

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] = []
        self.cap = 2
        self.abort_at: float | None = None
        self.streaming = False
        self.wrapped = False

    @rule(calls=st.lists(ops, min_size=1, max_size=4))
    def add_calls(self, calls: list[Op]) -> None:
        if self.driver is ASYNCIO:
            # A max_concurrency limit is a trio capacity limiter: such a batch runs in
            # the trio guest run from asyncio, never on the asyncio driver.
            calls = [op for op in calls if op.kind != "l"]
        self.ops.extend(calls[: 12 - len(self.ops)])

    @rule(cap=st.integers(1, 4))
    def set_cap(self, cap: int) -> None:
        self.cap = cap

    @rule(abort_at=st.none() | st.sampled_from([0.5, 1.5, 2.5, 4.5]))
    def set_abort(self, abort_at: float | None) -> None:
        self.abort_at = abort_at

    @rule(streaming=st.booleans(), wrapped=st.booleans())
    def set_driver(self, streaming: bool, wrapped: bool) -> None:
        self.streaming = streaming
        self.wrapped = wrapped

    @rule()
    def run(self) -> None:
        script = Script(tuple(self.ops), self.cap, self.abort_at, self.streaming, self.wrapped)
        self.driver.run(check_script, script, self.driver)

    def teardown(self) -> None:
        self.run()


KeyedBatches.TestCase.settings = settings(max_examples=200, stateful_step_count=12, deadline=None)
test_keyed_batches = KeyedBatches.TestCase


class KeyedBatchesOnAsyncio(KeyedBatches):
    """The same exploration on the native asyncio driver."""

    driver = ASYNCIO


KeyedBatchesOnAsyncio.TestCase.settings = settings(
    max_examples=200, stateful_step_count=12, deadline=None
)
test_keyed_batches_on_asyncio = KeyedBatchesOnAsyncio.TestCase


class KeyedBatchesOnAsyncioLonger(KeyedBatchesOnAsyncio):
    """More examples of the asyncio exploration (``slow``: tests/conftest.py ``SLOW``)."""


KeyedBatchesOnAsyncioLonger.TestCase.settings = settings(
    max_examples=800, stateful_step_count=12, deadline=None
)
test_keyed_batches_on_asyncio_longer = KeyedBatchesOnAsyncioLonger.TestCase
