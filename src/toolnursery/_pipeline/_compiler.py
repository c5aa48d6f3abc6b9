"""The plan compiler a registry owns: hook lists, per-view caches, tool limiters.

A :class:`PlanCompiler` turns "tool ``name`` as the view of ``agent`` sees it" into a
:class:`~toolnursery._pipeline._plan.ToolPlan` and caches it per view until the
registry's version changes. A view is the global view or a scope's; each has a
:class:`CompiledView` holding its plans and its per-phase hook tuples, both valid for
one version. Every registration, restriction and hook change bumps the version
(:meth:`PlanCompiler.changed`), so the next call of any view recompiles what it needs.

The compiler knows nothing of layers of tools: it asks the registry's lookup for the
definition a view resolves a name to. It owns the hooks (the registry's and every
scope's, one list per :class:`Phase` in registration order) because they are only
ever read compiled.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import trio

from .._core._bodies import is_async, may_suspend
from .._core._execution import ApprovalService
from .._core._scope import AgentScope
from .._core._statistics import Counters
from .._tools._definition import ToolDefinition
from ._plan import Hooks, PlanVersion, ToolPlan

__all__ = ["CompiledView", "Phase", "PlanCompiler"]


class Phase(enum.IntEnum):
    """The kinds of hook, each kept in a list of its own."""

    PRE = 0  # pre-execute listeners, a waterfall before dispatch
    EXECUTE = 1  # execute wrappers around dispatch
    POST = 2  # post-execute listeners, a waterfall after dispatch
    RESULT = 3  # result observers, synchronous, see the final outcome
    GUARD = 4  # guards, synchronous, may only deny; run root scope first


class _Hook:
    __slots__ = ("fn", "owner")

    def __init__(self, fn: Any, owner: object) -> None:
        self.fn = fn
        self.owner = owner  # the scope that registered it (None: the registry)


class CompiledView:
    """One view's compiled state: its plans and hook tuples.

    A scope holds one (made when the scope is), the compiler one for the global view.
    ``plans`` is valid while ``version`` is the registry's; ``hooks`` carries its own.

    Attributes:
        chain: the scopes whose hooks the view's calls see, root first (``()``: the
            global view, which sees only the registry's own hooks).
        plans: the compiled plans of known tools by name.
        version: the registry version ``plans`` was compiled at.
        hooks: the hook tuples last compiled for the view, if any.
    """

    __slots__ = ("chain", "hooks", "plans", "version")

    def __init__(self, chain: tuple[object, ...]) -> None:
        self.chain = chain
        self.plans: dict[str, ToolPlan] = {}
        self.version = -1
        self.hooks: Hooks | None = None


class PlanCompiler:
    """Compiles and caches the :class:`ToolPlan` of each tool name in each view.

    Args:
        resolve: ``(name, agent) -> definition | None``, the registry's lookup.
        stats: the registry's counters, which every plan carries.
        approval: the registry's approval service, which every view's hooks carry.

    Attributes:
        versions: the registry's change counter, shared with every plan.
    """

    __slots__ = ("_approval", "_global", "_hooks", "_limiters", "_resolve", "_stats", "versions")

    def __init__(
        self,
        resolve: Callable[[str, AgentScope | None], ToolDefinition | None],
        stats: Counters,
        approval: ApprovalService | None,
    ) -> None:
        self.versions = PlanVersion()
        self._resolve = resolve
        self._stats = stats
        self._approval = approval
        self._hooks: tuple[list[_Hook], ...] = tuple([] for _ in Phase)
        self._global = CompiledView(())
        self._limiters: dict[str, trio.CapacityLimiter] = {}

    @property
    def version(self) -> int:
        """The current version: plans compiled at another one are stale."""
        return self.versions.value

    def changed(self) -> None:
        """Invalidate every compiled plan and hook tuple (after any change)."""
        self.versions.value += 1

    def view(self, agent: AgentScope | None) -> CompiledView:
        """The compiled state of ``agent``'s view (``None``: the global view)."""
        if agent is None:
            return self._global
        view: CompiledView = agent._compiled
        return view

    def plan(self, name: str, agent: AgentScope | None) -> ToolPlan:
        """The plan of ``name`` in ``agent``'s view: one dict lookup when fresh.

        Called per call (the batch reads it through ``registry._plan``, this bound
        method): keep it a few attribute reads.
        """
        version = self.versions.value
        view: CompiledView = self._global if agent is None else agent._compiled
        plans = view.plans
        if view.version != version:
            plans.clear()
            view.version = version
        plan = plans.get(name)
        if plan is None:
            plan = self._compile(name, agent, view)
            if plan.definition is not None:
                plans[name] = plan  # unknown names are not cached: the model picks them
        return plan

    def hooks(self, agent: AgentScope | None) -> Hooks:
        """The hook tuples of ``agent``'s view at the current version."""
        return self._hooks_of(self.view(agent))

    def add_hook(
        self, phase: Phase, fn: Any, owner: object, *, prepend: bool
    ) -> Callable[[], None]:
        """Add a hook of ``owner`` (a scope, or ``None`` for the registry).

        Returns:
            An undo function that removes exactly this hook (once; later calls do
            nothing).
        """
        hook = _Hook(fn, owner)
        hooks = self._hooks[phase]
        if prepend:
            hooks.insert(0, hook)
        else:
            hooks.append(hook)
        self.changed()

        def undo() -> None:
            for i, candidate in enumerate(hooks):
                if candidate is hook:
                    del hooks[i]
                    self.changed()
                    return

        return undo

    def limiter(self, definition: ToolDefinition) -> trio.CapacityLimiter:
        """The limiter of the tool name (made on first use) at the definition's limit.

        Bodies of one name share a limiter, whichever layer or scope registered the
        definition: a limit never admits more bodies than the name's current
        definition allows (a re-registration with another limit resizes it).
        """
        limit = definition.max_concurrency
        assert limit is not None
        limiter = self._limiters.get(definition.name)
        if limiter is None:
            limiter = self._limiters[definition.name] = trio.CapacityLimiter(limit)
        elif limiter.total_tokens != limit:
            limiter.total_tokens = limit
        return limiter

    def _compile(self, name: str, agent: AgentScope | None, view: CompiledView) -> ToolPlan:
        definition = self._resolve(name, agent)
        limiter = None
        asynchronous = suspends = nonblocking = False
        if definition is not None:
            body = definition.execute
            asynchronous = is_async(body)
            suspends = asynchronous and may_suspend(body)
            nonblocking = definition.nonblocking is True
            if definition.max_concurrency is not None:
                limiter = self.limiter(definition)
        return ToolPlan(
            name=name,
            agent=agent,
            definition=definition,
            hooks=self._hooks_of(view),
            versions=self.versions,
            stats=self._stats,
            limiter=limiter,
            rebuild=self.plan,
            is_async=asynchronous,
            suspends=suspends,
            nonblocking=nonblocking,
        )

    def _hooks_of(self, view: CompiledView) -> Hooks:
        hooks = view.hooks
        version = self.versions.value
        if hooks is None or hooks.version != version:
            hooks = view.hooks = self._build_hooks(view.chain, version)
        return hooks

    def _build_hooks(self, chain: tuple[object, ...], version: int) -> Hooks:
        admitted = {None, *chain}
        every = self._hooks

        def pick(phase: Phase) -> tuple[Any, ...]:
            return tuple(h.fn for h in every[phase] if h.owner in admitted)

        # Guards run root first: the registry's, then each scope's from the root down
        # (a stable sort keeps registration order within one owner).
        depth = {scope: i + 1 for i, scope in enumerate(chain)}
        guards = sorted(
            (h for h in every[Phase.GUARD] if h.owner in admitted),
            key=lambda h: 0 if h.owner is None else depth[h.owner],
        )
        return Hooks(
            version,
            pick(Phase.PRE),
            pick(Phase.EXECUTE),
            pick(Phase.POST),
            pick(Phase.RESULT),
            tuple(h.fn for h in guards),
            self._approval,
        )
