"""Time limits for every test, the docs' examples included, on top of ``pytest-timeout``.

pytest-timeout owns the limits: the default (``timeout`` in pyproject.toml, ``--timeout``,
``PYTEST_TIMEOUT``), one test's own (``@pytest.mark.timeout(seconds)``), the clock that
covers a test's setup, call and teardown, and the debugger detection. This plugin is the
*timer* pytest-timeout calls (its ``pytest_timeout_set_timer`` hook), because its own
SIGALRM timer raises inside whatever runs, and raised inside trio's loop that aborts the
run (an INTERNALERROR that ends the whole session). What no plugin does, kept here:

1. A trio test's body runs in a cancel scope that a timer thread cancels after its limit
   in real time (the autojump clock's virtual hours do not count), so a hang unwinds as a
   cancellation and the failure chains the hang's traceback. Property tests (hypothesis)
   get the limit per example.
2. SIGALRM bounds the whole test (the backstop of a trio test, a little later). Outside a
   trio run, or in a trio task's own code, its handler fails the test where it is; where
   trio's loop was running it cancels the whole run instead, and the test fails once the
   run has unwound.
3. A watchdog ends the run when neither worked (a trio run that does not unwind: a
   shielded wait, a thread it waits for; a C call that holds the GIL or retries through
   signals; a masked SIGALRM): it writes the test's name and every thread's traceback to
   the real stderr and exits with status 1 (a thread does it, or, should the GIL never
   come back, :func:`faulthandler.dump_traceback_later` from C a little later). Under
   pytest-xdist only that worker ends: xdist reports the test that crashed it and starts
   another worker.

Each step after the first waits as long again as the limit, up to :data:`BACKSTOP_S`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import inspect
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio
from pytest_timeout import is_debugging

BACKSTOP_S = 30.0
"""The most each later step waits after the one before it."""

_stderr: list[int] = []  # a copy of the real stderr: capture points fd 2 elsewhere
_limits = pytest.StashKey[float]()  # the limit pytest-timeout gave an item
_alarms = pytest.StashKey["_Alarm"]()  # the alarm of the item running


def pytest_configure(config: pytest.Config) -> None:
    # Capture is suspended while plugins configure: fd 2 is the terminal (or CI's log).
    _stderr.append(os.dup(2))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _stderr:
        os.close(_stderr.pop())


def _later(seconds: float) -> float:
    return min(seconds, BACKSTOP_S)


def _is_trio_test(item: pytest.Item) -> bool:
    return isinstance(item, pytest.Function) and item.get_closest_marker("trio") is not None


class _Alarm:
    """An item's alarm: SIGALRM and the watchdog, from pytest-timeout's start to its stop."""

    def __init__(self, item: pytest.Item, seconds: float, debugger_allowed: bool) -> None:
        self.item = item
        self.seconds = seconds
        self.later = _later(seconds)
        self.message = f"the test took longer than {seconds:g} s"
        self.debugger_allowed = debugger_allowed
        self.cancelled = False  # the alarm cancelled a trio run
        self.fd = _stderr[-1] if _stderr else 2
        deadline = seconds + 2 * self.later
        self.watchdog = threading.Timer(
            deadline, self.end_run, (deadline, " and could not be interrupted")
        )
        self.watchdog.daemon = True
        self.has_alarm = hasattr(signal, "SIGALRM")
        self.previous: Any = None

    def start(self) -> None:
        self.watchdog.start()
        # The last resort runs in C, without the GIL, should the thread not get it.
        faulthandler.dump_traceback_later(self.seconds + 3 * self.later, exit=True, file=self.fd)
        if self.has_alarm:
            self.previous = signal.signal(signal.SIGALRM, self.expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self) -> None:
        if self.has_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        faulthandler.cancel_dump_traceback_later()
        self.watchdog.cancel()

    def end_run(self, after: float, why: str) -> None:
        os.write(
            self.fd,
            f"\n{self.item.nodeid}: the test still running after {after:g} s{why}: "
            "ending the test run (exit status 1)\n".encode(),
        )
        faulthandler.dump_traceback(self.fd, all_threads=True)
        os._exit(1)

    def expire(self, signum: int, frame: object) -> None:
        """Fail the test where it is, or cancel its trio run where raising would break it.

        Outside trio, or in a trio task's own code, ``pytest.fail`` unwinds as any error.
        Where trio's loop was running (a sync test waiting in ``trio.run``, a trio test
        its cancel scope did not end), raising would tear the loop apart; so the alarm
        cancels everything in the run, through the one trio call that is safe in a signal
        handler, and the test fails once the run has unwound. A run that has not unwound
        after as long again (a shielded wait, a thread) ends the test run.
        """
        if not self.debugger_allowed and is_debugging():
            return
        if not trio.lowlevel.in_trio_run() or _in_task_code():
            pytest.fail(self.message)
        if self.cancelled:
            self.end_run(
                self.seconds + self.later, " and did not unwind when its trio run was cancelled"
            )
        self.cancelled = True
        trio.lowlevel.current_trio_token().run_sync_soon(_cancel_everything)
        signal.setitimer(signal.ITIMER_REAL, self.later)


def _in_task_code() -> bool:
    """Whether the signal interrupted a trio task's own code (one that never yields, say)
    rather than trio's loop or code trio protects from ``KeyboardInterrupt``."""
    return trio.lowlevel.in_trio_task() and not trio.lowlevel.currently_ki_protected()


def _cancel_everything() -> None:
    """Cancel every task of the current trio run (the system nursery holds the main task)."""
    for nursery in trio.lowlevel.current_root_task().child_nurseries:
        nursery.cancel_scope.cancel()


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool:
    """Start the alarm and the watchdog for ``item`` (pytest-timeout's timer hook)."""
    seconds = float(settings.timeout)
    item.stash[_limits] = seconds
    alarm = seconds + _later(seconds) if _is_trio_test(item) else seconds
    item.stash[_alarms] = _Alarm(item, alarm, settings.disable_debugger_detection)
    item.stash[_alarms].start()
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> bool:
    alarm = item.stash.get(_alarms, None)
    if alarm is not None:
        del item.stash[_alarms]
        alarm.stop()
    return True


def _phase(item: pytest.Item) -> Iterator[None]:
    """A phase (setup, call, teardown) that ran while the alarm cancelled its trio run
    fails as a timeout, even when the code under test absorbed the cancellation."""
    try:
        result = yield
    except BaseException as exc:
        _fail_if_cancelled(item, exc)
        raise
    _fail_if_cancelled(item, None)
    return result


def _fail_if_cancelled(item: pytest.Item, exc: BaseException | None) -> None:
    alarm = item.stash.get(_alarms, None)
    if alarm is None or not alarm.cancelled:
        return
    alarm.cancelled = False  # reported once; the watchdog still bounds what follows
    if hasattr(signal, "SIGALRM"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    if not isinstance(exc, pytest.fail.Exception):
        raise pytest.fail.Exception(f"{alarm.message}: cancelled") from exc


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Bound a trio test's body (this wrapper runs before pytest-trio's, which it feeds)."""
    seconds = item.stash.get(_limits, None)
    if seconds is not None and _is_trio_test(item):
        assert isinstance(item, pytest.Function)
        hypothesis = getattr(item.obj, "hypothesis", None)
        if hypothesis is not None:  # bound each example (once: parametrized items share it)
            inner = hypothesis.inner_test
            if inspect.iscoroutinefunction(inner) and not getattr(inner, "time_limited", False):
                hypothesis.inner_test = _time_limited(inner, seconds)
        elif inspect.iscoroutinefunction(item.obj):
            item.obj = _time_limited(item.obj, seconds)
    return (yield from _phase(item))


def _time_limited(test: Callable[..., Awaitable[Any]], seconds: float) -> Callable[..., Any]:
    """``test`` in a cancel scope cancelled after ``seconds`` of real time."""

    @functools.wraps(test)
    async def time_limited(**kwargs: Any) -> Any:
        token = trio.lowlevel.current_trio_token()
        scope = trio.CancelScope()

        def expire() -> None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(scope.cancel, trio_token=token)

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        where: BaseException | None = None  # the cancellation, raised where the test hung
        try:
            with scope:
                try:
                    return await test(**kwargs)
                except BaseException as exc:
                    where = exc
                    raise
        finally:
            timer.cancel()
        message = f"the test took longer than {seconds:g} s (real time)"
        raise pytest.fail.Exception(message) from where

    time_limited.time_limited = True  # type: ignore[attr-defined]
    return time_limited
