"""openai-agents: a registry as ``FunctionTool``s, ``FunctionTool``s into a registry.

Out: :func:`function_tools` lists a registry's (or scope's) tools as SDK
``FunctionTool``s whose ``on_invoke_tool`` runs the call through the registry's
pipeline through ``toolnursery.aio`` (natively on the run's loop when the tool and the
hooks allow, else in its trio guest run). The SDK dispatches each function call
of a model response itself, and none of its hooks encloses that dispatch
(``RunHooks.on_llm_end`` sees the response but returns before the tools start;
``tool_use_behavior`` decides after they ran), so the calls do not form one of our
batches: the pipeline is kept, the scheduler is not.

In: :func:`from_function_tool` wraps a ``FunctionTool`` as a raw-schema
:class:`ToolDefinition` (our validator checks the arguments first) whose body calls
``on_invoke_tool`` with a ``ToolContext`` built by the SDK's own constructor from our
context (``context`` is our ``deps``).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import msgspec
from agents import FunctionTool, Tool, ToolOutputText
from agents.tool_context import ToolContext
from agents.usage import Usage

from .._aio._tool import asyncio_tool
from .._core._errors import RegistrationError
from .._core._execution import ToolRunContext
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._hosted import execute_hosted, one_line_error, registry_and_scope, result_text, thaw
from ._trust import openai_agents_user_texts, trust_user_texts

__all__ = ["from_function_tool", "function_tools"]

_encode = msgspec.json.Encoder().encode


def function_tools(
    registry: ToolRegistry | ToolScope | Sequence[FunctionTool | ToolDefinition],
    *,
    deps: Any = None,
    trust_user_messages: bool = True,
) -> list[Tool]:
    """A registry's (or scope's) tools as openai-agents ``FunctionTool``s.

    Given the list an ``Agent(tools=[...])`` takes instead (``@function_tool``s, and
    toolnursery definitions such as ``@tool``'s), its tools are put in a registry of
    their own (:func:`from_function_tool` for each ``FunctionTool``) and listed back
    in the same order: ``tools=function_tools([get_weather])``.

    Each tool lists the registry's own JSON Schema (``strict_json_schema=False``: the
    schema is sent as written, and our validator checks the arguments). A call runs
    through the registry's pipeline — policies, validation, timeouts, observers — and
    its result text is the tool's output; a failure is ``Error: …`` on one line, never
    an exception in the run. Cancelling the run aborts the call in flight (its body is
    cancelled and settles as ``ABORTED``) before the cancellation propagates.

    Args:
        registry: the registry, or a scope of it (the tools it lists now), or a list
            of ``FunctionTool``s and definitions.
        deps: our ``deps`` for every call (default: the run's context object,
            ``RunContextWrapper.context``).
        trust_user_messages: trust the run's input items with role ``user`` in the
            scope's provenance ledger when it keeps one (the provenance guard's), so a
            value the user wrote is ``request``; ``False`` leaves that to you.

    Raises:
        TypeError: ``registry`` is neither a registry, a scope nor a list.
        RegistrationError: an item of the list is neither a ``FunctionTool`` nor a
            definition, or two of them share a name.
    """
    if isinstance(registry, list | tuple):
        own = ToolRegistry()
        for item in registry:
            own.register(item if isinstance(item, ToolDefinition) else from_function_tool(item))
        registry = own
    target, scope = registry_and_scope(registry, "function_tools(registry)")
    return [
        FunctionTool(
            name=schema.name,
            description=schema.description,
            params_json_schema=dict(schema.parameters),
            on_invoke_tool=_invoker(target, scope, deps, trust_user_messages),
            strict_json_schema=False,
        )
        for schema in target.schemas(scope)
    ]


def _invoker(registry: ToolRegistry, scope: ToolScope | None, deps: Any, trust: bool) -> Any:
    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
        if trust:
            trust_user_texts(scope, openai_agents_user_texts(ctx.turn_input))
        result = await execute_hosted(
            registry,
            ctx.tool_call_id,
            ctx.tool_name,
            arguments,
            agent=scope,
            deps=ctx.context if deps is None else deps,
        )
        return result_text(result)

    # The SDK reads the wrapper's signature and type hints on every call (to pick the
    # context it passes): hand it both resolved once, not strings to evaluate per call.
    on_invoke_tool.__annotations__ = {"ctx": ToolContext[Any], "arguments": str, "return": str}
    on_invoke_tool.__signature__ = inspect.signature(on_invoke_tool)  # type: ignore[attr-defined]
    return on_invoke_tool


def from_function_tool(
    tool: FunctionTool,
    *,
    name: str | None = None,
    **options: Any,
) -> ToolDefinition:
    """An openai-agents ``FunctionTool`` as a toolnursery definition.

    The definition lists the tool's ``params_json_schema``; our validator checks a
    call's arguments against it before the body runs (``INVALID_ARGS``, one line).
    The body calls ``tool.on_invoke_tool`` with a ``ToolContext`` whose ``context`` is
    our ``deps``, with the call's id, name and JSON arguments and a fresh ``Usage``.
    Its output becomes the result text (``ToolOutputText`` by its text, anything else
    by ``str()``, as the SDK does). An exception it raises is an error result; a
    ``function_tool``'s own failure handler (on by default) turns exceptions into
    text first — make it with ``failure_error_function=None`` to get error results.
    The body is asyncio code, run through ``toolnursery.aio``; our abort cancels it.

    Args:
        tool: the ``FunctionTool``.
        name: the tool name (default: the tool's).
        **options: :class:`ToolDefinition` options (``timeout_ms``, ``idempotent``,
            ``is_concurrency_safe``, ``concurrency_keys``, ``max_concurrency``…).

    Raises:
        RegistrationError: ``tool`` is not a ``FunctionTool``.
    """
    if not isinstance(tool, FunctionTool):
        raise RegistrationError(
            f"from_function_tool(): expected an agents.FunctionTool, got {type(tool).__name__}"
        )

    async def body(args: Any, ctx: ToolRunContext[Any]) -> str:
        arguments = _encode(thaw(args)).decode()
        context = ToolContext(
            ctx.deps,
            usage=Usage(),
            tool_name=tool.name,
            tool_call_id=ctx.call_id,
            tool_arguments=arguments,
        )
        try:
            output = await tool.on_invoke_tool(context, arguments)
        except Exception as exc:
            raise one_line_error(exc) from exc
        if isinstance(output, ToolOutputText):
            return output.text
        return output if isinstance(output, str) else str(output)

    return ToolDefinition(
        name or tool.name,
        tool.description,
        dict(tool.params_json_schema),
        asyncio_tool(body),
        **options,
    )
