"""ToolRegistry and ToolScope: layers of definitions, restrictions and policy hooks.

The registry holds a global layer of tools and, per scope, a scope layer. A scope's
view is computed root-first along its chain: start from the global layer; at each
scope, apply that scope's restrictions to what it inherits, then overlay the scope's
own tools (a shadowing tool keeps the inherited tool's position). Views are cached
per version; the plans and per-phase hook tuples every call reads are compiled and
cached by the registry's :class:`~toolnursery._pipeline._compiler.PlanCompiler`, and
rebuilt only after a change.

Hooks (pre-execute listeners, guards, wrappers, post-execute listeners, observers)
registered on the registry see every call; registered on a scope they see the calls
made for that scope and for scopes nested inside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeAlias

from .._core._bodies import is_async
from .._core._content import ToolExecutionResult, ToolSchema
from .._core._decisions import (
    EXCLUSIVE,
    PostToolDecision,
    PreToolDecision,
    ToolExecutionMode,
)
from .._core._errors import RegistrationError, ToolNotFoundError
from .._core._execution import (
    ApprovalService,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
)
from .._core._json import snapshot, thaw
from .._core._statistics import Counters, ToolStatistics
from .._tools._definition import ToolDefinition, option_problem
from ._classify import classify
from ._compiler import CompiledView, Phase, PlanCompiler
from ._ledger import ProvenanceLedger
from ._plan import ToolPlan
from ._stages import execute as _execute
from ._waterfalls import DEFAULT_HOOK_ABORT_GRACE, check_hook_abort_grace

__all__ = [
    "Disposer",
    "ExecuteWrapper",
    "PostExecuteListener",
    "PreExecuteListener",
    "ResultObserver",
    "ToolGuard",
    "ToolRegistry",
    "ToolScope",
    "counters",
]

PreExecuteListener: TypeAlias = Callable[
    [ToolExecution, Callable[[], Awaitable[PreToolDecision]]], Awaitable[PreToolDecision]
]
"""``async (execution, next) -> PreToolDecision``."""
ExecuteWrapper: TypeAlias = Callable[
    [ToolDispatchExecution, Callable[[], Awaitable[ToolExecutionResult]]],
    Awaitable[ToolExecutionResult],
]
"""``async (dispatch_execution, next) -> ToolExecutionResult``."""
PostExecuteListener: TypeAlias = Callable[
    [ToolExecution, ToolExecutionResult, Callable[[], Awaitable[PostToolDecision]]],
    Awaitable[PostToolDecision],
]
"""``async (execution, result, next) -> PostToolDecision``."""
ToolGuard: TypeAlias = Callable[[ToolExecution], str | None]
"""``(execution) -> reason | None``: any string (even ``""``) denies."""
ResultObserver: TypeAlias = Callable[[ToolExecution, ToolExecutionResult], None]
"""``(execution, result) -> None``: synchronous, observe only."""


class Disposer:
    """Undoes exactly one registration when called; calling it again does nothing."""

    __slots__ = ("_undo",)

    def __init__(self, undo: Callable[[], None]) -> None:
        self._undo: Callable[[], None] | None = undo

    def __call__(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    @property
    def disposed(self) -> bool:
        """Whether the registration has been undone."""
        return self._undo is None


class _Restriction:
    __slots__ = ("allow", "deny")

    def __init__(self, allow: frozenset[str] | None, deny: frozenset[str] | None) -> None:
        self.allow = allow
        self.deny = deny

    def admits(self, name: str) -> bool:
        if self.allow is not None and name not in self.allow:
            return False
        return self.deny is None or name not in self.deny


class _Owner:
    """What the registry and a scope share: registering tools and hooks."""

    _registry: ToolRegistry
    _scope: ToolScope | None

    def register(self, definition: ToolDefinition) -> Disposer:
        """Register a tool in this layer.

        Args:
            definition: a :class:`ToolDefinition` (from :func:`define_tool`, ``@tool``
                or written by hand).

        Returns:
            A :class:`Disposer` that unregisters exactly this tool.

        Raises:
            RegistrationError: the definition is malformed, its ``timeout_ms`` is not
                a positive finite number of at most a year, its ``max_concurrency``
                is not a positive ``int``, its ``concurrency_keys`` is not callable,
                or the name is taken in this layer.
        """
        return self._registry._register(definition, self._scope)

    def guard(self, fn: ToolGuard) -> Disposer:
        """Add a monotonic guard: a sync ``(execution) -> str | None`` that may only deny."""
        _check_callable(fn, "guard", sync=True)
        return self._registry._add_hook(Phase.GUARD, fn, self._scope, prepend=False)

    def on_pre_execute(self, listener: PreExecuteListener, prepend: bool = False) -> Disposer:
        """Add a pre-execute listener ``async (execution, next) -> Allow | Deny | Ask``."""
        _check_callable(listener, "pre-execute listener")
        return self._registry._add_hook(Phase.PRE, listener, self._scope, prepend)

    def on_execute(self, wrapper: ExecuteWrapper, prepend: bool = False) -> Disposer:
        """Add an around-dispatch wrapper ``async (dispatch_execution, next) -> result``."""
        _check_callable(wrapper, "execute wrapper")
        return self._registry._add_hook(Phase.EXECUTE, wrapper, self._scope, prepend)

    def on_post_execute(self, listener: PostExecuteListener, prepend: bool = False) -> Disposer:
        """Add a post-execute listener ``async (execution, result, next) -> Accept | Block``."""
        _check_callable(listener, "post-execute listener")
        return self._registry._add_hook(Phase.POST, listener, self._scope, prepend)

    def on_result(self, observer: ResultObserver) -> Disposer:
        """Add a synchronous result observer ``(execution, result) -> None``.

        Observers see the frozen final outcome; they cannot change it, and a raising
        observer is logged and contained.

        Raises:
            RegistrationError: the observer is an ``async def`` (observers are synchronous).
        """
        _check_callable(observer, "result observer", sync=True)
        return self._registry._add_hook(Phase.RESULT, observer, self._scope, prepend=False)


def _check_callable(fn: object, what: str, *, sync: bool = False) -> None:
    if not callable(fn):
        raise RegistrationError(f"{what} must be callable, got {type(fn).__name__}")
    if sync and is_async(fn):
        raise RegistrationError(f"a {what} must be synchronous (a plain def), not async")


class ToolRegistry(_Owner):
    """The tools of a deployment, their scopes, and the policy pipeline every call passes.

    Args:
        approval: answers ``Ask`` decisions; without one, ``Ask`` degrades to a denial.
        phase_timings: time each phase of every call (two clock reads per phase with
            work) for :meth:`statistics`' ``phase_seconds``. Also a settable attribute;
            calls and batches read it when they begin.
        hook_abort_grace: the seconds a pre-execute waterfall, an approval request or a
            post-execute waterfall may still run after its call is aborted; past them
            it is cancelled (see docs/policies.md). ``math.inf``: never. Also a
            settable attribute; a batch may override it (``hook_abort_grace=``).

    Raises:
        TypeError: ``hook_abort_grace`` is not a number.
        ValueError: ``hook_abort_grace`` is negative or NaN.
    """

    def __init__(
        self,
        approval: ApprovalService | None = None,
        *,
        phase_timings: bool = False,
        hook_abort_grace: float = DEFAULT_HOOK_ABORT_GRACE,
    ) -> None:
        self._registry = self
        self._scope = None
        self._approval = approval
        self.phase_timings = phase_timings
        self.hook_abort_grace = hook_abort_grace
        self._tools: dict[str, ToolDefinition] = {}
        self._change: list[Callable[[], object]] = []
        self._stats = Counters()
        self._compiler = PlanCompiler(self.get, self._stats, approval)
        # The compiler's bound method itself, so this alias adds no frame (but a
        # bound-method call costs ~9 ns more than ``registry._compiler.plan(...)``,
        # which is what per-call paths should read).
        self._plan: Callable[[str, ToolScope | None], ToolPlan] = self._compiler.plan

    @property
    def phase_timings(self) -> bool:
        """Whether calls time their phases (``statistics().phase_seconds``)."""
        return self._phase_timings

    @phase_timings.setter
    def phase_timings(self, value: bool) -> None:
        if type(value) is not bool:
            raise TypeError(f"phase_timings must be a bool, not {type(value).__name__}")
        self._phase_timings = value

    @property
    def hook_abort_grace(self) -> float:
        """Seconds a policy hook may still run after its call's abort (calls and
        batches read it when they begin)."""
        return self._hook_abort_grace

    @hook_abort_grace.setter
    def hook_abort_grace(self, value: float) -> None:
        self._hook_abort_grace = check_hook_abort_grace(value)

    @property
    def approval(self) -> ApprovalService | None:
        """The approval service, if one is mounted."""
        return self._approval

    def scope(self, parent: ToolScope | None = None) -> ToolScope:
        """Make an agent scope, optionally nested inside ``parent``.

        Raises:
            RegistrationError: ``parent`` belongs to another registry or is closed.
        """
        if parent is not None:
            if parent._registry is not self:
                raise RegistrationError("scope(parent=...) takes a scope of this registry")
            if parent._closed:
                raise RegistrationError("scope(parent=...) takes an open scope; this one is closed")
        return ToolScope(self, parent)

    def on_change(self, listener: Callable[[], object]) -> Disposer:
        """Call ``listener()`` after every register, unregister, restrict and lift.

        If a listener raises during :meth:`register`, the registration is rolled back
        and the error re-raised.
        """
        _check_callable(listener, "change listener", sync=True)
        self._change.append(listener)

        def undo() -> None:
            _remove(self._change, listener)

        return Disposer(undo)

    # -- lookup ---------------------------------------------------------------------

    def get(self, name: str, scope: ToolScope | None = None) -> ToolDefinition | None:
        """The definition ``scope`` (or the global view) resolves ``name`` to, else ``None``."""
        if scope is None:
            return self._tools.get(name)
        return scope._view().get(name)

    def require(self, name: str, scope: ToolScope | None = None) -> ToolDefinition:
        """As :meth:`get`, raising when nothing of that name is visible.

        Raises:
            ToolNotFoundError: no such tool in ``scope``'s view (or the global one); it
                carries the names that view has and the closest of them (``known``,
                ``suggestion``), never a name the view hides.
        """
        view = self._tools if scope is None else scope._view()
        definition = view.get(name)
        if definition is None:
            raise ToolNotFoundError(name, view)
        return definition

    def schemas(self, scope: ToolScope | None = None) -> list[ToolSchema]:
        """The model-facing projection of the visible tools, in registration order.

        Only ``name``, ``description`` and ``parameters`` are projected, each a detached
        deep copy: mutating what this returns changes nothing in the registry.
        """
        view = self._tools if scope is None else scope._view()
        return [ToolSchema(d.name, d.description, thaw(d.parameters)) for d in view.values()]

    def execution_mode(self, input: ToolExecutionInput) -> ToolExecutionMode:
        """How the scheduler may run this call; fail-closed.

        ``is_concurrency_safe`` returning exactly ``True`` makes a call ``parallel``;
        when it is absent or returns anything else, ``concurrency_keys`` (if the tool
        declares one) makes it ``keyed`` with the resources it names. No classifier,
        an unknown or invisible tool, a classifier that raises, and keys that are
        not an iterable of :class:`ResourceKey` make it ``exclusive``.
        """
        definition = self.get(input.name, input.agent)
        if definition is None:
            return EXCLUSIVE
        try:
            arguments = snapshot(input.arguments)
        except Exception:
            return EXCLUSIVE  # not lossless JSON: the call fails before dispatch anyway
        return classify(definition, arguments)

    async def execute(self, input: ToolExecutionInput, *, deps: Any = None) -> ToolExecutionResult:
        """Run one call through the whole pipeline and return its frozen result.

        Never raises for anything a tool, listener or argument does: failures become
        ``is_error`` results. ``trio.Cancelled`` from a scope the registry does not own
        (the caller's) propagates after the body has unwound. The body reads ``deps``
        as ``ctx.deps``; ``@tool`` parameters marked ``Depends(...)`` are resolved from it.
        """
        return await _execute(self, input, deps)

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of every call through this registry so far.

        Cumulative over :meth:`execute` and every batch (calls that bypass the
        registry, such as a batch's synthetic ``ABORTED_BEFORE_DISPATCH`` results,
        are not counted here). The counters are always on; ``phase_seconds`` adds
        up only calls that began while :attr:`phase_timings` was on (every phase
        reads ``0.0`` if none did).
        """
        return self._stats.snapshot()

    # -- internals ------------------------------------------------------------------

    @property
    def _version(self) -> int:
        return self._compiler.versions.value

    def _changed(self) -> None:
        self._compiler.changed()

    def _emit_change(self) -> None:
        for listener in tuple(self._change):
            listener()

    def _register(self, definition: ToolDefinition, scope: ToolScope | None) -> Disposer:
        _check_definition(definition)
        name = definition.name
        if scope is None:
            layer = self._tools
            if name in layer:
                raise RegistrationError(
                    f'tool "{name}" is already registered (for a per-agent variant, '
                    "register it on that agent's scope instead)"
                )
        else:
            scope._check_open()
            layer = scope._tools
            if name in layer:
                raise RegistrationError(f'tool "{name}" is already registered in this scope')
        layer[name] = definition
        self._changed()
        try:
            self._emit_change()
        except BaseException:
            if layer.get(name) is definition:
                del layer[name]
                self._changed()
            raise

        def undo() -> None:
            if layer.get(name) is definition:
                del layer[name]
                self._changed()
                self._emit_change()

        disposer = Disposer(undo)
        if scope is not None:
            scope._owned.append(disposer)
        return disposer

    def _add_hook(self, phase: Phase, fn: Any, scope: ToolScope | None, prepend: bool) -> Disposer:
        if scope is not None:
            scope._check_open()
        disposer = Disposer(self._compiler.add_hook(phase, fn, scope, prepend=prepend))
        if scope is not None:
            scope._owned.append(disposer)
        return disposer


class ToolScope(_Owner):
    """An agent's view of the registry: its own tools, restrictions and hooks.

    Make one with :meth:`ToolRegistry.scope`; pass it as ``ToolExecutionInput.agent``.
    :meth:`close` undoes everything registered through it (and closes nested scopes).
    """

    def __init__(self, registry: ToolRegistry, parent: ToolScope | None) -> None:
        self._registry = registry
        self._scope = self
        self.parent = parent
        self._chain: tuple[ToolScope, ...] = (
            (*parent._chain, self) if parent is not None else (self,)
        )
        self._tools: dict[str, ToolDefinition] = {}
        self._restrictions: list[_Restriction] = []
        self._owned: list[Disposer] = []
        self._children: list[ToolScope] = []
        self._closed = False
        self._view_cache: tuple[int, dict[str, ToolDefinition]] | None = None
        self._compiled = CompiledView(self._chain)  # read by the registry's compiler
        self._provenance: ProvenanceLedger | None = None
        if parent is not None:
            parent._children.append(self)

    @property
    def provenance(self) -> ProvenanceLedger:
        """The provenance ledger of this scope's agent run (made on first read).

        It records every result committed for this scope (and scopes nested in it)
        from the moment it is made; a nested scope reads the ledger of the nearest
        enclosing scope that has one. See :class:`ProvenanceLedger`.

        Raises:
            RegistrationError: the scope is closed and has no ledger yet.
        """
        for scope in reversed(self._chain):
            if scope._provenance is not None:
                return scope._provenance
        registry = self._registry
        ledger = self._provenance = ProvenanceLedger(
            self.on_result, lambda execution: registry.get(execution.name, execution.agent)
        )
        return ledger

    def existing_provenance(self) -> ProvenanceLedger | None:
        """:attr:`provenance` when this run has a ledger already, else ``None`` (never
        makes one; a bridge trusts the user's messages only where one is kept)."""
        found = (scope._provenance for scope in reversed(self._chain))
        return next((ledger for ledger in found if ledger is not None), None)

    @property
    def registry(self) -> ToolRegistry:
        """The registry this scope belongs to."""
        return self._registry

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def restrict(
        self, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None
    ) -> Disposer:
        """Filter the tools this scope inherits (never its own registrations).

        ``allow`` keeps only the named tools, ``deny`` removes the named ones; several
        restrictions intersect and each is lifted by its own disposer. The lists are
        copied now; the filter applies to the live inherited layer, so a deny-only
        filter admits tools registered later while an allow-list excludes them.

        Raises:
            RegistrationError: both lists are absent, or a name is not a tool this scope
                currently inherits.
        """
        self._check_open()
        if allow is None and deny is None:
            raise RegistrationError(
                "tools.restrict({}) is a no-op: pass `allow` and/or `deny` "
                "(an empty filter is almost always a materialized-empty-config bug)"
            )
        allow_set = None if allow is None else frozenset(_names(allow, "allow"))
        deny_set = None if deny is None else frozenset(_names(deny, "deny"))
        inherited = self._inherited()
        named = (allow_set or frozenset()) | (deny_set or frozenset())
        unknown = sorted(n for n in named if n not in inherited)
        if unknown:
            known = ", ".join(sorted(inherited)) or "(none)"
            quoted = ", ".join(f'"{n}"' for n in unknown)
            noun = "tool" if len(unknown) == 1 else "tools"
            raise RegistrationError(
                f"tools.restrict() names unknown global {noun} {quoted}; known global tools: {known}"
            )
        restriction = _Restriction(allow_set, deny_set)
        registry = self._registry
        self._restrictions.append(restriction)
        registry._changed()
        registry._emit_change()

        def undo() -> None:
            if _remove(self._restrictions, restriction):
                registry._changed()
                registry._emit_change()

        disposer = Disposer(undo)
        self._owned.append(disposer)
        return disposer

    def close(self) -> None:
        """Undo everything registered through this scope, last first; close nested scopes.

        Every registration is undone even if a change listener raises on the way.

        Raises:
            Exception: the first error a change listener raised while undoing.
        """
        if self._closed:
            return
        errors: list[Exception] = []
        for child in tuple(reversed(self._children)):
            try:
                child.close()
            except Exception as exc:
                errors.append(exc)
        self._closed = True
        owned, self._owned = self._owned, []
        for disposer in reversed(owned):
            try:
                disposer()
            except Exception as exc:
                errors.append(exc)
        if self.parent is not None:
            _remove(self.parent._children, self)
        if errors:
            raise errors[0]

    def _check_open(self) -> None:
        if self._closed:
            raise RegistrationError("this scope is closed")

    def _inherited(self) -> dict[str, ToolDefinition]:
        return self._registry._tools if self.parent is None else self.parent._view()

    def _view(self) -> dict[str, ToolDefinition]:
        version = self._registry._version
        cache = self._view_cache
        if cache is not None and cache[0] == version:
            return cache[1]
        inherited = self._inherited()
        restrictions = self._restrictions
        if restrictions:
            view = {n: d for n, d in inherited.items() if all(r.admits(n) for r in restrictions)}
        else:
            view = dict(inherited)
        view.update(self._tools)
        self._view_cache = (version, view)
        return view

    def __repr__(self) -> str:
        return f"<ToolScope depth={len(self._chain)}{' closed' if self._closed else ''} at {id(self):#x}>"


def _names(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        raise RegistrationError(
            f"tools.restrict() {what} must be a list of tool names, not a string"
        )
    names = list(values)
    for n in names:
        if not isinstance(n, str):
            raise RegistrationError(
                f"tools.restrict() {what} must hold tool names (str), got {n!r}"
            )
    return names


def _check_definition(definition: object) -> None:
    if not isinstance(definition, ToolDefinition):
        raise RegistrationError(
            f"register() takes a ToolDefinition, got {type(definition).__name__}"
        )
    name = definition.name
    if not isinstance(name, str) or not name:
        raise RegistrationError("a tool name must be a non-empty string")
    if not isinstance(definition.description, str):
        raise RegistrationError(f'tool "{name}" description must be a string')
    if not isinstance(definition.parameters, dict):
        raise RegistrationError(f'tool "{name}" parameters must be a JSON Schema object (a dict)')
    if not callable(definition.execute):
        raise RegistrationError(f'tool "{name}" execute must be callable')
    problem = option_problem(definition)
    if problem is not None:
        raise RegistrationError(f'tool "{name}" {problem}')


def _remove(items: list[Any], item: object) -> bool:
    for i, candidate in enumerate(items):
        if candidate is item:
            del items[i]
            return True
    return False


def counters(registry: ToolRegistry) -> Counters:
    """The registry's own counters (a batch adds its phase times and abandoned calls)."""
    return registry._stats
