"""pydantic-ai: a registry as a toolset (one batch per model response), its tools in.

Out: :class:`ToolnurseryToolset` lists a registry's (or scope's) tools to a pydantic-ai
agent and runs each call through the registry's pipeline via ``toolnursery.aio``.
:class:`ToolnurseryCapability` carries the same toolset and also wraps the agent's
tool-calling node: before pydantic-ai dispatches a model response's calls, it opens
one toolnursery batch with every call of that response to our tools, so the
scheduler (modes, keys, barriers, model-order commits, the recorder) sees the whole
response; pydantic-ai's per-call tasks then only wait for their call's result.

In: :func:`from_pydantic_ai` turns a pydantic-ai ``Tool`` (or a function) into a
raw-schema :class:`ToolDefinition` whose arguments our validator checks; a tool that
takes a ``RunContext`` gets the live one when the call comes from a pydantic-ai run
through the toolset above (with ``deps`` replaced by ours), else a
:class:`ToolnurseryRunContext` built from our context (deps, call id, tool name,
batch id as run id) that refuses to read what it does not carry.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import pydantic
from pydantic_ai import CallToolsNode, RunContext, Tool
from pydantic_ai import exceptions as pai_exceptions
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.durable_exec import DurableRunContext
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_ai.usage import RunUsage
from pydantic_core import SchemaValidator, core_schema

from .._aio._tool import asyncio_tool
from .._batch._recorder import ToolCallRecorder
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import RegistrationError, ToolArgsError, ToolError
from .._core._execution import ToolRunContext
from .._core._jsonform import returned_value
from .._core._outcomes import returned_text
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._hosted import (
    execute_hosted,
    hosted_batch,
    one_line_error,
    registry_and_scope,
    result_text,
    thaw,
)
from ._trust import pydantic_ai_user_texts, trust_user_texts

__all__ = [
    "ToolnurseryCapability",
    "ToolnurseryRunContext",
    "ToolnurseryToolset",
    "from_pydantic_ai",
]

_ANY_ARGS: Final = SchemaValidator(core_schema.any_schema())
"""Arguments pass through pydantic-ai untouched: the registry's pipeline validates them."""


@dataclasses.dataclass(eq=False)
class _PendingBatch:
    """One model response's calls, already submitted to a batch: results by call id."""

    results: dict[str, asyncio.Future[ToolExecutionResult]]
    toolset: ToolnurseryToolset

    def settle(self, call: ToolCall, result: ToolExecutionResult) -> None:
        future = self.results.get(call.id)
        if future is not None and not future.done():
            future.set_result(result)


_BATCH: contextvars.ContextVar[_PendingBatch | None] = contextvars.ContextVar(
    "toolnursery_pydantic_ai_batch", default=None
)
_RUN_CONTEXT: contextvars.ContextVar[RunContext[Any] | None] = contextvars.ContextVar(
    "toolnursery_pydantic_ai_run_context", default=None
)


class ToolnurseryToolset(AbstractToolset[Any]):
    """A registry's (or scope's) tools as a pydantic-ai toolset.

    Each call runs through the registry's pipeline (policies, validation, timeouts,
    observers) through ``toolnursery.aio`` (natively on the loop when it can); wrapped by
    :class:`ToolnurseryCapability`, a model response's calls run as one batch. A
    failure (bad arguments, a denial, a raising body) is the call's return value,
    ``Error: …`` on one line; pydantic-ai never sees an exception from it.

    Args:
        registry: the registry, or a scope of it, whose tools the agent gets.
        deps: our ``deps`` for every call (default: the agent run's ``ctx.deps``).
        recorder: the batch recorder (used for batches under the capability).
        max_parallel: the batch's cap (under the capability).
        id: the toolset id pydantic-ai shows in errors and durable runs.
        trust_user_messages: trust the run's user prompts (``UserPromptPart``) in the scope's
            provenance ledger when it keeps one (the provenance guard's), so a value
            the user wrote is ``request``; ``False`` leaves that to you.
    """

    def __init__(
        self,
        registry: ToolRegistry | ToolScope,
        *,
        deps: Any = None,
        recorder: ToolCallRecorder | None = None,
        max_parallel: int = 10,
        id: str | None = "toolnursery",
        trust_user_messages: bool = True,
    ) -> None:
        self.registry: ToolRegistry
        self.scope: ToolScope | None
        self.registry, self.scope = registry_and_scope(registry, "ToolnurseryToolset(registry)")
        self.trust_user_messages = trust_user_messages
        self.deps = deps
        self.recorder = recorder
        self.max_parallel = max_parallel
        self._id = id
        # What get_tools lists, made once per registry change (not per run step).
        self._listed: dict[str, ToolsetTool[Any]] | None = None
        self._names: frozenset[str] = frozenset()
        mine = weakref.ref(self)

        def stale() -> None:
            toolset = mine()
            if toolset is not None:
                toolset._listed = None

        self.registry.on_change(stale)

    @property
    def id(self) -> str | None:
        """The toolset's id."""
        return self._id

    def names(self) -> frozenset[str]:
        """The names of the tools the agent sees now."""
        self._tools()
        return self._names

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The registry's tools, as listed to the model (their own schemas)."""
        return dict(self._tools())

    def _tools(self) -> dict[str, ToolsetTool[Any]]:
        listed = self._listed
        if listed is None:
            listed = {
                schema.name: ToolsetTool(
                    toolset=self,
                    tool_def=PaiToolDefinition(
                        name=schema.name,
                        description=schema.description,
                        parameters_json_schema=dict(schema.parameters),
                    ),
                    max_retries=0,
                    args_validator=_ANY_ARGS,
                )
                for schema in self.registry.schemas(self.scope)
            }
            self._listed, self._names = listed, frozenset(listed)
        return listed

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run one call: its batch's result under the capability, else one ``execute``.

        The return is the result's JSON value when its text is exactly the JSON
        toolnursery renders for a number, boolean, null, object or array (so ``0`` stays
        a number, as pydantic-ai keeps a native tool's value), else the text.
        """
        self._trust(ctx)
        call_id = ctx.tool_call_id or ""
        pending = _BATCH.get()
        if pending is not None and pending.toolset is self and call_id in pending.results:
            # The future is this call's slot only: cancelling it (pydantic-ai cancelling
            # this task) drops the delivery, never the batch, which the node's block owns.
            return _returned(await pending.results[call_id])
        token = _RUN_CONTEXT.set(ctx)
        try:
            result = await execute_hosted(
                self.registry, call_id, name, tool_args, agent=self.scope, deps=self._deps(ctx)
            )
        finally:
            _RUN_CONTEXT.reset(token)
        return _returned(result)

    def _deps(self, ctx: RunContext[Any]) -> Any:
        return ctx.deps if self.deps is None else self.deps

    def _trust(self, ctx: RunContext[Any]) -> None:
        if self.trust_user_messages:
            trust_user_texts(self.scope, pydantic_ai_user_texts(ctx.messages))


def _returned(result: ToolExecutionResult) -> Any:
    """What pydantic-ai gets back for ``result``: its JSON value, or its text."""
    text = result_text(result)
    if result.is_error or len(result.content) != 1 or returned_text(result):
        return text
    return returned_value(text)


class ToolnurseryCapability(AbstractCapability[Any]):
    """A registry's tools for a pydantic-ai agent, each model response run as one batch.

    Gives the agent :attr:`toolset` and wraps its tool-calling node: the calls of one
    model response that name our tools are submitted, in model order, to one
    toolnursery batch (on ``toolnursery.aio``'s host) before pydantic-ai dispatches
    them, so the scheduler sees them together. A response that also calls an output
    tool, or a node resumed with deferred tool results, is left to per-call dispatch
    (pydantic-ai may skip or answer some of its calls itself). Cancelling the run
    aborts the batch: started calls drain, the rest are ``ABORTED_BEFORE_DISPATCH``.

    Args:
        registry: the registry, or a scope of it; or the list an agent's ``tools=``
            takes (pydantic-ai ``Tool``s, plain or ``RunContext``-taking functions,
            toolnursery definitions) as a list, made into a registry of their own
            (:func:`from_pydantic_ai` for each pydantic-ai tool).
        deps: our ``deps`` (default: the agent run's ``ctx.deps``).
        recorder: the batch recorder.
        max_parallel: the batch's cap.
        trust_user_messages: as :class:`ToolnurseryToolset`'s.
    """

    def __init__(
        self,
        registry: ToolRegistry | ToolScope | Sequence[Tool[Any] | Callable[..., Any]],
        *,
        deps: Any = None,
        recorder: ToolCallRecorder | None = None,
        max_parallel: int = 10,
        trust_user_messages: bool = True,
    ) -> None:
        self.toolset: ToolnurseryToolset = ToolnurseryToolset(
            _registry_of(registry),
            deps=deps,
            recorder=recorder,
            max_parallel=max_parallel,
            trust_user_messages=trust_user_messages,
        )

    def get_toolset(self) -> ToolnurseryToolset:
        """The toolset the agent lists and calls."""
        return self.toolset

    async def wrap_node_run(self, ctx: RunContext[Any], *, node: Any, handler: Any) -> Any:
        """Run a tool-calling node's calls to our tools as one batch around ``handler``."""
        if not isinstance(node, CallToolsNode):
            return await handler(node)
        calls = _batchable(node, ctx, self.toolset.names())
        if not calls:
            return await handler(node)
        toolset = self.toolset
        toolset._trust(ctx)  # before the batch runs: its calls see the user's prompts
        loop = asyncio.get_running_loop()
        pending = _PendingBatch({call.id: loop.create_future() for call in calls}, toolset)
        # Set before the batch starts: the batch's calls run in a copy of this context.
        run_token = _RUN_CONTEXT.set(ctx)
        token = _BATCH.set(pending)
        try:
            async with hosted_batch(
                toolset.registry,
                calls,
                pending.settle,
                agent=toolset.scope,
                max_parallel=toolset.max_parallel,
                recorder=toolset.recorder,
                deps=toolset._deps(ctx),
            ):
                return await handler(node)
        finally:
            _BATCH.reset(token)
            _RUN_CONTEXT.reset(run_token)


def _registry_of(
    tools: ToolRegistry | ToolScope | Sequence[Tool[Any] | Callable[..., Any]],
) -> Any:
    if not isinstance(tools, list | tuple):
        return tools  # the toolset says what is wrong with anything else
    registry = ToolRegistry()
    for item in tools:
        registry.register(item if isinstance(item, ToolDefinition) else from_pydantic_ai(item))
    return registry


def _batchable(node: Any, ctx: RunContext[Any], ours: frozenset[str]) -> list[ToolCall]:
    if node.tool_call_results:
        return []
    manager = ctx.tool_manager
    calls: list[ToolCall] = []
    for part in node.model_response.tool_calls:
        if manager is not None:
            definition = manager.get_tool_def(part.tool_name)
            if definition is not None and definition.kind == "output":
                return []
        if part.tool_name in ours:
            args = part.args
            calls.append(
                ToolCall(part.tool_call_id, part.tool_name, args if args is not None else "")
            )
    return calls


class ToolnurseryRunContext(DurableRunContext[Any]):
    """The ``RunContext`` of a pydantic-ai tool run by toolnursery outside a pydantic-ai run.

    It carries ``deps`` (toolnursery's), ``tool_name``, ``tool_call_id``, ``retry``
    (0), ``run_id`` (the batch id, or the call id under ``execute``) and a fresh
    ``usage``; reading anything else (``model``, ``messages``…) raises pydantic-ai's
    ``UserError`` naming the field, rather than a made-up value.
    """

    def unavailable_field_message(self, name: str) -> str:
        """The error for a field a tool reads that toolnursery does not carry."""
        return (
            f"{name!r} is not available: this pydantic-ai tool was called by toolnursery "
            "outside a pydantic-ai agent run (it carries deps, tool_name, tool_call_id, "
            "retry, run_id and usage)"
        )


def _run_context(ctx: ToolRunContext[Any]) -> RunContext[Any]:
    live = _RUN_CONTEXT.get()
    if live is not None:
        return dataclasses.replace(
            live, deps=ctx.deps, tool_name=ctx.name, tool_call_id=ctx.call_id
        )
    return ToolnurseryRunContext(
        ctx.deps,
        tool_name=ctx.name,
        tool_call_id=ctx.call_id,
        retry=0,
        max_retries=0,
        run_step=0,
        usage=RunUsage(),
        run_id=ctx.batch_id or ctx.call_id,
    )


def from_pydantic_ai(
    tool: Tool[Any] | Callable[..., Any],
    *,
    name: str | None = None,
    **options: Any,
) -> ToolDefinition:
    """A pydantic-ai tool as a toolnursery definition.

    The definition lists the tool's own JSON Schema; our validator checks a call's
    arguments against it before the body runs (an ``INVALID_ARGS`` result, one line),
    then pydantic-ai's validator converts them to the function's types. A tool taking
    a ``RunContext`` receives one built from our context (see
    ``ToolnurseryRunContext``, a pydantic-ai ``DurableRunContext``; the live one, with our ``deps``, when the call
    comes from a pydantic-ai run through :class:`ToolnurseryToolset`). ``ModelRetry``
    and ``ToolFailed`` become error results with their message. The body is asyncio
    code (a sync function runs in pydantic-ai's executor), so it runs through
    ``toolnursery.aio``; a toolnursery abort cancels it.

    Args:
        tool: a ``pydantic_ai.Tool`` or a function pydantic-ai can make one of.
        name: the tool name (default: the tool's).
        **options: :class:`ToolDefinition` options (``timeout_ms``, ``idempotent``,
            ``is_concurrency_safe``, ``concurrency_keys``, ``max_concurrency``…).

    Raises:
        RegistrationError: ``tool`` is neither a ``Tool`` nor a callable.
    """
    if not isinstance(tool, Tool):
        if not callable(tool):
            raise RegistrationError(
                f"from_pydantic_ai(): expected a pydantic_ai.Tool or a function, "
                f"got {type(tool).__name__}"
            )
        tool = Tool(tool)
    schema = tool.function_schema
    definition = tool.tool_def

    async def body(args: Mapping[str, Any], ctx: ToolRunContext[Any]) -> Any:
        try:
            validated = schema.validator.validate_python(thaw(args))
        except pydantic.ValidationError as exc:
            raise ToolArgsError(_violations(exc)) from None
        try:
            return await schema.call(validated, _run_context(ctx))
        except pai_exceptions.ModelRetry as exc:
            raise ToolError(" ".join(str(exc.message).split()), code="MODEL_RETRY") from None
        except pai_exceptions.ToolFailed as exc:
            raise ToolError(" ".join(str(exc.message).split()), code="TOOL_FAILED") from None
        except Exception as exc:
            raise one_line_error(exc) from exc

    return ToolDefinition(
        name or definition.name,
        definition.description or "",
        dict(definition.parameters_json_schema),
        asyncio_tool(body),
        **options,
    )


def _violations(exc: pydantic.ValidationError) -> list[str]:
    return [
        f'"{".".join(str(part) for part in error["loc"]) or "arguments"}" {error["msg"]}'
        for error in exc.errors(include_url=False)
    ]
