"""A LangGraph ``ToolNode`` that runs an AI message's tool calls as one toolnursery batch.

:class:`ToolBatchNode` *is* a ``langgraph.prebuilt.ToolNode`` (a subclass), so it goes
wherever LangGraph takes one — ``create_react_agent(model, tools=node)``,
``graph.add_node("tools", node)``, ``node.invoke`` / ``node.ainvoke`` — and takes what
``ToolNode`` takes: LangChain tools or plain functions (plus toolnursery definitions),
or a whole :class:`ToolRegistry`. Same inputs (state, messages, tool-call dicts, the
``Send`` payloads of ``create_react_agent``), same outputs (``ToolMessage``\\s in model
order, ``Command``\\s as ``ToolNode`` combines them).

The calls run as one batch of the registry (resource keys, barriers,
``max_parallel``, model-order commits, every policy, the recorder): under
``ainvoke`` on ``toolnursery.aio``'s asyncio driver when the calls' tools and hooks
allow (else its trio guest run), in a ``trio.run`` of the calling thread under
``invoke``. A LangChain tool's body is ``ToolNode``'s own
execution (its injection of ``InjectedState``, ``InjectedStore``,
``InjectedToolCallId`` and ``ToolRuntime``, its ``handle_tool_errors``, its
``Command`` checks and its text) run inside the batch; an argument the model sent
for an injected parameter is refused before the tool runs. LangGraph's control-flow
exceptions (``interrupt()``, the ``GraphBubbleUp`` family) and errors
``handle_tool_errors`` leaves unhandled leave the node as they leave ``ToolNode``;
the calls that committed before an interrupt are kept (per thread, in this process)
and not run again when the graph resumes.

``Ask`` decisions become LangGraph interrupts through :class:`InterruptApproval`.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, cast

import trio
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, get_config_list
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime

from .._aio._host import HOST, Job, host_for, wait_job
from .._aio._route import trio_reason
from .._aio._tool import in_asyncio_task, run_on_host, runs_on_either_loop
from .._batch._recorder import ToolCallRecorder
from .._batch._scheduler import open_tool_batch, run_tool_calls
from .._core._content import ToolCall
from .._core._errors import ToolError
from .._core._json import thaw
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._langchain import (
    LangChainToolError,
    injected_names,
    langchain_parameters,
    one_line,
    refuse_injected,
    to_langchain,
)
from ._langgraph_run import (
    CURRENT_RUN,
    STREAM_KEY,
    Arrival,
    Gathering,
    InputType,
    InterruptApproval,
    NodeRun,
    call_arguments,
    committer,
    in_asyncio,
    is_interrupt,
    last_ai,
    made_up_id,
    messages_of,
    native_batch,
    no_writer,
    summary,
    tool_message,
)
from ._trust import trust_node_input

__all__ = ["STREAM_KEY", "InterruptApproval", "ToolBatchNode", "tool_message"]

_CONTEXT = object()
"""The default of ``deps``: the graph's runtime context."""

_DEFAULT_ERRORS = (ToolNode.__init__.__kwdefaults__ or {})["handle_tool_errors"]

_RESUMING = "__pregel_resuming"
"""LangGraph's configurable key marking the step a resume starts from."""
_KEPT_RUNS = 256
"""How many interrupted node runs keep their committed calls for the resume."""


def _has_id(call: dict[str, Any]) -> bool:
    return isinstance(call.get("id"), str) and bool(call["id"])


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("name") == b.get("name") and a.get("args") == b.get("args")


def _make_up_ids(calls: list[dict[str, Any]]) -> set[str]:
    """Give each call without an id one (``call_<index>``, never an id the calls already
    use); the ids made up."""
    missing = [i for i, call in enumerate(calls) if not _has_id(call)]
    if not missing:
        return set()
    taken = {call["id"] for call in calls if _has_id(call)}
    made: set[str] = set()
    for index in missing:
        calls[index]["id"] = made_up_id(index, taken)
        made.add(calls[index]["id"])
    return made


class ToolBatchNode(ToolNode):
    """LangGraph's ``ToolNode``, with the calls of each AI message run as one batch.

    Example::

        agent = create_react_agent(model, tools=ToolBatchNode([search, book]))

    ``tools`` is what ``ToolNode`` takes — LangChain tools and plain functions
    (made tools with LangChain's ``@tool``) — and toolnursery definitions, or a
    :class:`ToolRegistry` / agent :class:`ToolScope` whose tools, policies and hooks
    run the calls. The LangChain tools run as ``ToolNode`` runs them (injection,
    ``handle_tool_errors``, ``Command`` returns, its text), inside the batch;
    toolnursery tools answer with toolnursery's one-line texts, errors included.
    Unknown tools, invalid arguments (against the schema the model was shown), a
    model argument naming an injected parameter, and arguments that are not an
    object are ``status="error"`` messages and never reach a tool. A call without an
    id gets one (``call_0``...), written on the AI message too.

    Args:
        tools: LangChain tools, functions and definitions, or a registry or scope.
        name: the node's name (``ToolNode``'s).
        tags: the node's tags (``ToolNode``'s).
        handle_tool_errors: ``ToolNode``'s, applied to the LangChain tools' errors
            (a toolnursery tool's failure is always an error result).
        messages_key: the state key of the messages.
        wrap_tool_call: not supported (refused): wrap calls with the registry's
            ``on_execute`` wrappers.
        awrap_tool_call: not supported (refused), as ``wrap_tool_call``.
        agent: the agent scope the calls run for (default: the registry's view).
        max_parallel: at most this many bodies at once.
        recorder: the batch's recorder (the durable log).
        deps: what toolnursery tools see as ``ctx.deps``; by default the graph run's
            context (``graph.ainvoke(..., context=...)``).
        resume_from: a log (a :class:`JsonlRecorder` file) to resume the batch from:
            calls it shows committed are not run again.
        stream: also write each ``ToolMessage`` to LangGraph's custom stream as it
            commits, as ``{"toolnursery": message}`` (default off: the custom stream
            carries what the tools write, as under ``ToolNode``).

    Raises:
        TypeError: ``tools`` is none of these; ``wrap_tool_call`` /
            ``awrap_tool_call`` was given; ``handle_tool_errors`` was given to a node
            with no LangChain tools.
    """

    trust_user_messages = True  # False: its HumanMessages are not trusted in the scope's ledger

    def __init__(
        self,
        tools: ToolRegistry | ToolScope | Sequence[BaseTool | ToolDefinition | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: Any = _DEFAULT_ERRORS,
        messages_key: str = "messages",
        wrap_tool_call: Any = None,
        awrap_tool_call: Any = None,
        agent: ToolScope | None = None,
        max_parallel: int = 10,
        recorder: ToolCallRecorder | None = None,
        deps: Any = _CONTEXT,
        resume_from: str | os.PathLike[str] | None = None,
        stream: bool = False,
    ) -> None:
        for option, value in (
            ("wrap_tool_call", wrap_tool_call),
            ("awrap_tool_call", awrap_tool_call),
        ):
            if value is not None:
                raise TypeError(
                    f"ToolBatchNode does not take {option}: a wrapper would run outside the "
                    "batch's pipeline; wrap calls with registry.on_execute(...) instead"
                )
        registry, agent, shown, langchain_names = self._registry_of(tools, agent)
        if not langchain_names and handle_tool_errors is not _DEFAULT_ERRORS:
            raise TypeError(
                "ToolBatchNode: handle_tool_errors applies to LangChain tools, and this node "
                "has none; a toolnursery tool's failure is always an error ToolMessage"
            )
        super().__init__(
            shown,
            name=name,
            tags=tags,
            handle_tool_errors=handle_tool_errors,
            messages_key=messages_key,
        )
        self.registry = registry
        self.agent = agent
        self.max_parallel = max_parallel
        self.recorder = recorder
        self.deps = deps
        self.resume_from = resume_from
        self.messages_key = messages_key
        self.stream_results = stream
        self._langchain_names = langchain_names
        self._kept: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._gatherings: dict[tuple[int, tuple[str, ...]], Gathering] = {}

    def _registry_of(
        self, tools: Any, agent: ToolScope | None
    ) -> tuple[ToolRegistry, ToolScope | None, list[BaseTool], frozenset[str]]:
        """The registry the calls run in, its scope, the tools the model is shown, and
        the names of the LangChain tools (run as ``ToolNode`` runs them)."""
        if isinstance(tools, ToolScope):
            tools, agent = tools.registry, tools
        if isinstance(tools, ToolRegistry):
            return tools, agent, to_langchain(tools, agent=agent), frozenset()
        if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
            raise TypeError(
                "ToolBatchNode needs a ToolRegistry, a ToolScope or a sequence of tools, "
                f"not {type(tools).__name__}"
            )
        registry = ToolRegistry()
        lc_tools: list[BaseTool] = []
        for item in tools:
            if isinstance(item, ToolDefinition):
                registry.register(item)
                continue
            lc_tool = item if isinstance(item, BaseTool) else create_tool(item)
            lc_tools.append(lc_tool)
            registry.register(self._definition(lc_tool))
        ours = [t.name for t in tools if isinstance(t, ToolDefinition)]
        names = frozenset(t.name for t in lc_tools)
        return registry, agent, lc_tools + to_langchain(registry, names=ours), names

    def _definition(self, lc_tool: BaseTool) -> ToolDefinition:
        """A LangChain tool as a definition whose body is ``ToolNode``'s execution of it."""
        description, parameters = langchain_parameters(lc_tool)
        hidden = injected_names(lc_tool)
        node = self

        async def body(args: Any, ctx: Any) -> str:
            refuse_injected(hidden, args)
            run = CURRENT_RUN.get()
            if run is None or ctx.call_id not in run.runtimes:
                raise ToolError(f'tool "{lc_tool.name}" runs only inside its ToolBatchNode')
            runtime = run.runtimes[ctx.call_id]
            call = {
                "name": lc_tool.name,
                "args": thaw(args),
                "id": ctx.call_id,
                "type": "tool_call",
            }
            request = ToolCallRequest(
                tool_call=call,  # type: ignore[arg-type]
                tool=lc_tool,
                state=runtime.state,
                runtime=runtime,
            )
            try:
                if in_asyncio_task():  # the asyncio driver: ToolNode's own coroutine
                    output = await node._execute_tool_async(request, run.input_type, runtime.config)
                elif (host := HOST.get()) is not None:  # the trio guest run
                    work = node._execute_tool_async(request, run.input_type, runtime.config)
                    output = await run_on_host(host, work, lc_tool.name)
                else:
                    output = await trio.to_thread.run_sync(
                        node._execute_tool_sync,
                        request,
                        run.input_type,
                        runtime.config,
                    )
            except Exception as exc:  # GraphBubbleUp, or what handle_tool_errors left
                run.fail(ctx.call_id, exc)
                raise LangChainToolError(
                    f'tool "{lc_tool.name}": {one_line(str(exc)) or type(exc).__name__}'
                ) from exc
            run.outputs[ctx.call_id] = output
            text, failed = summary(output, ctx.call_id)
            if failed:
                raise LangChainToolError(one_line(text) or f'tool "{lc_tool.name}" failed')
            return text

        return ToolDefinition(lc_tool.name, description, parameters, runs_on_either_loop(body))

    @property
    def tools(self) -> list[BaseTool]:
        """The tools to bind to the chat model (``tools_by_name``'s values)."""
        return list(self.tools_by_name.values())

    async def __call__(self, input: Any) -> Any:
        """``await node(state)``: run the calls of ``input`` as the node does, inside a
        graph or not (outside one, tools see no graph state, store or stream)."""
        try:
            runtime = get_runtime()
        except (RuntimeError, KeyError):  # called outside a graph run
            runtime = None
        return await self._afunc(input, ensure_config(), runtime)

    def _func(self, input: Any, config: RunnableConfig, runtime: Any = None) -> Any:
        calls, input_type, extra = self._calls_of(input)
        run, kept_key, pending = self._prepare(input, input_type, calls, config, runtime)
        results = trio.run(self._trio_batch, run, pending, runtime)
        return self._finish(run, kept_key, calls, pending, results, input_type, extra)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Any = None) -> Any:
        calls, input_type, extra = self._calls_of(input)
        gathering = self._gathering_of(input, calls, config)
        if gathering is not None:
            return await self._gathered(gathering, calls[0], input, config, runtime)
        run, kept_key, pending = self._prepare(input, input_type, calls, config, runtime)
        if trio.lowlevel.in_trio_task() and not in_asyncio():
            results = await self._trio_batch(run, pending, runtime)
        else:
            results = await self._asyncio_batch(run, pending, runtime)
        return self._finish(run, kept_key, calls, pending, results, input_type, extra)

    # -- the Send tasks of one AI message, gathered ---------------------------------------

    def _gathering_of(
        self, input: Any, calls: list[dict[str, Any]], config: RunnableConfig
    ) -> Gathering | None:
        """The gathering this ``Send`` task's call joins, or ``None`` to run it alone.

        ``create_react_agent`` sends each call of an AI message to the node as a task
        of its own, all in one step: those tasks meet here and their calls run as one
        batch (the tasks that arrived; see :class:`Gathering` — none waits for a call
        whose task never comes). Not when the step is a resume (only the interrupted
        calls' tasks run again), nor when the run's ``max_concurrency`` could not
        start them all.
        """
        if not (isinstance(input, dict) and input.get("__type") == "tool_call_with_context"):
            return None
        configurable = config.get("configurable") or {}
        message = last_ai(input, self.messages_key)
        if message is None or configurable.get(_RESUMING) or not in_asyncio():
            return None
        answered = {
            getattr(m, "tool_call_id", None)
            for m in messages_of(input.get("state"), self.messages_key)
            if isinstance(m, ToolMessage)
        }
        expected = tuple(str(c["id"]) for c in message.tool_calls if c.get("id") not in answered)
        limit = config.get("max_concurrency")
        if len(expected) < 2 or calls[0]["id"] not in expected or (limit and limit < len(expected)):
            return None
        key = (id(message), expected)
        found = self._gatherings.get(key)
        if found is not None and found.open_to(str(calls[0]["id"])):
            return found
        gatherings = self._gatherings

        def close() -> None:
            if gatherings.get(key) is gathering:
                del gatherings[key]

        gathering = gatherings[key] = Gathering(expected, message, self._run_gathered, close)
        return gathering

    async def _gathered(
        self,
        gathering: Gathering,
        call: dict[str, Any],
        input: Any,
        config: RunnableConfig,
        runtime: Any,
    ) -> Any:
        """Join ``gathering``, and answer this task's call once its batch has run."""
        context = contextvars.copy_context()  # this task's: its config, for interrupt()
        output = await gathering.join(call["id"], (call, input, config, runtime, context))
        if isinstance(output, BaseException):
            raise output
        return self._combine_tool_outputs([output], "tool_calls")

    async def _run_gathered(self, arrivals: list[Arrival]) -> dict[str, Any]:
        """Run the gathered calls as one batch; each call's output or exception."""
        runtimes: dict[str, ToolRuntime] = {}
        contexts: dict[str, contextvars.Context] = {}
        for call, input, config, runtime, context in arrivals:
            runtimes[call["id"]] = self._tool_runtime(input, call, config, runtime)
            contexts[call["id"]] = context
        run = NodeRun("tool_calls", runtimes, contexts)
        run.gathered = True  # each call is a task of its own: an error fails only its own
        calls = [arrival[0] for arrival in arrivals]
        results = await self._asyncio_batch(run, calls, arrivals[-1][3])
        outputs: dict[str, Any] = {}
        for call in calls:
            output: Any = run.exceptions.get(call["id"])
            outputs[call["id"]] = output or run.outputs.get(call["id"]) or results[call["id"]]
        return outputs

    # -- one run ------------------------------------------------------------------------

    def _calls_of(self, input: Any) -> tuple[list[dict[str, Any]], InputType, list[AIMessage]]:
        """The model's calls (ids made up where missing), the input's kind, and the AI
        message to write back when ids were made up."""
        parsed, input_type = self._parse_input(trust_node_input(self, input))  # user text trusted
        raw = cast("list[dict[str, Any]]", parsed)
        message = last_ai(input, self.messages_key)
        id_less = [call for call in raw if not _has_id(call)]
        if message is None:
            made_up = _make_up_ids(raw)
        else:
            # All the AI message's id-less calls get theirs at once (every Send task of
            # the message must see the same ids); a call of the input that is not the
            # message's own dict takes the id of its equal.
            siblings: list[dict[str, Any]] = message.tool_calls  # type: ignore[assignment]
            made_up = _make_up_ids(siblings)
            for call in id_less:
                if not _has_id(call):
                    twin = next(
                        (c for c in siblings if c["id"] in made_up and _same(c, call)), None
                    )
                    call["id"] = (
                        twin["id"] if twin is not None else made_up_id(len(siblings), set(made_up))
                    )
        extra = [message] if made_up and message is not None and input_type == "dict" else []
        return [dict(c) for c in raw], input_type, extra

    def _prepare(
        self,
        input: Any,
        input_type: InputType,
        calls: list[dict[str, Any]],
        config: RunnableConfig,
        runtime: Any,
    ) -> tuple[NodeRun, tuple[str, str] | None, list[dict[str, Any]]]:
        # A LangChain tool's body needs its call's ToolRuntime (ToolNode's per-call
        # config included); a toolnursery tool's does not, and pays nothing for it.
        langchain_names = self._langchain_names
        runtimes = (
            {
                call["id"]: self._tool_runtime(input, call, cfg, runtime)
                for call, cfg in zip(calls, get_config_list(config, len(calls)), strict=True)
                if call.get("name") in langchain_names
            }
            if langchain_names and any(c.get("name") in langchain_names for c in calls)
            else {}
        )
        run = NodeRun(input_type, runtimes)
        configurable = config.get("configurable") or {}
        thread = configurable.get("thread_id")
        kept_key = None
        if thread is not None:
            kept_key = (str(thread), str(configurable.get("checkpoint_ns", "")))
            run.outputs.update(self._kept.get(kept_key, {}))
        pending = [call for call in calls if call["id"] not in run.outputs]
        return run, kept_key, pending

    def _tool_runtime(
        self, input: Any, call: dict[str, Any], config: RunnableConfig, runtime: Any
    ) -> ToolRuntime:
        """The ``ToolRuntime`` of one call, as ``ToolNode`` makes it."""
        return ToolRuntime(
            state=self._extract_state(input, config),  # type: ignore[arg-type]
            tool_call_id=call["id"],
            config=config,
            context=getattr(runtime, "context", None),
            store=getattr(runtime, "store", None),
            stream_writer=getattr(runtime, "stream_writer", no_writer),
            tools=list(self.tools_by_name.values()),
            execution_info=getattr(runtime, "execution_info", None),
            server_info=getattr(runtime, "server_info", None),
        )

    def _finish(
        self,
        run: NodeRun,
        kept_key: tuple[str, str] | None,
        calls: list[dict[str, Any]],
        pending: list[dict[str, Any]],
        results: dict[str, ToolMessage],
        input_type: InputType,
        extra: list[AIMessage],
    ) -> Any:
        ids = [call["id"] for call in calls]
        raised = run.raised(ids)
        if raised is not None and not is_interrupt(raised):
            raise raised
        outputs = [run.outputs.get(call["id"]) or results[call["id"]] for call in calls]
        if raised is not None:
            if kept_key is not None:
                self._kept[kept_key] = {
                    call["id"]: output
                    for call, output in zip(calls, outputs, strict=True)
                    if call["id"] not in run.unkept
                    and (call["id"] in run.outputs or call["id"] in results)
                }
                self._kept.move_to_end(kept_key)
                while len(self._kept) > _KEPT_RUNS:
                    self._kept.popitem(last=False)
            raise raised
        if kept_key is not None:
            self._kept.pop(kept_key, None)
        combined = self._combine_tool_outputs(outputs, input_type)
        if extra and isinstance(combined, dict):
            combined[self.messages_key] = [*extra, *combined[self.messages_key]]
        return combined

    def _deps(self, runtime: Any) -> Any:
        return getattr(runtime, "context", None) if self.deps is _CONTEXT else self.deps

    def _writer(self, runtime: Any) -> Callable[[Any], None] | None:
        return getattr(runtime, "stream_writer", None) if self.stream_results else None

    async def _batch(
        self, run: NodeRun, pending: list[dict[str, Any]], runtime: Any, signal: CancelSignal
    ) -> dict[str, ToolMessage]:
        """Run the pending calls as one batch (in the trio run); their ``ToolMessage``\\s
        (the LangChain tools' own answers stay in ``run.outputs``)."""
        CURRENT_RUN.set(run)  # the batch's tasks start in copies of this context
        calls = [ToolCall(c["id"], str(c.get("name") or ""), call_arguments(c)) for c in pending]
        messages: dict[str, ToolMessage] = {}
        commit = committer(run, messages, self._writer(runtime))
        run.abort = signal.cancel
        options = self._options(runtime)
        if self.resume_from is not None:
            results = await run_tool_calls(
                self.registry, calls, signal=signal, resume_from=self.resume_from, **options
            )
            for call, result in zip(calls, results, strict=True):
                commit(call, result)
            return messages
        async with open_tool_batch(self.registry, signal=signal, **options) as batch:

            def abort(reason: str) -> None:
                signal.cancel(reason)
                batch.close()

            run.abort = abort
            for call in calls:
                batch.submit(call)
            batch.close()
            async for call, result in batch:
                commit(call, result)
        return messages

    def _options(self, runtime: Any) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "max_parallel": self.max_parallel,
            "recorder": self.recorder,
            "deps": self._deps(runtime),
        }

    async def _trio_batch(
        self, run: NodeRun, pending: list[dict[str, Any]], runtime: Any
    ) -> dict[str, ToolMessage]:
        return await self._batch(run, pending, runtime, CancelSignal())

    async def _asyncio_batch(
        self, run: NodeRun, pending: list[dict[str, Any]], runtime: Any
    ) -> dict[str, ToolMessage]:
        """Under asyncio: natively on the running loop (``toolnursery.aio``'s asyncio
        driver) when the calls' tools and hooks allow it (and, streaming, every tool of
        the view), else in the trio guest run."""
        writer = self._writer(runtime)
        registry, agent = self.registry, self.agent
        if (
            self.resume_from is not None
            or trio_reason(registry, agent, [str(c.get("name") or "") for c in pending])
            or (writer is not None and trio_reason(registry, agent, None))
        ):
            return await self._hosted_batch(run, pending, runtime)
        calls = [ToolCall(c["id"], str(c.get("name") or ""), call_arguments(c)) for c in pending]
        messages: dict[str, ToolMessage] = {}
        token = CURRENT_RUN.set(run)  # the driver's tasks start in copies of this context
        try:
            commit = committer(run, messages, writer)
            await native_batch(
                registry, run, calls, commit, writer is not None, **self._options(runtime)
            )
        finally:
            CURRENT_RUN.reset(token)
        return messages

    async def _hosted_batch(
        self, run: NodeRun, pending: list[dict[str, Any]], runtime: Any
    ) -> dict[str, ToolMessage]:
        loop = asyncio.get_running_loop()
        host = await host_for(loop)
        job: Job[dict[str, ToolMessage]] = Job(loop, CancelSignal())

        async def work() -> dict[str, ToolMessage]:
            return await self._batch(run, pending, runtime, job.signal)

        host.spawn(job, work)
        return await wait_job(job)
