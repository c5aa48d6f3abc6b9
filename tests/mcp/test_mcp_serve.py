"""Serving a registry over MCP, driven by the official SDK's client: in-process,
``toolnursery serve`` over stdio in a subprocess, and ``serve --http`` on 127.0.0.1,
at both revisions (2025-11-25 with its handshake, 2026-07-28 stateless).

Every wait is bounded by ``trio.fail_after``; nothing sleeps to synchronise.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
import trio

pytest.importorskip("mcp")

import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.connection import Connection
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

import mcp_serve_tools
from toolnursery import Allow, Ask, Depends, ToolExecutionInput, ToolRegistry, define_tool, tool
from toolnursery._mcp._asking import APPROVAL_KEY
from toolnursery.mcp import ERROR_META_KEY, RemoteServeError, mcp_server, serve_mcp_http

pytestmark = [
    # The SDK's HTTP client (httpx2 under trio) leaves async generators to the GC.
    pytest.mark.filterwarnings("ignore:Async generator 'http:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOOLS = str(Path(__file__).parents[1] / "mcp_serve_tools.py") + ":make"
LIMIT = 30
LEGACY = "legacy"
MODERN = "2026-07-28"
BOTH = pytest.mark.parametrize("mode", [LEGACY, MODERN])


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def error_code(result: types.CallToolResult) -> str | None:
    assert result.meta is not None
    return str(result.meta[ERROR_META_KEY]["code"])


def stdio_params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnursery", "serve", "--tools", TOOLS, *extra],
        env=dict(os.environ),  # the SDK passes only a few variables by default
    )


@asynccontextmanager
async def process_printing_url(
    argv: list[str], env: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, trio.Process]]:
    """Run ``argv`` (a server printing its URL as its first line); yield the URL.

    The process is killed when the block ends; its stderr goes to a pipe the caller
    may read (``process.stderr``).
    """
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                check=False,
                env=env,
            )
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


@asynccontextmanager
async def serve_process_http(*extra: str) -> AsyncIterator[tuple[str, trio.Process]]:
    """``toolnursery serve --http 127.0.0.1:0`` in a subprocess; yields its URL."""
    argv = [sys.executable, "-m", "toolnursery", "serve", "--tools", TOOLS, "--http"]
    async with process_printing_url([*argv, "127.0.0.1:0", *extra]) as served:
        yield served


async def check_listing_and_calls(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools)[:3] == ["echo", "slow", "sleepy"]
    echo = tools["echo"]
    assert echo.title == "Echo"
    assert echo.annotations == types.ToolAnnotations(
        title="Echo", read_only_hint=True, open_world_hint=False
    )
    assert echo.input_schema["properties"] == {"text": {"type": "string"}}
    assert tools["count"].output_schema == {
        "type": "object",
        "properties": {"n": {"type": "number"}},
        "required": ["n"],
    }
    result = await client.call_tool("echo", {"text": "hi"})
    assert (first_text(result), result.is_error) == ("hi", False)
    counted = await client.call_tool("count", {"n": 4})
    assert counted.structured_content == {"n": 4}
    timed_out = await client.call_tool("sleepy", {})
    assert timed_out.is_error
    assert error_code(timed_out) == "TOOL_TIMEOUT"
    invalid = await client.call_tool("echo", {"text": 3})
    assert invalid.is_error
    assert error_code(invalid) == "INVALID_ARGS"
    unknown = await client.call_tool("nope", {})
    assert unknown.is_error
    assert (first_text(unknown), error_code(unknown)) == (
        'Error: unknown tool "nope"',
        "UNKNOWN_TOOL",
    )
    kinds = await client.call_tool("kinds", {})
    assert [b.type for b in kinds.content] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
    ]
    audio = kinds.content[2]
    assert isinstance(audio, types.AudioContent)
    assert audio.mime_type == "audio/wav"


async def check_failures_carry_their_code(client: Client) -> None:
    denied = await client.call_tool("forbidden", {})
    assert denied.is_error
    assert "not allowed" in first_text(denied)
    assert denied.meta is not None
    assert denied.meta[ERROR_META_KEY] == {"name": "ToolError", "code": "TOOL_ERROR"}
    raised = await client.call_tool("boom", {})
    assert raised.is_error
    assert "the body failed" in first_text(raised)
    assert error_code(raised) == "TOOL_ERROR"


async def check_progress_and_logs(client: Client, tool: str = "progress") -> list[Any]:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    result = await client.call_tool(tool, {}, progress_callback=on_progress)
    assert not result.is_error, first_text(result)
    return progress


def log_collector() -> tuple[list[Any], Any]:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    return logs, on_log


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    # logging/setLevel is 2025-11-25's (2026-07-28 deprecates it): still served.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)


@BOTH
async def test_in_process_listing_calls_and_errors(mode: str) -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == LEGACY else MODERN)
            await check_listing_and_calls(client)
            await check_failures_carry_their_code(client)


async def test_server_info_carries_title_and_description() -> None:
    server = mcp_server(ToolRegistry(), name="n", title="The Tools", description="What it does")
    with trio.fail_after(LIMIT):
        async with Client(server, mode=LEGACY) as client:
            info = client.server_info
    assert info is not None
    assert (info.name, info.title, info.description) == ("n", "The Tools", "What it does")


class Db:
    """A host object no client can supply."""

    def __init__(self) -> None:
        self.rows = {"ada": "Ada Lovelace"}


def lookup_registry() -> ToolRegistry:
    @tool
    async def lookup(key: str, db: Annotated[Db, Depends("db")]) -> str:
        """Look a key up in the host's database."""
        return db.rows.get(key, "nobody")

    registry = ToolRegistry()
    registry.register(lookup)
    return registry


@BOTH
async def test_a_served_tool_gets_the_hosts_deps_and_lists_no_dependency(mode: str) -> None:
    deps = {"db": Db()}
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(lookup_registry(), deps=deps), mode=mode) as client:
            [listed] = (await client.list_tools()).tools
            found = await client.call_tool("lookup", {"key": "ada"})
            smuggled = await client.call_tool("lookup", {"key": "ada", "db": "mine"})
        async with Client(mcp_server(lookup_registry()), mode=mode) as client:
            without = await client.call_tool("lookup", {"key": "ada"})
    assert set(listed.input_schema["properties"]) == {"key"}
    assert first_text(found) == "Ada Lovelace"
    assert smuggled.is_error  # a client's "db" never reaches the body: the call is refused
    assert first_text(smuggled) == (
        'Error: invalid arguments: argument "db" is supplied by the host, not the model'
    )
    assert without.is_error
    assert error_code(without) == "MISSING_DEPENDENCY"


async def test_serve_mcp_http_passes_deps_to_every_call() -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                functools.partial(serve_mcp_http, lookup_registry(), deps={"db": Db()}),
                "127.0.0.1",
                0,
            )
            async with Client(url, mode=MODERN) as client:
                result = await client.call_tool("lookup", {"key": "ada"})
            nursery.cancel_scope.cancel()
    assert first_text(result) == "Ada Lovelace"


@BOTH
async def test_a_plain_def_tool_reports_progress_and_logs_while_served(mode: str) -> None:
    # Its reports come from a worker thread; the server's loop must survive them.
    logs, on_log = log_collector()
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(registry), mode=mode, logging_callback=on_log, log_level="info"
        ) as client:
            progress = await check_progress_and_logs(client, "threaded")
            again = await client.call_tool("echo", {"text": "still here"})
    assert progress == [(1, 2, "half"), (2, 2, "all")]
    assert logs == [("warning", "from the thread")]
    assert first_text(again) == "still here"


@BOTH
async def test_a_progress_message_that_is_not_text_is_refused_in_the_body(mode: str) -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=mode) as client:
            note = await client.call_tool("badnote", {"message": 7})
            huge = await client.call_tool("huge", {})
    assert first_text(note) == "refused: report_progress(): message must be a str, got 7"
    assert first_text(huge).startswith("refused: report_progress(): progress must be a finite")


async def test_serve_over_stdio_in_a_subprocess() -> None:
    logs, on_log = log_collector()
    with trio.fail_after(LIMIT):
        async with Client(stdio_params(), mode=LEGACY, logging_callback=on_log) as client:
            await check_listing_and_calls(client)
            await set_level(client, "info")
            progress = await check_progress_and_logs(client)
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # the debug line is below the level the client set
    assert logs == [("warning", "careful")]


async def test_serve_over_stdio_at_2026_07_28() -> None:
    logs, on_log = log_collector()
    with trio.fail_after(LIMIT):
        async with Client(
            stdio_params(), mode="auto", logging_callback=on_log, log_level="info"
        ) as client:
            assert client.protocol_version == MODERN
            await check_listing_and_calls(client)
            progress = await check_progress_and_logs(client)
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == [("warning", "careful")]


@BOTH
async def test_serve_over_streamable_http_in_a_subprocess(mode: str) -> None:
    logs, on_log = log_collector()
    with trio.fail_after(LIMIT):
        async with (
            serve_process_http() as (url, _),
            Client(url, mode=mode, logging_callback=on_log, log_level="info") as client,
        ):
            assert url.endswith("/mcp")
            assert client.protocol_version == ("2025-11-25" if mode == LEGACY else MODERN)
            await check_listing_and_calls(client)
            if mode == LEGACY:
                await set_level(client, "info")
            progress = await check_progress_and_logs(client)
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == [("warning", "careful")]


async def test_serve_http_prints_no_traceback_when_a_client_goes_away() -> None:
    with trio.fail_after(LIMIT):
        async with serve_process_http() as (url, process):
            for _ in range(3):
                running = trio.Event()

                async def started(
                    value: float,
                    total: float | None,
                    message: str | None,
                    running: trio.Event = running,
                ) -> None:
                    running.set()

                async with trio.open_nursery() as nursery:

                    async def call(client: Client) -> None:
                        await client.call_tool("slow", {}, progress_callback=started)

                    async with Client(url, mode=LEGACY) as client:
                        nursery.start_soon(call, client)
                        await running.wait()  # the call is in flight on the server
                        nursery.cancel_scope.cancel()
            async with Client(url, mode=LEGACY) as client:
                assert first_text(await client.call_tool("echo", {"text": "ok"})) == "ok"
            process.kill()
            assert process.stderr is not None
            errors = b""
            while chunk := await process.stderr.receive_some():
                errors += chunk
    assert b"Traceback" not in errors, errors.decode()


async def test_a_2026_stateless_http_request_needs_no_session() -> None:
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with httpx2.AsyncClient() as http:
                response = await http.post(
                    url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "server/discover",
                        "params": {
                            "_meta": {
                                "io.modelcontextprotocol/protocolVersion": MODERN,
                                "io.modelcontextprotocol/clientCapabilities": {},
                            }
                        },
                    },
                    headers={
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": MODERN,
                        "Mcp-Method": "server/discover",
                    },
                )
            nursery.cancel_scope.cancel()
    assert response.status_code == 200, response.text
    assert MODERN in response.text
    assert "Missing session ID" not in response.text


async def test_serve_mcp_http_in_process_and_a_wrong_path_is_404() -> None:
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with Client(url, mode=LEGACY) as client:
                result = await client.call_tool("echo", {"text": "here"})
                assert first_text(result) == "here"
            async with httpx2.AsyncClient() as http:
                response = await http.get(url.removesuffix("/mcp") + "/other")
            assert response.status_code == 404
            nursery.cancel_scope.cancel()


async def test_serve_beyond_loopback_needs_the_opt_in_and_a_token() -> None:
    registry = ToolRegistry()
    for options in ({}, {"allow_remote": True}, {"token": "t"}):
        with pytest.raises(RemoteServeError, match=r"refusing to serve MCP on '0\.0\.0\.0'"):
            await serve_mcp_http(registry, "0.0.0.0", 0, **options)  # type: ignore[arg-type]


def test_the_command_refuses_a_remote_bind_in_one_line() -> None:
    argv = [sys.executable, "-m", "toolnursery", "serve", "--tools", TOOLS]
    done = subprocess.run(
        [*argv, "--http", "0.0.0.0:0"], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "refusing to serve MCP on '0.0.0.0'" in done.stderr
    assert "--allow-remote" in done.stderr


async def test_a_remote_bind_with_a_token_answers_401_without_it(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    argv = [sys.executable, "-m", "toolnursery", "serve", "--tools", TOOLS, "--http"]
    argv += ["0.0.0.0:0", "--allow-remote", "--token-file", str(token)]
    with trio.fail_after(LIMIT):
        async with process_printing_url(argv) as (url, _):
            local = url.replace("0.0.0.0", "127.0.0.1")
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            async with httpx2.AsyncClient() as http:
                refused = await http.post(local, json=body)
                wrong = await http.post(local, json=body, headers={"Authorization": "Bearer nope"})
                allowed = await http.post(
                    local,
                    json=body,
                    headers={
                        "Authorization": "Bearer s3cret",
                        "Accept": "application/json, text/event-stream",
                    },
                )
    assert (refused.status_code, wrong.status_code) == (401, 401)
    assert allowed.status_code != 401
    assert refused.headers["www-authenticate"].startswith("Bearer")


async def test_the_token_lets_the_client_in() -> None:
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                functools.partial(serve_mcp_http, registry, "127.0.0.1", 0, token="s3cret")
            )
            headers = {"Authorization": "Bearer s3cret"}
            async with httpx2.AsyncClient(headers=headers) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode=LEGACY) as client:
                    result = await client.call_tool("echo", {"text": "in"})
            async with httpx2.AsyncClient() as http:
                refused = await http.post(url, json={})
            nursery.cancel_scope.cancel()
    assert first_text(result) == "in"
    assert refused.status_code == 401


async def test_mcp_cancellation_reaches_the_body_through_the_calls_signal() -> None:
    registry = mcp_serve_tools.make()
    state = registry.state  # type: ignore[attr-defined]
    outcomes: list[Any] = []
    registry.on_result(lambda execution, result: outcomes.append(result))
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=LEGACY) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "slow", {})
                await state.slow_started.wait()
                nursery.cancel_scope.cancel()
            await state.slow_cancelled.wait()
            again = await client.call_tool("echo", {"text": "after"})
    assert first_text(again) == "after"
    assert outcomes[0].error.code == "ABORTED"


@BOTH
async def test_a_cancelled_call_that_reports_ends_cleanly(mode: str) -> None:
    registry = mcp_serve_tools.make()
    outcomes: list[Any] = []
    registry.on_result(lambda execution, result: outcomes.append(result))
    heard = trio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        heard.set()

    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=mode) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(client.call_tool, progress_callback=on_progress),
                    "chatty_slow",
                    {},
                )
                await heard.wait()
                nursery.cancel_scope.cancel()
            again = await client.call_tool("echo", {"text": "after"})
    assert first_text(again) == "after"
    assert [r.error.code for r in outcomes if r.error is not None] == ["ABORTED"]


async def hundred_limited_calls(client: Client) -> list[types.CallToolResult]:
    """100 concurrent calls of the tool limited to 3 bodies at once."""
    results: list[types.CallToolResult] = []

    async def call() -> None:
        results.append(await client.call_tool("limited", {}))

    async with trio.open_nursery() as nursery:
        for _ in range(100):
            nursery.start_soon(call)
    assert len(results) == 100
    return results


@BOTH
async def test_a_hundred_concurrent_calls_honour_the_per_tool_limit(mode: str) -> None:
    registry = mcp_serve_tools.make()
    state = registry.state  # type: ignore[attr-defined]
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=mode) as client:
            results = await hundred_limited_calls(client)
    assert not any(r.is_error for r in results)
    assert state.most == 3  # they did overlap, and never past the limit


async def test_a_hundred_concurrent_calls_over_stdio() -> None:
    with trio.fail_after(LIMIT * 2):
        async with Client(stdio_params(), mode=LEGACY) as client:
            results = await hundred_limited_calls(client)
    assert max(int(first_text(r)) for r in results) == 3


def new_tool(name: str) -> Any:
    async def body(args: Any, ctx: Any) -> str:
        return "new"

    return define_tool(name=name, description="d", parameters={}, execute=body)


async def test_the_client_hears_when_the_registry_changes() -> None:
    registry = ToolRegistry()
    changed = trio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=LEGACY, message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed
            assert (await client.list_tools()).tools == []
            registry.register(new_tool("new"))
            await changed.wait()
            assert [t.name for t in (await client.list_tools()).tools] == ["new"]


async def test_a_2026_client_hears_of_changes_on_its_listen_stream() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=MODERN) as client:
            async with client.listen(tools_list_changed=True) as events:
                registry.register(new_tool("new"))
                async for event in events:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
            assert [t.name for t in (await client.list_tools()).tools] == ["new"]


def live_connections() -> int:
    gc.collect()
    return sum(isinstance(thing, Connection) for thing in gc.get_objects())


@BOTH
async def test_departed_clients_leave_nothing_behind(mode: str) -> None:
    registry = mcp_serve_tools.make()
    listeners = len(registry._change)
    for _ in range(3):
        mcp_server(registry)  # a server that never runs holds nothing
    assert len(registry._change) == listeners
    server = mcp_server(registry)
    with trio.fail_after(LIMIT):
        for cycle in range(5):
            async with Client(server, mode=mode) as client:
                await client.call_tool("echo", {"text": "x"})
            added = registry.register(new_tool(f"added{cycle}"))  # no inactive task group
            added()
    assert len(registry._change) == listeners


async def test_departed_http_sessions_are_dropped() -> None:
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with Client(url, mode=LEGACY) as client:
                await client.call_tool("echo", {"text": "x"})
            before = live_connections()
            for cycle in range(8):
                async with Client(url, mode=LEGACY) as client:  # ends with DELETE
                    await client.call_tool("echo", {"text": "x"})
                registry.register(new_tool(f"added{cycle}"))
            await trio.testing.wait_all_tasks_blocked()
            after = live_connections()
            nursery.cancel_scope.cancel()
    assert after <= before


@BOTH
async def test_idempotency_keys_are_unique_across_sessions_and_reconnects(mode: str) -> None:
    server = mcp_server(mcp_serve_tools.make())
    keys: list[str] = []
    with trio.fail_after(LIMIT):
        for _ in range(2):  # a reconnect
            async with Client(server, mode=mode) as first, Client(server, mode=mode) as second:
                for client in (first, second, first, second):
                    keys.append(first_text(await client.call_tool("key", {})))
    assert len(set(keys)) == len(keys) == 8


async def test_log_level_is_per_session() -> None:
    registry = mcp_serve_tools.make()
    server = mcp_server(registry)
    quiet_logs, on_quiet = log_collector()
    loud_logs, on_loud = log_collector()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with (
                Client(url, mode=LEGACY, logging_callback=on_quiet) as quiet,
                Client(url, mode=LEGACY, logging_callback=on_loud) as loud,
            ):
                await set_level(quiet, "error")
                await quiet.call_tool("progress", {})
                await loud.call_tool("progress", {})
            nursery.cancel_scope.cancel()
    del server
    assert quiet_logs == []
    assert loud_logs == [("warning", "careful"), ("debug", "chatter")]


def test_serve_shows_the_real_import_error(tmp_path: Path) -> None:
    # The SDK is installed, but something it needs fails to import: say what.
    shadow = tmp_path / "starlette"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('starlette is broken here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "toolnursery", "serve", "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        env=env,
    )
    assert done.returncode != 0
    assert "pip install" not in done.stderr
    assert "starlette is broken here" in done.stderr


def answering(action: str, content: dict[str, Any] | None) -> Any:
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    on_elicit.asked = asked  # type: ignore[attr-defined]
    return on_elicit


@BOTH
@pytest.mark.parametrize(
    ("action", "content", "expected"),
    [
        ("accept", {"approve": True}, "ran"),
        ("accept", {"approve": False}, 'Error: the user declined tool "ask_me"'),
        ("decline", None, 'Error: the user declined tool "ask_me"'),
    ],
)
async def test_an_ask_without_an_approval_service_asks_the_client(
    mode: str, action: str, content: dict[str, Any] | None, expected: str
) -> None:
    on_elicit = answering(action, content)
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()), mode=mode, elicitation_callback=on_elicit
        ) as client:
            result = await client.call_tool("ask_me", {})
    assert on_elicit.asked == ["May ask_me run?"]
    assert first_text(result) == expected
    assert result.is_error is (expected != "ran")


def asking_send() -> tuple[ToolRegistry, list[str], list[tuple[str, str]]]:
    """A registry whose ``send`` (``to``: a string) is asked about, with no approval
    service (so a served call asks its client); what it sent and what observers saw."""
    sent: list[str] = []

    @tool
    def send(to: str) -> str:
        """Send."""
        sent.append(to)
        return "sent to " + to

    registry = ToolRegistry()
    registry.register(send)

    async def ask(execution: Any, next: Any) -> Any:
        return Ask("May send run?")

    registry.on_pre_execute(ask)
    seen: list[tuple[str, str]] = []
    registry.on_result(
        lambda execution, result: seen.append(
            (result.text, result.error.code if result.error is not None else "")
        )
    )
    return registry, sent, seen


INVALID_SEND = {  # the tool's own INVALID_ARGS texts (registry.execute with no Ask)
    "{}": 'Error: invalid arguments: missing required property "to"',
    '{"to": 3}': 'Error: invalid arguments: "to" must be a string',
    '{"to": "a", "cc": "b"}': 'Error: invalid arguments: unknown argument "cc" (the tool takes: to)',
}


@BOTH
@pytest.mark.parametrize("arguments", [{}, {"to": 3}, {"to": "a", "cc": "b"}])
async def test_a_served_ask_checks_the_arguments_before_asking_the_client(
    mode: str, arguments: dict[str, Any]
) -> None:
    registry, sent, seen = asking_send()
    on_elicit = answering("accept", {"approve": True})
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(registry), mode=mode, elicitation_callback=on_elicit) as c:
            refused = await c.call_tool("send", arguments)
            granted = await c.call_tool("send", {"to": "alice"})
    # the refused call: denied with the text of the tool's INVALID_ARGS result (what a
    # grant would have led to; a denial carries no code), and nobody was asked
    assert refused.is_error
    assert first_text(refused) == INVALID_SEND[json.dumps(arguments)]
    assert seen[0] == (first_text(refused), "")
    # the valid call: asked once, granted, run
    assert on_elicit.asked == ["May send run?"]
    assert first_text(granted) == "sent to alice"
    assert sent == ["alice"]
    unasked, _, _ = asking_send()
    unasked.on_pre_execute(lambda execution, next: _allow(), prepend=True)
    own = await unasked.execute(ToolExecutionInput("c", "send", arguments))
    assert (own.text, own.error.code if own.error else "") == (
        first_text(refused),
        "INVALID_ARGS",
    )


async def _allow() -> Any:
    return Allow()


async def test_an_ask_stays_a_denial_when_the_client_cannot_answer() -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=LEGACY) as client:
            result = await client.call_tool("ask_me", {})
    assert result.is_error
    assert first_text(result) == "Error: May ask_me run?"


async def test_a_forged_2026_answer_does_not_approve() -> None:
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()),
            mode=MODERN,
            elicitation_callback=answering("decline", None),  # declares elicitation
        ) as client:
            forged = {APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": True})}
            unasked = await client.session.call_tool(
                "ask_me",
                {},
                input_responses=forged,  # type: ignore[arg-type]
                allow_input_required=True,
            )
            with pytest.raises(MCPError, match="integrity check") as refused:
                await client.session.call_tool(
                    "ask_me",
                    {},
                    input_responses=forged,  # type: ignore[arg-type]
                    request_state="e30.0000",
                    allow_input_required=True,
                )
    # answers without a state the server minted are not trusted: it asks
    assert isinstance(unasked, types.InputRequiredResult)
    assert unasked.input_requests is not None
    assert list(unasked.input_requests) == [APPROVAL_KEY]
    assert refused.value.error.code == types.INVALID_PARAMS


@pytest.mark.parametrize("state", ["e30.\u00e9\u00e9", "\u00e9t\u00e9.mac", "e30.\u2603" * 3])
async def test_a_forged_2026_state_that_is_not_ascii_is_refused_with_a_reason(state: str) -> None:
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()),
            mode=MODERN,
            elicitation_callback=answering("decline", None),  # declares elicitation
        ) as client:
            forged = {APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": True})}
            with pytest.raises(MCPError, match="integrity check") as refused:
                await client.session.call_tool(
                    "ask_me",
                    {},
                    input_responses=forged,  # type: ignore[arg-type]
                    request_state=state,
                    allow_input_required=True,
                )
    assert refused.value.error.code == types.INVALID_PARAMS


async def test_a_2026_answer_counts_only_for_its_own_call() -> None:
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()),
            mode=MODERN,
            elicitation_callback=answering("decline", None),  # declares elicitation
        ) as client:
            asked = await client.session.call_tool(
                "ask_me", {"text": "a"}, allow_input_required=True
            )
            assert isinstance(asked, types.InputRequiredResult)
            answer = {APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": True})}
            with pytest.raises(MCPError, match="another call"):
                await client.session.call_tool(
                    "ask_me",
                    {"text": "b"},
                    input_responses=answer,  # type: ignore[arg-type]
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
            ran = await client.session.call_tool(
                "ask_me",
                {"text": "a"},
                input_responses=answer,  # type: ignore[arg-type]
                request_state=asked.request_state,
            )
    assert first_text(ran) == "a"


@BOTH
async def test_a_body_asks_the_user(mode: str) -> None:
    on_elicit = answering("accept", {"name": "Ada", "color": "teal"})
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()), mode=mode, elicitation_callback=on_elicit
        ) as client:
            result = await client.call_tool("question", {})
            twice = await client.call_tool("two_questions", {})
    assert first_text(result) == "accept: Ada"
    assert first_text(twice) == "Ada likes teal"
    assert on_elicit.asked == ["What is your name?", "Name?", "Colour?"]


@BOTH
async def test_a_body_asks_the_user_through_its_context(mode: str) -> None:
    on_elicit = answering("accept", {"name": "Ada"})
    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()), mode=mode, elicitation_callback=on_elicit
        ) as client:
            through_ctx = await client.call_tool("ctx_question", {})
            module_level = await client.call_tool("question", {})
    assert first_text(through_ctx) == first_text(module_level) == "accept: Ada"
    assert on_elicit.asked == ["What is your name?", "What is your name?"]


async def test_a_body_that_cannot_ask_gets_a_clear_error() -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=LEGACY) as client:
            result = await client.call_tool("question", {})
    assert result.is_error
    assert error_code(result) == "ELICITATION_UNAVAILABLE"
    assert "did not declare elicitation" in first_text(result)


@pytest.mark.parametrize(
    ("tool", "capability"), [("question", "elicitation"), ("ask_model", "sampling")]
)
async def test_a_2026_call_needing_an_undeclared_capability_is_refused(
    tool: str, capability: str
) -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=MODERN) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, {})
    assert refused.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {"requiredCapabilities": {capability: {}}}


async def test_a_dropped_http_stream_loses_no_result() -> None:
    registry = ToolRegistry()
    release = trio.Event()
    finished = trio.Event()

    async def gate(args: Any, ctx: Any) -> str:
        await release.wait()
        return "through the gate"

    registry.register(define_tool(name="gate", description="d", parameters={}, execute=gate))
    registry.on_result(lambda execution, result: finished.set())
    headers = {"Accept": "application/json, text/event-stream"}
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with httpx2.AsyncClient() as http:
                opened = await http.post(
                    url,
                    headers=headers,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "resumer", "version": "1"},
                        },
                    },
                )
                session = {
                    **headers,
                    "Mcp-Session-Id": opened.headers["mcp-session-id"],
                    "MCP-Protocol-Version": "2025-11-25",
                }
                await http.post(
                    url,
                    headers=session,
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                )
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
                call["params"] = {"name": "gate", "arguments": {}}
                async with http.stream("POST", url, headers=session, json=call) as stream:
                    first = b""
                    async for chunk in stream.aiter_bytes():
                        first += chunk
                        if b"\n\n" in first.replace(b"\r\n", b"\n"):
                            break  # the priming event: then the stream drops
                event_id = next(
                    line.removeprefix("id:").strip()
                    for line in first.decode().splitlines()
                    if line.startswith("id:")
                )
                release.set()
                await finished.wait()
                replayed = b""
                async with http.stream(
                    "GET", url, headers={**session, "Last-Event-ID": event_id}
                ) as stream:
                    async for chunk in stream.aiter_bytes():
                        replayed += chunk
                        if b"through the gate" in replayed:
                            break
            nursery.cancel_scope.cancel()
    assert b'"id":2' in replayed
    assert b"through the gate" in replayed


@BOTH
async def test_a_body_asks_the_clients_model(mode: str) -> None:
    prompts: list[str] = []

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        prompts.append(params.messages[0].content.text)  # type: ignore[union-attr]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="tiny",
            stop_reason="endTurn",
        )

    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()), mode=mode, sampling_callback=on_sample
        ) as client:
            answered = await client.call_tool("ask_model", {})
    assert first_text(answered) == "tiny: Paris"
    assert prompts == ["What is the capital of France?"]


@BOTH
async def test_a_body_asks_the_clients_model_through_its_context(mode: str) -> None:
    asked: list[tuple[str, str | None]] = []

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append((params.messages[0].content.text, params.system_prompt))  # type: ignore[union-attr]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="tiny",
            stop_reason="endTurn",
        )

    with trio.fail_after(LIMIT):
        async with Client(
            mcp_server(mcp_serve_tools.make()), mode=mode, sampling_callback=on_sample
        ) as client:
            answered = await client.call_tool("ctx_ask_model", {})
    assert first_text(answered) == "tiny: Paris"
    assert asked == [("What is the capital of France?", "Be brief.")]


async def test_a_context_question_outside_mcp_is_unavailable() -> None:
    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        asked = await registry.execute(ToolExecutionInput("c1", "ctx_question", {}))
        sampled = await registry.execute(ToolExecutionInput("c2", "ctx_ask_model", {}))
    assert asked.is_error
    assert sampled.is_error
    assert "cannot ask" in asked.content[0].text  # type: ignore[union-attr]
    assert "cannot ask" in sampled.content[0].text  # type: ignore[union-attr]


async def test_a_body_that_cannot_sample_gets_a_clear_error() -> None:
    with trio.fail_after(LIMIT):
        async with Client(mcp_server(mcp_serve_tools.make()), mode=LEGACY) as client:
            unanswered = await client.call_tool("ask_model", {})
    assert error_code(unanswered) == "ELICITATION_UNAVAILABLE"
    assert "did not declare sampling" in first_text(unanswered)
