"""toolnursery.langchain: LangChain tools into a registry, a registry out as LangChain tools.

Against the real ``langchain_core`` (and, for the agent run, LangGraph's own
``ToolNode`` with the fake chat model); sync tests drive ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

pytest.importorskip("langchain_core")

import sniffio
import trio
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool

import toolnursery.aio
from toolnursery import (
    TOOL_ABORTED,
    Deny,
    ToolCall,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    tool,
)
from toolnursery.langchain import LangChainToolError, from_langchain, to_langchain

T = TypeVar("T")


def _run(main: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(main)


def _batch(registry: ToolRegistry, *calls: ToolCall, **kwargs: Any) -> list[ToolExecutionResult]:
    return _run(toolnursery.aio.run_tool_calls(registry, calls, **kwargs))


def _registry(*tools: BaseTool) -> ToolRegistry:
    registry = ToolRegistry()
    for lc in tools:
        registry.register(from_langchain(lc))
    return registry


# -- their tools in ---------------------------------------------------------------------------


def test_a_sync_tool_runs_on_a_worker_thread_with_langchains_schema() -> None:
    threads: list[int] = []

    @lc_tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        threads.append(threading.get_ident())
        return a + b

    definition = from_langchain(add)
    assert definition.name == "add"
    assert definition.description == "Add two integers."
    assert definition.parameters["required"] == ["a"]
    [result] = _batch(_registry(add), ToolCall("1", "add", '{"a": 40}'))
    assert result.text == "42"
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


def test_an_async_tool_runs_on_the_asyncio_loop() -> None:
    @lc_tool
    async def where(text: str) -> str:
        """Say which library runs this."""
        await asyncio.sleep(0)
        return f"{text} on {sniffio.current_async_library()}"

    [result] = _batch(_registry(where), ToolCall("1", "where", {"text": "hi"}))
    assert result.text == "hi on asyncio"


def test_invalid_arguments_get_our_one_line_error_not_langchains_report() -> None:
    ran: list[int] = []

    @lc_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(a)
        return a + b

    with pytest.raises(Exception) as theirs:  # what LangChain alone hands back
        add.invoke({"a": "x"})
    assert "\n" in str(theirs.value)
    [result] = _batch(_registry(add), ToolCall("1", "add", {"a": "x"}))
    assert (
        result.text
        == 'Error: invalid arguments: "a" must be an integer; missing required property "b"'
    )
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert ran == []


def test_tool_exceptions_become_one_line_error_results() -> None:
    @lc_tool
    def broken(path: str) -> str:
        """Fail."""
        raise ToolException(f"cannot read {path}\n  permission denied\n")

    @lc_tool
    async def crashing(path: str) -> str:
        """Crash."""
        raise ValueError("bad\npath")

    results = _batch(
        _registry(broken, crashing),
        ToolCall("1", "broken", {"path": "/etc"}),
        ToolCall("2", "crashing", {"path": "/x"}),
    )
    assert [r.text for r in results] == [
        'Error: tool "broken": cannot read /etc; permission denied',
        'Error: tool "crashing": bad; path',
    ]
    assert {r.error.code for r in results if r.error} == {LangChainToolError.code}


def test_outputs_that_are_not_text_come_back_as_langchain_renders_them() -> None:
    @lc_tool
    def listing(n: int) -> dict[str, Any]:
        """List."""
        return {"items": list(range(n))}

    @lc_tool(response_format="content_and_artifact")
    def with_artifact(n: int) -> tuple[str, Any]:
        """Content and artifact."""
        return f"{n} rows", {"rows": n}

    class Opaque:
        def __str__(self) -> str:
            return "an opaque value"

    @lc_tool
    def opaque() -> Any:
        """Return something without a JSON form."""
        return Opaque()

    results = _batch(
        _registry(listing, with_artifact, opaque),
        ToolCall("1", "listing", {"n": 2}),
        ToolCall("2", "with_artifact", {"n": 3}),
        ToolCall("3", "opaque", {}),
    )
    # LangChain's own text for a ToolMessage: json.dumps, its spacing included
    assert [r.text for r in results] == ['{"items": [0, 1]}', "3 rows", "an opaque value"]


def test_a_batch_abort_cancels_their_asyncio_tool() -> None:
    events: list[str] = []

    async def hang(seconds: float) -> str:
        events.append("started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return "slept"

    registry = _registry(
        StructuredTool.from_function(coroutine=hang, name="hang", description="Hang.")
    )

    async def main() -> list[ToolExecutionResult]:
        async with toolnursery.aio.open_tool_batch(registry) as batch:
            batch.submit(ToolCall("1", "hang", {"seconds": 3600}))
            while not events:
                await asyncio.sleep(0)
            batch.signal.cancel("stop")
        return batch.results

    [result] = _run(main())
    assert events == ["started", "cancelled"]
    assert result.error is not None
    assert result.error.code == TOOL_ABORTED


def test_from_langchain_refuses_what_is_not_a_tool_and_renames() -> None:
    with pytest.raises(
        TypeError, match="needs a LangChain BaseTool, not builtin_function_or_method"
    ):
        from_langchain(len)  # type: ignore[arg-type]

    @lc_tool
    def ping() -> str:
        """Ping."""
        return "pong"

    definition = from_langchain(ping, name="ping2")
    assert definition.name == "ping2"
    assert definition.parameters["type"] == "object"


# -- our registry out -------------------------------------------------------------------------


@tool
async def greet(name: str, ctx: ToolRunContext) -> str:
    """Greet someone."""
    return f"hello {name} from {ctx.deps}"


def test_exported_tools_run_through_the_pipeline_with_deps() -> None:
    registry = ToolRegistry()
    registry.register(greet)
    seen: list[str] = []

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        seen.append(execution.name)
        return await next_()

    registry.on_pre_execute(pre)
    ids: list[str] = []
    registry.on_result(lambda execution, result: ids.append(execution.call_id))
    [exported] = to_langchain(registry, deps="tests")
    assert isinstance(exported, BaseTool)
    assert exported.name == "greet"
    assert exported.description == "Greet someone."
    assert exported.args == {"name": {"type": "string"}}
    assert _run(exported.ainvoke({"name": "ada"})) == "hello ada from tests"
    assert exported.invoke({"name": "bob"}) == "hello bob from tests"
    assert seen == ["greet", "greet"]
    assert all(id.startswith("lc-") for id in ids)  # no tool call: an id from LangChain's run


def test_an_error_result_is_an_error_tool_message() -> None:
    registry = ToolRegistry()
    registry.register(greet)

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        return Deny("not today")

    registry.on_pre_execute(pre)
    seen: list[str] = []
    registry.on_result(lambda execution, result: seen.append(execution.call_id))
    [exported] = to_langchain(registry)
    call = {"type": "tool_call", "id": "c9", "name": "greet", "args": {"name": "x"}}
    message = _run(exported.ainvoke(call))
    assert isinstance(message, ToolMessage)
    assert (message.status, message.content, message.tool_call_id) == (
        "error",
        "Error: not today",
        "c9",
    )
    assert seen == ["c9"]  # the registry saw the model's call id
    plain = ToolRegistry()
    plain.register(greet)
    [unguarded] = to_langchain(plain)
    bad = _run(unguarded.ainvoke({**call, "args": {"name": 3}}))
    assert (bad.status, bad.content) == (
        "error",
        'Error: invalid arguments: "name" must be a string',
    )


def test_to_langchain_picks_names_and_refuses_unknown_ones() -> None:
    registry = ToolRegistry()
    registry.register(greet)
    assert [t.name for t in to_langchain(registry, names=["greet"])] == ["greet"]
    with pytest.raises(KeyError, match='no tool "nope"'):
        to_langchain(registry, names=["nope"])


def test_cancelling_langchains_call_aborts_our_body() -> None:
    events: list[str] = []
    started = trio.Event()

    @tool
    async def hang(seconds: float) -> str:
        """Hang."""
        started.set()
        try:
            await trio.sleep(seconds)
        finally:
            events.append("unwound")
        return "slept"

    registry = ToolRegistry()
    registry.register(hang)
    [exported] = to_langchain(registry)

    async def main() -> None:
        task = asyncio.ensure_future(exported.ainvoke({"seconds": 3600}))
        while not started.is_set():
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert events == ["unwound"]

    _run(main())


def test_langgraphs_toolnode_runs_exported_tools_in_an_agent_turn() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    registry = ToolRegistry()
    registry.register(greet)
    registry.register(
        from_langchain(
            StructuredTool.from_function(lambda a, b: a - b, name="sub", description="Subtract.")
        )
    )
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    {"id": "1", "name": "greet", "args": {"name": "ada"}, "type": "tool_call"},
                    {"id": "2", "name": "sub", "args": {"a": 5, "b": 3}, "type": "tool_call"},
                ],
            ),
            AIMessage("done"),
        ]
    )

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(to_langchain(registry, deps="graph")))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    state = _run(graph.compile().ainvoke({"messages": [HumanMessage("go")]}))
    messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in messages] == [
        ("1", "hello ada from graph"),
        ("2", "2"),
    ]


# -- drop-in: create_agent, injected parameters, LangChain's own answers ----------------------

from typing import Annotated  # noqa: E402

import msgspec  # noqa: E402
from langchain_core.tools import InjectedToolArg, InjectedToolCallId  # noqa: E402

from toolnursery import Depends  # noqa: E402


def _tool_calling_model(responses: list[Any]) -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    class ToolCallingFakeModel(FakeMessagesListChatModel):
        """LangChain's fake chat model, with the ``bind_tools`` an agent calls."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    return ToolCallingFakeModel(responses=responses)


def _turn(*calls: tuple[str, str, dict[str, Any]]) -> Any:
    from langchain_core.messages import AIMessage

    return AIMessage(
        "", tool_calls=[{"id": i, "name": n, "args": a, "type": "tool_call"} for i, n, a in calls]
    )


def test_create_agent_runs_a_registrys_tools_swapped_in_with_one_call() -> None:
    agents = pytest.importorskip("langchain.agents")
    from langchain_core.messages import AIMessage, HumanMessage

    registry = ToolRegistry()
    registry.register(greet)

    async def no_sundays(execution: ToolExecution, next_: Any) -> Any:
        return Deny("not on sundays") if execution.arguments["name"] == "sun" else await next_()

    registry.on_pre_execute(no_sundays)
    model = _tool_calling_model(
        [_turn(("1", "greet", {"name": "ada"}), ("2", "greet", {"name": "sun"})), AIMessage("done")]
    )
    agent = agents.create_agent(model, tools=to_langchain(registry, deps="agent"))
    state = _run(agent.ainvoke({"messages": [HumanMessage("hi")]}))
    messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status, m.content) for m in messages] == [
        ("1", "success", "hello ada from agent"),
        ("2", "error", "Error: not on sundays"),
    ]
    assert state["messages"][-1].content == "done"


@lc_tool
def admin_secret(q: str, auth: Annotated[dict[str, Any], InjectedToolArg]) -> str:
    """Show the secret to admins."""
    return "the secret" if auth.get("role") == "admin" else "no"


@lc_tool
def whose(q: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """The call's id."""
    return f"{q} for {tool_call_id}"


def test_a_model_filling_an_injected_parameter_is_refused_before_the_tool_runs() -> None:
    ran: list[str] = []

    @lc_tool
    def audited(q: str, who: Annotated[str, InjectedToolArg]) -> str:
        """Run with an audit name."""
        ran.append(who)
        return who

    results = _batch(
        _registry(admin_secret, whose, audited),
        ToolCall("1", "admin_secret", {"q": "x", "auth": {"role": "admin"}}),
        ToolCall("2", "whose", {"q": "x", "tool_call_id": "forged"}),
        ToolCall("3", "audited", {"q": "x", "who": "root"}),
        ToolCall("4", "whose", {"q": "y"}),
    )
    refusal = 'Error: invalid arguments: argument "{}" is supplied by the host, not the model'
    assert [r.text for r in results] == [
        refusal.format("auth"),
        refusal.format("tool_call_id"),
        refusal.format("who"),
        "y for 4",  # InjectedToolCallId: our call's id
    ]
    assert [r.error.code if r.error else None for r in results] == [
        "INVALID_ARGS",
        "INVALID_ARGS",
        "INVALID_ARGS",
        None,
    ]
    assert ran == []
    assert "auth" not in from_langchain(admin_secret).parameters["properties"]


class Account(msgspec.Struct):
    role: str


def _account() -> Account:
    return Account("user")


@tool
async def account_secret(q: str, account: Annotated[Account, Depends(_account)]) -> str:
    """Show the secret to admins."""
    return "the secret" if account.role == "admin" else f"no secret for {account.role}"


def test_an_exported_tools_injected_dependency_is_never_filled_by_the_model() -> None:
    registry = ToolRegistry()
    registry.register(account_secret)
    [exported] = to_langchain(registry)
    assert "account" not in exported.tool_call_schema["properties"]  # type: ignore[index]
    forged = {"q": "x", "account": {"role": "admin"}}
    message = _run(
        exported.ainvoke({"type": "tool_call", "id": "1", "name": exported.name, "args": forged})
    )
    assert "the secret" not in message.content


def test_a_tools_own_handle_tool_error_answer_is_an_error_result() -> None:
    @lc_tool
    def picky(q: str) -> str:
        """Refuse."""
        raise ToolException("not today")

    picky.handle_tool_error = True
    [result] = _batch(_registry(picky), ToolCall("1", "picky", {"q": "x"}))
    assert result.is_error
    assert result.text == 'Error: tool "picky": not today'
    assert result.error is not None
    assert result.error.code == LangChainToolError.code


def test_an_exported_asyncio_tool_runs_on_the_asyncio_driver_and_a_cancel_aborts_it() -> None:
    from toolnursery.aio import asyncio_tool

    events: list[str] = []
    started = asyncio.Event()

    @asyncio_tool
    @tool
    async def wait(seconds: float) -> str:
        """Wait on asyncio."""
        started.set()
        try:
            await asyncio.sleep(seconds)
        finally:
            events.append("unwound")
        return "waited"

    registry = ToolRegistry()
    registry.register(wait)

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        # a hook runs on the call's driver: an asyncio task natively, a trio task in the
        # guest run (outside any asyncio task)
        events.append("asyncio" if asyncio.current_task() is not None else "trio")
        return await next_()

    registry.on_pre_execute(pre)
    registry.on_result(
        lambda execution, result: events.append(str(result.error and result.error.code))
    )
    [exported] = to_langchain(registry)

    async def main() -> None:
        assert await exported.ainvoke({"seconds": 0}) == "waited"
        started.clear()
        task = asyncio.ensure_future(exported.ainvoke({"seconds": 3600}))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    _run(main())
    assert events == ["asyncio", "unwound", "None", "asyncio", "unwound", TOOL_ABORTED]
