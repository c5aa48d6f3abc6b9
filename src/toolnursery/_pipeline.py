"""The pipeline of one call, in three stages the scheduler can drive separately.

``prepare``  materialize → pre-aborted check → pre-execute waterfall (+ approval) →
             guards → cancellation re-check
``dispatch`` execute wrappers around the base dispatch (fuse signals, resolve the
             tool, run the body, normalize) → deferred contexts → cancellation check
``finalize`` post-execute waterfall → cancellation check → materialize → observers

A call leaves ``prepare`` in one of three states: PENDING (dispatch it), RESOLVED
(a result exists and still passes post-execute: denials, pre-phase aborts) or FINAL
(a result exists and skips post-execute: argument failures, pre-aborted entries,
raising policy hooks).

Cancellation: the body runs inline in the calling task, inside one cancel scope linked
to its (fused) signal (:func:`_run_in_scope`); the scope absorbs only its own
``Cancelled``. Under the scheduler's pool (``dispatch(call, carried=True)``) a call
without wrappers runs with no scope of its own: the pool's scope carries the abort.

Each phase reads the hook tuples when it starts (:func:`_current_hooks`, a version
compare), so a listener registered during one phase joins the next phases of the same
call, never the phase already running.
"""

from __future__ import annotations

import dis
import inspect
import logging
import types
from collections.abc import Awaitable
from typing import Any, Final, Protocol

import msgspec
import trio

from ._content import (
    HookContext,
    ToolExecutionResult,
)
from ._decisions import Accept, Allow, Ask, Block, Deny, PostToolDecision, PreToolDecision
from ._errors import ToolNotFoundError
from ._execution import (
    ApprovalRequest,
    ApprovalService,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRunContext,
)
from ._json import NotJSONError, snapshot
from ._outcomes import (
    _ARGS_NOT_JSON,
    ABORTED_BEFORE_DISPATCH_RESULT,
    ABORTED_RESULT,
    _failure,
    _materialize,
    _message,
    _normalize,
    _text_result,
    _Unreachable,
    _unreachable,
)
from ._signal import CancelSignal, fuse
from ._statistics import now as _now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._definition import ToolDefinition
    from ._registry import ToolRegistry

logger = logging.getLogger("toolnursery")

PENDING: Final = 0
RESOLVED: Final = 1
FINAL: Final = 2

_ALLOW: Final = Allow()
_ACCEPT: Final = Accept()
_UNSET: Final = msgspec.UNSET


class _Hooks:
    """The hook tuples one scope's calls see, captured when a stage starts."""

    __slots__ = ("approval", "execute", "guards", "post", "pre", "result", "version")

    def __init__(
        self,
        version: int,
        pre: tuple[Any, ...],
        execute: tuple[Any, ...],
        post: tuple[Any, ...],
        result: tuple[Any, ...],
        guards: tuple[Any, ...],
        approval: ApprovalService | None,
    ) -> None:
        self.version = version
        self.pre = pre
        self.execute = execute
        self.post = post
        self.result = result
        self.guards = guards
        self.approval = approval


class Gate(Protocol):
    """The scheduler's side of a call that waits for its tool's limit (internal).

    A pooled call holds a slot under its batch's ``max_parallel`` while it dispatches;
    it gives the slot back while it waits for a ``max_concurrency`` token, and takes
    one again (holding the token) before the body runs.
    """

    def _leave(self, call: Call) -> None:
        """Give the call's batch slot back: it is about to wait."""

    async def _rejoin(self, call: Call) -> None:
        """Wait for a batch slot for the call again."""


class Call:
    """One call's state between the stages (internal; the scheduler holds these)."""

    __slots__ = (
        "deferred",
        "execution",
        "gate",
        "hooks",
        "invoked",
        "registry",
        "result",
        "signal",
        "state",
    )

    def __init__(self, registry: ToolRegistry, hooks: _Hooks, signal: CancelSignal) -> None:
        self.registry = registry
        self.hooks = hooks
        self.signal = signal
        self.execution: ToolExecution
        self.state = PENDING
        self.result: ToolExecutionResult | None = None
        self.invoked = False
        self.deferred: list[HookContext] = []
        self.gate: Gate | None = None

    def resolve(self, result: ToolExecutionResult, state: int) -> Call:
        self.result = result
        self.state = state
        return self


# -- stage 1: prepare ---------------------------------------------------------------


def begin(registry: ToolRegistry, input: ToolExecutionInput, *, frozen: bool = False) -> Call:
    """Read the input once, snapshot the arguments, mint the token, check pre-abort.

    ``frozen=True`` says ``input.arguments`` already is a snapshot made by the caller
    (the scheduler freezes once, for the classifier and the body alike).
    """
    call_id, name, arguments, signal, agent, parent = (
        input.call_id,
        input.name,
        input.arguments,
        input.signal,
        input.agent,
        input.parent,
    )
    if type(signal) is not CancelSignal and not isinstance(signal, CancelSignal):
        raise TypeError(
            f"ToolExecutionInput.signal must be a CancelSignal, not {type(signal).__name__}"
        )
    call = Call(registry, registry._hooks_for(agent), signal)
    registry._stats.started += 1
    try:
        args = arguments if frozen else snapshot(arguments)
    except NotJSONError:
        failure: ToolExecutionResult | None = _ARGS_NOT_JSON
    except Exception as exc:
        failure = _failure(exc)
    else:
        failure = None
    if failure is not None:
        call.execution = ToolExecution(
            call_id, name, _UNSET, signal, agent, parent, ToolExecutionToken()
        )
        return call.resolve(failure, FINAL)
    call.execution = ToolExecution(call_id, name, args, signal, agent, parent, ToolExecutionToken())
    if signal._cancelled:
        return call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, FINAL)
    return call


def _current_hooks(call: Call) -> _Hooks:
    """The hooks a phase starting now sees (each waterfall captures its list as it starts).

    A version compare on the hot path; the tuples are rebuilt only after a change.
    """
    hooks = call.hooks
    registry = call.registry
    if hooks.version != registry._version:
        call.hooks = hooks = registry._hooks_for(call.execution.agent)
    return hooks


async def policy(call: Call) -> None:
    """Pre-execute waterfall (with approval), guards, then the cancellation re-check."""
    hooks = _current_hooks(call)
    execution = call.execution
    if hooks.pre:
        try:
            decision = await _run_pre(hooks.pre, execution)
            if type(decision) is not Allow:
                denial = await _resolve_decision(decision, execution, hooks.approval)
                if denial is not None:
                    call.resolve(denial, RESOLVED)
                    return
        except Exception as exc:
            call.resolve(_failure(exc), FINAL)
            return
        hooks = _current_hooks(call)
    for guard in hooks.guards:
        try:
            reason = guard(execution)
        except Exception as exc:
            call.resolve(_failure(exc), FINAL)
            return
        if reason is not None:
            if isinstance(reason, str):
                call.resolve(_text_result("Error: " + reason), RESOLVED)
            else:
                call.resolve(_unreachable("ToolGuard result", reason), FINAL)
            return
    if call.signal._cancelled:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)


async def prepare(registry: ToolRegistry, input: ToolExecutionInput) -> Call:
    """Stage 1: :func:`begin`, then :func:`policy` when the call is still pending."""
    call = begin(registry, input)
    if call.state == PENDING:
        await policy(call)
    return call


async def _allow() -> PreToolDecision:
    return _ALLOW


async def _run_pre(listeners: tuple[Any, ...], execution: ToolExecution) -> PreToolDecision:
    if len(listeners) == 1:
        decision: PreToolDecision = await listeners[0](execution, _allow)
        return decision
    return await _PreQueue(listeners, execution)()


# The waterfall queues are small objects rather than recursive closures: a closure that
# refers to itself is a reference cycle per call, left to the cyclic GC (measured: ~3 µs
# per call of collector time on the hot path).


class _PreQueue:
    """``next()`` of a pre-execute waterfall: each call runs the next listener."""

    __slots__ = ("execution", "index", "listeners")

    def __init__(self, listeners: tuple[Any, ...], execution: ToolExecution) -> None:
        self.listeners = listeners
        self.execution = execution
        self.index = 0

    async def __call__(self) -> PreToolDecision:
        index = self.index
        listeners = self.listeners
        if index < len(listeners):
            self.index = index + 1
            decision: PreToolDecision = await listeners[index](self.execution, self)
            return decision
        return _ALLOW


async def _resolve_decision(
    decision: object, execution: ToolExecution, approval: ApprovalService | None
) -> ToolExecutionResult | None:
    """Turn a non-Allow decision into a denial result, or ``None`` when the call proceeds."""
    if type(decision) is Deny:
        return _text_result("Error: " + str(decision.reason))
    if type(decision) is not Ask:
        raise _Unreachable("PreToolDecision", decision)
    name = execution.name
    if approval is None:
        reason = (
            decision.reason
            if decision.reason is not None
            else f'tool "{name}" requires approval (not yet supported)'
        )
        return _text_result("Error: " + reason)
    agent = execution.agent
    if agent is None:
        return _text_result(
            f'Error: tool "{name}" requires approval, but the call has no agent to route it through'
        )
    outcome = await approval.request(
        ApprovalRequest(agent, name, execution.call_id, decision.reason, execution.signal)
    )
    if outcome == "allowed-once" or outcome == "cancelled":
        if execution.signal._cancelled:
            return ABORTED_BEFORE_DISPATCH_RESULT
        if outcome == "allowed-once":
            return None
        return _text_result(f'Error: approval for tool "{name}" was cancelled')
    if outcome == "rejected":
        return _text_result(f'Error: the user rejected tool "{name}"')
    if outcome == "unavailable":
        return _text_result(
            f'Error: tool "{name}" requires approval, but no approval channel is available'
        )
    raise _Unreachable("ApprovalOutcome", outcome)


# -- stage 2: dispatch --------------------------------------------------------------


async def dispatch(call: Call, *, carried: bool = False) -> None:
    """Stage 2: run the execute wrappers around the body; leaves the call RESOLVED or FINAL.

    Args:
        call: a PENDING call.
        carried: the caller's signal is already linked to a cancel scope enclosing
            this task (the scheduler's pool). With no wrappers, the body then runs
            without a scope of its own and a cancellation reaches the caller as
            ``trio.Cancelled`` after :attr:`Call.invoked` was set.
    """
    wrappers = _current_hooks(call).execute
    if not wrappers:
        result = await _base_dispatch(call, call.signal, carried)
    else:
        view = ToolDispatchExecution(call.execution)
        try:
            result = await _ExecuteNext(wrappers, view, call, 0)()
        except Exception as exc:
            call.resolve(_failure(exc), FINAL)
            return
        if type(result) is not ToolExecutionResult:
            call.resolve(_unreachable("tools/execute result", result), FINAL)
            return
    deferred = call.deferred
    if deferred:
        result = msgspec.structs.replace(
            result, additional_contexts=(*deferred, *result.additional_contexts)
        )
    if call.signal._cancelled and not result.is_error:
        result = _aborted(call, result)
    call.resolve(result, RESOLVED)


class _ExecuteNext:
    """``next()`` of one execute wrapper: runs the rest of the chain from its position.

    Unlike the pre/post waterfalls (a shared queue, B207), each wrapper's ``next`` is
    bound to its position, so calling it again re-runs every inner wrapper and a fresh
    dispatch of the body — what a retry wrapper needs. Past the last wrapper it is the
    base dispatch, which reads ``view.signal`` when it runs and so sees the replacement
    of every wrapper outside it.
    """

    __slots__ = ("call", "index", "view", "wrappers")

    def __init__(
        self, wrappers: tuple[Any, ...], view: ToolDispatchExecution, call: Call, index: int
    ) -> None:
        self.wrappers = wrappers
        self.view = view
        self.call = call
        self.index = index

    async def __call__(self) -> ToolExecutionResult:
        index = self.index
        wrappers = self.wrappers
        if index < len(wrappers):
            inner = _ExecuteNext(wrappers, self.view, self.call, index + 1)
            result: ToolExecutionResult = await wrappers[index](self.view, inner)
            return result
        return await _base_dispatch(self.call, self.view._signal)


_CANCELLED: Final = object()


async def _base_dispatch(
    call: Call, signal: CancelSignal, carried: bool = False
) -> ToolExecutionResult:
    """Fuse signals, resolve the tool now, run the body; never raises an ``Exception``."""
    caller = call.signal
    fusion = None
    if signal is not caller:
        fusion = fuse(caller, signal)
        signal = fusion.signal
    try:
        if signal._cancelled:
            return ABORTED_BEFORE_DISPATCH_RESULT
        execution = call.execution
        definition = call.registry.get(execution.name, execution.agent)
        if definition is None:
            return _failure(ToolNotFoundError(execution.name))
        body = definition.execute
        context = ToolRunContext(execution, signal, call.deferred)
        limiter = None
        if definition.max_concurrency is not None:
            limiter = await _acquire(call, definition, context, signal, carried)
            if limiter is None:
                return ABORTED_BEFORE_DISPATCH_RESULT
        call.invoked = True
        try:
            if not is_async(body):
                value = await trio.to_thread.run_sync(body, execution.arguments, context)
            elif carried or not may_suspend(body):
                # No scope needed: the pool's scope carries the abort, or the body
                # cannot reach a checkpoint, so a scope could never interrupt it.
                value = await body(execution.arguments, context)
            else:
                value = await _run_in_scope(body(execution.arguments, context), signal)
        except Exception as exc:
            return _failure(exc)
        finally:
            if limiter is not None:
                limiter.release_on_behalf_of(context)
        if value is _CANCELLED:
            return ABORTED_RESULT
        result = _normalize(value, execution.name)
        if signal._cancelled and not result.is_error:
            return ABORTED_RESULT
        return result
    finally:
        if fusion is not None:
            fusion.close()


async def _acquire(
    call: Call,
    definition: ToolDefinition,
    borrower: object,
    signal: CancelSignal,
    carried: bool,
) -> trio.CapacityLimiter | None:
    """Take a token of the tool's ``max_concurrency`` limiter for one body.

    Returns the limiter (the caller releases the token when the body ends), or
    ``None`` when the call's signal fired while it waited. A pooled call gives its
    batch slot back while it waits and takes one again, token in hand, before its
    body runs. Under the pool's scope (``carried``) an abort arrives as
    ``trio.Cancelled``.
    """
    registry = call.registry
    limiter = registry._limiter(definition)
    try:
        limiter.acquire_on_behalf_of_nowait(borrower)
    except trio.WouldBlock:
        pass
    else:
        return limiter
    stats = registry._stats
    gate = call.gate
    if gate is not None:
        gate._leave(call)
    stats.waiting += 1
    try:
        if carried:
            await limiter.acquire_on_behalf_of(borrower)
        elif await _run_in_scope(limiter.acquire_on_behalf_of(borrower), signal) is _CANCELLED:
            return None
    finally:
        stats.waiting -= 1
    held = False
    try:
        if gate is not None:
            await gate._rejoin(call)
        held = not signal._cancelled
    finally:
        if not held:
            limiter.release_on_behalf_of(borrower)
    return limiter if held else None


async def _run_in_scope(coro: Awaitable[Any], signal: CancelSignal) -> Any:
    """Await the body in a cancel scope that ``signal`` cancels.

    The scope absorbs only its own ``Cancelled`` (reported as ``_CANCELLED``); a
    ``Cancelled`` from an enclosing scope passes through untouched.
    """
    scope = trio.CancelScope()

    def cancel(_: CancelSignal) -> None:
        scope.cancel()

    signal._link(cancel)
    try:
        with scope:
            return await coro
    finally:
        signal._unlink(cancel)
    return _CANCELLED


_CO_COROUTINE: Final = inspect.CO_COROUTINE
_SUSPENDING_OPS: Final = frozenset(
    dis.opmap[name]
    for name in (
        "GET_AWAITABLE",
        "GET_AITER",
        "GET_ANEXT",
        "BEFORE_ASYNC_WITH",
        "SEND",
        "YIELD_VALUE",
    )
    if name in dis.opmap
)
_MAY_SUSPEND_ATTR: Final = "__toolnursery_may_suspend__"
_suspends: dict[types.CodeType, bool] = {}


def may_suspend(fn: Any) -> bool:
    """Whether an ``async def`` body can ever yield to trio (reach a checkpoint).

    A coroutine function whose code has no ``await``, ``async for`` or ``async with``
    runs to completion in one step: no cancellation can be delivered to it, so it needs
    no cancel scope. Wrappers that only await another body (``define_tool``'s,
    ``attach_output``'s) carry their body's answer in ``__toolnursery_may_suspend__``.
    Anything that cannot be inspected may suspend.
    """
    marked = getattr(fn, _MAY_SUSPEND_ATTR, None)
    if type(marked) is bool:
        return marked
    if type(fn) is not types.FunctionType:
        return True
    code = fn.__code__
    answer = _suspends.get(code)
    if answer is None:
        answer = _suspends[code] = any(
            instruction.opcode in _SUSPENDING_OPS for instruction in dis.get_instructions(code)
        )
    return answer


def mark_may_suspend(wrapper: Any, body: Any) -> None:
    """Record on ``wrapper`` (which only awaits ``body``) whether ``body`` may suspend."""
    try:
        setattr(wrapper, _MAY_SUSPEND_ATTR, may_suspend(body))
    except (AttributeError, TypeError):
        pass


def is_async(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine: the one test every module applies, so
    a wrapper is async exactly when its body is and runs where the body would have."""
    if type(fn) is types.FunctionType:
        return bool(fn.__code__.co_flags & _CO_COROUTINE)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _aborted(call: Call, result: ToolExecutionResult) -> ToolExecutionResult:
    base = ABORTED_RESULT if call.invoked else ABORTED_BEFORE_DISPATCH_RESULT
    contexts = result.additional_contexts
    return msgspec.structs.replace(base, additional_contexts=contexts) if contexts else base


# -- stage 3: finalize --------------------------------------------------------------


async def _accept(*_: object) -> PostToolDecision:
    return _ACCEPT


async def finalize(call: Call) -> ToolExecutionResult:
    """Run post-execute (when the call is RESOLVED), materialize, notify observers."""
    result = call.result
    assert result is not None
    hooks = _current_hooks(call)
    if call.state == RESOLVED:
        post = hooks.post
        if post:
            try:
                decision = await _run_post(post, call.execution, result)
                result = _apply_post(decision, result)
            except Exception as exc:
                result = _failure(exc)
            else:
                if call.signal._cancelled and not result.is_error:
                    result = _aborted(call, result)
            hooks = _current_hooks(call)
        elif call.signal._cancelled and not result.is_error:
            result = _aborted(call, result)
    result = _materialize(result)
    call.result = result
    call.state = FINAL
    if result.is_error:
        call.registry._stats.count_error(result)
    else:
        call.registry._stats.ok += 1
    observers = hooks.result
    if observers:
        _notify(observers, call.execution, result)
    return result


async def _run_post(
    listeners: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
) -> PostToolDecision:
    if len(listeners) == 1:
        decision: PostToolDecision = await listeners[0](execution, result, _accept)
        return decision
    return await _PostQueue(listeners, execution, result)()


class _PostQueue:
    """``next()`` of a post-execute waterfall: each call runs the next listener."""

    __slots__ = ("execution", "index", "listeners", "result")

    def __init__(
        self, listeners: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
    ) -> None:
        self.listeners = listeners
        self.execution = execution
        self.result = result
        self.index = 0

    async def __call__(self) -> PostToolDecision:
        index = self.index
        listeners = self.listeners
        if index < len(listeners):
            self.index = index + 1
            decision: PostToolDecision = await listeners[index](self.execution, self.result, self)
            return decision
        return _ACCEPT


def _apply_post(decision: object, result: ToolExecutionResult) -> ToolExecutionResult:
    t = type(decision)
    if t is Accept:
        content = decision.content  # type: ignore[attr-defined]
        contexts = decision.additional_contexts  # type: ignore[attr-defined]
        if content is None and not contexts:
            return result
        return msgspec.structs.replace(
            result,
            content=result.content if content is None else tuple(content),
            additional_contexts=(*result.additional_contexts, *contexts),
        )
    if t is Block:
        return ToolExecutionResult(
            tuple(decision.feedback),  # type: ignore[attr-defined]
            True,
            additional_contexts=tuple(decision.additional_contexts),  # type: ignore[attr-defined]
        )
    raise _Unreachable("PostToolDecision", decision)


def _notify(
    observers: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
) -> None:
    for observer in observers:
        try:
            returned = observer(execution, result)
        except Exception as exc:
            _observer_failed(execution, _message(exc))
            continue
        if inspect.isawaitable(returned):
            if inspect.iscoroutine(returned):
                returned.close()
            _observer_failed(
                execution, "observer returned an awaitable; observers must be synchronous"
            )


def _observer_failed(execution: ToolExecution, message: str) -> None:
    logger.warning(
        'tool "%s" (%s): tools/result observer failed: %s',
        execution.name,
        execution.call_id,
        message,
    )


# -- the whole pipeline ---------------------------------------------------------------


async def execute(registry: ToolRegistry, input: ToolExecutionInput) -> ToolExecutionResult:
    """Run one call through prepare, dispatch and finalize.

    Phase times are taken around the hooks and the body only: a phase with no hooks
    reads no clock (its few microseconds of CPU are the benchmarks' business).
    """
    call = begin(registry, input)
    stats = registry._stats
    committed = False
    try:
        if call.state == PENDING:
            hooks = call.hooks
            if hooks.pre or hooks.guards:
                start = _now()
                await policy(call)
                stats.prepare += _now() - start
            if call.state == PENDING:
                start = _now()
                await dispatch(call)
                stats.dispatch += _now() - start
        hooks = call.hooks
        if hooks.post or hooks.result:
            start = _now()
            result = await finalize(call)
            stats.finalize += _now() - start
        else:
            result = await finalize(call)
        committed = True
    finally:
        if not committed:
            stats.abandoned += 1
    return result
