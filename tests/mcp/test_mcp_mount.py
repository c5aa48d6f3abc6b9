"""Mounting MCP servers: a real SDK server in-process, over stdio and over streamable HTTP.

Every wait is bounded by ``trio.fail_after`` (real processes run on the real clock);
nothing sleeps to synchronise — the tests wait for the server's own log messages.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from support import code, text

pytest.importorskip("mcp")

import mcp_fixture_server as fixture
from toolnursery import (
    MCP_SERVER_GONE,
    PARALLEL,
    AudioContent,
    CancelSignal,
    EmbeddedResource,
    ImageContent,
    McpAnnotations,
    McpMountError,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolExecutionInput,
    ToolRegistry,
    define_tool,
    install_destructive_ask,
    output_schema,
    run_tool_calls,
    thaw,
)
from toolnursery.mcp import McpMount, open_mcp_mount

# The SDK's HTTP client leaves an httpx response iterator to the garbage collector
# when its transport closes under trio; trio reports that as a ResourceWarning.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVER = str(Path(__file__).parents[1] / "mcp_fixture_server.py")
LIMIT = 30  # seconds: generous, so a loaded CI machine never flakes, yet nothing hangs


def stdio_command(mode: str = "stdio") -> list[str]:
    return [sys.executable, SERVER, mode]


@asynccontextmanager
async def http_server() -> AsyncIterator[tuple[str, trio.Process]]:
    """The fixture server over streamable HTTP (hypercorn on trio), on a free port."""
    async with fixture.process_printing_url([sys.executable, SERVER, "http"]) as started:
        yield started


class Logs:
    """The log lines a server sent, and a way to wait for one."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = trio.Event()

    def __call__(self, params: Any) -> None:
        self.lines.append(params.data)
        self._changed.set()
        self._changed = trio.Event()

    def __contains__(self, line: str) -> bool:
        return line in self.lines

    async def wait_for(self, line: str) -> None:
        while line not in self.lines:
            await self._changed.wait()


@asynccontextmanager
async def mounted(
    kind: str, registry: ToolRegistry, **options: Any
) -> AsyncIterator[tuple[McpMount, Logs, trio.Process | None]]:
    """Mount the fixture server over ``kind``; also yields the log lines it sends."""
    logs = Logs()
    options.setdefault("on_log", logs)
    if kind == "memory":
        async with open_mcp_mount(registry, server=fixture.build(), **options) as mount:
            yield mount, logs, None
    elif kind == "stdio":
        async with open_mcp_mount(registry, command=stdio_command(), **options) as mount:
            yield mount, logs, None
    else:
        async with (
            http_server() as (url, process),
            open_mcp_mount(registry, url=url, **options) as mount,
        ):
            yield mount, logs, process


KINDS = ["memory", "stdio", "http"]


def call(name: str, arguments: Any = None, call_id: str = "c1") -> ToolExecutionInput:
    return ToolExecutionInput(call_id, name, arguments if arguments is not None else {})


@pytest.mark.parametrize("kind", KINDS)
async def test_lists_the_servers_tools_under_the_prefix_with_verbatim_schemas(kind: str) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry, prefix="fx_") as (mount, _, _):
            assert mount.names[:3] == ("fx_echo", "fx_meet", "fx_block")
            assert mount.server_info is not None
            assert mount.server_info.name == "fixture"
            echo = registry.get("fx_echo")
            assert echo is not None
            assert echo.parameters == {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            }
            assert echo.description == "Echo the text."
            result = await registry.execute(call("fx_echo", {"text": "hi"}))
            assert text(result) == "hi"
            assert not result.is_error
            assert result.meta is None  # the 2026 server identity stamp is not the call's
        assert registry.schemas() == []


@pytest.mark.parametrize("kind", KINDS)
async def test_annotations_classify_the_mounted_tools(kind: str) -> None:
    """readOnlyHint → parallel-safe (and idempotent), idempotentHint → idempotent,
    destructiveHint and title kept."""
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            echo, idem, destroy, block = (
                registry.get(n) for n in ("echo", "idem", "destroy", "block")
            )
            assert echo is not None
            assert idem is not None
            assert destroy is not None
            assert block is not None
            assert registry.execution_mode(call("echo", {"text": "x"})) == PARALLEL
            assert registry.execution_mode(call("block")).kind == "exclusive"
            assert echo.idempotent
            assert idem.idempotent
            assert not block.idempotent
            assert destroy.mcp_annotations == McpAnnotations(
                title="Destroyer", destructive=True, open_world=False
            )
            assert destroy.mcp_annotations.may_destroy
            assert echo.mcp_annotations is not None
            assert not echo.mcp_annotations.may_destroy


async def test_a_destructive_tool_is_asked_about_and_a_read_only_one_is_not() -> None:
    asked: list[str] = []

    class Approval:
        async def request(self, request: Any) -> str:
            asked.append(request.reason)
            return "rejected"

    registry = ToolRegistry(approval=Approval())  # type: ignore[arg-type]
    agent = registry.scope()
    install_destructive_ask(registry)
    with trio.fail_after(LIMIT):
        async with mounted("memory", registry):
            denied = await registry.execute(ToolExecutionInput("d", "destroy", {}, agent=agent))
            allowed = await registry.execute(
                ToolExecutionInput("e", "echo", {"text": "ok"}, agent=agent)
            )
    assert denied.is_error
    assert asked == ["Destroyer (destroy) may make destructive changes"]
    assert text(allowed) == "ok"


async def test_a_local_tool_declares_annotations_that_the_policy_reads() -> None:
    registry = ToolRegistry()
    install_destructive_ask(registry)  # no approval service: Ask degrades to a denial

    async def wipe(args: Any, ctx: Any) -> str:
        return "wiped"

    async def look(args: Any, ctx: Any) -> str:
        return "looked"

    registry.register(
        define_tool(
            name="wipe",
            description="d",
            parameters={},
            execute=wipe,
            mcp_annotations=McpAnnotations(destructive=True),
        )
    )
    registry.register(
        define_tool(
            name="look",
            description="d",
            parameters={},
            execute=look,
            mcp_annotations=McpAnnotations(read_only=True),
        )
    )
    assert (await registry.execute(call("wipe"))).is_error
    assert text(await registry.execute(call("look"))) == "looked"


@pytest.mark.parametrize("kind", KINDS)
async def test_results_map_every_content_kind_losslessly(kind: str) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            result = await registry.execute(call("kinds"))
    assert not result.is_error
    kinds = [type(b) for b in result.content]
    assert kinds == [
        TextContent,
        ImageContent,
        AudioContent,
        ResourceLink,
        EmbeddedResource,
        EmbeddedResource,
    ]
    first, _, audio, link, embedded, blob = result.content
    assert isinstance(first, TextContent)
    assert first.annotations is not None
    assert first.annotations.priority == 0.5
    assert audio == AudioContent(data=fixture.WAV, mime_type="audio/wav")
    assert link == ResourceLink(uri="file:///notes.txt", name="notes", mime_type="text/plain")
    assert embedded == EmbeddedResource(
        resource=ResourceContents(uri="file:///a.txt", text="alpha", mime_type="text/plain")
    )
    assert isinstance(blob, EmbeddedResource)
    assert blob.resource.blob == "AAEC"
    wire = msgspec.json.encode(result)
    assert b'"mimeType":"audio/wav"' in wire
    assert b'"type":"resource_link"' in wire
    assert msgspec.json.decode(wire, type=type(result)) == result


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_content_is_error_and_output_schema(kind: str) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            struct = registry.get("struct")
            assert struct is not None
            assert thaw(output_schema(struct)) == {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            }
            structured = await registry.execute(call("struct", {"n": 7}))
            failed = await registry.execute(call("fail"))
    assert structured.structured_content == {"n": 7}
    assert text(structured) == "7"
    assert failed.is_error
    assert text(failed) == "Error: it broke"
    assert code(failed) == "MCP_TOOL_ERROR"


@pytest.mark.parametrize("kind", KINDS)
async def test_parallel_calls_overlap_on_one_session(kind: str) -> None:
    """Three meet calls can only all return if the server has all three in flight."""
    registry = ToolRegistry()
    calls = [ToolCall(f"m{i}", "meet", json.dumps({"n": 3})) for i in range(3)]
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            results = await run_tool_calls(registry, calls)
    spans = [json.loads(text(r)) for r in results]
    assert all(not r.is_error for r in results)
    latest_start = max(start for start, _ in spans)
    assert all(end >= latest_start for _, end in spans)  # every call was still running


@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_a_call_reaches_the_server_body(kind: str) -> None:
    """An abort sends notifications/cancelled; the server's cleanup runs, and the
    session stays usable."""
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry) as (mount, logs, _):
            signal = CancelSignal()
            outcome: list[Any] = []

            async def run() -> None:
                outcome.append(
                    await registry.execute(ToolExecutionInput("b", "block", {}, signal=signal))
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                await logs.wait_for("block started")
                signal.cancel("stop")
            assert code(outcome[0]) == "ABORTED"
            assert text(await registry.execute(call("cleaned"))) == "cleaned"
            assert not mount.gone
            again = await registry.execute(call("echo", {"text": "still here"}))
    assert text(again) == "still here"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_timeout_cancels_the_remote_call(kind: str) -> None:
    from toolnursery import install_timeout_policy

    registry = ToolRegistry()
    install_timeout_policy(registry, default_timeout_ms=300)
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            result = await registry.execute(call("block"))
            assert text(await registry.execute(call("cleaned"))) == "cleaned"
    assert code(result) == "TOOL_TIMEOUT"


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_server_that_dies_mid_call_fails_its_calls_and_its_tools_go(kind: str) -> None:
    registry = ToolRegistry()
    changes: list[tuple[str, ...]] = []
    registry.on_change(lambda: changes.append(tuple(s.name for s in registry.schemas())))
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry) as (mount, logs, _):
            blocked: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    blocked.append(await registry.execute(call("block", call_id="b")))

                nursery.start_soon(run)
                await logs.wait_for("block started")
                crashed = await registry.execute(call("crash", call_id="c"))
            assert mount.gone
            assert registry.schemas() == []
    assert code(crashed) == MCP_SERVER_GONE
    assert code(blocked[0]) == MCP_SERVER_GONE
    assert "is gone" in text(crashed)
    assert changes[-1] == ()


@pytest.mark.parametrize("kind", KINDS)
async def test_list_changed_relists_and_updates_the_registry(kind: str) -> None:
    registry = ToolRegistry()
    seen = trio.Event()
    registry.on_change(lambda: seen.set() if registry.get("extra") is not None else None)
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry) as (mount, _, _):
            assert registry.get("extra") is None
            await registry.execute(call("grow"))
            await seen.wait()
            assert mount.names[-1] == "extra"
            assert text(await registry.execute(call("extra"))) == "extra"


async def test_progress_from_a_mounted_server_reaches_the_call() -> None:
    from toolnursery import ProgressReport, reporting

    registry = ToolRegistry()
    reports: list[Any] = []
    with trio.fail_after(LIMIT):
        async with mounted("stdio", registry):
            with reporting(reports.append):
                result = await registry.execute(call("progress"))
    assert text(result) == "done"
    assert reports == [
        ProgressReport(progress=n, total=3, message=f"step {n}", call_id="c1") for n in (1, 2, 3)
    ]


# -- bad input ---------------------------------------------------------------------


async def test_duplicate_tool_names_are_refused() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT), pytest.raises(McpMountError, match='"echo" twice'):
        async with open_mcp_mount(registry, command=stdio_command("dupe")):
            pass
    assert registry.schemas() == []


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_a_tool_with_an_invalid_input_schema_is_skipped_and_reported(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    source: dict[str, Any] = (
        {"server": fixture.build("badschema")}
        if kind == "memory"
        else {"command": stdio_command("badschema")}
    )
    with trio.fail_after(LIMIT), caplog.at_level("WARNING", logger="toolnursery.mcp"):
        async with open_mcp_mount(registry, prefix="fx_", **source) as mount:
            names = [schema.name for schema in registry.schemas()]
            mounted_names = mount.names
            skipped = dict(mount.skipped)
            echoed = await registry.execute(call("fx_echo", {"text": "still here"}))
            missing = await registry.execute(call("fx_broken"))
            await mount.refresh()  # listed again: still skipped, reported once
            again = dict(mount.skipped)
    assert "fx_broken" not in names
    assert "fx_echo" in names
    assert mounted_names == tuple(names)
    assert list(skipped) == ["fx_broken"]
    assert "not a valid JSON Schema" in skipped["fx_broken"]
    assert "minimum" in skipped["fx_broken"]
    assert again == skipped
    assert text(echoed) == "still here"
    assert code(missing) == "UNKNOWN_TOOL"
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolnursery.mcp"]
    assert len([w for w in warnings if "skipped a tool" in w]) == 1
    assert "fx_broken" in warnings[0]


async def test_a_tool_whose_schema_turns_invalid_leaves_and_comes_back_when_fixed() -> None:
    import mcp.types as types
    from mcp.server import Server

    good: dict[str, Any] = {"type": "object", "properties": {"n": {"minimum": 0}}}
    bad: dict[str, Any] = {"type": "object", "properties": {"n": {"minimum": "zero"}}}
    listed = {"schema": good}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name="count", input_schema=listed["schema"]),
                types.Tool(name="other", input_schema={"type": "object"}),
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    server = Server("shifting", on_list_tools=list_tools, on_call_tool=call_tool)
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, server=server) as mount:
            assert mount.names == ("count", "other")
            listed["schema"] = bad
            await mount.refresh()
            assert mount.names == ("other",)
            assert list(mount.skipped) == ["count"]
            gone = await registry.execute(call("count", {"n": 1}))
            listed["schema"] = good
            await mount.refresh()
            assert mount.names == ("count", "other")
            assert mount.skipped == {}
            back = await registry.execute(call("count", {"n": 1}))
            refused = await registry.execute(call("count", {"n": -1}))
    assert code(gone) == "UNKNOWN_TOOL"
    assert text(back) == "count"
    assert code(refused) == "INVALID_ARGS"


async def test_a_name_already_taken_is_refused_with_or_without_a_prefix() -> None:
    async def body(args: Any, ctx: Any) -> str:
        return "mine"

    for prefix in ("", "fx_"):
        registry = ToolRegistry()
        registry.register(
            define_tool(name=f"{prefix}echo", description="d", parameters={}, execute=body)
        )
        with trio.fail_after(LIMIT), pytest.raises(McpMountError, match="already registered"):
            async with open_mcp_mount(registry, server=fixture.build(), prefix=prefix):
                pass
        assert [s.name for s in registry.schemas()] == [f"{prefix}echo"]


async def test_a_server_that_answers_garbage_is_a_clear_error() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT), pytest.raises(McpMountError) as caught:
        async with open_mcp_mount(registry, command=stdio_command("garbage"), init_timeout=8):
            pass
    assert "no answer to the handshake" in str(caught.value)
    assert "it answered" in str(caught.value)


async def test_a_server_that_never_initialises_is_a_bounded_wait() -> None:
    registry = ToolRegistry()
    start = trio.current_time()
    with trio.fail_after(LIMIT), pytest.raises(McpMountError, match="within 2s"):
        async with open_mcp_mount(registry, command=stdio_command("hang"), init_timeout=2):
            pass
    assert trio.current_time() - start < LIMIT


async def test_a_command_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT), pytest.raises(McpMountError, match="could not connect"):
        async with open_mcp_mount(registry, command=[str(tmp_path / "missing")]):
            pass


async def test_exactly_one_source_is_required() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        async with open_mcp_mount(ToolRegistry()):
            pass
    with pytest.raises(ValueError, match="init_timeout"):
        async with open_mcp_mount(ToolRegistry(), server=fixture.build(), init_timeout=0):
            pass


async def test_a_scope_mount_is_visible_to_that_scope_only() -> None:
    registry = ToolRegistry()
    scope = registry.scope()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(scope, server=fixture.build()):
            assert registry.get("echo") is None
            assert registry.get("echo", scope) is not None
            result = await registry.execute(
                ToolExecutionInput("c", "echo", {"text": "s"}, agent=scope)
            )
            assert text(result) == "s"
        assert registry.get("echo", scope) is None


# -- regressions -------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ['"a string"', "[1, 2]", "3", "not json", "null"])
async def test_arguments_that_are_not_an_object_are_refused_before_the_server(
    arguments: str,
) -> None:
    registry = ToolRegistry()
    fixture.CALLS.clear()
    with trio.fail_after(LIMIT):
        async with mounted("memory", registry):
            [result] = await run_tool_calls(registry, [ToolCall("a1", "args", arguments)])
            direct = await registry.execute(call("args", [1]))
    assert code(result) == "INVALID_ARGS"
    assert code(direct) == "INVALID_ARGS"
    assert '"arguments" must be an object' in text(result)
    assert fixture.CALLS["args"] == 0


async def test_a_refresh_that_cannot_be_applied_keeps_every_tool() -> None:
    """grow changes idem and adds extra; extra is taken here, so nothing changes."""

    async def mine(args: Any, ctx: Any) -> str:
        return "mine"

    registry = ToolRegistry()
    registry.register(define_tool(name="extra", description="d", parameters={}, execute=mine))
    with trio.fail_after(LIMIT):
        async with mounted("memory", registry) as (mount, _, _):
            before = mount.names
            await registry.execute(call("grow"))
            with pytest.raises(McpMountError, match="already registered"):
                await mount.refresh()
            assert mount.names == before
            idem = registry.get("idem")
            assert idem is not None
            assert idem.description == "Idempotent."
            assert text(await registry.execute(call("echo", {"text": "kept"}))) == "kept"
            assert text(await registry.execute(call("extra"))) == "mine"


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_structured_content_outside_the_output_schema_is_an_error(kind: str) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            wrong = await registry.execute(call("struct", {"n": "seven"}))
            right = await registry.execute(call("struct", {"n": 7}))
    assert code(wrong) == "INVALID_TOOL_OUTPUT"
    assert '"value.n" must be an integer' in text(wrong)
    assert right.structured_content == {"n": 7}


async def test_the_recorder_logs_a_mounted_servers_progress_under_the_call(tmp_path: Path) -> None:
    from toolnursery import ProgressReport
    from toolnursery.log import JsonlRecorder, ProgressEvent, read_log

    path = tmp_path / "run.jsonl"
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted("stdio", registry):
            with JsonlRecorder(path) as log:
                await run_tool_calls(registry, [ToolCall("p1", "progress", "{}")], recorder=log)
    progress = [e for e in read_log(path) if isinstance(e, ProgressEvent)]
    assert [(e.call_id, e.report) for e in progress] == [
        ("p1", ProgressReport(progress=n, total=3, message=f"step {n}", call_id="p1"))
        for n in (1, 2, 3)
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_deadline_fires_on_time_without_waiting_for_an_answer(kind: str) -> None:
    """A cancelled request is never answered: the call must not wait for one."""
    from toolnursery import install_timeout_policy

    registry = ToolRegistry()
    install_timeout_policy(registry, default_timeout_ms=1000)
    with trio.fail_after(LIMIT):
        async with mounted(kind, registry):
            start = trio.current_time()
            result = await registry.execute(call("block"))
            took = trio.current_time() - start
    assert code(result) == "TOOL_TIMEOUT"
    assert 1.0 <= took < 2.0


async def test_an_http_server_dying_mid_call_is_reported_with_the_cause() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with mounted("http", registry) as (mount, _, _):
            crashed = await registry.execute(call("crash"))
            assert mount.gone
    assert code(crashed) == MCP_SERVER_GONE
    assert "the mount was closed" not in text(crashed)
    assert "Server disconnected" in text(crashed)


# -- elicitation and sampling --------------------------------------------------------


@pytest.mark.parametrize("mode", ["stdio", "legacy"])
async def test_elicitation_reaches_on_elicit_in_both_revisions(mode: str) -> None:
    import mcp.types as types

    asked: list[str] = []

    async def on_elicit(params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(
            registry, command=stdio_command(mode), on_elicit=on_elicit
        ) as mount:
            result = await registry.execute(call("ask"))
    assert mount.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert text(result) == 'accept {"ok": true}'
    assert asked == ["Proceed?"]


@pytest.mark.parametrize("mode", ["stdio", "legacy"])
async def test_without_a_callback_elicitation_and_sampling_are_declined_clearly(
    mode: str,
) -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, command=stdio_command(mode)):
            asked = await registry.execute(call("ask"))
            sampled = await registry.execute(call("sample"))
    assert asked.is_error
    assert sampled.is_error
    if mode == "stdio":  # 2026-07-28: the mount answers the input-required result
        assert "elicitation declined" in text(asked)
        assert "on_elicit=" in text(asked)
        assert "sampling declined" in text(sampled)
    else:  # pushed: the server reports the refusal it got
        assert "elicitation failed" in text(asked)
        assert "sampling failed" in text(sampled)


class Approval:
    """An approval service that answers ``outcome`` and records what it was asked."""

    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.seen: list[tuple[str, str, str | None]] = []

    async def request(self, request: Any) -> str:
        self.seen.append((request.tool_name, request.call_id, request.reason))
        return self.outcome


@pytest.mark.parametrize("mode", ["stdio", "legacy"])
@pytest.mark.parametrize(
    ("outcome", "answer"), [("allowed-once", "accept {}"), ("rejected", "decline null")]
)
async def test_a_consent_question_goes_to_the_hosts_approval_service(
    mode: str, outcome: str, answer: str
) -> None:
    approval = Approval(outcome)
    registry = ToolRegistry(approval=approval)  # type: ignore[arg-type]
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, command=stdio_command(mode)):
            result = await registry.execute(call("consent", call_id="k1"))
    assert text(result) == answer
    assert approval.seen == [("consent", "k1", "Proceed?")]


async def test_a_question_asking_for_data_is_not_put_to_the_approval_service() -> None:
    approval = Approval("allowed-once")
    registry = ToolRegistry(approval=approval)  # type: ignore[arg-type]
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, server=fixture.build()):
            result = await registry.execute(call("ask"))
    assert result.is_error
    assert "asks for data" in text(result)
    assert approval.seen == []


async def test_sampling_reaches_on_sample() -> None:
    import mcp.types as types

    async def on_sample(params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="m"
        )

    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, server=fixture.build(), on_sample=on_sample):
            result = await registry.execute(call("sample"))
    assert text(result) == "sampled"


async def test_a_2026_only_server_is_mounted() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, command=stdio_command("modern")) as mount:
            result = await registry.execute(call("echo", {"text": "new"}))
    assert mount.protocol_version == "2026-07-28"
    assert text(result) == "new"


async def test_a_third_party_server_answers_and_its_deadline_fires_on_time() -> None:
    """fastmcp 4 never answers a cancelled call; a 1 s deadline must still fire at 1 s."""
    from toolnursery import install_timeout_policy

    pytest.importorskip("fastmcp")
    server = str(Path(__file__).parents[1] / "mcp_fastmcp_server.py")
    registry = ToolRegistry()
    install_timeout_policy(registry, default_timeout_ms=1000)
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, command=[sys.executable, server]) as mount:
            added = await registry.execute(call("add", {"a": 1, "b": 2}))
            start = trio.current_time()
            blocked = await registry.execute(call("block"))
            took = trio.current_time() - start
    assert mount.protocol_version == "2026-07-28"
    assert text(added) == "3"
    assert code(blocked) == "TOOL_TIMEOUT"
    assert 1.0 <= took < 2.0


@pytest.mark.parametrize("who", ["relister", "caller"])
async def test_a_listing_answered_as_the_mount_closes_registers_nothing(
    who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forced interleaving: a refresh's tools/list answer has arrived (from the
    real server) when the mount block ends; the refresh resumes only after the mount
    unregistered its tools. Nothing may be registered again."""
    from toolnursery import McpServerGoneError
    from toolnursery._mcp import _mount

    registry = ToolRegistry()
    real = _mount.list_all_tools
    armed = False
    answered = trio.Event()
    unregistered = trio.Event()
    registry.on_change(lambda: unregistered.set() if not registry.schemas() else None)

    async def answer_then_wait_for_the_close(session: Any) -> Any:
        tools = await real(session)
        if armed:
            answered.set()
            with trio.CancelScope(shield=True):  # the answer is in hand: keep it
                await unregistered.wait()
        return tools

    monkeypatch.setattr(_mount, "list_all_tools", answer_then_wait_for_the_close)
    refused: list[BaseException] = []

    async def refresh(mount: McpMount) -> None:
        try:
            await mount.refresh()
        except McpServerGoneError as exc:
            refused.append(exc)

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery, mounted("memory", registry) as (mount, _, _):
            assert registry.get("echo") is not None
            armed = True
            if who == "relister":
                await registry.execute(call("grow"))  # tools/list_changed
            else:
                nursery.start_soon(refresh, mount)
            await answered.wait()
    assert registry.schemas() == []
    assert registry.get("echo") is None
    assert registry.get("extra") is None
    if who == "caller":
        assert [str(exc) for exc in refused] == [
            f'MCP server "in-process:{fixture.build().name}" is gone: the mount was closed'
        ]


async def test_a_list_changed_storm_never_outlives_its_mount() -> None:
    """Tool list changes announced as fast as the server can, mounts closed at every
    point of them: after each block, none of the mount's tools is registered."""
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        for round in range(12):
            async with mounted("memory", registry) as (mount, _, _), trio.open_nursery() as storm:
                for _ in range(round % 4 + 1):
                    storm.start_soon(registry.execute, call("grow"))
                for _ in range(round % 3):
                    await trio.lowlevel.checkpoint()
                storm.cancel_scope.cancel()
            assert registry.schemas() == [], f"round {round}: {mount.names}"
