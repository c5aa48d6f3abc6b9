"""The pipeline of one call, in three stages the scheduler can drive separately.

``prepare``  begin (snapshot, pre-aborted check) → pre-execute waterfall (+ approval) →
             guards → cancellation re-check
``dispatch`` execute wrappers around the base dispatch (resolve the tool now, take its
             limit, run the body, normalize) → deferred contexts → cancellation check
             (:mod:`toolnursery._pipeline._dispatch`, the seam to the body)
``finalize`` post-execute waterfall → cancellation check → materialize → observers

A call leaves ``prepare`` in one of three states: PENDING (dispatch it), RESOLVED
(a result exists and still passes post-execute: denials, pre-phase aborts) or FINAL
(a result exists and skips post-execute: argument failures, pre-aborted entries,
raising policy hooks).

Everything a stage needs about the tool and the hooks comes from the call's compiled
:class:`~toolnursery._pipeline._plan.ToolPlan`; each stage starts with
:meth:`CallRecord.current_plan` (a version compare), so a listener registered during one
phase joins the next phases of the same call, never the phase already running, and
dispatch resolves the definition current when it starts.
"""

from __future__ import annotations

from collections.abc import Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core._content import ToolExecutionResult
from .._core._decisions import Allow
from .._core._execution import ToolExecutionInput
from .._core._json import NotJSONError, snapshot
from .._core._outcomes import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    ARGS_NOT_JSON_RESULT,
    error_message,
    failure_result,
    materialize,
    text_result,
    unreachable,
)
from .._core._scope import check_agent
from .._core._signal import CancelSignal
from .._core._statistics import now as _now
from ._call import FINAL, PENDING, RESOLVED, CallRecord
from ._dispatch import abort_result, dispatch
from ._waterfalls import (
    ACCEPT,
    CUT,
    DEFAULT_HOOK_ABORT_GRACE,
    PostQueue,
    PreQueue,
    Suspended,
    accept_next,
    allow_next,
    apply_post,
    first_step,
    observer_failed,
    observer_returned,
    resolve_decision,
    steps,
)

_new: Final = object.__new__

if TYPE_CHECKING:
    from ._plan import ToolPlan
    from ._registry import ToolRegistry

__all__ = [
    "FINAL",
    "PENDING",
    "RESOLVED",
    "begin",
    "check_trio",
    "conclude",
    "execute",
    "finalize",
    "finalize_now",
    "policy",
    "policy_now",
    "prepare",
    "start",
]


# -- stage 1: prepare ---------------------------------------------------------------


def start(record: CallRecord, plan: ToolPlan, arguments: Any, *, frozen: bool) -> None:
    """Begin a call: count it, snapshot its arguments, check for a pre-aborted signal.

    ``frozen=True`` says ``arguments`` already is a snapshot made by the caller (the
    scheduler freezes once, for the classifier and the body alike).
    """
    record.plan = plan
    plan.stats.started += 1
    if frozen:
        record.args = arguments
    else:
        try:
            record.args = snapshot(arguments)
        except NotJSONError:
            record.arguments_json = False
            record.resolve(ARGS_NOT_JSON_RESULT, FINAL)
            return
        except Exception as exc:
            record.arguments_json = False
            record.resolve(failure_result(exc), FINAL)
            return
    if record.caller.cancelled:
        record.resolve(ABORTED_BEFORE_DISPATCH_RESULT, FINAL)


def begin(
    registry: ToolRegistry, input: ToolExecutionInput, *, frozen: bool = False, deps: Any = None
) -> CallRecord:
    """Read the input once and :func:`start` its record.

    Raises:
        TypeError: the input's signal is not a :class:`CancelSignal`.
        ValueError: the input's agent is a scope of another registry.
    """
    signal, agent = input.signal, input.agent
    if type(signal) is not CancelSignal and not isinstance(signal, CancelSignal):
        raise TypeError(
            f"ToolExecutionInput.signal must be a CancelSignal, not {type(signal).__name__}"
        )
    if agent is not None:
        check_agent(registry, agent)
    # CallRecord(...), without type.__call__ packing the keywords in a dict per call.
    record = _new(CallRecord)
    CallRecord.__init__(
        record,
        call_id=input.call_id,
        name=input.name,
        signal=signal,
        agent=agent,
        parent=input.parent,
        deps=deps,
    )
    record.timings = registry.phase_timings
    start(record, registry._plan(input.name, agent), input.arguments, frozen=frozen)
    return record


async def policy(call: CallRecord, grace: float = DEFAULT_HOOK_ABORT_GRACE) -> None:
    """Pre-execute waterfall (with approval), guards, then the cancellation re-check.

    ``grace``: the seconds the waterfall and the approval may still run after the
    call's abort; past them they are cancelled and the call is ``ABORTED_BEFORE_DISPATCH``.
    """
    rest = policy_now(call, grace)
    if rest is not None:
        await rest


def policy_now(
    call: CallRecord, grace: float = DEFAULT_HOOK_ABORT_GRACE
) -> Coroutine[Any, Any, None] | None:
    """:func:`policy` run by hand up to its first suspension: ``None`` when it is done
    (most policy hooks never suspend: no coroutine layer of ours), else the rest of it,
    a coroutine to await."""
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    if plan.version != plan.versions.value:
        plan = call.current_plan()  # (inline: the hot path)
    hooks = plan.hooks
    pre = hooks.pre
    if pre:
        execution = call._execution or call.execution
        try:
            # run_pre() and first_step(), inlined: a single listener is called with the
            # waterfall's end as its next(); a waterfall that does not suspend needs no
            # scope.
            step = pre[0](execution, allow_next) if len(pre) == 1 else PreQueue(pre, execution)()
            if type(step) is not CoroutineType:
                step = steps(step)
            try:
                trap = step.send(None)
            except StopIteration as done:
                decision = done.value
            else:
                return _policy_rest(call, Suspended(step, trap), grace)
            if type(decision) is not Allow:
                denial: Any = CUT
                if decision is not CUT:
                    denial = first_step(resolve_decision(decision, execution, hooks.approval, call))
                    if type(denial) is Suspended:
                        return _denial_rest(call, denial, grace)
                if _deny(call, denial):
                    return None
        except Exception as exc:
            call.resolve(failure_result(exc), FINAL)
            return None
        plan = call.plan  # type: ignore[assignment]
        if plan.version != plan.versions.value:
            plan = call.current_plan()  # (inline: the hot path)
        hooks = plan.hooks
    guards = hooks.guards
    if guards:  # _guards(), inlined
        execution = call._execution or call.execution
        for guard in guards:
            try:
                reason = guard(execution)
            except Exception as exc:
                call.resolve(failure_result(exc), FINAL)
                return None
            if reason is not None:
                _guard_denied(call, reason)
                return None
    if call.caller.cancelled:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
    return None


async def _policy_rest(call: CallRecord, waterfall: Suspended, grace: float) -> None:
    """The rest of a policy whose pre-execute waterfall suspended."""
    try:
        decision = await waterfall.rest(call.caller, grace)
        if type(decision) is not Allow:
            denial: Any = CUT
            if decision is not CUT:
                plan = call.current_plan()
                execution = call._execution or call.execution
                denial = first_step(
                    resolve_decision(decision, execution, plan.hooks.approval, call)
                )
                if type(denial) is Suspended:
                    denial = await denial.rest(call.caller, grace)
            if _deny(call, denial):
                return
    except Exception as exc:
        call.resolve(failure_result(exc), FINAL)
        return
    _guards(call, call.current_plan().hooks.guards)


async def _denial_rest(call: CallRecord, approval: Suspended, grace: float) -> None:
    """The rest of a policy whose approval request suspended."""
    try:
        denial = await approval.rest(call.caller, grace)
    except Exception as exc:
        call.resolve(failure_result(exc), FINAL)
        return
    if _deny(call, denial):
        return
    _guards(call, call.current_plan().hooks.guards)


def _deny(call: CallRecord, denial: Any) -> bool:
    """Resolve a call whose pre-execute did not allow it; ``False``: approval allowed it."""
    if denial is CUT:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
        return True
    if denial is not None:
        call.resolve(denial, RESOLVED)
        return True
    return False


def _guards(call: CallRecord, guards: tuple[Any, ...]) -> None:
    """The guards, then the cancellation re-check (the end of :func:`policy`)."""
    if guards:
        execution = call._execution or call.execution
        for guard in guards:
            try:
                reason = guard(execution)
            except Exception as exc:
                call.resolve(failure_result(exc), FINAL)
                return
            if reason is not None:
                _guard_denied(call, reason)
                return
    if call.caller.cancelled:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)


def _guard_denied(call: CallRecord, reason: object) -> None:
    """Resolve a call a guard denied (a reason that is not a string fails the call)."""
    if isinstance(reason, str):
        call.resolve(text_result("Error: " + reason), RESOLVED)
    else:
        call.resolve(unreachable("ToolGuard result", reason), FINAL)


async def prepare(registry: ToolRegistry, input: ToolExecutionInput) -> CallRecord:
    """Stage 1: :func:`begin`, then :func:`policy` when the call is still pending."""
    call = begin(registry, input)
    if call.state is PENDING:
        await policy(call, registry.hook_abort_grace)
    return call


# -- stage 3: finalize --------------------------------------------------------------


async def finalize(
    call: CallRecord, grace: float = DEFAULT_HOOK_ABORT_GRACE
) -> ToolExecutionResult:
    """Run post-execute (when the call is RESOLVED), materialize, notify observers.

    ``grace``: the seconds post-execute may still run after the call's abort; past
    them it is cancelled and the call is ``ABORTED`` (``ABORTED_BEFORE_DISPATCH`` if
    its body never ran).
    """
    result = finalize_now(call, grace)
    if isinstance(result, ToolExecutionResult):
        return result
    return await result


def finalize_now(
    call: CallRecord, grace: float = DEFAULT_HOOK_ABORT_GRACE
) -> ToolExecutionResult | Coroutine[Any, Any, ToolExecutionResult]:
    """:func:`finalize` run by hand up to its first suspension: the final result when
    post-execute did not suspend (no coroutine layer of ours), else the rest of it, a
    coroutine to await for the result."""
    result = call.result
    assert result is not None
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    if plan.version != plan.versions.value:
        plan = call.current_plan()  # (inline: the hot path)
    if call.state is RESOLVED:
        post = plan.hooks.post
        if post:
            execution = call._execution or call.execution
            try:
                # run_post() and first_step(), inlined (as in policy_now).
                if len(post) == 1:
                    step = post[0](execution, result, accept_next)
                else:
                    step = PostQueue(post, execution, result)()
                if type(step) is not CoroutineType:
                    step = steps(step)
                try:
                    trap = step.send(None)
                except StopIteration as done:
                    decision = done.value
                else:
                    return _finalize_rest(call, result, Suspended(step, trap), grace)
                if decision is ACCEPT:  # the waterfall's own end: the result as it is
                    if call.caller.cancelled and not result.is_error:
                        result = abort_result(call, result)
                    call.result = result
                    call.state = FINAL
                else:
                    _post_decided(call, result, decision)
            except Exception as exc:
                call.result = failure_result(exc)
                call.state = FINAL
            # A listener may have registered an observer: conclude() re-reads the plan.
            return conclude(call)
    return conclude(call, plan)


async def _finalize_rest(
    call: CallRecord, result: ToolExecutionResult, waterfall: Suspended, grace: float
) -> ToolExecutionResult:
    """The rest of a finalize whose post-execute waterfall suspended."""
    try:
        decision = await waterfall.rest(call.caller, grace)
        _post_decided(call, result, decision)
    except Exception as exc:
        call.result = failure_result(exc)
        call.state = FINAL
    return conclude(call)


def _post_decided(call: CallRecord, result: ToolExecutionResult, decision: Any) -> None:
    """Apply the post-execute waterfall's decision (``CUT``: the grace ran out)."""
    if decision is CUT:
        result = abort_result(call, result)
    else:
        result = apply_post(decision, result)
        if call.caller.cancelled and not result.is_error:
            result = abort_result(call, result)
    call.result = result
    call.state = FINAL


def conclude(call: CallRecord, plan: ToolPlan | None = None) -> ToolExecutionResult:
    """Finalize without post-execute (none is due, or it ran): the cancellation rule,
    materialize, count, notify observers. Synchronous: no coroutine when nothing awaits.

    ``plan``: the call's plan, when the caller has just made it current.
    """
    result = call.result
    assert result is not None
    assert call.state is not PENDING
    if plan is None:
        plan = call.plan
        assert plan is not None
        if plan.version != plan.versions.value:
            plan = call.current_plan()  # (inline: the hot path)
    if call.state is RESOLVED and call.caller.cancelled and not result.is_error:
        result = abort_result(call, result)
    if result is not call.clean:
        result = materialize(result)
    call.result = result
    call.state = FINAL  # from RESOLVED, or FINAL already
    if result.is_error:
        plan.stats.count_error(result)
    else:
        plan.stats.ok += 1
    observers = plan.hooks.result
    if observers:  # notify(), inlined
        execution = call._execution or call.execution
        for observer in observers:
            try:
                returned = observer(execution, result)
            except Exception as exc:
                observer_failed(execution, error_message(exc))
                continue
            if returned is not None:
                observer_returned(execution, returned)
    return result


# -- the whole pipeline ---------------------------------------------------------------


def check_trio() -> None:
    """Refuse to run under asyncio (or outside any event loop) with a clear error."""
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        raise RuntimeError(
            "toolnursery's batch and execute API runs under trio; from asyncio use "
            "toolnursery.aio (aio.run_tool_calls, aio.open_tool_batch, aio.execute)"
        ) from None


async def execute(
    registry: ToolRegistry, input: ToolExecutionInput, deps: Any = None
) -> ToolExecutionResult:
    """Run one call through prepare, dispatch and finalize (bodies read ``deps`` as ``ctx.deps``).

    With the registry's ``phase_timings`` on, each phase with work is timed (two clock
    reads); off, a phase costs no clock read.
    """
    check_trio()
    call = begin(registry, input, deps=deps)
    plan = call.plan
    assert plan is not None
    stats = plan.stats
    timings = call.timings
    grace = registry.hook_abort_grace
    committed = False
    try:
        if call.state is PENDING:
            if plan.hooks.any_prepare:
                if timings:
                    begun = _now()
                    await policy(call, grace)
                    stats.prepare += _now() - begun
                else:
                    await policy(call, grace)
            if call.state is PENDING:
                if timings:
                    begun = _now()
                    await dispatch(call)
                    stats.dispatch += _now() - begun
                else:
                    await dispatch(call)
        if timings and call.plan.hooks.any_finalize:  # type: ignore[union-attr]
            begun = _now()
            result = await finalize(call, grace)
            stats.finalize += _now() - begun
        else:
            result = await finalize(call, grace)
        committed = True
    finally:
        if not committed:
            stats.abandoned += 1
    return result
