"""An agent loop on trio (or asyncio): the official Anthropic SDK, streaming, toolnursery.

The model sees the bundled example tools working in a sandbox directory. Each turn
streams the model's message; every ``tool_use`` block is submitted to a toolnursery
batch at its ``content_block_stop``, so a parallel-safe call runs while the model is
still streaming the next one. Text is printed as it streams, and each call's card as
its result commits; the results go back as one user message of ``tool_result``
blocks. The loop ends when the model answers without calling a tool.

Policies: a timeout policy (every call at most 10 s) and a guard (this agent writes
only under ``notes/``).

Run it (``pip install 'toolnursery[anthropic,cli]'``)::

    python examples/anthropic_agent.py "What does src/app.py print?"
    python examples/anthropic_agent.py --asyncio "What does src/app.py print?"

``--asyncio`` runs the same loop under ``asyncio.run`` through ``toolnursery.aio``
(the tools still run on trio, as a guest of the asyncio loop). The SDK reads
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``; ``--model`` picks the model.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import anthropic
import trio

import toolnursery.aio
from toolnursery import (
    ToolArgsError,
    ToolCall,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    install_timeout_policy,
    open_tool_batch,
    parse_arguments,
)
from toolnursery.examples import example_registry, fill_sandbox
from toolnursery.presentation import call_view, render_terminal, result_view
from toolnursery.providers import anthropic as messages_format

Write = Callable[..., None]


def agent_registry(root: str) -> tuple[ToolRegistry, dict[str, float]]:
    """The example tools under ``root`` with a timeout policy and a write guard.

    Also returns a dict that receives, per call id, when its body started.
    """
    registry = example_registry(root)
    install_timeout_policy(registry, default_timeout_ms=10_000)
    registry.guard(writes_only_notes)
    started: dict[str, float] = {}

    async def note_start(execution: Any, next_: Any) -> ToolExecutionResult:
        started[execution.call_id] = time.perf_counter()
        result: ToolExecutionResult = await next_()
        return result

    registry.on_execute(note_start)
    return registry, started


def writes_only_notes(execution: ToolExecution) -> str | None:
    """The guard: ``write_file`` and ``move_path`` may only touch ``notes/``."""
    if execution.name not in ("write_file", "move_path"):
        return None
    args = execution.arguments
    paths = [args.get(key) for key in ("path", "source", "destination") if key in args]
    if all(isinstance(p, str) and p.startswith("notes/") for p in paths):
        return None
    return "this agent may only write under notes/"


def card(registry: ToolRegistry, call: ToolCall, result: ToolExecutionResult) -> str:
    definition = registry.get(call.name)
    try:
        args = parse_arguments(call.arguments)
    except ToolArgsError:
        args = None
    return render_terminal(
        call_view(definition, args, name=call.name),
        result_view(definition, args, result),
        raw=result,
        width=80,
    )


async def run_agent(
    client: anthropic.AsyncAnthropic,
    prompt: str,
    registry: ToolRegistry,
    started: dict[str, float],
    *,
    model: str,
    write: Write = print,
    max_turns: int = 8,
    open_batch: Callable[..., Any] = open_tool_batch,
) -> list[Any]:
    """Loop until the model stops calling tools; returns the conversation.

    ``open_batch`` is :func:`toolnursery.open_tool_batch` under trio and
    :func:`toolnursery.aio.open_tool_batch` under asyncio; the rest is the same.
    """
    tools = messages_format.tools(registry)
    history: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        stream = await client.messages.create(
            model=model, max_tokens=4096, messages=history, tools=tools, stream=True
        )
        async with stream, open_batch(registry, max_parallel=4) as batch:
            turn = messages_format.stream_calls(stream, batch)
            async for text in turn:
                write(text, end="", flush=True)
            streamed = time.perf_counter()
            if turn.text:
                write()
            async for call, result in turn.pairs():
                write(card(registry, call, result), end="")
                began = started.get(call.id)
                if began is not None and began < streamed:
                    write(
                        f"  {call.name} started {streamed - began:.3f}s before the model "
                        "finished streaming"
                    )
        if turn.error is not None:
            write(f"(the response stream broke off: {turn.error})")
        history += messages_format.assistant_messages(turn)
        history += messages_format.result_messages(turn.calls, turn.results)
        if not turn.calls:
            return history
    write(f"(stopped after {max_turns} turns)")
    return history


async def main(argv: list[str], *, on_asyncio: bool = False) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    parser.add_argument("--model", default="claude-sonnet-5-5")
    parser.add_argument("--asyncio", action="store_true", help="run under asyncio.run")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolnursery-agent-") as root:
        fill_sandbox(root)
        registry, started = agent_registry(root)
        async with anthropic.AsyncAnthropic() as client:
            await run_agent(
                client,
                options.prompt,
                registry,
                started,
                model=options.model,
                open_batch=toolnursery.aio.open_tool_batch if on_asyncio else open_tool_batch,
            )
    return 0


if __name__ == "__main__":
    if "--asyncio" in sys.argv[1:]:
        sys.exit(asyncio.run(main(sys.argv[1:], on_asyncio=True)))
    sys.exit(trio.run(main, sys.argv[1:]))
