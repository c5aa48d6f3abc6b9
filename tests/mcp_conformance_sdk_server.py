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
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp_conformance_data as data


def make_server() -> Server[Any, Any]:
    """The SDK server with the conformance tools."""
    server: Server[Any, Any] = Server("sdk-conformance-reference")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name=name, description=description, inputSchema=schema)
            for name, description, schema in data.TOOLS
        ]

    @server.set_logging_level()
    async def set_level(level: types.LoggingLevel) -> None:
        return None

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        context = server.request_context
        if name == "test_simple_text":
            return [types.TextContent(type="text", text=data.SIMPLE_TEXT)]
        if name == "test_image_content":
            return [types.ImageContent(type="image", data=data.PNG, mimeType="image/png")]
        if name == "test_audio_content":
            return [types.AudioContent(type="audio", data=data.WAV, mimeType="audio/wav")]
        if name == "test_embedded_resource":
            return [_resource(data.EMBEDDED)]
        if name == "test_multiple_content_types":
            return [
                types.TextContent(type="text", text=data.MIXED_TEXT),
                types.ImageContent(type="image", data=data.PNG, mimeType="image/png"),
                _resource(data.MIXED_RESOURCE),
            ]
        if name == "test_tool_with_logging":
            for index, message in enumerate(data.LOG_MESSAGES):
                if index:
                    await trio.sleep(data.STEP_S)
                await context.session.send_log_message(
                    "info", message, related_request_id=context.request_id
                )
            return [types.TextContent(type="text", text=data.LOGGING_DONE)]
        if name == "test_tool_with_progress":
            token = context.meta.progressToken if context.meta is not None else None
            for index, progress in enumerate(data.PROGRESS_STEPS):
                if index:
                    await trio.sleep(data.STEP_S)
                if token is not None:
                    await context.session.send_progress_notification(
                        token, progress, total=100, related_request_id=str(context.request_id)
                    )
            return [types.TextContent(type="text", text=data.PROGRESS_DONE)]
        if name == "test_error_handling":
            raise RuntimeError(data.ERROR_TEXT)
        if name == data.SCHEMA_TOOL:
            return [types.TextContent(type="text", text=f"hello {arguments.get('name')}")]
        raise ValueError(f"unknown tool {name!r}")

    return server


def _resource(resource: dict[str, str]) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri=resource["uri"], mimeType=resource["mimeType"], text=resource["text"]
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
