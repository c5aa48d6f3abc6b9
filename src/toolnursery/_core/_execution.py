"""The views of one call that the pipeline hands to policy, wrappers and the body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias

import msgspec

from ._asking import Elicitation, Sample, elicit, sample
from ._content import HookContext
from ._progress import LogLevel, Reported, report_log, report_progress
from ._provenance import ProvenanceFinding, Sink
from ._scope import AgentScope
from ._signal import CancelSignal

if TYPE_CHECKING:
    # A default (PEP 696) for type checkers only: an unparametrised ``ToolRunContext``
    # reads as ``ToolRunContext[Any]``; at run time a plain TypeVar does.
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=Any, covariant=True)
else:
    from typing import TypeVar

    DepsT = TypeVar("DepsT", covariant=True)

__all__ = [
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalService",
    "ToolDispatchExecution",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionToken",
    "ToolRunContext",
    "dispatch_view",
    "record_of",
]


class ToolExecutionToken:
    """Opaque identity of one execution; compare with ``is`` only."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<ToolExecutionToken {id(self):#x}>"


class ToolExecutionInput(msgspec.Struct, frozen=True):
    """What a caller hands to :meth:`ToolRegistry.execute`.

    Attributes:
        call_id: the model's call id.
        name: the tool name.
        arguments: parsed arguments; must be lossless JSON (they are snapshotted and
            frozen once; the caller's objects are never modified).
        signal: the caller-owned cancellation of this call (a fresh, never-fired
            signal when omitted).
        agent: the scope the call runs for (``None``: the global view).
        parent: the token of an enclosing execution, for nested dispatches.
    """

    call_id: str
    name: str
    arguments: Any
    signal: CancelSignal = msgspec.field(default_factory=CancelSignal)
    agent: AgentScope | None = None
    parent: ToolExecutionToken | None = None


class ToolExecution(msgspec.Struct, frozen=True):
    """One call inside the pipeline: the input's fields read once, plus a fresh token.

    ``arguments`` is the frozen snapshot (``msgspec.UNSET`` when the input's arguments
    were not lossless JSON); ``signal`` is always the caller's signal.
    """

    call_id: str
    name: str
    arguments: Any
    signal: CancelSignal
    agent: AgentScope | None
    parent: ToolExecutionToken | None
    token: ToolExecutionToken

    def provenance(self, argument: str, kind: Sink | None = None) -> tuple[ProvenanceFinding, ...]:
        """Where the values of one of this call's arguments were seen before the call.

        One finding per text inside the argument (per identifier inside a ``content``
        argument): its origin — the user's request, their own identifier, a declared
        record field of a result, the only value of its kind in a source the request
        names, a fragment of a result's text, or unseen — with the
        source call and the JSON path. Read from the call's scope's ledger
        (:attr:`ToolScope.provenance`); only results of earlier batches count.

        Args:
            argument: the argument's name.
            kind: how to compare its values (default: its declared sink kinds, else
                ``party``).

        Raises:
            ValueError: the call has no scope (provenance is kept per scope).
            KeyError: the call has no such argument.
        """
        agent = self.agent
        if agent is None:
            raise ValueError(
                f'tool "{self.name}" ({self.call_id}) runs for no scope: provenance is kept '
                "per scope (ToolScope.provenance)"
            )
        found: tuple[ProvenanceFinding, ...] = agent.provenance.explain(self, argument, kind)
        return found


class ToolRunContext(Generic[DepsT]):
    """What a tool body receives beside its arguments: the interface bodies annotate with.

    The execution's fields, the signal the body runs under (the caller's; or one
    derived from it under a deadline or a wrapper's replacement signal), the batch id
    and idempotency key, the run's dependencies (:attr:`deps`, typed by the parameter:
    ``ToolRunContext[MyDeps]``), :meth:`defer_context`, progress and log reports, and
    questions to the user or the client's model (:meth:`elicit`, :meth:`sample`).

    The pipeline hands each attempt of a body a small context object of its own (a
    subclass; a retry's next attempt gets a fresh one), which shows the call and nothing
    of the pipeline's bookkeeping. ``ToolRunContext(execution, signal, deferred)`` makes a
    standalone one — to run a body by hand or in a test — whose :meth:`defer_context`
    appends to ``deferred`` and whose :attr:`deps` is ``deps``.
    """

    __slots__ = ()

    def __new__(
        cls,
        execution: ToolExecution,
        signal: CancelSignal,
        deferred: list[HookContext],
        deps: Any = None,
    ) -> ToolRunContext[Any]:
        # The interface itself makes a standalone context (as ``pathlib.Path(...)`` made a
        # ``PosixPath``); the pipeline makes its contexts without this call.
        return object.__new__(_StandaloneRunContext if cls is ToolRunContext else cls)

    @property
    def execution(self) -> ToolExecution:
        """The frozen execution this body runs for."""
        raise NotImplementedError

    @property
    def signal(self) -> CancelSignal:
        """The signal the body runs under (read-only; poll it from a sync body)."""
        raise NotImplementedError

    @property
    def deps(self) -> DepsT:
        """The dependencies the run was given (``deps=`` of ``run_tool_calls``,
        ``open_tool_batch`` or ``registry.execute``); ``None`` when it was given none."""
        raise NotImplementedError

    @property
    def call_id(self) -> str:
        """The model's call id."""
        return self.execution.call_id

    @property
    def name(self) -> str:
        """The tool name."""
        return self.execution.name

    @property
    def arguments(self) -> Any:
        """The frozen argument snapshot."""
        return self.execution.arguments

    @property
    def agent(self) -> AgentScope | None:
        """The scope the call runs for."""
        return self.execution.agent

    @property
    def parent(self) -> ToolExecutionToken | None:
        """The enclosing execution's token, if any."""
        return self.execution.parent

    @property
    def token(self) -> ToolExecutionToken:
        """This execution's token (pass it as ``parent`` to nested dispatches)."""
        return self.execution.token

    @property
    def batch_id(self) -> str | None:
        """The id of the batch this call runs in (``None`` under ``registry.execute()``)."""
        return None

    @property
    def idempotency_key(self) -> str:
        """A stable key of this call for exactly-once effects of the body's own.

        ``"<batch id>:<call id>"`` in a batch (a resumed batch keeps its id, so a
        call keeps its key); the call id under ``registry.execute()``.
        """
        batch_id = self.batch_id
        call_id = self.call_id
        return call_id if batch_id is None else f"{batch_id}:{call_id}"

    def defer_context(self, context: HookContext) -> None:
        """Attach ``context`` to this call's result, after the result reaches the loop.

        Contexts keep their order (deferred ones first, then a wrapper's, then
        post-execute's) and reach the model only after the whole batch's results.

        Raises:
            TypeError: ``context`` is not a :class:`HookContext`.
        """
        raise NotImplementedError

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Reported:
        """Report this call's progress to whoever runs it (see :func:`reporting`).

        In order, synchronously; served over MCP it becomes a
        ``notifications/progress`` when the client asked for progress. The report is
        made by the call itself; what it returns may be awaited, as fastmcp's
        ``await ctx.report_progress(...)`` is written, and awaiting it does nothing.
        """
        return report_progress(progress, total, message, call_id=self.call_id)

    def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> Reported:
        """Send a log message from this call (served over MCP: ``notifications/message``);
        made at once, and awaitable like :meth:`report_progress`'s."""
        return report_log(level, data, logger=logger, call_id=self.call_id)

    async def elicit(
        self, message: str, requested_schema: Mapping[str, Any], *, key: str | None = None
    ) -> Elicitation:
        """Ask the user a question, and wait for the answer: :func:`elicit`.

        Served over MCP at 2026-07-28, a call that asks runs again from the start
        once the client answers; this time the question returns the answer.

        Args:
            message: the question, for a person.
            requested_schema: the JSON Schema of the answer (an object of
                plain-typed properties, as MCP's form elicitation allows).
            key: the question's name, unique within the call (default: its
                position among the call's questions).

        Raises:
            ElicitationUnavailableError: nobody can be asked (a client that did not
                declare elicitation, a call not served over MCP).
            TypeError: ``message`` is not a str or ``requested_schema`` not a mapping.
        """
        return await elicit(message, requested_schema, key=key)

    async def sample(
        self,
        prompt: str,
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        key: str | None = None,
    ) -> Sample:
        """Ask the client's model (MCP sampling), and wait for the answer: :func:`sample`.

        Args:
            prompt: the user message to send.
            max_tokens: the most tokens the answer may have.
            system_prompt: a system prompt, if any.
            key: the question's name, unique within the call.

        Raises:
            ElicitationUnavailableError: nobody can be asked (a client that did not
                declare sampling, a call not served over MCP).
            TypeError: ``prompt`` is not a str.
            ValueError: ``max_tokens`` is not a positive int.
        """
        return await sample(prompt, max_tokens=max_tokens, system_prompt=system_prompt, key=key)


class _StandaloneRunContext(ToolRunContext[Any]):
    """A run context made by hand: ``ToolRunContext(execution, signal, deferred, deps)``."""

    __slots__ = ("_deferred", "_deps", "_execution", "_signal")

    def __init__(
        self,
        execution: ToolExecution,
        signal: CancelSignal,
        deferred: list[HookContext],
        deps: Any = None,
    ) -> None:
        self._execution = execution
        self._signal = signal
        self._deferred = deferred
        self._deps = deps

    @property
    def deps(self) -> Any:
        return self._deps

    @property
    def execution(self) -> ToolExecution:
        return self._execution

    @property
    def signal(self) -> CancelSignal:
        return self._signal

    def defer_context(self, context: HookContext) -> None:
        if not isinstance(context, HookContext):
            raise TypeError(f"defer_context() takes a HookContext, not {type(context).__name__}")
        self._deferred.append(context)


class ToolDispatchExecution:
    """The view a ``on_execute`` wrapper gets: like the execution, but ``signal`` is settable.

    A wrapper may replace ``signal`` (e.g. with a deadline) for the duration of its
    ``next()``; it cannot remove it. The registry fuses any replacement with the
    caller's signal before the body runs.
    """

    __slots__ = ("_execution", "_record", "_signal")

    def __init__(self, execution: ToolExecution) -> None:
        self._execution: ToolExecution | None = execution
        self._signal = execution.signal
        self._record: Any = None  # the pipeline's record of the call (internal)

    @property
    def execution(self) -> ToolExecution:
        """The frozen execution of the call."""
        execution = self._execution
        if execution is None:
            execution = self._execution = self._record.execution
        assert execution is not None
        return execution

    @property
    def signal(self) -> CancelSignal:
        """The signal the next wrapper or the body will run under."""
        return self._signal

    @signal.setter
    def signal(self, value: CancelSignal) -> None:
        if not isinstance(value, CancelSignal):
            raise TypeError(
                "ToolDispatchExecution.signal must be a CancelSignal; it can be replaced, not removed"
            )
        self._signal = value

    @property
    def call_id(self) -> str:
        """The model's call id."""
        record = self._record
        return self.execution.call_id if record is None else record.call_id

    @property
    def name(self) -> str:
        """The tool name."""
        record = self._record
        return self.execution.name if record is None else record.name

    @property
    def arguments(self) -> Any:
        """The frozen argument snapshot."""
        record = self._record
        return self.execution.arguments if record is None else record.arguments

    @property
    def agent(self) -> AgentScope | None:
        """The scope the call runs for."""
        record = self._record
        return self.execution.agent if record is None else record.agent

    @property
    def parent(self) -> ToolExecutionToken | None:
        """The enclosing execution's token, if any."""
        record = self._record
        return self.execution.parent if record is None else record.parent

    @property
    def token(self) -> ToolExecutionToken:
        """This execution's token."""
        return self.execution.token


def dispatch_view(record: Any) -> ToolDispatchExecution:
    """The wrappers' view of a pipeline record (internal): its execution made when read."""
    view = _new_view(ToolDispatchExecution)
    view._execution = None
    view._signal = record.caller
    view._record = record
    return view


def record_of(view: ToolDispatchExecution) -> Any:
    """The pipeline's record behind a wrappers' view, or ``None`` (a view made by hand)."""
    return view._record


_new_view = object.__new__

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
"""An approval service's answer; only ``"allowed-once"`` lets the call run."""


class ApprovalRequest(msgspec.Struct, frozen=True):
    """What an :class:`ApprovalService` is asked: who wants to run what, and why.

    Attributes:
        agent: the scope the call runs for.
        tool_name: the tool.
        call_id: the model's call id.
        reason: the ``Ask``'s reason.
        signal: the call's signal (fires when the call is aborted).
        provenance: the ``Ask``'s findings about the call's sink arguments (a
            provenance policy's: argument, value, origin, source call); ``()`` otherwise.
    """

    agent: AgentScope
    tool_name: str
    call_id: str
    reason: str | None
    signal: CancelSignal
    provenance: tuple[ProvenanceFinding, ...] = ()


class ApprovalService(Protocol):
    """Answers ``Ask`` decisions (a UI prompt, a policy engine, a test script)."""

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """Return the outcome for one call."""
        ...
