"""The pipeline of one call, in three stages the scheduler can drive separately.

``prepare``  begin (snapshot, pre-aborted check) → pre-execute waterfall (+ approval) →
             guards → cancellation re-check
``dispatch`` execute wrappers around the base dispatch (resolve the tool now, take its
             limit, run the body, normalize) → deferred contexts → cancellation check
``finalize`` post-execute waterfall → cancellation check → materialize → observers

A call leaves ``prepare`` in one of three states: PENDING (dispatch it), RESOLVED
(a result exists and still passes post-execute: denials, pre-phase aborts) or FINAL
(a result exists and skips post-execute: argument failures, pre-aborted entries,
raising policy hooks).

Everything a stage needs about the tool and the hooks comes from the call's compiled
:class:`~toolnursery._pipeline._plan.ToolPlan`; each stage starts with ``plan.current()`` (a
version compare), so a listener registered during one phase joins the next phases of
the same call, never the phase already running, and dispatch resolves the definition
current when it starts.

Cancellation: under ``registry.execute()`` (``carried=False``) a body that may suspend
runs in one cancel scope linked to the caller's signal; the scope absorbs only its
own ``Cancelled``. Under a batch (``carried=True``) an enclosing scope carries the
abort: the body and every execute wrapper see ``trio.Cancelled``, and the batch maps
the call by whether its body was invoked (:meth:`CallRecord.aborted`). A wrapper's
replacement signal is linked (O(1)) to a scope around the body; a timeout budget is a
deadline scope around the dispatch (:mod:`toolnursery._pipeline._deadline`), or, in a batch, one
that calls of the same budget share (:func:`dispatch_grouped`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec
import trio

from .._core._bodies import is_async, mark_may_suspend, may_suspend
from .._core._content import TextContent, ToolExecutionResult
from .._core._decisions import Allow
from .._core._errors import ToolNotFoundError, ToolTimeoutError
from .._core._execution import ToolDispatchExecution, ToolExecutionInput
from .._core._json import NotJSONError, snapshot
from .._core._outcomes import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    ABORTED_RESULT,
    ARGS_NOT_JSON_RESULT,
    failure_result,
    materialize,
    normalize,
    text_result,
    unreachable,
)
from .._core._signal import CancelSignal, ScopeLink
from .._core._statistics import now as _now
from . import _deadline
from ._call import FINAL, PENDING, RESOLVED, AttemptContext, CallRecord
from ._deadline import DeadlinePolicy
from ._waterfalls import apply_post, notify, resolve_decision, run_post, run_pre

if TYPE_CHECKING:
    from ._plan import ToolPlan
    from ._registry import ToolRegistry

__all__ = [
    "FINAL",
    "PENDING",
    "RESOLVED",
    "Call",
    "Gate",
    "begin",
    "chain",
    "chained",
    "check_trio",
    "conclude",
    "dispatch",
    "dispatch_grouped",
    "execute",
    "finalize",
    "is_async",
    "mark_may_suspend",
    "may_suspend",
    "policy",
    "prepare",
    "resolve_dispatch",
    "start",
]

Call = CallRecord
"""The record the stages pass along (the scheduler's name for it)."""


class Gate(Protocol):
    """The scheduler's side of a call that waits for its tool's limit (internal).

    A pooled call holds a slot under its batch's ``max_parallel`` while it dispatches;
    it gives the slot back while it waits for a ``max_concurrency`` token, and takes
    one again (holding the token) before the body runs.
    """

    def _leave(self, call: CallRecord) -> None:
        """Give the call's batch slot back: it is about to wait."""

    async def _rejoin(self, call: CallRecord) -> None:
        """Wait for a batch slot for the call again."""


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
    if record.caller._cancelled:
        record.resolve(ABORTED_BEFORE_DISPATCH_RESULT, FINAL)


def begin(registry: ToolRegistry, input: ToolExecutionInput, *, frozen: bool = False) -> CallRecord:
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
        registry._check_agent(agent)
    record = CallRecord(input.call_id, input.name, signal, agent, input.parent)
    record.timings = registry.phase_timings
    start(record, registry._plan(input.name, agent), input.arguments, frozen=frozen)
    return record


async def policy(call: CallRecord) -> None:
    """Pre-execute waterfall (with approval), guards, then the cancellation re-check."""
    plan: Any = call.plan
    if plan.version != plan.versions.value:  # ``plan.current()``, inline
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    hooks = plan.hooks
    if hooks.pre:
        execution = call._execution or call.execution
        try:
            decision = await run_pre(hooks.pre, execution)
            if type(decision) is not Allow:
                denial = await resolve_decision(decision, execution, hooks.approval)
                if denial is not None:
                    call.resolve(denial, RESOLVED)
                    return
        except Exception as exc:
            call.resolve(failure_result(exc), FINAL)
            return
        if plan.version != plan.versions.value:
            plan = call.plan = plan.rebuild(plan.name, plan.agent)
        hooks = plan.hooks
    guards = hooks.guards
    if guards:
        execution = call._execution or call.execution
        for guard in guards:
            try:
                reason = guard(execution)
            except Exception as exc:
                call.resolve(failure_result(exc), FINAL)
                return
            if reason is not None:
                if isinstance(reason, str):
                    call.resolve(text_result("Error: " + reason), RESOLVED)
                else:
                    call.resolve(unreachable("ToolGuard result", reason), FINAL)
                return
    if call.caller._cancelled:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)


async def prepare(registry: ToolRegistry, input: ToolExecutionInput) -> CallRecord:
    """Stage 1: :func:`begin`, then :func:`policy` when the call is still pending."""
    call = begin(registry, input)
    if call.state == PENDING:
        await policy(call)
    return call


# -- stage 2: dispatch --------------------------------------------------------------


async def dispatch(call: CallRecord, *, carried: bool = False) -> None:
    """Stage 2: run the execute wrappers around the body; leaves the call RESOLVED or FINAL.

    Args:
        call: a PENDING call.
        carried: an enclosing cancel scope carries the caller's abort (a batch). The
            body then runs without a scope of its own (unless a wrapper replaced its
            signal), and an abort reaches the caller — through every wrapper — as
            ``trio.Cancelled``, with :attr:`CallRecord.invoked` telling whether the
            body ran.
    """
    plan: Any = call.plan
    if plan.version != plan.versions.value:
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    wrappers = plan.hooks.execute
    caller = call.caller
    if not wrappers:
        budget = plan.budget
        if budget is None:
            if plan.direct and (carried or not plan.suspends) and not caller._cancelled:
                # The common case, without a coroutine layer: no limit, an async body
                # that an enclosing scope (or nothing) interrupts.
                context = _attempt(call)
                try:
                    value = await plan.body(call.args, context)
                except Exception as exc:
                    result = failure_result(exc)
                else:
                    result = _settled(call, value)
            else:
                result = await _base_dispatch(call, caller, carried)
        else:
            # The view's only wrapper is the timeout policy: its deadline scope, here.
            result = await _timed_dispatch(call, caller, carried, budget)
    else:
        view = ToolDispatchExecution._of(call)
        first = wrappers[0]
        try:
            if type(first) is not DeadlinePolicy:
                result = await _ExecuteNext(wrappers, view, call, 0, carried)()
            else:
                # The outermost wrapper is the timeout policy: its deadline scope, here,
                # around the rest of the chain (without the policy's coroutine layer).
                definition = plan.definition
                budget = None if definition is None else first.budget(definition)
                if budget is None:
                    result = await _ExecuteNext(wrappers, view, call, 1, carried)()
                else:
                    scope, outer = _deadline.enter(call, budget)
                    try:
                        with scope:
                            result = await _ExecuteNext(wrappers, view, call, 1, carried)()
                    except trio.Cancelled:
                        _deadline.unwound(call, scope, budget)
                        raise
                    finally:
                        call.deadline = outer
                    result = _deadline.timed_out(call, scope, budget) or result
        except Exception as exc:
            call.result = failure_result(exc)
            call.state = FINAL
            return
        if type(result) is not ToolExecutionResult:
            call.resolve(unreachable("tools/execute result", result), FINAL)
            return
    resolve_dispatch(call, result)


async def dispatch_grouped(
    call: CallRecord, scope: trio.CancelScope, deadline: float, budget: float
) -> None:
    """Stage 2 of a call whose view's only or outermost execute wrapper is the timeout
    policy, under a deadline scope it shares with other calls (a batch's deadline group).

    ``deadline`` is the call's own (``budget`` ms from now), at most the shared scope's:
    the scope's cancellation, or its deadline passing while the body ignored it, makes
    the result ``TOOL_TIMEOUT`` as with a scope of the call's own; an abort carried by an
    enclosing scope reaches the caller as ``trio.Cancelled``. The wrappers inside the
    policy run as they would inside its own scope.
    """
    plan: Any = call.plan
    caller = call.caller
    if plan.version != plan.versions.value:  # the same budget (the batch checked)
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    wrappers = plan.hooks.execute
    call.deadline = deadline
    try:
        try:
            if wrappers:
                view = ToolDispatchExecution._of(call)
                result = await _ExecuteNext(wrappers, view, call, 1, True)()
            elif not plan.direct or caller._cancelled:
                result = await _base_dispatch(call, caller, True)
            else:
                context = _attempt(call)
                failed: ToolExecutionResult | None = None
                try:
                    value = await plan.body(call.args, context)
                except Exception as exc:
                    failed = failure_result(exc)
                finally:
                    if call.derived is not None:
                        call.end_attempt()  # the body read its deadline signal
                result = failed if failed is not None else _settled(call, value)
        except trio.Cancelled:
            if scope.cancel_called and not caller._fired_before(deadline):
                call.timed_out = budget
            raise
        finally:
            call.deadline = None
    except Exception as exc:  # a wrapper raised
        call.resolve(failure_result(exc), FINAL)
        return
    if scope.cancel_called and not caller._fired_before(deadline):
        result = failure_result(ToolTimeoutError(budget))  # the deadline passed, ignored
    elif type(result) is not ToolExecutionResult:
        call.resolve(unreachable("tools/execute result", result), FINAL)
        return
    resolve_dispatch(call, result)


class _ExecuteNext:
    """``next()`` of one execute wrapper: runs the rest of the chain from its position.

    Unlike the pre/post waterfalls (a shared queue), each wrapper's ``next`` is
    bound to its position, so calling it again re-runs every inner wrapper and a fresh
    dispatch of the body — what a retry wrapper needs. Past the last wrapper it is the
    base dispatch, which reads ``view.signal`` when it runs and so sees the replacement
    of every wrapper outside it.
    """

    __slots__ = ("call", "carried", "index", "view", "wrappers")

    def __init__(
        self,
        wrappers: tuple[Any, ...],
        view: ToolDispatchExecution,
        call: CallRecord,
        index: int,
        carried: bool,
    ) -> None:
        self.wrappers = wrappers
        self.view = view
        self.call = call
        self.index = index
        self.carried = carried

    def __call__(self) -> Awaitable[ToolExecutionResult]:
        # Returns the next coroutine itself (no coroutine layer of its own per wrapper).
        index = self.index
        wrappers = self.wrappers
        last = len(wrappers) - 1
        if index < last or (index == last and type(wrappers[index]) is not DeadlinePolicy):
            inner = _ExecuteNext(wrappers, self.view, self.call, index + 1, self.carried)
            awaitable: Awaitable[ToolExecutionResult] = wrappers[index](self.view, inner)
            return awaitable
        call = self.call
        if index == last:
            # The innermost wrapper is the timeout policy: its deadline scope around the
            # dispatch, without the policy's own coroutine layer (as dispatch does when
            # it is the only wrapper).
            plan: Any = call.plan
            if plan.version != plan.versions.value:
                plan = call.plan = plan.rebuild(plan.name, plan.agent)
            definition = plan.definition
            if definition is not None:
                budget = wrappers[index].budget(definition)
                if budget is not None:
                    return _timed_dispatch(call, self.view._signal, self.carried, budget)
        signal = self.view._signal
        if self.carried and signal is call.caller and not signal._cancelled:
            plan = call.plan
            if plan.direct and plan.version == plan.versions.value:
                return _direct(call)  # the common case: a plain body, no limit
        return _base_dispatch(call, signal, self.carried)


async def _direct(call: CallRecord) -> ToolExecutionResult:
    """The base dispatch of an async body without a limit, under an enclosing scope that
    carries the abort and the caller's own signal (what :func:`_base_dispatch` does then)."""
    plan: Any = call.plan
    context = _attempt(call)
    try:
        value = await plan.body(call.args, context)
    except Exception as exc:
        return failure_result(exc)
    finally:
        if call.derived is not None:
            call.end_attempt()
    return _settled(call, value)


def chain(call: CallRecord) -> Awaitable[ToolExecutionResult]:
    """The outermost execute wrapper's awaitable, for a pooled call whose plan has
    ``chained`` (the worker awaits it itself, then calls :func:`chained`)."""
    wrappers = call.plan.hooks.execute  # type: ignore[union-attr]
    view = ToolDispatchExecution._of(call)
    awaitable: Awaitable[ToolExecutionResult] = wrappers[0](
        view, _ExecuteNext(wrappers, view, call, 1, True)
    )
    return awaitable


def chained(call: CallRecord, result: object) -> None:
    """End a dispatch begun with :func:`chain` with what the chain returned."""
    if type(result) is not ToolExecutionResult:
        call.resolve(unreachable("tools/execute result", result), FINAL)
    else:
        resolve_dispatch(call, result)


async def _timed_dispatch(
    call: CallRecord, signal: CancelSignal, carried: bool, budget: float
) -> ToolExecutionResult:
    """The base dispatch under a deadline ``budget`` ms from now (TOOL_TIMEOUT if it
    passes); an async body without a limit or a replaced signal is awaited directly."""
    plan: Any = call.plan
    caller = call.caller
    scope, outer = _deadline.enter(call, budget)
    try:
        with scope:
            if (
                signal is not caller
                or not (plan.direct and (carried or not plan.suspends))
                or caller._cancelled
            ):
                result = await _base_dispatch(call, signal, carried)
            else:
                result = await _direct(call)
    except trio.Cancelled:
        _deadline.unwound(call, scope, budget)
        raise
    finally:
        call.deadline = outer
    return _deadline.timed_out(call, scope, budget) or result


def _attempt(call: CallRecord) -> Any:
    """The context a body gets for this attempt; marks the body invoked.

    A later attempt of a retry gets a fresh context object over the same record.
    """
    context: Any = AttemptContext(call) if call.invoked else call
    call.invoked = True
    return context


def _settled(call: CallRecord, value: Any) -> ToolExecutionResult:
    """A body's return as a result: a success after the caller's abort is ``ABORTED``.

    Text that is JSON-safe as it is makes a result that needs no materializing: the
    record remembers it (as ``clean``), and :func:`conclude` skips the check while the
    call's result is still that object.
    """
    if call.caller._cancelled:
        result = normalize(value, call.name)
        return result if result.is_error else ABORTED_RESULT
    if type(value) is str and value.isascii():
        result = call.clean = ToolExecutionResult((TextContent(value),), False)
        return result
    return normalize(value, call.name)


def resolve_dispatch(call: CallRecord, result: ToolExecutionResult) -> None:
    """End a dispatch with ``result``: the body's deferred contexts, the abort rule."""
    if call._deferred:
        result = call.with_deferred(result)
    if call.caller._cancelled and not result.is_error:
        result = _aborted(call, result)
    call.result = result
    call.state = RESOLVED


_CANCELLED: Final = object()


def _cut_short(call: CallRecord) -> ToolExecutionResult:
    """An attempt that ends before its body runs: ABORTED if an earlier attempt ran it."""
    return ABORTED_RESULT if call.invoked else ABORTED_BEFORE_DISPATCH_RESULT


async def _base_dispatch(
    call: CallRecord, signal: CancelSignal, carried: bool
) -> ToolExecutionResult:
    """Resolve the tool now, take its limit, run the body; never raises an ``Exception``."""
    caller = call.caller
    replaced = signal is not caller
    if caller._cancelled or (replaced and signal._cancelled):
        return _cut_short(call)
    plan: Any = call.plan
    if plan.version != plan.versions.value:  # ``plan.current()``, inline
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    definition = plan.definition
    if definition is None:
        return failure_result(ToolNotFoundError(call.name))
    limiter = plan.limiter
    if limiter is not None and not await _acquire(call, limiter, signal, carried):
        return _cut_short(call)
    call.view_signal = signal
    context = _attempt(call)
    body: Any = plan.body
    try:
        if plan.threaded:
            call.signal  # noqa: B018  (a derived signal is made here, in the trio thread)
            value = await trio.to_thread.run_sync(body, call.args, context)
        elif not plan.is_async:
            value = body(call.args, context)  # declared nonblocking: inline, no thread
        elif not plan.suspends or (carried and not replaced):
            # No scope needed: the body cannot reach a checkpoint, or an enclosing
            # scope carries the abort.
            value = await body(call.args, context)
        else:
            value = await _in_scope(body(call.args, context), call, signal, carried)
    except Exception as exc:
        return failure_result(exc)
    finally:
        if limiter is not None:
            limiter.release_on_behalf_of(call)
        call.view_signal = caller
        if call.derived is not None:
            call.end_attempt()
    if value is _CANCELLED:
        return ABORTED_RESULT
    if signal._cancelled:
        result = normalize(value, call.name)
        return result if result.is_error else ABORTED_RESULT
    return _settled(call, value)


async def _in_scope(awaitable: Any, call: CallRecord, signal: CancelSignal, carried: bool) -> Any:
    """Await in a cancel scope that the caller's signal (unless an enclosing scope
    carries it) and a replacement ``signal`` cancel; ``_CANCELLED`` if one did.

    The scope absorbs only its own ``Cancelled``; one from an enclosing scope passes.
    """
    scope = trio.CancelScope()
    link = ScopeLink(scope)
    caller = call.caller
    if not carried:
        caller._link(link)
    if signal is not caller:
        signal._link(link)
    try:
        with scope:
            return await awaitable
    finally:
        caller._unlink(link)
        signal._unlink(link)
    return _CANCELLED


async def _acquire(
    call: CallRecord, limiter: trio.CapacityLimiter, signal: CancelSignal, carried: bool
) -> bool:
    """Take a token of the tool's ``max_concurrency`` limiter for one body.

    Returns whether the call holds it (the caller releases it when the body ends);
    ``False`` when an abort arrived while it waited. A pooled call gives its batch
    slot back while it waits and takes one again, token in hand, before its body runs.
    """
    try:
        limiter.acquire_on_behalf_of_nowait(call)
    except trio.WouldBlock:
        pass
    else:
        return True
    stats = call.plan.stats  # type: ignore[union-attr]
    gate = call.gate
    if gate is not None:
        gate._leave(call)
    stats.waiting += 1
    try:
        if carried and signal is call.caller:
            await limiter.acquire_on_behalf_of(call)
        elif (
            await _in_scope(limiter.acquire_on_behalf_of(call), call, signal, carried) is _CANCELLED
        ):
            return False
    finally:
        stats.waiting -= 1
    held = False
    try:
        if gate is not None:
            await gate._rejoin(call)
        held = not (call.caller._cancelled or signal._cancelled)
    finally:
        if not held:
            limiter.release_on_behalf_of(call)
    return held


def _aborted(call: CallRecord, result: ToolExecutionResult) -> ToolExecutionResult:
    base = ABORTED_RESULT if call.invoked else ABORTED_BEFORE_DISPATCH_RESULT
    contexts = result.additional_contexts
    return msgspec.structs.replace(base, additional_contexts=contexts) if contexts else base


# -- stage 3: finalize --------------------------------------------------------------


async def finalize(call: CallRecord) -> ToolExecutionResult:
    """Run post-execute (when the call is RESOLVED), materialize, notify observers."""
    result = call.result
    assert result is not None
    plan: Any = call.plan
    if plan.version != plan.versions.value:  # ``plan.current()``, inline
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    if call.state == RESOLVED:
        post = plan.hooks.post
        if post:
            execution = call._execution or call.execution
            try:
                decision = await run_post(post, execution, result)
                result = apply_post(decision, result)
            except Exception as exc:
                result = failure_result(exc)
            else:
                if call.caller._cancelled and not result.is_error:
                    result = _aborted(call, result)
            if plan.version != plan.versions.value:
                plan = call.plan = plan.rebuild(plan.name, plan.agent)
            call.result = result
            call.state = FINAL
    return conclude(call)


def conclude(call: CallRecord) -> ToolExecutionResult:
    """Finalize without post-execute (none is due, or it ran): the cancellation rule,
    materialize, count, notify observers. Synchronous: no coroutine when nothing awaits.
    """
    result = call.result
    assert result is not None
    plan: Any = call.plan
    if plan.version != plan.versions.value:
        plan = call.plan = plan.rebuild(plan.name, plan.agent)
    if call.state == RESOLVED and call.caller._cancelled and not result.is_error:
        result = _aborted(call, result)
    if result is not call.clean:
        result = materialize(result)
    call.result = result
    call.state = FINAL
    if result.is_error:
        plan.stats.count_error(result)
    else:
        plan.stats.ok += 1
    observers = plan.hooks.result
    if observers:
        notify(observers, call._execution or call.execution, result)
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


async def execute(registry: ToolRegistry, input: ToolExecutionInput) -> ToolExecutionResult:
    """Run one call through prepare, dispatch and finalize.

    With the registry's ``phase_timings`` on, each phase with work is timed (two clock
    reads); off, a phase costs no clock read.
    """
    check_trio()
    call = begin(registry, input)
    plan = call.plan
    assert plan is not None
    stats = plan.stats
    timings = call.timings
    committed = False
    try:
        if call.state == PENDING:
            if plan.hooks.any_prepare:
                if timings:
                    begun = _now()
                    await policy(call)
                    stats.prepare += _now() - begun
                else:
                    await policy(call)
            if call.state == PENDING:
                if timings:
                    begun = _now()
                    await dispatch(call)
                    stats.dispatch += _now() - begun
                else:
                    await dispatch(call)
        if timings and call.plan.hooks.any_finalize:  # type: ignore[union-attr]
            begun = _now()
            result = await finalize(call)
            stats.finalize += _now() - begun
        else:
            result = await finalize(call)
        committed = True
    finally:
        if not committed:
            stats.abandoned += 1
    return result
