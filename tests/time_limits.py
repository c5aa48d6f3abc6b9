"""Time limits for every test, the docs' examples included (a plugin: see conftest.py).

A test that hangs fails with its name instead of stalling the run, in three steps:

1. A trio test's body runs in a cancel scope that a timer thread cancels after its
   limit in real time (the autojump clock's virtual hours do not count); the failure
   chains the hang's traceback. Property tests (hypothesis) get the limit per example.
2. SIGALRM (where there is one) bounds every test's setup, call and teardown: the limit
   of a sync test or a docs example, and the backstop of a trio test stuck where a
   cancel scope cannot reach it (code that never yields, a thread it waits for). A
   blocking system call is interrupted: Python runs the handler, which fails the test.
3. A watchdog ends the whole run when neither worked (a C call that holds the GIL or
   retries through signals, a masked SIGALRM): a thread writes the test's name and every
   thread's traceback to the real stderr and exits with status 1; should the GIL never
   come back, :func:`faulthandler.dump_traceback_later` does the same from C a little
   later. CI then ends, naming the test, instead of waiting for its own timeout.

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
def _alarm(seconds: float, what: str) -> Iterator[None]:
    """Fail the test (``pytest.fail``) if this block takes more than ``seconds``."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        pytest.fail(f"{what} took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _watchdog(item: pytest.Item, seconds: float, what: str) -> Iterator[None]:
    """End the run, naming ``item``, if this block is still running after ``seconds``."""
    fd = _stderr[-1] if _stderr else 2
    note = (
        f"\n{item.nodeid}: {what} still running after {seconds:g} s and could not be "
        "interrupted: ending the test run (exit status 1)\n"
    ).encode()

    def expire() -> None:
        os.write(fd, note)
        faulthandler.dump_traceback(fd, all_threads=True)
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    # The last resort runs in C, without the GIL, if the thread above cannot.
    faulthandler.dump_traceback_later(seconds + _later(seconds), exit=True, file=fd)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()


@contextlib.contextmanager
def _bounded(item: pytest.Item, seconds: float, what: str) -> Iterator[None]:
    with _watchdog(item, seconds + _later(seconds), what), _alarm(seconds, what):
        yield


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
