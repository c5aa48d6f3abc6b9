"""The ``toolnursery`` command: input shapes, ``run``, ``demo``, and bad input."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from support import tools_module, write_calls
from toolnursery import TextContent, ToolCall, ToolExecutionResult, ToolRegistry
from toolnursery.__main__ import main
from toolnursery._cli._common import load_registry
from toolnursery._cli._demo import DEMO_CALLS, DemoRun, Span, render_demo, run_demo
from toolnursery._cli._input import CallsInputError, parse_calls
from toolnursery.examples import fill_sandbox
from toolnursery.log import JsonlRecorder, replay_log

Capture = pytest.CaptureFixture[str]


def output(capsys: Capture) -> tuple[list[dict[str, Any]], str]:
    captured = capsys.readouterr()
    return [json.loads(line) for line in captured.out.splitlines()], captured.err


def result_of(line: dict[str, Any]) -> ToolExecutionResult:
    return msgspec.json.decode(json.dumps(line["result"]), type=ToolExecutionResult)


# -- CALLS shapes ----------------------------------------------------------------------------


def test_our_shape_with_arguments_as_text_or_object_or_absent() -> None:
    text = "\n".join(
        [
            '{"id": "a", "name": "read_file", "arguments": "{\\"path\\": \\"x\\"}"}',
            '{"id": "b", "name": "read_file", "arguments": {"path": "y"}}',
            '{"id": "c", "name": "list_dir"}',
            '{"id": "d", "name": "read_file", "arguments": "not json"}',
        ]
    )
    assert parse_calls(text, "calls") == [
        ToolCall("a", "read_file", '{"path": "x"}'),
        ToolCall("b", "read_file", '{"path":"y"}'),
        ToolCall("c", "list_dir", ""),
        ToolCall("d", "read_file", "not json"),
    ]


def test_openai_tool_calls_a_message_and_a_completion() -> None:
    openai_call = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path":"README.md"}'},
    }
    expected = [ToolCall("call_x", "read_file", '{"path":"README.md"}')]
    assert parse_calls(json.dumps(openai_call), "c") == expected
    assert parse_calls(json.dumps([openai_call]), "c") == expected
    message = {"role": "assistant", "content": None, "tool_calls": [openai_call, openai_call]}
    assert parse_calls(json.dumps(message), "c") == expected * 2
    completion = {"choices": [{"index": 0, "message": message}]}
    assert parse_calls(json.dumps(completion), "c") == expected * 2
    assert parse_calls('{"role": "assistant", "tool_calls": null}', "c") == []


def test_a_pretty_printed_document_and_json_lines_mix_shapes() -> None:
    document = json.dumps([{"name": "list_dir"}, {"name": "sleep", "arguments": {"seconds": 1}}])
    assert parse_calls(json.dumps(json.loads(document), indent=2), "c") == [
        ToolCall("call_1", "list_dir", ""),
        ToolCall("call_2", "sleep", '{"seconds":1}'),
    ]
    lines = '{"name": "a"}\n\n{"tool_calls": [{"id": "x", "function": {"name": "b"}}]}\n'
    assert parse_calls(lines, "c") == [ToolCall("call_1", "a", ""), ToolCall("x", "b", "")]


def test_blank_input_has_no_calls() -> None:
    assert parse_calls("", "c") == []
    assert parse_calls(" \n\n", "c") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"name": "a"}\n{"name": }\n{"name": "c"}',
            "calls line 2: not JSON: invalid character at column 10",
        ),
        (
            '[\n  {"name": "a"},\n  {"name" "b"}\n]',
            "calls line 3: not JSON: expected ':' at column 11",
        ),
        ('{"name": "a"}\n{"name": "b"', "calls line 2: not JSON: the JSON text ends early"),
        ("hello", "calls line 1: not JSON: invalid character at column 1"),
        ('{"name": "a"}\n7\n', "calls line 2: expected a tool call object, got a number"),
        ('[{"name": "a"}, "b"]', "calls: call 2: expected a tool call object, got a string"),
        ('[{"name": "a"}, {"id": "b"}]', 'calls: call 2: missing "name" (the tool to call)'),
        ('{"id": 1, "name": "a"}', 'calls: call 1: "id" must be a string, got a number'),
        ('{"name": ["a"]}', 'calls: call 1: "name" must be a string, got an array'),
        ('{"id": "x", "function": {"arguments": "{}"}}', 'calls: call 1: missing "function.name"'),
        ('{"id": "x", "function": "read"}', 'calls: call 1: "function" must be an object'),
        (
            '{"type": "web", "function": {"name": "a"}}',
            'calls: call 1: unsupported tool call type "web"',
        ),
        (
            '{"tool_calls": {"name": "a"}}',
            'calls: call 1: "tool_calls" must be an array, got an object',
        ),
        ('{"choices": []}', "calls: a chat completion must have exactly one choice to run, not 0"),
        ('{"choices": [{"text": "hi"}]}', 'calls: the choice has no "message" object'),
        ("[[[[[[[[{}]]]]]]]]", "calls: call 1: nested too deeply to be tool calls"),
    ],
)
def test_bad_input_names_where(text: str, message: str) -> None:
    with pytest.raises(CallsInputError) as raised:
        parse_calls(text, "calls")
    assert str(raised.value).startswith(message)


# -- run -----------------------------------------------------------------------------------


def test_run_prints_one_json_line_per_call_in_model_order(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "sleep", "arguments": {"seconds": 0.02}},
        {"id": "b", "name": "read_file", "arguments": '{"path": "src/util.py"}'},
        {"id": "c", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
    )
    assert main(["run", str(calls), "--root", str(root)]) == 0
    lines, err = output(capsys)
    assert [(line["id"], line["name"]) for line in lines] == [
        ("a", "sleep"),
        ("b", "read_file"),
        ("c", "list_dir"),
    ]
    assert [set(line) for line in lines] == [{"id", "name", "result"}] * 3
    assert result_of(lines[0]) == ToolExecutionResult((TextContent("slept 0.02s"),), False)
    assert result_of(lines[1]).content == (TextContent((root / "src/util.py").read_text()),)
    assert result_of(lines[2]).content == (TextContent("README.md\nnotes/\nsrc/"),)
    assert err == ""


def test_an_unknown_tool_mid_batch_fails_alone(tmp_path: Path, root: Path, capsys: Capture) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "write_file", "arguments": {"path": "notes/a.md", "content": "A"}},
        {"id": "b", "name": "delete_everything", "arguments": {}},
        {"id": "c", "name": "read_file", "arguments": {"path": "notes/a.md"}},
    )
    assert main(["run", str(calls), "--root", str(root)]) == 0
    lines, _ = output(capsys)
    results = [result_of(line) for line in lines]
    assert [r.is_error for r in results] == [False, True, False]
    assert results[1].error is not None
    assert results[1].error.code == "UNKNOWN_TOOL"
    assert results[1].content == (TextContent('Error: unknown tool "delete_everything"'),)
    assert results[2].content == (TextContent("A"),)


def test_run_reads_stdin(root: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "list_dir", "arguments": ""}}
        ],
    }
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(message)))
    assert main(["run", "-", "--root", str(root)]) == 0
    lines, _ = output(capsys)
    assert [line["id"] for line in lines] == ["x"]
    assert not result_of(lines[0]).is_error


def test_without_root_the_example_tools_get_a_temporary_sandbox(
    tmp_path: Path, capsys: Capture
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "write_file", "arguments": {"path": "README.md", "content": "x"}},
    )
    assert main(["run", str(calls)]) == 0
    lines, err = output(capsys)
    assert result_of(lines[0]).content == (TextContent('replaced "README.md" (1 bytes)'),)
    assert "temporary sandbox" in err
    sandbox = err.split("temporary sandbox ", 1)[1].split(" ", 1)[0]
    assert sandbox.startswith(os.path.realpath(os.path.dirname(sandbox)))
    assert not os.path.exists(sandbox)


def test_log_records_a_replayable_batch(tmp_path: Path, root: Path, capsys: Capture) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "read_file", "arguments": {"path": "README.md"}},
        {"id": "b", "name": "read_file", "arguments": {}},
    )
    log = tmp_path / "log.jsonl"
    assert main(["run", str(calls), "--root", str(root), "--log", str(log)]) == 0
    lines, _ = output(capsys)
    replayed = replay_log(log)
    assert [call.id for call, _ in replayed] == ["a", "b"]
    assert [result for _, result in replayed] == [result_of(line) for line in lines]


SEND_TOOLS = """
    from toolnursery import ToolRegistry, tool

    @tool
    def send(to: str) -> str:
        \"\"\"Send (not idempotent).\"\"\"
        return "sent to " + to

    registry = ToolRegistry()
    registry.register(send)
"""


def test_resume_counts_the_approvals_the_log_answers(tmp_path: Path, capsys: Capture) -> None:
    # c0 allowed and committed, c1 rejected (the answer recorded, then the process died),
    # c2 started with no result, c3 never started
    module = tools_module(tmp_path, SEND_TOOLS)
    calls = write_calls(
        tmp_path,
        *({"id": f"c{i}", "name": "send", "arguments": {"to": t}} for i, t in enumerate("abcd")),
    )

    def event(kind: str, index: int, **fields: Any) -> str:
        return json.dumps({"event": kind, "batch": "b", "index": index, **fields}) + "\n"

    def started(index: int) -> str:
        arguments = json.dumps({"to": "abcd"[index]}, separators=(",", ":"))  # as run logs it
        call = {"id": f"c{index}", "name": "send", "arguments": arguments}
        return event("tool_call", index, call=call)

    def asked(index: int, outcome: str | None = None) -> str:
        answer = {} if outcome is None else {"outcome": outcome}
        return event("approval", index, callId=f"c{index}", tool="send", reason="check", **answer)

    sent = {"content": [{"type": "text", "text": "sent to a"}], "isError": False}
    log = tmp_path / "log.jsonl"
    log.write_text(
        started(0)
        + asked(0)
        + asked(0, "allowed-once")
        + event("tool_result", 0, callId="c0", result=sent)
        + started(1)
        + asked(1)
        + asked(1, "rejected")
        + started(2),
        encoding="utf-8",
    )
    argv = ["run", str(calls), "--tools", f"{module}:registry", "--log", str(log), "--resume"]
    assert main(argv) == 0
    lines, err = output(capsys)
    assert [result_of(line).text for line in lines] == [
        "sent to a",
        'Error: the user rejected tool "send"',
        'Error: tool call "send" was interrupted: it started before the process stopped and '
        "did not finish, so its effect may or may not have happened; it was not run again "
        "because the tool is not idempotent",
        "sent to d",
    ]
    assert err == (
        "toolnursery: --resume: batch b: 1 recorded, 1 to run, 1 interrupted, 1 rejected; "
        "the log answers 2 approvals (1 allowed-once, 1 rejected): not asked again\n"
    )


def test_progress_goes_to_stderr_and_leaves_stdout_clean(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "list_dir"},
        {"id": "b", "name": "read_file", "arguments": {}},
    )
    assert main(["run", str(calls), "--root", str(root), "--progress", "always"]) == 0
    lines, err = output(capsys)
    assert [line["id"] for line in lines] == ["a", "b"]
    assert "running: list_dir" in err
    assert err.endswith("toolnursery: 2/2 done, 1 failed\n")


def test_progress_auto_stays_quiet_when_stderr_is_not_a_terminal(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    assert main(["run", str(calls), "--root", str(root)]) == 0
    assert capsys.readouterr().err == ""


def test_max_parallel_caps_the_pool(tmp_path: Path, capsys: Capture) -> None:
    module = tools_module(
        tmp_path,
        """
        import trio.testing
        from toolnursery import ToolDefinition, ToolRegistry

        state = {"now": 0, "peak": 0}

        async def body(args, ctx):
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            # Every body the pool let start is running now, however slow the machine.
            await trio.testing.wait_all_tasks_blocked()
            state["now"] -= 1
            return str(state["peak"])

        registry = ToolRegistry()
        registry.register(
            ToolDefinition("t", "t", {"type": "object"}, body, is_concurrency_safe=lambda a: True)
        )
        """,
    )
    calls = write_calls(tmp_path, *({"id": f"c{i}", "name": "t"} for i in range(6)))
    assert main(["run", str(calls), "--tools", f"{module}:registry", "--max-parallel", "2"]) == 0
    lines, _ = output(capsys)
    assert max(int(result_of(line).content[0].text) for line in lines) == 2  # type: ignore[union-attr]


@pytest.mark.usefixtures("sigint_default")
def test_ctrl_c_cancels_the_batch_and_prints_every_result(tmp_path: Path, capsys: Capture) -> None:
    module = tools_module(
        tmp_path,
        """
        import signal
        import trio
        from toolnursery import ToolDefinition, ToolRegistry

        async def interrupt(args, ctx):
            signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C now
            await trio.sleep_forever()

        async def quick(args, ctx):
            return "quick"

        def make():
            registry = ToolRegistry()
            registry.register(ToolDefinition("quick", "q", {}, quick, is_concurrency_safe=lambda a: True))
            registry.register(ToolDefinition("interrupt", "i", {}, interrupt, is_concurrency_safe=lambda a: True))
            return registry
        """,
    )
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "quick"},
        {"id": "b", "name": "interrupt"},
        {"id": "c", "name": "exclusive-and-unknown"},
        {"id": "d", "name": "quick"},
    )
    assert main(["run", str(calls), "--tools", f"{module}:make"]) == 130
    lines, err = output(capsys)
    codes = [(line["id"], line["result"].get("error", {}).get("code", "ok")) for line in lines]
    assert codes == [
        ("a", "ok"),
        ("b", "ABORTED"),
        ("c", "ABORTED_BEFORE_DISPATCH"),
        ("d", "ABORTED_BEFORE_DISPATCH"),
    ]
    assert "interrupted: the batch was cancelled (3 of 4 aborted)" in err


@pytest.mark.usefixtures("sigint_default")
def test_a_second_ctrl_c_stops_at_once(tmp_path: Path, capsys: Capture) -> None:
    module = tools_module(
        tmp_path,
        """
        import signal
        import trio
        import trio.testing
        from toolnursery import ToolDefinition, ToolRegistry

        async def stubborn(args, ctx):
            signal.raise_signal(signal.SIGINT)
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    # Unwinding slowly; once the first Ctrl-C has been handled, the user
                    # presses it again.
                    await trio.testing.wait_all_tasks_blocked()
                    signal.raise_signal(signal.SIGINT)
                    await trio.sleep_forever()

        registry = ToolRegistry()
        registry.register(ToolDefinition("stubborn", "s", {}, stubborn))
        """,
    )
    calls = write_calls(tmp_path, {"id": "a", "name": "stubborn"})
    try:
        code = main(["run", str(calls), "--tools", f"{module}:registry"])
    except BaseException as exc:  # a KeyboardInterrupt here would end the test session
        pytest.fail(f"main() raised {exc!r}")
    assert code == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith("toolnursery: interrupted\n")


@pytest.mark.usefixtures("sigint_ignored")
def test_ctrl_c_ignored_when_run_starts_leaves_the_batch_running(
    tmp_path: Path, capsys: Capture
) -> None:
    module = tools_module(
        tmp_path,
        """
        import signal
        from toolnursery import ToolDefinition, ToolRegistry

        def interrupt(args, ctx):
            signal.raise_signal(signal.SIGINT)  # a Ctrl-C meant for the script in front
            return "still here"

        registry = ToolRegistry()
        registry.register(ToolDefinition("interrupt", "i", {}, interrupt))
        """,
    )
    calls = write_calls(tmp_path, {"id": "a", "name": "interrupt"})
    assert main(["run", str(calls), "--tools", f"{module}:registry"]) == 0
    lines, err = output(capsys)
    assert [result_of(line).content for line in lines] == [(TextContent("still here"),)]
    assert err == ""
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


@pytest.mark.timeout(100)
def test_the_ctrl_c_tests_pass_when_pytest_starts_with_sigint_ignored() -> None:
    """pytest started by a script in the background runs with SIGINT ignored; a test
    that needs Ctrl-C must set that up itself, not hang."""
    here = Path(__file__)
    script = (
        "import signal, sys, pytest\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-k', 'ctrl_c and not "
        f"sigint_ignored', {str(here)!r}]))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        # A hang there fails (or ends that run) in at most 3 x 15 s, naming the test.
        env={**os.environ, "TOOLNURSERY_TEST_TIME_LIMIT": "15"},
        timeout=90,
        cwd=here.parents[2],
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "3 passed" in completed.stdout


def test_tools_by_module_name_registry_or_factory(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools_module(
        tmp_path,
        """
        from toolnursery import ToolDefinition, ToolRegistry

        def hello(args, ctx):
            return "hello " + args["who"]

        def make():
            registry = ToolRegistry()
            registry.register(ToolDefinition("hello", "greet", {"type": "object"}, hello))
            return registry

        class Holder:
            registry = make()
        """,
        name="greeting_tools_for_cli.py",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "greeting_tools_for_cli", raising=False)
    calls = write_calls(tmp_path, {"id": "a", "name": "hello", "arguments": {"who": "trio"}})
    for spec in ["greeting_tools_for_cli:make", "greeting_tools_for_cli:Holder.registry"]:
        assert main(["run", str(calls), "--tools", spec]) == 0
        lines, _ = output(capsys)
        assert result_of(lines[0]).content == (TextContent("hello trio"),)


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        ("x = 1", "{module}", "expected MODULE:ATTR"),
        ("x = 1", "{module}:", "expected MODULE:ATTR"),
        ("x = 1", "{module}:missing", "has no attribute 'missing'"),
        ("x = 1", "{module}:x", "expected a ToolRegistry or a callable returning one, got int"),
        ("def x(): return 1", "{module}:x", "x() returned int, not a ToolRegistry"),
        ("def x(): raise RuntimeError('boom')", "{module}:x", "x() raised RuntimeError: boom"),
        ("1 / 0", "{module}:x", "raised ZeroDivisionError: division by zero"),
        ("import not_a_module_anywhere", "{module}:x", "No module named 'not_a_module_anywhere'"),
        ("", "{dir}/absent.py:x", "no such file"),
        ("", "no_such_module_for_toolnursery:x", "cannot import 'no_such_module_for_toolnursery'"),
    ],
)
def test_a_tools_spec_that_does_not_load_is_a_usage_error(
    tmp_path: Path, capsys: Capture, source: str, spec: str, message: str
) -> None:
    module = tools_module(tmp_path, source)
    calls = write_calls(
        tmp_path, {"id": "a", "name": "write_file", "arguments": {"path": "x", "content": "x"}}
    )
    spec = spec.format(module=module, dir=tmp_path)
    assert main(["run", str(calls), "--tools", spec]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"toolnursery: error: --tools {spec!r}: ")
    assert message in captured.err


EXITS = [
    ("import sys\nsys.exit(0)", "code 0"),
    ("import sys\nsys.exit(None)", "code 0"),
    ("import sys\nsys.exit()", "code 0"),
    ("raise SystemExit", "code 0"),
    ("raise SystemExit(3)", "code 3"),
    ("import sys\nsys.exit('no tools today')", "message 'no tools today' (code 1)"),
]


@pytest.mark.parametrize(("source", "status"), EXITS)
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{calls}"],
        ["bench", "--calls", "{calls}"],
        ["replay", "{log}", "--markdown"],
        ["serve"],
    ],
)
def test_a_tools_module_that_exits_at_import_is_an_error_not_a_silent_success(
    tmp_path: Path, capsys: Capture, source: str, status: str, argv: list[str]
) -> None:
    module = tools_module(tmp_path, source)
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    log = tmp_path / "log.jsonl"
    log.write_text("")
    spec = f"{module}:registry"
    args = [a.format(calls=calls, log=log) for a in argv]
    before = set(sys.modules)
    assert main([*args, "--tools", spec]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"toolnursery: error: --tools {spec!r}: the tools module {str(module)!r} exited "
        f"during import with {status}\n"
    )
    left = {name for name in set(sys.modules) - before if name.startswith("_toolnursery_tools_")}
    assert left == set()  # nothing half-imported is left to be found


def test_a_tools_factory_that_exits_is_an_error(tmp_path: Path, capsys: Capture) -> None:
    module = tools_module(tmp_path, "import sys\ndef make():\n    sys.exit(0)\n")
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    assert main(["run", str(calls), "--tools", f"{module}:make"]) == 2
    assert capsys.readouterr().err.endswith(": calling make() exited with code 0\n")


def test_a_tools_module_interrupted_at_import_exits_130(tmp_path: Path, capsys: Capture) -> None:
    module = tools_module(tmp_path, "raise KeyboardInterrupt\n")
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    assert main(["run", str(calls), "--tools", f"{module}:registry"]) == 130
    assert capsys.readouterr() == ("", "toolnursery: interrupted\n")


def test_a_tools_module_by_name_that_exits_fails_the_process(tmp_path: Path) -> None:
    tools_module(tmp_path, "import sys\nsys.exit(0)\n", name="exiting_tools_for_cli.py")
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolnursery",
            "run",
            str(calls),
            "--tools",
            "exiting_tools_for_cli:registry",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == (
        "toolnursery: error: --tools 'exiting_tools_for_cli:registry': the tools module "
        "'exiting_tools_for_cli' exited during import with code 0\n"
    )


def test_load_registry_accepts_a_registry_object_spec(tmp_path: Path) -> None:
    module = tools_module(
        tmp_path, "from toolnursery import ToolRegistry\nregistry = ToolRegistry()\n"
    )
    assert isinstance(load_registry(f"{module}:registry"), ToolRegistry)


def test_input_that_is_not_json_runs_nothing_and_names_the_line(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        '{"id": "a", "name": "write_file", "arguments": {"path": "notes/x", "content": "x"}}\n'
        '{"id": "b", "name": "read_file", "arguments": {"path": "x"}\n'
    )
    assert main(["run", str(calls), "--root", str(root)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"toolnursery: error: {calls} line 2: not JSON: the JSON text ends early\n"
    )
    assert not (root / "notes/x").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "{missing}"], "cannot read CALLS"),
        (["run", "{calls}", "--root", "{missing}"], "is not a directory"),
        (["run", "{calls}", "--root", "{dir}", "--tools", "m:x"], "--root applies to"),
        (["run", "{calls}", "--log", "{missing}/log.jsonl"], "cannot open --log"),
        (["run", "{binary}"], "line 2: not UTF-8 text"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: Capture, argv: list[str], message: str
) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"name": "list_dir"}\n\xff\xfe\n')
    values = {"calls": calls, "missing": tmp_path / "missing", "dir": tmp_path, "binary": binary}
    assert main([arg.format(**values) for arg in argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_argument_errors_and_help(capsys: Capture) -> None:
    assert main(["run", "x", "--max-parallel", "0"]) == 2
    assert "expected a positive integer of at most 100000, got '0'" in capsys.readouterr().err
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("toolnursery ")


def test_empty_input_runs_nothing(tmp_path: Path, capsys: Capture) -> None:
    calls = tmp_path / "calls.json"
    calls.write_text("[]")
    assert main(["run", str(calls)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no tool calls" in captured.err


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_goes_away_stops_the_batch_quietly(
    tmp_path: Path, root: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "list_dir"},
        {"id": "b", "name": "write_file", "arguments": {"path": "notes/b", "content": "b"}},
    )
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["run", str(calls), "--root", str(root)]) == 1
    assert capsys.readouterr().err == ""
    # Writing a's result failed, so the batch was aborted before the write started.
    assert not (root / "notes/b").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_batch_whose_log_cannot_be_written_fails_with_exit_1(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    assert main(["run", str(calls), "--root", str(root), "--log", "/dev/full"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: the batch failed: OSError" in captured.err


# -- demo ----------------------------------------------------------------------------------


def test_demo_prints_the_batch_a_timeline_and_every_result(tmp_path: Path, capsys: Capture) -> None:
    log = tmp_path / "demo.jsonl"
    assert main(["demo", "--max-parallel", "2", "--log", str(log)]) == 0
    out = capsys.readouterr().out
    for heading in ["the batch, in model order:", "timeline:", "results, in model order:"]:
        assert heading in out
    results = out.split("results, in model order:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    statuses = [line.split()[1] for line in results]
    assert statuses == ["ok"] * 8 + ["DENIED", "INVALID_ARGS", "OUTSIDE_ROOT"]
    assert "c9 was denied by the pre-execute policy" in out
    assert [call.id for call, _ in replay_log(log)] == [call.id for call in DEMO_CALLS]


def ids(run: DemoRun, *wanted: str) -> list[Span]:
    spans = dict(zip([c.id for c in run.calls], run.spans, strict=True))
    out = [spans[i] for i in wanted]
    assert all(span is not None for span in out)
    return [span for span in out if span is not None]


async def test_the_demo_shows_the_pool_a_keyed_write_and_the_barrier(
    tmp_path: Path, autojump_clock: trio.abc.Clock
) -> None:
    fill_sandbox(tmp_path)
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        run = await run_demo(tmp_path, recorder=recorder)
    modes = dict(zip([c.id for c in run.calls], run.modes, strict=True))
    assert [k for k, v in modes.items() if v == "keyed"] == [
        *("c1", "c2", "c3", "c5", "c6", "c8", "c9")
    ]
    assert modes["c4"] == "parallel"
    assert [k for k, v in modes.items() if v == "exclusive"] == ["c7", "c10", "c11"]
    assert run.denied == frozenset({"c9"})
    assert run.spans[8] is None  # denied: the body never ran
    c1, c3, c4, c5, c6 = ids(run, "c1", "c3", "c4", "c5", "c6")
    assert c5.start_ms >= max(c1.end_ms, c3.end_ms)  # the write waited for its conflicts
    assert c6.start_ms <= c5.start_ms  # a later read of another file did not wait for it
    assert c4.end_ms - c4.start_ms == pytest.approx(50)
    (c7,) = ids(run, "c7")
    earlier = ids(run, "c1", "c2", "c3", "c4", "c5", "c6")
    assert c7.start_ms >= max(s.end_ms for s in earlier)  # the move waited for all
    assert all(s.start_ms >= c7.end_ms for s in ids(run, "c8", "c10", "c11"))
    texts = [
        "\n".join(b.text for b in r.content if isinstance(b, TextContent)) for r in run.results
    ]
    assert texts[0] == "- parallel reads\n- exclusive writes\n"  # c1 read before c5 wrote
    assert texts[7] == "- parallel reads\n- keyed writes\n- exclusive moves\n"
    assert not (tmp_path / "notes/ideas.md").exists()
    assert (tmp_path / "notes/archive/ideas.md").read_text().endswith("- exclusive moves\n")
    assert (tmp_path / "src/app.py").read_text().startswith("def main()")  # not written
    assert [call for call, _ in replay_log(log)] == list(DEMO_CALLS)
    report = render_demo(run, str(tmp_path)).replace("\n    ", " ")
    assert "c7 move_path is exclusive: a barrier." in report
    assert (
        "c5 write_file is keyed: it waited only for the earlier calls it conflicts with — "
        "c1 read_file (file:notes/ideas.md), c3 search_text (tree:.) —"
    ) in report


def at(*spans: tuple[float, float] | None) -> tuple[Span | None, ...]:
    return tuple(None if s is None else Span(*s) for s in spans)


async def test_the_notes_are_derived_from_the_measured_times(
    tmp_path: Path, autojump_clock: trio.abc.Clock
) -> None:
    fill_sandbox(tmp_path)
    run = await run_demo(tmp_path)
    measured = msgspec.structs.replace(
        run,
        spans=at(
            *((1.0, 8.8), (1.2, 8.0), (1.3, 7.9), (1.3, 52.1), (8.9, 9.8), (1.3, 8.7)),
            *((52.3, 52.7), (53.0, 53.5), None, (53.5, 53.6), (53.6, 53.8)),
        ),
    )
    notes = render_demo(measured, "sandbox").split("what happened:\n", 1)[1]
    assert notes == (
        "  - c1, c2, c3, c4 conflict with nothing before them: all of them started before the\n"
        "    first one ended (7.9 ms); they ran side by side.\n"
        "  - c5 write_file is keyed: it waited only for the earlier calls it conflicts with — c1\n"
        "    read_file (file:notes/ideas.md), c3 search_text (tree:.) — and started at 8.9 ms,\n"
        "    after they ended (the last at 8.8 ms). c4 sleep, which it does not conflict with,\n"
        "    was still running: it is no barrier; c6 read_file, later in the batch, started\n"
        "    before it.\n"
        "  - c7 move_path is exclusive: a barrier. It started at 52.3 ms, after every earlier\n"
        "    body ended (the last at 52.1 ms), and the next call started only after it ended\n"
        "    (53.0 ms).\n"
        "  - c9 was denied by the pre-execute policy: its body never ran.\n"
        "  - c10 had invalid arguments: the tool's own validation refused them. Its keys cannot\n"
        "    be computed, so it ran exclusive (fail-closed).\n"
        "  - c11 tried to leave the sandbox: refused, nothing was read. Its keys cannot be\n"
        "    computed, so it ran exclusive (fail-closed).\n"
    )
    # A claim the times do not support is not made.
    serial = msgspec.structs.replace(
        measured,
        spans=at(
            *((0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 53.0), (53.0, 54.0), (54.0, 55.0)),
            *((55.0, 56.0), (56.0, 57.0), None, (57.0, 58.0), (58.0, 59.0)),
        ),
    )
    notes = render_demo(serial, "sandbox").split("what happened:\n", 1)[1]
    assert "side by side" not in notes
    assert "still running" not in notes
    assert "later in the batch" not in notes
    assert "c5 write_file is keyed: it waited only" in notes.replace("\n    ", " ")


def test_python_dash_m_toolnursery_demo(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "toolnursery", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("toolnursery demo: 11 tool calls on the example tools")
    assert "c11 OUTSIDE_ROOT" in completed.stdout


# -- run --show ------------------------------------------------------------------------------


def test_show_prints_each_call_and_result_as_a_card_in_model_order(
    tmp_path: Path, root: Path, capsys: Capture
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "sleep", "arguments": {"seconds": 0.01}},
        {
            "id": "b",
            "name": "write_file",
            "arguments": {"path": "notes/ideas.md", "content": "- x\n"},
        },
        {"id": "c", "name": "read_file", "arguments": {"path": "nowhere.md"}},
        {"id": "d", "name": "ghost"},
    )
    log = tmp_path / "log.jsonl"
    assert (
        main(["run", str(calls), "--root", str(root), "--show", "--width", "44", "--log", str(log)])
        == 0
    )
    captured = capsys.readouterr()
    assert captured.err == (
        'toolnursery: call "d": unknown tool "ghost" (the tools: "list_dir", "move_path", '
        '"read_file", "search_text", "sleep", "write_file")\n'
    )
    assert captured.out == (
        "╭─ terminal ───────────────────────────────╮\n"
        "│ $ sleep 0.01                             │\n"
        "│ slept 0.01s                              │\n"
        "╰──────────────────────────── exit code 0 ─╯\n"
        "╭─ Replaced notes/ideas.md ────────────────╮\n"
        "│ --- a/notes/ideas.md                     │\n"
        "│ +++ b/notes/ideas.md                     │\n"
        "│ @@ -1,2 +1 @@                            │\n"
        "│ -- parallel reads                        │\n"
        "│ -- exclusive writes                      │\n"
        "│ +- x                                     │\n"
        "╰─────────────────────────────────── done ─╯\n"
        "╭─ Read nowhere.md (read) ─────────────────╮\n"
        '│ Error: cannot read "nowhere.md": no such │\n'
        "│ file or directory                        │\n"
        "╰───────────────────────────────── failed ─╯\n"
        "╭─ ghost ──────────────────────────────────╮\n"
        "│ {}                                       │\n"
        "│                                          │\n"
        '│ Error: unknown tool "ghost"              │\n'
        "╰───────────────────────────────── failed ─╯\n"
    )
    # The log is the same as without --show, and replays as the same cards.
    assert [call.id for call, _ in replay_log(log)] == ["a", "b", "c", "d"]
    assert main(["replay", str(log), "--width", "44"]) == 0
    replayed = capsys.readouterr().out
    assert replayed.split("\n", 1)[1] == captured.out


def test_show_needs_rich_and_says_so_before_anything_runs(
    tmp_path: Path, root: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = write_calls(
        tmp_path, {"id": "a", "name": "write_file", "arguments": {"path": "x.md", "content": "x"}}
    )
    monkeypatch.setitem(sys.modules, "rich", None)  # as if it were not installed
    assert main(["run", str(calls), "--root", str(root), "--show"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "toolnursery: error: --show draws cards with rich, which is not installed: "
        "pip install -e '.[cli]' (or pip install rich)\n"
    )
    assert not (root / "x.md").exists()
    # Without --show, run needs nothing but toolnursery's own dependencies.
    assert main(["run", str(calls), "--root", str(root)]) == 0
    assert (root / "x.md").read_text() == "x"


def test_width_applies_to_show_only(tmp_path: Path, root: Path, capsys: Capture) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir"})
    assert main(["run", str(calls), "--root", str(root), "--width", "60"]) == 2
    assert capsys.readouterr().err == "toolnursery: error: --width applies to --show\n"
    assert main(["run", str(calls), "--root", str(root), "--show"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("╭─ List .: 3 entries (read) ─")
    assert {len(line) for line in out.splitlines()} == {80}
