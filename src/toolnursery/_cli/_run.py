"""``toolnursery run``: a batch of tool calls, its results written as they commit.

One JSON line per call in model order (or a card with ``--show``, or the provider's
answering messages with ``--format``); ``--resume`` replays what ``--log`` recorded;
the first Ctrl-C cancels the batch and every result is still written.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from typing import Final

import msgspec
import trio

from .._batch._recorder import ToolCallRecorder
from .._batch._resume import PlannedRun, ResumePlan, read_plan
from .._batch._scheduler import open_tool_batch
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    LogFormatError,
    ResumeError,
    ToolNotFoundError,
)
from .._core._groups import collapse
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry
from ._cards import card_width, render_card, rich_missing, wants_color
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    load_registry,
    open_log,
    read_calls,
    require_rich,
    sandbox_registry,
    say,
)
from ._input import provider_messages
from ._progress import LiveView, ProgressLine

_Status = ProgressLine | LiveView

__all__ = ["run_command"]


class _Line(msgspec.Struct, frozen=True):
    id: str
    name: str
    result: ToolExecutionResult


_encode_json = msgspec.json.Encoder().encode
_C1: Final = re.compile(b"\xc2[\x7f-\x9f]|\x7f")


def _encode_line(value: object) -> bytes:
    """``value`` as one JSON line: JSON escapes C0 controls; DEL and the C1 controls
    are escaped too (``\\u009b``), so no control character reaches a terminal raw."""
    return _C1.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), _encode_json(value))


def run_command(options: argparse.Namespace) -> int:
    """Run ``toolnursery run`` with parsed ``options``.

    Returns:
        The exit code: 0 ran, 1 the batch failed, 130 Ctrl-C cancelled it.

    Raises:
        UsageError: the options or the calls are unusable; nothing ran.
    """
    if options.tools is not None and options.root is not None:
        raise UsageError("--root applies to the bundled example tools, not to --tools")
    if options.show:
        require_rich("--show")
        if options.format != "toolnursery":
            raise UsageError("--show and --format are alternatives: choose one")
    elif options.width is not None:
        raise UsageError("--width applies to --show")
    calls = read_calls(options.calls)
    registry = load_registry(options.tools) if options.tools is not None else None
    if not calls:
        say("no tool calls in the input; nothing to run")
        return EXIT_OK
    if options.resume and options.log is None:
        raise UsageError("--resume needs --log: the log of the batch to resume")
    with ExitStack() as stack:
        if registry is None:
            registry = sandbox_registry(options.root, stack)
        planned = _resume_plan(registry, calls, options.log) if options.resume else None
        recorder = open_log(options.log, stack)
        to_run = calls if planned is None else planned.calls
        progress = _status(options, len(to_run), recorder)
        write = _writer(
            progress,
            _card_writer(registry, options) if options.show else None,
            quiet=options.format != "toolnursery",
        )
        try:
            sink: ToolCallRecorder | None = progress if progress is not None else recorder
            if planned is not None:  # events of the calls that run keep their indices
                sink = planned.recorder(sink)
            interrupted, results = trio.run(
                _run_batch,
                registry,
                to_run,
                options.max_parallel,
                sink,
                write,
                partial(_interrupted, progress),
                planned,
                progress.tick if isinstance(progress, LiveView) else None,
            )
        except BrokenPipeError:
            raise
        except Exception as exc:
            if progress is not None:
                progress.clear()
            say(f"error: the batch failed: {type(exc).__name__}: {exc}")
            return EXIT_FAILED
        if progress is not None:
            progress.finish()
        _say_unknown_tools(registry, calls[: len(results)], results)
        if options.format != "toolnursery":
            for message in provider_messages(options.format, calls[: len(results)], results):
                sys.stdout.write(_encode_line(message).decode() + "\n")
            sys.stdout.flush()
        if interrupted:
            aborted = sum(
                1
                for r in results
                if r.error is not None
                and r.error.code in (TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH)
            )
            say(f"interrupted: the batch was cancelled ({aborted} of {len(results)} aborted)")
            return EXIT_INTERRUPTED
        return EXIT_OK


def _say_unknown_tools(
    registry: ToolRegistry, calls: list[ToolCall], results: list[ToolExecutionResult]
) -> None:
    """A line on stderr for each tool name the batch did not know (the results keep
    their pinned text): the closest name the registry has, else the names it has."""
    said: set[str] = set()
    for call, result in zip(calls, results, strict=True):
        if result.error is None or result.error.code != ToolNotFoundError.code or call.name in said:
            continue
        said.add(call.name)
        try:
            registry.require(call.name)
        except ToolNotFoundError as exc:
            say(f'call "{call.id}": {exc} ({_what_was_meant(exc)})')


def _what_was_meant(exc: ToolNotFoundError) -> str:
    if exc.suggestion is not None:
        return f'did you mean "{exc.suggestion}"?'
    if not exc.known:
        return "the registry has no tools"
    return "the tools: " + ", ".join(f'"{name}"' for name in exc.known)


def _resume_plan(registry: ToolRegistry, calls: list[ToolCall], log: str) -> PlannedRun:
    try:
        plan = read_plan(registry, calls, log)
    except (LogFormatError, ResumeError) as exc:
        raise UsageError(f"cannot resume from --log: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"cannot read --log {log!r}: {exc.strerror or exc}") from exc
    if plan.batch_id is None:
        say(f"--resume: no batch in {log} has these calls; running all {len(calls)}")
    else:
        say(f"--resume: batch {plan.batch_id}: {_resume_counts(plan)}")
    return PlannedRun(plan)


def _resume_counts(plan: ResumePlan) -> str:
    """What resuming does, counted: the calls by action (rejected: a rejection the log
    records, with no result, kept), then the approval answers the log records."""
    counts = (
        f"{plan.count('replay')} recorded, {plan.count('run')} to run, "
        f"{plan.count('interrupted')} interrupted, {plan.count('rejected')} rejected"
    )
    duplicate = plan.count("duplicate")
    if duplicate:
        counts += f", {duplicate} duplicate"
    answers = [entry.approval for entry in plan.calls if entry.approval is not None]
    if answers:
        allowed = answers.count("allowed-once")
        counts += (
            f"; the log answers {len(answers)} approval{'s' if len(answers) > 1 else ''} "
            f"({allowed} allowed-once, {len(answers) - allowed} rejected): not asked again"
        )
    return counts


def _status(
    options: argparse.Namespace, total: int, recorder: ToolCallRecorder | None
) -> _Status | None:
    """The live view on a terminal with rich; else the one-line status, when wanted."""
    if not _wants_progress(options):
        return None
    isatty = getattr(sys.stderr, "isatty", None)
    if isatty is not None and isatty() and not rich_missing():
        return LiveView(sys.stderr, total, recorder)
    return ProgressLine(sys.stderr, total, recorder)


def _wants_progress(options: argparse.Namespace) -> bool:
    if options.progress == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty is not None and isatty())
    return bool(options.progress == "always")


def _interrupted(progress: _Status | None) -> None:
    if progress is not None:
        progress.clear()
    say("Ctrl-C: cancelling the batch (press again to stop at once)")
    if progress is not None:
        progress.draw()


def _writer(
    progress: _Status | None,
    show: Callable[[ToolCall, ToolExecutionResult], str] | None = None,
    *,
    quiet: bool = False,
) -> Callable[[ToolCall, ToolExecutionResult], None]:
    def write(call: ToolCall, result: ToolExecutionResult) -> None:
        if quiet:
            return  # the messages are written when the batch is done
        if show is not None:
            line = show(call, result)
        else:
            line = _encode_line(_Line(call.id, call.name, result)).decode() + "\n"
        if progress is not None:
            progress.clear()
        sys.stdout.write(line)
        sys.stdout.flush()
        if progress is not None:
            progress.draw()

    return write


def _card_writer(
    registry: ToolRegistry, options: argparse.Namespace
) -> Callable[[ToolCall, ToolExecutionResult], str]:
    width = card_width(options.width)
    color = wants_color()

    def show(call: ToolCall, result: ToolExecutionResult) -> str:
        return render_card(registry, call, result, width=width, color=color)

    return show


async def _run_batch(
    registry: ToolRegistry,
    calls: list[ToolCall],
    max_parallel: int,
    recorder: ToolCallRecorder | None,
    write: Callable[[ToolCall, ToolExecutionResult], None],
    on_interrupt: Callable[[], None],
    planned: PlannedRun | None = None,
    tick: Callable[[], None] | None = None,
) -> tuple[bool, list[ToolExecutionResult]]:
    """Run the batch, writing each result as it commits; Ctrl-C cancels it.

    With ``planned`` (``--resume``), ``calls`` are the calls that run; every call's
    result is still written, in model order. ``tick`` (the live view's) is called a
    few times a second while the batch runs.

    Returns:
        Whether Ctrl-C cancelled the batch, and the results in model order.
    """
    cancel = CancelSignal()
    results: list[ToolExecutionResult] = []
    try:
        async with trio.open_nursery() as nursery:
            if _listens_for_ctrl_c():
                await nursery.start(_cancel_on_sigint, cancel, on_interrupt)
            if tick is not None:
                nursery.start_soon(_ticking, tick)
            async with open_tool_batch(
                registry,
                signal=cancel,
                max_parallel=max_parallel,
                recorder=recorder,
                batch_id=None if planned is None else planned.plan.batch_id,
            ) as batch:
                for call in calls:
                    batch.submit(call)
                batch.close()
                async for call, result in batch:
                    results.append(result)
                    if planned is None:
                        write(call, result)
                    else:
                        for shown in planned.ordered(len(results), result):
                            write(*shown)
            nursery.cancel_scope.cancel()
        if planned is not None:
            planned.finish()
            for shown in planned.ordered(len(results), None):
                write(*shown)
            results = planned.merge(results)
    except BaseExceptionGroup as group:
        # The signal task is ours, not the caller's: report the failure itself.
        raise collapse(group) from None
    return cancel.cancelled, results


async def _ticking(tick: Callable[[], None]) -> None:
    """Redraw the live view (its elapsed times) until the batch's nursery ends."""
    while True:
        await trio.sleep(0.25)
        tick()


def _listens_for_ctrl_c() -> bool:
    """Whether Ctrl-C should cancel the batch: in the main thread, unless SIGINT is
    ignored (a script's background job, ``nohup``), which the batch leaves as it is."""
    if threading.current_thread() is not threading.main_thread():
        return False
    return signal.getsignal(signal.SIGINT) != signal.SIG_IGN


async def _cancel_on_sigint(
    cancel: CancelSignal,
    on_interrupt: Callable[[], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Turn the first Ctrl-C into the batch's cancellation.

    The receiver is closed right after, which restores trio's own handling: a second
    Ctrl-C raises ``KeyboardInterrupt`` instead of waiting for the batch to drain.
    """
    with trio.open_signal_receiver(signal.SIGINT) as received:
        task_status.started()
        async for _ in received:
            cancel.cancel("interrupted (SIGINT)")
            on_interrupt()
            return
