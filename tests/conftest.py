"""Fixtures shared by the test modules (helpers live in ``support``), and time limits."""

from __future__ import annotations

import contextlib
import functools
import inspect
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from toolnursery.examples import fill_sandbox


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory filled with the bundled example project, for the example tools."""
    sandbox = tmp_path / "root"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    return sandbox


# -- time limits ----------------------------------------------------------------------
#
# A test that hangs fails with its name instead of stalling the run. A trio test's body
# runs in a cancel scope that a timer thread cancels after TIME_LIMIT_S seconds of real
# time (the autojump clock's virtual hours do not count); the failure chains the hang's
# traceback. Every test's call is also bounded by SIGALRM (where there is one): the
# limit of a sync test, and the backstop of a trio test stuck where a cancel scope cannot
# reach it (code that never yields, a fixture). ``@pytest.mark.time_limit(seconds)``
# gives one test another limit.

TIME_LIMIT_S = 120.0
"""Real seconds a test's call may take."""

BACKSTOP_S = 30.0
"""How much later SIGALRM ends a trio test that its cancel scope did not."""


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Bound the test's call (this wrapper runs before pytest-trio's, which it feeds)."""
    marker = item.get_closest_marker("time_limit")
    seconds = TIME_LIMIT_S if marker is None else float(marker.args[0])
    alarm = seconds
    if isinstance(item, pytest.Function) and item.get_closest_marker("trio") is not None:
        alarm += BACKSTOP_S
        hypothesis = getattr(item.obj, "hypothesis", None)
        if hypothesis is not None:  # bound each example (once: parametrized items share it)
            inner = hypothesis.inner_test
            if inspect.iscoroutinefunction(inner) and not getattr(inner, "time_limited", False):
                hypothesis.inner_test = _time_limited(inner, seconds)
        elif inspect.iscoroutinefunction(item.obj):
            item.obj = _time_limited(item.obj, seconds)
    if not hasattr(signal, "SIGALRM"):
        return (yield)

    def expire(signum: int, frame: object) -> None:
        pytest.fail(f"the test took longer than {alarm:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, alarm)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
