"""toolnursery.pydantic_ai against the real pydantic-ai, driven by its FunctionModel."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

pytest.importorskip("pydantic_ai")

import trio
from pydantic_ai import Agent, ModelRetry, RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolnursery.aio
from toolnursery import (
    CancelSignal,
    ToolCall,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    tool,
)
from toolnursery.log import ToolCallEvent, ToolResultEvent
from toolnursery.pydantic_ai import (
    ToolnurseryCapability,
    ToolnurseryToolset,
    from_pydantic_ai,
)

T = TypeVar("T")


def _run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, then check that the trio guest run ended with the loop."""
    hooks = sys.get_asyncgen_hooks()
    result = asyncio.run(main)
    assert not trio.lowlevel.in_trio_run()
    assert sys.get_asyncgen_hooks() == hooks
    return result


class ListRecorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def record(self, event: Any, /) -> None:
        self.events.append(event)


def _returns(messages: list[ModelMessage]) -> dict[str, Any]:
    return {
        part.tool_call_id: part.content
        for message in messages
        for part in message.parts
        if part.part_kind == "tool-return"
    }


def _scripted(*turns: list[ToolCallPart]) -> FunctionModel:
    """A model that sends ``turns`` in order, then a text listing every tool return."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = sum(1 for m in messages if m.kind == "request")
        if requests <= len(turns):
            return ModelResponse(parts=list(turns[requests - 1]))
        text = " | ".join(f"{k}={v}" for k, v in _returns(messages).items())
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(respond)


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    await trio.lowlevel.checkpoint()
    return a + b


@tool
async def whoami(ctx: ToolRunContext[str]) -> str:
    """Say who the run is for."""
    return f"{ctx.deps} in batch {ctx.batch_id is not None}"


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(add)
    registry.register(whoami)
    return registry


TWO_CALLS = [
    ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1"),
    ToolCallPart("whoami", {}, tool_call_id="c2"),
    ToolCallPart("add", '{"a": "x"}', tool_call_id="c3"),
]


def test_an_agent_runs_one_responses_calls_as_one_batch() -> None:
    recorder = ListRecorder()

    async def main() -> str:
        capability = ToolnurseryCapability(_registry(), recorder=recorder)
        agent = Agent(_scripted(TWO_CALLS), deps_type=str, capabilities=[capability])
        return (await agent.run("go", deps="ann")).output

    output = _run(main())
    assert output == (
        "c1=3 | c2=ann in batch True | "
        'c3=Error: invalid arguments: "a" must be an integer; missing required property "b"'
    )
    calls = [e for e in recorder.events if isinstance(e, ToolCallEvent)]
    assert [e.call.id for e in calls] == ["c1", "c2", "c3"]
    assert len({e.batch for e in recorder.events}) == 1


def test_the_toolset_alone_runs_each_call_through_the_pipeline() -> None:
    async def main() -> str:
        agent = Agent(
            _scripted(TWO_CALLS), deps_type=str, toolsets=[ToolnurseryToolset(_registry())]
        )
        return (await agent.run("go", deps="bob")).output

    output = _run(main())
    assert output.startswith("c1=3 | c2=bob in batch False | c3=Error: invalid arguments")


def test_the_toolset_lists_the_registrys_schemas() -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.extend(
                f"{t.name}:{sorted(t.parameters_json_schema['properties'])}"
                for t in info.function_tools
            )
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(respond), toolsets=[ToolnurseryToolset(_registry())])
        await agent.run("go")
        return seen

    assert sorted(_run(main())) == ["add:['a', 'b']", "whoami:[]"]


def test_the_listed_tools_follow_the_registry_between_and_within_runs() -> None:
    # get_tools lists what it made at the last registry change, not a fresh copy
    # per run step: a change made mid-run (by a tool here) shows at the next step.
    registry = ToolRegistry()
    registry.register(add)
    scope = registry.scope()
    toolset = ToolnurseryToolset(scope)
    assert toolset.names() == {"add"}

    @tool
    async def grow(ctx: ToolRunContext[Any]) -> str:
        """Give the agent one more tool."""
        scope.register(whoami)
        return "grown"

    registry.register(grow)
    assert toolset.names() == {"add", "grow"}
    listed: list[list[str]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        listed.append(sorted(t.name for t in info.function_tools))
        if len(listed) == 1:
            return ModelResponse(parts=[ToolCallPart("grow", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    async def main() -> None:
        await Agent(FunctionModel(respond), toolsets=[toolset]).run("go")

    _run(main())
    assert listed == [["add", "grow"], ["add", "grow", "whoami"]]
    scope.restrict(allow=["add"])  # the scope's own whoami stays in its view
    assert toolset.names() == {"add", "whoami"}


def test_a_scope_limits_the_tools_the_agent_sees() -> None:
    async def main() -> str:
        registry = _registry()
        scope = registry.scope()
        scope.restrict(allow=["add"])
        calls = [
            ToolCallPart("add", {"a": 2, "b": 2}, tool_call_id="c1"),
            ToolCallPart("whoami", {}, tool_call_id="c2"),
        ]
        agent = Agent(_scripted(calls), capabilities=[ToolnurseryCapability(scope)])
        return (await agent.run("go")).output

    output = _run(main())
    assert output.startswith("c1=4 | c2=")
    assert "whoami" in output
    assert "c2=4" not in output


def test_a_response_with_an_output_call_falls_back_to_one_call_at_a_time() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    async def main() -> tuple[Answer, list[Any]]:
        recorder = ListRecorder()
        seen: list[Any] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            [output_tool] = info.output_tools
            return ModelResponse(
                parts=[
                    ToolCallPart("whoami", {}, tool_call_id="c1"),
                    ToolCallPart(output_tool.name, {"text": "final"}, tool_call_id="c2"),
                ]
            )

        capability = ToolnurseryCapability(_registry(), recorder=recorder)
        agent = Agent(
            FunctionModel(respond),
            deps_type=str,
            output_type=Answer,
            capabilities=[capability],
            end_strategy="exhaustive",
        )
        result = await agent.run("go", deps="ann")
        seen.extend(_returns(result.all_messages()).items())
        return result.output, [recorder.events, seen]

    output, (events, seen) = _run(main())
    assert output == Answer(text="final")
    assert events == []  # no batch was opened: the call ran through execute
    assert ("c1", "ann in batch False") in seen


@pytest.mark.spec("B107")
def test_cancelling_the_agent_run_aborts_the_batch() -> None:
    recorder = ListRecorder()
    finalized: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        @tool
        async def hang() -> str:
            """Hang."""
            started.set()
            try:
                await trio.sleep_forever()
            finally:
                finalized.append("hang")
            return "never"  # pragma: no cover

        registry = ToolRegistry()
        registry.register(hang)
        registry.register(add)
        calls = [
            ToolCallPart("hang", {}, tool_call_id="c1"),
            ToolCallPart("add", {"a": 1, "b": 1}, tool_call_id="c2"),
        ]
        agent = Agent(
            _scripted(calls),
            capabilities=[ToolnurseryCapability(registry, recorder=recorder, max_parallel=1)],
        )
        run = asyncio.create_task(agent.run("go"))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    _run(main())
    assert finalized == ["hang"]
    results = {e.call_id: e.result for e in recorder.events if isinstance(e, ToolResultEvent)}
    assert results["c1"].error is not None
    assert results["c1"].error.code == "ABORTED"
    assert results["c2"].error is not None
    assert results["c2"].error.code == "ABORTED_BEFORE_DISPATCH"


# -- pydantic-ai tools into a registry ----------------------------------------------------


async def forecast(ctx: RunContext[dict[str, str]], city: str, days: int = 1) -> str:
    """Forecast the weather.

    Args:
        city: the city.
        days: how many days.
    """
    return f"{ctx.deps['sky']} in {city} for {days}d ({ctx.tool_call_id})"


def test_a_run_context_tool_gets_our_deps() -> None:
    registry = ToolRegistry()
    registry.register(from_pydantic_ai(Tool(forecast)))

    async def main() -> list[str]:
        calls = [
            ToolCall("c1", "forecast", '{"city": "Oslo"}'),
            ToolCall("c2", "forecast", {"city": "Rome", "days": "x"}),
        ]
        results = await toolnursery.aio.run_tool_calls(registry, calls, deps={"sky": "sun"})
        return [r.text for r in results]

    assert _run(main()) == [
        "sun in Oslo for 1d (c1)",
        'Error: invalid arguments: "days" must be an integer',
    ]


def test_the_built_run_context_refuses_what_it_does_not_carry() -> None:
    seen_types: list[str] = []

    def reads_the_model(ctx: RunContext[None]) -> str:
        """Read the model."""
        seen_types.append(type(ctx).__name__)
        assert isinstance(ctx, RunContext)
        return str(ctx.model)

    registry = ToolRegistry()
    definition = from_pydantic_ai(reads_the_model)
    registry.register(definition)

    async def main() -> Any:
        return await toolnursery.aio.execute(
            registry, ToolExecutionInput("c1", "reads_the_model", {})
        )

    result = _run(main())
    assert result.is_error
    assert "\n" not in result.text
    assert result.text.startswith(
        "Error: 'model' is not available: this pydantic-ai tool was called by toolnursery"
    )
    assert seen_types == ["ToolnurseryRunContext"]


def test_a_tool_in_a_pydantic_ai_run_gets_the_live_run_context() -> None:
    seen: list[Any] = []

    def model_name(ctx: RunContext[str]) -> str:
        """Name the model."""
        seen.append((type(ctx).__name__, ctx.deps, ctx.tool_call_id))
        return ctx.model.model_name

    registry = ToolRegistry()
    registry.register(from_pydantic_ai(model_name))

    async def main() -> str:
        calls = [ToolCallPart("model_name", {}, tool_call_id="c1")]
        agent = Agent(
            _scripted(calls), deps_type=str, capabilities=[ToolnurseryCapability(registry)]
        )
        return (await agent.run("go", deps="ann")).output

    assert _run(main()) == "c1=function:respond:"
    assert seen == [("RunContext", "ann", "c1")]


def test_model_retry_is_a_one_line_error() -> None:
    def picky(word: str) -> str:
        """Be picky."""
        raise ModelRetry(f"no\n  {word}, try\tanother")

    registry = ToolRegistry()
    registry.register(from_pydantic_ai(picky, name="picky_tool"))

    async def main() -> Any:
        return await toolnursery.aio.execute(
            registry, ToolExecutionInput("c1", "picky_tool", {"word": "x"})
        )

    result = _run(main())
    assert result.text == "Error: no x, try another"
    assert result.error is not None
    assert result.error.code == "MODEL_RETRY"


def test_our_abort_cancels_their_tool() -> None:
    cancelled: list[str] = []

    async def main() -> Any:
        started = asyncio.Event()

        async def wait_forever() -> str:
            """Wait forever."""
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append("their tool")
                raise
            return "never"  # pragma: no cover

        registry = ToolRegistry()
        registry.register(from_pydantic_ai(wait_forever))
        signal = CancelSignal()
        run = asyncio.create_task(
            toolnursery.aio.run_tool_calls(
                registry, [ToolCall("c1", "wait_forever", {})], signal=signal
            )
        )
        await started.wait()
        signal.cancel("stop")
        return await run

    [result] = _run(main())
    assert cancelled == ["their tool"]
    assert result.error is not None
    assert result.error.code == "ABORTED"


def test_from_pydantic_ai_refuses_what_is_not_a_tool() -> None:
    from toolnursery import RegistrationError

    with pytest.raises(
        RegistrationError, match=r"expected a pydantic_ai\.Tool or a function, got int"
    ):
        from_pydantic_ai(3)  # type: ignore[arg-type]


def test_the_toolset_refuses_what_is_not_a_registry() -> None:
    with pytest.raises(
        TypeError,
        match=r"ToolnurseryToolset\(registry\) must be a ToolRegistry or ToolScope, got dict",
    ):
        ToolnurseryToolset({})  # type: ignore[arg-type]


# -- the common agent, our piece swapped in ---------------------------------------------------


def roll_die() -> int:
    """Roll a six-sided die (this one is loaded)."""
    return 0


def player_name(ctx: RunContext[str]) -> str:
    """Get the player's name."""
    return ctx.deps


def test_the_common_agent_with_our_capability_answers_as_the_native_one() -> None:
    from pydantic_ai.models.test import TestModel

    recorder = ListRecorder()

    async def main() -> tuple[str, str]:
        native = Agent(TestModel(), deps_type=str, tools=[roll_die, player_name])
        # The one call changed: the same list of tools, in our capability.
        capability = ToolnurseryCapability([roll_die, player_name], recorder=recorder)
        ours = Agent(TestModel(), deps_type=str, capabilities=[capability])
        return (
            (await native.run("Roll for me", deps="Anne")).output,
            (await ours.run("Roll for me", deps="Anne")).output,
        )

    native, ours = _run(main())
    assert native == '{"roll_die":0,"player_name":"Anne"}'
    assert ours == native  # 0 stays a number
    calls = [e for e in recorder.events if isinstance(e, ToolCallEvent)]
    assert sorted(e.call.name for e in calls) == ["player_name", "roll_die"]
    assert len({e.batch for e in recorder.events}) == 1  # one response, one batch


@tool
async def values(kind: str) -> Any:
    """Return a value of a kind."""
    return {
        "zero": 0,
        "yes": True,
        "none": None,
        "object": {"b": [1, 2.5], "a": "x"},
        "prose": "sunny, 0 clouds",
        "digits": "42",
        "json_text": '{"a":1}',
    }[kind]


def test_returns_keep_their_json_type() -> None:
    registry = ToolRegistry()
    registry.register(values)
    kinds = ["zero", "yes", "none", "object", "prose", "digits", "json_text"]
    seen: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            calls = [ToolCallPart("values", {"kind": k}, tool_call_id=k) for k in kinds]
            return ModelResponse(parts=list(calls))
        seen.update(_returns(messages))
        return ModelResponse(parts=[TextPart("done")])

    async def main() -> None:
        for capabilities, toolsets in (
            ([ToolnurseryCapability(registry)], []),
            ([], [ToolnurseryToolset(registry)]),
        ):
            seen.clear()
            agent = Agent(FunctionModel(respond), capabilities=capabilities, toolsets=toolsets)
            await agent.run("go")
            assert seen == {
                "zero": 0,
                "yes": True,
                "none": None,
                "object": {"a": "x", "b": [1, 2.5]},
                "prose": "sunny, 0 clouds",
                "digits": "42",  # text a body returned stays text, though it reads as JSON
                "json_text": '{"a":1}',
            }
            assert type(seen["zero"]) is int

    _run(main())


# -- the model cannot fill an injected parameter ----------------------------------------------


def test_the_model_cannot_fill_a_run_context_or_depends_parameter() -> None:
    from toolnursery import Depends

    ran: list[str] = []

    async def their_forecast(ctx: RunContext[str], city: str) -> str:
        """Forecast."""
        ran.append(f"their {ctx.deps}")
        return f"sun in {city}"

    @tool
    async def our_send(to: str, inbox: str = Depends(lambda ctx: ctx.deps)) -> str:
        """Send."""
        ran.append(f"ours {inbox}")
        return f"sent to {to}"

    registry = ToolRegistry()
    registry.register(from_pydantic_ai(their_forecast))
    registry.register(our_send)
    turn = [
        ToolCallPart(
            "their_forecast", {"city": "Oslo", "ctx": {"deps": "admin"}}, tool_call_id="a"
        ),
        ToolCallPart("our_send", {"to": "bo", "inbox": "admin"}, tool_call_id="b"),
        ToolCallPart("our_send", {"to": "bo"}, tool_call_id="c"),
    ]

    async def main() -> str:
        agent = Agent(
            _scripted(turn), deps_type=str, capabilities=[ToolnurseryCapability(registry)]
        )
        return (await agent.run("go", deps="ann")).output

    assert _run(main()) == (
        'a=Error: invalid arguments: unknown argument "ctx" (the tool takes: city) | '
        'b=Error: invalid arguments: argument "inbox" is supplied by the host, not the model | '
        "c=sent to bo"
    )
    assert ran == ["ours ann"]
