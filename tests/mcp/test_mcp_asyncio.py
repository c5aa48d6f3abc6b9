"""``mcp_asgi_app`` under asyncio ASGI servers (uvicorn, hypercorn's asyncio worker)
and, for the same behaviour, under hypercorn on trio: the official SDK's client over
real HTTP on 127.0.0.1, at both revisions.

On an asyncio server the calls run through ``toolnursery.aio``: natively on the loop
for a body that runs there (an ``asyncio_tool`` or loop-neutral body, a ``def``), in
the trio guest run for an undeclared ``async def``. The tools here are loop-neutral
(anyio), so one registry serves on every host and the tests assert the same outcome
on each.

Servers are started on a socket bound and listening before the server runs: the
client's connection waits in its backlog until the server accepts it (after its
lifespan started), so nothing sleeps or polls for readiness; the ``uvicorn`` command in
a subprocess is waited for on the line it prints once it listens. Every run is bounded by
``anyio.fail_after``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import httpx2
import mcp.types as types
import uvicorn
from mcp import Client

from mcp_sessions import call_and_drop, open_session
from toolnursery import Ask, ToolDefinition, ToolRegistry, aio, elicit, report_log, report_progress
from toolnursery._aio._tool import runs_on_either_loop
from toolnursery.mcp import close_sse_stream, mcp_asgi_app, mcp_server, serve_mcp_http

pytestmark = [
    # The SDK's HTTP client leaves async generators to the GC.
    pytest.mark.filterwarnings("ignore:Async generator 'http:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.timeout(60),
]

LIMIT = 30
LEGACY = "legacy"
MODERN = "2026-07-28"
BOTH = pytest.mark.parametrize("mode", [LEGACY, MODERN])
ASYNCIO_HOSTS = ["uvicorn", "hypercorn-asyncio"]
HOSTS = pytest.mark.parametrize("host", [*ASYNCIO_HOSTS, "hypercorn-trio"])


def where() -> str:
    """Which driver runs this: an asyncio task (the native driver) or trio."""
    if trio.lowlevel.in_trio_run():
        return "trio"
    return "asyncio" if asyncio.current_task() is not None else "neither"


class Tools:
    """A registry of loop-neutral tools, and what the tests observe of them (made
    inside the run: anyio's events belong to the running loop)."""

    def __init__(self) -> None:
        self.registry = ToolRegistry()
        self.ran_on: list[str] = []
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.outcomes: list[Any] = []
        self.registry.on_result(lambda execution, result: self.outcomes.append(result))

        @runs_on_either_loop
        async def echo(args: Any, ctx: Any) -> str:
            self.ran_on.append(where())
            await anyio.lowlevel.checkpoint()
            return str(args.get("text", "ran"))

        async def trio_echo(args: Any, ctx: Any) -> str:  # undeclared: trio code
            self.ran_on.append(where())
            await trio.lowlevel.checkpoint()
            return "trio ran"

        @runs_on_either_loop
        async def slow(args: Any, ctx: Any) -> str:
            ctx.report_progress(0, None, "started")
            self.started.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled.set()
            return "never"

        async def trio_slow(args: Any, ctx: Any) -> str:  # undeclared: the guest run
            ctx.report_progress(0, None, "started")
            self.started.set()
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled.set()
            return "never"

        @runs_on_either_loop
        async def progress(args: Any, ctx: Any) -> str:
            for step in (1, 2, 3):
                report_progress(step, 3, f"step {step}")
                await anyio.lowlevel.checkpoint()
            report_log("warning", "careful", logger="tests")
            return "done"

        def threaded(args: Any, ctx: Any) -> str:
            self.ran_on.append("thread")
            ctx.report_progress(1, 2, "half")
            ctx.log("warning", "from the thread")
            ctx.report_progress(2, 2, "all")
            return "threaded"

        @runs_on_either_loop
        async def question(args: Any, ctx: Any) -> str:
            answer = await elicit(
                "What is your name?",
                {"type": "object", "properties": {"name": {"type": "string"}}},
            )
            return f"{answer.action}: {(answer.content or {}).get('name')}"

        @runs_on_either_loop
        async def key(args: Any, ctx: Any) -> str:
            return str(ctx.idempotency_key)

        for name, body in (
            ("echo", echo),
            ("trio_echo", trio_echo),
            ("slow", slow),
            ("trio_slow", trio_slow),
            ("progress", progress),
            ("threaded", threaded),
            ("question", question),
            ("key", key),
            ("ask_me", echo),
        ):
            self.registry.register(
                ToolDefinition(name, f"The {name} tool.", {"type": "object"}, body)
            )

        async def ask_for_ask_me(execution: Any, next: Any) -> Any:
            if execution.name == "ask_me":
                return Ask("May ask_me run?")
            return await next()

        self.registry.on_pre_execute(ask_for_ask_me)


def listening() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@asynccontextmanager
async def on_uvicorn(app: Any) -> AsyncIterator[str]:
    sock = listening()
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False)
    )
    serving = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await serving
        sock.close()
    assert server.started  # its lifespan started, and it served


@asynccontextmanager
async def on_hypercorn_asyncio(app: Any) -> AsyncIterator[str]:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    sock = listening()
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the socket from here
    config.loglevel = "WARNING"
    config.accesslog = None
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(app, config, shutdown_trigger=stop.wait))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop.set()
        await serving


@asynccontextmanager
async def on_hypercorn_trio(registry: ToolRegistry) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def served(host: str, registry: ToolRegistry) -> AsyncIterator[str]:
    """``registry`` served over HTTP on ``host``; the endpoint's URL."""
    if host == "hypercorn-trio":
        async with on_hypercorn_trio(registry) as url:
            yield url
        return
    app = mcp_asgi_app(registry, allowed_hosts=["127.0.0.1:*"])
    opened = on_uvicorn(app) if host == "uvicorn" else on_hypercorn_asyncio(app)
    async with opened as url:
        yield url


def run(host: str, test: Callable[[], Awaitable[None]]) -> None:  # host: or "asyncio"
    """Run ``test()`` on the host's loop, bounded; on asyncio, nothing of ours (nor of
    the server's) outlives it."""

    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await test()
        if host != "hypercorn-trio":
            await aio.aclose()  # the trio guest run, if an undeclared body started it
            # sse-starlette (the SDK's) keeps one watcher task per loop, by design.
            left = asyncio.all_tasks() - {asyncio.current_task()}
            assert [
                t for t in left if getattr(t.get_coro(), "__qualname__", "") != "_shutdown_watcher"
            ] == []

    anyio.run(bounded, backend="trio" if host == "hypercorn-trio" else "asyncio")


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@HOSTS
@BOTH
def test_a_call_runs_on_the_hosts_driver_and_a_trio_body_still_runs(host: str, mode: str) -> None:
    tools = Tools()
    native = "trio" if host == "hypercorn-trio" else "asyncio"

    async def test() -> None:
        async with served(host, tools.registry) as url, Client(url, mode=mode) as client:
            assert first_text(await client.call_tool("echo", {"text": "hi"})) == "hi"
            assert first_text(await client.call_tool("trio_echo", {})) == "trio ran"
            assert first_text(await client.call_tool("threaded", {})) == "threaded"
            keys = [first_text(await client.call_tool("key", {})) for _ in range(3)]
        assert len(set(keys)) == 3

    run(host, test)
    assert tools.ran_on == [native, "trio", "thread"]
    assert [r.is_error for r in tools.outcomes] == [False] * 6


@HOSTS
@BOTH
def test_progress_and_logs_reach_the_client_in_order_before_the_result(
    host: str, mode: str
) -> None:
    tools = Tools()
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    on_progress_: Any = on_progress

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def test() -> None:
        async with (
            served(host, tools.registry) as url,
            Client(url, mode=mode, logging_callback=on_log, log_level="info") as client,
        ):
            done = await client.call_tool("progress", {}, progress_callback=on_progress_)
            assert first_text(done) == "done"
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            progress.clear()
            threaded = await client.call_tool("threaded", {}, progress_callback=on_progress_)
            assert first_text(threaded) == "threaded"
            assert progress == [(1, 2, "half"), (2, 2, "all")]

    run(host, test)
    assert logs == [("warning", "careful"), ("warning", "from the thread")]


@HOSTS
@BOTH
@pytest.mark.parametrize("tool", ["slow", "trio_slow"])
def test_mcp_cancellation_aborts_the_call_through_the_pipeline(
    host: str, mode: str, tool: str
) -> None:
    tools = Tools()
    heard: list[str | None] = []  # asked for: the call's forwarder is running when it is cut

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    on_progress_: Any = on_progress

    async def test() -> None:
        async with served(host, tools.registry) as url, Client(url, mode=mode) as client:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    functools.partial(client.call_tool, progress_callback=on_progress_), tool, {}
                )
                await tools.started.wait()
                group.cancel_scope.cancel()  # the client sends notifications/cancelled
            await tools.cancelled.wait()
            again = await client.call_tool("echo", {"text": "after"})
            assert first_text(again) == "after"

    run(host, test)
    assert [r.error.code if r.error else "ok" for r in tools.outcomes] == ["ABORTED", "ok"]


@HOSTS
@BOTH
@pytest.mark.parametrize(("action", "expected"), [(True, "ran"), (False, "declined")])
def test_an_ask_is_put_to_the_client(host: str, mode: str, action: bool, expected: str) -> None:
    tools = Tools()
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": action})

    async def test() -> None:
        async with (
            served(host, tools.registry) as url,
            Client(url, mode=mode, elicitation_callback=on_elicit) as client,
        ):
            result = await client.call_tool("ask_me", {})
            assert (first_text(result) == "ran") is (expected == "ran")
            assert result.is_error is (expected != "ran")

    run(host, test)
    assert asked == ["May ask_me run?"]


@pytest.mark.parametrize("host", ASYNCIO_HOSTS)
@BOTH
def test_a_served_ask_checks_the_arguments_before_asking_the_client(host: str, mode: str) -> None:
    tools = Tools()
    asked: list[str] = []
    schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

    async def send(args: Any, ctx: Any) -> str:
        return "sent to " + args["to"]

    async def ask_for_send(execution: Any, next: Any) -> Any:
        return Ask("May send run?") if execution.name == "send" else await next()

    tools.registry.register(ToolDefinition("send", "Send.", schema, send))  # a raw schema
    tools.registry.on_pre_execute(ask_for_send)

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def test() -> None:
        async with (
            served(host, tools.registry) as url,
            Client(url, mode=mode, elicitation_callback=on_elicit) as client,
        ):
            refused = await client.call_tool("send", {"to": 3})
            assert refused.is_error
            assert first_text(refused) == 'Error: invalid arguments: "to" must be a string'
            assert asked == []  # nobody was asked about arguments the tool refuses
            granted = await client.call_tool("send", {"to": "alice"})
            assert first_text(granted) == "sent to alice"

    run(host, test)
    assert asked == ["May send run?"]


@HOSTS
@BOTH
def test_a_body_elicits_its_clients_user(host: str, mode: str) -> None:
    tools = Tools()

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def test() -> None:
        async with (
            served(host, tools.registry) as url,
            Client(url, mode=mode, elicitation_callback=on_elicit) as client,
        ):
            result = await client.call_tool("question", {})
            assert first_text(result) == "accept: Ada"

    run(host, test)


@pytest.mark.parametrize("host", ASYNCIO_HOSTS)
def test_the_client_hears_when_the_registry_changes(host: str) -> None:
    tools = Tools()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def test() -> None:
        async with (
            served(host, tools.registry) as url,
            Client(url, mode=LEGACY, message_handler=on_message) as client,
        ):
            await client.call_tool("echo", {})  # the session is tracked from here on
            tools.registry.register(ToolDefinition("new", "d", {"type": "object"}, tools_noop))
            await changed.wait()
            assert "new" in [t.name for t in (await client.list_tools()).tools]

    run(host, test)


async def tools_noop(args: Any, ctx: Any) -> str:
    return "ok"


@HOSTS
def test_a_resumed_stream_never_carries_another_sessions_events(host: str) -> None:
    registry = ToolRegistry()
    replays: dict[str, bytes] = {}

    async def test() -> None:
        gates = {"alice": anyio.Event(), "bob": anyio.Event()}
        done = {"alice": anyio.Event(), "bob": anyio.Event()}

        @runs_on_either_loop
        async def whisper(args: Any, ctx: Any) -> str:
            word = args["word"]
            await gates[word].wait()
            ctx.report_progress(1, 2, message=f"progress-{word}")
            ctx.log("info", f"log-{word}")
            return f"secret-{word}"

        registry.register(ToolDefinition("whisper", "d", {"type": "object"}, whisper))
        registry.on_result(lambda execution, result: done[execution.arguments["word"]].set())
        async with served(host, registry) as url, httpx2.AsyncClient() as http:
            alice = await open_session(http, url, "alice")
            bob = await open_session(http, url, "bob")
            alice_event = await call_and_drop(http, url, alice, "alice")
            bob_event = await call_and_drop(http, url, bob, "bob")
            # Bob's events are stored between Alice's priming event and her result.
            gates["bob"].set()
            await done["bob"].wait()
            gates["alice"].set()
            await done["alice"].wait()
            for word, session, event_id in (
                ("alice", alice, alice_event),
                ("bob", bob, bob_event),
            ):
                replayed = b""
                async with http.stream(
                    "GET", url, headers={**session, "Last-Event-ID": event_id}
                ) as stream:
                    async for chunk in stream.aiter_bytes():
                        replayed += chunk
                        if f"secret-{word}".encode() in replayed:
                            break
                replays[word] = replayed

    run(host, test)
    for word, other in (("alice", "bob"), ("bob", "alice")):
        replayed = replays[word]
        assert f"secret-{word}".encode() in replayed
        assert b'"id":2' in replayed
        for leaked in (f"secret-{other}", f"progress-{other}", f"log-{other}"):
            assert leaked.encode() not in replayed


@BOTH
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_sdks_in_process_client_is_served_on_either_loop(backend: str, mode: str) -> None:
    tools = Tools()

    async def test() -> None:
        with anyio.fail_after(LIMIT):
            async with Client(mcp_server(tools.registry), mode=mode) as client:
                result = await client.call_tool("echo", {"text": "in"})
                assert first_text(result) == "in"

    anyio.run(test, backend=backend)
    assert tools.ran_on == [backend]


def test_an_asyncio_server_stops_cleanly_with_a_call_in_flight() -> None:
    tools = Tools()

    async def test() -> None:
        app = mcp_asgi_app(tools.registry)
        async with on_uvicorn(app) as url, anyio.create_task_group() as group:

            async def call() -> None:
                async with Client(url, mode=LEGACY) as client:
                    await client.call_tool("slow", {})

            group.start_soon(call)
            await tools.started.wait()
            group.cancel_scope.cancel()
        await tools.cancelled.wait()

    run("uvicorn", test)
    assert [r.error.code for r in tools.outcomes if r.error] == ["ABORTED"]


SERVER_MODULE = """
import asyncio

from toolnursery import ToolDefinition, ToolRegistry
from toolnursery.aio import asyncio_tool
from toolnursery.mcp import mcp_asgi_app


@asyncio_tool
async def where(args, ctx):
    ctx.report_progress(1, 1, "asyncio" if asyncio.current_task() else "?")
    return "asyncio task" if asyncio.current_task() is not None else "not asyncio"


registry = ToolRegistry()
registry.register(ToolDefinition("where", "Where it runs.", {"type": "object"}, where))
app = mcp_asgi_app(registry, allowed_hosts=["127.0.0.1:*"])
"""


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
def test_the_uvicorn_command_serves_an_app_module(tmp_path: Path, mode: str) -> None:
    (tmp_path / "served_app.py").write_text(SERVER_MODULE)
    argv = [sys.executable, "-m", "uvicorn", "served_app:app", "--app-dir", str(tmp_path)]
    argv += ["--host", "127.0.0.1", "--port", "0", "--log-level", "info", "--no-access-log"]
    heard: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    on_progress_: Any = on_progress

    async def test() -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        async with await anyio.open_process(argv, env=env) as process:
            try:
                assert process.stderr is not None
                seen = b""
                url = None
                async for chunk in process.stderr:  # uvicorn says where once it listens
                    seen += chunk
                    found = re.search(rb"running on (http://127\.0\.0\.1:\d+)", seen)
                    if found:
                        url = found.group(1).decode() + "/mcp"
                        break
                assert url is not None, seen
                async with Client(url, mode=mode) as client:
                    result = await client.call_tool("where", {}, progress_callback=on_progress_)
                    assert first_text(result) == "asyncio task"
            finally:
                process.terminate()

    run("uvicorn", test)
    assert heard == ["asyncio"]


@HOSTS
@pytest.mark.parametrize("body", ["either loop", "trio"])
def test_a_body_closes_its_stream_mid_call_and_the_result_follows_on_resumption(
    host: str, body: str
) -> None:
    """SEP-1699 polling: ``close_sse_stream()`` waits for the priming event on each loop,
    from a trio body in the guest run too."""
    registry = ToolRegistry()
    closed: list[bool] = []

    async def poll(args: Any, ctx: Any) -> str:
        closed.append(await close_sse_stream())
        return "resumed after the close"

    execute = runs_on_either_loop(poll) if body == "either loop" else poll
    registry.register(ToolDefinition("poll", "d", {"type": "object"}, execute))
    seen: dict[str, bytes] = {}

    async def test() -> None:
        async with served(host, registry) as url, httpx2.AsyncClient() as http:
            session = await open_session(http, url, "poller")
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "poll", "arguments": {}},
            }
            posted = b""
            async with http.stream("POST", url, headers=session, json=call) as stream:
                async for chunk in stream.aiter_bytes():  # to its end: the body closes it
                    posted += chunk
            event_id = [
                line.removeprefix("id:").strip()
                for line in posted.decode().splitlines()
                if line.startswith("id:")
            ][-1]
            replayed = b""
            async with http.stream(
                "GET", url, headers={**session, "Last-Event-ID": event_id}
            ) as stream:
                async for chunk in stream.aiter_bytes():
                    replayed += chunk
                    if b"resumed after the close" in replayed:
                        break
            seen.update(posted=posted, replayed=replayed)

    run(host, test)
    assert closed == [True]
    assert b"retry:" in seen["posted"]  # the priming event went out before the close
    assert b'"result"' not in seen["posted"]
    assert b'"id":1' in seen["replayed"]


STDIO_SERVER = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from test_mcp_asyncio_stdio_tools import make
from toolnursery.mcp import serve_mcp_stdio
asyncio.run(serve_mcp_stdio(make()))
"""

STDIO_TOOLS = """
import asyncio
from toolnursery import ToolDefinition, ToolRegistry
from toolnursery.aio import asyncio_tool


@asyncio_tool
async def where(args, ctx):
    ctx.report_progress(1, 1, "on the loop")
    await asyncio.sleep(0)
    return "asyncio task" if asyncio.current_task() is not None else "not asyncio"


def make():
    registry = ToolRegistry()
    registry.register(ToolDefinition("where", "Where it runs.", {"type": "object"}, where))
    return registry
"""


def test_serve_mcp_stdio_under_asyncio_run(tmp_path: Path) -> None:
    from mcp.client.stdio import StdioServerParameters

    (tmp_path / "test_mcp_asyncio_stdio_tools.py").write_text(STDIO_TOOLS)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", STDIO_SERVER.format(tests=str(tmp_path))],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    heard: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    on_progress_: Any = on_progress
    texts: list[str] = []

    async def test() -> None:
        async with Client(params, mode=LEGACY) as client:
            result = await client.call_tool("where", {}, progress_callback=on_progress_)
            texts.append(first_text(result))

    run("asyncio", test)  # the client on asyncio too
    assert texts == ["asyncio task"]
    assert heard == ["on the loop"]
