"""Stage 2 of a call, the dispatch: the one seam between the pipeline and a tool body.

:func:`invoke` is the only caller of a tool body. It is a plain function that returns
the body's awaitable (a sync body's value comes back as an awaitable too): whoever
dispatches awaits it in its own frame — a pooled worker, the dispatch coroutine, the
end of a wrapper chain — so a body resumes through no coroutine layer of the seam. What
the body returned becomes a result in :func:`settle`; :func:`resolve_dispatch` ends
every dispatch (the body's deferred contexts, the abort rule).

How dispatch reaches the body is compiled into the call's plan: its :class:`Route` (the
body's kind) and ``plan.bare`` (no execute wrapper, time budget or ``max_concurrency``
limit stands between dispatch and the body).

| route     | the body                                 | bare                                                  | otherwise |
|-----------|------------------------------------------|-------------------------------------------------------|-----------|
| `MISSING` | none: no tool of that name in the view   | `TOOL_NOT_FOUND` in one step (the batch runs it in place) | the wrappers run around `TOOL_NOT_FOUND` |
| `STEP`    | `async def` that cannot suspend (no `await`) | awaited; never yields (the batch runs it in place) | awaited directly without a limit |
| `INLINE`  | sync, declared ``nonblocking``            | called in the trio thread (the batch runs it in place) | called in the trio thread |
| `AWAIT`   | `async def` that may suspend             | a pooled worker awaits it in its own frame (:func:`start`) | awaited directly without a limit; in a scope of its own when nothing encloses the call |
| `THREAD`  | sync                                     | run in a worker thread                                | run in a worker thread |

A timeout budget is a deadline scope around the dispatch (:mod:`._deadline`), or, in a
batch, one that the calls of one budget share (:func:`dispatch_grouped`). A pooled call
whose wrapper chain starts with a wrapper other than the timeout policy
(``hooks.chained``) has the chain awaited by the worker itself.

Cancellation: under ``registry.execute()`` (``carried=False``) a body that may suspend
runs in one cancel scope linked to the caller's signal; the scope absorbs only its own
``Cancelled``. Under a batch (``carried=True``) an enclosing scope carries the abort:
the body and every execute wrapper see ``trio.Cancelled``, and the batch maps the call
by whether its body was invoked (:meth:`CallRecord.aborted`). A wrapper's replacement
signal is linked (O(1)) to a scope around the body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core._aiothread import run_sync as _aio_thread
from .._core._content import TextContent, ToolExecutionResult
from .._core._errors import ToolArgsError, ToolNotFoundError, ToolTimeoutError
from .._core._execution import ToolDispatchExecution, dispatch_view
from .._core._lifecycle import aborted_as, cut_short
from .._core._outcomes import JSON_STARTS, failure_result, normalize, unreachable
from .._core._signal import CancelSignal, fired_before
from . import _deadline
from ._call import FINAL, PENDING, RESOLVED, AttemptContext, CallRecord
from ._deadline import DeadlinePolicy
from ._plan import Route
from ._replaced import CANCELLED, dispatch_replaced, in_scope

if TYPE_CHECKING:
    from ._plan import ToolPlan

__all__ = [
    "BODY",
    "BodyAwait",
    "CHAIN",
    "DONE",
    "Ending",
    "abort_result",
    "dispatch",
    "dispatch_grouped",
    "invoke",
    "resolve_dispatch",
    "settle",
    "settle_dispatch",
    "start",
]


_new: Final = object.__new__
_STEP: Final = Route.STEP
_AWAIT: Final = Route.AWAIT
_THREAD: Final = Route.THREAD
_INLINE: Final = Route.INLINE
_in_trio_task: Final = trio.lowlevel.in_trio_task
BodyAwait = Callable[[CallRecord], Awaitable[ToolExecutionResult]]
"""The asyncio driver's own await of a body that a wrapper chain's ``next()`` reaches."""


# -- the seam -------------------------------------------------------------------------


def invoke(call: CallRecord, native: bool | BodyAwait = False) -> Awaitable[Any]:
    """Call the tool body of ``call``'s plan: the only caller of a tool body.

    Marks the call invoked and makes the attempt's run context (a fresh
    :class:`~toolnursery._pipeline._call.AttemptContext` over the record). Returns the body's
    awaitable for the caller to await in its own frame: an async body's coroutine, a
    sync body's thread run, or, for a nonblocking sync body (called here), an awaitable
    of its value. A sync body's exception raises from here. ``native``: the asyncio
    driver's call (an async body is ``plan.native``)."""
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    context: AttemptContext = _new(AttemptContext)  # attempt_context(call), inlined
    context._record = call
    call.invoked = True
    route = plan.route
    check = plan.check
    if check is not None:
        # A raw definition's argument check, in place of its wrapper's coroutine layer.
        violations = check(call.args)
        if violations:
            return _raises(ToolArgsError(violations), route)
    if route is _AWAIT or route is _STEP:
        awaitable: Awaitable[Any] = (plan.native if native else plan.body)(call.args, context)
        return awaitable
    if route is _THREAD:
        call.signal  # noqa: B018  (a derived signal is made here, in the trio thread)
        if not _in_trio_task():  # the asyncio driver's call (toolnursery._aio._driver)
            return _aio_thread(plan.body, call.args, context)
        return trio.to_thread.run_sync(plan.body, call.args, context)
    assert route is _INLINE, route
    return _returned(plan.body(call.args, context))


def _raises(exc: ToolArgsError, route: Route) -> Awaitable[Any]:
    """Arguments the check refused, as the body's failure would come: a sync body's
    raises from :func:`invoke`, an async body's from its awaitable."""
    if route is _INLINE or route is _THREAD:
        raise exc
    return _raising(exc)


async def _raising(exc: Exception) -> Any:
    raise exc


async def _returned(value: Any) -> Any:
    return value


def settle(call: CallRecord, value: Any) -> ToolExecutionResult:
    """A body's return as a result: a success after the caller's abort is ``ABORTED``.

    Text that is JSON-safe as it is makes a result that needs no materializing: the
    record remembers it (as ``clean``), and ``conclude`` skips the check while the
    call's result is still that object.
    """
    if call.caller.cancelled:
        result = normalize(value, call.name)
        return result if result.is_error else cut_short(True)
    if type(value) is str and value.isascii() and not (value and value[0] in JSON_STARTS):
        result = call.clean = ToolExecutionResult((TextContent(value),), False)
        return result
    return normalize(value, call.name)


def resolve_dispatch(call: CallRecord, result: ToolExecutionResult) -> None:
    """End a dispatch with ``result``: the body's deferred contexts, the abort rule."""
    if call.deferrals:
        result = call.with_deferred(result)
    if call.caller.cancelled and not result.is_error:
        result = abort_result(call, result)
    assert call.state is PENDING
    call.result = result
    call.state = RESOLVED


def abort_result(call: CallRecord, result: ToolExecutionResult) -> ToolExecutionResult:
    """What ``result`` becomes after the caller's abort (the call machine decides)."""
    return aborted_as(result, call.invoked)


# -- a pooled call: one awaitable for the worker's own frame ----------------------------


class Ending:
    """Turns what a dispatch begun with :func:`start` returned, or raised, into its result."""

    __slots__ = ("raised", "returned")

    def __init__(
        self,
        returned: Callable[[CallRecord, Any], None],
        raised: Callable[[CallRecord, Exception], None],
    ) -> None:
        self.returned = returned
        self.raised = raised


def settle_dispatch(call: CallRecord, value: Any) -> None:
    """End a dispatch whose body returned ``value`` (:func:`settle`, :func:`resolve_dispatch`).

    The common case — ASCII text, no abort, nothing deferred — in one step.
    """
    if (
        type(value) is str
        and value.isascii()
        and not (value and value[0] in JSON_STARTS)  # normalize marks text that reads as JSON
        and not call.deferrals
        and not call.caller.cancelled
    ):
        assert call.state is PENDING
        call.result = call.clean = ToolExecutionResult((TextContent(value),), False)
        call.state = RESOLVED
        return
    resolve_dispatch(call, settle(call, value))


def _body_raised(call: CallRecord, exc: Exception) -> None:
    resolve_dispatch(call, failure_result(exc))


def _chain_returned(call: CallRecord, result: Any) -> None:
    if type(result) is not ToolExecutionResult:
        call.resolve(unreachable("tools/execute result", result), FINAL)
    else:
        resolve_dispatch(call, result)


def _chain_raised(call: CallRecord, exc: Exception) -> None:
    call.resolve(failure_result(exc), FINAL)


def _done(call: CallRecord, value: Any) -> None:
    pass


def _internal(call: CallRecord, exc: Exception) -> None:
    raise exc  # the dispatch coroutine resolves every failure of a tool: this is ours


BODY: Final = Ending(settle_dispatch, _body_raised)
"""The awaitable was the body's (:func:`invoke`)."""
CHAIN: Final = Ending(_chain_returned, _chain_raised)
"""The awaitable was the outermost execute wrapper's."""
DONE: Final = Ending(_done, _internal)
"""The awaitable was :func:`dispatch`'s, which resolves the call itself."""


def start(call: CallRecord, native: bool | BodyAwait = False) -> tuple[Awaitable[Any], Ending]:
    """Stage 2 of a pooled call (under a scope that carries the batch's abort), as one
    awaitable that the worker awaits in its own frame, and the :class:`Ending` to hand
    what it returns or raises.

    The common case awaits the body itself (``AWAIT`` or ``STEP``, bare), a chain that
    starts with a wrapper the chain itself (one coroutine layer fewer per resume); any
    other dispatch is :func:`dispatch`'s coroutine. ``native``: as :func:`invoke`'s, or
    a :data:`BodyAwait` that the chain's ``next()`` awaits a plain body with."""
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    if plan.version != plan.versions.value:  # call.current_plan(), inline (the hot path)
        plan = call.current_plan()
    if not call.caller.cancelled:
        if plan.bare:
            route = plan.route
            if route is _AWAIT or route is _STEP:
                return invoke(call, native), BODY
        elif plan.hooks.chained and plan.definition is not None:
            wrappers = plan.hooks.execute
            view = dispatch_view(call)
            awaitable: Awaitable[ToolExecutionResult] = wrappers[0](
                view, _ExecuteNext(wrappers, view, call, 1, True, native)
            )
            return awaitable, CHAIN
    return dispatch(call, carried=True), DONE


# -- the dispatch coroutines ------------------------------------------------------------


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
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    if plan.version != plan.versions.value:
        plan = call.current_plan()  # (inline: the hot path)
    wrappers = plan.hooks.execute
    caller = call.caller
    if not wrappers:
        budget = plan.budget
        if budget is None:
            route = plan.route
            if (
                (route is _STEP or (route is _AWAIT and carried))
                and plan.limiter is None
                and not caller.cancelled
            ):
                # The common case, without a coroutine layer: no limit, an async body
                # that an enclosing scope (or nothing) interrupts.
                try:
                    value = await invoke(call)
                except Exception as exc:
                    result = failure_result(exc)
                else:
                    settle_dispatch(call, value)
                    return
            else:
                result = await _base_dispatch(call, caller, carried)
        else:
            # The view's only wrapper is the timeout policy: its deadline scope, here.
            result = await _timed_dispatch(call, caller, carried, budget)
    else:
        view = dispatch_view(call)
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
            call.resolve(failure_result(exc), FINAL)
            return
        if type(result) is not ToolExecutionResult:
            call.resolve(unreachable("tools/execute result", result), FINAL)
            return
    resolve_dispatch(call, result)


def _direct_now(plan: ToolPlan, call: CallRecord, carried: bool) -> bool:
    """Whether the body may be awaited with no scope or limit of dispatch's own: an async
    body without a limit that an enclosing scope interrupts, or that cannot suspend."""
    route = plan.route
    return (
        (route is _STEP or (route is _AWAIT and carried))
        and plan.limiter is None
        and not call.caller.cancelled
    )


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
    plan = call.current_plan()  # the same budget (the batch checked)
    caller = call.caller
    wrappers = plan.hooks.execute
    route = plan.route
    call.deadline = deadline
    try:
        try:
            if wrappers:
                view = dispatch_view(call)
                result = await _ExecuteNext(wrappers, view, call, 1, True)()
            elif (
                (route is _AWAIT or route is _STEP)
                and plan.limiter is None
                and not caller.cancelled
            ):
                # The body awaited here (one coroutine layer fewer than _direct).
                failed: ToolExecutionResult | None = None
                try:
                    value = await invoke(call)
                except Exception as exc:
                    failed = failure_result(exc)
                finally:
                    if call.derived is not None:
                        call.end_attempt()  # the body read its deadline signal
                result = failed if failed is not None else settle(call, value)
            else:
                result = await _base_dispatch(call, caller, True)
        except trio.Cancelled:
            if scope.cancel_called and not fired_before(caller, deadline):
                call.timed_out = budget
            raise
        finally:
            call.deadline = None
    except Exception as exc:  # a wrapper raised
        call.resolve(failure_result(exc), FINAL)
        return
    if scope.cancel_called and not fired_before(caller, deadline):
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

    __slots__ = ("call", "carried", "index", "native", "view", "wrappers")

    def __init__(
        self,
        wrappers: tuple[Any, ...],
        view: ToolDispatchExecution,
        call: CallRecord,
        index: int,
        carried: bool,
        native: bool | BodyAwait = False,
    ) -> None:
        self.wrappers = wrappers
        self.view = view
        self.call = call
        self.index = index
        self.carried = carried
        self.native = native  # the asyncio driver's (see invoke)

    def __call__(self) -> Awaitable[ToolExecutionResult]:
        # Returns the next coroutine itself (no coroutine layer of its own per wrapper).
        index = self.index
        wrappers = self.wrappers
        last = len(wrappers) - 1
        if index < last or (index == last and type(wrappers[index]) is not DeadlinePolicy):
            inner = _ExecuteNext(
                wrappers, self.view, self.call, index + 1, self.carried, self.native
            )
            awaitable: Awaitable[ToolExecutionResult] = wrappers[index](self.view, inner)
            return awaitable
        call = self.call
        plan: ToolPlan = call.plan  # type: ignore[assignment]
        if plan.version != plan.versions.value:
            plan = call.current_plan()  # (inline: the hot path)
        if index == last:
            # The innermost wrapper is the timeout policy: its deadline scope around the
            # dispatch, without the policy's own coroutine layer (as dispatch does when
            # it is the only wrapper).
            definition = plan.definition
            if definition is not None:
                budget = wrappers[index].budget(definition)
                if budget is not None:
                    return _timed_dispatch(call, self.view._signal, self.carried, budget)
        signal = self.view._signal
        native = self.native
        if native is not False:  # the asyncio driver's: its task carries the abort
            if plan.definition is None:
                return _returned(failure_result(ToolNotFoundError(call.name)))
            if signal is call.caller and not signal.cancelled:
                return _direct(call, True) if native is True else native(call)
            body = partial(_direct, call, True) if native is True else partial(native, call)
            return dispatch_replaced(call, signal, body)
        if signal is call.caller and _direct_now(plan, call, self.carried):
            return _direct(call)  # the common case: a plain body, no limit
        return _base_dispatch(call, signal, self.carried)


async def _direct(call: CallRecord, native: bool = False) -> ToolExecutionResult:
    """The base dispatch of an async body without a limit, awaited with no scope of its
    own, under the caller's own signal (what :func:`_base_dispatch` does then)."""
    try:
        value = await invoke(call, native)
    except Exception as exc:
        return failure_result(exc)
    finally:
        if call.derived is not None:
            call.end_attempt()  # the body read its deadline signal
    return settle(call, value)


async def _timed_dispatch(
    call: CallRecord, signal: CancelSignal, carried: bool, budget: float
) -> ToolExecutionResult:
    """The base dispatch under a deadline ``budget`` ms from now (TOOL_TIMEOUT if it
    passes); an async body without a limit or a replaced signal is awaited directly."""
    scope, outer = _deadline.enter(call, budget)
    try:
        with scope:
            if signal is call.caller and _direct_now(call.current_plan(), call, carried):
                result = await _direct(call)
            else:
                result = await _base_dispatch(call, signal, carried)
    except trio.Cancelled:
        _deadline.unwound(call, scope, budget)
        raise
    finally:
        call.deadline = outer
    return _deadline.timed_out(call, scope, budget) or result


async def _base_dispatch(
    call: CallRecord, signal: CancelSignal, carried: bool
) -> ToolExecutionResult:
    """Resolve the tool now, take its limit, run the body; never raises an ``Exception``."""
    caller = call.caller
    replaced = signal is not caller
    if caller.cancelled or (replaced and signal.cancelled):
        return cut_short(call.invoked)
    plan: ToolPlan = call.plan  # type: ignore[assignment]
    if plan.version != plan.versions.value:
        plan = call.current_plan()  # (inline: the hot path)
    if plan.definition is None:
        return failure_result(ToolNotFoundError(call.name))
    limiter = plan.limiter
    if limiter is not None and not await _acquire(call, limiter, signal, carried):
        return cut_short(call.invoked)
    call.view_signal = signal
    route = plan.route
    try:
        if route is not _AWAIT or (carried and not replaced):
            # No scope needed: the body cannot reach a checkpoint (or is a thread's,
            # which a scope cannot interrupt), or an enclosing scope carries the abort.
            value = await invoke(call)
        else:
            value = await in_scope(invoke(call), call, signal, carried)
    except Exception as exc:
        return failure_result(exc)
    finally:
        if limiter is not None:
            limiter.release_on_behalf_of(call)
        call.view_signal = caller
        if call.derived is not None:
            call.end_attempt()
    if value is CANCELLED:
        return cut_short(True)
    if signal.cancelled:
        result = normalize(value, call.name)
        return result if result.is_error else cut_short(True)
    return settle(call, value)


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
    stats = call.current_plan().stats
    gate = call.gate
    if gate is not None:
        gate.leave(call)
    stats.waiting += 1
    try:
        if carried and signal is call.caller:
            await limiter.acquire_on_behalf_of(call)
        elif await in_scope(limiter.acquire_on_behalf_of(call), call, signal, carried) is CANCELLED:
            return False
    finally:
        stats.waiting -= 1
    held = False
    try:
        if gate is not None:
            await gate.rejoin(call)
        held = not (call.caller.cancelled or signal.cancelled)
    finally:
        if not held:
            limiter.release_on_behalf_of(call)
    return held
