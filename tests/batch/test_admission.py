"""Admission on its own: the cap, waiting, the ready queue, and the invariant.

Every step of a random script keeps :meth:`Admission.check`'s invariant; calls granted
a slot are exactly those the model of the rules says may run.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import CancelSignal, ResourceKey
from toolnursery._machine._admission import Admission
from toolnursery._pipeline._call import CallRecord


def record(index: int) -> CallRecord:
    return CallRecord(call_id=f"c{index}", name="t", signal=CancelSignal(), agent=None, index=index)


def test_calls_beyond_the_cap_wait_and_get_freed_slots_first_come_first_served() -> None:
    woken: list[int] = []
    admission = Admission(2, lambda: woken.append(1))
    calls = [record(i) for i in range(4)]
    for call in calls:
        admission.admit(call, ())
        admission.check()
    assert (admission.running, admission.waiting) == (2, 2)
    assert admission.full()
    admission.settle(calls[0])
    admission.check()
    assert calls[2].wait is not None
    assert calls[2].wait.running
    assert calls[3].wait is not None
    assert not calls[3].wait.running
    assert (admission.running, admission.waiting) == (2, 1)
    assert woken  # the driver was told a waiting call got its slot


def test_a_keyed_call_waits_for_its_blockers_without_a_slot() -> None:
    admission = Admission(4, lambda: None)
    writer, reader, other = record(0), record(1), record(2)
    admission.admit(writer, (ResourceKey.write("f"),))
    admission.admit(reader, (ResourceKey.read("f"),))
    admission.admit(other, (ResourceKey.read("g"),))
    admission.check()
    assert (admission.running, admission.waiting) == (2, 1)
    assert reader.wait is not None
    assert reader.wait.blockers == 1
    admission.settle(writer)
    admission.check()
    assert reader.wait.running


def test_leaving_for_a_tool_limit_frees_the_slot_and_rejoining_queues_behind_ready() -> None:
    admission = Admission(1, lambda: None)
    first, second = record(0), record(1)
    admission.admit(first, ())
    admission.admit(second, ())
    admission.leave(first)  # first waits for its tool's token: second runs
    admission.check()
    assert second.wait is not None
    assert second.wait.running
    granted = admission.rejoin(first)  # no slot free: it waits for the latch
    assert granted is not None
    assert not granted.is_set()
    assert first.wait is not None
    assert not first.wait.running
    admission.settle(second)
    admission.check()
    assert granted.is_set()
    assert first.wait.running
    admission.settle(first)
    admission.check()
    assert (admission.running, admission.waiting, admission.admitted) == (0, 0, 0)


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("admit"), st.lists(st.tuples(st.sampled_from("ab"), st.booleans()), max_size=2)
        ),
        st.tuples(st.just("settle"), st.integers(0, 30)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(cap=st.integers(1, 4), script=ops)
def test_the_invariant_holds_after_every_step(cap: int, script: list[tuple[str, Any]]) -> None:
    """Random admissions and settlements (settling only calls that run, as dispatch
    does): the invariant holds, the cap is never exceeded, and a waiting call with no
    unfinished blocker gets a slot as soon as one is free."""
    admission = Admission(cap, lambda: None)
    live: list[CallRecord] = []
    index = 0
    for op, arg in script:
        if op == "admit":
            if admission.full():
                continue  # the driver starts nothing while full
            call = record(index)
            index += 1
            keys = tuple(ResourceKey.write(r) if write else ResourceKey.read(r) for r, write in arg)
            admission.admit(call, keys)
            live.append(call)
        else:
            running = [c for c in live if c.wait is None or c.wait.running]
            if not running:
                continue
            call = running[arg % len(running)]
            admission.settle(call)
            live.remove(call)
        admission.check()
        running_now = [c for c in live if c.wait is None or c.wait.running]
        assert len(running_now) == admission.running <= cap
        free = [
            c for c in live if c.wait is not None and not c.wait.running and c.wait.blockers == 0
        ]
        assert not free or admission.running == cap
