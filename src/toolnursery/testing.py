"""Helpers for testing your own tools and policies against a real :class:`ToolRegistry`.

Fakes, not mocks: every helper here is a small, real implementation of the interface it
stands in for, so a test exercises the same pipeline production code does.

- :func:`tool_from_function` — a raw :class:`ToolDefinition` from a plain function.
- :func:`make_input` — a :class:`ToolExecutionInput` with sensible defaults.
- :class:`PhaseRecorder` — pass-through listeners that record which phases each call
  reached, as ``(phase, call_id)`` tuples.
- :class:`ScriptedApproval` — an :class:`ApprovalService` answering from a script and
  recording every :class:`ApprovalRequest` it receives.

Example::

    from toolnursery import ToolRegistry
    from toolnursery.testing import PhaseRecorder, make_input, tool_from_function

    async def test_echo() -> None:
        registry = ToolRegistry()
        registry.register(tool_from_function(lambda args: args["text"], "echo"))
        recorder = PhaseRecorder()
        recorder.install(registry)
        result = await registry.execute(make_input("echo", {"text": "hi"}, call_id="c1"))
        assert result.content[0].text == "hi"
        assert recorder.phases_for("c1") == ["pre", "execute", "post", "result"]
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

from ._core._bodies import is_async
from ._core._content import ToolExecutionResult
from ._core._decisions import PostToolDecision, PreToolDecision
from ._core._execution import (
    ApprovalOutcome,
    ApprovalRequest,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRunContext,
)
from ._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._core._signal import CancelSignal
from ._pipeline._registry import Disposer, ToolRegistry, ToolScope
from ._tools._definition import ToolDefinition

__all__ = [
    "Phase",
    "PhaseRecorder",
    "ScriptedApproval",
    "make_input",
    "tool_from_function",
]

Phase: TypeAlias = Literal["pre", "execute", "post", "result"]
"""A pipeline phase a :class:`PhaseRecorder` can see."""

_DEFAULT_PARAMETERS: Final[Mapping[str, Any]] = {"type": "object"}
_call_ids = itertools.count(1)


def tool_from_function(
    fn: Callable[..., Any],
    name: str | None = None,
    *,
    parallel: bool = False,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> ToolDefinition:
    """Make a raw :class:`ToolDefinition` from a plain or ``async`` function.

    The function takes ``(args, ctx)`` or just ``(args)`` and returns what a tool body
    may return (a ``str``, content blocks or a :class:`ToolReturn`). An ``async def``
    runs in the calling task; a plain ``def`` runs in a worker thread, as any sync
    tool body does. Arguments are not validated (a raw definition, ``validate=False``).

    Args:
        fn: the body.
        name: the tool name; defaults to ``fn.__name__``.
        parallel: declare every call concurrency-safe (the classifier returns ``True``);
            otherwise the tool declares no classifier and its calls are exclusive.
        description: the model-facing description; defaults to the first line of
            ``fn``'s docstring, or ``""``.
        parameters: the JSON Schema to project; defaults to ``{"type": "object"}``.

    Returns:
        A definition ready for :meth:`ToolRegistry.register`.

    Raises:
        TypeError: ``fn`` takes neither one nor two positional arguments, or no name
            was given and ``fn`` has none (a lambda).
    """
    tool_name = name if name is not None else getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise TypeError("tool_from_function() needs a name= for a function without one")
    if description is None:
        doc = inspect.getdoc(fn)
        description = doc.strip().splitlines()[0] if doc else ""
    body = _adapt(fn, tool_name)
    return ToolDefinition(
        tool_name,
        description,
        dict(parameters if parameters is not None else _DEFAULT_PARAMETERS),
        body,
        is_concurrency_safe=_always_parallel if parallel else None,
        validate=False,
    )


def _always_parallel(args: Any) -> bool:
    return True


def _adapt(fn: Callable[..., Any], tool_name: str) -> Callable[[Any, ToolRunContext], Any]:
    arity = _positional_arity(fn)
    if arity not in (1, 2):
        raise TypeError(
            f'tool_from_function("{tool_name}") takes a function of (args) or (args, ctx); '
            f"this one takes {arity} positional arguments"
        )
    body_is_async = is_async(fn)
    if arity == 2:
        return fn
    if body_is_async:

        async def async_body(args: Any, ctx: ToolRunContext) -> Any:
            return await fn(args)

        return async_body

    def sync_body(args: Any, ctx: ToolRunContext) -> Any:
        return fn(args)

    return sync_body


def _positional_arity(fn: Callable[..., Any]) -> int:
    """2 if ``fn`` can take ``(args, ctx)``, 1 if only ``(args)``, else how many it needs."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return 2
    total = required = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return 2 if required <= 2 else required
        if parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            total += 1
            if parameter.default is inspect.Parameter.empty:
                required += 1
    if required > 2:
        return required
    if total >= 2:
        return 2
    return total


def make_input(
    name: str,
    arguments: Any = None,
    *,
    call_id: str | None = None,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    parent: ToolExecutionToken | None = None,
) -> ToolExecutionInput:
    """Build a :class:`ToolExecutionInput` for :meth:`ToolRegistry.execute`.

    Args:
        name: the tool name.
        arguments: the parsed arguments; ``None`` means ``{}``.
        call_id: the call id; defaults to a fresh ``"call-<n>"`` (unique per process).
        signal: the caller's signal; defaults to a fresh, never-fired one.
        agent: the scope the call runs for.
        parent: the enclosing execution's token, for nested dispatches.

    Returns:
        The input.
    """
    return ToolExecutionInput(
        call_id if call_id is not None else f"call-{next(_call_ids)}",
        name,
        {} if arguments is None else arguments,
        signal if signal is not None else CancelSignal(),
        agent,
        parent,
    )


class PhaseRecorder:
    """Pass-through listeners that record the phases each call reached.

    :meth:`install` registers a pre-execute listener, an execute wrapper, a
    post-execute listener and a result observer on a registry or a scope (a scope's
    recorder sees only that scope's calls). Each appends ``(phase, call_id)`` to
    :attr:`phases` and delegates with ``next()``, so it never changes an outcome.

    Attributes:
        phases: every ``(phase, call_id)`` seen, in order.
        results: the final results the observer received, in order.
    """

    def __init__(self) -> None:
        self.phases: list[tuple[Phase, str]] = []
        self.results: list[ToolExecutionResult] = []

    def install(self, owner: ToolRegistry | ToolScope, *, prepend: bool = True) -> Disposer:
        """Register the four recording listeners on ``owner``.

        Args:
            owner: the registry (sees every call) or a scope (sees its own calls).
            prepend: register the waterfall listeners first, so they record a phase even
                when a later listener short-circuits it (the default).

        Returns:
            One :class:`Disposer` that removes all four listeners.
        """
        disposers = (
            owner.on_pre_execute(self._pre, prepend=prepend),
            owner.on_execute(self._execute, prepend=prepend),
            owner.on_post_execute(self._post, prepend=prepend),
            owner.on_result(self._result),
        )

        def undo() -> None:
            for dispose in reversed(disposers):
                dispose()

        return Disposer(undo)

    def phases_for(self, call_id: str) -> list[Phase]:
        """The phases one call reached, in order (e.g. ``["pre", "execute", "post", "result"]``)."""
        return [phase for phase, seen in self.phases if seen == call_id]

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self.phases.clear()
        self.results.clear()

    async def _pre(
        self, execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        self.phases.append(("pre", execution.call_id))
        return await next_()

    async def _execute(
        self,
        execution: ToolDispatchExecution,
        next_: Callable[[], Awaitable[ToolExecutionResult]],
    ) -> ToolExecutionResult:
        self.phases.append(("execute", execution.call_id))
        return await next_()

    async def _post(
        self,
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        self.phases.append(("post", execution.call_id))
        return await next_()

    def _result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        self.phases.append(("result", execution.call_id))
        self.results.append(result)


class ScriptedApproval:
    """An :class:`ApprovalService` that answers from a script.

    With a sequence, the n-th request gets the n-th outcome. With a mapping, a request
    is answered by the entry for its call id, else the entry for its tool name. When
    the script has no answer, ``default`` is used; without a default the request
    raises :class:`LookupError`, which the pipeline turns into an error result (a test
    sees it in the result text rather than a silent denial).

    Args:
        outcomes: the script.
        default: the answer when the script has none.

    Attributes:
        requests: every :class:`ApprovalRequest` received, in order.
    """

    def __init__(
        self,
        outcomes: Sequence[ApprovalOutcome] | Mapping[str, ApprovalOutcome] = (),
        *,
        default: ApprovalOutcome | None = None,
    ) -> None:
        self._by_key: Mapping[str, ApprovalOutcome] | None
        self._queue: list[ApprovalOutcome]
        if isinstance(outcomes, Mapping):
            self._by_key = dict(outcomes)
            self._queue = []
        else:
            if isinstance(outcomes, str):
                raise TypeError("ScriptedApproval() takes a list of outcomes, not one string")
            self._by_key = None
            self._queue = list(outcomes)
        self._default = default
        self.requests: list[ApprovalRequest] = []

    @property
    def remaining(self) -> list[ApprovalOutcome]:
        """The sequence outcomes not yet used (empty for a mapping script)."""
        return list(self._queue)

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """Record ``request`` and answer it from the script.

        Raises:
            LookupError: the script has no answer and there is no default.
        """
        self.requests.append(request)
        outcome = self._answer(request)
        if outcome is None:
            raise LookupError(
                f'ScriptedApproval has no outcome for call "{request.call_id}" '
                f'(tool "{request.tool_name}")'
            )
        return outcome

    def _answer(self, request: ApprovalRequest) -> ApprovalOutcome | None:
        if self._by_key is not None:
            by_key = self._by_key
            if request.call_id in by_key:
                return by_key[request.call_id]
            return by_key.get(request.tool_name, self._default)
        if self._queue:
            return self._queue.pop(0)
        return self._default


_fixup_module_metadata(__name__, __all__)
