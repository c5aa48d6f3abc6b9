"""An ``ask`` whose arguments fail the tool's schema is not put to a person.

The pre-execute waterfall answers ``Ask``; before the approval service is consulted,
the tool's own argument check runs (the one its ``execute`` runs at dispatch, B028).
Arguments it refuses end the call with the tool's ``INVALID_ARGS`` result, the result
the call would have had after a grant; arguments it accepts are asked about as before
(B061, B062) and are not checked a second time at dispatch. Unknown tools and tools
that check nothing are asked as before; B060 and B063 keep their texts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
import trio

import toolnursery.aio as aio
from toolnursery import (
    ApprovalRequest,
    Ask,
    CancelSignal,
    PostToolDecision,
    PreToolDecision,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    run_tool_calls,
    tool,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
BAD: dict[str, Any] = {"path": 3}
GOOD: dict[str, Any] = {"path": "notes.txt"}
INVALID = 'Error: invalid arguments: "path" must be a string'


class Approval:
    """An approval service answering ``outcome``, recording what it was asked."""

    def __init__(self, outcome: str = "allowed-once") -> None:
        self.outcome = outcome
        self.requests: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        return self.outcome


class Checked(msgspec.Struct, frozen=True):
    """Struct parameters that count each time a call's arguments are parsed."""

    path: str

    def __post_init__(self) -> None:
        PARSED.append(self.path)


PARSED: list[str] = []
REGISTERED: list[Any] = []  # the disposers of the definitions _asking registered


def _body(args: Any, ctx: ToolRunContext) -> str:
    path = args.path if isinstance(args, Checked) else args["path"]
    return f"read {path}"


def _define_spec() -> ToolDefinition:
    return define_tool(
        name="read",
        description="Read a file.",
        parameters={"path": {"type": "string"}},
        execute=_body,
    )


def _define_struct() -> ToolDefinition:
    return define_tool(name="read", description="Read a file.", parameters=Checked, execute=_body)


def _decorated() -> ToolDefinition:
    @tool
    async def read(path: str) -> str:
        """Read a file."""
        return f"read {path}"

    return read


def _decorated_sync() -> ToolDefinition:
    @tool
    def read(path: str, ctx: ToolRunContext) -> str:
        """Read a file."""
        return f"read {path}"

    return read


def _raw() -> ToolDefinition:
    return ToolDefinition("read", "Read a file.", SCHEMA, _body)


def _raw_async() -> ToolDefinition:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        return f"read {args['path']}"

    return ToolDefinition("read", "Read a file.", SCHEMA, body)


def _with_output() -> ToolDefinition:
    return define_tool(
        name="read",
        description="Read a file.",
        parameters={"path": {"type": "string"}},
        execute=lambda args, ctx: {"text": f"read {args['path']}"},
        output={"type": "object", "properties": {"text": {"type": "string"}}},
    )


pydantic = pytest.importorskip("pydantic")


class Where(pydantic.BaseModel):  # type: ignore[name-defined,misc]
    path: str


def _decorated_pydantic() -> ToolDefinition:
    @tool
    def read(where: Where) -> str:
        """Read a file."""
        return f"read {where.path}"

    return read


def _strict() -> ToolDefinition:
    return define_tool(
        name="read",
        description="Read a file.",
        parameters={"path": {"type": "string"}},
        execute=_body,
        strict=True,
    )


KINDS: dict[str, Callable[[], ToolDefinition]] = {
    "define_tool": _define_spec,
    "define_tool-struct": _define_struct,
    "@tool": _decorated,
    "@tool-sync": _decorated_sync,
    "raw": _raw,
    "raw-async": _raw_async,
    "define_tool-output": _with_output,
    "define_tool-strict": _strict,
}


def _asking(
    definition: ToolDefinition, approval: Approval | None
) -> tuple[ToolRegistry, list[str]]:
    """A registry whose pre-execute listener asks about every call; what post-execute saw."""
    registry = ToolRegistry(approval=approval)
    REGISTERED.append(registry.register(definition))
    seen: list[str] = []

    async def ask(
        execution: ToolExecution, next: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        return Ask("it reads files")

    async def post(
        execution: ToolExecution, result: ToolExecutionResult, next: Any
    ) -> PostToolDecision:
        seen.append(result.error.code if result.error is not None else "ok")
        decision: PostToolDecision = await next()
        return decision

    registry.on_pre_execute(ask)
    registry.on_post_execute(post)
    return registry, seen


async def _granted(definition: ToolDefinition, arguments: Any) -> ToolExecutionResult:
    """What the call gives when nothing asks (the result after a grant)."""
    registry = ToolRegistry()
    registry.register(definition)
    return await registry.execute(ToolExecutionInput("c1", "read", arguments, CancelSignal()))


@pytest.mark.spec("B028", "B061")
@pytest.mark.parametrize("kind", list(KINDS))
async def test_arguments_that_fail_the_schema_end_as_invalid_args_without_asking(
    kind: str,
) -> None:
    """The result after a grant, exactly; nobody is asked; post-execute still sees it."""
    approval = Approval()
    registry, seen = _asking(KINDS[kind](), approval)
    scope = registry.scope()
    result = await registry.execute(ToolExecutionInput("c1", "read", BAD, CancelSignal(), scope))
    assert result == await _granted(KINDS[kind](), BAD)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert approval.requests == []
    assert seen == ["INVALID_ARGS"]


@pytest.mark.spec("B061")
@pytest.mark.parametrize("kind", list(KINDS))
async def test_arguments_that_pass_are_asked_about_and_the_grant_runs_the_tool(kind: str) -> None:
    approval = Approval()
    registry, seen = _asking(KINDS[kind](), approval)
    scope = registry.scope()
    signal = CancelSignal()
    result = await registry.execute(ToolExecutionInput("c7", "read", GOOD, signal, scope))
    assert result == await _granted(KINDS[kind](), GOOD)
    assert not result.is_error
    assert approval.requests == [ApprovalRequest(scope, "read", "c7", "it reads files", signal)]
    assert seen == ["ok"]


@pytest.mark.spec("B028", "B061")
async def test_a_granted_call_is_parsed_once() -> None:
    """The check before asking parses; dispatch runs the body on what it parsed."""
    approval = Approval()
    registry, _ = _asking(_define_struct(), approval)
    PARSED.clear()
    result = await registry.execute(
        ToolExecutionInput("c1", "read", GOOD, CancelSignal(), registry.scope())
    )
    assert result.content[0].text == "read notes.txt"  # type: ignore[union-attr]
    assert PARSED == ["notes.txt"]
    assert len(approval.requests) == 1
    PARSED.clear()
    await _granted(_define_struct(), GOOD)
    assert PARSED == ["notes.txt"]  # without an ask: once, at dispatch, as before


@pytest.mark.spec("B062")
@pytest.mark.parametrize("outcome", ["rejected", "cancelled", "unavailable"])
async def test_non_grants_keep_their_texts_for_arguments_that_pass(outcome: str) -> None:
    registry, _ = _asking(_raw(), Approval(outcome))
    result = await registry.execute(
        ToolExecutionInput("c1", "read", GOOD, CancelSignal(), registry.scope())
    )
    assert result.is_error
    assert result.error is None
    assert result.content[0].text.startswith("Error: ")  # type: ignore[union-attr]
    assert "read" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.spec("B062")
async def test_a_service_that_would_reject_is_not_asked_about_invalid_arguments() -> None:
    approval = Approval("rejected")
    registry, _ = _asking(_raw(), approval)
    result = await registry.execute(
        ToolExecutionInput("c1", "read", BAD, CancelSignal(), registry.scope())
    )
    assert result.content[0].text == INVALID  # type: ignore[union-attr]
    assert approval.requests == []


@pytest.mark.spec("B060", "B063")
async def test_no_service_and_no_agent_keep_their_denials_for_invalid_arguments() -> None:
    """Where no service would be consulted, the pinned denial texts stand."""
    registry, _ = _asking(_raw(), None)
    result = await registry.execute(
        ToolExecutionInput("c1", "read", BAD, CancelSignal(), registry.scope())
    )
    assert result.content[0].text == "Error: it reads files"  # type: ignore[union-attr]
    approval = Approval()
    registry, _ = _asking(_raw(), approval)
    result = await registry.execute(ToolExecutionInput("c1", "read", BAD, CancelSignal()))
    assert result.content[0].text == (  # type: ignore[union-attr]
        'Error: tool "read" requires approval, but the call has no agent to route it through'
    )
    assert approval.requests == []


@pytest.mark.spec("B086", "B061")
async def test_an_unknown_tool_and_a_tool_without_a_schema_check_are_asked_as_before() -> None:
    approval = Approval()
    unchecked = ToolDefinition("read", "Read a file.", SCHEMA, _body, validate=False)
    registry, _ = _asking(unchecked, approval)
    scope = registry.scope()
    result = await registry.execute(
        ToolExecutionInput("c1", "read", {"path": 3}, CancelSignal(), scope)
    )
    assert result.content[0].text == "read 3"  # type: ignore[union-attr]
    result = await registry.execute(ToolExecutionInput("c2", "nope", BAD, CancelSignal(), scope))
    assert result.content[0].text == 'Error: unknown tool "nope"'  # type: ignore[union-attr]
    assert [r.call_id for r in approval.requests] == ["c1", "c2"]


@pytest.mark.spec("B149", "B086")
async def test_a_definition_replaced_while_the_person_decides_checks_at_dispatch() -> None:
    """Dispatch resolves the tool when it starts: a new definition checks the arguments
    itself (against its own schema); the one checked before asking no longer counts."""
    asked = trio.Event()
    answer = trio.Event()

    class Slow(Approval):
        async def request(self, request: ApprovalRequest) -> Any:
            asked.set()
            await answer.wait()
            return "allowed-once"

    registry, _ = _asking(_define_struct(), Slow())
    scope = registry.scope()
    PARSED.clear()
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        results.append(
            await registry.execute(ToolExecutionInput("c1", "read", GOOD, CancelSignal(), scope))
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await asked.wait()
        REGISTERED[-1]()
        registry.register(
            define_tool(
                name="read",
                description="Read a file, by number.",
                parameters={"path": {"type": "integer"}},
                execute=_body,
            )
        )
        answer.set()
    assert PARSED == ["notes.txt"]
    assert results[0].content[0].text == (  # type: ignore[union-attr]
        'Error: invalid arguments: "path" must be an integer'
    )


@pytest.mark.spec("B061")
async def test_a_hook_change_while_the_person_decides_keeps_the_parsed_arguments() -> None:
    asked = trio.Event()
    answer = trio.Event()

    class Slow(Approval):
        async def request(self, request: ApprovalRequest) -> Any:
            asked.set()
            await answer.wait()
            return "allowed-once"

    registry, _ = _asking(_define_struct(), Slow())
    scope = registry.scope()
    PARSED.clear()
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        results.append(
            await registry.execute(ToolExecutionInput("c1", "read", GOOD, CancelSignal(), scope))
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await asked.wait()
        registry.on_result(lambda execution, result: None)  # a new version of the view
        answer.set()
    assert results[0].content[0].text == "read notes.txt"  # type: ignore[union-attr]
    assert PARSED == ["notes.txt"]


# -- in a batch, on both drivers ----------------------------------------------------------


def _batch_registry(approval: Approval) -> ToolRegistry:
    registry = ToolRegistry(approval=approval)
    registry.register(_raw())

    def ask(execution: ToolExecution, next: Any) -> Any:
        return _ask_now()

    registry.on_pre_execute(ask)
    return registry


async def _ask_now() -> PreToolDecision:
    return Ask("it reads files")


CALLS = [
    ToolCall("c1", "read", '{"path": 3}'),
    ToolCall("c2", "read", '{"path": "a.txt"}'),
    ToolCall("c3", "read", "{}"),
]


def _check_batch(results: list[ToolExecutionResult], approval: Approval) -> None:
    assert [r.content[0].text for r in results] == [  # type: ignore[union-attr]
        INVALID,
        "read a.txt",
        'Error: invalid arguments: missing required property "path"',
    ]
    assert [r.error.code if r.error else None for r in results] == [
        "INVALID_ARGS",
        None,
        "INVALID_ARGS",
    ]
    assert [r.call_id for r in approval.requests] == ["c2"]


@pytest.mark.spec("B028", "B061")
async def test_a_trio_batch_asks_only_about_the_calls_whose_arguments_pass() -> None:
    approval = Approval()
    registry = _batch_registry(approval)
    results = await run_tool_calls(registry, CALLS, agent=registry.scope())
    _check_batch(results, approval)


@pytest.mark.spec("B028", "B061")
@pytest.mark.parametrize("driver", ["asyncio", "trio"])
def test_an_asyncio_batch_asks_only_about_the_calls_whose_arguments_pass(driver: Any) -> None:
    approval = Approval()
    registry = _batch_registry(approval)

    async def main() -> list[ToolExecutionResult]:
        return await aio.run_tool_calls(registry, CALLS, agent=registry.scope(), driver=driver)

    _check_batch(asyncio.run(main()), approval)


@pytest.mark.spec("B028", "B061")
@pytest.mark.parametrize("driver", ["asyncio", "trio"])
def test_asyncio_execute_checks_before_asking(driver: Any) -> None:
    approval = Approval()
    registry = _batch_registry(approval)
    scope = registry.scope()

    async def main() -> list[ToolExecutionResult]:
        return [
            await aio.execute(
                registry,
                ToolExecutionInput("c1", "read", BAD, CancelSignal(), scope),
                driver=driver,
            ),
            await aio.execute(
                registry,
                ToolExecutionInput("c2", "read", GOOD, CancelSignal(), scope),
                driver=driver,
            ),
        ]

    bad, good = asyncio.run(main())
    assert bad.content[0].text == INVALID  # type: ignore[union-attr]
    assert good.content[0].text == "read notes.txt"  # type: ignore[union-attr]
    assert [r.call_id for r in approval.requests] == ["c2"]


# -- a mounted MCP tool ---------------------------------------------------------------------


@pytest.mark.spec("B028", "B061")
async def test_a_mounted_mcp_tool_is_not_asked_about_arguments_its_schema_refuses() -> None:
    pytest.importorskip("mcp")
    import mcp_fixture_server as fixture
    from toolnursery.mcp import open_mcp_mount

    approval = Approval()
    registry = ToolRegistry(approval=approval)
    registry.on_pre_execute(lambda execution, next: _ask_now())
    scope = registry.scope()
    before = fixture.CALLS["echo"]
    with trio.fail_after(30):
        async with open_mcp_mount(registry, server=fixture.build(), prefix="fx_"):
            bad = await registry.execute(
                ToolExecutionInput("c1", "fx_echo", {"text": 3}, CancelSignal(), scope)
            )
            calls_after_bad = fixture.CALLS["echo"]
            good = await registry.execute(
                ToolExecutionInput("c2", "fx_echo", {"text": "hi"}, CancelSignal(), scope)
            )
    assert bad.error is not None
    assert bad.error.code == "INVALID_ARGS"
    assert bad.content[0].text == (  # type: ignore[union-attr]
        'Error: invalid arguments: "text" must be a string'
    )
    assert calls_after_bad == before
    assert good.content[0].text == "hi"  # type: ignore[union-attr]
    assert [r.call_id for r in approval.requests] == ["c2"]


@pytest.mark.spec("B028", "B061")
async def test_a_pydantic_tool_is_checked_before_asking_too() -> None:
    approval = Approval()
    registry, _ = _asking(_decorated_pydantic(), approval)
    scope = registry.scope()
    bad = {"where": {"path": 3}}
    result = await registry.execute(ToolExecutionInput("c1", "read", bad, CancelSignal(), scope))
    assert result == await _granted(_decorated_pydantic(), bad)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    good = {"where": {"path": "a.txt"}}
    result = await registry.execute(ToolExecutionInput("c2", "read", good, CancelSignal(), scope))
    assert result.content[0].text == "read a.txt"  # type: ignore[union-attr]
    assert [r.call_id for r in approval.requests] == ["c2"]


@pytest.mark.spec("B067", "B056")
async def test_guards_and_wrappers_skip_a_call_refused_before_asking() -> None:
    """Never allowed, it meets no guard and no wrapper (B067: guards only after a final
    allow); like a denial, post-execute (B056) and the observers see it."""
    registry, seen = _asking(_raw(), Approval())
    ran: list[str] = []
    registry.guard(lambda execution: ran.append(f"guard {execution.call_id}"))  # type: ignore[func-returns-value]

    async def wrapper(execution: Any, next: Any) -> ToolExecutionResult:
        ran.append(f"wrapper {execution.call_id}")
        result: ToolExecutionResult = await next()
        return result

    registry.on_execute(wrapper)
    registry.on_result(lambda execution, result: ran.append(f"observer {execution.call_id}"))  # type: ignore[func-returns-value]
    scope = registry.scope()
    await registry.execute(ToolExecutionInput("bad", "read", BAD, CancelSignal(), scope))
    await registry.execute(ToolExecutionInput("good", "read", GOOD, CancelSignal(), scope))
    assert ran == ["observer bad", "guard good", "wrapper good", "observer good"]
    assert seen == ["INVALID_ARGS", "ok"]
