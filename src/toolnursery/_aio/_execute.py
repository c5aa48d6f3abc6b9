"""One call through a registry's pipeline, run natively on asyncio (``aio.execute``),
and a whole known batch on the asyncio driver (``aio.run_tool_calls``).

The asyncio form of :func:`toolnursery._pipeline._stages.execute`: prepare, dispatch (in
this task, whose body the call's signal cancels: see
:func:`~toolnursery._aio._tasks.dispatch_here`) and finalize. Cancelling the awaiting
task aborts the call: its result (``ABORTED``, or ``ABORTED_BEFORE_DISPATCH`` when no
body ran) still passes post-execute and the observers, in a task of its own that later
cancellations cannot interrupt, and then ``CancelledError`` propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._core._content import ToolCall, ToolExecutionResult
from .._core._execution import ToolExecutionInput
from .._core._lifecycle import PENDING, RESOLVED
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from .._core._signal import CancelSignal, fuse
from .._machine._intake import arguments as intake_arguments
from .._pipeline._call import CallRecord
from .._pipeline._classify import classify
from .._pipeline._plan import ToolPlan
from .._pipeline._registry import ToolRegistry
from .._pipeline._stages import begin, finalize, finalize_now, policy_now
from .._pipeline._stages import start as begin_call
from ._route import plan_reason
from ._tasks import CANCELLED_REASON, dispatch_here

if TYPE_CHECKING:
    from ._driver import AsyncioDriver

__all__ = ["execute", "execute_reason", "run_calls", "run_lone", "settle_here"]

_new: Final = object.__new__


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
        return await settle_here(call, plan, registry.hook_abort_grace, own, True)
    finally:
        if fusion is not None:
            fusion.close()


async def settle_here(
    call: CallRecord, plan: ToolPlan, grace: float, abort: CancelSignal, chain: bool = False
) -> ToolExecutionResult:
    """Policy, dispatch (in this task: :func:`~toolnursery._aio._tasks.dispatch_here`)
    and finalize of a begun call; a cancellation of this task fires ``abort`` (which
    the call's signal follows), finalizes the call in a task later cancellations cannot
    reach, then propagates. ``chain``: the call's abort cancels only the body of an
    execute wrapper chain, as ``registry.execute()`` on trio (a batch's cancels it all)."""
    committed = False
    try:
        try:
            if call.state is PENDING:
                if plan.hooks.any_prepare:
                    rest = policy_now(call, grace)
                    if rest is not None:
                        await rest
                if call.state is PENDING:
                    await dispatch_here(call, call.caller, chain)
        except asyncio.CancelledError:
            abort.cancel(CANCELLED_REASON)
            if call.state is PENDING:
                call.resolve(call.aborted(), RESOLVED)
            task = asyncio.get_running_loop().create_task(finalize(call, grace))
            while not task.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait((task,))
            task.result()
            committed = True
            raise
        done = finalize_now(call, grace)
        result = done if isinstance(done, ToolExecutionResult) else await done
        committed = True
    finally:
        if not committed:
            plan.stats.abandoned += 1
    return result


async def run_lone(
    registry: ToolRegistry,
    tool_call: ToolCall,
    signal: CancelSignal,
    agent: Any,
    deps: Any,
    batch_id: str,
) -> list[ToolExecutionResult] | None:
    """A batch of one call, with no recorder or phase timings, run in this task: what
    the asyncio driver does for it (``signal``: the batch's), without its machine.
    ``None``: the call has a deadline of its own (the driver runs it; nothing ran).

    Raises:
        TypeError: ``tool_call`` is not a :class:`ToolCall`.
    """
    if type(tool_call) is not ToolCall and not isinstance(tool_call, ToolCall):
        raise TypeError(f"a batch takes ToolCall values, not {type(tool_call).__name__}")
    if signal.cancelled:
        return [ABORTED_BEFORE_DISPATCH_RESULT]  # aborted before it started: no registry
    # CallRecord(...), without type.__call__ packing the keywords in a dict.
    call = _new(CallRecord)
    CallRecord.__init__(
        call,
        call_id=tool_call.id,
        name=tool_call.name,
        signal=signal,
        agent=agent,
        tool_call=tool_call,
        batch_id=batch_id,
        deps=deps,
    )
    args = intake_arguments(call)
    fixed = call.fixed
    if fixed is not None:
        return [fixed]  # not arguments at all: it never reaches the registry
    plan = registry._plan(call.name, agent)
    if plan.budget is not None:
        return None  # a deadline of its own: the driver's (nothing has run yet)
    definition = plan.definition
    if definition is not None:
        classify(definition, args)  # asked of every call of a batch; a lone one runs alone
    begin_call(call, plan, args, frozen=call.frozen)
    return [await settle_here(call, plan, registry.hook_abort_grace, signal)]


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
