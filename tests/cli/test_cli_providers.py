"""``toolnursery run`` with provider shapes in and ``--format`` out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic.types as at
import pytest
from openai.types import responses as rt
from openai.types.chat import ChatCompletionMessageParam

from provider_helpers import accepts
from toolnursery import ToolCall
from toolnursery.__main__ import main
from toolnursery._cli._input import CallsInputError, parse_calls
from toolnursery._core._arguments import NotArguments

Capture = pytest.CaptureFixture[str]

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "t1", "name": "list_dir", "input": {"path": "src"}},
        {"type": "tool_use", "id": "t2", "name": "read_file", "input": ["src/app.py"]},
        {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"path": "src/util.py"}},
    ],
    "stop_reason": "tool_use",
}
RESPONSE = {
    "object": "response",
    "output": [
        {"type": "reasoning", "id": "r", "summary": []},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "list_dir",
            "arguments": '{"path": "src"}',
        },
        {"type": "message", "role": "assistant", "content": []},
    ],
}


def _write(tmp_path: Path, value: Any) -> str:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def test_an_anthropic_message_and_its_blocks_are_read_with_their_input() -> None:
    calls = parse_calls(json.dumps(MESSAGE), "m")
    assert calls[0] == ToolCall("t1", "list_dir", {"path": "src"})
    assert calls[1].arguments == NotArguments(
        ["src/app.py"], '"input" must be an object, got an array'
    )
    assert [c.id for c in calls] == ["t1", "t2", "t3"]
    assert parse_calls(json.dumps(MESSAGE["content"][1]), "m") == calls[:1]


def test_responses_items_and_a_whole_response_are_read() -> None:
    calls = parse_calls(json.dumps(RESPONSE), "r")
    assert calls == [ToolCall("c1", "list_dir", '{"path": "src"}')]
    assert parse_calls(json.dumps(RESPONSE["output"][1]), "r") == calls


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"name": "list_dir", "input": {"path": "src"}},
            'r: call 1: not a tool call shape toolnursery knows (unexpected "input")',
        ),
        (
            {"type": "custom_tool_call", "name": "x"},
            'r: call 1: unsupported item type "custom_tool_call"',
        ),
        ({"type": "tool_use", "id": "t", "input": {}}, 'r: call 1: missing "name"'),
        (
            {"role": "assistant", "content": {"type": "tool_use"}},
            'r: call 1: "content" must be an array, got an object',
        ),
    ],
)
def test_a_shape_it_does_not_know_is_refused(value: Any, message: str) -> None:
    with pytest.raises(CallsInputError) as raised:
        parse_calls(json.dumps(value), "r")
    assert str(raised.value).startswith(message)


def test_run_refuses_an_unknown_shape_in_one_line_and_runs_nothing(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    """The issue's case: a tool_use-like object without its type ran list_dir on '.'."""
    calls = _write(tmp_path, [{"name": "write_file", "input": {"path": "x", "content": "y"}}])
    assert main(["run", calls, "--root", str(root)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert 'unexpected "input"' in captured.err
    assert not (root / "x").exists()


def test_run_an_anthropic_message_with_anthropic_output(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    assert (
        main(["run", _write(tmp_path, MESSAGE), "--root", str(root), "--format", "anthropic"]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    message = json.loads(out[0])
    accepts(at.MessageParam, message)
    blocks = message["content"]
    assert [b["tool_use_id"] for b in blocks] == ["t1", "t2", "t3"]
    assert blocks[0]["content"] == [{"type": "text", "text": "app.py\nutil.py"}]
    assert blocks[1]["is_error"] is True
    assert blocks[1]["content"][0]["text"] == (
        'Error: invalid arguments: "input" must be an object, got an array'
    )
    assert "is_error" not in blocks[2]


def test_run_with_openai_chat_and_responses_output(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = _write(tmp_path, RESPONSE)
    assert main(["run", calls, "--root", str(root), "--format", "openai-chat"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    accepts(ChatCompletionMessageParam, json.loads(line))
    assert json.loads(line) == {"role": "tool", "tool_call_id": "c1", "content": "app.py\nutil.py"}
    assert main(["run", calls, "--root", str(root), "--format", "openai-responses"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    accepts(rt.ResponseInputItemParam, json.loads(line))
    assert json.loads(line)["type"] == "function_call_output"


def test_show_and_format_are_alternatives(tmp_path: Path, root: Path, capsys: Capture) -> None:
    calls = _write(tmp_path, RESPONSE)
    assert main(["run", calls, "--root", str(root), "--show", "--format", "anthropic"]) == 2
    assert "choose one" in capsys.readouterr().err
