"""LangChain tools both ways: a ``BaseTool`` as a definition, a registry as ``BaseTool``\\s.

In: a LangChain tool becomes a raw-JSON-Schema :class:`ToolDefinition` whose
``parameters`` are the schema LangChain itself shows the model, so our validator
checks the arguments first and the model sees one line per violation, never
LangChain's multi-line pydantic report. A tool with an asyncio implementation runs
as an asyncio task on the host loop (a batch abort cancels it); a sync-only tool
runs on a worker thread (not abandoned: the batch waits for it). Whatever the tool
raises (``ToolException`` included) becomes a one-line ``Error:`` result.

Out: each tool of a registry (or of an agent scope) becomes a ``BaseTool`` whose
``ainvoke`` runs the call through the registry's pipeline with ``toolnursery.aio``
(natively on the running loop when the tool and hooks allow, else in the trio guest
run): validation, policies, approval,
observers and the timeout policy all apply; the scheduler does not (LangChain
dispatches each call alone; the LangGraph node keeps the batch).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict

from .._aio._api import execute as aio_execute
from .._aio._tool import asyncio_tool
from .._core._errors import ToolArgsError, ToolError
from .._core._execution import ToolExecutionInput
from .._core._json import thaw
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._hosted import exported_schemas

__all__ = [
    "LangChainToolError",
    "RegistryTool",
    "from_langchain",
    "injected_names",
    "injected_violation",
    "langchain_parameters",
    "refuse_injected",
    "to_langchain",
    "tool_call_input",
]


class LangChainToolError(ToolError):
    """Raised when an imported LangChain tool fails: its error, on one line.

    The result reads ``Error: <the tool's message>`` (lines joined with ``"; "``),
    with code ``LANGCHAIN_TOOL_ERROR``.
    """

    code = "LANGCHAIN_TOOL_ERROR"


def one_line(text: str) -> str:
    """``text`` with its non-blank lines stripped and joined by ``"; "``."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _failure(tool: BaseTool, exc: Exception) -> LangChainToolError:
    message = one_line(str(exc)) or type(exc).__name__
    return LangChainToolError(f'tool "{tool.name}": {message}')


def _output(value: Any) -> str:
    """The text of what a tool gave back: a string as is, anything else as LangChain
    renders it for a ``ToolMessage`` (``json.dumps``, its spacing and all)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except Exception:  # no JSON form: the tool's own text for it
        return str(value)


def _is_async(tool: BaseTool) -> bool:
    if isinstance(tool, StructuredTool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


def injected_names(tool: BaseTool) -> frozenset[str]:
    """The parameters of ``tool`` the host fills, never the model.

    LangChain's injected family (``InjectedToolArg`` and its subclasses —
    LangGraph's ``InjectedState`` and ``InjectedStore`` among them —
    ``InjectedToolCallId``, ``ToolRuntime``): the fields of the tool's input schema
    that its model-facing schema leaves out.
    """
    full = tool.get_input_schema()
    shown = tool.tool_call_schema
    if not (_is_model(full) and _is_model(shown)):
        return frozenset()
    return frozenset(full.model_fields) - frozenset(shown.model_fields)


def _is_model(value: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(value, type) and issubclass(value, BaseModel)


def refuse_injected(names: frozenset[str], args: Any) -> None:
    """Refuse a call whose arguments name a host-filled parameter (see
    :func:`injected_names`): an ``INVALID_ARGS`` result, the tool never runs.

    Raises:
        ToolArgsError: ``args`` names one of ``names``.
    """
    if names and isinstance(args, Mapping):
        named = [key for key in args if key in names]
        if named:
            raise ToolArgsError([injected_violation(key) for key in named])


def injected_violation(name: str) -> str:
    """The one-line violation of a model argument naming an injected parameter."""
    return f'argument "{name}" is supplied by the host, not the model'


def tool_call_input(name: str, call_id: str, args: Any) -> dict[str, Any]:
    """LangChain's ``ToolCall`` dict, which makes ``invoke`` answer with a ``ToolMessage``."""
    return {"type": "tool_call", "name": name, "id": call_id, "args": args}


def _answer(tool: BaseTool, value: Any) -> str:
    """The text of what ``invoke`` returned for a tool call; an error answer raises.

    ``ToolMessage`` (LangChain's formatting kept): its content; ``status="error"``
    (the tool's own ``handle_tool_error`` answer) raises
    :class:`LangChainToolError` with that text on one line.
    """
    if isinstance(value, ToolMessage):
        text = _output(value.content)
        if value.status == "error":
            raise LangChainToolError(f'tool "{tool.name}": {one_line(text) or "failed"}')
        return text
    if isinstance(value, ToolOutputMixin) or (
        isinstance(value, list) and value and all(isinstance(v, ToolOutputMixin) for v in value)
    ):
        raise LangChainToolError(
            f'tool "{tool.name}" returned a LangGraph Command; only '
            "toolnursery.langgraph.ToolBatchNode can apply one"
        )
    return _output(value)


def from_langchain(tool: BaseTool, *, name: str | None = None) -> ToolDefinition:
    """Make a registry definition of a LangChain tool.

    The parameters are the JSON Schema LangChain advertises for the tool (injected
    arguments left out), validated by toolnursery before the tool runs; an argument
    naming an injected parameter (``InjectedToolArg`` and its subclasses,
    ``InjectedToolCallId``, ``ToolRuntime``...) is refused (``INVALID_ARGS``: the
    model cannot fill what the host supplies). The tool is invoked with a LangChain
    tool call (``InjectedToolCallId`` gets the call's id), so the text is LangChain's
    own (``json.dumps`` of a value that is not text) and its ``handle_tool_error``
    answer is an error result. A tool with an asyncio implementation
    (``StructuredTool.from_function(coroutine=...)``, an ``async def`` under
    ``@tool``, a ``BaseTool`` overriding ``_arun``) is an ``asyncio_tool`` body: it
    runs on the asyncio driver, or on the loop hosting a trio batch; a sync tool runs on a worker
    thread. ``ToolException`` and any other exception become a one-line error result
    with code ``LANGCHAIN_TOOL_ERROR``.

    Args:
        tool: the LangChain tool.
        name: the name to register it under (default: the tool's own).

    Raises:
        TypeError: ``tool`` is not a LangChain ``BaseTool``.
        RegistrationError: its schema is not a valid JSON Schema.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(f"from_langchain needs a LangChain BaseTool, not {type(tool).__name__}")
    description, parameters = langchain_parameters(tool)
    hidden = injected_names(tool)
    if _is_async(tool):

        async def run_async(args: Any, ctx: Any) -> str:
            refuse_injected(hidden, args)
            try:
                value = await tool.ainvoke(tool_call_input(tool.name, ctx.call_id, thaw(args)))
            except Exception as exc:
                raise _failure(tool, exc) from exc
            return _answer(tool, value)

        return ToolDefinition(name or tool.name, description, parameters, asyncio_tool(run_async))

    def run_sync(args: Any, ctx: Any) -> str:
        refuse_injected(hidden, args)
        try:
            value = tool.invoke(tool_call_input(tool.name, ctx.call_id, thaw(args)))
        except Exception as exc:
            raise _failure(tool, exc) from exc
        return _answer(tool, value)

    return ToolDefinition(name or tool.name, description, parameters, run_sync)


def langchain_parameters(tool: BaseTool) -> tuple[str, dict[str, Any]]:
    """The description and the JSON Schema of arguments LangChain shows the model."""
    function = convert_to_openai_tool(tool)["function"]
    parameters: dict[str, Any] = dict(function.get("parameters") or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return str(function.get("description") or tool.description or ""), parameters


_TOOL_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolnursery.langchain.tool_call_id", default=None
)
"""The model's id of the tool call LangChain is running (set around ``arun``)."""


class RegistryTool(BaseTool):
    """A registry tool as a LangChain ``BaseTool``; made by ``to_langchain``.

    ``ainvoke`` runs the call through the registry's pipeline with
    ``toolnursery.aio.execute`` (natively on the running loop when the tool and hooks
    allow, else in the trio guest run); cancelling the awaiting task aborts the call (the body sees the
    abort, the observers see ``ABORTED``). An error result raises ``ToolException``
    with the result's text, which LangChain (``handle_tool_error=True``) hands the
    model as an error ``ToolMessage``. A sync ``invoke`` runs the call on a fresh
    event loop.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    registry: Any
    agent: Any = None
    deps: Any = None
    handle_tool_error: Any = True

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """LangChain's ``arun``, with the model's call id kept for the registry call."""
        token = _TOOL_CALL_ID.set(kwargs.get("tool_call_id"))
        try:
            return await super().arun(tool_input, *args, **kwargs)
        finally:
            _TOOL_CALL_ID.reset(token)

    async def _arun(
        self,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> str:
        input = ToolExecutionInput(_call_id(run_manager), self.name, kwargs, agent=self.agent)
        # natively on this loop when the tool and hooks allow it, else the trio guest run
        result = await aio_execute(self.registry, input, deps=self.deps)
        if result.is_error:
            raise ToolException(result.text)
        return str(result.text)

    def _run(
        self,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> str:
        async def run() -> str:
            return await self._arun(**kwargs)

        return asyncio.run(run())


def _call_id(run_manager: Any) -> str:
    """The model's call id when LangChain was given a tool call, else one from its run id."""
    tool_call_id = _TOOL_CALL_ID.get()
    if tool_call_id:
        return tool_call_id
    run_id = getattr(run_manager, "run_id", None)
    return f"lc-{run_id}" if run_id is not None else "lc-call"


def to_langchain(
    registry: ToolRegistry,
    *,
    agent: ToolScope | None = None,
    deps: Any = None,
    names: Iterable[str] | None = None,
) -> list[BaseTool]:
    """The tools of ``registry`` (as ``agent`` sees them) as LangChain tools.

    Each runs through the registry's pipeline (validation, policies, approval,
    observers, ``ctx.deps`` = ``deps``) when LangChain invokes it; LangChain dispatches
    each call alone, so the batch scheduler (keys, barriers, model-order commits)
    does not apply — use :class:`toolnursery.langgraph.ToolBatchNode` for that.

    Args:
        registry: the registry.
        agent: the agent scope whose view to export (default: the registry's).
        deps: what the tools see as ``ctx.deps``.
        names: only these tools (default: all), in this order.

    Raises:
        KeyError: a name in ``names`` is not a tool of that view.
    """
    tools: list[BaseTool] = []
    for schema in exported_schemas(registry, agent, names, "to_langchain"):
        tools.append(
            RegistryTool(
                name=schema.name,
                description=schema.description,
                args_schema=dict(thaw(schema.parameters)),
                registry=registry,
                agent=agent,
                deps=deps,
            )
        )
    return tools
