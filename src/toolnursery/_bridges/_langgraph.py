"""A LangGraph node that runs an AI message's tool calls as one toolnursery batch.

:class:`ToolBatchNode` takes the state ``langgraph.prebuilt.ToolNode`` takes (a list
of messages, a state with a ``messages`` key, or a list of tool-call dicts) and
returns what it returns (``ToolMessage``\\s with ``tool_call_id``, ``name`` and
``status``, in model order). The calls run as one batch of the registry on the
``toolnursery.aio`` host of the running loop, so resource keys, barriers,
``max_parallel``, model-order commits, every policy and the recorder apply as in
any batch. Each result is written to LangGraph's custom stream as it commits.
Cancelling the node's task aborts the batch (started calls drain, the rest get
``ABORTED_BEFORE_DISPATCH``) before ``CancelledError`` propagates.

``Ask`` decisions become LangGraph interrupts through :class:`InterruptApproval`, the
registry's approval service: the first unanswered ``Ask`` aborts the batch and the
node raises LangGraph's interrupt; on resume the node runs again from its start (as
every LangGraph node does) and the answered ``Ask`` takes the resume value.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Callable
from typing import Any

import msgspec
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.runtime import get_runtime
from langgraph.types import interrupt

from .._aio._host import Job, host_for, wait_job
from .._batch._recorder import ToolCallRecorder
from .._batch._scheduler import open_tool_batch, run_tool_calls
from .._core._content import (
    AudioContent,
    ImageContent,
    TextContent,
    ToolCall,
    ToolExecutionResult,
)
from .._core._execution import ApprovalOutcome, ApprovalRequest
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from ._langchain import to_langchain

__all__ = ["STREAM_KEY", "InterruptApproval", "ToolBatchNode", "tool_message"]

STREAM_KEY = "toolnursery"
"""The key of the custom-stream chunks the node writes: ``{STREAM_KEY: ToolMessage}``."""

_CONTEXT = object()
"""The default of ``deps``: the graph's runtime context."""

_INTERRUPTED = "interrupted: a tool call waits for a human (LangGraph interrupt)"
_APPROVED = frozenset({"approve", "approved", "allow", "allowed-once", "yes"})


class _NodeRun:
    """One run of the node, as the approval service sees it from the batch's tasks."""

    __slots__ = ("context", "interrupt", "job")

    def __init__(self, context: contextvars.Context, job: Job[Any]) -> None:
        self.context = context
        self.job = job
        self.interrupt: GraphInterrupt | None = None


_RUN: contextvars.ContextVar[_NodeRun | None] = contextvars.ContextVar(
    "toolnursery.langgraph.run", default=None
)


class InterruptApproval:
    """An approval service that asks through LangGraph's ``interrupt()``.

    Give it to the registry (``ToolRegistry(approval=InterruptApproval())``) and run
    the calls with an agent scope through :class:`ToolBatchNode` in a graph compiled
    with a checkpointer. An ``Ask`` then interrupts the graph with
    ``{"tool": name, "call_id": id, "reason": reason}``; resume it with
    ``Command(resume=True)`` (or ``"approve"``) to run the call, anything else
    rejects it. On resume the node runs its batch again from the start, as LangGraph
    re-runs an interrupted node: calls that ran before the interrupt run again
    (a barrier, or a call dispatched before the ``Ask`` was reached), so make such
    tools idempotent. Outside a :class:`ToolBatchNode` run the answer is
    ``"unavailable"``.
    """

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """Interrupt the graph for ``request`` (or take the resume value of a re-run)."""
        run = _RUN.get()
        if run is None:
            return "unavailable"
        payload = {"tool": request.tool_name, "call_id": request.call_id, "reason": request.reason}
        try:
            answer = run.context.run(interrupt, payload)
        except GraphInterrupt as exc:
            if run.interrupt is None:
                run.interrupt = exc
            run.job.abort(_INTERRUPTED)
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


class ToolBatchNode:
    """A drop-in for ``langgraph.prebuilt.ToolNode`` that runs the calls as one batch.

    Example::

        graph.add_node("tools", ToolBatchNode(registry))

    The node reads the last ``AIMessage`` of the state (or a list of tool-call
    dicts), runs its tool calls as one batch of ``registry`` and returns one
    ``ToolMessage`` per call in model order: ``[...]`` for a list input, else
    ``{messages_key: [...]}``. Unknown tools, invalid arguments, denials and
    failures are ``status="error"`` messages with toolnursery's one-line text.

    Args:
        registry: the registry whose tools, policies and hooks run the calls.
        agent: the agent scope the calls run for (default: the registry's view).
        max_parallel: at most this many bodies at once.
        recorder: the batch's recorder (the durable log).
        deps: what tools see as ``ctx.deps``; by default the graph run's context
            (``graph.ainvoke(..., context=...)``).
        resume_from: a log (a :class:`JsonlRecorder` file) to resume the batch from:
            calls it shows committed are not run again (results are then
            streamed when the batch ends).
        messages_key: the state key of the messages.
        stream: write each ``ToolMessage`` to LangGraph's custom stream as it
            commits, as ``{"toolnursery": message}`` (``stream_mode="custom"``).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        agent: ToolScope | None = None,
        max_parallel: int = 10,
        recorder: ToolCallRecorder | None = None,
        deps: Any = _CONTEXT,
        resume_from: str | os.PathLike[str] | None = None,
        messages_key: str = "messages",
        stream: bool = True,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise TypeError(f"ToolBatchNode needs a ToolRegistry, not {type(registry).__name__}")
        self.registry = registry
        self.agent = agent
        self.max_parallel = max_parallel
        self.recorder = recorder
        self.deps = deps
        self.resume_from = resume_from
        self.messages_key = messages_key
        self.stream = stream
        self.__name__ = "tools"

    @property
    def tools(self) -> list[Any]:
        """The registry's tools as LangChain tools, to bind to the chat model."""
        return to_langchain(self.registry, agent=self.agent)

    async def __call__(self, input: Any) -> Any:
        """Run the tool calls of ``input``; see the class docstring.

        Raises:
            ValueError: the input holds no messages, or no ``AIMessage``.
            asyncio.CancelledError: the node's task was cancelled (after the batch
                aborted and drained).
            GraphInterrupt: an ``Ask`` was sent to the human (see
                :class:`InterruptApproval`).
        """
        calls, as_list = self._parse(input)
        writer, context = _runtime_parts(self.stream)
        deps = context if self.deps is _CONTEXT else self.deps
        messages = await self._run(calls, deps, writer)
        return messages if as_list else {self.messages_key: messages}

    async def _run(
        self, calls: list[ToolCall], deps: Any, writer: Callable[[Any], None] | None
    ) -> list[ToolMessage]:
        loop = asyncio.get_running_loop()
        host = await host_for(loop)
        job: Job[None] = Job(loop, CancelSignal())
        node_run = _NodeRun(contextvars.copy_context(), job)
        messages: list[ToolMessage] = []
        registry, agent, recorder = self.registry, self.agent, self.recorder
        max_parallel, resume_from = self.max_parallel, self.resume_from

        async def run() -> None:
            _RUN.set(node_run)  # the batch's tasks start in copies of this context
            if resume_from is not None:
                results = await run_tool_calls(
                    registry,
                    calls,
                    signal=job.signal,
                    agent=agent,
                    max_parallel=max_parallel,
                    recorder=recorder,
                    resume_from=resume_from,
                    deps=deps,
                )
                for call, result in zip(calls, results, strict=True):
                    messages.append(tool_message(call, result))
                    if writer is not None:
                        writer({STREAM_KEY: messages[-1]})
                return
            async with open_tool_batch(
                registry,
                signal=job.signal,
                agent=agent,
                max_parallel=max_parallel,
                recorder=recorder,
                deps=deps,
            ) as batch:
                job.on_abort = batch.close
                for call in calls:
                    batch.submit(call)
                batch.close()
                async for call, result in batch:
                    message = tool_message(call, result)
                    messages.append(message)
                    if writer is not None:
                        writer({STREAM_KEY: message})

        host.spawn(job, run)
        await wait_job(job)
        if node_run.interrupt is not None:
            raise node_run.interrupt
        return messages

    def _parse(self, input: Any) -> tuple[list[ToolCall], bool]:
        if isinstance(input, list) and input and _is_tool_call(input[-1]):
            return [_call(item) for item in input], False
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return [_call(input["tool_call"])], False
        as_list = isinstance(input, list)
        if as_list:
            messages = input
        elif isinstance(input, dict):
            messages = input.get(self.messages_key) or []
        else:
            messages = getattr(input, self.messages_key, None) or []
        if not messages:
            raise ValueError(f'ToolBatchNode: no messages in the input (key "{self.messages_key}")')
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return [_call(item) for item in message.tool_calls], as_list
        raise ValueError("ToolBatchNode: no AIMessage in the input")


def _is_tool_call(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") == "tool_call"


def _call(item: Any) -> ToolCall:
    args = item.get("args")
    return ToolCall(str(item.get("id") or ""), str(item.get("name") or ""), args or {})


def _runtime_parts(stream: bool) -> tuple[Callable[[Any], None] | None, Any]:
    """The run's stream writer (when streaming) and context; ``(None, None)`` outside a graph."""
    try:
        runtime = get_runtime()
    except (RuntimeError, KeyError):  # called outside a graph run
        return None, None
    if runtime is None:
        return None, None
    return (runtime.stream_writer if stream else None), runtime.context
