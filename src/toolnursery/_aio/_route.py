"""Which driver runs a batch awaited from asyncio: the native asyncio driver, or trio.

The rule, per tool and per hook (the first that applies):

* A body declared with :func:`~toolnursery.aio.asyncio_tool`, a plain ``def`` body (run
  in a worker thread, or inline when declared ``nonblocking``), or no tool at all
  (``TOOL_NOT_FOUND``) runs on asyncio.
* An undeclared ``async def`` body is trio code (an ``async def`` does not say which
  loop it was written for, and toolnursery is trio-first; even one that never awaits
  may call trio's synchronous API): it needs trio.
* Anything marked with :func:`needs_trio` needs trio: a body, or a hook (listener,
  guard, execute wrapper, observer) that awaits trio itself; so do the retry policy
  (its backoff sleeps on trio's clock), a tool's ``max_concurrency`` limit (a trio
  capacity limiter) and a timeout policy that is not the view's only execute wrapper.
* Every other hook is loop-neutral: it runs on whichever driver runs the batch (a hook
  that only awaits ``next()`` does).

A batch runs on the asyncio driver when every tool it calls (``run_tool_calls``), or
every tool its view can call (``open_tool_batch``, whose calls are not known when it
opens), and every hook those calls see, runs on asyncio; otherwise it runs in the trio
guest run, as every batch did before. :func:`trio_reason` says why not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .._core._content import ToolCall
from .._pipeline._deadline import DeadlinePolicy
from .._pipeline._plan import UNDECIDED, Route, ToolPlan
from ._tool import is_asyncio_tool

if TYPE_CHECKING:
    from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = ["calls_reason", "needs_trio", "plan_reason", "trio_reason", "uses_trio"]

F = TypeVar("F")

_MARK: Final = "__toolnursery_needs_trio__"
_AWAIT: Final = Route.AWAIT
_STEP: Final = Route.STEP


def needs_trio(fn: F, /) -> F:
    """Mark a tool body or a hook as trio code: a batch that runs it from asyncio runs in
    the trio guest run (see ``docs/asyncio.md``). Returns ``fn`` itself.

    Raises:
        TypeError: ``fn`` cannot carry the mark (a built-in, say); wrap it in a ``def``.
    """
    try:
        setattr(fn, _MARK, True)
    except (AttributeError, TypeError):
        raise TypeError(
            f"needs_trio() cannot mark {type(fn).__name__} objects; wrap it in a def"
        ) from None
    return fn


def uses_trio(fn: object) -> bool:
    """Whether ``fn`` is marked with :func:`needs_trio`."""
    return getattr(fn, _MARK, False) is True


def plan_reason(plan: ToolPlan) -> str | None:
    """Why a call of ``plan`` needs trio, or ``None`` when it runs on asyncio (asked
    once per plan: a plan is compiled again when the registry changes)."""
    reason = plan.trio_reason
    if reason is UNDECIDED:
        reason = plan.trio_reason = _plan_reason(plan)
    return reason  # type: ignore[no-any-return]


def _plan_reason(plan: ToolPlan) -> str | None:
    definition = plan.definition
    if definition is not None:
        body = plan.body
        if uses_trio(body):
            return f'tool "{plan.name}" is marked needs_trio'
        route = plan.route
        if (route is _AWAIT or route is _STEP) and not is_asyncio_tool(body):
            return f'tool "{plan.name}" is an async def not declared with asyncio_tool'
        if plan.limiter is not None:
            return f'tool "{plan.name}" has a max_concurrency limit'
    hooks = plan.hooks
    for wrapper in hooks.execute:
        if type(wrapper) is DeadlinePolicy:
            return "a timeout policy is not the only execute wrapper"
        if uses_trio(wrapper):
            return f"execute wrapper {_name(wrapper)} needs trio"
    for group in (hooks.pre, hooks.guards, hooks.post, hooks.result):
        for hook in group:
            if uses_trio(hook):
                return f"hook {_name(hook)} needs trio"
    return None


def trio_reason(
    registry: ToolRegistry, agent: ToolScope | None, names: Iterable[str] | None
) -> str | None:
    """Why a batch of calls to ``names`` (``None``: every tool the view can call) needs
    trio, or ``None`` when it runs on the asyncio driver."""
    if names is None:
        names = [schema.name for schema in registry.schemas(agent)]
    plan_of = registry._plan
    last = None
    for name in names:
        if name == last:
            continue  # (a model's calls often repeat one tool; a plan asks once anyway)
        last = name
        reason = plan_reason(plan_of(name, agent))
        if reason is not None:
            return reason
    return None


def calls_reason(
    registry: ToolRegistry, agent: ToolScope | None, calls: Iterable[object]
) -> str | None:
    """:func:`trio_reason` of the :class:`ToolCall` values among ``calls`` (anything
    else the batch refuses itself)."""
    plan_of = registry._plan
    last = None
    for call in calls:
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            continue
        name = call.name
        if name == last:
            continue
        last = name
        reason = plan_reason(plan_of(name, agent))
        if reason is not None:
            return reason
    return None


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)
