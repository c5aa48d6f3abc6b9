"""The compiled plan of one tool in one view: what the pipeline and the scheduler read.

The registry compiles a :class:`ToolPlan` per tool name and view (the global view or a
scope's) the first time a call needs it, and again after any registration, restriction
or hook change (a version bump). A plan carries everything dispatch needs — the
definition, its body and how to run it, the tool's limiter and time budget, the
classifiers — and the view's per-phase hook tuples (:class:`Hooks`), so a call costs one
lookup. The pipeline and the scheduler never read the registry's private state: the
plan is their interface. A plan knows how to rebuild itself (:meth:`ToolPlan.current`),
which is how dispatch resolves the definition current when it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from ._deadline import DeadlinePolicy

if TYPE_CHECKING:
    from .._core._execution import ApprovalService
    from .._core._statistics import Counters
    from .._tools._definition import ToolDefinition
    from ._registry import ToolScope

__all__ = ["Hooks", "PlanVersion", "ToolPlan"]


class PlanVersion:
    """A registry's change counter, shared by reference with every plan it compiles."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Hooks:
    """The hook tuples one view's calls see, compiled once per version.

    ``execute`` is the wrapper chain. When the chain is exactly one timeout policy,
    ``execute`` is empty and ``deadline`` holds that policy: dispatch enters its
    deadline scope directly, with no wrapper chain (the common case of a timeout
    policy alone). ``any_prepare``/``any_finalize`` say whether those stages have work.
    """

    __slots__ = (
        "any_finalize",
        "any_prepare",
        "approval",
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
        self.version = version
        self.pre = pre
        self.deadline: DeadlinePolicy | None = None
        if len(execute) == 1 and type(execute[0]) is DeadlinePolicy:
            self.deadline = execute[0]
            execute = ()
        self.execute = execute
        self.post = post
        self.result = result
        self.guards = guards
        self.approval = approval
        self.any_prepare = bool(pre or guards)
        self.any_finalize = bool(post or result)


class ToolPlan:
    """How calls of one tool name run in one view (internal; compiled by the registry).

    Attributes:
        name: the tool name.
        definition: the definition the view resolves the name to (``None``: unknown).
        body: ``definition.execute``.
        is_async: the body is a coroutine function (else a sync body).
        threaded: a sync body that runs in a worker thread (not declared nonblocking).
        suspends: the body may reach a checkpoint (an async body with an ``await``).
        direct: a known async body without a limit (dispatch awaits it directly).
        fast: ``direct``, with no wrappers and no budget (a pooled worker awaits the
            body itself, without the dispatch stage's coroutine layer).
        one_step: a dispatch completes without yielding to trio (no wrappers, budget or
            limit, and a body that cannot suspend): the scheduler runs it inline.
        limiter: the tool's ``max_concurrency`` limiter, or ``None``.
        budget: the time budget in ms when the view's only wrapper is a timeout
            policy and the tool has one, else ``None``.
        outer_budget: the time budget in ms of a timeout policy that is the view's only
            or outermost wrapper (and applies to the tool), else ``None``: a batch may
            run such calls under a deadline scope they share.
        chained: a known tool whose wrapper chain starts with a wrapper other than the
            timeout policy (a pooled worker awaits the chain itself).
        hooks: the view's :class:`Hooks`.
        stats: the registry's counters.
        timings: whether the registry times phases (read when a call begins).
    """

    __slots__ = (
        "agent",
        "body",
        "budget",
        "chained",
        "definition",
        "direct",
        "fast",
        "hooks",
        "is_async",
        "limiter",
        "name",
        "one_step",
        "outer_budget",
        "rebuild",
        "stats",
        "suspends",
        "threaded",
        "version",
        "versions",
    )

    def __init__(
        self,
        *,
        name: str,
        agent: ToolScope | None,
        definition: ToolDefinition | None,
        hooks: Hooks,
        versions: PlanVersion,
        stats: Counters,
        limiter: trio.CapacityLimiter | None,
        rebuild: Callable[[str, ToolScope | None], ToolPlan],
        is_async: bool,
        suspends: bool,
        nonblocking: bool,
    ) -> None:
        self.name = name
        self.agent = agent
        self.definition = definition
        self.hooks = hooks
        self.version = hooks.version
        self.versions = versions
        self.stats = stats
        self.limiter = limiter
        self.rebuild = rebuild
        self.body = None if definition is None else definition.execute
        self.is_async = is_async
        self.threaded = not is_async and not nonblocking
        self.suspends = suspends if is_async else self.threaded
        deadline = hooks.deadline
        budget = None
        if deadline is not None and definition is not None:
            budget = deadline.budget(definition)
        self.budget = budget
        # The budget of a timeout policy that is the view's only or outermost wrapper.
        outer_budget = budget
        execute = hooks.execute
        if execute and type(execute[0]) is DeadlinePolicy and definition is not None:
            outer_budget = execute[0].budget(definition)
        self.outer_budget = outer_budget
        # A pooled worker may run the wrapper chain itself: it starts with a wrapper
        # that is not the timeout policy.
        self.chained = (
            definition is not None and bool(execute) and type(execute[0]) is not DeadlinePolicy
        )
        # Dispatch may await the body directly (no limit, an async body).
        self.direct = definition is not None and limiter is None and is_async
        self.one_step = (
            not hooks.execute
            and budget is None
            and limiter is None
            and (definition is None or not self.suspends)
        )
        # A pooled dispatch may await the body in the worker itself: no wrappers, no
        # budget, no limit, an async body.
        self.fast = self.direct and not hooks.execute and budget is None

    def current(self) -> ToolPlan:
        """This plan, or the one compiled now if the registry changed since."""
        if self.version == self.versions.value:
            return self
        return self.rebuild(self.name, self.agent)
