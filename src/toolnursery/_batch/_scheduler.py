"""The batch scheduler: run one model response's tool calls, in model order.

One driver walks the calls in model order (the caller's task for ``run_tool_calls``,
a task of the batch for ``open_tool_batch``). It classifies the next call; an
``exclusive`` call is a barrier (everything in flight drains first, then it runs
alone); consecutive ``parallel`` and ``keyed`` calls form a rolling pool capped at
``max_parallel``, each later call reclassified just before it starts. The driver alone
runs *prepare* (pre-execute, approval, guards) and *finalize* (post-execute,
observers, the durable result), so both happen strictly in model order; only
*dispatch* overlaps. Which dispatch may run when is :mod:`toolnursery._batch._admission`'s
business (the cap, waiting, the ready queue); which calls conflict is
:mod:`toolnursery._batch._conflicts`'; reading each call's arguments once is
:mod:`toolnursery._batch._intake`'s; the driver itself is :class:`~toolnursery._batch._face.ToolBatch`.

Where dispatch runs: a call that runs alone — an ``exclusive`` barrier, or the last
call of a closed batch with nothing in flight — or that cannot suspend is dispatched
inline by the driver (no task), under a cancel scope linked to the batch signal. Other
calls go to pool workers: at most as many as dispatches are in flight at once, each
reused for the next queued call (a capped batch runs ``max_parallel`` workers, not a
task per call). Workers take their call from a FIFO queue, so bodies start in model
order.

A batch has one nursery (none for a lone call): the driver runs in its body, inside a
cancel scope of its own, and the pool's workers run in it as its children
(``open_tool_batch`` keeps the caller's block outside it: its driver is a task that
opens the nursery).

Cancellation: the batch's abort cancels that nursery's scope, so one scope carries it
to every pooled call, wrapped or not, and shields the driver's scope from it, so the
driver drains and commits the calls that settle while the workers unwind before the
``Cancelled`` ends in the nursery. An execute wrapper sees
``trio.Cancelled`` come out of ``await next()``, and the worker then maps the call to
``ABORTED`` or ``ABORTED_BEFORE_DISPATCH`` by whether its body was invoked. Abort stops
starting, drains and commits what started, then gives every unstarted call a synthetic
``ABORTED_BEFORE_DISPATCH`` result.

Internal failure (a recorder that raises, a stage that raises where it should not):
nothing new starts, in-flight dispatches settle, and the first failure propagates
unwrapped. No result is fabricated for a call that did not commit.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from .._core._arguments import parse_arguments
from .._core._content import ToolCall, ToolExecutionResult
from .._core._groups import collapse, only_cancelled
from .._core._scope import check_agent
from .._core._signal import CancelSignal, fuse
from .._machine._intake import check_batch_id
from .._pipeline._registry import ToolRegistry, ToolScope
from .._pipeline._stages import check_trio as _check_trio
from .._pipeline._waterfalls import check_hook_abort_grace
from ._face import ToolBatch, drive, run_known
from ._recorder import ToolCallRecorder
from ._resume import PlannedRun, carry_out, read_plan

__all__ = ["ToolBatch", "open_tool_batch", "parse_arguments", "run_tool_calls"]


def _check_max_parallel(value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {value!r}")
    return value


def _check_grace(value: object) -> float | None:
    return None if value is None else check_hook_abort_grace(value)


def _check_batch(
    registry: ToolRegistry,
    signal: object,
    agent: ToolScope | None,
    max_parallel: object,
    batch_id: object,
) -> None:
    _check_trio()
    if type(max_parallel) is not int or max_parallel < 1:
        _check_max_parallel(max_parallel)
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    if agent is not None:
        check_agent(registry, agent)
    if batch_id is not None:
        check_batch_id(batch_id)


@asynccontextmanager
async def open_tool_batch(
    registry: ToolRegistry,
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
    hook_abort_grace: float | None = None,
    deps: Any = None,
) -> AsyncIterator[ToolBatch]:
    """Open a batch that runs calls as they are submitted, results in model order.

    Example::

        async with open_tool_batch(registry, max_parallel=4) as batch:
            async for call in calls_streaming_from_the_model():
                batch.submit(call)
            batch.close()
            async for call, result in batch:
                print(call.id, result.is_error)

    A submitted call starts as soon as its turn allows (the calls before it have
    started and, for an ``exclusive`` call, drained), while the model may still be
    streaming later calls. Leaving the block closes submission and waits until every
    submitted call has committed; nothing the batch started is running afterwards.
    If the block raises, the batch is aborted — started calls drain and commit, the
    rest get ``ABORTED_BEFORE_DISPATCH`` — and then the exception propagates as
    itself. A ``trio.Cancelled`` from an enclosing scope cancels everything at once.

    Args:
        registry: the registry whose pipeline every call passes.
        signal: aborts the batch when it fires.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once (a positive integer).
        recorder: receives ``tool_call``/``tool_result``/``context`` events.
        batch_id: the batch's id in the events and in each call's
            ``ctx.idempotency_key`` (a non-empty string; a resumed batch passes its
            old id). Default: 128 random bits, as 32 hex digits.
        hook_abort_grace: seconds a policy hook may still run after the batch's abort
            before it is cancelled (default: the registry's ``hook_abort_grace``).
        deps: the run's dependencies: every body reads them as ``ctx.deps``, and
            ``@tool`` parameters marked ``Depends(...)`` are resolved from them.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` is not a
            non-empty string, ``hook_abort_grace`` is negative or NaN, or ``agent``
            is a scope of another registry.
        TypeError: ``signal`` is not a :class:`CancelSignal`, or ``hook_abort_grace``
            is not a number.
        RuntimeError: called outside trio (from asyncio, use :mod:`toolnursery.aio`).
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_batch(registry, signal, agent, max_parallel, batch_id)
    grace = _check_grace(hook_abort_grace)
    # The calls run under a batch signal of our own, fused with the caller's: an
    # exception in the block aborts this batch without firing the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    own = fusion.signal if fusion is not None else CancelSignal()
    batch = ToolBatch(registry, own, agent, max_parallel, recorder, batch_id, grace, deps=deps)
    raised: BaseException | None = None
    try:
        async with trio.open_nursery() as batch_nursery:
            batch_nursery.start_soon(drive, batch)
            try:
                yield batch
            except BaseException as exc:
                if only_cancelled(exc) or isinstance(exc, GeneratorExit):
                    raise
                # Abort, and let the driver finish the batch (drain, commit, synthesize)
                # before the block's exception goes on.
                raised = exc
                own.cancel("the batch's block raised")
            batch.close()
    except BaseExceptionGroup as group:
        if raised is not None:
            raise raised  # noqa: B904 (the block's exception came first, as itself)
        raise collapse(group, drop_cancelled=True) from None
    finally:
        if fusion is not None:
            fusion.close()
    if raised is not None:
        raise raised


async def run_tool_calls(
    registry: ToolRegistry,
    calls: Iterable[ToolCall],
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
    resume_from: str | os.PathLike[str] | None = None,
    hook_abort_grace: float | None = None,
    deps: Any = None,
) -> list[ToolExecutionResult]:
    """Run one model response's tool calls; return one result per call, in model order.

    Consecutive calls whose tools classify them ``parallel`` overlap (at most
    ``max_parallel`` bodies at once); an ``exclusive`` call runs alone as a barrier.
    Pre-execute and post-execute run in model order; only dispatch overlaps. When the
    call returns, nothing it started is still running.

    The calls run under a batch signal fused with ``signal``: a body that cancels
    ``ctx.signal`` aborts this batch without firing the caller's signal.

    Args:
        registry: the registry whose pipeline every call passes.
        calls: the model's calls, in model order.
        signal: aborts the batch: nothing new starts, started calls drain and
            commit, unstarted calls get ``ABORTED_BEFORE_DISPATCH``.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once (a positive integer).
        recorder: receives ``tool_call``/``tool_result``/``context`` events.
        batch_id: the batch's id in the events and in each call's
            ``ctx.idempotency_key`` (a non-empty string; a resumed batch passes its
            old id). Default: 128 random bits, as 32 hex digits.
        resume_from: the log of a run of these same calls that a crash interrupted:
            committed calls return their recorded results without running, and a
            started, unfinished call of a tool that is not idempotent gets the
            ``INTERRUPTED`` result instead of running twice (see docs/durability.md);
            ``batch_id`` then names the batch to resume.
        hook_abort_grace: seconds a policy hook may still run after the batch's abort
            before it is cancelled (default: the registry's ``hook_abort_grace``).
        deps: the run's dependencies: every body reads them as ``ctx.deps``, and
            ``@tool`` parameters marked ``Depends(...)`` are resolved from them.

    Returns:
        One frozen result per call, in model order.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` is not a
            non-empty string, ``hook_abort_grace`` is negative or NaN, or ``agent`` is
            a scope of another registry; :class:`~toolnursery.ResumeError` /
            :class:`~toolnursery.LogFormatError` when ``resume_from`` cannot resume
            these calls.
        TypeError: ``signal`` is not a :class:`CancelSignal`, or ``hook_abort_grace``
            is not a number.
        RuntimeError: called outside trio (from asyncio, use :mod:`toolnursery.aio`).
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_batch(registry, signal, agent, max_parallel, batch_id)
    grace = None if hook_abort_grace is None else check_hook_abort_grace(hook_abort_grace)
    if resume_from is not None:
        return await _resume(
            registry,
            calls,
            resume_from,
            signal=signal,
            agent=agent,
            max_parallel=max_parallel,
            recorder=recorder,
            batch_id=batch_id,
            hook_abort_grace=grace,
            deps=deps,
        )
    # The same batch signal as open_tool_batch's: a body cancelling ``ctx.signal``
    # aborts this batch, not the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    try:
        # The whole batch is known: driven from this task (one task fewer).
        return await run_known(
            registry,
            fusion.signal if fusion is not None else CancelSignal(),
            agent,
            max_parallel,
            recorder,
            batch_id,
            grace,
            deps,
            calls,
        )
    except BaseExceptionGroup as group:
        raise collapse(group, drop_cancelled=True) from None
    finally:
        if fusion is not None:
            fusion.close()


async def _resume(
    registry: ToolRegistry,
    calls: Iterable[ToolCall],
    log: str | os.PathLike[str],
    *,
    signal: CancelSignal | None,
    agent: ToolScope | None,
    max_parallel: int,
    recorder: ToolCallRecorder | None,
    batch_id: str | None,
    hook_abort_grace: float | None = None,
    deps: Any = None,
) -> list[ToolExecutionResult]:
    """Resume a batch that a crash interrupted, from its log (``resume_from=log``).

    See :func:`~toolnursery.log.plan_resume` for what happens to each call. The calls that
    run form one batch under the resumed batch's id; ``recorder`` (usually a
    :class:`~toolnursery.log.JsonlRecorder` on ``log`` itself, so a second crash can be
    resumed too) receives what resuming does; results already in the log are not
    recorded again.

    Raises:
        ResumeError: ``batch_id`` is recorded with other calls.
        LogFormatError: ``log`` is not a toolnursery log.
        OSError: ``log`` exists but cannot be read.
    """
    calls = list(calls)
    plan = read_plan(registry, calls, log, agent=agent, batch_id=batch_id)

    def run(
        to_run: list[ToolCall], given: ToolCallRecorder | None, batch: str | None
    ) -> Awaitable[list[ToolExecutionResult]]:
        return run_tool_calls(
            registry,
            to_run,
            signal=signal,
            agent=agent,
            max_parallel=max_parallel,
            recorder=given,
            batch_id=batch,
            hook_abort_grace=hook_abort_grace,
            deps=deps,
        )

    return await carry_out(PlannedRun(plan), recorder, run)
