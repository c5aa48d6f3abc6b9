"""toolnursery.smolagents against the real smolagents, its model classes driven by a script."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

pytest.importorskip("smolagents")

import trio
from smolagents import Tool, tool  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from toolnursery import (
    CancelSignal,
    RegistrationError,
    ToolCall,
    ToolExecutionResult,
    ToolRegistry,
    run_tool_calls,
)
from toolnursery.smolagents import from_smolagents, inputs_schema


@tool  # type: ignore[untyped-decorator]
def get_weather(city: str, unit: str | None = None) -> str:
    """Get the weather of a city.

    Args:
        city: the city.
        unit: "C" or "F" (Celsius when omitted).
    """
    return f"21{unit or 'C'} in {city} on {threading.current_thread() is threading.main_thread()}"


@tool  # type: ignore[untyped-decorator]
def lookup(query: str, limit: int) -> dict[str, Any]:
    """Look something up.

    Args:
        query: what to look for.
        limit: how many results.
    """
    return {"query": query, "hits": list(range(limit))}


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(from_smolagents(get_weather))
    registry.register(from_smolagents(lookup))
    return registry


def test_inputs_become_json_schema() -> None:
    inputs: dict[str, dict[str, Any]] = {
        "s": {"type": "string", "description": "a string"},
        "b": {"type": "boolean", "description": "b"},
        "i": {"type": "integer", "description": "i"},
        "n": {"type": "number", "description": "n"},
        "img": {"type": "image", "description": "img"},
        "aud": {"type": "audio", "description": "aud"},
        "arr": {"type": "array", "description": "arr", "items": {"type": "string"}},
        "obj": {"type": "object", "description": "obj"},
        "whatever": {"type": "any", "description": "anything"},
        "maybe": {"type": "integer", "description": "m", "nullable": True},
        "either": {"type": ["string", "integer"], "description": "e"},
        "mode": {
            "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}],
            "description": "m",
        },
    }
    schema = inputs_schema(inputs)
    props = schema["properties"]
    assert props["s"] == {"type": "string", "description": "a string"}
    assert props["img"]["type"] == "string"
    assert props["aud"]["type"] == "string"
    assert props["arr"] == {"type": "array", "description": "arr", "items": {"type": "string"}}
    assert props["whatever"] == {"description": "anything"}
    assert props["maybe"] == {"description": "m", "anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["either"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]
    assert props["mode"]["anyOf"] == [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]
    assert "maybe" not in schema["required"]
    assert "s" in schema["required"]
    assert "mode" in schema["required"]


def test_a_type_smolagents_does_not_know_is_refused() -> None:
    with pytest.raises(RegistrationError, match=r'tool "t" input "x" has type \'str\''):
        inputs_schema({"x": {"type": "str", "description": "x"}}, tool_name="t")


def test_a_nullable_input_is_optional_and_forward_runs_in_a_thread() -> None:
    registry = _registry()
    definition = registry.get("get_weather")
    assert definition is not None
    assert definition.parameters["required"] == ["city"]
    calls = [
        ToolCall("c1", "get_weather", '{"city": "Oslo"}'),
        ToolCall("c2", "get_weather", {"city": "Rome", "unit": "F"}),
        ToolCall("c3", "get_weather", {"city": "Rome", "unit": None}),
        ToolCall("c4", "get_weather", {"town": "Rome"}),
    ]
    results = trio.run(lambda: run_tool_calls(registry, calls))
    assert [r.text for r in results] == [
        "21C in Oslo on False",
        "21F in Rome on False",
        "21C in Rome on False",
        'Error: invalid arguments: missing required property "city"',
    ]


def test_an_end_to_end_turn_with_two_calls_from_a_smolagents_model() -> None:
    class ScriptedModel(Model):  # type: ignore[misc]
        """A smolagents model that answers from a script."""

        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.seen: list[list[ChatMessage]] = []

        def generate(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
            self.seen.append(list(messages))
            if len(self.seen) == 1:
                return ChatMessage(
                    role=MessageRole.ASSISTANT,
                    tool_calls=[
                        ChatMessageToolCall(
                            ChatMessageToolCallFunction(
                                arguments={"city": "Oslo"}, name="get_weather"
                            ),
                            id="c1",
                            type="function",
                        ),
                        ChatMessageToolCall(
                            ChatMessageToolCallFunction(
                                arguments='{"query": "trio", "limit": 2}', name="lookup"
                            ),
                            id="c2",
                            type="function",
                        ),
                    ],
                )
            tool_texts = [m.content for m in messages if m.role == MessageRole.TOOL_RESPONSE]
            return ChatMessage(role=MessageRole.ASSISTANT, content=" / ".join(map(str, tool_texts)))

    registry = _registry()
    model = ScriptedModel()
    messages = [ChatMessage(role=MessageRole.USER, content="weather and lookup")]
    reply = model.generate(messages, tools_to_call_from=[get_weather, lookup])
    reply = model.parse_tool_calls(reply)
    calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in reply.tool_calls]
    results = trio.run(lambda: run_tool_calls(registry, calls))
    messages.append(reply)
    messages.extend(ChatMessage(role=MessageRole.TOOL_RESPONSE, content=r.text) for r in results)
    final = model.generate(messages)
    assert final.content == '21C in Oslo on False / {"query":"trio","hits":[0,1]}'


def test_a_raising_forward_is_a_one_line_error() -> None:
    @tool  # type: ignore[untyped-decorator]
    def broken(word: str) -> str:
        """Break.

        Args:
            word: a word.
        """
        raise ValueError(f"bad\n  word {word}")

    registry = ToolRegistry()
    registry.register(from_smolagents(broken))
    [result] = trio.run(lambda: run_tool_calls(registry, [ToolCall("c1", "broken", {"word": "x"})]))
    assert result.text == "Error: bad word x"
    assert result.error is not None
    assert result.error.code == "TOOL_ERROR"


def test_a_subclassed_tool_is_set_up_once() -> None:
    class Counter(Tool):  # type: ignore[misc]
        name = "counter"
        description = "Count calls."
        inputs = {"step": {"type": "integer", "description": "the step", "nullable": True}}
        output_type = "integer"

        def setup(self) -> None:
            self.total = 0
            self.setups = getattr(self, "setups", 0) + 1
            self.is_initialized = True

        def forward(self, step: int | None = None) -> int:
            self.total += step or 1
            return self.total

    counter = Counter()
    registry = ToolRegistry()
    registry.register(from_smolagents(counter, name="count"))
    calls = [ToolCall("c1", "count", {}), ToolCall("c2", "count", {"step": 5})]
    results = trio.run(lambda: run_tool_calls(registry, calls, max_parallel=1))
    assert [r.text for r in results] == ["1", "6"]
    assert counter.setups == 1


async def test_our_abort_waits_for_forward_and_settles_aborted() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool  # type: ignore[untyped-decorator]
    def slow(word: str) -> str:
        """Wait until released.

        Args:
            word: a word.
        """
        started.set()
        release.wait(10)
        return word

    registry = ToolRegistry()
    registry.register(from_smolagents(slow))
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        results.extend(
            await run_tool_calls(registry, [ToolCall("c1", "slow", {"word": "w"})], signal=signal)
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.to_thread.run_sync(started.wait)
        signal.cancel("stop")
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # the abort waits for the thread
        release.set()
    [result] = results
    assert result.error is not None
    assert result.error.code == "ABORTED"


def test_concurrency_safe_tools_overlap_in_their_threads() -> None:
    meet = threading.Barrier(2, timeout=10)

    @tool  # type: ignore[untyped-decorator]
    def rendezvous(who: str) -> str:
        """Wait until the sibling call runs too.

        Args:
            who: the caller.
        """
        meet.wait()  # raises BrokenBarrierError if the calls ran one after the other
        return who

    registry = ToolRegistry()
    registry.register(from_smolagents(rendezvous, is_concurrency_safe=lambda args: True))
    calls = [ToolCall("c1", "rendezvous", {"who": "a"}), ToolCall("c2", "rendezvous", {"who": "b"})]
    results = trio.run(lambda: run_tool_calls(registry, calls))
    assert [r.text for r in results] == ["a", "b"]


def test_from_smolagents_refuses_what_is_not_a_tool() -> None:
    with pytest.raises(
        RegistrationError, match=r"expected a smolagents\.Tool instance, got function"
    ):
        from_smolagents(lambda: None)


# -- drop-in: smolagents' ToolCallingAgent with a registry's tools ----------------------------

from typing import Annotated  # noqa: E402

import msgspec  # noqa: E402
from smolagents import ToolCallingAgent  # noqa: E402

from toolnursery import Deny, Depends, ToolExecution, ToolRunContext  # noqa: E402
from toolnursery import tool as tn_tool  # noqa: E402
from toolnursery.aio import asyncio_tool  # noqa: E402
from toolnursery.smolagents import to_smolagents  # noqa: E402


class ScriptedToolCallingModel(Model):  # type: ignore[misc]
    """A smolagents model answering from a script of tool calls, the last one the final
    answer; it keeps what it was shown."""

    def __init__(self, *turns: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(model_id="scripted")
        self.turns = list(turns)
        self.seen: list[list[Any]] = []
        self.offered: list[str] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        self.offered = [t.name for t in kwargs.get("tools_to_call_from") or []]
        calls = self.turns.pop(0)
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    ChatMessageToolCallFunction(arguments=args, name=name),
                    id=f"t{i}",
                    type="function",
                )
                for i, (name, args) in enumerate(calls)
            ],
        )


class Auth(msgspec.Struct):
    role: str


def _auth(ctx: ToolRunContext[Any]) -> Auth:
    return Auth(ctx.deps or "user")


@tn_tool
def forecast(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Args:
        city: the city.
        days: how many days.
    """
    return f"sun in {city} for {days} day(s)"


@tn_tool
def secret(topic: str, auth: Annotated[Auth, Depends(_auth)]) -> str:
    """Tell a secret to admins.

    Args:
        topic: what it is about.
    """
    return "the secret" if auth.role == "admin" else f"no secret for {auth.role}"


def _observations(model: ScriptedToolCallingModel) -> str:
    return str(model.seen[-1][-1].content)


def test_a_tool_calling_agent_runs_a_registrys_tools_swapped_in_with_one_call() -> None:
    registry = ToolRegistry()
    registry.register(forecast)

    async def no_mars(execution: ToolExecution, next_: Any) -> Any:
        return Deny("not on mars") if execution.arguments["city"] == "Mars" else await next_()

    registry.on_pre_execute(no_mars)
    model = ScriptedToolCallingModel(
        [("forecast", {"city": "Oslo"}), ("forecast", {"city": "Mars", "days": 2})],
        [("final_answer", {"answer": "done"})],
    )
    agent = ToolCallingAgent(tools=to_smolagents(registry), model=model, max_steps=3)
    assert agent.run("weather?") == "done"
    assert model.offered == ["forecast", "final_answer"]
    seen = _observations(model)
    assert "sun in Oslo for 1 day(s)" in str(seen)
    assert "Error: not on mars" in str(seen)


def test_a_model_filling_an_injected_dependency_never_reaches_the_tool() -> None:
    registry = ToolRegistry()
    registry.register(secret)
    [exported] = to_smolagents(registry)
    assert list(exported.inputs) == ["topic"]  # the dependency is not an input
    model = ScriptedToolCallingModel(
        [("secret", {"topic": "x", "auth": {"role": "admin"}})],
        [("secret", {"topic": "x"})],
        [("final_answer", {"answer": "done"})],
    )
    agent = ToolCallingAgent(tools=to_smolagents(registry), model=model, max_steps=4)
    assert agent.run("tell me") == "done"
    shown = " ".join(str(m.content) for m in model.seen[-1])
    assert "the secret" not in shown
    assert "no secret for user" in shown  # the call without the forged argument ran
    # and called directly, past smolagents' own check, the forged value never arrives
    assert "the secret" not in exported.forward(topic="x", auth={"role": "admin"})


def test_exported_inputs_follow_the_schema() -> None:
    registry = ToolRegistry()
    registry.register(forecast)
    [exported] = to_smolagents(registry)
    assert exported.inputs == {
        "city": {"type": "string", "description": "the city."},
        "days": {"type": "integer", "description": "how many days.", "nullable": True},
    }
    assert exported.forward(city="Rome", days=None) == "sun in Rome for 1 day(s)"
    assert exported.forward(city=3) == 'Error: invalid arguments: "city" must be a string'
    with pytest.raises(KeyError, match='no tool "nope"'):
        to_smolagents(registry, names=["nope"])


def _in_a_thread(fn: Any) -> Any:
    """``fn()`` in a thread of its own, as smolagents' tool step calls a tool; its value."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(fn()))
    worker.start()
    worker.join()
    return out[0]


def test_an_exported_def_tool_runs_in_the_calling_thread_and_its_hooks_on_its_loop() -> None:
    seen: list[tuple[str, Any]] = []

    @tn_tool
    def where(city: str) -> str:
        """Say which thread runs the body.

        Args:
            city: the city.
        """
        seen.append(("body", threading.get_ident()))
        return city

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        seen.append(("pre", asyncio.get_running_loop() is not None))
        return await next_()

    registry = ToolRegistry()
    registry.register(where)
    registry.on_pre_execute(pre)
    [exported] = to_smolagents(registry)

    def call() -> tuple[int, list[str]]:
        return threading.get_ident(), [exported.forward(city=c) for c in ("Oslo", "Rome")]

    ident, texts = _in_a_thread(call)
    assert texts == ["Oslo", "Rome"]
    # the body ran in smolagents' thread itself (no hop to a worker of ours), the
    # listener on that thread's asyncio loop
    assert seen == [("pre", True), ("body", ident), ("pre", True), ("body", ident)]
    gc.collect()  # the thread's loop was closed with it: no unclosed-loop warning


def test_an_exported_asyncio_or_trio_tool_runs_from_smolagents_thread() -> None:
    @asyncio_tool
    @tn_tool
    async def on_asyncio(word: str) -> str:
        """Echo on asyncio.

        Args:
            word: the word.
        """
        await asyncio.sleep(0)
        return f"asyncio {word}"

    @tn_tool
    async def on_trio(word: str) -> str:
        """Echo on trio.

        Args:
            word: the word.
        """
        await trio.sleep(0)
        return f"trio {word}"

    registry = ToolRegistry()
    registry.register(on_asyncio)
    registry.register(on_trio)
    first, second = to_smolagents(registry)
    assert _in_a_thread(lambda: first.forward(word="a")) == "asyncio a"
    assert _in_a_thread(lambda: second.forward(word="b")) == "trio b"
    assert first.forward(word="c") == "asyncio c"  # from this thread too


def test_an_exported_tool_called_where_an_asyncio_loop_runs_still_answers() -> None:
    registry = ToolRegistry()
    registry.register(forecast)
    [exported] = to_smolagents(registry)

    async def main() -> str:
        return str(exported.forward(city="Oslo"))  # a loop runs here: trio.run instead

    assert asyncio.run(main()) == "sun in Oslo for 1 day(s)"
