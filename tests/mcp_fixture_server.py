"""A small MCP server written with the official SDK (2.x low-level ``Server``), for the mount tests.

Run as ``python mcp_fixture_server.py MODE``:

- ``stdio`` (default): serve over stdio, answering both revisions (``initialize`` and
  ``server/discover``).
- ``modern``: as ``stdio``, but refuse the ``initialize`` handshake: a 2026-07-28-only
  server.
- ``legacy``: as ``stdio``, but answer ``server/discover`` with "method not found": a
  server from before 2026-07-28.
- ``http``: serve streamable HTTP on 127.0.0.1 at ``/mcp`` (hypercorn on trio) on a
  free port and print the URL as the first line of stdout.
- ``garbage``: answer every line on stdin with text that is not JSON-RPC.
- ``hang``: read stdin and never answer.
- ``dupe``: list the same tool twice.
- ``badschema``: also list a tool whose ``inputSchema`` is not valid JSON Schema.

It is also importable: :func:`build` returns the server for the in-process form, and
:data:`CALLS` counts the ``tools/call`` requests an in-process server received.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import trio
from mcp.server import Server, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
_N_OUT: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}

CALLS: Counter[str] = Counter()
"""``tools/call`` requests received by in-process servers, by tool name."""


def _tools(mode: str, grown: bool) -> list[types.Tool]:
    ro = types.ToolAnnotations(read_only_hint=True)
    tools = [
        types.Tool(
            name="echo",
            description="Echo the text.",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
            annotations=ro,
        ),
        types.Tool(
            name="meet",
            description="Wait until n calls of meet are in flight at once.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            annotations=ro,
        ),
        types.Tool(name="block", description="Run until cancelled.", input_schema=_OBJECT),
        types.Tool(
            name="cleaned",
            description="Wait until a cancelled block has cleaned up.",
            input_schema=_OBJECT,
        ),
        types.Tool(name="crash", description="Exit the server process.", input_schema=_OBJECT),
        types.Tool(name="grow", description="Add the tool extra.", input_schema=_OBJECT),
        types.Tool(name="kinds", description="Every content kind.", input_schema=_OBJECT),
        types.Tool(
            name="struct",
            description="A structured result.",
            input_schema={"type": "object", "properties": {"n": {}}},
            output_schema=_N_OUT,
        ),
        types.Tool(name="fail", description="Report an error.", input_schema=_OBJECT),
        types.Tool(name="raise", description="Raise in the handler.", input_schema=_OBJECT),
        types.Tool(name="progress", description="Report progress.", input_schema=_OBJECT),
        types.Tool(name="ask", description="Elicit a yes/no from the user.", input_schema=_OBJECT),
        types.Tool(name="consent", description="Ask for consent only.", input_schema=_OBJECT),
        types.Tool(name="sample", description="Ask the client's model.", input_schema=_OBJECT),
        types.Tool(name="args", description="Echo the arguments.", input_schema=_OBJECT),
        types.Tool(
            name="destroy",
            title="Destroyer",
            description="Destroy things.",
            input_schema=_OBJECT,
            annotations=types.ToolAnnotations(destructive_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="idem",
            description="Idempotent.",
            input_schema=_OBJECT,
            annotations=types.ToolAnnotations(idempotent_hint=True, read_only_hint=False),
        ),
    ]
    if grown:
        tools[-1] = tools[-1].model_copy(update={"description": "Idempotent, grown."})
        tools.append(types.Tool(name="extra", description="Added later.", input_schema=_OBJECT))
    if mode == "dupe":
        tools.append(tools[0])
    if mode == "badschema":
        tools.insert(
            1,
            types.Tool(
                name="broken",
                description="An inputSchema that is not JSON Schema.",
                input_schema={"type": "object", "properties": {"n": {"minimum": "zero"}}},
            ),
        )
    return tools


@asynccontextmanager
async def process_printing_url(argv: list[str]) -> AsyncIterator[tuple[str, trio.Process]]:
    """Run ``argv`` (a server that prints its URL as its first line); yield the URL.

    The process is killed when the block ends.
    """
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(trio.run_process, argv, stdout=subprocess.PIPE, check=False)
        )
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(1)
            assert chunk, f"{argv} exited before printing its URL"
            line += chunk
        try:
            yield line.decode().strip(), process
        finally:
            process.kill()


def _text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def _log(ctx: ServerRequestContext[Any], text: str) -> None:
    # Sent as a plain notification on the request's stream: the fixture logs to any
    # client, whatever level it asked for (the tests synchronise on these lines).
    await ctx.session.send_notification(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data=text, logger="fixture")
        ),
        related_request_id=ctx.request_id,
    )


def build(mode: str = "stdio") -> Server[Any]:
    """The fixture server."""
    state: dict[str, Any] = {
        "grown": False,
        "meeting": 0,
        "met": trio.Event(),
        "cleaned": trio.Event(),
    }

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools(mode, state["grown"]))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        arguments = params.arguments or {}
        CALLS[name] += 1
        session = ctx.session
        if name == "echo":
            return _text(arguments["text"])
        if name == "args":
            return _text(json.dumps(arguments))
        if name == "meet":
            start = time.monotonic()
            state["meeting"] += 1
            if state["meeting"] >= arguments.get("n", 2):
                state["met"].set()
            with trio.fail_after(20):
                await state["met"].wait()
            return _text(json.dumps([start, time.monotonic()]))
        if name == "block":
            await _log(ctx, "block started")
            try:
                await trio.sleep_forever()
            finally:
                state["cleaned"].set()
                with trio.CancelScope(shield=True):
                    await _log(ctx, "block cleanup")
        if name == "cleaned":
            with trio.fail_after(20):
                await state["cleaned"].wait()
            state["cleaned"] = trio.Event()
            return _text("cleaned")
        if name == "crash":
            os._exit(3)
        if name == "grow":
            state["grown"] = True
            if ctx.protocol_version == "2026-07-28":
                await bus.publish(ToolsListChanged())  # to subscriptions/listen streams
            else:
                await session.send_tool_list_changed()
            return _text("grown")
        if name == "kinds":
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text", text="hello", annotations=types.Annotations(priority=0.5)
                    ),
                    types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                    types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
                    types.ResourceLink(
                        type="resource_link",
                        uri="file:///notes.txt",
                        name="notes",
                        mime_type="text/plain",
                    ),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="file:///a.txt", text="alpha", mime_type="text/plain"
                        ),
                    ),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.BlobResourceContents(
                            uri="file:///b.bin", blob="AAEC", mime_type="application/octet-stream"
                        ),
                    ),
                ]
            )
        if name == "struct":
            n = arguments.get("n", 1)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(n))],
                structured_content={"n": n},
            )
        if name == "fail":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it broke")], is_error=True
            )
        if name == "raise":
            raise RuntimeError("the handler raised")
        if name == "progress":
            for step in (1, 2, 3):
                await session.report_progress(step, total=3, message=f"step {step}")
            return _text("done")
        if name == "ask":
            return await _ask(ctx, params, _QUESTION)
        if name == "consent":
            return await _ask(ctx, params, _CONSENT)
        if name == "sample":
            return await _sample(ctx, params)
        return _text(name)

    bus = InMemorySubscriptionBus()
    server: Server[Any] = Server(
        "fixture",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )
    if mode == "modern":
        server.middleware.append(_refuse("initialize", types.UNSUPPORTED_PROTOCOL_VERSION))
    return server


_QUESTION: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


_CONSENT: types.ElicitRequestedSchema = {"type": "object", "properties": {}}


async def _ask(
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    question: types.ElicitRequestedSchema,
) -> types.CallToolResult | types.InputRequiredResult:
    """Elicit: pushed on a handshake-era session, input-required on a 2026 one."""
    if ctx.protocol_version == "2026-07-28":
        answer = (params.input_responses or {}).get("q")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={
                    "q": types.ElicitRequest(
                        params=types.ElicitRequestFormParams(
                            message="Proceed?", requested_schema=question
                        )
                    )
                }
            )
        assert isinstance(answer, types.ElicitResult)
        result = answer
    else:
        try:
            result = await ctx.session.elicit_form(
                "Proceed?", question, related_request_id=ctx.request_id
            )
        except MCPError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"elicitation failed: {exc}")],
                is_error=True,
            )
    return _text(f"{result.action} {json.dumps(result.content)}")


async def _sample(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    request = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
        ],
        max_tokens=10,
    )
    if ctx.protocol_version == "2026-07-28":
        answer = (params.input_responses or {}).get("s")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={"s": types.CreateMessageRequest(params=request)}
            )
    else:
        try:
            answer = await ctx.session.send_request(
                types.CreateMessageRequest(params=request), types.CreateMessageResult
            )
        except MCPError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"sampling failed: {exc}")],
                is_error=True,
            )
    assert isinstance(answer, types.CreateMessageResult)
    content = answer.content
    return _text(content.text if isinstance(content, types.TextContent) else "?")


def _refuse(method: str, code: int) -> Any:
    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.method == method:
            data = (
                {"supported": ["2026-07-28"]}
                if code == types.UNSUPPORTED_PROTOCOL_VERSION
                else None
            )
            raise MCPError(code=code, message=f"{method} is not supported here", data=data)
        return await call_next(ctx)

    return middleware


async def _stdio(mode: str) -> None:
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    server = build(mode)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        if mode != "legacy":
            await server.run(read, write, options)
            return
        # A server from before 2026-07-28 has never heard of server/discover; the
        # SDK's server answers it, so the fixture answers it first.
        inbox, filtered = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def refuse_discover() -> None:
            async with inbox:
                async for item in read:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if (
                        isinstance(message, types.JSONRPCRequest)
                        and message.method == "server/discover"
                    ):
                        error = types.JSONRPCError(
                            jsonrpc="2.0",
                            id=message.id,
                            error=types.ErrorData(
                                code=types.METHOD_NOT_FOUND, message="Method not found"
                            ),
                        )
                        await write.send(SessionMessage(error))
                        continue
                    await inbox.send(item)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(refuse_discover)
            await server.run(filtered, write, options)


async def _http() -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=build("http"))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await manager.handle_request(scope, receive, send)

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.loglevel = "WARNING"
    async with manager.run(), trio.open_nursery() as nursery:
        urls = await nursery.start(serve, app, config)
        print(urls[0] + "/mcp", flush=True)


async def _garbage() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    async for _line in stdin:
        print("this is not json-rpc", flush=True)


async def _hang() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    async for _line in stdin:
        pass


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        trio.run(_http)
    elif mode == "garbage":
        trio.run(_garbage)
    elif mode == "hang":
        trio.run(_hang)
    else:
        trio.run(_stdio, mode)


if __name__ == "__main__":
    main()
