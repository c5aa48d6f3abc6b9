"""toolnursery.langgraph: ToolBatchNode against the real LangGraph, with its fake chat model.

Every test is a plain sync test that runs its graph with ``asyncio.run`` (LangGraph runs
on asyncio; the node hosts its batch on the loop through ``toolnursery.aio``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
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


# -- drop-in for ToolNode: create_react_agent, LangChain tools, ToolNode's features ------

import warnings  # noqa: E402
from typing import Annotated as _Annotated  # noqa: E402

from langchain_core.tools import InjectedToolArg, InjectedToolCallId  # noqa: E402
from langchain_core.tools import tool as lc_tool  # noqa: E402
from langgraph.config import get_stream_writer  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime  # noqa: E402
from langgraph.runtime import DEFAULT_RUNTIME  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.types import Send, interrupt  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
    from langgraph.prebuilt import create_react_agent


OUTSIDE_A_GRAPH: Any = {"configurable": {"__pregel_runtime": DEFAULT_RUNTIME}}
"""What LangGraph gives a node's ``ainvoke`` (ToolNode's too) outside a graph run."""


class ToolCallingFakeModel(FakeMessagesListChatModel):
    """LangChain's fake chat model, with the ``bind_tools`` create_react_agent calls."""

    bound: list[str] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = [t.name for t in tools]
        return self


def _react(tools: Any, responses: list[BaseMessage], **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(ToolCallingFakeModel(responses=responses), tools=tools, **kwargs)


@lc_tool
def listing(n: int) -> dict[str, Any]:
    """List."""
    return {"items": list(range(n)), "name": "é"}


@lc_tool
def count(q: str, state: _Annotated[dict[str, Any], InjectedState]) -> str:
    """Count the messages."""
    return f"{q}: {len(state['messages'])} messages"


@lc_tool
def first_kind(q: str, messages: _Annotated[list[Any], InjectedState("messages")]) -> str:
    """The first message's kind."""
    return f"{q}: {type(messages[0]).__name__}"


@lc_tool
def remember(q: str, store: _Annotated[Any, InjectedStore()]) -> str:
    """Store and read back."""
    store.put(("notes",), "k", {"v": q})
    return f"stored {store.get(('notes',), 'k').value}"


@lc_tool
def whose(q: str, tool_call_id: _Annotated[str, InjectedToolCallId]) -> str:
    """The call's id."""
    return f"{q} for {tool_call_id}"


@lc_tool
def with_runtime(q: str, runtime: ToolRuntime) -> str:
    """Write to the stream through the runtime."""
    runtime.stream_writer({"progress": q})
    return f"{q} {runtime.tool_call_id} {len(runtime.state['messages'])}"


@lc_tool
def writes(q: str) -> str:
    """Write to the stream."""
    get_stream_writer()({"chunk": q})
    return "wrote"


@lc_tool
def command(q: str, tool_call_id: _Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Answer with a Command."""
    return Command(update={"messages": [ToolMessage(f"cmd {q}", tool_call_id=tool_call_id)]})


@lc_tool
def commands(q: str, tool_call_id: _Annotated[str, InjectedToolCallId]) -> list[Command[Any]]:
    """Answer with a list of Commands."""
    return [
        Command(update={"messages": [ToolMessage(f"cmds {q}", tool_call_id=tool_call_id)]}),
        Command(update={"messages": []}),
    ]


@lc_tool
def boom(q: str) -> str:
    """Fail."""
    raise ValueError(f"bad {q}")


FEATURES = [listing, count, first_kind, remember, whose, with_runtime, writes, command, commands]
FEATURE_CALLS = [
    ("listing", {"n": 2}),
    ("count", {"q": "a"}),
    ("first_kind", {"q": "b"}),
    ("remember", {"q": "c"}),
    ("whose", {"q": "d"}),
    ("with_runtime", {"q": "e"}),
    ("writes", {"q": "f"}),
    ("command", {"q": "g"}),
    ("commands", {"q": "h"}),
]


def _feature_turn() -> list[BaseMessage]:
    return [_ai(*((f"c{i}", n, a) for i, (n, a) in enumerate(FEATURE_CALLS))), AIMessage("done")]


def _react_run(node: Any, *, version: str, sync: bool) -> tuple[list[Any], list[Any]]:
    agent = _react(node, _feature_turn(), store=InMemoryStore(), version=version)
    start = {"messages": [HumanMessage("hi")]}
    modes = ["custom", "values"]
    if sync:
        chunks = list(agent.stream(start, stream_mode=modes))
    else:

        async def main() -> list[Any]:
            return [chunk async for chunk in agent.astream(start, stream_mode=modes)]

        chunks = _run(main())
    state = [chunk for mode, chunk in chunks if mode == "values"][-1]
    messages = [(m.tool_call_id, m.name, m.content, m.status) for m in _tool_messages(state)]
    custom = sorted((chunk for mode, chunk in chunks if mode == "custom"), key=str)
    return sorted(messages), custom


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
def test_create_react_agent_takes_the_node_and_answers_exactly_as_toolnode(
    version: str, sync: bool
) -> None:
    """The same LangChain tools (json.dumps text, InjectedState / InjectedStore /
    InjectedToolCallId / ToolRuntime, Commands, the stream writer) under ToolNode and
    under our node, swapped in with one call, give the same messages and chunks."""
    theirs = _react_run(ToolNode(FEATURES), version=version, sync=sync)
    ours = _react_run(ToolBatchNode(FEATURES), version=version, sync=sync)
    assert ours == theirs
    messages, custom = ours
    assert ("c0", "listing", '{"items": [0, 1], "name": "é"}', "success") in messages
    assert ("c4", "whose", "d for c4", "success") in messages
    assert ("c7", "command", "cmd g", "success") in messages
    assert custom == [{"chunk": "f"}, {"progress": "e"}]  # each tool's chunk, alone


@tool(**PARALLEL)
async def batch_of(tag: str, ctx: ToolRunContext) -> str:
    """Say which batch ran the call."""
    await trio.lowlevel.checkpoint()
    return f"{tag} {ctx.batch_id}"


def _batch_ids(messages: list[Any]) -> list[str]:
    """The batch id each ``batch_of`` answer names (each must be a success)."""
    ids = []
    for message in messages:
        assert message.status == "success", message.content
        tag, batch = message.content.split()
        assert tag in "abc"
        assert batch != "None"
        ids.append(batch)
    return ids


def test_create_react_agents_send_tasks_of_one_message_run_as_one_batch() -> None:
    node = ToolBatchNode([batch_of, listing])
    turn = _ai(
        ("1", "batch_of", {"tag": "a"}), ("2", "batch_of", {"tag": "b"}), ("3", "listing", {"n": 1})
    )
    agent = _react(node, [turn, AIMessage("done")])  # version="v2": one Send per call
    state = _run(agent.ainvoke({"messages": [HumanMessage("hi")]}))
    a, b, third = _tool_messages(state)
    assert [a.content.split()[0], b.content.split()[0]] == ["a", "b"]
    assert len(set(_batch_ids([a, b]))) == 1  # one batch
    assert third.content == '{"items": [0], "name": "é"}'
    assert agent.get_graph().nodes["tools"].data is node


def test_send_tasks_of_calls_without_ids_get_the_same_made_up_ids_and_all_run() -> None:
    turn = AIMessage("", id="ai")
    turn.tool_calls = [
        {"name": "batch_of", "args": {"tag": "a"}, "id": None, "type": "tool_call"},  # type: ignore[typeddict-item]
        {"name": "batch_of", "args": {"tag": "b"}, "id": "", "type": "tool_call"},
        {"name": "batch_of", "args": {"tag": "c"}, "id": "call_0", "type": "tool_call"},
    ]
    agent = _react(ToolBatchNode([batch_of]), [turn, AIMessage("done")])
    state = _run(agent.ainvoke({"messages": [HumanMessage("hi")]}))
    messages = _tool_messages(state)
    assert sorted(m.tool_call_id for m in messages) == ["call_0", "call_0_1", "call_1"]
    assert len(set(_batch_ids(messages))) == 1  # still one batch
    assert [c["id"] for c in turn.tool_calls] == ["call_0_1", "call_1", "call_0"]


def test_the_model_is_bound_the_tools_of_a_registry_node() -> None:
    model = ToolCallingFakeModel(responses=[_ai(("1", "add", {"a": 1, "b": 2})), AIMessage("ok")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, tools=ToolBatchNode(_registry()))
    state = _run(agent.ainvoke({"messages": [HumanMessage("hi")]}))
    assert model.bound == ["add", "multiply"]
    assert [m.content for m in _tool_messages(state)] == ["3"]
    assert isinstance(ToolBatchNode(_registry()), ToolNode)


def _errors_under(node: Any, *, sync: bool = True) -> Any:
    agent = _react(
        node, [_ai(("1", "boom", {"q": "x"}), ("2", "listing", {"n": 0})), AIMessage("ok")]
    )
    start = {"messages": [HumanMessage("hi")]}
    try:
        state = agent.invoke(start) if sync else _run(agent.ainvoke(start))
    except Exception as exc:  # what ToolNode lets out, ours must too
        return type(exc), str(exc)
    return [(m.content, m.status) for m in _tool_messages(state)]


def _on_value_error(e: ValueError) -> str:
    return f"handled {e}"


def _on_type_error(e: TypeError) -> str:
    return f"handled {e}"


@pytest.mark.parametrize(
    "handling",
    [
        True,
        False,
        "it broke",
        _on_value_error,
        _on_type_error,
        ValueError,
        (KeyError, ValueError),
        KeyError,
    ],
    ids=["true", "false", "text", "callable", "callable-other-type", "type", "tuple", "other-type"],
)
@pytest.mark.parametrize("sync", [True, False], ids=["invoke", "ainvoke"])
def test_handle_tool_errors_has_toolnodes_semantics(handling: Any, sync: bool) -> None:
    theirs = _errors_under(ToolNode([boom, listing], handle_tool_errors=handling), sync=sync)
    ours = _errors_under(ToolBatchNode([boom, listing], handle_tool_errors=handling), sync=sync)
    assert ours == theirs


def test_by_default_a_tool_error_leaves_the_node_as_under_toolnode() -> None:
    assert _errors_under(ToolBatchNode([boom, listing])) == (ValueError, "bad x")
    assert _errors_under(ToolNode([boom, listing])) == (ValueError, "bad x")


def test_a_tools_own_handle_tool_error_answer_is_an_error_message() -> None:
    @lc_tool
    def picky(q: str) -> str:
        """Refuse."""
        from langchain_core.tools import ToolException

        raise ToolException("not today")

    picky.handle_tool_error = True
    for node in (ToolNode([picky]), ToolBatchNode([picky])):
        [message] = _run(node.ainvoke([_ai(("1", "picky", {"q": "x"}))], OUTSIDE_A_GRAPH))
        assert (message.content, message.status) == ("not today", "error")


def test_a_parent_command_with_sends_is_combined_as_toolnode_combines_it() -> None:
    @lc_tool
    def handoff(to: str) -> Command[Any]:
        """Hand off."""
        return Command(graph=Command.PARENT, goto=[Send(to, {"x": 1})])

    turn = [_ai(("1", "handoff", {"to": "a"}), ("2", "handoff", {"to": "b"}))]
    theirs = _run(ToolNode([handoff]).ainvoke(turn, OUTSIDE_A_GRAPH))
    ours = _run(ToolBatchNode([handoff]).ainvoke(turn, OUTSIDE_A_GRAPH))
    assert ours == theirs
    [parent] = ours
    assert parent.graph == Command.PARENT
    assert [s.node for s in parent.goto] == ["a", "b"]


def _interrupting_tools(ran: list[str]) -> list[Any]:
    @lc_tool
    def book(what: str) -> str:
        """Book, once a human agrees."""
        ran.append(f"book {what}")
        answer = interrupt({"book": what})
        return f"booked {what}: {answer}"

    @lc_tool
    def charge(amount: int) -> str:
        """Charge."""
        ran.append(f"charge {amount}")
        return f"charged {amount}"

    return [book, charge]


def _custom_agent(node: Any, responses: list[BaseMessage]) -> Any:
    """create_react_agent's loop built by hand: the node gets the whole state (one run)."""
    model = ToolCallingFakeModel(responses=responses)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", node)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("build", ["create_react_agent", "state_graph"])
@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
def test_an_interrupt_pauses_the_graph_and_the_resume_runs_nothing_twice(
    build: str, sync: bool
) -> None:
    ran: list[str] = []
    turn = _ai(("1", "charge", {"amount": 5}), ("2", "book", {"what": "hotel"}))
    responses = [turn, AIMessage("done")]
    node = ToolBatchNode(_interrupting_tools(ran))
    if build == "create_react_agent":
        agent = _react(node, responses, checkpointer=InMemorySaver())
    else:
        agent = _custom_agent(node, responses)
    config = {"configurable": {"thread_id": f"{build}-{sync}"}}

    def call(value: Any) -> Any:
        return agent.invoke(value, config) if sync else _run(agent.ainvoke(value, config))

    first = call({"messages": [HumanMessage("trip")]})
    [pending] = first["__interrupt__"]
    assert pending.value == {"book": "hotel"}
    assert sorted(ran) == ["book hotel", "charge 5"]
    state = call(Command(resume="yes"))
    assert [(m.tool_call_id, m.content) for m in _tool_messages(state)] == [
        ("1", "charged 5"),
        ("2", "booked hotel: yes"),
    ]
    # the committed charge did not run again; the interrupted call ran from its start
    assert sorted(ran) == ["book hotel", "book hotel", "charge 5"]


def test_other_control_flow_exceptions_pass_through() -> None:
    @lc_tool
    def loop_forever(q: str) -> str:
        """Raise a LangGraph control-flow exception."""
        from langgraph.errors import ParentCommand

        raise ParentCommand(Command(graph=Command.PARENT, goto="elsewhere"))

    for node in (ToolNode([loop_forever]), ToolBatchNode([loop_forever], handle_tool_errors=True)):
        with pytest.raises(Exception) as caught:
            _run(node.ainvoke([_ai(("1", "loop_forever", {"q": "x"}))], OUTSIDE_A_GRAPH))
        assert type(caught.value).__name__ == "ParentCommand"
    assert GraphRecursionError  # the family LangGraph raises through nodes


@lc_tool
def admin_secret(q: str, auth: _Annotated[dict[str, Any], InjectedToolArg]) -> str:
    """Show the secret to admins."""
    return "the secret" if auth.get("role") == "admin" else "no"


@lc_tool
def state_peek(q: str, state: _Annotated[dict[str, Any], InjectedState]) -> str:
    """Peek at the state."""
    return f"{len(state['messages'])}"


@pytest.mark.parametrize(
    ("name", "forged"),
    [
        ("admin_secret", {"auth": {"role": "admin"}}),
        ("state_peek", {"state": {"messages": []}}),
        ("whose", {"tool_call_id": "forged"}),
        ("with_runtime", {"runtime": {"tool_call_id": "forged"}}),
    ],
)
def test_a_model_filling_an_injected_parameter_is_refused(
    name: str, forged: dict[str, Any]
) -> None:
    node = ToolBatchNode([admin_secret, state_peek, whose, with_runtime])
    turn = _ai(("1", name, {"q": "x", **forged}))
    state = _run(_react(node, [turn, AIMessage("ok")]).ainvoke({"messages": [HumanMessage("hi")]}))
    [message] = _tool_messages(state)
    [key] = forged
    assert message.status == "error"
    assert message.content == (
        f'Error: invalid arguments: argument "{key}" is supplied by the host, not the model'
    )
    assert "secret" not in message.content


def test_args_that_are_not_an_object_are_refused_and_missing_ids_are_made_up() -> None:
    ran: list[Any] = []

    @lc_tool
    def poke() -> str:
        """A side effect with no arguments."""
        ran.append(1)
        return "poked"

    calls = [
        {"name": "poke", "args": [], "id": "a", "type": "tool_call"},
        {"name": "poke", "args": 0, "id": "b", "type": "tool_call"},
        {"name": "poke", "args": "", "id": "c", "type": "tool_call"},
        {"name": "poke", "args": False, "id": "d", "type": "tool_call"},
        {"name": "poke", "id": "e", "type": "tool_call"},
    ]
    message = AIMessage("", id="ai-1")
    message.tool_calls = calls  # type: ignore[assignment]
    out = _run(ToolBatchNode([poke]).ainvoke({"messages": [message]}, OUTSIDE_A_GRAPH))
    answers = [(m.tool_call_id, m.status, m.content) for m in out["messages"]]
    assert answers[:4] == [
        ("a", "error", 'Error: invalid arguments: "args" must be an object, got an array'),
        ("b", "error", 'Error: invalid arguments: "args" must be an object, got a number'),
        ("c", "error", 'Error: invalid arguments: "args" must be an object, got a string'),
        ("d", "error", 'Error: invalid arguments: "args" must be an object, got a boolean'),
    ]
    assert answers[4] == ("e", "success", "poked")  # only a missing args means {}
    assert ran == [1]

    no_ids = AIMessage("", id="ai-2", tool_calls=[])
    no_ids.tool_calls = [
        {"name": "poke", "args": {}, "id": None, "type": "tool_call"},  # type: ignore[typeddict-item]
        {"name": "poke", "args": {}, "id": "", "type": "tool_call"},
        {"name": "poke", "args": {}, "id": "call_1", "type": "tool_call"},
    ]
    out = _run(ToolBatchNode([poke]).ainvoke({"messages": [no_ids]}, OUTSIDE_A_GRAPH))
    written, *messages = out["messages"]
    assert [m.tool_call_id for m in messages] == ["call_0", "call_1_1", "call_1"]
    assert [m.status for m in messages] == ["success"] * 3  # both id-less calls ran
    assert written is no_ids
    assert [c["id"] for c in no_ids.tool_calls] == [
        "call_0",
        "call_1_1",
        "call_1",
    ]


def test_what_toolnode_takes_that_the_node_cannot_keep_is_refused_at_construction() -> None:
    def wrapper(request: Any, execute: Any) -> Any:
        return execute(request)

    for option in ("wrap_tool_call", "awrap_tool_call"):
        with pytest.raises(TypeError, match=f"ToolBatchNode does not take {option}"):
            ToolBatchNode([listing], **{option: wrapper})
    with pytest.raises(TypeError, match="handle_tool_errors applies to LangChain tools"):
        ToolBatchNode(_registry(), handle_tool_errors=False)


def test_the_node_runs_under_plain_trio() -> None:
    async def main() -> Any:
        return await ToolBatchNode([listing, add])(
            [_ai(("1", "listing", {"n": 1}), ("2", "add", {"a": 1, "b": 1}))]
        )

    out = trio.run(main)
    assert [m.content for m in out] == ['{"items": [0], "name": "é"}', "2"]


def test_under_the_sync_invoke_an_asyncio_body_is_an_error_result_not_a_hang() -> None:
    from toolnursery.aio import asyncio_tool

    @asyncio_tool
    @tool
    async def on_asyncio(q: str) -> str:
        """Needs the asyncio host."""
        await asyncio.sleep(0)
        return q

    node = ToolBatchNode(_registry(on_asyncio))
    state = _react(
        node,
        [_ai(("1", "on_asyncio", {"q": "x"}), ("2", "add", {"a": 1, "b": 1})), AIMessage("ok")],
    ).invoke({"messages": [HumanMessage("hi")]})
    first, second = _tool_messages(state)
    assert first.status == "error"
    assert "asyncio" in first.content
    assert second.content == "2"


# -- Send tasks that never all arrive: nothing waits forever ------------------------------


def _sent(message: AIMessage, call_id: str) -> dict[str, Any]:
    """The payload of the ``Send`` task of one of ``message``'s calls."""
    [call] = [c for c in message.tool_calls if c["id"] == call_id]
    state = {"messages": [HumanMessage("hi"), message]}
    return {"__type": "tool_call_with_context", "tool_call": call, "state": state}


def test_a_graph_sending_only_some_of_a_messages_calls_completes_as_one_batch() -> None:
    turn = _ai(*((str(i), "batch_of", {"tag": tag}) for i, tag in enumerate("abc")))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [turn]}

    def route(state: MessagesState) -> list[Send]:
        last = state["messages"][-1]
        return [Send("tools", _sent(last, c["id"])) for c in last.tool_calls[:2]]  # type: ignore[attr-defined]

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolBatchNode([batch_of]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools"])
    state = _run(graph.compile().ainvoke({"messages": [HumanMessage("hi")]}))
    a, b = _tool_messages(state)
    assert (a.tool_call_id, b.tool_call_id) == ("0", "1")
    assert [a.content.split()[0], b.content.split()[0]] == ["a", "b"]
    assert len(set(_batch_ids([a, b]))) == 1  # the two: one batch


def test_send_tasks_of_one_message_arriving_one_after_another_each_run() -> None:
    turn = _ai(("1", "batch_of", {"tag": "a"}), ("2", "batch_of", {"tag": "b"}))
    node = ToolBatchNode([batch_of])

    async def main() -> list[Any]:
        first = await node.ainvoke(_sent(turn, "1"), OUTSIDE_A_GRAPH)  # its sibling never came
        second = await node.ainvoke(_sent(turn, "2"), OUTSIDE_A_GRAPH)  # late: a batch alone
        return [*first["messages"], *second["messages"]]

    a, b = _run(main())
    assert [a.content.split()[0], b.content.split()[0]] == ["a", "b"]
    assert len(set(_batch_ids([a, b]))) == 2  # each a batch of its own


def _holding(
    log: list[str], on_cancel: Callable[[], Any] = lambda: None
) -> tuple[Any, asyncio.Event, asyncio.Event]:
    """A LangChain tool that holds its call until released; its start and release."""
    started, release = asyncio.Event(), asyncio.Event()

    @lc_tool
    async def hold(q: str) -> str:
        """Hold until released."""
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            log.append(f"cancelled {q}")
            on_cancel()
            raise
        return f"held {q}"

    return hold, started, release


HELD = _ai(
    ("1", "hold", {"q": "a"}), ("2", "batch_of", {"tag": "b"}), ("3", "batch_of", {"tag": "c"})
)


def test_a_sibling_cancelled_while_its_batch_runs_raises_and_the_others_get_their_results() -> None:
    log: list[str] = []

    async def main() -> list[Any]:
        hold, started, release = _holding(log)
        node = ToolBatchNode([hold, batch_of])
        tasks = [asyncio.create_task(node.ainvoke(_sent(HELD, i), OUTSIDE_A_GRAPH)) for i in "123"]
        await started.wait()  # the batch of all three runs
        tasks[1].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks[1]
        release.set()
        return [(await tasks[i])["messages"][0] for i in (0, 2)]

    held, c = _run(main())
    assert (held.content, c.content.split()[0], log) == ("held a", "c", [])
    _batch_ids([c])


def test_a_sibling_cancelled_before_it_arrives_leaves_the_others_to_run() -> None:
    log: list[str] = []

    async def main() -> list[Any]:
        hold, _, release = _holding(log)
        release.set()
        node = ToolBatchNode([hold, batch_of])
        tasks = [asyncio.create_task(node.ainvoke(_sent(HELD, i), OUTSIDE_A_GRAPH)) for i in "123"]
        tasks[1].cancel()  # before it ever ran
        with pytest.raises(asyncio.CancelledError):
            await tasks[1]
        return [(await tasks[i])["messages"][0] for i in (0, 2)]

    held, c = _run(main())
    assert (held.content, c.content.split()[0], log) == ("held a", "c", [])
    _batch_ids([c])


def test_when_every_task_of_a_gathering_is_cancelled_its_batch_is_cancelled_and_awaited() -> None:
    log: list[str] = []
    tasks: list[asyncio.Task[Any]] = []

    async def main() -> list[bool]:
        # The body, cancelled, cancels the last task again: that task still waits for the
        # batch to end (started calls are never abandoned), then raises CancelledError.
        hold, started, _ = _holding(log, on_cancel=lambda: tasks[-1].cancel())
        node = ToolBatchNode([hold, batch_of])
        tasks.extend(
            asyncio.create_task(node.ainvoke(_sent(HELD, i), OUTSIDE_A_GRAPH)) for i in "123"
        )
        await started.wait()
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        assert log == ["cancelled a"]
        assert asyncio.all_tasks() == {asyncio.current_task()}  # the batch's task ended too
        return [task.cancelled() for task in tasks]

    assert _run(main()) == [True, True, True]


def test_a_task_cancelled_while_its_gathering_waits_leaves_and_its_call_never_runs() -> None:
    from toolnursery._bridges._langgraph_run import Arrival, Gathering

    ran: list[list[str]] = []
    seen: list[Any] = []

    async def run(arrivals: list[Arrival]) -> dict[str, Any]:
        ran.append([arrival[0] for arrival in arrivals])
        return {arrival[0]: f"out {arrival[0]}" for arrival in arrivals}

    async def main() -> Any:
        gathering = Gathering(("1", "2", "3"), AIMessage(""), run, lambda: seen.append("closed"))
        first = asyncio.create_task(gathering.join("1", ("1",)))
        second = asyncio.create_task(gathering.join("2", ("2",)))

        async def cancel_second() -> None:  # runs once both joined, before the gathering closes
            seen.append((sorted(gathering.arrivals), gathering.closed))
            second.cancel()

        canceller = asyncio.create_task(cancel_second())
        with pytest.raises(asyncio.CancelledError):
            await second
        await canceller
        return await first

    assert _run(main()) == "out 1"
    assert seen == [(["1", "2"], False), "closed"]
    assert ran == [["1"]]  # "3" never came, "2" left before the batch: "1" ran alone


# -- which driver runs the node's batch under asyncio -------------------------------------

from toolnursery.aio import asyncio_tool  # noqa: E402


@asyncio_tool
@tool(name="add", **PARALLEL)
async def add_on_asyncio(a: int, b: int) -> str:
    """Add two integers."""
    await asyncio.sleep(0)
    return str(a + b)


def _where(registry: ToolRegistry) -> list[str]:
    """Record, per call, the loop its pre-execute hook runs on: a hook runs on the
    batch's driver (an asyncio task on the asyncio driver, a trio task in the guest run)."""
    seen: list[str] = []

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no asyncio loop at all: plain trio
            task = None
        seen.append("asyncio" if task is not None else "trio")
        return await next_()

    registry.on_pre_execute(pre)
    return seen


@pytest.mark.parametrize(
    ("tools", "calls", "driver"),
    [
        pytest.param("langchain", [("listing", {"n": 1}), ("listing", {"n": 2})], "asyncio"),
        pytest.param("asyncio_tool", [("add", {"a": 1, "b": 1})] * 2, "asyncio"),
        pytest.param("mixed", [("listing", {"n": 1}), ("add", {"a": 1, "b": 1})], "trio"),
    ],
)
@pytest.mark.parametrize("build", ["v1", "v2", "state_graph"])
def test_under_asyncio_the_node_runs_on_the_asyncio_driver_when_its_tools_allow(
    tools: str, calls: list[tuple[str, dict[str, Any]]], driver: str, build: str
) -> None:
    made = {"langchain": [listing], "asyncio_tool": [add_on_asyncio], "mixed": [listing, add]}
    node = ToolBatchNode(made[tools])
    seen = _where(node.registry)
    turn = _ai(*((str(i), name, args) for i, (name, args) in enumerate(calls)))
    responses = [turn, AIMessage("done")]
    app = (
        _agent_graph(node, responses)
        if build == "state_graph"
        else _react(node, responses, version=build)
    )
    state = _run(app.ainvoke({"messages": [HumanMessage("hi")]}))
    messages = _tool_messages(state)
    assert [m.tool_call_id for m in messages] == [str(i) for i in range(len(calls))]
    assert all(m.status == "success" for m in messages), messages
    assert seen == [driver] * len(calls)


def test_a_sync_invoke_and_plain_trio_keep_running_the_node_on_trio() -> None:
    node = ToolBatchNode([listing])
    seen = _where(node.registry)
    turn = [_ai(("1", "listing", {"n": 1}))]
    state = _react(node, [*turn, AIMessage("done")]).invoke({"messages": [HumanMessage("hi")]})
    assert [m.content for m in _tool_messages(state)] == ['{"items": [0], "name": "é"}']

    async def main() -> Any:
        return await node(turn)

    assert [m.content for m in trio.run(main)] == ['{"items": [0], "name": "é"}']
    assert seen == ["trio", "trio"]


@pytest.mark.parametrize("stream", [False, True])
def test_an_ask_on_the_asyncio_driver_interrupts_and_the_resume_runs_the_call_once(
    stream: bool,
) -> None:
    deleted: list[str] = []

    @asyncio_tool
    @tool
    async def delete(path: str) -> str:
        """Delete a file."""
        await asyncio.sleep(0)
        deleted.append(path)
        return f"deleted {path}"

    registry = ToolRegistry(approval=InterruptApproval())
    registry.register(add_on_asyncio)
    registry.register(delete)
    seen = _where(registry)

    async def ask(execution: ToolExecution, next_: Any) -> Any:
        return Ask("deleting needs a human") if execution.name == "delete" else await next_()

    registry.on_pre_execute(ask)
    turn = _ai(("1", "add", {"a": 1, "b": 1}), ("2", "delete", {"path": "a.txt"}))
    config = {"configurable": {"thread_id": "t"}}
    node = ToolBatchNode(registry, agent=registry.scope(), stream=stream)
    app = _agent_graph(node, [turn, AIMessage("done")], checkpointer=InMemorySaver())

    async def main() -> tuple[Any, dict[str, Any]]:
        first = await app.ainvoke({"messages": []}, config)
        return first["__interrupt__"], await app.ainvoke(Command(resume=True), config)

    interrupts, state = _run(main())
    assert [i.value["call_id"] for i in interrupts] == ["2"]
    assert [(m.status, m.content) for m in _tool_messages(state)] == [
        ("success", "2"),
        ("success", "deleted a.txt"),
    ]
    assert deleted == ["a.txt"]
    assert set(seen) == {"asyncio"}
