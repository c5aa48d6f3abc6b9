"""toolnursery.langgraph: ToolBatchNode against the real LangGraph, with its fake chat model.

Every test is a plain sync test that runs its graph with ``asyncio.run`` (LangGraph runs
on asyncio; the node hosts its batch on the loop through ``toolnursery.aio``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pytest

pytest.importorskip("langgraph")

import msgspec
import trio
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import toolnursery.aio
from toolnursery import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    Ask,
    AudioContent,
    Deny,
    Depends,
    ImageContent,
    ResourceKey,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolExecution,
    ToolRegistry,
    ToolRunContext,
    tool,
)
from toolnursery.langchain import to_langchain
from toolnursery.langgraph import STREAM_KEY, InterruptApproval, ToolBatchNode
from toolnursery.log import JsonlRecorder, ToolResultEvent

T = TypeVar("T")

PARALLEL = {"is_concurrency_safe": lambda args: True}


def _run(main: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(main)


@tool(**PARALLEL)
async def add(a: int, b: int) -> str:
    """Add two integers."""
    await trio.lowlevel.checkpoint()
    return str(a + b)


@tool(**PARALLEL)
async def multiply(a: int, b: int) -> str:
    """Multiply two integers."""
    await trio.lowlevel.checkpoint()
    return str(a * b)


def _registry(*extra: Any, approval: Any = None) -> ToolRegistry:
    registry = ToolRegistry(approval=approval)
    for definition in (add, multiply, *extra):
        registry.register(definition)
    return registry


def _ai(*calls: tuple[str, str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"id": id, "name": name, "args": args, "type": "tool_call"} for id, name, args in calls
        ],
    )


TURN = _ai(
    ("c1", "add", {"a": 1, "b": 2}),
    ("c2", "multiply", {"a": 3, "b": 4}),
    ("c3", "add", {"a": "x"}),
    ("c4", "missing", {}),
)


def _agent_graph(node: Any, responses: list[BaseMessage], *, checkpointer: Any = None) -> Any:
    """A ReAct loop: the fake chat model's node, then ``node`` while it calls tools."""
    model = FakeMessagesListChatModel(responses=responses)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", node)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def _tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def test_an_agent_turn_with_four_calls_gets_tool_messages_in_model_order() -> None:
    app = _agent_graph(ToolBatchNode(_registry()), [TURN, AIMessage("done")])
    state = _run(app.ainvoke({"messages": [HumanMessage("compute")]}))
    messages = _tool_messages(state)
    assert [(m.tool_call_id, m.name, m.status) for m in messages] == [
        ("c1", "add", "success"),
        ("c2", "multiply", "success"),
        ("c3", "add", "error"),
        ("c4", "missing", "error"),
    ]
    assert [m.content for m in messages[:2]] == ["3", "12"]
    # Our one-line messages: the validator's, and the registry's unknown tool.
    assert messages[2].content == (
        'Error: invalid arguments: "a" must be an integer; missing required property "b"'
    )
    assert messages[3].content == 'Error: unknown tool "missing"'
    assert state["messages"][-1].content == "done"


def test_the_node_answers_as_toolnode_does_for_successful_calls() -> None:
    turn = _ai(("c1", "add", {"a": 1, "b": 2}), ("c2", "multiply", {"a": 3, "b": 4}))
    registry = _registry()
    ours = _run(
        _agent_graph(ToolBatchNode(registry), [turn, AIMessage("ok")]).ainvoke({"messages": []})
    )
    theirs = _run(
        _agent_graph(ToolNode(to_langchain(registry)), [turn, AIMessage("ok")]).ainvoke(
            {"messages": []}
        )
    )

    def shape(state: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(m.tool_call_id, m.name, m.status, m.content) for m in _tool_messages(state)]

    assert (
        shape(ours)
        == shape(theirs)
        == [("c1", "add", "success", "3"), ("c2", "multiply", "success", "12")]
    )


def test_list_state_gives_a_list_and_tool_call_dicts_give_a_messages_update() -> None:
    node = ToolBatchNode(_registry(), messages_key="history")
    as_list = _run(node([HumanMessage("hi"), TURN]))
    assert [m.tool_call_id for m in as_list] == ["c1", "c2", "c3", "c4"]
    direct = _run(
        node([{"id": "d1", "name": "add", "args": {"a": 2, "b": 2}, "type": "tool_call"}])
    )
    assert [m.content for m in direct["history"]] == ["4"]
    # ToolNode's own errors for inputs that hold no calls
    with pytest.raises(ValueError, match="No AIMessage found in input"):
        _run(node({"history": [HumanMessage("hi")]}))
    with pytest.raises(ValueError, match="No message found in input"):
        _run(node({"messages": [TURN]}))


def test_results_stream_as_they_commit_in_model_order_while_bodies_overlap() -> None:
    second_done = trio.Event()
    finished: list[str] = []

    @tool(**PARALLEL)
    async def slow(a: int) -> str:
        """Wait for the fast call."""
        await second_done.wait()
        finished.append("slow")
        return "slow"

    @tool(**PARALLEL)
    async def fast(a: int) -> str:
        """Finish first."""
        finished.append("fast")
        second_done.set()
        return "fast"

    turn = _ai(("s", "slow", {"a": 1}), ("f", "fast", {"a": 1}))
    app = _agent_graph(ToolBatchNode(_registry(slow, fast), stream=True), [turn, AIMessage("ok")])

    async def main() -> list[tuple[str, Any]]:
        return [
            (mode, chunk)
            async for mode, chunk in app.astream(
                {"messages": []}, stream_mode=["custom", "updates"]
            )
        ]

    chunks = _run(main())
    assert finished == ["fast", "slow"]  # the bodies overlapped
    streamed = [chunk[STREAM_KEY].tool_call_id for mode, chunk in chunks if mode == "custom"]
    assert streamed == ["s", "f"]  # committed in model order
    kinds = [(mode, next(iter(chunk))) for mode, chunk in chunks]
    assert kinds.index(("custom", STREAM_KEY)) < kinds.index(("updates", "tools"))


def test_resource_keys_serialise_the_calls_that_share_a_key() -> None:
    running = 0
    peak: dict[str, int] = {}

    def keyed(name: str, key: str) -> Any:
        @tool(name=name, concurrency_keys=lambda args: [ResourceKey.write(key)])
        async def body(path: str) -> str:
            """Write a file."""
            nonlocal running
            running += 1
            peak[name] = max(peak.get(name, 0), running)
            await trio.sleep(0)
            await trio.sleep(0)
            running -= 1
            return path

        return body

    registry = _registry(keyed("write_a", "fs:a"), keyed("write_a2", "fs:a"))
    node = ToolBatchNode(registry)
    out = _run(node([_ai(("1", "write_a", {"path": "x"}), ("2", "write_a2", {"path": "y"}))]))
    assert [m.content for m in out] == ["x", "y"]
    assert peak == {"write_a": 1, "write_a2": 1}


def test_policies_run_and_deny_with_our_text() -> None:
    seen: list[str] = []
    registry = _registry()

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        seen.append(execution.call_id)
        if execution.name == "multiply":
            return Deny("multiplication is not allowed here")
        return await next_()

    registry.on_pre_execute(pre)
    out = _run(
        ToolBatchNode(registry)(
            [_ai(("1", "add", {"a": 1, "b": 1}), ("2", "multiply", {"a": 1, "b": 1}))]
        )
    )
    assert seen == ["1", "2"]
    assert [(m.status, m.content) for m in out] == [
        ("success", "2"),
        ("error", "Error: multiplication is not allowed here"),
    ]


class Account(msgspec.Struct, frozen=True):
    owner: str


@tool
async def whoami(account: Annotated[Account, Depends()], greeting: str) -> str:
    """Greet the account owner."""
    return f"{greeting}, {account.owner}"


@tool
async def raw_deps(greeting: str, ctx: ToolRunContext) -> str:
    """Show the deps."""
    return f"{greeting}: {ctx.deps!r}"


def test_deps_are_passed_through_or_taken_from_the_graph_context() -> None:
    turn = _ai(("1", "whoami", {"greeting": "hello"}))
    explicit = ToolBatchNode(_registry(whoami), deps=Account("ada"))
    assert _run(explicit([turn]))[0].content == "hello, ada"

    app = _agent_graph(
        ToolBatchNode(_registry(raw_deps)),
        [_ai(("1", "raw_deps", {"greeting": "ctx"})), AIMessage("ok")],
    )
    state = _run(app.ainvoke({"messages": []}, context={"tenant": "t1"}))
    assert _tool_messages(state)[0].content == "ctx: {'tenant': 't1'}"


def test_the_recorder_logs_the_batch_and_a_rerun_resumes_from_the_log(tmp_path: Path) -> None:
    runs: list[int] = []

    @tool(**PARALLEL)
    async def count(n: int) -> str:
        """Count a run."""
        runs.append(n)
        return str(n)

    log = tmp_path / "turn.jsonl"
    registry = _registry(count)
    turn = [_ai(("1", "count", {"n": 1}), ("2", "count", {"n": 2}))]
    first = _run(ToolBatchNode(registry, recorder=JsonlRecorder(log))(turn))
    again = _run(ToolBatchNode(registry, recorder=JsonlRecorder(log), resume_from=log)(turn))
    assert runs == [1, 2]  # the resumed run took both results from the log
    assert [m.content for m in first] == [m.content for m in again] == ["1", "2"]


def test_cancelling_the_node_aborts_the_batch_and_waits_for_the_body() -> None:
    events: list[str] = []
    started = trio.Event()

    @tool(**PARALLEL)
    async def hang(a: int) -> str:
        """Never finish."""
        events.append("started")
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            events.append("unwound")
        return "never"

    class Recorder:
        def __init__(self) -> None:
            self.results: list[Any] = []

        def record(self, event: Any, /) -> None:
            if isinstance(event, ToolResultEvent):
                self.results.append((event.call_id, event.result.error))

    recorder = Recorder()
    node = ToolBatchNode(_registry(hang), recorder=recorder, max_parallel=1)

    async def main() -> None:
        task = asyncio.ensure_future(
            node([_ai(("1", "hang", {"a": 1}), ("2", "add", {"a": 1, "b": 1}))])
        )
        while not started.is_set():
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert events == ["started", "unwound"]  # the body unwound before the node raised

    _run(main())
    codes = [(id, error.code if error else None) for id, error in recorder.results]
    assert codes == [("1", TOOL_ABORTED), ("2", TOOL_ABORTED_BEFORE_DISPATCH)]


def test_an_ask_interrupts_the_graph_and_the_resume_value_decides() -> None:
    deleted: list[str] = []

    @tool
    async def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    registry = _registry(delete, approval=InterruptApproval())

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        return Ask("deleting needs a human") if execution.name == "delete" else await next_()

    registry.on_pre_execute(pre)
    turn = _ai(("1", "add", {"a": 1, "b": 1}), ("2", "delete", {"path": "a.txt"}))
    config = {"configurable": {"thread_id": "t"}}

    def interrupted_then(answer: Any) -> tuple[Any, dict[str, Any]]:
        app = _agent_graph(
            ToolBatchNode(registry, agent=registry.scope()),
            [turn, AIMessage("done")],
            checkpointer=InMemorySaver(),
        )

        async def main() -> tuple[Any, dict[str, Any]]:
            first = await app.ainvoke({"messages": []}, config)
            return first["__interrupt__"], await app.ainvoke(Command(resume=answer), config)

        return _run(main())

    interrupts, state = interrupted_then(True)
    assert [i.value for i in interrupts] == [
        {"tool": "delete", "call_id": "2", "reason": "deleting needs a human"}
    ]
    assert [(m.status, m.content) for m in _tool_messages(state)] == [
        ("success", "2"),
        ("success", "deleted a.txt"),
    ]
    assert deleted == ["a.txt"]

    _, state = interrupted_then({"approve": True})  # only True or an approving word runs it
    assert [(m.status, m.content) for m in _tool_messages(state)][1] == (
        "error",
        'Error: the user rejected tool "delete"',
    )
    assert deleted == ["a.txt"]
    _, state = interrupted_then("approve")
    assert _tool_messages(state)[1].content == "deleted a.txt"
    assert deleted == ["a.txt", "a.txt"]


def test_outside_a_node_run_the_interrupt_approval_is_unavailable() -> None:
    registry = _registry(approval=InterruptApproval())

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        return Ask()

    registry.on_pre_execute(pre)

    async def main() -> Any:
        return await toolnursery.aio.run_tool_calls(
            registry, [ToolCall("1", "add", {"a": 1, "b": 1})], agent=registry.scope()
        )

    [result] = _run(main())
    assert (
        result.text == 'Error: tool "add" requires approval, but no approval channel is available'
    )


def test_the_node_refuses_what_is_not_a_registry() -> None:
    with pytest.raises(TypeError, match="a sequence of tools, not int"):
        ToolBatchNode(42)  # type: ignore[arg-type]


def test_other_state_shapes_send_inputs_and_a_plain_runnable() -> None:
    class State(msgspec.Struct):
        messages: list[Any]

    node = ToolBatchNode(_registry())
    from_attribute = _run(node(State([TURN])))
    assert [m.tool_call_id for m in from_attribute["messages"]] == ["c1", "c2", "c3", "c4"]
    sent = {"__type": "tool_call_with_context", "tool_call": TURN.tool_calls[1], "state": {}}
    assert [m.content for m in _run(node(sent))["messages"]] == ["12"]
    # Inside a LangChain runnable but outside a graph: no writer, no context.
    from langchain_core.runnables import RunnableLambda

    out = _run(RunnableLambda(node).ainvoke([TURN]))
    assert [m.status for m in out] == ["success", "success", "error", "error"]


def test_results_with_images_become_content_blocks_and_typed_values_artifacts() -> None:
    @tool
    async def snapshot(name: str) -> list[Any]:
        """Take a picture."""
        return [
            TextContent(f"{name}:"),
            ImageContent(data="aGk=", mime_type="image/png"),
            AudioContent(data="AAA=", mime_type="audio/wav"),
            ResourceLink(uri="file:///cat.png", name="cat.png"),
        ]

    @tool(output=Account)
    async def owner(name: str) -> Account:
        """Who owns it."""
        return Account(name)

    out = _run(
        ToolBatchNode(_registry(snapshot, owner))(
            [_ai(("1", "snapshot", {"name": "cat"}), ("2", "owner", {"name": "ada"}))]
        )
    )
    assert out[0].content == [
        {"type": "text", "text": "cat:"},
        {"type": "image", "base64": "aGk=", "mime_type": "image/png"},
        {"type": "audio", "base64": "AAA=", "mime_type": "audio/wav"},
        {
            "type": "text",
            "text": '{"type":"resource_link","uri":"file:///cat.png","name":"cat.png"}',
        },
    ]
    assert out[1].artifact == {"owner": "ada"}


def test_the_node_offers_the_registry_tools_to_bind_to_a_model() -> None:
    tools = ToolBatchNode(_registry()).tools
    assert [(t.name, t.description) for t in tools] == [
        ("add", "Add two integers."),
        ("multiply", "Multiply two integers."),
    ]
