"""The file tools and the filesystem's corners: special files and very long paths.

A FIFO used to hold ``read_file`` / ``write_file`` in a worker thread past the timeout
policy's deadline; a very long path gave an error without the ``OS_ERROR`` code whose
message showed the sandbox's absolute host path.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from toolnursery import (
    FileToolError,
    TextContent,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    install_timeout_policy,
)
from toolnursery.examples import example_registry, fill_sandbox

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sandbox = tmp_path / "root"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    os.mkfifo(sandbox / "pipe")
    return sandbox


@pytest.fixture
def registry(root: Path) -> ToolRegistry:
    registry = example_registry(root)
    install_timeout_policy(registry, default_timeout_ms=5000)
    return registry


def text(result: ToolExecutionResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def call_unblocking(
    registry: ToolRegistry, root: Path, name: str, args: Any
) -> tuple[ToolExecutionResult, float]:
    """Run one call on the real clock (a worker thread's time is real time).

    A watchdog opens both ends of the FIFO after 30 s, so a tool that blocks on it
    fails this test (with ``TOOL_TIMEOUT``, after the deadline) instead of hanging it.
    """
    result: list[ToolExecutionResult] = []

    async def watchdog() -> None:
        await trio.sleep(30)
        for flags in (os.O_WRONLY, os.O_RDONLY):
            try:
                os.close(os.open(root / "pipe", flags | os.O_NONBLOCK))
            except OSError:
                pass

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watchdog)
        result.append(await registry.execute(ToolExecutionInput("c1", name, args)))
        nursery.cancel_scope.cancel()
    return result[0], trio.current_time() - start


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("read_file", {"path": "pipe"}, 'cannot read "pipe": it is a FIFO'),
        ("write_file", {"path": "pipe", "content": "x"}, 'cannot write "pipe": it is a FIFO'),
        ("search_text", {"pattern": "x", "path": "pipe"}, 'cannot search "pipe": it is a FIFO'),
        (
            "move_path",
            {"source": "pipe", "destination": "moved"},
            'cannot move "pipe": it is a FIFO',
        ),
    ],
)
async def test_a_fifo_is_refused_at_once_with_a_named_code(
    registry: ToolRegistry,
    root: Path,
    name: str,
    args: Any,
    message: str,
) -> None:
    result, elapsed = await call_unblocking(registry, root, name, args)
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("FileToolError", "NOT_A_REGULAR_FILE")
    assert text(result) == f"Error: {message}, not a regular file or directory"
    assert elapsed < 5.0  # inside the deadline: nothing waited on the FIFO
    assert (root / "pipe").exists()
    assert not (root / "moved").exists()


async def test_a_search_over_a_tree_with_a_fifo_skips_it(
    registry: ToolRegistry, root: Path
) -> None:
    result, elapsed = await call_unblocking(registry, root, "search_text", {"pattern": "TODO"})
    assert not result.is_error, text(result)
    assert "TODO" in text(result)
    assert elapsed < 5.0


async def test_list_dir_of_a_fifo_is_not_a_directory(registry: ToolRegistry, root: Path) -> None:
    result, _ = await call_unblocking(registry, root, "list_dir", {"path": "pipe"})
    assert result.error is not None
    assert result.error.code == "NOT_A_DIRECTORY"


LONG_NAME = "n" * 300  # longer than any file name may be (ENAMETOOLONG)
LONG_PATH = "/".join(["d" * 200] * 30)  # longer than any path may be


@pytest.mark.parametrize("long", [LONG_NAME, LONG_PATH], ids=["name", "path"])
@pytest.mark.parametrize(
    ("name", "args", "action"),
    [
        ("write_file", {"content": "x"}, "write"),
        ("search_text", {"pattern": "x"}, "search"),
        ("move_path", {"destination": "elsewhere.md"}, "move"),
        ("move_path", {"source": "README.md"}, "move"),
        ("read_file", {}, "read"),
        ("list_dir", {}, "list"),
    ],
)
async def test_a_very_long_path_is_an_os_error_naming_root_relative_paths_only(
    registry: ToolRegistry, root: Path, long: str, name: str, args: Any, action: str
) -> None:
    key = "destination" if "source" in args else "source" if name == "move_path" else "path"
    result = await registry.execute(ToolExecutionInput("c1", name, {**args, key: long}))
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("FileToolError", "OS_ERROR")
    message = text(result)
    assert str(root) not in message
    assert str(root.parent) not in message
    shown = "README.md" if key == "destination" else f"{long[:60]}…{long[-60:]}"
    assert message == f'Error: cannot {action} "{shown}": {os.strerror(errno.ENAMETOOLONG)}'


def test_file_tool_errors_are_tool_errors_with_codes() -> None:
    error = FileToolError("cannot read", code="OS_ERROR")
    assert (error.name, error.code, error.message) == ("FileToolError", "OS_ERROR", "cannot read")
