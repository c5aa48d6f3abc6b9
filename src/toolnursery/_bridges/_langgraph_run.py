"""The pieces of a ToolBatchNode run that its tool bodies and the approval service see.

A :class:`NodeRun` is one run of the node (or of the gathered ``Send`` tasks of one AI
message): each call's ``ToolRuntime`` and context, the LangChain tools' own answers,
and what must leave the node (interrupts, errors ``handle_tool_errors`` left
unhandled). :data:`CURRENT_RUN` carries it into the batch's tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import msgspec
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command, interrupt

from .._aio._api import open_tool_batch as aio_open_tool_batch
from .._aio._api import run_tool_calls as aio_run_tool_calls
from .._core._arguments import NotArguments, kind_of
from .._core._content import (
    AudioContent,
    ImageContent,
    TextContent,
    ToolCall,
    ToolExecutionResult,
)
from .._core._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH
from .._core._execution import ApprovalOutcome, ApprovalRequest
from .._core._signal import CancelSignal
from ._langchain import LangChainToolError

__all__ = [
    "CURRENT_RUN",
    "NOT_KEPT",
    "committer",
    "native_batch",
    "STREAM_KEY",
    "GATHER_TURNS",
    "Arrival",
    "Contexts",
    "Gathering",
    "InputType",
    "InterruptApproval",
    "NodeRun",
    "answered_by_body",
    "call_arguments",
    "in_asyncio",
    "is_interrupt",
    "last_ai",
    "made_up_id",
    "messages_of",
    "no_writer",
    "summary",
    "tool_message",
]

STREAM_KEY = "toolnursery"
"""The key of the custom-stream chunks the node writes: ``{STREAM_KEY: ToolMessage}``."""

InputType = Literal["list", "dict", "tool_calls"]
"""The kinds of node input ``ToolNode`` tells apart (its outputs follow them)."""

_RAISED = "the node re-raises a tool's exception (handle_tool_errors left it unhandled)"
_APPROVED = frozenset({"approve", "approved", "allow", "allowed-once", "yes"})


class NodeRun:
    """One run of the node, as the tool bodies and the approval service see it."""

    __slots__ = (
        "abort",
        "contexts",
        "exceptions",
        "gathered",
        "input_type",
        "outputs",
        "runtimes",
        "unkept",
    )

    def __init__(
        self,
        input_type: InputType,
        runtimes: dict[str, ToolRuntime],
        contexts: dict[str, contextvars.Context] | None = None,
    ) -> None:
        self.input_type = input_type
        self.runtimes = runtimes
        context = contextvars.copy_context()
        self.contexts = contexts or Contexts(context)
        self.abort: Callable[[str], None] = lambda reason: None
        self.exceptions: dict[str, BaseException] = {}
        self.outputs: dict[str, Any] = {}
        self.unkept: set[str] = set()
        self.gathered = False

    def fail(self, call_id: str, exc: BaseException) -> None:
        """Call ``call_id`` raised what must leave the node: an interrupt lets the
        other calls finish, anything else aborts the batch (unless the calls are the
        ``Send`` tasks of one message: each of them fails or succeeds on its own)."""
        self.exceptions[call_id] = exc
        self.unkept.add(call_id)
        if not is_interrupt(exc) and not self.gathered:
            self.abort(_RAISED)

    def raised(self, call_ids: Sequence[str]) -> BaseException | None:
        """What the node raises for these calls: the first error that is not an
        interrupt, else every interrupt as one."""
        found = [self.exceptions[i] for i in call_ids if i in self.exceptions]
        for exc in found:
            if not is_interrupt(exc):
                return exc
        if len(found) > 1:  # every pending interrupt of the run goes to the human
            return GraphInterrupt(tuple(i for exc in found for i in exc.args[0]))
        return found[0] if found else None


def is_interrupt(exc: BaseException) -> bool:
    return type(exc) is GraphInterrupt


CURRENT_RUN: contextvars.ContextVar[NodeRun | None] = contextvars.ContextVar(
    "toolnursery.langgraph.run", default=None
)


class InterruptApproval:
    """An approval service that asks through LangGraph's ``interrupt()``.

    Give it to the registry (``ToolRegistry(approval=InterruptApproval())``) and run
    the calls with an agent scope through :class:`ToolBatchNode` in a graph compiled
    with a checkpointer. An ``Ask`` then interrupts the graph with
    ``{"tool": name, "call_id": id, "reason": reason}``; resume it with
    ``Command(resume=True)`` (or ``"approve"``) to run the call, anything else
    rejects it. The other calls of the batch run on; on resume the node runs again
    (as LangGraph re-runs an interrupted node), and the calls that committed are
    not run again (under ``create_react_agent``, LangGraph keeps each call's
    message; in a graph of your own, the node keeps them per thread in this
    process). Outside a :class:`ToolBatchNode` run the answer is ``"unavailable"``.
    """

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """Interrupt the graph for ``request`` (or take the resume value of a re-run)."""
        run = CURRENT_RUN.get()
        context = None if run is None else run.contexts.get(request.call_id)
        if run is None or context is None:
            return "unavailable"
        payload = {"tool": request.tool_name, "call_id": request.call_id, "reason": request.reason}
        try:
            answer = context.copy().run(interrupt, payload)
        except GraphInterrupt as exc:
            run.fail(request.call_id, exc)
            return "cancelled"
        return "allowed-once" if _approved(answer) else "rejected"


def _approved(answer: object) -> bool:
    return answer is True or (isinstance(answer, str) and answer in _APPROVED)


def tool_message(call: ToolCall, result: ToolExecutionResult) -> ToolMessage:
    """The ``ToolMessage`` of one result: its text (or blocks), ``status``, and the
    typed value (a tool with an output) as ``artifact``."""
    content: str | list[str | dict[Any, Any]]
    if all(isinstance(block, TextContent) for block in result.content):
        content = result.text
    else:
        content = [_block(block) for block in result.content]
    return ToolMessage(
        content=content,
        tool_call_id=call.id,
        name=call.name,
        status="error" if result.is_error else "success",
        artifact=result.structured_content,
    )


def _block(block: Any) -> dict[str, Any]:
    """A content block in LangChain's standard form; a block it has none for, as JSON text."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return {"type": kind, "base64": block.data, "mime_type": block.mime_type}
    return {"type": "text", "text": msgspec.json.encode(block).decode()}


class Contexts(dict[str, contextvars.Context]):
    """Every call's context, in a run that has one for all (the node's own)."""

    def __init__(self, context: contextvars.Context) -> None:
        super().__init__()
        self.context = context

    def get(self, key: str, default: Any = None) -> contextvars.Context:
        return self.context


GATHER_TURNS = 3
"""How many loop turns a gathering waits, after its last arrival, for another."""

Arrival = tuple[Any, ...]
"""One ``Send`` task's part: its call, input, config, runtime and context."""


class Gathering:
    """The ``Send`` tasks of one AI message's calls, meeting to run as one batch.

    LangGraph starts the tasks of a step one after another, before any of them runs,
    so the siblings arrive within a loop turn or two of the first. A task that joins
    awaits its own future; a task of the gathering's own (started by the first
    arrival) waits until every expected call has arrived, or until
    :data:`GATHER_TURNS` turns pass with no new one (a graph that sends only some of
    a message's calls, a sibling cancelled or failed before it arrived), closes the
    gathering (a later arrival starts a new one) and runs what arrived as one batch
    with ``run``, handing each task its call's output. A task cancelled while it
    waits leaves (its call too, if the batch has not started) and its
    ``CancelledError`` propagates; the others' batch goes on, and is cancelled (and
    awaited) only when no task waits for it any more.
    """

    __slots__ = ("arrivals", "closed", "expected", "message", "on_close", "run", "task", "waiting")

    def __init__(
        self,
        expected: tuple[str, ...],
        message: AIMessage,
        run: Callable[[list[Arrival]], Awaitable[dict[str, Any]]],
        on_close: Callable[[], None],
    ) -> None:
        self.expected = expected
        self.message = message  # held: the key is its id()
        self.run = run
        self.on_close = on_close
        self.arrivals: dict[str, Arrival] = {}
        self.waiting: dict[str, asyncio.Future[Any]] = {}
        self.closed = False
        self.task: asyncio.Task[None] | None = None

    def open_to(self, call_id: str) -> bool:
        """Whether the task of ``call_id`` may still join."""
        return not self.closed and call_id not in self.arrivals

    async def join(self, call_id: str, arrival: Arrival) -> Any:
        """Wait for the batch; this call's output (an exception to raise, or not)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.arrivals[call_id] = arrival
        self.waiting[call_id] = future
        if self.task is None:
            self.task = loop.create_task(self._collect())
        try:
            return await future
        except asyncio.CancelledError:
            del self.waiting[call_id]
            if not self.closed:
                del self.arrivals[call_id]
            task = self.task
            if not self.waiting and not task.done():
                task.cancel()  # nobody waits for the batch: it ends with its last task
                while not task.done():  # a repeated cancellation does not cut this short
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.wait({task})
            raise

    async def _collect(self) -> None:
        try:
            idle = 0
            while len(self.arrivals) < len(self.expected) and idle < GATHER_TURNS:
                seen = len(self.arrivals)
                await asyncio.sleep(0)
                idle = idle + 1 if len(self.arrivals) == seen else 0
        finally:
            self.closed = True
            self.on_close()
        ordered = [self.arrivals[i] for i in self.expected if i in self.arrivals]
        if not ordered:
            return
        try:
            outputs = await self.run(ordered)
        except Exception as exc:  # every waiting task raises it
            outputs = dict.fromkeys(self.waiting, exc)
        except BaseException:  # cancelled: so are the tasks still waiting, if any
            for future in self.waiting.values():
                future.cancel()
            raise
        for call_id, future in self.waiting.items():
            if not future.done():
                future.set_result(outputs[call_id])


def no_writer(chunk: Any) -> None:
    """The stream writer outside a graph: chunks go nowhere."""


def messages_of(state: Any, key: str) -> list[Any]:
    if isinstance(state, list):
        return state
    found = state.get(key) if isinstance(state, dict) else getattr(state, key, None)
    return list(found or [])


def answered_by_body(result: ToolExecutionResult) -> bool:
    """Whether the committed result is the LangChain tool's own answer (not a policy's)."""
    if result.error is None:
        return True
    return result.error.code == LangChainToolError.code


def summary(output: Any, call_id: str) -> tuple[str, bool]:
    """The text and error status the pipeline records for a LangChain tool's answer."""
    items = output if isinstance(output, list) else [output]
    for item in items:
        messages: list[Any] = [item]
        if isinstance(item, Command):
            update = item.update
            found = update.get("messages", []) if isinstance(update, dict) else update
            messages = list(found) if isinstance(found, list) else []
        for message in messages:
            if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
                text = message.content if isinstance(message.content, str) else str(message.content)
                return text, message.status == "error"
    return ("(a LangGraph Command)" if items else ""), False


def call_arguments(call: dict[str, Any]) -> Any:
    """A call's arguments: an object; a missing ``args`` is ``{}``; anything else is refused."""
    if "args" not in call:
        return {}
    args = call["args"]
    if isinstance(args, dict):
        return args
    return NotArguments(args, f'"args" must be an object, got {kind_of(args)}')


def made_up_id(index: int, taken: set[Any]) -> str:
    candidate, suffix = f"call_{index}", 0
    while candidate in taken:
        suffix += 1
        candidate = f"call_{index}_{suffix}"
    taken.add(candidate)
    return candidate


def last_ai(input: Any, key: str) -> AIMessage | None:
    """The AI message whose calls the input holds (a ``Send`` payload's state included)."""
    if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
        input = input.get("state")
    for message in reversed(messages_of(input, key)):
        if isinstance(message, AIMessage):
            return message
    return None


def in_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


NOT_KEPT = frozenset({TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH})
"""Error codes of calls that did not run to the end: they run again on resume."""

Commit = Callable[[ToolCall, ToolExecutionResult], None]


def committer(
    run: NodeRun, messages: dict[str, ToolMessage], writer: Callable[[Any], None] | None
) -> Commit:
    """What the node does with each committed call: its ``ToolMessage`` into
    ``messages`` (a LangChain tool's own answer stays in ``run.outputs`` unless a policy
    replaced it), aborted calls marked to run again, the stream chunk when streaming."""
    outputs = run.outputs

    def commit(call: ToolCall, result: ToolExecutionResult) -> None:
        output = outputs.get(call.id)
        if output is not None and not answered_by_body(result):
            del outputs[call.id]  # a policy replaced or blocked the tool's answer
            output = None
        messages[call.id] = tool_message(call, result)
        if result.error is not None and result.error.code in NOT_KEPT:
            run.unkept.add(call.id)  # aborted: it runs again on resume
        if writer is not None:
            writer({STREAM_KEY: output if isinstance(output, ToolMessage) else messages[call.id]})

    return commit


async def native_batch(
    registry: Any,
    run: NodeRun,
    calls: list[ToolCall],
    commit: Commit,
    streamed: bool,
    **options: Any,
) -> None:
    """Run ``calls`` as one batch on ``toolnursery.aio``'s asyncio driver (the caller
    checked that they can run there), committing each through ``commit``: after the
    batch when nothing streams, else as each commits."""
    signal = CancelSignal()
    run.abort = signal.cancel
    if not streamed:
        results = await aio_run_tool_calls(
            registry, calls, signal=signal, driver="asyncio", **options
        )
        for call, result in zip(calls, results, strict=True):
            commit(call, result)
        return
    async with aio_open_tool_batch(registry, signal=signal, driver="asyncio", **options) as batch:
        for call in calls:
            batch.submit(call)
        batch.close()
        async for call, result in batch:
            commit(call, result)
