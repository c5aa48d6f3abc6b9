"""Time limits for every test, the docs' examples included (a plugin: see conftest.py).

A test that hangs fails with its name instead of stalling the run, in three steps:

1. A trio test's body runs in a cancel scope that a timer thread cancels after its
   limit in real time (the autojump clock's virtual hours do not count); the failure
   chains the hang's traceback. Property tests (hypothesis) get the limit per example.
2. SIGALRM (where there is one) bounds every test's setup, call and teardown: the limit
   of a sync test or a docs example, and the backstop of a trio test stuck where its
   cancel scope did not reach. A blocking system call is interrupted: Python runs the
   handler, which fails the test. Inside a trio run, where raising would tear trio's loop
   apart (unless the signal came in a task's own code), the handler cancels the whole
   run and the test fails once it has unwound.
3. A watchdog ends the whole run when neither worked (a trio run that does not unwind:
   a shielded wait, a thread it waits for; a C call that holds the GIL or retries
   through signals; a masked SIGALRM): it writes the test's name and every thread's
   traceback to the real stderr and exits with status 1 (a thread does it, or, should
   the GIL never come back, :func:`faulthandler.dump_traceback_later` from C a little
   later). CI then ends, naming the test, instead of waiting for its own timeout.

``@pytest.mark.time_limit(seconds)`` gives one test another limit. Each step after the
first waits as long again as the limit, up to :data:`BACKSTOP_S`.
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

TIME_LIMIT_S = float(os.environ.get("TOOLNURSERY_TEST_TIME_LIMIT", "120"))
"""Real seconds a test's call may take (``TOOLNURSERY_TEST_TIME_LIMIT`` sets another
default, e.g. for a slow machine)."""

FIXTURE_LIMIT_S = 300.0
"""Real seconds a test's setup or teardown may take (the first test of a module or a
session also starts its shared fixtures: a Ray cluster, a server)."""

BACKSTOP_S = 30.0
"""The most each later step waits after the one before it."""

_stderr: list[int] = []  # a copy of the real stderr: capture points fd 2 elsewhere


def pytest_configure(config: pytest.Config) -> None:
    # Capture is suspended while plugins configure: fd 2 is the terminal (or CI's log).
    _stderr.append(os.dup(2))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _stderr:
        os.close(_stderr.pop())


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


def _later(seconds: float) -> float:
    return min(seconds, BACKSTOP_S)


@contextlib.contextmanager
def _bounded(item: pytest.Item, seconds: float, what: str) -> Iterator[None]:
    """Fail ``item`` if this block takes more than ``seconds``; end the run if it cannot.

    Outside trio, or in a trio task's own code, SIGALRM's handler raises ``pytest.fail``
    where the test is. Where trio's loop was running (a sync test waiting in
    ``trio.run``, a trio test its cancel scope did not end), raising would tear the loop
    apart and leave its run state behind, failing every later test that runs trio; so
    the alarm cancels everything in the run, through the one trio call that is safe in a
    signal handler, and the test fails once the run has unwound. A run that has not
    unwound after as long again (a shielded wait, a thread) ends the test run, as the
    watchdog does.
    """
    later = _later(seconds)
    message = f"{what} took longer than {seconds:g} s"

    def end_run(after: float, why: str) -> None:
        fd = _stderr[-1] if _stderr else 2
        os.write(
            fd,
            f"\n{item.nodeid}: {what} still running after {after:g} s{why}: "
            "ending the test run (exit status 1)\n".encode(),
        )
        faulthandler.dump_traceback(fd, all_threads=True)
        os._exit(1)

    deadline = seconds + 2 * later
    timer = threading.Timer(deadline, end_run, (deadline, " and could not be interrupted"))
    timer.daemon = True
    timer.start()
    # The last resort runs in C, without the GIL, should the thread above not get it.
    fd = _stderr[-1] if _stderr else 2
    faulthandler.dump_traceback_later(deadline + later, exit=True, file=fd)
    try:
        if not hasattr(signal, "SIGALRM"):
            yield
            return
        cancelled = False

        def expire(signum: int, frame: object) -> None:
            nonlocal cancelled
            if not trio.lowlevel.in_trio_run() or _in_task_code():
                pytest.fail(message)  # raised in the test's code, it unwinds as any error
            if cancelled:
                end_run(seconds + later, " and did not unwind when its trio run was cancelled")
            cancelled = True
            trio.lowlevel.current_trio_token().run_sync_soon(_cancel_everything)
            signal.setitimer(signal.ITIMER_REAL, later)

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        except BaseException as exc:
            if cancelled and not isinstance(exc, pytest.fail.Exception):
                raise pytest.fail.Exception(f"{message}: cancelled") from exc
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if cancelled:  # the code under test absorbed the cancellation and returned
            pytest.fail(f"{message}: cancelled")
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()


def _in_task_code() -> bool:
    """Whether the signal interrupted a trio task's own code (one that never yields, say)
    rather than trio's loop or code trio protects from ``KeyboardInterrupt``."""
    return trio.lowlevel.in_trio_task() and not trio.lowlevel.currently_ki_protected()


def _cancel_everything() -> None:
    """Cancel every task of the current trio run (the system nursery holds the main task)."""
    for nursery in trio.lowlevel.current_root_task().child_nurseries:
        nursery.cancel_scope.cancel()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _bounded(item, FIXTURE_LIMIT_S, "the test's setup"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with _bounded(item, FIXTURE_LIMIT_S, "the test's teardown"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Bound the test's call (this wrapper runs before pytest-trio's, which it feeds)."""
    marker = item.get_closest_marker("time_limit")
    seconds = TIME_LIMIT_S if marker is None else float(marker.args[0])
    alarm = seconds
    if isinstance(item, pytest.Function) and item.get_closest_marker("trio") is not None:
        alarm += _later(seconds)
        hypothesis = getattr(item.obj, "hypothesis", None)
        if hypothesis is not None:  # bound each example (once: parametrized items share it)
            inner = hypothesis.inner_test
            if inspect.iscoroutinefunction(inner) and not getattr(inner, "time_limited", False):
                hypothesis.inner_test = _time_limited(inner, seconds)
        elif inspect.iscoroutinefunction(item.obj):
            item.obj = _time_limited(item.obj, seconds)
    with _bounded(item, alarm, "the test"):
        return (yield)
