"""The conformance tools served by the MCP SDK alone: the harness's own baseline.

``python tests/mcp_conformance_sdk_server.py PORT`` serves, over streamable HTTP at
``http://127.0.0.1:PORT/mcp`` (hypercorn on trio), the tools the conformance
scenarios call, written against the SDK's low-level server with no toolnursery in
between. ``scripts/mcp-conformance --server-command "python
tests/mcp_conformance_sdk_server.py {port}"`` runs the suite against it: when a
scenario fails against ``toolnursery serve`` but passes here, the difference is
toolnursery's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp_conformance_data as data


def make_server() -> Server[Any]:
    """The SDK server with the conformance tools."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema)
                for name, description, schema in data.TOOLS
            ]
        )

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        content = await _content(ctx, params.name, params.arguments or {})
        if content is None:  # SDK 2: a raising handler is a JSON-RPC error, not isError
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=data.ERROR_TEXT)], is_error=True
            )
        return types.CallToolResult(content=content)

    server: Server[Any] = Server(
        "sdk-conformance-reference", on_list_tools=list_tools, on_call_tool=call_tool
    )
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


async def _content(
    ctx: ServerRequestContext[Any], name: str, arguments: dict[str, Any]
) -> list[Any] | None:
    if name == "test_simple_text":
        return [types.TextContent(type="text", text=data.SIMPLE_TEXT)]
    if name == "test_image_content":
        return [types.ImageContent(type="image", data=data.PNG, mime_type="image/png")]
    if name == "test_audio_content":
        return [types.AudioContent(type="audio", data=data.WAV, mime_type="audio/wav")]
    if name == "test_embedded_resource":
        return [_resource(data.EMBEDDED)]
    if name == "test_multiple_content_types":
        return [
            types.TextContent(type="text", text=data.MIXED_TEXT),
            types.ImageContent(type="image", data=data.PNG, mime_type="image/png"),
            _resource(data.MIXED_RESOURCE),
        ]
    if name == "test_tool_with_logging":
        for index, message in enumerate(data.LOG_MESSAGES):
            if index:
                await trio.sleep(data.STEP_S)
            await ctx.session.send_notification(
                types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(level="info", data=message)
                ),
                related_request_id=ctx.request_id,
            )
        return [types.TextContent(type="text", text=data.LOGGING_DONE)]
    if name == "test_tool_with_progress":
        for index, progress in enumerate(data.PROGRESS_STEPS):
            if index:
                await trio.sleep(data.STEP_S)
            await ctx.session.report_progress(progress, total=100)
        return [types.TextContent(type="text", text=data.PROGRESS_DONE)]
    if name == "test_error_handling":
        return None
    if name == data.SCHEMA_TOOL:
        return [types.TextContent(type="text", text=f"hello {arguments.get('name')}")]
    raise ValueError(f"unknown tool {name!r}")


def _resource(resource: dict[str, str]) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri=resource["uri"], mime_type=resource["mimeType"], text=resource["text"]
        ),
    )


async def main(port: int) -> None:
    """Serve at ``http://127.0.0.1:PORT/mcp`` until interrupted."""
    loopback = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    security = TransportSecuritySettings(
        allowed_hosts=loopback, allowed_origins=[f"http://{host}" for host in loopback]
    )
    manager = StreamableHTTPSessionManager(app=make_server(), security_settings=security)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["path"].rstrip("/") == "/mcp":
            await manager.handle_request(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"not found"})

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    async with manager.run():
        await serve(app, config)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
