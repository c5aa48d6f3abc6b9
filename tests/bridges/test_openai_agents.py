"""toolnursery.openai_agents against the real openai-agents SDK, driven by its ScriptedModel."""

from __future__ import annotations

import asyncio
import inspect
import sys
import typing
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

pytest.importorskip("agents")

import trio
from agents import Agent, FunctionTool, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

import toolnursery.aio
from toolnursery import (
    CancelSignal,
    RegistrationError,
    ToolCall,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    tool,
)
from toolnursery.openai_agents import from_function_tool, function_tools

T = TypeVar("T")
NO_TRACING = RunConfig(tracing_disabled=True)


def _run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, then check that the trio guest run ended with the loop."""
    hooks = sys.get_asyncgen_hooks()
    result = asyncio.run(main)
    assert not trio.lowlevel.in_trio_run()
    assert sys.get_asyncgen_hooks() == hooks
    return result


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


def _outputs(result: Any) -> dict[str, str]:
    return {
        item.raw_item["call_id"]: item.output
        for item in result.new_items
        if item.type == "tool_call_output_item"
    }


def test_an_agent_runs_three_calls_of_one_turn_through_the_pipeline() -> None:
    async def main() -> Any:
        model = ScriptedModel(
            [
                [
                    function_call("add", {"a": 1, "b": 2}, call_id="c1"),
                    function_call("whoami", {}, call_id="c2"),
                    function_call("add", '{"a": "x"}', call_id="c3"),
                ],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="a", model=model, tools=function_tools(_registry()))
        return await Runner.run(agent, "go", context="ann", run_config=NO_TRACING)

    result = _run(main())
    assert result.final_output == "done"
    # Each call is its own pipeline run (no batch): the SDK dispatches them one by one.
    assert _outputs(result) == {
        "c1": "3",
        "c2": "ann in batch False",
        "c3": 'Error: invalid arguments: "a" must be an integer; missing required property "b"',
    }


def test_the_tools_carry_the_registrys_schemas_and_policies() -> None:
    registry = _registry()
    registry.guard(lambda execution: "adding is off today" if execution.name == "add" else None)
    tools = function_tools(registry, deps="bob")
    assert [t.name for t in tools] == ["add", "whoami"]
    first = tools[0]
    assert isinstance(first, FunctionTool)
    assert first.params_json_schema == dict(add.parameters)
    assert first.strict_json_schema is False

    async def main() -> Any:
        model = ScriptedModel(
            [
                [
                    function_call("add", {"a": 1, "b": 2}, call_id="c1"),
                    function_call("whoami", {}, call_id="c2"),
                ],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="a", model=model, tools=tools)
        return await Runner.run(agent, "go", context="ignored", run_config=NO_TRACING)

    assert _outputs(_run(main())) == {
        "c1": "Error: adding is off today",
        "c2": "bob in batch False",
    }


def test_the_invoker_hands_the_sdk_a_resolved_signature_it_need_not_evaluate() -> None:
    # The SDK reads on_invoke_tool's signature and type hints on every call to pick the
    # context it passes; string annotations would be compiled and evaluated each time.
    first = function_tools(_registry())[0]
    assert isinstance(first, FunctionTool)
    invoke = first.on_invoke_tool
    assert not any(isinstance(hint, str) for hint in invoke.__annotations__.values())
    signature = inspect.signature(invoke)
    assert signature is getattr(invoke, "__signature__", None)
    assert signature.parameters["ctx"].annotation == ToolContext[Any]
    assert typing.get_type_hints(invoke)["ctx"] == ToolContext[Any]


def test_cancelling_the_run_aborts_the_call_in_flight() -> None:
    finalized: list[str] = []
    results: list[ToolExecutionResult] = []

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
        registry.on_result(lambda execution, result: results.append(result))
        model = ScriptedModel(
            [[function_call("hang", {}, call_id="c1")], [assistant_message("done")]]
        )
        agent = Agent(name="a", model=model, tools=function_tools(registry))
        run = asyncio.create_task(Runner.run(agent, "go", run_config=NO_TRACING))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    _run(main())
    assert finalized == ["hang"]
    assert [r.error.code if r.error else None for r in results] == ["ABORTED"]


def test_function_tools_refuses_what_is_not_a_registry() -> None:
    with pytest.raises(TypeError, match=r"function_tools\(registry\) must be a ToolRegistry"):
        function_tools({"add": add})  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match=r"expected an agents\.FunctionTool, got int"):
        function_tools([add, 3])  # type: ignore[list-item]


# -- FunctionTools into a registry --------------------------------------------------------


def test_a_function_tool_gets_a_tool_context_built_from_ours() -> None:
    seen: list[tuple[Any, ...]] = []

    @function_tool
    def forecast(ctx: ToolContext[dict[str, str]], city: str) -> str:
        """Forecast the weather.

        Args:
            city: the city.
        """
        seen.append((type(ctx).__name__, ctx.tool_name, ctx.tool_call_id, ctx.tool_arguments))
        return f"{ctx.context['sky']} in {city}"

    registry = ToolRegistry()
    registry.register(from_function_tool(forecast))

    async def main() -> list[str]:
        calls = [
            ToolCall("c1", "forecast", '{"city": "Oslo"}'),
            ToolCall("c2", "forecast", {"town": 1}),
        ]
        results = await toolnursery.aio.run_tool_calls(registry, calls, deps={"sky": "sun"})
        return [r.text for r in results]

    texts = _run(main())
    assert texts[0] == "sun in Oslo"
    assert texts[1].startswith("Error: invalid arguments: ")
    assert "\n" not in texts[1]
    assert seen == [("ToolContext", "forecast", "c1", '{"city":"Oslo"}')]


def test_a_raising_function_tool_is_a_one_line_error() -> None:
    @function_tool(failure_error_function=None)
    def broken(word: str) -> str:
        """Break."""
        raise ValueError(f"bad\nword {word}")

    registry = ToolRegistry()
    registry.register(from_function_tool(broken, name="broken_tool"))

    async def main() -> ToolExecutionResult:
        [result] = await toolnursery.aio.run_tool_calls(
            registry, [ToolCall("c1", "broken_tool", {"word": "x"})]
        )
        return result

    result = _run(main())
    assert result.is_error
    assert result.text == "Error: bad word x"
    assert result.error is not None
    assert result.error.code == "TOOL_ERROR"


def test_our_abort_cancels_their_tool() -> None:
    cancelled: list[str] = []

    async def main() -> list[ToolExecutionResult]:
        started = asyncio.Event()

        @function_tool
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
        registry.register(from_function_tool(wait_forever))
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


def test_from_function_tool_refuses_what_is_not_a_function_tool() -> None:
    with pytest.raises(RegistrationError, match=r"expected an agents\.FunctionTool, got function"):
        from_function_tool(lambda: None)  # type: ignore[arg-type]
    assert isinstance(function_tools(_registry())[0], FunctionTool)


def test_registry_tools_and_imported_function_tools_mix_in_one_agent() -> None:
    @function_tool
    def double(n: int) -> int:
        """Double a number."""
        return 2 * n

    registry = _registry()
    registry.register(from_function_tool(double))
    executions: list[ToolExecution] = []
    registry.on_result(lambda execution, result: executions.append(execution))

    async def main() -> Any:
        model = ScriptedModel(
            [
                [
                    function_call("double", {"n": 21}, call_id="c1"),
                    function_call("add", {"a": 1, "b": 1}, call_id="c2"),
                ],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="a", model=model, tools=function_tools(registry))
        return await Runner.run(agent, "go", run_config=NO_TRACING)

    assert _outputs(_run(main())) == {"c1": "42", "c2": "2"}
    assert sorted(e.call_id for e in executions) == ["c1", "c2"]


# -- the common agent, our piece swapped in ---------------------------------------------------


@function_tool
def get_weather(city: str, days: int | None = None) -> str:
    """Get the weather of a city.

    Args:
        city: the city.
        days: how many days ahead.
    """
    return f"sunny in {city}"


@function_tool
def get_player(ctx: ToolContext[str]) -> str:
    """Say whom the agent works for."""
    return ctx.context


def _turn() -> ScriptedModel:
    return ScriptedModel(
        [
            [
                # Strict mode (the SDK's default) has the model send every property.
                function_call("get_weather", {"city": "Oslo", "days": None}, call_id="c1"),
                function_call("get_player", {}, call_id="c2"),
            ],
            [assistant_message("done")],
        ]
    )


def test_the_common_agent_with_our_tools_answers_as_the_native_one() -> None:
    async def main() -> tuple[dict[str, str], dict[str, str]]:
        native = Agent(name="assistant", model=_turn(), tools=[get_weather, get_player])
        # The one call changed: the same list of tools, through function_tools.
        ours = Agent(
            name="assistant", model=_turn(), tools=function_tools([get_weather, get_player])
        )
        first = await Runner.run(native, "go", context="ann", run_config=NO_TRACING)
        second = await Runner.run(ours, "go", context="ann", run_config=NO_TRACING)
        return _outputs(first), _outputs(second)

    native, ours = _run(main())
    assert native == {"c1": "sunny in Oslo", "c2": "ann"}
    assert ours == native


def test_the_error_text_the_model_gets_is_ours_on_one_line() -> None:
    async def main() -> dict[str, str]:
        model = ScriptedModel(
            [
                [
                    function_call("get_weather", {"city": "Oslo", "days": "x"}, call_id="c1"),
                    function_call("get_weather", {"city": 3, "days": 1, "when": 1}, call_id="c2"),
                ],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="assistant", model=model, tools=function_tools([get_weather]))
        return _outputs(await Runner.run(agent, "go", run_config=NO_TRACING))

    assert _run(main()) == {
        "c1": 'Error: invalid arguments: "days" must be an integer or null',
        "c2": 'Error: invalid arguments: "city" must be a string; '
        'unknown argument "when" (the tool takes: city, days)',
    }


def test_the_model_cannot_fill_a_tool_context_or_depends_parameter() -> None:
    from toolnursery import Depends

    ran: list[str] = []

    @function_tool
    def their_forecast(ctx: ToolContext[str], city: str) -> str:
        """Forecast."""
        ran.append(f"their {ctx.context}")
        return f"sun in {city}"

    @tool
    async def our_send(to: str, inbox: str = Depends(lambda ctx: ctx.deps)) -> str:
        """Send."""
        ran.append(f"ours {inbox}")
        return f"sent to {to}"

    async def main() -> dict[str, str]:
        model = ScriptedModel(
            [
                [
                    function_call(
                        "their_forecast", {"city": "Oslo", "ctx": {"context": "x"}}, call_id="a"
                    ),
                    function_call("our_send", {"to": "bo", "inbox": "admin"}, call_id="b"),
                    function_call("our_send", {"to": "bo"}, call_id="c"),
                ],
                [assistant_message("done")],
            ]
        )
        tools = function_tools([their_forecast, our_send])
        agent = Agent(name="assistant", model=model, tools=tools)
        return _outputs(await Runner.run(agent, "go", context="ann", run_config=NO_TRACING))

    assert _run(main()) == {
        "a": 'Error: invalid arguments: unknown argument "ctx" (the tool takes: city)',
        "b": 'Error: invalid arguments: argument "inbox" is supplied by the host, not the model',
        "c": "sent to bo",
    }
    assert ran == ["ours ann"]
