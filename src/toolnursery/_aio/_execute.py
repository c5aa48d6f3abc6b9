"""One call through a registry's pipeline, run natively on asyncio (``aio.execute``),
and a whole known batch on the asyncio driver (``aio.run_tool_calls``).

The asyncio form of :func:`toolnursery._pipeline._stages.execute`: prepare, dispatch (in
this task, which the call's signal cancels: see
:func:`~toolnursery._aio._tasks.dispatch_here`) and finalize. Cancelling the awaiting
task aborts the call: its result (``ABORTED``, or ``ABORTED_BEFORE_DISPATCH`` when no
body ran) still passes post-execute and the observers, in a task of its own that later
cancellations cannot interrupt, and then ``CancelledError`` propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from .._core._content import ToolCall, ToolExecutionResult
from .._core._execution import ToolExecutionInput
from .._core._lifecycle import PENDING, RESOLVED
from .._core._signal import CancelSignal, fuse
from .._pipeline._registry import ToolRegistry
from .._pipeline._stages import begin, finalize, policy
from ._route import plan_reason
from ._tasks import CANCELLED_REASON, dispatch_here

if TYPE_CHECKING:
    from ._driver import AsyncioDriver

__all__ = ["execute", "execute_reason", "run_calls"]


def execute_reason(registry: ToolRegistry, input: ToolExecutionInput) -> str | None:
    """Why ``aio.execute`` of ``input`` runs in the trio guest run, or ``None``."""
    plan = registry._plan(input.name, input.agent)
    reason = plan_reason(plan)
    if reason is None and plan.budget is not None:
        return "a single call's deadline runs on trio"
    return reason


async def execute(
    registry: ToolRegistry, input: ToolExecutionInput, deps: Any
) -> ToolExecutionResult:
    """Run one call natively (see the module docstring)."""
    own = CancelSignal()
    fusion = fuse(input.signal, own) if isinstance(input.signal, CancelSignal) else None
    if fusion is not None:
        input = msgspec.structs.replace(input, signal=fusion.signal)
    try:
        call = begin(registry, input, deps=deps)
        plan = call.plan
        assert plan is not None
        grace = registry.hook_abort_grace
        committed = False
        try:
            try:
                if call.state is PENDING:
                    if plan.hooks.any_prepare:
                        await policy(call, grace)
                    if call.state is PENDING:
                        await dispatch_here(call, call.caller)
            except asyncio.CancelledError:
                own.cancel(CANCELLED_REASON)
                if call.state is PENDING:
                    call.resolve(call.aborted(), RESOLVED)
                rest = asyncio.get_running_loop().create_task(finalize(call, grace))
                while not rest.done():
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.wait((rest,))
                rest.result()
                committed = True
                raise
            result = await finalize(call, grace)
            committed = True
        finally:
            if not committed:
                plan.stats.abandoned += 1
        return result
    finally:
        if fusion is not None:
            fusion.close()


async def run_calls(driver: AsyncioDriver, calls: Iterable[ToolCall]) -> list[ToolExecutionResult]:
    """Run a whole, known batch from this task; its results."""
    machine = driver.machine
    add = machine.add
    for call in calls:
        add(call)
    machine.closed = True
    if len(machine.calls) <= 1:
        await driver.run()  # a lone call runs inline: no group
    else:
        await driver.drive()
    return machine.results
