"""CancelSignal on its own: the latch, O(1) links, fusion."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import trio

from toolnursery import CancelSignal
from toolnursery._signal import _ScopeLink, fuse


def test_the_first_reason_wins_and_links_fire_once() -> None:
    signal = CancelSignal()
    seen: list[Any] = []

    def callback(fired: CancelSignal) -> None:
        seen.append(fired.reason)

    signal._link(callback)
    signal._link(callback)  # linked twice: called once
    signal.cancel("first")
    signal.cancel("second")
    assert signal.cancelled
    assert signal.reason == "first"
    assert seen == ["first"]


def test_a_link_after_the_signal_fired_is_called_at_once() -> None:
    signal = CancelSignal()
    signal.cancel("done")
    seen: list[Any] = []
    signal._link(lambda fired: seen.append(fired.reason))
    assert seen == ["done"]


def test_unlinking_removes_only_that_link() -> None:
    signal = CancelSignal()
    seen: list[str] = []

    def a(_: CancelSignal) -> None:
        seen.append("a")

    def b(_: CancelSignal) -> None:
        seen.append("b")

    signal._link(a)
    signal._link(b)
    signal._unlink(a)
    signal._unlink(a)  # unlinking twice does nothing
    signal.cancel()
    assert seen == ["b"]


def _opcodes_while(fn: Any) -> int:
    """How many bytecode instructions run inside ``fn()`` (Python-level operations)."""
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def _unlink_all(n: int) -> int:
    signal = CancelSignal()
    links = [_ScopeLink(trio.CancelScope()) for _ in range(n)]
    for link in links:
        signal._link(link)
    middle_first = links[n // 2 :] + links[: n // 2]

    def unlink() -> None:
        for link in middle_first:
            signal._unlink(link)

    ops = _opcodes_while(unlink)
    assert not signal._callbacks
    return ops


def test_unlinking_ten_thousand_links_is_linear() -> None:
    """Counted in bytecode operations, not time: 10x the links costs 10x the work."""
    small = _unlink_all(1_000)
    large = _unlink_all(10_000)
    assert large <= small * 10 * 1.1
    assert large / 10_000 < 40  # a constant number of operations per unlink


async def test_a_scope_link_cancels_its_scope() -> None:
    signal = CancelSignal()
    with trio.CancelScope() as scope:
        signal._link(_ScopeLink(scope))
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
    assert outside._fired_before(0.0)  # an unknown time counts as before anything

    async def main() -> tuple[bool, bool]:
        signal = CancelSignal()
        now = trio.current_time()
        signal.cancel()
        return signal._fired_before(now + 1), signal._fired_before(now - 1)

    assert trio.run(main) == (True, False)
    assert not CancelSignal()._fired_before(1e9)
