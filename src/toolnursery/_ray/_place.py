"""The Ray placement: a definition whose body runs as a Ray task or on a pool of actors.

``ray_tool`` returns a copy of a definition whose ``execute`` is an agent-side body:
it encodes the frozen arguments, takes a fleet permit if the tool has a fleet limit,
submits the remote call, awaits it (``_ray_wait``) and decodes the answer into what
the remote body returned. Everything else — snapshot, policies, guards,
classification, model order, the recorder — runs in the agent as for a local body,
so the pipeline cannot tell the difference except through the failure codes below.

Ray's own retries are always off (tasks: ``max_retries=0, retry_exceptions=False``;
actors: ``max_restarts=0, max_task_retries=0``): a side effect never runs twice
behind the pipeline's back. Retrying an idempotent tool after a lost worker is the
retry policy's job (``install_retry_policy(codes=[REMOTE_WORKER_DIED, ...])``), where
each attempt is visible, cancellable and refused for a tool that is not idempotent.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec
import ray
import ray.exceptions as rex
import trio

from .._core._errors import (
    REMOTE_NODE_DIED,
    REMOTE_UNAVAILABLE,
    REMOTE_WORKER_DIED,
    TOOL_ABORTED,
    RegistrationError,
    RemoteToolError,
)
from .._core._execution import ToolRunContext
from .._tools._definition import ToolDefinition
from ._fleet import FleetLimit, release
from ._remote import encode_arguments, read_answer, run_call
from ._wait import await_ref

__all__ = ["ray_tool", "warm"]

_remote: Any = ray.remote  # its overloads do not cover every option passed on
_WARM: Final = b""  # a payload no call sends (arguments are JSON): start up, run nothing

# The placement of each agent-side body ray_tool made, for warm() to find.
_placements: weakref.WeakKeyDictionary[Callable[..., Any], _TaskRunner | _ActorPool] = (
    weakref.WeakKeyDictionary()
)


def ray_tool(
    definition: ToolDefinition,
    *,
    num_cpus: float = 1,
    num_gpus: float | None = None,
    memory: int | None = None,
    resources: Mapping[str, float] | None = None,
    runtime_env: Mapping[str, Any] | None = None,
    scheduling_strategy: Any = None,
    actors: int | None = None,
    setup: Callable[[], Any] | None = None,
    fleet_limit: int | None = None,
    fleet_key: str | None = None,
    cancel_grace_s: float = 5.0,
) -> ToolDefinition:
    """Place ``definition``'s body on the connected Ray cluster.

    The returned definition is registered like any other; its body runs as one Ray
    task per call, or, with ``actors``, on a pool of that many Ray actors (for
    bodies that keep state or warm resources: each actor runs ``setup()`` once and
    passes what it returned as ``ctx.state``). The remote body receives the frozen
    arguments (lossless JSON) and a :class:`RemoteContext` as ``ctx``.

    Args:
        definition: the tool to place; every other field is kept.
        num_cpus: Ray's ``num_cpus`` for each task (or actor).
        num_gpus: Ray's ``num_gpus``.
        memory: Ray's ``memory`` (bytes).
        resources: Ray's custom ``resources``.
        runtime_env: Ray's ``runtime_env`` (on a real cluster it must make
            ``toolnursery`` and the body's module importable).
        scheduling_strategy: Ray's ``scheduling_strategy``.
        actors: run on a pool of this many actors per agent process instead of tasks.
        setup: with ``actors``, ``() -> state`` run once in each actor.
        fleet_limit: the most bodies of this tool running at once across every
            agent process connected to the cluster, held by a named detached actor
            (alongside the in-process ``max_concurrency``).
        fleet_key: the fleet limit's name (default: the tool name); tools sharing a
            key share the limit.
        cancel_grace_s: how long a cancelled call waits for its remote body to stop
            after ``ray.cancel`` before forcing it, and again after forcing.

    Returns:
        A new :class:`ToolDefinition` with the remote body.

    Raises:
        RegistrationError: ``definition`` is not a ``ToolDefinition``, an option is
            out of range, or the body (or ``setup``) cannot be pickled for a worker.
    """
    if not isinstance(definition, ToolDefinition):
        raise RegistrationError(
            f"ray_tool() takes a ToolDefinition, got {type(definition).__name__}"
        )
    name = definition.name
    _check_positive(cancel_grace_s, "cancel_grace_s", name)
    if not (isinstance(num_cpus, int | float) and not isinstance(num_cpus, bool)) or not (
        math.isfinite(num_cpus) and num_cpus >= 0
    ):
        raise RegistrationError(
            f'ray_tool("{name}") num_cpus must be a finite number of at least 0, got {num_cpus!r}'
        )
    _check_count(actors, "actors", name)
    _check_count(fleet_limit, "fleet_limit", name)
    if setup is not None and actors is None:
        raise RegistrationError(f'ray_tool("{name}") setup= needs actors= (an actor pool)')
    if fleet_key is not None and (fleet_limit is None or not isinstance(fleet_key, str)):
        raise RegistrationError(
            f'ray_tool("{name}") fleet_key= must be a str and needs fleet_limit='
        )
    body = definition.execute
    _check_picklable(body, "body", name)
    if setup is not None:
        _check_picklable(setup, "setup", name)

    options: dict[str, Any] = {"num_cpus": num_cpus}
    for key, value in (
        ("num_gpus", num_gpus),
        ("memory", memory),
        ("resources", None if resources is None else dict(resources)),
        ("runtime_env", None if runtime_env is None else dict(runtime_env)),
        ("scheduling_strategy", scheduling_strategy),
    ):
        if value is not None:
            options[key] = value
    fleet = None if fleet_limit is None else FleetLimit(fleet_key or name, fleet_limit)
    placement: _TaskRunner | _ActorPool
    if actors is None:
        placement = _TaskRunner(body, name, options, cancel_grace_s)
    else:
        placement = _ActorPool(body, setup, name, options, actors, cancel_grace_s)
    submit = placement.run

    async def execute(args: Any, ctx: ToolRunContext) -> Any:
        if not ray.is_initialized():
            raise RemoteToolError(
                f'tool "{name}" runs on Ray, but this process is not connected to a Ray '
                "cluster: call ray.init() (or ray.init(address=...)) before running calls",
                code=REMOTE_UNAVAILABLE,
            )
        payload = encode_arguments(args)
        if fleet is None:
            answer = await submit(payload, ctx.call_id)
        else:
            actor, holder = await fleet.acquire(name)
            try:
                answer = await submit(payload, ctx.call_id)
            finally:
                await release(actor, holder)
        return read_answer(answer)

    _placements[execute] = placement
    return msgspec.structs.replace(definition, execute=execute)


async def warm(*definitions: ToolDefinition, workers: int = 1) -> None:
    """Start the Ray workers of placed tools and load their bodies, before the calls.

    A tool's deadline (``timeout_ms``) counts from the moment the agent submits the
    call, so on a cold cluster the first calls also pay for starting a worker
    process, importing ``toolnursery`` and the body's module, and unpickling the body
    (seconds on a fresh local cluster). ``await warm(defn)`` pays that up front: for
    a task placement it runs ``workers`` start-up tasks at once (the remote function
    the calls use, with no body run), for an actor pool it starts the pool's actors
    and waits until each has run ``setup()``. Calls made afterwards find workers
    ready; Ray keeps idle workers alive (up to the node's CPU count) for reuse.

    Args:
        definitions: definitions returned by :func:`ray_tool`.
        workers: for task placements, how many start-up tasks to run at once (Ray
            starts up to that many worker processes); an actor pool warms all its
            actors.

    Raises:
        RegistrationError: a definition was not made by ``ray_tool``, or ``workers``
            is not a positive int.
        RemoteToolError: this process is not connected to Ray
            (``REMOTE_UNAVAILABLE``), or a worker could not start (the code names
            what was lost, as for a call).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise RegistrationError(f"warm() workers must be a positive int, got {workers!r}")
    placements = [_placement_of(definition) for definition in definitions]
    if not ray.is_initialized():
        raise RemoteToolError(
            "warm() needs a Ray connection: call ray.init() (or ray.init(address=...)) first",
            code=REMOTE_UNAVAILABLE,
        )
    failures: list[RemoteToolError] = []

    async def start(job: Callable[[], Awaitable[object]]) -> None:
        try:
            await job()
        except RemoteToolError as exc:
            failures.append(exc)

    async with trio.open_nursery() as nursery:
        for placement in placements:
            for job in placement.warm_jobs(workers):
                nursery.start_soon(start, job)
    if failures:
        raise failures[0]


def _placement_of(definition: object) -> _TaskRunner | _ActorPool:
    body = definition.execute if isinstance(definition, ToolDefinition) else None
    while body is not None:
        try:
            placement = _placements.get(body)
        except TypeError:  # not weak-referenceable: not ours
            placement = None
        if placement is not None:
            return placement
        body = getattr(body, "__wrapped__", None)
    name = definition.name if isinstance(definition, ToolDefinition) else repr(definition)
    raise RegistrationError(f"warm() takes definitions made by ray_tool(); {name} is not one")


class _TaskRunner:
    """One Ray task per call; forcing a cancelled call kills its worker process."""

    __slots__ = ("grace", "name", "remote")

    def __init__(self, body: Any, name: str, options: dict[str, Any], grace: float) -> None:
        def run(payload: bytes, call_id: str) -> bytes:
            if payload == _WARM:
                return _WARM
            return run_call(body, payload, call_id, name)

        run.__name__ = run.__qualname__ = f"toolnursery_tool[{name}]"
        self.remote = _remote(max_retries=0, retry_exceptions=False, **options)(run)
        self.name = name
        self.grace = grace

    def warm_jobs(self, workers: int) -> list[Callable[[], Awaitable[object]]]:
        return [functools.partial(self.run, _WARM, "warm")] * workers

    async def run(self, payload: bytes, call_id: str) -> bytes:
        ref = self.remote.remote(payload, call_id)

        def force() -> None:
            ray.cancel(ref, force=True)

        try:
            answer: bytes = await await_ref(ref, grace=self.grace, force=force)
        except rex.RayError as exc:
            raise _translate(exc, self.name) from exc
        return answer


class _ToolActor:
    """The actor class of a pool: ``setup()`` once, then one call at a time."""

    def __init__(self, body: Any, setup: Callable[[], Any] | None, name: str) -> None:
        self.body = body
        self.name = name
        self.state = None if setup is None else setup()

    def run(self, payload: bytes, call_id: str) -> bytes:
        return run_call(self.body, payload, call_id, self.name, self.state)

    def ready(self) -> bool:
        return True


class _ActorPool:
    """A per-process pool of actors; a call takes an idle one (waiting cancellably).

    A running actor call cannot be interrupted by Ray, so forcing a cancelled call
    kills its actor (its state is lost) and a fresh actor takes its place; so does an
    actor that died. The pool is rebuilt when the process joins a different Ray job.
    """

    def __init__(
        self,
        body: Any,
        setup: Callable[[], Any] | None,
        name: str,
        options: dict[str, Any],
        size: int,
        grace: float,
    ) -> None:
        self.cls = _remote(max_restarts=0, max_task_retries=0, max_concurrency=1, **options)(
            _ToolActor
        )
        self.body = body
        self.setup = setup
        self.name = name
        self.size = size
        self.grace = grace
        self.idle: list[Any] = []
        self.job: str | None = None
        self.lot = trio.lowlevel.ParkingLot()

    def _spawn(self) -> Any:
        return self.cls.remote(self.body, self.setup, self.name)

    def _join(self) -> str:
        job: str = ray.get_runtime_context().get_job_id()
        if job != self.job:
            self.job = job
            self.idle = [self._spawn() for _ in range(self.size)]
            self.lot.unpark_all()
        return job

    def warm_jobs(self, workers: int) -> list[Callable[[], Awaitable[object]]]:
        self._join()
        return [functools.partial(self._ready, actor) for actor in self.idle]

    async def _ready(self, actor: Any) -> None:
        try:
            await await_ref(actor.ready.remote(), grace=self.grace)
        except rex.RayError as exc:
            raise _translate(exc, self.name) from exc

    async def run(self, payload: bytes, call_id: str) -> bytes:
        job = self._join()
        while not self.idle:
            await self.lot.park()
        actor = self.idle.pop()
        healthy = True

        def force() -> None:
            nonlocal healthy
            healthy = False
            ray.kill(actor, no_restart=True)

        try:
            answer: bytes = await await_ref(
                actor.run.remote(payload, call_id), grace=self.grace, force=force
            )
        except rex.RayError as exc:
            if isinstance(exc, rex.RayActorError):
                healthy = False
            raise _translate(exc, self.name) from exc
        finally:
            if self.job == job:
                self.idle.append(actor if healthy else self._spawn())
                self.lot.unpark()
        return answer


def _translate(exc: rex.RayError, name: str) -> RemoteToolError:
    """A Ray failure as the call's error, with a code naming what was lost."""
    kind = type(exc).__name__
    if isinstance(exc, rex.RayTaskError):
        cause = exc.cause
        if isinstance(cause, rex.TaskCancelledError):
            return RemoteToolError(
                f'tool "{name}": its Ray task was cancelled from outside the call',
                code=TOOL_ABORTED,
            )
        return RemoteToolError(
            f'tool "{name}" could not run on its Ray worker: {cause!r}', code=REMOTE_UNAVAILABLE
        )
    if isinstance(exc, rex.WorkerCrashedError | rex.RayActorError | rex.OutOfMemoryError):
        return RemoteToolError(
            f'tool "{name}": its Ray worker died while the body ran ({kind}); '
            "the call was not retried",
            code=REMOTE_WORKER_DIED,
        )
    if isinstance(exc, rex.NodeDiedError | rex.LocalRayletDiedError | rex.ObjectLostError):
        return RemoteToolError(
            f'tool "{name}": the Ray node running the body, or the object holding its '
            f"answer, was lost ({kind}); the call was not retried",
            code=REMOTE_NODE_DIED,
        )
    if isinstance(exc, rex.TaskCancelledError):
        return RemoteToolError(
            f'tool "{name}": its Ray task was cancelled from outside the call', code=TOOL_ABORTED
        )
    return RemoteToolError(
        f'tool "{name}" could not be placed on Ray ({kind}): {exc}', code=REMOTE_UNAVAILABLE
    )


def _check_picklable(fn: Any, what: str, name: str) -> None:
    try:
        ray.cloudpickle.dumps(fn)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise RegistrationError(
            f'ray_tool("{name}"): the {what} cannot be pickled to run on a Ray worker '
            f"({type(exc).__name__}: {exc}); close over only picklable values, or build "
            "unpicklable resources inside the body (or in an actor pool's setup)"
        ) from exc


def _check_positive(value: object, what: str, name: str) -> None:
    if not (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    ):
        raise RegistrationError(
            f'ray_tool("{name}") {what} must be a positive finite number, got {value!r}'
        )


def _check_count(value: object, what: str, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RegistrationError(
            f'ray_tool("{name}") {what} must be a positive int or None, got {value!r}'
        )
