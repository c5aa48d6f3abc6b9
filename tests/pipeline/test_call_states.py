"""The record's two state diagrams, table-driven: each scenario's path, each move legal.

A traced record (a subclass whose ``state`` and ``slot`` log every assignment) stands in
for :class:`CallRecord` where the pipeline and the batch make theirs; each row runs one
scenario and compares the path every call took with the diagram in
``toolnursery._core._lifecycle``'s docstring (``STATE_MOVES``, ``SLOT_MOVES``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from toolnursery import (
    CancelSignal,
    Deny,
    ResourceKey,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    install_timeout_policy,
    run_tool_calls,
)
from toolnursery._core._content import ToolExecutionResult
from toolnursery._machine import _batch as machine_module
from toolnursery._pipeline import _stages
from toolnursery._pipeline._call import (
    FINAL,
    PENDING,
    RESOLVED,
    SLOT_MOVES,
    STATE_MOVES,
    CallRecord,
    CallState,
    Slot,
)

NEW, QUEUED, RUNNING, SETTLED, COMMITTED = (
    Slot.NEW,
    Slot.QUEUED,
    Slot.RUNNING,
    Slot.SETTLED,
    Slot.COMMITTED,
)

traced: list[Traced] = []


class Traced(CallRecord):
    """A record that logs its states and slots in order (and checks each move)."""

    __slots__ = ("_slot", "_state", "slots", "states")

    def __init__(self, **kwargs: Any) -> None:
        self.slots: list[Slot] = []
        self.states: list[CallState] = []
        super().__init__(**kwargs)
        traced.append(self)

    @property  # type: ignore[override]
    def slot(self) -> Slot:
        return self._slot

    @slot.setter
    def slot(self, value: Slot) -> None:
        if self.slots:
            assert value in SLOT_MOVES[self.slots[-1]], (self.slots[-1], value)
        self.slots.append(value)
        self._slot = value

    @property  # type: ignore[override]
    def state(self) -> CallState:
        return self._state

    @state.setter
    def state(self, value: CallState) -> None:
        if self.states:
            assert value in STATE_MOVES[self.states[-1]], (self.states[-1], value)
        self.states.append(value)
        self._state = value


@pytest.fixture(autouse=True)
def trace(monkeypatch: pytest.MonkeyPatch) -> None:
    traced.clear()
    monkeypatch.setattr(machine_module, "CallRecord", Traced)
    monkeypatch.setattr(_stages, "CallRecord", Traced)


def test_the_tables_are_the_drawn_diagrams() -> None:
    """Every edge drawn in the module docstring, and no other."""
    drawn_slots = {
        (NEW, QUEUED),
        (NEW, RUNNING),
        (NEW, SETTLED),
        (NEW, COMMITTED),
        (QUEUED, RUNNING),
        (QUEUED, SETTLED),
        (RUNNING, SETTLED),
        (SETTLED, COMMITTED),
    }
    assert {(a, b) for a, moves in SLOT_MOVES.items() for b in moves} == drawn_slots
    assert set(SLOT_MOVES) == set(Slot)
    drawn_states = {(PENDING, RESOLVED), (PENDING, FINAL), (RESOLVED, FINAL), (FINAL, FINAL)}
    assert {(a, b) for a, moves in STATE_MOVES.items() for b in moves} == drawn_states
    assert set(STATE_MOVES) == set(CallState)


async def sleeps(args: Any, ctx: ToolRunContext) -> str:
    await trio.sleep(args.get("d", 0))
    return "ok"


def registry_of(**options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "p",
            "parallel",
            {"type": "object"},
            sleeps,
            is_concurrency_safe=lambda args: True,
            **options,
        )
    )
    registry.register(
        ToolDefinition(
            "k",
            "keyed",
            {"type": "object"},
            sleeps,
            concurrency_keys=lambda args: [ResourceKey.write("r")],
        )
    )
    return registry


def call(call_id: str, name: str = "p", d: float = 0) -> ToolCall:
    return ToolCall(call_id, name, json.dumps({"d": d}))


async def deny_c2(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
    return Deny("no") if execution.call_id == "c2" else await next_()


POOLED = [NEW, QUEUED, RUNNING, SETTLED, COMMITTED]
IN_PLACE = [NEW, RUNNING, SETTLED, COMMITTED]
DECIDED = [NEW, SETTLED, COMMITTED]


async def pooled(registry: ToolRegistry) -> None:
    await run_tool_calls(registry, [call("c1", d=1), call("c2", d=1)])


async def alone(registry: ToolRegistry) -> None:
    await run_tool_calls(registry, [call("c1", d=1)])


async def denied(registry: ToolRegistry) -> None:
    registry.on_pre_execute(deny_c2)
    await run_tool_calls(registry, [call("c1", d=1), call("c2"), call("c3", d=1)])


async def duplicate(registry: ToolRegistry) -> None:
    await run_tool_calls(registry, [call("c1", d=1), call("c1"), call("c3", d=1)])


async def grouped(registry: ToolRegistry) -> None:
    install_timeout_policy(registry, default_timeout_ms=5_000)
    await run_tool_calls(registry, [call("c1", d=1), call("c2", d=1)])


async def aborted(calls: list[ToolCall], registry: ToolRegistry, max_parallel: int) -> None:
    """Run ``calls`` and abort the batch (its signal) at t = 0.5."""
    signal = CancelSignal()

    async def abort() -> None:
        await trio.sleep(0.5)
        signal.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort)
        await run_tool_calls(registry, calls, signal=signal, max_parallel=max_parallel)


async def aborted_waiting(registry: ToolRegistry) -> None:
    # c2 and c3 wait behind c1 (one key) when the batch is aborted: they never run.
    calls = [call("c1", "k", d=1), call("c2", "k", d=1), call("c3", "k", d=1)]
    await aborted(calls, registry, max_parallel=3)


async def aborted_unstarted(registry: ToolRegistry) -> None:
    # c2 is not started: the one slot is c1's when the abort comes.
    await aborted([call("c1", d=1), call("c2", d=1)], registry, max_parallel=1)


@pytest.mark.parametrize(
    ("scenario", "slots", "states"),
    [
        (pooled, {"c1": POOLED, "c2": POOLED}, [PENDING, RESOLVED, FINAL]),
        (alone, {"c1": IN_PLACE}, [PENDING, RESOLVED, FINAL]),
        (
            denied,
            {"c1": POOLED, "c2": DECIDED, "c3": POOLED},
            [PENDING, RESOLVED, FINAL],
        ),
        (grouped, {"c1": POOLED, "c2": POOLED}, [PENDING, RESOLVED, FINAL]),
        (
            aborted_waiting,
            {
                "c1": POOLED,
                "c2": [NEW, QUEUED, SETTLED, COMMITTED],
                "c3": [NEW, QUEUED, SETTLED, COMMITTED],
            },
            None,
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
async def test_each_call_takes_a_path_of_the_diagram(
    autojump_clock: trio.testing.MockClock,
    scenario: Callable[[ToolRegistry], Awaitable[None]],
    slots: dict[str, list[Slot]],
    states: list[CallState] | None,
) -> None:
    await scenario(registry_of())
    assert {record.call_id: record.slots for record in traced} == slots
    if states is not None:
        assert [record.states for record in traced] == [states] * len(traced)


async def test_a_duplicate_id_is_decided_and_a_first_call_runs_in_the_pool(
    autojump_clock: trio.testing.MockClock,
) -> None:
    await duplicate(registry_of())
    assert [record.slots for record in traced] == [POOLED, DECIDED, POOLED]
    assert traced[1].states == [PENDING]  # fixed before the pipeline saw it


async def test_calls_never_started_are_committed_from_new(
    autojump_clock: trio.testing.MockClock,
) -> None:
    await aborted_unstarted(registry_of())
    assert [record.slots for record in traced] == [POOLED, [NEW, COMMITTED]]


@pytest.mark.parametrize(
    ("arguments", "states"),
    [
        ({"d": 0}, [PENDING, RESOLVED, FINAL]),
        ({"d": float("nan")}, [PENDING, FINAL, FINAL]),  # not lossless JSON
    ],
)
async def test_execute_takes_a_path_of_the_pipeline_diagram(
    arguments: Any, states: list[CallState]
) -> None:
    await registry_of().execute(ToolExecutionInput("c1", "p", arguments))
    (record,) = traced
    assert record.states == states


def test_a_move_off_the_diagram_is_refused() -> None:
    record = CallRecord(call_id="c1", name="t", signal=CancelSignal(), agent=None)
    with pytest.raises(AssertionError):
        record.unwind()  # NEW: neither queued nor running
    record.resolve(ToolExecutionResult((), False), FINAL)
    with pytest.raises(AssertionError):
        record.resolve(ToolExecutionResult((), False), RESOLVED)  # FINAL -> RESOLVED
