"""smolagents: a smolagents ``Tool`` as a raw-schema definition in a registry.

A smolagents tool declares its arguments as ``inputs`` — a name to ``{"type",
"description", "nullable"?}`` with smolagents' own type names — and runs in a sync
``forward``. :func:`from_smolagents` translates ``inputs`` to the JSON Schema the
model sees and our validator checks (``nullable`` inputs are not required and may be
``null``; ``any`` is unconstrained; ``image`` and ``audio`` travel as strings, a path
or URL as a tool-calling model writes them), and registers ``forward`` as a plain
``def`` body, so it runs in one of trio's worker threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec
import trio
from smolagents import Tool  # type: ignore[import-untyped,unused-ignore]

from .._aio._api import execute as aio_execute
from .._aio._execute import execute_reason
from .._core._errors import RegistrationError
from .._core._execution import ToolExecutionInput, ToolRunContext
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._hosted import exported_schemas, one_line_error, result_text, thaw
from ._trust import smolagents_agents, smolagents_turn, smolagents_user_texts, trust_user_texts

__all__ = ["RegistrySmolTool", "from_smolagents", "inputs_schema", "to_smolagents"]

_JSON_TYPES: Final = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "array": {"type": "array"},
    "object": {"type": "object"},
    "null": {"type": "null"},
    "image": {"type": "string"},
    "audio": {"type": "string"},
    "any": {},
}
"""Each smolagents input type as JSON Schema (image/audio: a path or URL string)."""

_SMOLAGENTS_KEYS: Final = frozenset({"type", "nullable", "anyOf"})

_encode = msgspec.json.Encoder().encode


def inputs_schema(
    inputs: Mapping[str, Mapping[str, Any]], *, tool_name: str = "tool"
) -> dict[str, Any]:
    """The JSON Schema of a smolagents tool's ``inputs``.

    Every input is required unless it is ``nullable`` (then ``null`` is accepted
    too). A list of types, or an ``anyOf`` of typed entries, becomes an ``anyOf``;
    other keys (``description``, ``enum``, ``items``, ``properties``…) are kept.

    Raises:
        RegistrationError: an input's type is not one of smolagents' types.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in inputs.items():
        nullable = spec.get("nullable") is True
        if "anyOf" in spec:
            choices = [
                _one_type(tool_name, name, entry.get("type"), entry) for entry in spec["anyOf"]
            ]
        else:
            declared = spec.get("type")
            types = declared if isinstance(declared, list) else [declared]
            choices = [_one_type(tool_name, name, kind, {}) for kind in types]
        if nullable and {"type": "null"} not in choices:
            choices.append({"type": "null"})
        schema: dict[str, Any] = {k: v for k, v in spec.items() if k not in _SMOLAGENTS_KEYS}
        if len(choices) == 1:
            schema.update(choices[0])
        elif {} in choices:
            pass  # "any" among the choices admits everything
        else:
            schema["anyOf"] = choices
        properties[name] = schema
        if not nullable:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def _one_type(tool_name: str, name: str, kind: object, entry: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(kind, str) or kind not in _JSON_TYPES:
        raise RegistrationError(
            f'from_smolagents(): tool "{tool_name}" input "{name}" has type {kind!r}, '
            f"not one of smolagents' types ({', '.join(_JSON_TYPES)})"
        )
    extra = {k: v for k, v in entry.items() if k not in _SMOLAGENTS_KEYS}
    return {**_JSON_TYPES[kind], **extra}


def from_smolagents(
    tool: Tool,
    *,
    name: str | None = None,
    **options: Any,
) -> ToolDefinition:
    """A smolagents ``Tool`` as a toolnursery definition.

    The schema is :func:`inputs_schema` of ``tool.inputs``; our validator checks a
    call's arguments against it before ``forward`` runs (``INVALID_ARGS``, one line).
    ``forward`` runs through ``tool(..., sanitize_inputs_outputs=True)`` (its
    ``setup`` on first use, smolagents' agent types unwrapped) in a worker thread.
    Output: a ``str`` as it is, a ``dict``/``list`` as JSON, anything else (an
    ``AgentImage``'s path, a number) by ``str()``. An exception is an error result on
    one line. Like any thread, a running ``forward`` cannot be interrupted: an abort
    or timeout waits for it to return, then the call settles as ``ABORTED`` or
    ``TOOL_TIMEOUT``.

    Args:
        tool: the smolagents tool (an instance).
        name: the tool name (default: ``tool.name``).
        **options: :class:`ToolDefinition` options (``timeout_ms``, ``idempotent``,
            ``is_concurrency_safe``, ``concurrency_keys``, ``max_concurrency``…).

    Raises:
        RegistrationError: ``tool`` is not a smolagents ``Tool`` instance, or an
            input's type is not one of smolagents' types.
    """
    if not isinstance(tool, Tool):
        raise RegistrationError(
            f"from_smolagents(): expected a smolagents.Tool instance, got {type(tool).__name__}"
        )
    parameters = inputs_schema(tool.inputs, tool_name=tool.name)

    def body(args: Mapping[str, Any], ctx: ToolRunContext[Any]) -> str:
        try:
            output = tool(**thaw(args), sanitize_inputs_outputs=True)
        except Exception as exc:
            raise one_line_error(exc) from exc
        if isinstance(output, str):
            return str(output)
        if isinstance(output, dict | list):
            return _encode(output).decode()
        return str(output)

    return ToolDefinition(
        name or tool.name,
        tool.description,
        parameters,
        body,
        **options,
    )


_SMOL_TYPES: Final = frozenset(
    {"string", "boolean", "integer", "number", "array", "object", "null", "any"}
)
_CALL_NUMBERS = itertools.count(1)


def _input_of(name: str, schema: Any, required: bool) -> dict[str, Any]:
    """One property of a JSON Schema as a smolagents input (a type it knows, or ``any``)."""
    schema = schema if isinstance(schema, Mapping) else {}
    declared = schema.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    known = [kind for kind in kinds if kind in _SMOL_TYPES]
    kind: Any = "any" if not known or len(known) != len(kinds) else known
    if isinstance(kind, list):
        kind = kind[0] if len(kind) == 1 else kind
    entry: dict[str, Any] = {"type": kind, "description": str(schema.get("description") or name)}
    if not required:
        entry["nullable"] = True
    return entry


class _InPlace(concurrent.futures.ThreadPoolExecutor):
    """A thread's loop's default executor that runs what it is given at once, in that
    thread: a sync body runs in smolagents' worker thread, as smolagents runs it (the
    loop serves that one call; nothing else waits on it)."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)  # never starts a thread: submit() runs in place

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting call, as a thread's would be
            future.set_exception(exc)
        return future


class _ThreadLoop:
    """The asyncio loop a thread runs its calls on, closed when the thread ends."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(_InPlace())

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.close()


_LOOPS = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    owned: _ThreadLoop | None = getattr(_LOOPS, "owned", None)
    if owned is None or owned.loop.is_closed():
        owned = _LOOPS.owned = _ThreadLoop()
    return owned.loop


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class RegistrySmolTool(Tool):  # type: ignore[misc]
    """A registry tool as a smolagents ``Tool``; made by :func:`to_smolagents`.

    ``forward`` runs the call through the registry's pipeline in the calling thread
    (smolagents calls tools from its worker threads) and returns the result's text; a
    failure is toolnursery's one-line ``Error: ...`` text, what the model reads as the
    observation. A call whose tool and hooks run on asyncio (a ``def`` or
    ``asyncio_tool`` body, loop-neutral hooks) runs on the thread's own asyncio loop,
    kept for the thread's next calls (a ``def`` body runs in place, in smolagents'
    thread); any other call, or one made from a thread whose
    asyncio loop is running, in a ``trio.run`` of its own.
    """

    skip_forward_signature_validation = True
    output_type = "string"

    def __init__(
        self,
        registry: ToolRegistry,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        *,
        agent: ToolScope | None = None,
        deps: Any = None,
        trust_user_messages: bool = True,
    ) -> None:
        properties = parameters.get("properties") or {}
        required = set(parameters.get("required") or ())
        self.name = name
        self.description: str = description or name
        self.inputs: dict[str, dict[str, Any]] = {
            key: _input_of(key, value, key in required) for key, value in properties.items()
        }
        self.registry = registry
        self.agent = agent
        self.deps = deps
        self.trust_user_messages = trust_user_messages
        super().__init__()

    def forward(self, *args: Any, **kwargs: Any) -> str:
        """Run the call through the registry; its text (an error on one line)."""
        ledger = None if self.agent is None else self.agent.existing_provenance()
        inner, outer = smolagents_agents() if ledger is not None else (None, None)
        if self.trust_user_messages:  # the calling agent's task: text the user wrote
            trust_user_texts(self.agent, smolagents_user_texts(outer))
        if args:
            if len(args) != 1 or len(self.inputs) != 1 or kwargs:
                return f'Error: tool "{self.name}" takes its arguments by name'
            kwargs = {next(iter(self.inputs)): args[0]}
        arguments = {
            key: value
            for key, value in kwargs.items()
            if value is not None or not self.inputs.get(key, {}).get("nullable")
        }
        call = ToolExecutionInput(
            f"smol-{next(_CALL_NUMBERS)}",
            self.name,
            arguments,
            signal=CancelSignal(),
            agent=self.agent,
        )

        turn = smolagents_turn(inner)
        if turn is None or ledger is None:
            return self._run(call)
        ledger.turns[call.call_id] = turn  # the step's calls are siblings in the ledger
        try:
            return self._run(call)
        finally:
            ledger.turns.pop(call.call_id, None)

    def _run(self, call: ToolExecutionInput) -> str:
        if not _loop_running() and execute_reason(self.registry, call) is None:
            native = aio_execute(self.registry, call, deps=self.deps, driver="asyncio")
            return result_text(_thread_loop().run_until_complete(native))

        async def run() -> str:
            return result_text(await self.registry.execute(call, deps=self.deps))

        return trio.run(run)


def to_smolagents(
    registry: ToolRegistry,
    *,
    agent: ToolScope | None = None,
    deps: Any = None,
    names: Iterable[str] | None = None,
    trust_user_messages: bool = True,
) -> list[Tool]:
    """The tools of ``registry`` (as ``agent`` sees them) as smolagents tools.

    Give them to smolagents' agents as its own
    (``ToolCallingAgent(tools=to_smolagents(registry), model=model)``): each call runs
    through the registry's pipeline (validation, policies, observers, ``ctx.deps`` =
    ``deps``). smolagents runs each call alone, so the batch scheduler (keys,
    barriers) does not apply. Inputs: each schema property with smolagents' type
    (``any`` for what it has no name for), ``nullable`` when optional; an optional
    input the model sets to ``null`` is left out. The calls run in smolagents' thread:
    on an asyncio loop of that thread when their tool and hooks allow it (``def``
    and ``asyncio_tool`` bodies), else under a ``trio.run`` (trio bodies).

    Args:
        registry: the registry.
        agent: the agent scope whose view to export (default: the registry's).
        deps: what the tools see as ``ctx.deps``.
        names: only these tools (default: all), in this order.
        trust_user_messages: trust the calling agent's task in the scope's provenance
            ledger when it keeps one (the provenance guard's), so a value the user
            wrote is ``request``; ``False`` leaves that to you.

    Raises:
        KeyError: a name in ``names`` is not a tool of that view.
    """
    tools: list[Tool] = []
    for schema in exported_schemas(registry, agent, names, "to_smolagents"):
        tools.append(
            RegistrySmolTool(
                registry,
                schema.name,
                schema.description,
                thaw(schema.parameters),
                agent=agent,
                deps=deps,
                trust_user_messages=trust_user_messages,
            )
        )
    return tools
