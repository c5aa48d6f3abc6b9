"""A registry for the serve tests and the MCP conformance run (``make`` / ``conformance``).

Importable by path (``--tools tests/mcp_serve_tools.py:make``); state a test needs to
observe in-process lives on the registry returned by :func:`make`.
"""

from __future__ import annotations

import base64
from typing import Any

import trio

from toolnursery import (
    Ask,
    AudioContent,
    EmbeddedResource,
    ImageContent,
    McpAnnotations,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    elicit,
    install_timeout_policy,
    report_log,
    report_progress,
    sample,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()


class State:
    """What the in-process tests observe of the bodies."""

    def __init__(self) -> None:
        self.slow_started = trio.Event()
        self.slow_cancelled = trio.Event()
        self.running = 0
        self.most = 0


def make() -> ToolRegistry:
    """The serve tests' registry (``registry.state`` is its :class:`State`)."""
    registry = ToolRegistry()
    state = State()
    registry.state = state  # type: ignore[attr-defined]

    async def echo(args: Any, ctx: Any) -> str:
        return str(args.get("text", "ran"))

    async def slow(args: Any, ctx: Any) -> str:
        state.slow_started.set()
        ctx.report_progress(0, None, "started")  # a client that asked hears it is running
        try:
            await trio.sleep_forever()
        finally:
            state.slow_cancelled.set()
        return "never"

    async def sleepy(args: Any, ctx: Any) -> str:
        await trio.sleep(30)
        return "late"

    async def limited(args: Any, ctx: Any) -> str:
        state.running += 1
        state.most = max(state.most, state.running)
        try:
            await trio.sleep(0.01)
        finally:
            state.running -= 1
        return str(state.most)

    async def progress(args: Any, ctx: Any) -> str:
        for step in (1, 2, 3):
            report_progress(step, 3, f"step {step}")
            await trio.sleep(0)
        report_log("warning", "careful", logger="tests")
        report_log("debug", "chatter")
        return "done"

    async def kinds(args: Any, ctx: Any) -> list[Any]:
        return [
            TextContent("hello"),
            ImageContent(PNG, "image/png"),
            AudioContent(WAV, "audio/wav"),
            ResourceLink(uri="file:///notes.txt", name="notes"),
            EmbeddedResource(resource=ResourceContents("file:///a.txt", text="alpha")),
        ]

    async def count(args: Any, ctx: Any) -> dict[str, int]:
        return {"n": int(args.get("n", 0))}

    async def boom(args: Any, ctx: Any) -> str:
        raise RuntimeError("the body failed")

    async def key(args: Any, ctx: Any) -> str:
        return str(ctx.idempotency_key)

    def threaded(args: Any, ctx: Any) -> str:
        # A plain def: runs in a worker thread, and reports from there.
        ctx.report_progress(1, 2, "half")
        ctx.log("warning", "from the thread")
        ctx.report_progress(2, 2, "all")
        return "threaded"

    async def badnote(args: Any, ctx: Any) -> str:
        try:
            ctx.report_progress(1, 2, args.get("message", 7))
        except ValueError as exc:
            return f"refused: {exc}"
        return "sent"

    async def question(args: Any, ctx: Any) -> str:
        answer = await elicit(
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        )
        return f"{answer.action}: {(answer.content or {}).get('name')}"

    async def two_questions(args: Any, ctx: Any) -> str:
        name = await elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        color = await elicit(
            "Colour?", {"type": "object", "properties": {"color": {"type": "string"}}}
        )
        return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"

    async def chatty_slow(args: Any, ctx: Any) -> str:
        ctx.report_progress(1, message="started")
        try:
            await trio.sleep_forever()
        finally:
            ctx.report_progress(2, message="cancelled")  # nobody left to tell
        return "never"

    async def ask_model(args: Any, ctx: Any) -> str:
        answer = await sample("What is the capital of France?", max_tokens=20)
        return f"{answer.model}: {answer.text}"

    async def ctx_question(args: Any, ctx: ToolRunContext) -> str:
        answer = await ctx.elicit(
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="name",
        )
        return f"{answer.action}: {(answer.content or {}).get('name')}"

    async def ctx_ask_model(args: Any, ctx: ToolRunContext) -> str:
        answer = await ctx.sample(
            "What is the capital of France?", max_tokens=20, system_prompt="Be brief."
        )
        return f"{answer.model}: {answer.text}"

    async def huge(args: Any, ctx: Any) -> str:
        try:
            ctx.report_progress(10**400)
        except ValueError as exc:
            return f"refused: {exc}"
        return "sent"

    registry.register(
        define_tool(
            name="echo",
            description="Echo the text.",
            parameters={"text": {"type": "string", "required": True}},
            execute=echo,
            is_concurrency_safe=lambda args: True,
            mcp_annotations=McpAnnotations(title="Echo", read_only=True, open_world=False),
        )
    )
    registry.register(ToolDefinition("slow", "Run until cancelled.", {"type": "object"}, slow))
    registry.register(
        ToolDefinition(
            "sleepy", "Sleep past its budget.", {"type": "object"}, sleepy, timeout_ms=100
        )
    )
    registry.register(
        ToolDefinition(
            "limited", "At most 3 at once.", {"type": "object"}, limited, max_concurrency=3
        )
    )
    registry.register(ToolDefinition("progress", "Report progress.", {"type": "object"}, progress))
    registry.register(ToolDefinition("kinds", "Every content kind.", {"type": "object"}, kinds))
    registry.register(ToolDefinition("forbidden", "Always denied.", {"type": "object"}, echo))
    registry.register(
        define_tool(
            name="count",
            description="A structured result.",
            parameters={"n": {"type": "number"}},
            execute=count,
            output={"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        )
    )
    for name, body in (
        ("boom", boom),
        ("key", key),
        ("threaded", threaded),
        ("badnote", badnote),
        ("huge", huge),
        ("question", question),
        ("two_questions", two_questions),
        ("chatty_slow", chatty_slow),
        ("ask_model", ask_model),
        ("ctx_question", ctx_question),
        ("ctx_ask_model", ctx_ask_model),
        ("ask_me", echo),
    ):
        registry.register(ToolDefinition(name, f"The {name} tool.", {"type": "object"}, body))

    async def ask_for_ask_me(execution: Any, next: Any) -> Any:
        if execution.name == "ask_me":
            return Ask("May ask_me run?")
        return await next()

    registry.on_pre_execute(ask_for_ask_me)
    registry.guard(lambda execution: "not allowed" if execution.name == "forbidden" else None)
    install_timeout_policy(registry)
    return registry
