"""The tools the MCP conformance suite calls, as a toolnursery registry.

``scripts/mcp-conformance`` serves :data:`registry` with ``toolnursery serve --http``
(``--tools tests/mcp_conformance_tools.py:registry``) and runs the suite's server
scenarios against it. The names, contents and timings come from
``mcp_conformance_data.py``; the tools are written with toolnursery's own API: a
validated :func:`~toolnursery.define_tool` for each tool without arguments, a raw
:class:`~toolnursery.ToolDefinition` for the JSON Schema 2020-12 tool (its schema
must reach ``tools/list`` verbatim).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from toolnursery import (
    AudioContent,
    ContentBlock,
    Disposer,
    ElicitationUnavailableError,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    TextContent,
    ToolDefinition,
    ToolRegistry,
    define_tool,
    elicit,
    report_log,
    report_progress,
    sample,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp_conformance_data as data
from toolnursery.mcp import close_sse_stream


def _resource(resource: dict[str, str]) -> EmbeddedResource:
    return EmbeddedResource(
        resource=ResourceContents(
            uri=resource["uri"], mime_type=resource["mimeType"], text=resource["text"]
        )
    )


async def simple_text(args: Any, ctx: Any) -> str:
    return data.SIMPLE_TEXT


async def image_content(args: Any, ctx: Any) -> list[ContentBlock]:
    return [ImageContent(data.PNG, "image/png")]


async def audio_content(args: Any, ctx: Any) -> list[ContentBlock]:
    return [AudioContent(data.WAV, "audio/wav")]


async def embedded_resource(args: Any, ctx: Any) -> list[ContentBlock]:
    return [_resource(data.EMBEDDED)]


async def multiple_content_types(args: Any, ctx: Any) -> list[ContentBlock]:
    return [
        TextContent(data.MIXED_TEXT),
        ImageContent(data.PNG, "image/png"),
        _resource(data.MIXED_RESOURCE),
    ]


async def with_logging(args: Any, ctx: Any) -> str:
    for index, message in enumerate(data.LOG_MESSAGES):
        if index:
            await trio.sleep(data.STEP_S)
        report_log("info", message)
    return data.LOGGING_DONE


async def with_progress(args: Any, ctx: Any) -> str:
    for index, progress in enumerate(data.PROGRESS_STEPS):
        if index:
            await trio.sleep(data.STEP_S)
        report_progress(progress, total=data.PROGRESS_TOTAL)
    return data.PROGRESS_DONE


async def error_handling(args: Any, ctx: Any) -> str:
    raise RuntimeError(data.ERROR_TEXT)


async def json_schema_2020_12(args: Any, ctx: Any) -> str:
    return f"hello {args.get('name', 'nobody')}"


# -- questions to the user (the newer suites' scenarios) ---------------------------

_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def elicitation(args: Any, ctx: Any) -> str:
    answer = await elicit(args.get("message", "?"), data.ELICITATION_SCHEMA)
    return f"User response: <action: {answer.action}, content: {answer.content}>"


async def elicitation_defaults(args: Any, ctx: Any) -> str:
    answer = await elicit("Please review your details", data.DEFAULTS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


async def elicitation_enums(args: Any, ctx: Any) -> str:
    answer = await elicit("Please choose", data.ENUMS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


async def input_required_elicitation(args: Any, ctx: Any) -> str:
    answer = await elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {(answer.content or {}).get('name')}!"


async def input_required_request_state(args: Any, ctx: Any) -> str:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await elicit("Please confirm", schema, key="confirm")
    # Reached only with a requestState the server verified.
    return f"state-ok: {(answer.content or {}).get('ok')}"


async def input_required_multi_round(args: Any, ctx: Any) -> str:
    name = await elicit("Step 1: What is your name?", _NAME, key="step1")
    color_schema = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    color = await elicit("Step 2: What is your favorite color?", color_schema, key="step2")
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"


async def sampling(args: Any, ctx: Any) -> str:
    answer = await sample(args.get("prompt", "?"), max_tokens=100)
    return f"LLM response: {answer.text}"


async def input_required_sampling(args: Any, ctx: Any) -> str:
    answer = await sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"The model says: {answer.text}"


async def input_required_capabilities(args: Any, ctx: Any) -> str:
    # Ask only what the client can answer: its name if it takes questions, then its model.
    try:
        name = await elicit("What is your name?", _NAME, key="user_name")
    except ElicitationUnavailableError:
        name = None
    greeting = await sample("Generate a greeting", max_tokens=50, key="greeting")
    return f"{greeting.text} ({name.action if name else 'no name asked'})"


async def missing_capability(args: Any, ctx: Any) -> str:
    # Needs the client's model: a client that did not declare sampling gets -32021.
    answer = await sample("Say something", max_tokens=20)
    return f"LLM response: {answer.text}"


_QUESTIONS: dict[str, tuple[dict[str, Any], Callable[[Any, Any], Awaitable[Any]]]] = {
    "test_elicitation": (
        {"message": {"type": "string", "required": True}},
        elicitation,
    ),
    "test_elicitation_sep1034_defaults": ({}, elicitation_defaults),
    "test_elicitation_sep1330_enums": ({}, elicitation_enums),
    "test_input_required_result_elicitation": ({}, input_required_elicitation),
    "test_input_required_result_request_state": ({}, input_required_request_state),
    "test_input_required_result_tampered_state": ({}, input_required_request_state),
    "test_input_required_result_multi_round": ({}, input_required_multi_round),
    "test_sampling": ({"prompt": {"type": "string", "required": True}}, sampling),
    "test_input_required_result_sampling": ({}, input_required_sampling),
    "test_input_required_result_capabilities": ({}, input_required_capabilities),
    "test_missing_capability": ({}, missing_capability),
}


_BODIES: dict[str, Callable[[Any, Any], Awaitable[Any]]] = {
    "test_simple_text": simple_text,
    "test_image_content": image_content,
    "test_audio_content": audio_content,
    "test_embedded_resource": embedded_resource,
    "test_multiple_content_types": multiple_content_types,
    "test_tool_with_logging": with_logging,
    "test_tool_with_progress": with_progress,
    "test_error_handling": error_handling,
}


def make() -> ToolRegistry:
    """A fresh registry with every tool of :data:`mcp_conformance_data.TOOLS`, then the
    tools that ask the user and ``test_trigger_tool_change``."""
    made = ToolRegistry()
    for name, description, schema in data.TOOLS:
        if name == data.SCHEMA_TOOL:
            made.register(ToolDefinition(name, description, schema, json_schema_2020_12))
        else:
            made.register(
                define_tool(
                    name=name, description=description, parameters={}, execute=_BODIES[name]
                )
            )
    _register_questions(made)
    made.register(
        define_tool(
            name="test_reconnection",
            description="Close the call's SSE stream mid-call; the result follows on resumption.",
            parameters={},
            execute=reconnection,
        )
    )
    return made


async def reconnection(args: Any, ctx: Any) -> str:
    """``server-sse-polling`` (SEP-1699): the body lets the client's POST stream go; the
    client reconnects with ``Last-Event-ID`` and gets this result from the event store."""
    closed = await close_sse_stream()
    return data.RECONNECTED if closed else data.NOT_CLOSED


def _register_questions(made: ToolRegistry) -> None:
    """The tools that ask the user, and one that changes the tool list."""
    for name, (parameters, body) in _QUESTIONS.items():
        made.register(
            define_tool(name=name, description=f"Asks: {name}", parameters=parameters, execute=body)
        )

    async def dynamic(args: Any, ctx: Any) -> str:
        return "dynamic"

    added: list[Disposer] = []

    async def trigger_tool_change(args: Any, ctx: Any) -> str:
        if added:
            added.pop()()
            return "removed test_dynamic_tool"
        added.append(
            made.register(
                define_tool(
                    name="test_dynamic_tool", description="d", parameters={}, execute=dynamic
                )
            )
        )
        return "added test_dynamic_tool"

    made.register(
        define_tool(
            name="test_trigger_tool_change",
            description="Adds or removes test_dynamic_tool.",
            parameters={},
            execute=trigger_tool_change,
        )
    )


registry = make()
"""The registry ``scripts/mcp-conformance`` serves."""
