"""Rendering views as Markdown and terminal text (B200, B202, B204), against goldens.

The expected texts live in ``tests/golden/<case>.md`` and ``<case>.txt`` (terminal,
48 cells wide). After an intended layout change, regenerate them with
``python tests/tools/test_render.py`` and review the diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnursery._core._content import ImageContent, TextContent, ToolExecutionResult, ToolResult
from toolnursery._tools._presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    ToolResultView,
)
from toolnursery._tools._render import (
    RawResult,
    render_markdown,
    render_terminal,
    unified_diff_lines,
)

GOLDEN = Path(__file__).parents[1] / "golden"
WIDTH = 48


def ok(text: str) -> ToolResult:
    return ToolResult(content=(TextContent(text=text),), is_error=False)


def failed(text: str) -> ToolResult:
    return ToolResult(content=(TextContent(text=text),), is_error=True)


OLD = "def f():\n    return 1\n\n\nprint(f())\n"
NEW = "def f():\n    return 2\n\n\nprint(f())\n"

Case = tuple[ToolCallView, ToolResultView | None, RawResult | None]
CASES: dict[str, Case] = {
    "generic_pending": (
        GenericCallView(
            title="Read notes.md",
            kind="read",
            raw_input={"path": "notes.md", "limit": 20},
            content=(TextContent(text="Reading the *first* 20 lines."),),
            locations=(FileLocation(path="notes.md", line=1), FileLocation(path="b.md")),
        ),
        None,
        None,
    ),
    "generic_raw_error": (
        GenericCallView(title="Read notes.md", kind="read", raw_input="notes.md"),
        None,
        failed("Error: notes.md: no such file"),
    ),
    "generic_result": (
        GenericCallView(title="Search todo", kind="other"),
        GenericResultView(
            title="3 matches for todo",
            content=(
                TextContent(text="- a.py:3\n- b.py:9"),
                ImageContent(data="iVBOR", mime_type="image/png"),
            ),
        ),
        ok("a.py:3: todo\nb.py:9: todo"),
    ),
    "terminal_pending": (
        TerminalCallView(title="make build", description="Build the wheel", cwd="/work/app"),
        None,
        None,
    ),
    "terminal_done": (
        TerminalCallView(title="pytest -q", description="Run the test suite", cwd="/work/app"),
        TerminalResultView(output="..F\n1 failed, 2 passed\n", exit_code=1),
        ok("exit code 1\n..F\n1 failed, 2 passed"),
    ),
    "terminal_killed": (
        TerminalCallView(title="sleep 100"),
        TerminalResultView(signal="SIGTERM"),
        failed("Error: killed"),
    ),
    "diff_pending": (
        DiffCallView(
            title="Write hello.py",
            diffs=(FileDiff(path="hello.py", old_text=None, new_text="print('hi')\n"),),
            locations=(FileLocation(path="hello.py"),),
        ),
        None,
        None,
    ),
    "diff_done": (
        DiffCallView(
            title="Edit f.py", diffs=(FileDiff(path="f.py", old_text=None, new_text=NEW),)
        ),
        DiffResultView(
            title="Edited f.py",
            diffs=(FileDiff(path="f.py", old_text=OLD, new_text=NEW.rstrip("\n")),),
        ),
        ok("Edited f.py"),
    ),
}


def render_case(name: str) -> tuple[str, str]:
    call, result, raw = CASES[name]
    return render_markdown(call, result, raw=raw), render_terminal(
        call, result, raw=raw, width=WIDTH
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_markdown_and_terminal(name: str) -> None:
    markdown, terminal = render_case(name)
    assert markdown == (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    assert terminal == (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
    assert all(len(line) <= WIDTH for line in terminal.splitlines())


@pytest.mark.spec("B200")
def test_result_title_is_kept_when_omitted_and_raw_content_shown() -> None:
    call = GenericCallView(title="Fetch page")
    markdown = render_markdown(call, GenericResultView(), raw=ok("<html>"))
    assert markdown == "### Fetch page\n\n```text\n<html>\n```\n"
    terminal = render_terminal(call, GenericResultView(), raw=ok("<html>"), width=30)
    assert terminal.splitlines()[0].startswith("╭─ Fetch page ─")
    assert "<html>" in terminal


@pytest.mark.spec("B200")
def test_generic_result_content_replaces_raw_content() -> None:
    call = GenericCallView(title="Fetch page")
    view = GenericResultView(content=(TextContent(text="**Example Domain**"),))
    markdown = render_markdown(call, view, raw=ok("<html>"))
    assert markdown == "### Fetch page\n\n**Example Domain**\n"


@pytest.mark.spec("B202")
def test_without_a_result_view_the_raw_content_replaces_the_call_content() -> None:
    call = DiffCallView(
        title="Write a.txt", diffs=(FileDiff(path="a.txt", old_text=None, new_text="x"),)
    )
    assert render_markdown(call, raw=ok("wrote 1 byte")) == (
        "### Write a.txt\n\n```text\nwrote 1 byte\n```\n"
    )
    terminal = render_terminal(call, raw=ok("wrote 1 byte"), width=40)
    assert "wrote 1 byte" in terminal
    assert "+x" not in terminal
    assert "done" in terminal.splitlines()[-1]


@pytest.mark.spec("B202")
def test_raw_results_of_either_kind_are_accepted() -> None:
    call = GenericCallView(title="t")
    executed = ToolExecutionResult(content=(TextContent(text="Error: boom"),), is_error=True)
    assert render_markdown(call, raw=executed) == ("### t — failed\n\n```text\nError: boom\n```\n")
    assert "failed" in render_terminal(call, raw=executed).splitlines()[-1]


@pytest.mark.spec("B204")
def test_console_block_is_derived_from_output_not_the_raw_text() -> None:
    call = TerminalCallView(title="ls")
    view = TerminalResultView(output="a\nb\n", exit_code=0)
    markdown = render_markdown(call, view, raw=ok("MODEL-FACING TEXT"))
    assert markdown == "```console\n$ ls\na\nb\n```\n\nExit code 0\n"
    assert "MODEL-FACING" not in render_terminal(call, view, raw=ok("MODEL-FACING TEXT"))


@pytest.mark.spec("B204")
def test_a_failed_command_without_exit_status_says_failed() -> None:
    call = TerminalCallView(title="rm -rf /", cwd="relative/dir")
    markdown = render_markdown(call, raw=failed("Error: denied"))
    assert markdown == (
        "```console\nrelative/dir $ rm -rf /\n```\n\n```text\nError: denied\n```\n\nFailed\n"
    )


@pytest.mark.spec("B204")
def test_terminal_result_after_a_generic_call() -> None:
    call = GenericCallView(title="Run job", raw_input={"id": 7})
    view = TerminalResultView(output="done", exit_code=0)
    assert render_markdown(call, view, raw=ok("x")) == (
        '### Run job\n\n```json\n{\n  "id": 7\n}\n```\n\n```console\ndone\n```\n\nExit code 0\n'
    )


@pytest.mark.spec("B204")
def test_unified_diff_lines_for_new_unchanged_and_empty_files() -> None:
    assert unified_diff_lines(FileDiff(path="n.txt", old_text=None, new_text="a\nb")) == [
        "--- /dev/null",
        "+++ b/n.txt",
        "@@ -0,0 +1,2 @@",
        "+a",
        "+b",
        "\\ No newline at end of file",
    ]
    assert unified_diff_lines(FileDiff(path="s", old_text="same\n", new_text="same\n")) == [
        "--- a/s",
        "+++ b/s",
    ]
    assert unified_diff_lines(FileDiff(path="e", old_text=None, new_text="")) == [
        "--- /dev/null",
        "+++ b/e",
    ]
    # A form feed is an ordinary character, not a line break.
    assert unified_diff_lines(FileDiff(path="f", old_text="a\fb\n", new_text="a\fc\n"))[2:] == [
        "@@ -1 +1 @@",
        "-a\fb",
        "+a\fc",
    ]


def test_fences_grow_past_backticks_in_the_body() -> None:
    call = GenericCallView(title="Show")
    markdown = render_markdown(call, raw=ok("```py\nx\n```"))
    assert markdown == "### Show\n\n````text\n```py\nx\n```\n````\n"


def test_raw_text_blocks_share_a_fence_and_images_break_it() -> None:
    raw = ToolResult(
        content=(
            TextContent(text="one"),
            TextContent(text="two"),
            ImageContent(data="AAA", mime_type="image/gif"),
            TextContent(text="three"),
        ),
        is_error=False,
    )
    assert render_markdown(GenericCallView(title="x"), raw=raw) == (
        "### x\n\n```text\none\ntwo\n```\n\n![image](data:image/gif;base64,AAA)\n\n"
        "```text\nthree\n```\n"
    )


def test_an_empty_pending_card() -> None:
    assert render_markdown(GenericCallView(title="x")) == "### x\n"
    assert render_terminal(GenericCallView(title="x"), width=12) == ("╭─ x ──────╮\n╰──────────╯\n")


def test_a_note_stands_where_the_outcome_would_be() -> None:
    call = GenericCallView(title="Read a.md", kind="read")
    note = "no result recorded"
    assert render_markdown(call, note=note) == "### Read a.md (read)\n\n*No result recorded*\n"
    assert render_terminal(call, width=30, note=note + " (the batch did not finish)") == (
        "╭─ Read a.md (read) ─────────╮\n"
        "│ no result recorded (the    │\n"
        "│ batch did not finish)      │\n"
        "╰────────────────────────────╯\n"
    )
    # An outcome wins over the note.
    assert render_markdown(call, raw=ok("x"), note=note) == (
        "### Read a.md (read)\n\n```text\nx\n```\n"
    )
    assert note not in render_terminal(call, raw=ok("x"), width=40, note=note)
    command = TerminalCallView(title="make")
    assert render_markdown(
        command, TerminalResultView(exit_code=2), raw=ok(""), note=note
    ).endswith("Exit code 2\n")


def test_a_raw_text_s_final_newline_is_not_an_empty_line() -> None:
    call = GenericCallView(title="Read")
    assert render_markdown(call, raw=ok("a\nb\n")) == "### Read\n\n```text\na\nb\n```\n"
    assert render_terminal(call, raw=ok("a\nb\n"), width=12) == (
        "╭─ Read ───╮\n│ a        │\n│ b        │\n╰─── done ─╯\n"
    )
    # Only one: a deliberate blank last line stays.
    assert render_markdown(call, raw=ok("a\n\n")) == "### Read\n\n```text\na\n\n```\n"


@pytest.mark.parametrize("width", [20, 33, 80, 120])
def test_terminal_lines_fit_the_width(width: int) -> None:
    for call, result, raw in CASES.values():
        text = render_terminal(call, result, raw=raw, width=width)
        assert max(len(line) for line in text.splitlines()) <= width


def test_terminal_text_is_never_read_as_rich_markup() -> None:
    call = GenericCallView(title="[bold]x[/bold] :smile:", raw_input="[red]y[/red]")
    text = render_terminal(call, width=60)
    assert "[bold]x[/bold] :smile:" in text
    assert "[red]y[/red]" in text


def test_terminal_color_is_opt_in() -> None:
    call, result, raw = CASES["terminal_done"]
    assert "\x1b[" not in render_terminal(call, result, raw=raw)
    assert "\x1b[" in render_terminal(call, result, raw=raw, color=True)


@pytest.mark.parametrize("render", [render_markdown, render_terminal])
def test_an_unknown_card_is_an_error(render: Any) -> None:
    with pytest.raises(TypeError, match="ToolCallView"):
        render({"card": "generic", "title": "x"})
    with pytest.raises(TypeError, match="ToolResultView"):
        render(GenericCallView(title="x"), GenericCallView(title="y"))


def test_importing_the_renderers_does_not_import_rich() -> None:
    code = "import sys, toolnursery._tools._render; print('rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    for case in CASES:
        markdown_text, terminal_text = render_case(case)
        (GOLDEN / f"{case}.md").write_text(markdown_text, encoding="utf-8")
        (GOLDEN / f"{case}.txt").write_text(terminal_text, encoding="utf-8")
