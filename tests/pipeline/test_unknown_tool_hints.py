"""What a person is told about an unknown tool, while the model's result stays pinned.

The result text is exactly ``Error: unknown tool "<name>"`` (B086, B104), and a tool
hidden from the caller reads exactly like one that does not exist (B034, B037).
:meth:`ToolRegistry.require` raises a :class:`ToolNotFoundError` that also carries the
names the caller's view has and the closest of them; ``toolnursery run`` says "did you
mean" on stderr. Neither ever names a tool the caller's view cannot see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import call, text, tool, write_calls
from toolnursery import ToolNotFoundError, ToolRegistry
from toolnursery.__main__ import main


@pytest.mark.spec("B086")
def test_the_error_keeps_its_message_and_code_and_carries_the_names() -> None:
    plain = ToolNotFoundError("ghost")
    assert str(plain) == 'unknown tool "ghost"'
    assert (plain.code, plain.known, plain.suggestion) == ("UNKNOWN_TOOL", (), None)
    hinted = ToolNotFoundError("reed_file", ["write_file", "read_file", "list_dir"])
    assert str(hinted) == 'unknown tool "reed_file"'
    assert hinted.known == ("list_dir", "read_file", "write_file")
    assert hinted.suggestion == "read_file"
    assert ToolNotFoundError("zzz", ["read_file"]).suggestion is None


@pytest.mark.spec("B086")
def test_require_returns_the_definition_or_raises_with_the_visible_names() -> None:
    registry = ToolRegistry()
    registry.register(tool("read_file"))
    registry.register(tool("write_file"))
    assert registry.require("read_file") is registry.get("read_file")
    with pytest.raises(ToolNotFoundError, match=r'^unknown tool "raed_file"$') as caught:
        registry.require("raed_file")
    assert caught.value.known == ("read_file", "write_file")
    assert caught.value.suggestion == "read_file"


@pytest.mark.spec("B034", "B037", "B086")
async def test_a_hidden_or_another_agents_tool_is_never_suggested() -> None:
    registry = ToolRegistry()
    registry.register(tool("bash"))
    registry.register(tool("read"))
    alice, bob = registry.scope(), registry.scope()
    alice.register(tool("secret_search"))
    bob.restrict(allow=["read"])
    # bob cannot see bash (restricted) nor alice's secret_search: neither is offered,
    # and the model's results for them read exactly as for a name nobody has.
    for name in ("bash", "basj", "secret_search", "secret_serch"):
        with pytest.raises(ToolNotFoundError) as caught:
            registry.require(name, bob)
        assert caught.value.known == ("read",)
        assert caught.value.suggestion is None
        result = await registry.execute(call(name, agent=bob))
        assert text(result) == f'Error: unknown tool "{name}"'
        assert result.error is not None
        assert result.error.code == "UNKNOWN_TOOL"
    # The global view has no agent's tools either.
    with pytest.raises(ToolNotFoundError) as caught:
        registry.require("secret_serch")
    assert caught.value.known == ("bash", "read")
    assert caught.value.suggestion is None
    # alice sees her own.
    with pytest.raises(ToolNotFoundError) as caught:
        registry.require("secret_serch", alice)
    assert caught.value.suggestion == "secret_search"


def _run(tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str], *calls: Any) -> Any:
    path = write_calls(tmp_path, *calls)
    assert main(["run", str(path), "--root", str(root)]) == 0
    captured = capsys.readouterr()
    return [json.loads(line) for line in captured.out.splitlines()], captured.err


@pytest.mark.spec("B086", "B104")
def test_run_says_did_you_mean_on_stderr_and_keeps_the_result(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, err = _run(
        tmp_path,
        root,
        capsys,
        {"id": "a", "name": "reed_file", "arguments": {"path": "README.md"}},
        {"id": "b", "name": "reed_file", "arguments": {"path": "x"}},
        {"id": "c", "name": "list_dir", "arguments": {"path": "."}},
    )
    assert [line["result"]["content"][0]["text"] for line in lines[:2]] == [
        'Error: unknown tool "reed_file"',
        'Error: unknown tool "reed_file"',
    ]
    assert lines[0]["result"]["error"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    assert err == 'toolnursery: call "a": unknown tool "reed_file" (did you mean "read_file"?)\n'


def test_run_lists_the_tools_when_nothing_is_close(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = _run(tmp_path, root, capsys, {"id": "a", "name": "zzz"})
    assert err.startswith('toolnursery: call "a": unknown tool "zzz" (the tools: "list_dir", ')
    _, err = _run(tmp_path, root, capsys, {"id": "a", "name": "list_dir"})
    assert err == ""


def test_bench_names_the_close_tool_for_an_unknown_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = write_calls(tmp_path, {"name": "reed_file"}, {"name": "ghost"})
    assert main(["bench", "--calls", str(calls)]) == 2
    assert capsys.readouterr().err.endswith(
        'the calls name tools the registry does not have: "ghost", '
        '"reed_file" (did you mean "read_file"?) (a bare nursery has no body to run for them)\n'
    )
