"""Serving a registry on asyncio: what ``mcp_server`` runs when its host is an asyncio
server (uvicorn, hypercorn's asyncio worker, the SDK's client under asyncio).

The same contract as on trio (:mod:`._serve`): when MCP cancels the request
(``notifications/cancelled``, or the transport closes), the call ends ``ABORTED``
through the pipeline like any other cancellation (post-execute and the observers see
it), and the cancellation goes on only once the body has unwound. On trio that takes a
task in the server's nursery and the call's own signal; on asyncio it is what
``toolnursery.aio``'s ``execute`` does for the task that awaits it, so the call runs in
the request's own task: natively on the loop when the tool and the hooks allow (an
``asyncio_tool`` body, a ``def`` body in a worker thread), in the trio guest run
otherwise. Reports go out in order through a task started on the first; a call that
reports nothing costs none.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Container
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus

from .._aio._api import execute
from .._core._asking import asking
from .._core._progress import CallReport, install_sink, remove_sink
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from ._asking import CallQuestions, ask_the_client
from ._served import Served, call_input, log_levels, reply, send_report

__all__ = ["AsyncioServed", "serving_on_asyncio"]


class AsyncioServed(Served):
    """One run of a server on asyncio: announces the registry's changes, runs calls."""

    def __init__(self, bus: InMemorySubscriptionBus) -> None:
        super().__init__(bus)
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._changed = asyncio.Event()

    def changed(self) -> None:
        # A registry may change from a worker thread (a sync tool body registering).
        if threading.get_ident() == self._thread:
            self._changed.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                self._loop.call_soon_threadsafe(self._changed.set)

    async def announce_changes(self) -> None:
        # Changes coalesce: one announcement covers every change made before it.
        while True:
            await self._changed.wait()
            self._changed.clear()
            await self.announce()

    async def call(
        self,
        registry: ToolRegistry,
        scope: ToolScope | None,
        deps: Any,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
    ) -> dict[str, Any] | types.InputRequiredResult:
        """Run one ``tools/call`` (see the module docstring)."""
        execution = call_input(ctx, params, scope, CancelSignal())
        questions = CallQuestions(ctx, params, self.secret)
        forwarder = _Forwarder(ctx, self._loop, self._thread)
        installed = questions.install()
        sink = install_sink(forwarder.sink)
        try:
            with asking(questions):
                try:
                    result = await execute(registry, execution, deps=deps)
                finally:
                    forwarder.close()
            await forwarder.finished()
        except asyncio.CancelledError:
            forwarder.abandon()
            await forwarder.finished_anyway()
            raise
        finally:
            remove_sink(sink)
            questions.uninstall(installed)
        return reply(questions, result)


async def _wait_out(task: asyncio.Future[Any]) -> bool:
    """Wait until ``task`` is done, whatever cancellations arrive meanwhile; whether
    one did (the caller delivers it)."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


class _Forwarder:
    """A call's reports, sent to the client in order by a task started on the first.

    The sink is synchronous (bodies report without awaiting); a report made in a
    worker thread (a ``def`` body) hops to the loop's thread first, in order: it is
    queued on the loop before the body's return is.
    """

    def __init__(
        self, ctx: ServerRequestContext[Any], loop: asyncio.AbstractEventLoop, thread: int
    ) -> None:
        self._ctx = ctx
        self._loop = loop
        self._thread = thread
        self._queue: asyncio.Queue[CallReport | None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def sink(self, report: CallReport) -> None:
        if threading.get_ident() == self._thread:
            self._put(report)
        else:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                self._loop.call_soon_threadsafe(self._put, report)

    def _put(self, report: CallReport) -> None:
        if self._closed:
            return  # the call has ended (or was abandoned): nobody to tell
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = self._loop.create_task(self._forward(self._queue, log_levels(self._ctx)))
        self._queue.put_nowait(report)

    def close(self) -> None:
        """No more reports: the task ends once it has sent those made."""
        if not self._closed:
            self._closed = True
            if self._queue is not None:
                self._queue.put_nowait(None)

    def abandon(self) -> None:
        """Stop sending (the request was cancelled): the task ends at once."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()

    async def finished(self) -> None:
        """Wait until every report made has been sent (or dropped)."""
        if self._task is not None:
            await asyncio.wait((self._task,))

    async def finished_anyway(self) -> None:
        """:meth:`finished`, whatever cancellations arrive meanwhile (the caller is
        delivering one)."""
        if self._task is not None:
            await _wait_out(self._task)

    async def _forward(
        self, queue: asyncio.Queue[CallReport | None], allowed: Callable[[], Container[str]]
    ) -> None:
        while (report := await queue.get()) is not None:
            await send_report(self._ctx, report, allowed)


@asynccontextmanager
async def serving_on_asyncio(
    registry: ToolRegistry, bus: InMemorySubscriptionBus
) -> AsyncIterator[AsyncioServed]:
    """The server's lifespan on asyncio: listens for the registry's changes (and puts
    an ``Ask`` to the client) while it runs, and forgets it all when it ends."""
    served = AsyncioServed(bus)
    announcer = asyncio.get_running_loop().create_task(served.announce_changes())
    disposers = [registry.on_change(served.changed)]
    if registry.approval is None:
        disposers.append(ask_the_client(registry))
    try:
        yield served
    finally:
        for dispose in disposers:
            dispose()
        announcer.cancel()
        if await _wait_out(announcer):
            raise asyncio.CancelledError
