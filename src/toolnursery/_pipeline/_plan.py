"""The compiled plan of one tool in one view: what the pipeline and the scheduler read.

The registry compiles a :class:`ToolPlan` per tool name and view (the global view or a
scope's) the first time a call needs it, and again after any registration, restriction
or hook change (a version bump). A plan carries everything dispatch needs — the
definition, its body and how to run it, the tool's limiter and time budget, the
classifiers — and the view's per-phase hook tuples (:class:`Hooks`), so a call costs one
lookup. The pipeline and the scheduler never read the registry's private state: the
plan is their interface. A plan knows whether it is still current and how to rebuild
itself (:meth:`ToolPlan.current`, the one freshness check), which is how each stage
sees the hooks, and dispatch the definition, current when it starts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core._scope import AgentScope
from .._tools._raw import VALIDATES_ATTR, inline_check
from ._deadline import DeadlinePolicy

if TYPE_CHECKING:
    from .._core._execution import ApprovalService
    from .._core._statistics import Counters
    from .._tools._definition import ToolDefinition

__all__ = ["NATIVE_ATTR", "UNDECIDED", "Hooks", "PlanVersion", "Route", "ToolPlan"]

NATIVE_ATTR: Final = "__toolnursery_native__"
"""The attribute an asyncio body's loop-checking wrapper carries its own coroutine
function in (``toolnursery.aio.asyncio_tool``): the asyncio driver calls that directly."""

UNDECIDED: Final = object()
"""``ToolPlan.trio_reason`` before the asyncio router has asked."""


class Route(enum.Enum):
    """How dispatch reaches a tool's body (compiled into its plan; see the module table).

    ``suspends``: the body may yield to trio (so a bare plan's dispatch may too).
    """

    suspends: bool

    # No tool of that name in the view: dispatch resolves TOOL_NOT_FOUND.
    MISSING = ("missing", False)
    # An ``async def`` with no ``await``: it returns in one step, nothing can interrupt it.
    STEP = ("step", False)
    # A sync body declared nonblocking: called inline in the trio thread.
    INLINE = ("inline", False)
    # An ``async def`` that may suspend: awaited in the dispatcher's own frame.
    AWAIT = ("await", True)
    # A sync body: run in a worker thread (``trio.to_thread.run_sync``).
    THREAD = ("thread", True)

    def __init__(self, tag: str, suspends: bool) -> None:
        self.suspends = suspends


class PlanVersion:
    """A registry's change counter, shared by reference with every plan it compiles."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int = 0


class Hooks:
    """The hook tuples one view's calls see, compiled once per version.

    ``execute`` is the wrapper chain. When the chain is exactly one timeout policy,
    ``execute`` is empty and ``deadline`` holds that policy: dispatch enters its
    deadline scope directly, with no wrapper chain (the common case of a timeout
    policy alone). ``chained``: the chain starts with a wrapper other than the timeout
    policy (a pooled worker awaits the chain itself). ``any_prepare``/``any_finalize``
    say whether those stages have work.
    """

    __slots__ = (
        "any_finalize",
        "any_prepare",
        "approval",
        "chained",
        "deadline",
        "execute",
        "guards",
        "post",
        "pre",
        "result",
        "version",
    )

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
        self.version: int = version
        self.pre: tuple[Any, ...] = pre
        self.deadline: DeadlinePolicy | None = None
        if len(execute) == 1 and type(execute[0]) is DeadlinePolicy:
            self.deadline = execute[0]
            execute = ()
        self.execute: tuple[Any, ...] = execute
        self.chained: bool = bool(execute) and type(execute[0]) is not DeadlinePolicy
        self.post: tuple[Any, ...] = post
        self.result: tuple[Any, ...] = result
        self.guards: tuple[Any, ...] = guards
        self.approval: ApprovalService | None = approval
        self.any_prepare: bool = bool(pre or guards)
        self.any_finalize: bool = bool(post or result)


class ToolPlan:
    """How calls of one tool name run in one view (internal; compiled by the registry).

    Attributes:
        name: the tool name.
        definition: the definition the view resolves the name to (``None``: unknown).
        body: ``definition.execute``.
        route: how dispatch reaches the body (:class:`~toolnursery._pipeline._dispatch.Route`).
        bare: no execute wrapper, time budget or limit stands between dispatch and the
            body: with a ``route`` that cannot suspend, a dispatch completes without
            yielding to trio (the scheduler runs it in place); with ``AWAIT``, a pooled
            worker awaits the body in its own frame.
        limiter: the tool's ``max_concurrency`` limiter, or ``None``.
        budget: the time budget in ms when the view's only wrapper is a timeout
            policy and the tool has one, else ``None``.
        outer_budget: the time budget in ms of a timeout policy that is the view's only
            or outermost wrapper (and applies to the tool), else ``None``: a batch may
            run such calls under a deadline scope they share.
        hooks: the view's :class:`Hooks`.
        stats: the registry's counters.
        version: the registry's version this plan was compiled at (see :meth:`current`).
    """

    __slots__ = (
        "agent",
        "bare",
        "body",
        "budget",
        "check",
        "definition",
        "hooks",
        "limiter",
        "name",
        "native",
        "outer_budget",
        "rebuild",
        "route",
        "stats",
        "trio_reason",
        "version",
        "versions",
    )

    def __init__(
        self,
        *,
        name: str,
        agent: AgentScope | None,
        definition: ToolDefinition | None,
        hooks: Hooks,
        versions: PlanVersion,
        stats: Counters,
        limiter: trio.CapacityLimiter | None,
        rebuild: Callable[[str, AgentScope | None], ToolPlan],
        is_async: bool,
        suspends: bool,
        nonblocking: bool,
    ) -> None:
        self.name: str = name
        self.agent: AgentScope | None = agent
        self.definition: ToolDefinition | None = definition
        self.hooks: Hooks = hooks
        self.version: int = hooks.version
        self.versions: PlanVersion = versions
        self.stats: Counters = stats
        self.limiter: trio.CapacityLimiter | None = limiter
        self.rebuild: Callable[[str, AgentScope | None], ToolPlan] = rebuild
        body: Any = None if definition is None else definition.execute
        # A raw definition's argument check, called by dispatch before the body it wraps
        # (no coroutine layer of the wrapper's around the body).
        check: Callable[[Any], Any] | None = None
        if body is not None and getattr(body, VALIDATES_ATTR, None) is not None:
            split = inline_check(body)
            if split is not None:
                body, check = split
        # The body to call (None only when the route is MISSING: never called then).
        self.body: Any = body
        # What the asyncio driver calls instead (toolnursery._aio): an asyncio_tool's own
        # coroutine function behind its loop check, else the body itself.
        self.native: Any = getattr(body, NATIVE_ATTR, body)
        # Why a call of this plan needs trio under asyncio, or None: the asyncio router's
        # answer (toolnursery._aio._route.plan_reason), kept here once it has asked.
        self.trio_reason: Any = UNDECIDED
        self.check: Callable[[Any], Any] | None = check
        if definition is None:
            self.route: Route = Route.MISSING
        elif is_async:
            self.route = Route.AWAIT if suspends else Route.STEP
        else:
            self.route = Route.INLINE if nonblocking else Route.THREAD
        deadline = hooks.deadline
        budget = None
        if deadline is not None and definition is not None:
            budget = deadline.budget(definition)
        self.budget: float | None = budget
        # The budget of a timeout policy that is the view's only or outermost wrapper.
        outer_budget = budget
        execute = hooks.execute
        if execute and type(execute[0]) is DeadlinePolicy and definition is not None:
            outer_budget = execute[0].budget(definition)
        self.outer_budget: float | None = outer_budget
        self.bare: bool = not execute and budget is None and limiter is None

    def current(self) -> ToolPlan:
        """This plan while the registry is unchanged since it compiled, else the plan
        compiled now (the one freshness check: a version compare)."""
        if self.version == self.versions.value:
            return self
        return self.rebuild(self.name, self.agent)
