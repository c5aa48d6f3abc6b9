"""The bundled example tools: real file work, confined to a root directory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import code, text
from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    CancelSignal,
    ResourceKey,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionMode,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    ToolResult,
    ToolReturn,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._examples import _views as example_views
from toolnursery.examples import (
    OutsideRootError,
    example_registry,
    example_tools,
    fill_sandbox,
)
from toolnursery.presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    call_view,
    render_markdown,
    render_terminal,
    result_view,
)

TOOLS = ["read_file", "list_dir", "search_text", "write_file", "move_path", "sleep"]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("TODO: the secret\n")
    return secret


@pytest.fixture
def registry(root: Path) -> ToolRegistry:
    return example_registry(root)


async def call(registry: ToolRegistry, name: str, args: Any) -> ToolExecutionResult:
    return await registry.execute(ToolExecutionInput("c1", name, args))


# -- the registry -------------------------------------------------------------------------


def test_fill_sandbox_writes_a_small_project(tmp_path: Path) -> None:
    written = fill_sandbox(tmp_path)
    assert written == ["README.md", "notes/ideas.md", "src/app.py", "src/util.py"]
    assert all((tmp_path / name).is_file() for name in written)


def test_the_registry_holds_the_six_tools_with_json_schema_parameters(
    registry: ToolRegistry,
) -> None:
    schemas = {s.name: s for s in registry.schemas()}
    assert list(schemas) == TOOLS
    for schema in schemas.values():
        assert schema.parameters["type"] == "object"
        assert schema.description
        for prop in schema.parameters["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "boolean"}
            assert prop["description"]
    assert schemas["read_file"].parameters["required"] == ["path"]
    assert schemas["write_file"].parameters["required"] == ["path", "content"]
    assert schemas["search_text"].parameters["required"] == ["pattern"]
    assert schemas["list_dir"].parameters["required"] == []
    assert schemas["move_path"].parameters["required"] == ["source", "destination"]
    assert schemas["sleep"].parameters["properties"]["seconds"]["maximum"] == 60


def mode_of(registry: ToolRegistry, name: str, args: Any) -> ToolExecutionMode:
    return registry.execution_mode(ToolExecutionInput("c", name, args))


def test_file_tools_are_keyed_move_is_exclusive_and_sleep_is_parallel(
    registry: ToolRegistry,
) -> None:
    modes = {
        "read_file": mode_of(registry, "read_file", {"path": "src/app.py"}),
        "list_dir": mode_of(registry, "list_dir", {}),
        "search_text": mode_of(registry, "search_text", {"pattern": "x", "path": "src"}),
        "write_file": mode_of(registry, "write_file", {"path": "src/new.py", "content": ""}),
        "move_path": mode_of(registry, "move_path", {"source": "a", "destination": "b"}),
        "sleep": mode_of(registry, "sleep", {"seconds": 1}),
    }
    assert modes == {
        "read_file": ToolExecutionMode("keyed", (ResourceKey.read("file:src/app.py"),)),
        "list_dir": ToolExecutionMode("keyed", (ResourceKey.write("tree:."),)),
        "search_text": ToolExecutionMode("keyed", (ResourceKey.write("tree:src"),)),
        "write_file": ToolExecutionMode(
            "keyed",
            (
                ResourceKey.read("file:src"),
                ResourceKey.write("file:src/new.py"),
                ResourceKey.read("tree:."),
                ResourceKey.read("tree:src"),
                ResourceKey.read("tree:src/new.py"),
            ),
        ),
        "move_path": EXCLUSIVE,
        "sleep": PARALLEL,
    }


def test_keys_name_the_resolved_root_relative_path(
    registry: ToolRegistry, root: Path, tmp_path: Path
) -> None:
    (root / "alias.md").symlink_to(root / "notes/ideas.md")
    (root / "docs").symlink_to(root / "notes", target_is_directory=True)
    expected = ToolExecutionMode("keyed", (ResourceKey.read("file:notes/ideas.md"),))
    for path in ["notes/ideas.md", "./notes//ideas.md", "src/../notes/ideas.md", "alias.md"]:
        assert mode_of(registry, "read_file", {"path": path}) == expected, path
    assert mode_of(registry, "read_file", {"path": str(root / "docs/ideas.md")}) == expected
    for path in [".", "", str(root), "src/.."]:
        assert mode_of(registry, "list_dir", {"path": path}).keys == (
            ResourceKey.write("tree:."),
        ), path
    assert mode_of(registry, "search_text", {"pattern": "x", "path": "docs"}).keys == (
        ResourceKey.write("tree:notes"),
    )


def test_a_write_takes_a_write_of_each_directory_it_creates(registry: ToolRegistry) -> None:
    mode = mode_of(registry, "write_file", {"path": "notes/new/deeper/x.md", "content": ""})
    assert mode.keys == (
        ResourceKey.read("file:notes"),
        ResourceKey.write("file:notes/new"),
        ResourceKey.write("file:notes/new/deeper"),
        ResourceKey.write("file:notes/new/deeper/x.md"),
        ResourceKey.read("tree:."),
        ResourceKey.read("tree:notes"),
        ResourceKey.read("tree:notes/new"),
        ResourceKey.read("tree:notes/new/deeper"),
        ResourceKey.read("tree:notes/new/deeper/x.md"),
    )
    at_root = mode_of(registry, "write_file", {"path": "top.md", "content": ""})
    assert at_root.keys == (
        ResourceKey.write("file:top.md"),
        ResourceKey.read("tree:."),
        ResourceKey.read("tree:top.md"),
    )


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"file": "README.md"}),
        ("read_file", {"path": "a\x00b"}),
        ("list_dir", {"path": "../"}),
        ("list_dir", {"path": 3}),
        ("search_text", {"pattern": "x", "path": "src/../.."}),
        ("search_text", {"path": "src"}),
        ("write_file", {"path": "../new.txt", "content": "x"}),
        ("write_file", {"path": "escape.txt", "content": "x"}),
        ("write_file", {"path": "notes/x.md"}),
        ("write_file", "not an object"),
    ],
)
def test_a_path_outside_the_root_or_invalid_arguments_make_the_call_exclusive(
    registry: ToolRegistry, root: Path, outside: Path, tool: str, args: Any
) -> None:
    (root / "escape.txt").symlink_to(outside)
    assert mode_of(registry, tool, args) == EXCLUSIVE


def test_the_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="missing"):
        example_registry(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        example_tools(tmp_path / "file")


# -- read_file / list_dir / search_text / write_file / sleep ------------------------------


async def test_read_file_returns_the_text(registry: ToolRegistry, root: Path) -> None:
    result = await call(registry, "read_file", {"path": "src/util.py"})
    assert result == ToolExecutionResult(
        (TextContent((root / "src/util.py").read_text()),), False, meta={"lines": 2}
    )


async def test_read_file_truncates_at_max_bytes(registry: ToolRegistry) -> None:
    result = await call(registry, "read_file", {"path": "README.md", "max_bytes": 6})
    assert text(result) == "# Demo\n[truncated after 6 bytes]"


async def test_read_file_does_not_dump_binary_files(registry: ToolRegistry, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x89PNG\x00\x01")
    result = await call(registry, "read_file", {"path": "blob.bin"})
    assert text(result) == '"blob.bin" is a binary file; read_file shows text only'


@pytest.mark.parametrize(
    ("path", "expected_code", "message"),
    [
        ("missing.txt", "NOT_FOUND", 'Error: cannot read "missing.txt": no such file or directory'),
        ("src", "IS_A_DIRECTORY", 'Error: "src" is a directory; use list_dir'),
    ],
)
async def test_read_file_failures_are_coded_results(
    registry: ToolRegistry, path: str, expected_code: str, message: str
) -> None:
    result = await call(registry, "read_file", {"path": path})
    assert result.is_error
    assert code(result) == expected_code
    assert text(result) == message


async def test_list_dir_marks_directories(registry: ToolRegistry, root: Path) -> None:
    assert text(await call(registry, "list_dir", {})) == "README.md\nnotes/\nsrc/"
    assert text(await call(registry, "list_dir", {"path": "src"})) == "app.py\nutil.py"
    (root / "empty").mkdir()
    assert text(await call(registry, "list_dir", {"path": "empty"})) == '"empty" is empty'
    result = await call(registry, "list_dir", {"path": "README.md"})
    assert code(result) == "NOT_A_DIRECTORY"
    assert code(await call(registry, "list_dir", {"path": "nowhere"})) == "NOT_FOUND"


async def test_search_text_lists_matching_lines_with_numbers(registry: ToolRegistry) -> None:
    result = await call(registry, "search_text", {"pattern": "TODO"})
    assert text(result) == (
        "README.md:4: TODO: write the real README.\n"
        'src/app.py:2: print("hello")  # TODO: greet by name\n'
        "2 matches in 2 files"
    )


async def test_search_text_options(registry: ToolRegistry) -> None:
    folded = await call(registry, "search_text", {"pattern": "todo", "ignore_case": True})
    assert text(folded).endswith("2 matches in 2 files")
    assert text(await call(registry, "search_text", {"pattern": "todo"})) == (
        'no matches for "todo"'
    )
    capped = await call(registry, "search_text", {"pattern": "TODO", "max_results": 1})
    assert text(capped) == (
        "README.md:4: TODO: write the real README.\n1 match in 1 file (stopped at max_results=1)"
    )
    one_file = await call(registry, "search_text", {"pattern": "def", "path": "src/util.py"})
    assert text(one_file) == "src/util.py:1: def add(a: int, b: int) -> int:\n1 match in 1 file"
    missing = await call(registry, "search_text", {"pattern": "x", "path": "nowhere"})
    assert code(missing) == "NOT_FOUND"
    empty = await call(registry, "search_text", {"pattern": ""})
    assert text(empty) == 'Error: invalid arguments: "pattern" must not be empty'


async def test_search_text_never_follows_links_out_of_the_root(
    registry: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    (root / "inner.txt").symlink_to(root / "README.md")
    result = await call(registry, "search_text", {"pattern": "TODO"})
    assert "the secret" not in text(result)
    # A link to a file inside the root is followed, and reported under its own name.
    assert "inner.txt:4: TODO: write the real README." in text(result)
    assert text(result).endswith("3 matches in 3 files")


async def test_search_text_stops_when_its_signal_has_fired(registry: ToolRegistry) -> None:
    definition = registry.get("search_text")
    assert definition is not None
    signal = CancelSignal()
    signal.cancel("stop")
    args = {"pattern": "TODO"}
    execution = ToolExecution("c1", "search_text", args, signal, None, None, ToolExecutionToken())
    found = definition.execute(args, ToolRunContext(execution, signal, []))
    assert found == ToolReturn(
        [TextContent('no matches for "TODO"')], meta={"matches": 0, "files": 0}
    )


async def test_write_file_creates_and_replaces(registry: ToolRegistry, root: Path) -> None:
    created = await call(registry, "write_file", {"path": "notes/new/a.md", "content": "héllo"})
    assert text(created) == 'created "notes/new/a.md" (6 bytes)'
    assert (root / "notes/new/a.md").read_text(encoding="utf-8") == "héllo"
    replaced = await call(registry, "write_file", {"path": "notes/new/a.md", "content": ""})
    assert text(replaced) == 'replaced "notes/new/a.md" (0 bytes)'
    assert (root / "notes/new/a.md").read_text() == ""
    onto_dir = await call(registry, "write_file", {"path": "src", "content": "x"})
    assert code(onto_dir) == "IS_A_DIRECTORY"
    assert (root / "src").is_dir()


async def test_absolute_paths_inside_the_root_are_fine(registry: ToolRegistry, root: Path) -> None:
    result = await call(registry, "read_file", {"path": str(root / "README.md")})
    assert not result.is_error


async def test_a_root_reached_through_a_symlink_works(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(root, target_is_directory=True)
    registry = example_registry(link)
    assert not (await call(registry, "read_file", {"path": "README.md"})).is_error
    assert not (await call(registry, "read_file", {"path": str(link / "README.md")})).is_error


async def test_sleep_sleeps_and_is_cancellable(
    registry: ToolRegistry, autojump_clock: trio.abc.Clock
) -> None:
    start = trio.current_time()
    result = await call(registry, "sleep", {"seconds": 1.5})
    assert text(result) == "slept 1.5s"
    assert trio.current_time() - start == pytest.approx(1.5)

    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        results: list[ToolExecutionResult] = []

        async def run() -> None:
            results.append(
                await registry.execute(ToolExecutionInput("c2", "sleep", {"seconds": 60}, signal))
            )

        nursery.start_soon(run)
        await trio.sleep(1)
        signal.cancel("enough")
    assert code(results[0]) == "ABORTED"


async def test_move_path_moves_files_and_directories(registry: ToolRegistry, root: Path) -> None:
    moved = await call(
        registry, "move_path", {"source": "notes/ideas.md", "destination": "old/ideas.md"}
    )
    assert moved == ToolExecutionResult(
        (TextContent('moved "notes/ideas.md" to "old/ideas.md"'),), False, meta={"moved": "file"}
    )
    assert (root / "old/ideas.md").read_text().startswith("- parallel reads")
    assert not (root / "notes/ideas.md").exists()
    folder = await call(registry, "move_path", {"source": "src", "destination": "lib"})
    assert text(folder) == 'moved "src" to "lib"'
    assert folder.meta == {"moved": "directory"}
    assert sorted(p.name for p in (root / "lib").iterdir()) == ["app.py", "util.py"]


@pytest.mark.parametrize(
    ("source", "destination", "code_", "message"),
    [
        ("nowhere.md", "x.md", "NOT_FOUND", 'cannot move "nowhere.md": no such file or directory'),
        (
            "README.md",
            "src/app.py",
            "ALREADY_EXISTS",
            'cannot move to "src/app.py": it already exists',
        ),
        ("README.md", "src", "ALREADY_EXISTS", 'cannot move to "src": it already exists'),
        (".", "elsewhere", "OS_ERROR", "cannot move the root directory"),
        (
            "../secret.txt",
            "in.txt",
            "OUTSIDE_ROOT",
            'path "../secret.txt" is outside the root directory',
        ),
        (
            "README.md",
            "../out.md",
            "OUTSIDE_ROOT",
            'path "../out.md" is outside the root directory',
        ),
    ],
)
async def test_move_path_failures_touch_nothing(
    registry: ToolRegistry,
    root: Path,
    tmp_path: Path,
    outside: Path,
    source: str,
    destination: str,
    code_: str,
    message: str,
) -> None:
    before = sorted(tmp_path.rglob("*"))
    result = await call(registry, "move_path", {"source": source, "destination": destination})
    assert code(result) == code_
    assert text(result) == f"Error: {message}"
    assert sorted(tmp_path.rglob("*")) == before


async def test_search_text_reads_only_its_own_tree(registry: ToolRegistry, root: Path) -> None:
    # src/linked.md -> notes/ideas.md: outside the searched tree "src", so not read
    # (the call's keys cover src and nothing else); searched from the root, it is.
    (root / "src/linked.md").symlink_to(root / "notes/ideas.md")
    in_src = await call(registry, "search_text", {"pattern": "parallel", "path": "src"})
    assert text(in_src) == 'no matches for "parallel"'
    everywhere = await call(registry, "search_text", {"pattern": "parallel"})
    assert text(everywhere).splitlines() == [
        "notes/ideas.md:1: - parallel reads",
        "src/linked.md:1: - parallel reads",
        "2 matches in 2 files",
    ]


class Timeline:
    """When each dispatch started and ended, in order: an ``on_execute`` wrapper.

    No clock: the events' order is the scheduler's. The call ``hold`` stays in dispatch
    after its body returned: until the call ``release`` is done (a deadlock unless the
    two overlap), or without ``release`` until every task is blocked — by then a call
    that does not wait for it has started.
    """

    def __init__(self, registry: ToolRegistry, hold: str = "", release: str = "") -> None:
        self.events: list[str] = []
        self.hold, self.release = hold, release
        self.released = trio.Event()
        registry.on_execute(self.watch)

    async def watch(
        self, view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        self.events.append(f"start {view.call_id}")
        try:
            result = await next_()
            if view.call_id == self.release:
                self.released.set()
            elif view.call_id == self.hold:
                if self.release:
                    await self.released.wait()
                else:
                    await trio.testing.wait_all_tasks_blocked()
            return result
        finally:
            self.events.append(f"end {view.call_id}")


WAITS, OVERLAPS = "waits for", "overlaps"
W_A = ("write_file", {"path": "a.txt", "content": "new\n"})
PAIRS: list[tuple[tuple[str, dict[str, Any]], str, tuple[str, dict[str, Any]]]] = [
    (("read_file", {"path": "a.txt"}), WAITS, W_A),
    (("read_file", {"path": "b.txt"}), OVERLAPS, W_A),
    (W_A, WAITS, ("read_file", {"path": "a.txt"})),
    (W_A, WAITS, W_A),
    (W_A, OVERLAPS, ("write_file", {"path": "b.txt", "content": "new\n"})),
    (
        ("write_file", {"path": "sub/a.txt", "content": "x"}),
        OVERLAPS,
        ("write_file", {"path": "sub/b.txt", "content": "x"}),
    ),
    (("read_file", {"path": "a.txt"}), OVERLAPS, ("read_file", {"path": "a.txt"})),
    (("list_dir", {"path": "sub"}), WAITS, ("write_file", {"path": "sub/new.txt", "content": ""})),
    (("write_file", {"path": "sub/new.txt", "content": ""}), WAITS, ("list_dir", {})),
    (
        ("list_dir", {"path": "other"}),
        OVERLAPS,
        ("write_file", {"path": "sub/new.txt", "content": ""}),
    ),
    (
        ("search_text", {"pattern": "x"}),
        WAITS,
        ("write_file", {"path": "sub/a.txt", "content": ""}),
    ),
    (
        ("write_file", {"path": "sub/a.txt", "content": ""}),
        WAITS,
        ("search_text", {"pattern": "x", "path": "sub"}),
    ),
    (
        ("search_text", {"pattern": "x", "path": "other"}),
        OVERLAPS,
        ("write_file", {"path": "sub/a.txt", "content": ""}),
    ),
    (
        ("search_text", {"pattern": "x", "path": "sub"}),
        OVERLAPS,
        ("read_file", {"path": "sub/a.txt"}),
    ),
    (("list_dir", {"path": "sub"}), WAITS, ("search_text", {"pattern": "x", "path": "sub"})),
    (W_A, OVERLAPS, ("sleep", {"seconds": 0})),
]


def pair_id(pair: tuple[tuple[str, dict[str, Any]], str, tuple[str, dict[str, Any]]]) -> str:
    (first, first_args), expect, (second, second_args) = pair
    return (
        f"{first}({first_args.get('path', '.')}) {expect} {second}({second_args.get('path', '')})"
    )


@pytest.mark.parametrize(("first", "expect", "second"), PAIRS, ids=[pair_id(p) for p in PAIRS])
async def test_the_keys_order_exactly_the_calls_that_conflict(
    root: Path,
    first: tuple[str, dict[str, Any]],
    expect: str,
    second: tuple[str, dict[str, Any]],
) -> None:
    for name in ["a.txt", "b.txt", "sub/a.txt", "sub/b.txt", "other/c.txt"]:
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text("x\n")
    registry = example_registry(root)
    for name, args in (first, second):
        assert mode_of(registry, name, args).kind in {"keyed", "parallel"}
    # The first call stays in dispatch until the second is done (which deadlocks, and
    # times out, unless they overlap), or until every task is blocked (by then a second
    # call that does not wait for it has started).
    timeline = Timeline(registry, hold="1", release="2" if expect == OVERLAPS else "")
    calls = [
        ToolCall("1", first[0], msgspec.json.encode(first[1]).decode()),
        ToolCall("2", second[0], msgspec.json.encode(second[1]).decode()),
    ]
    with trio.fail_after(10):  # the real clock: bodies run in threads
        results = await run_tool_calls(registry, calls)
    assert [r.is_error for r in results] == [False, False], [text(r) for r in results]
    if expect == WAITS:
        assert timeline.events == ["start 1", "end 1", "start 2", "end 2"]
    else:
        assert timeline.events == ["start 1", "start 2", "end 2", "end 1"]


async def test_a_write_waits_for_a_read_of_its_file_and_overlaps_a_read_of_another(
    registry: ToolRegistry, root: Path
) -> None:
    (root / "a.txt").write_text("old a\n")
    (root / "b.txt").write_text("b\n")
    timeline = Timeline(registry, hold="read-b", release="write-a")
    calls = [
        ToolCall("read-a", "read_file", '{"path": "a.txt"}'),
        ToolCall("read-b", "read_file", '{"path": "b.txt"}'),
        ToolCall("write-a", "write_file", '{"path": "a.txt", "content": "new a\\n"}'),
    ]
    with trio.fail_after(10):  # the real clock: bodies run in threads
        results = await run_tool_calls(registry, calls)
    events = timeline.events
    assert events.index("end read-a") < events.index("start write-a")
    assert events.index("start read-b") < events.index("end write-a") < events.index("end read-b")
    assert [text(r) for r in results] == ["old a\n", "b\n", 'replaced "a.txt" (6 bytes)']


async def test_a_move_is_a_barrier(
    registry: ToolRegistry, root: Path, autojump_clock: trio.abc.Clock
) -> None:
    timeline = Timeline(registry)
    calls = [
        ToolCall("a", "sleep", '{"seconds": 2}'),
        ToolCall("b", "write_file", '{"path": "notes/x.md", "content": "x"}'),
        ToolCall("c", "move_path", '{"source": "notes/x.md", "destination": "notes/y.md"}'),
        ToolCall("d", "read_file", '{"path": "notes/y.md"}'),
        ToolCall("e", "sleep", '{"seconds": 1}'),
    ]
    start = trio.current_time()
    results = await run_tool_calls(registry, calls)
    assert trio.current_time() - start == pytest.approx(3.0)
    events = timeline.events
    move = events.index("start c")
    assert sorted(events[:move]) == ["end a", "end b", "start a", "start b"]
    assert events[move : move + 2] == ["start c", "end c"]
    assert sorted(events[move + 2 :]) == ["end d", "end e", "start d", "start e"]
    assert [text(r) for r in results] == [
        "slept 2s",
        'created "notes/x.md" (1 bytes)',
        'moved "notes/x.md" to "notes/y.md"',
        "x",
        "slept 1s",
    ]


# -- confinement ----------------------------------------------------------------------------


ESCAPES = ["../secret.txt", "src/../../secret.txt", "/etc/passwd"]


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("tool", ["read_file", "list_dir", "search_text"])
async def test_paths_that_escape_the_root_are_refused(
    registry: ToolRegistry, outside: Path, tool: str, path: str
) -> None:
    args = {"path": path, "pattern": "TODO"}
    result = await call(registry, tool, args)
    assert result.is_error
    assert code(result) == "OUTSIDE_ROOT"
    assert result.error is not None
    assert result.error.name == "OutsideRootError"
    assert text(result) == f'Error: path "{path}" is outside the root directory'
    assert "the secret" not in text(result)


async def test_reading_through_a_symlink_that_points_out_is_refused(
    registry: ToolRegistry, root: Path, outside: Path
) -> None:
    (root / "escape.txt").symlink_to(outside)
    result = await call(registry, "read_file", {"path": "escape.txt"})
    assert code(result) == "OUTSIDE_ROOT"
    assert "the secret" not in text(result)


async def test_writes_that_escape_the_root_never_touch_the_target(
    registry: ToolRegistry, root: Path, outside: Path, tmp_path: Path
) -> None:
    (root / "escape.txt").symlink_to(outside)
    (root / "outdir").symlink_to(tmp_path, target_is_directory=True)
    (root / "dangling").symlink_to(tmp_path / "created-by-write.txt")
    before = outside.read_text()
    for path in [
        "escape.txt",
        "outdir/new.txt",
        "dangling",
        "../new.txt",
        str(tmp_path / "abs.txt"),
    ]:
        result = await call(registry, "write_file", {"path": path, "content": "pwned"})
        assert code(result) == "OUTSIDE_ROOT", path
    assert outside.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root", "secret.txt"]


def test_outside_root_error_carries_the_path() -> None:
    error = OutsideRootError("../x")
    assert error.path == "../x"
    assert error.code == "OUTSIDE_ROOT"
    assert error.message == 'path "../x" is outside the root directory'


# -- argument validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read_file", {}, 'missing required property "path"'),
        ("read_file", {"path": None}, '"path" must be a string'),
        (
            "read_file",
            {"path": 3, "max_bytes": True},
            '"path" must be a string; "max_bytes" must be an integer',
        ),
        ("read_file", {"path": "a", "max_bytes": 1.5}, '"max_bytes" must be an integer'),
        ("read_file", {"path": "a", "max_bytes": 0}, '"max_bytes" must be between 1 and 10000000'),
        ("read_file", {"path": "a\x00b"}, '"path" must not contain NUL characters'),
        ("read_file", "not json", '"arguments" must be an object'),
        ("read_file", ["README.md"], '"arguments" must be an object'),
        ("list_dir", {"path": ["src"]}, '"path" must be a string'),
        ("search_text", {"pattern": "x", "ignore_case": "yes"}, '"ignore_case" must be a boolean'),
        (
            "write_file",
            {},
            'missing required property "path"; missing required property "content"',
        ),
        ("write_file", {"path": "notes/a", "content": 5}, '"content" must be a string'),
        ("move_path", {"source": "README.md"}, 'missing required property "destination"'),
        (
            "move_path",
            {"source": 1, "destination": None},
            '"source" must be a string; "destination" must be a string',
        ),
        ("sleep", {"seconds": "1"}, '"seconds" must be a number'),
        ("sleep", {"seconds": -1}, '"seconds" must be between 0 and 60'),
        ("sleep", {"seconds": 61}, '"seconds" must be between 0 and 60'),
    ],
)
async def test_each_tool_validates_its_own_arguments(
    registry: ToolRegistry, root: Path, tool: str, args: Any, message: str
) -> None:
    files_before = sorted(root.rglob("*"))
    result = await call(registry, tool, args)
    assert result.is_error
    assert code(result) == "INVALID_ARGS"
    assert result.error is not None
    assert result.error.name == "ToolArgsError"
    assert text(result) == f"Error: invalid arguments: {message}"
    assert sorted(root.rglob("*")) == files_before


async def test_extra_arguments_are_ignored(registry: ToolRegistry) -> None:
    result = await call(registry, "read_file", {"path": "README.md", "encoding": "utf-8"})
    assert not result.is_error


async def test_results_survive_a_json_round_trip(registry: ToolRegistry) -> None:
    result = await call(registry, "search_text", {"pattern": "TODO"})
    encoded = msgspec.json.encode(result)
    assert msgspec.json.decode(encoded, type=ToolExecutionResult) == result


# -- presentation -------------------------------------------------------------------------------


def presenters(registry: ToolRegistry, name: str) -> ToolDefinition:
    definition = registry.get(name)
    assert definition is not None
    assert definition.present_call is not None
    assert definition.present_result is not None
    return definition


def shown(definition: ToolDefinition, args: Any, result: ToolExecutionResult) -> Any:
    return result_view(definition, args, result)


@pytest.mark.parametrize(
    ("tool", "args", "view"),
    [
        (
            "read_file",
            {"path": "src/app.py", "max_bytes": 10},
            GenericCallView(
                title="Read src/app.py", kind="read", locations=(FileLocation(path="src/app.py"),)
            ),
        ),
        (
            "list_dir",
            {},
            GenericCallView(title="List .", kind="read", locations=(FileLocation(path="."),)),
        ),
        ("search_text", {"pattern": "TODO"}, GenericCallView(title='Search "TODO"', kind="search")),
        (
            "search_text",
            {"pattern": "x", "path": "src"},
            GenericCallView(
                title='Search "x" in src', kind="search", locations=(FileLocation(path="src"),)
            ),
        ),
        (
            "write_file",
            {"path": "notes/a.md", "content": "hi\n"},
            DiffCallView(
                title="Write notes/a.md",
                diffs=(FileDiff(path="notes/a.md", old_text=None, new_text="hi\n"),),
                locations=(FileLocation(path="notes/a.md"),),
            ),
        ),
        (
            "move_path",
            {"source": "a.md", "destination": "b/a.md"},
            GenericCallView(
                title="Move a.md to b/a.md",
                kind="move",
                locations=(FileLocation(path="a.md"), FileLocation(path="b/a.md")),
            ),
        ),
        ("sleep", {"seconds": 0.05}, TerminalCallView(title="sleep 0.05")),
        ("sleep", {"seconds": 2}, TerminalCallView(title="sleep 2")),
    ],
)
def test_each_tool_presents_its_call(
    registry: ToolRegistry, tool: str, args: Any, view: ToolCallView
) -> None:
    assert call_view(presenters(registry, tool), args) == view


@pytest.mark.parametrize(
    ("tool", "args", "title"),
    [
        ("read_file", {"path": "README.md"}, "Read README.md: 4 lines"),
        ("read_file", {"path": "README.md", "max_bytes": 6}, "Read README.md: 1 line, truncated"),
        ("read_file", {"path": "empty.txt"}, "Read empty.txt: 0 lines"),
        ("read_file", {"path": "blob.bin"}, "Read blob.bin: binary file"),
        ("list_dir", {"path": "src"}, "List src: 2 entries"),
        ("list_dir", {"path": "notes"}, "List notes: 1 entry"),
        ("list_dir", {"path": "hollow"}, "List hollow: 0 entries"),
        ("search_text", {"pattern": "TODO"}, 'Search "TODO": 2 matches in 2 files'),
        (
            "search_text",
            {"pattern": "def", "path": "src"},
            'Search "def" in src: 2 matches in 2 files',
        ),
        ("search_text", {"pattern": "add("}, 'Search "add(": 1 match in 1 file'),
        ("search_text", {"pattern": "nothing-here"}, 'Search "nothing-here": no matches'),
        (
            "move_path",
            {"source": "notes/ideas.md", "destination": "old/ideas.md"},
            "Moved file notes/ideas.md to old/ideas.md",
        ),
        ("move_path", {"source": "src", "destination": "lib"}, "Moved directory src to lib"),
    ],
)
async def test_reads_present_their_results_from_meta(
    registry: ToolRegistry, root: Path, tool: str, args: Any, title: str
) -> None:
    (root / "blob.bin").write_bytes(b"\x89PNG\x00\x01")
    (root / "empty.txt").write_text("")
    (root / "hollow").mkdir()
    result = await call(registry, tool, args)
    assert not result.is_error
    assert shown(presenters(registry, tool), args, result) == GenericResultView(title=title)


async def test_a_write_presents_a_diff_with_the_old_text_when_it_is_known(
    registry: ToolRegistry, root: Path
) -> None:
    write = presenters(registry, "write_file")
    args = {"path": "notes/ideas.md", "content": "- parallel reads\n- typed outputs\n"}
    replaced = await call(registry, "write_file", args)
    assert replaced.meta == {"created": False, "old_text": "- parallel reads\n- exclusive writes\n"}
    assert shown(write, args, replaced) == DiffResultView(
        title="Replaced notes/ideas.md",
        diffs=(
            FileDiff(
                path="notes/ideas.md",
                old_text="- parallel reads\n- exclusive writes\n",
                new_text="- parallel reads\n- typed outputs\n",
            ),
        ),
    )
    fresh = {"path": "notes/new.md", "content": "new\n"}
    created = await call(registry, "write_file", fresh)
    assert created.meta == {"created": True}
    assert shown(write, fresh, created) == DiffResultView(
        title="Created notes/new.md",
        diffs=(FileDiff(path="notes/new.md", old_text=None, new_text="new\n"),),
    )
    assert render_terminal(
        call_view(write, args), shown(write, args, replaced), raw=replaced, width=44
    ) == (
        "╭─ Replaced notes/ideas.md ────────────────╮\n"
        "│ --- a/notes/ideas.md                     │\n"
        "│ +++ b/notes/ideas.md                     │\n"
        "│ @@ -1,2 +1,2 @@                          │\n"
        "│  - parallel reads                        │\n"
        "│ -- exclusive writes                      │\n"
        "│ +- typed outputs                         │\n"
        "╰─────────────────────────────────── done ─╯\n"
    )


@pytest.mark.parametrize(
    "before",
    [b"x" * (64 * 1024 + 1), b"\x00binary", b"\xff\xfe not utf-8"],
    ids=["large", "binary", "not-utf-8"],
)
async def test_a_write_keeps_no_before_image_of_large_or_binary_files(
    registry: ToolRegistry, root: Path, before: bytes
) -> None:
    (root / "big.dat").write_bytes(before)
    args = {"path": "big.dat", "content": "small"}
    result = await call(registry, "write_file", args)
    assert result.meta == {"created": False}
    assert shown(presenters(registry, "write_file"), args, result) == DiffResultView(
        title="Replaced big.dat",
        diffs=(FileDiff(path="big.dat", old_text=None, new_text="small"),),
    )
    assert (root / "big.dat").read_text() == "small"


async def test_sleep_presents_a_terminal_card(
    registry: ToolRegistry, autojump_clock: trio.abc.Clock
) -> None:
    sleep = presenters(registry, "sleep")
    done = await call(registry, "sleep", {"seconds": 1})
    assert shown(sleep, {"seconds": 1}, done) == TerminalResultView(output="slept 1s", exit_code=0)
    signal = CancelSignal()
    signal.cancel()
    aborted = await registry.execute(ToolExecutionInput("c2", "sleep", {"seconds": 1}, signal))
    assert aborted.is_error
    view = shown(sleep, {"seconds": 1}, aborted)
    assert view == TerminalResultView(output="Error: tool call aborted before dispatch")
    assert render_markdown(call_view(sleep, {"seconds": 1}), view, raw=aborted) == (
        "```console\n$ sleep 1\nError: tool call aborted before dispatch\n```\n\nFailed\n"
    )


@pytest.mark.parametrize("tool", TOOLS[:-1])
async def test_a_failed_file_call_keeps_the_generic_result(
    registry: ToolRegistry, tool: str
) -> None:
    args = {
        "path": "../outside",
        "pattern": "x",
        "content": "x",
        "source": "../outside",
        "destination": "y",
    }
    result = await call(registry, tool, args)
    assert result.is_error
    assert shown(presenters(registry, tool), args, result) is None


FOREIGN_ARGS: list[Any] = [
    None,
    "README.md",
    ["a"],
    {},
    {"path": 3},
    {"path": None, "pattern": None, "content": None, "seconds": "1"},
]
FOREIGN_META: list[Any] = [
    None,
    "x",
    [1],
    {"lines": "4"},
    {"lines": True},
    {"lines": -1},
    {"entries": None},
    {"matches": 1},
    {"created": "yes"},
    {"moved": "link"},
]


@pytest.mark.parametrize("tool", TOOLS)
def test_presenters_answer_none_for_foreign_args_and_meta(
    registry: ToolRegistry, tool: str
) -> None:
    definition = presenters(registry, tool)
    assert definition.present_call is not None
    assert definition.present_result is not None
    for args in FOREIGN_ARGS:
        if tool == "list_dir" and args == {}:
            continue  # every list_dir argument is optional
        assert definition.present_call(args) is None, args
        assert definition.present_result(args, ToolResult((TextContent("x"),), False)) is None
    valid = {
        "path": "a",
        "pattern": "p",
        "content": "c",
        "source": "a",
        "destination": "b",
        "seconds": 1,
    }
    for meta in FOREIGN_META:
        view = definition.present_result(valid, ToolResult((TextContent("x"),), False, meta))
        if tool == "sleep":
            assert view == TerminalResultView(output="x", exit_code=0)
        else:
            assert view is None, meta


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "path",
                    "pattern",
                    "content",
                    "source",
                    "destination",
                    "seconds",
                    "lines",
                    "created",
                    "old_text",
                    "moved",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=8,
)


# What the result presenters read from ``meta``, so generated metadata reaches every branch.
META_KEYS = [
    "lines",
    "binary",
    "truncated",
    "entries",
    "matches",
    "files",
    "created",
    "old_text",
    "moved",
]
meta_values = json_values | st.dictionaries(st.sampled_from(META_KEYS), json_values, max_size=5)


def accepted_arguments(parameters: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments a tool's own check accepts: its schema's types and bounds (and no NUL
    characters in a string), optional ones sometimes absent."""

    def value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
        low, high = schema.get("minimum"), schema.get("maximum")
        return {
            "string": st.text(st.characters(exclude_characters="\x00"), max_size=5),
            "boolean": st.booleans(),
            "integer": st.integers(low, high),
            "number": st.integers(low, high) | st.floats(low, high),
        }[schema["type"]]

    required = set(parameters["required"])
    properties = parameters["properties"]
    return st.fixed_dictionaries(
        {name: value(schema) for name, schema in properties.items() if name in required},
        optional={
            name: value(schema) for name, schema in properties.items() if name not in required
        },
    )


@pytest.fixture
def strict_presenters(
    monkeypatch: pytest.MonkeyPatch, root: Path
) -> tuple[ToolRegistry, ToolRegistry, set[Callable[..., Any]]]:
    """The example tools as shipped, and built again with wrappers that let a presenter raise.

    The shipped wrappers answer ``None`` for arguments the tool's check refuses and for a
    presenter that raises (a UI must not crash), which would hide a raising presenter from
    :func:`test_presenters_never_raise`: the strict ones answer ``None`` only for refused
    arguments. Returns the shipped registry, the strict one and the strict wrappers.
    """
    shipped = example_registry(root)
    strict: set[Callable[..., Any]] = set()

    def strict_call(validate: Callable[[Any], Any], present: Callable[..., Any]) -> Any:
        def present_call(args: Any) -> Any:
            try:
                values = validate(args)
            except Exception:
                return None
            return present(values)

        strict.add(present_call)
        return present_call

    def strict_result(validate: Callable[[Any], Any], present: Callable[..., Any]) -> Any:
        def present_result(args: Any, result: ToolResult) -> Any:
            try:
                values = validate(args)
            except Exception:
                return None
            return present(values, result)

        strict.add(present_result)
        return present_result

    monkeypatch.setattr(example_views, "present_call", strict_call)
    monkeypatch.setattr(example_views, "present_result", strict_result)
    return shipped, example_registry(root), strict


@given(
    tool=st.sampled_from(TOOLS),
    accepted=st.booleans(),
    data=st.data(),
    meta=meta_values,
    failed=st.booleans(),
)
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_presenters_never_raise(
    strict_presenters: tuple[ToolRegistry, ToolRegistry, set[Callable[..., Any]]],
    tool: str,
    accepted: bool,
    data: st.DataObject,
    meta: Any,
    failed: bool,
) -> None:
    """Every presenter answers a view or None for any arguments and any result metadata.

    The presenters run unguarded (see :func:`strict_presenters`), so one that raises fails
    here; arguments the tool accepts reach them, and get a call view.
    """
    shipped, registry, strict = strict_presenters
    definition = presenters(registry, tool)
    assert {definition.present_call, definition.present_result} <= strict
    args = data.draw(accepted_arguments(definition.parameters) if accepted else json_values)
    result = ToolResult((TextContent("x"),), failed, meta)
    pending = definition.present_call(args)
    completed = definition.present_result(args, result)
    if accepted:
        assert pending is not None, args
    assert pending is None or isinstance(pending, GenericCallView | DiffCallView | TerminalCallView)
    assert completed is None or isinstance(
        completed, GenericResultView | DiffResultView | TerminalResultView
    )
    # The shipped wrappers had nothing to swallow: they answer the same.
    assert presenters(shipped, tool).present_call(args) == pending
    assert presenters(shipped, tool).present_result(args, result) == completed
