"""pydantic-ai, openai-agents and smolagents: their own tool execution against our bridge.

Per framework, one turn of ten calls of ``lookup(query: str, limit: int = 10)`` (odd
calls omit ``limit``), each side sampled in turn in the same process:

* **theirs**: the framework executes its own tool, driven by its own test model — a
  pydantic-ai ``Tool`` in an ``Agent`` driven by ``FunctionModel``; an openai-agents
  ``@function_tool`` in an ``Agent`` run by ``Runner`` with the SDK's ``ScriptedModel``;
  a smolagents ``@tool`` run by ``ToolCallingAgent.process_tool_calls`` (the agent's
  tool step, its thread pool included) on a scripted ``ChatMessage`` (smolagents has no
  test model);
* **ours**: the same framework with toolnursery's bridge, and a registry with one
  pass-through listener in each of the five phases (pre-execute, guard, execute
  wrapper, post-execute, result observer) — ``ToolnurseryCapability`` (one batch per
  response), ``function_tools`` (one pipeline run per call); for smolagents, the
  smolagents tool imported with ``from_smolagents`` and the step's calls run as one
  batch by ``toolnursery.aio.run_tool_calls`` (our batch in place of smolagents' step);
* **to_smolagents** (smolagents): the drop-in — ``ToolCallingAgent``'s own tool step
  over a registry's tools exported by ``to_smolagents`` (same five hooks, a ``def``
  body), each call through our pipeline in smolagents' worker thread;
* **floor** (pydantic-ai, openai-agents): the framework's turn with a tool that returns
  at once, unchecked (a toolset, a ``FunctionTool``): what the framework's own run loop
  costs per call whatever runs the tool. theirs/floor is the best ratio any bridge
  inside that framework could reach.

The pydantic-ai and openai-agents figures are whole agent turns (two model requests of
the scripted model, the framework's run loop, ten tool calls), divided by ten: the
framework's own per-turn costs are in every row, so the ratio says what swapping the
executor changes for a user. The smolagents figures are the tool step alone.
Bodies: ``async`` awaiting one ``asyncio.sleep(0)`` (pydantic-ai, openai-agents; ours a
toolnursery ``@tool`` declared ``asyncio_tool``, run by the asyncio driver on the same
loop — ``--body trio``: a trio ``@tool``, run in the trio guest run); a plain ``def``
(smolagents, every side).

A repetition is the median of interleaved one-turn samples of every side (CPU time of
the process, so worker threads count); printed: µs per call, median (min–max) over the
repetitions, and theirs ÷ this side per repetition (above 1×: this side is cheaper).

Run: ``python benchmarks/bench_bridges_others.py`` (``--quick``: fewer samples;
``--only pydantic-ai|openai-agents|smolagents``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from typing import Any

import trio

import toolnursery.aio
from passthrough import guard, observe, post, pre, wrap
from toolnursery import (
    ToolCall,
    ToolRegistry,
    tool,
)

CALLS = 10
REPS = 3


def arguments(i: int) -> dict[str, Any]:
    return {"query": f"q{i}"} if i % 2 else {"query": f"q{i}", "limit": 5}


# -- the five pass-through hooks ---------------------------------------------------------


def with_hooks(registry: ToolRegistry) -> ToolRegistry:
    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    registry.on_result(observe)
    return registry


@tool(name="lookup", is_concurrency_safe=lambda args: True)
async def trio_lookup(query: str, limit: int = 10) -> str:
    """Look a query up."""
    await trio.lowlevel.checkpoint()
    return f"{limit} results for {query}"


@tool(name="lookup", is_concurrency_safe=lambda args: True)
async def asyncio_lookup(query: str, limit: int = 10) -> str:
    """Look a query up."""
    await asyncio.sleep(0)
    return f"{limit} results for {query}"


OUR_BODIES = {"asyncio": toolnursery.aio.asyncio_tool(asyncio_lookup), "trio": trio_lookup}
"""Ours: the body declared ``asyncio_tool`` (the asyncio driver runs the batch: the
default), or a trio ``@tool`` (the trio guest run); ``--body``."""
BODY = ["asyncio"]


def our_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(OUR_BODIES[BODY[0]])
    return with_hooks(registry)


# -- sampling ----------------------------------------------------------------------------

Sample = Callable[[], float]
"""Run one turn, return its CPU seconds."""


def interleave(samples_of: dict[str, Sample], samples: int) -> dict[str, list[float]]:
    """Per repetition, the median µs per call of each side, sampled in turn."""
    for sample in samples_of.values():
        sample()  # warm up
    out: dict[str, list[float]] = {name: [] for name in samples_of}
    for _ in range(REPS):
        taken: dict[str, list[float]] = {name: [] for name in samples_of}
        for _ in range(samples):
            for name, sample in samples_of.items():
                taken[name].append(sample() / CALLS * 1e6)
        for name in out:
            out[name].append(statistics.median(taken[name]))
    return out


def cpu(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def async_sampler(loop: asyncio.AbstractEventLoop, turn: Callable[[], Awaitable[object]]) -> Sample:
    return lambda: cpu(lambda: loop.run_until_complete(turn()))


# -- pydantic-ai -------------------------------------------------------------------------


def pydantic_ai_pair(loop: asyncio.AbstractEventLoop) -> tuple[Sample, Sample]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from toolnursery.pydantic_ai import ToolnurseryCapability

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("lookup", arguments(i), tool_call_id=f"c{i}") for i in range(CALLS)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    async def lookup(query: str, limit: int = 10) -> str:
        """Look a query up."""
        await asyncio.sleep(0)
        return f"{limit} results for {query}"

    theirs = Agent(FunctionModel(respond), tools=[lookup])
    ours = Agent(FunctionModel(respond), capabilities=[ToolnurseryCapability(our_registry())])

    async def check(agent: Agent[None, str]) -> None:
        result = await agent.run("go")
        returns = [
            p.content
            for m in result.all_messages()
            for p in m.parts
            if p.part_kind == "tool-return"
        ]
        assert returns[:2] == ["5 results for q0", "10 results for q1"], returns

    loop.run_until_complete(check(theirs))
    loop.run_until_complete(check(ours))
    floor = Agent(FunctionModel(respond), toolsets=[answering_at_once(theirs)])
    return {
        "ours": async_sampler(loop, lambda: ours.run("go")),
        "theirs": async_sampler(loop, lambda: theirs.run("go")),
        "floor": async_sampler(loop, lambda: floor.run("go")),
    }


def answering_at_once(agent: Any) -> Any:
    """A pydantic-ai toolset listing ``lookup`` whose calls return at once, unchecked:
    what pydantic-ai's own run loop costs per call with any tool behind it."""
    from pydantic_ai.tools import ToolDefinition as PaiToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema

    any_args = SchemaValidator(core_schema.any_schema())

    class AtOnce(AbstractToolset[Any]):
        @property
        def id(self) -> str:
            return "at-once"

        async def get_tools(self, ctx: Any) -> dict[str, ToolsetTool[Any]]:
            definition = PaiToolDefinition(
                name="lookup", description="Look a query up.", parameters_json_schema={}
            )
            return {
                "lookup": ToolsetTool(
                    toolset=self, tool_def=definition, max_retries=0, args_validator=any_args
                )
            }

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            return "ok"

    return AtOnce()


# -- openai-agents -----------------------------------------------------------------------


def openai_agents_pair(loop: asyncio.AbstractEventLoop) -> tuple[Sample, Sample]:
    from agents import Agent, FunctionTool, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from toolnursery.openai_agents import function_tools

    @function_tool
    async def lookup(query: str, limit: int = 10) -> str:
        """Look a query up."""
        await asyncio.sleep(0)
        return f"{limit} results for {query}"

    config = RunConfig(tracing_disabled=True)
    ours_tools = function_tools(our_registry())

    def model() -> ScriptedModel:
        turn = [function_call("lookup", arguments(i), call_id=f"c{i}") for i in range(CALLS)]
        return ScriptedModel([turn, [assistant_message("done")]])

    async def run(tools: list[Any]) -> Any:
        return await Runner.run(
            Agent(name="a", model=model(), tools=tools), "go", run_config=config
        )

    for tools in ([lookup], ours_tools):
        result = loop.run_until_complete(run(tools))
        outputs = [i.output for i in result.new_items if i.type == "tool_call_output_item"]
        assert outputs[:2] == ["5 results for q0", "10 results for q1"], outputs

    async def at_once(ctx: Any, arguments: str) -> str:
        return "ok"

    floor = [
        FunctionTool(
            name="lookup",
            description="Look a query up.",
            params_json_schema={"type": "object", "properties": {}},
            on_invoke_tool=at_once,
            strict_json_schema=False,
        )
    ]
    return {
        "ours": async_sampler(loop, lambda: run(ours_tools)),
        "theirs": async_sampler(loop, lambda: run([lookup])),
        "floor": async_sampler(loop, lambda: run(floor)),
    }


# -- smolagents --------------------------------------------------------------------------


def smolagents_pair(loop: asyncio.AbstractEventLoop) -> tuple[Sample, Sample]:
    from smolagents import ToolCallingAgent, tool
    from smolagents.memory import ActionStep
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import LogLevel, Timing

    from toolnursery.smolagents import from_smolagents, to_smolagents

    @tool
    def lookup(query: str, limit: int | None = None) -> str:
        """Look a query up.

        Args:
            query: what to look for.
            limit: how many results (10 when omitted).
        """
        return f"{limit or 10} results for {query}"

    class Unused(Model):  # the agent needs a model; the tool step never calls it
        def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
            raise AssertionError("not called")

    message = ChatMessage(
        role=MessageRole.ASSISTANT,
        tool_calls=[
            ChatMessageToolCall(
                ChatMessageToolCallFunction(arguments(i), "lookup"), f"c{i}", "function"
            )
            for i in range(CALLS)
        ],
    )
    agent = ToolCallingAgent(tools=[lookup], model=Unused(), verbosity_level=LogLevel.OFF)
    registry = ToolRegistry()
    registry.register(from_smolagents(lookup, is_concurrency_safe=lambda args: True))
    with_hooks(registry)
    calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]

    def theirs() -> list[Any]:
        step = ActionStep(step_number=1, timing=Timing(start_time=0.0))
        return list(agent.process_tool_calls(message, step))

    outputs = {o.id: o.observation for o in theirs() if hasattr(o, "observation")}
    assert [outputs["c0"], outputs["c1"]] == ["5 results for q0", "10 results for q1"], outputs

    results = loop.run_until_complete(toolnursery.aio.run_tool_calls(registry, calls))
    assert [r.text for r in results[:2]] == ["5 results for q0", "10 results for q1"]
    ours = async_sampler(loop, lambda: toolnursery.aio.run_tool_calls(registry, calls))

    # The drop-in: smolagents' own tool step, over the registry's tools as smolagents
    # tools (each call through the pipeline in smolagents' worker thread).
    exported = ToolRegistry()
    exported.register(registry_lookup)
    with_hooks(exported)
    drop_in = ToolCallingAgent(
        tools=to_smolagents(exported), model=Unused(), verbosity_level=LogLevel.OFF
    )

    def drop_in_step() -> list[Any]:
        step = ActionStep(step_number=1, timing=Timing(start_time=0.0))
        return list(drop_in.process_tool_calls(message, step))

    outputs = {o.id: o.observation for o in drop_in_step() if hasattr(o, "observation")}
    assert [outputs["c0"], outputs["c1"]] == ["5 results for q0", "10 results for q1"], outputs
    return {
        "ours": ours,
        "theirs": lambda: cpu(theirs),
        "to_smolagents": lambda: cpu(drop_in_step),
    }


@tool(name="lookup", is_concurrency_safe=lambda args: True)
def registry_lookup(query: str, limit: int = 10) -> str:
    """Look a query up."""
    return f"{limit} results for {query}"


# -- report ------------------------------------------------------------------------------


def spread(values: Sequence[float], unit: str = "", digits: int = 1) -> str:
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{median:.{digits}f}{unit} ({low:.{digits}f}–{high:.{digits}f}{unit})"


LABELS: dict[str, dict[str, str]] = {
    "pydantic-ai": {
        "ours": "agent turn, ToolnurseryCapability (1 batch)",
        "theirs": "agent turn, a native Tool",
        "floor": "agent turn, a toolset answering at once",
    },
    "openai-agents": {
        "ours": "Runner turn, function_tools",
        "theirs": "Runner turn, a native @function_tool",
        "floor": "Runner turn, a FunctionTool answering at once",
    },
    "smolagents": {
        "ours": "tool step as our batch (from_smolagents)",
        "theirs": "tool step, ToolCallingAgent's own",
        "to_smolagents": "ToolCallingAgent's tool step, to_smolagents tools",
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="7 samples per repetition, not 31")
    parser.add_argument("--only", choices=["pydantic-ai", "openai-agents", "smolagents"])
    parser.add_argument("--body", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    BODY[0] = args.body
    samples = 7 if args.quick else 31
    names = {
        "pydantic-ai": "pydantic-ai-slim",
        "openai-agents": "openai-agents",
        "smolagents": "smolagents",
    }
    print(
        f"python {sys.version.split()[0]}, trio {trio.__version__}, toolnursery "
        f"{version('toolnursery')}, " + ", ".join(f"{n} {version(d)}" for n, d in names.items())
    )
    print(
        f"{CALLS} calls per turn, five pass-through hooks on ours; CPU µs per call, median "
        f"(min–max) of {REPS} repetitions, each the median of {samples} interleaved samples"
    )
    header = f"{'framework':<62} {'µs per call':>24} {'theirs/this':>22}"
    print(header)
    print("-" * len(header))
    loop = asyncio.new_event_loop()
    try:
        pairs: list[tuple[str, Callable[[], dict[str, Sample]]]] = [
            ("pydantic-ai", lambda: pydantic_ai_pair(loop)),
            ("openai-agents", lambda: openai_agents_pair(loop)),
            ("smolagents", lambda: smolagents_pair(loop)),
        ]
        for framework, make in pairs:
            if args.only and framework != args.only:
                continue
            measured = interleave(make(), samples)
            theirs_us = measured["theirs"]
            for name, us in measured.items():
                ratios = [t / o for t, o in zip(theirs_us, us, strict=True)]
                ratio = "" if name == "theirs" else spread(ratios, "x", 2)
                print(
                    f"{framework + ': ' + LABELS[framework][name]:<62} {spread(us):>24} {ratio:>22}"
                )
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


if __name__ == "__main__":
    main()
