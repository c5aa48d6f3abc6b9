"""Fleet limits: a concurrency limit held by a named, detached Ray actor.

Every agent process that places a tool with ``fleet_limit=n`` asks the same actor
(named after the limit's key, in the ``toolnursery`` namespace) for a permit before
the body is submitted and gives it back when the call settles. Each permit belongs
to a holder id minted per call, so every release is exact and idempotent: a call
cancelled while it waits (or after the actor granted the permit but before the
agent heard) sends ``release(holder)``, which either frees the permit or withdraws
the pending request, in whichever order the two reach the actor.

A permit held by an agent process that dies is reclaimed when its Ray job is
reported dead (the actor checks, at most every ``_RECLAIM_S`` seconds, while
someone waits).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Final, NamedTuple

import ray
import ray.exceptions as rex
import trio

from .._core._errors import REMOTE_UNAVAILABLE, RemoteToolError
from ._wait import watch

__all__ = ["FleetLimit", "FleetUsage", "fleet_usage", "release"]

NAMESPACE: Final = "toolnursery"
_RECLAIM_S: Final = 1.0
_RELEASE_WAIT_S: Final = 10.0


class FleetUsage(NamedTuple):
    """The usage of one fleet limit, as its actor reports it.

    Attributes:
        limit: the limit the actor holds.
        held: permits held now.
        waiting: requests waiting now.
        peak: the most permits ever held at once.
    """

    limit: int
    held: int
    waiting: int
    peak: int


class _FleetSemaphore:
    """The actor: permits by holder id, FIFO-fair enough through one condition."""

    def __init__(self) -> None:
        self._limit: int | None = None
        self._holders: dict[str, str] = {}  # holder -> job id
        self._withdrawn: set[str] = set()
        self._waiting = 0
        self._peak = 0
        self._cond = asyncio.Condition()
        self._checked = 0.0

    async def acquire(self, holder: str, limit: int, job: str) -> tuple[str, int]:
        async with self._cond:
            if self._limit is None:
                self._limit = limit
            if limit != self._limit:
                return ("mismatch", self._limit)
            self._waiting += 1
            try:
                while len(self._holders) >= self._limit and holder not in self._withdrawn:
                    try:
                        await asyncio.wait_for(self._cond.wait(), _RECLAIM_S)
                    except TimeoutError:
                        self._reclaim()
            finally:
                self._waiting -= 1
            if holder in self._withdrawn:
                self._withdrawn.discard(holder)
                return ("withdrawn", self._limit)
            self._holders[holder] = job
            self._peak = max(self._peak, len(self._holders))
            return ("granted", self._limit)

    async def release(self, holder: str) -> None:
        async with self._cond:
            if self._holders.pop(holder, None) is None:
                # Not granted (yet): withdraw the request, whenever it arrives.
                self._withdrawn.add(holder)
            self._cond.notify_all()

    async def usage(self) -> tuple[int, int, int, int]:
        return (self._limit or 0, len(self._holders), self._waiting, self._peak)

    def _reclaim(self) -> None:
        now = time.monotonic()
        if now - self._checked < _RECLAIM_S or not self._holders:
            return
        self._checked = now
        try:
            # Ray's job table through its state accessor (no public equivalent that
            # works without the dashboard); if it fails, nothing is reclaimed.
            dead = {
                job["JobID"]
                for job in ray._private.state.jobs()  # type: ignore[no-untyped-call]
                if job.get("IsDead")
            }
        except Exception:
            return
        for holder, job in list(self._holders.items()):
            if job in dead:
                del self._holders[holder]
        self._cond.notify_all()


_actor_class: Any = None


def _semaphore_class() -> Any:
    global _actor_class
    if _actor_class is None:
        _actor_class = ray.remote(_FleetSemaphore)
    return _actor_class


class FleetLimit:
    """The agent side of one fleet limit: get the actor once, acquire and release."""

    def __init__(self, key: str, limit: int) -> None:
        self.key = key
        self.limit = limit
        self.actor_name = f"fleet:{key}"
        self._handle: Any = None
        self._job: str | None = None

    def _lookup(self) -> Any:
        return (
            _semaphore_class()
            .options(
                name=self.actor_name,
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
                num_cpus=0,
                max_concurrency=10_000,
                max_restarts=0,
            )
            .remote()
        )

    async def handle(self) -> Any:
        """The actor's handle, looked up (in a thread: a blocking Ray call) once per job."""
        job = ray.get_runtime_context().get_job_id()
        if self._handle is None or self._job != job:
            handle = await trio.to_thread.run_sync(self._lookup)
            self._handle, self._job = handle, job
        return self._handle

    async def acquire(self, tool_name: str) -> tuple[Any, str]:
        """Wait for a permit; returns ``(actor, holder)`` to release.

        Cancellable: a ``Cancelled`` (or any failure) while waiting sends the release
        that withdraws the request, so no permit is left behind.

        Raises:
            RemoteToolError: ``REMOTE_UNAVAILABLE``: the limit's actor cannot be
                reached, or it holds a different limit for this key.
        """
        try:
            actor = await self.handle()
        except rex.RayError as exc:
            raise self._unavailable(tool_name, exc) from exc
        job = ray.get_runtime_context().get_job_id()
        holder = f"{job}:{uuid.uuid4().hex}"
        ref = actor.acquire.remote(holder, self.limit, job)
        future, done = watch(ref)
        settled = False
        try:
            await done.wait()
            try:
                status, limit = future.result()
            except rex.RayError as exc:
                self._handle = None  # the actor is gone (killed to reset the key?)
                raise self._unavailable(tool_name, exc) from exc
            settled = True
        finally:
            if not settled:
                await release(actor, holder)
        if status != "granted":
            raise RemoteToolError(
                f'tool "{tool_name}": fleet limit "{self.key}" is held at {limit} by the '
                f"cluster, this agent declares {self.limit}",
                code=REMOTE_UNAVAILABLE,
            )
        return actor, holder

    def _unavailable(self, tool_name: str, exc: Exception) -> RemoteToolError:
        return RemoteToolError(
            f'tool "{tool_name}": fleet limit "{self.key}" is unavailable '
            f"({type(exc).__name__}: {exc})",
            code=REMOTE_UNAVAILABLE,
        )


async def release(actor: Any, holder: str) -> None:
    """Give ``holder``'s permit back (or withdraw its request) and wait until the actor
    has it, so the permit is free when the call ends; shielded, bounded."""
    _, done = watch(actor.release.remote(holder))
    with trio.CancelScope(shield=True), trio.move_on_after(_RELEASE_WAIT_S):
        await done.wait()


async def fleet_usage(key: str) -> FleetUsage:
    """The usage of the fleet limit named ``key`` on the connected cluster.

    Raises:
        ValueError: no agent has used a fleet limit of that key on this cluster.
    """

    def lookup() -> Any:
        return ray.get_actor(f"fleet:{key}", namespace=NAMESPACE)

    actor = await trio.to_thread.run_sync(lookup)
    future, done = watch(actor.usage.remote())
    await done.wait()
    return FleetUsage(*future.result())
