"""The example agent loops, end to end: real SDK clients, real HTTP on 127.0.0.1, streaming.

A scripted model (``loopback.ScriptedModel``, served by hypercorn on trio) answers the
first request with text and tool calls and the second with a final answer; the tests
check what the loop printed and what the SDK sent back to the model.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic
import openai
import pytest
import trio

from loopback import Reply, ScriptedModel, serve_model
from toolnursery.examples import fill_sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The SDKs break out of their own inner SSE generators at the end of a stream (after
# "[DONE]"), leaving them to the garbage collector, and trio warns about each one.
# That is the SDKs' doing, not the loop's: ignored here, collected inside each test.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.[\w.]+' was garbage collected:ResourceWarning"
)


@pytest.fixture(autouse=True)
def _collect_sdk_generators() -> Any:
    yield
    gc.collect()


FIRST = [
    ("text", 0, "Let me look."),
    ("done", 0),
    ("call", 1, "c1", "read_file"),
    ("args", 1, '{"path": "src/app.py"}'),
    ("done", 1),
    ("call", 2, "c2", "write_file"),
    ("args", 2, '{"path": "src/evil.py", "content": "x"}'),
    ("done", 2),
    ("call", 3, "c3", "list_dir"),
    ("args", 3, '{"path": "src"}'),
    ("done", 3),
    ("end",),
]
FINAL = [("text", 0, "It prints hello."), ("done", 0), ("end",)]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Printed:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, *args: Any, end: str = "\n", flush: bool = False) -> None:
        self.parts.append(" ".join(str(a) for a in args) + end)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@pytest.fixture
def root(tmp_path: Path) -> str:
    fill_sandbox(tmp_path)
    return str(tmp_path)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_openai_agent_loop_runs_the_calls_and_answers(root: str, api: str) -> None:
    example = _load("openai_agent")
    model = ScriptedModel()
    fmt = "chat" if api == "chat" else "responses"
    model.script(fmt, FIRST, FINAL)
    printed = Printed()
    with trio.fail_after(30):
        async with serve_model(model) as url:
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test", max_retries=0)
            async with client:
                registry, started = example.agent_registry(root)
                history = await example.run_agent(
                    client,
                    "What does src/app.py print?",
                    registry,
                    started,
                    model="m",
                    api=api,
                    write=printed,
                )
    assert len(model.requests[fmt]) == 2
    second = model.requests[fmt][1]
    assert [t["name"] if api == "responses" else t["function"]["name"] for t in second["tools"]][
        :2
    ] == [
        "read_file",
        "list_dir",
    ]
    if api == "chat":
        tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3"]
        outputs = [m["content"] for m in tool_messages]
        assistant = next(m for m in second["messages"] if m["role"] == "assistant")
        assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2", "c3"]
    else:
        items = [i for i in second["input"] if i.get("type") == "function_call_output"]
        assert [i["call_id"] for i in items] == ["c1", "c2", "c3"]
        outputs = [i["output"] for i in items]
    assert 'print("hello")' in outputs[0]
    assert outputs[1] == "Error: this agent may only write under notes/"
    assert outputs[2] == "app.py\nutil.py"
    assert not (Path(root) / "src/evil.py").exists()
    assert "Let me look." in printed.text
    assert "It prints hello." in printed.text
    assert "Read src/app.py: 2 lines" in printed.text  # the cards
    assert "List src: 2 entries" in printed.text
    assert history[-1]["role"] == "assistant"


async def test_the_anthropic_agent_loop_runs_the_calls_and_answers(root: str) -> None:
    example = _load("anthropic_agent")
    model = ScriptedModel()
    model.script("anthropic", FIRST, FINAL)
    printed = Printed()
    with trio.fail_after(30):
        async with (
            serve_model(model) as url,
            anthropic.AsyncAnthropic(base_url=url, api_key="test", max_retries=0) as client,
        ):
            registry, started = example.agent_registry(root)
            history = await example.run_agent(
                client,
                "What does src/app.py print?",
                registry,
                started,
                model="m",
                write=printed,
            )
    second = model.requests["anthropic"][1]
    assistant, user = second["messages"][1:3]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use", "tool_use"]
    assert assistant["content"][1]["input"] == {"path": "src/app.py"}
    results = user["content"]
    assert [b["tool_use_id"] for b in results] == ["c1", "c2", "c3"]
    assert results[1]["is_error"] is True
    assert results[1]["content"] == [
        {"type": "text", "text": "Error: this agent may only write under notes/"}
    ]
    assert "It prints hello." in printed.text
    assert history[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "It prints hello."}],
    }


async def test_a_response_that_breaks_off_mid_call_runs_the_complete_calls(root: str) -> None:
    example = _load("anthropic_agent")
    model = ScriptedModel()
    broken = [
        ("call", 0, "c1", "list_dir"),
        ("args", 0, '{"path": "src"}'),
        ("done", 0),
        ("call", 1, "c2", "write_file"),
        ("args", 1, '{"path": "notes/x.md", "con'),
        ("args", 1, 'tent": "never"}'),
        ("done", 1),
        ("end",),
    ]
    # message_start, block 0 (start, delta, stop), block 1 start, first delta: then cut.
    model.script("anthropic", Reply(broken, break_after=6), FINAL)
    printed = Printed()
    with trio.fail_after(30):
        async with (
            serve_model(model) as url,
            anthropic.AsyncAnthropic(base_url=url, api_key="test", max_retries=0) as client,
        ):
            registry, started = example.agent_registry(root)
            await example.run_agent(client, "go", registry, started, model="m", write=printed)
    results = model.requests["anthropic"][1]["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["c1", "c2"]
    assert "is_error" not in results[0]
    assert results[1]["is_error"] is True
    assert "did not run" in results[1]["content"][0]["text"]
    assert not (Path(root) / "notes/x.md").exists()


@pytest.mark.parametrize(
    ("script", "env_url", "flags"),
    [
        ("anthropic_agent", "ANTHROPIC_BASE_URL", ["--asyncio"]),
        ("openai_agent", "OPENAI_BASE_URL", []),
    ],
    ids=["anthropic-on-asyncio", "openai-on-trio"],
)
async def test_the_example_programs_run_as_programs(
    script: str, env_url: str, flags: list[str]
) -> None:
    model = ScriptedModel()
    fmt = "anthropic" if script == "anthropic_agent" else "chat"
    model.script(fmt, FIRST, FINAL)
    with trio.fail_after(60):
        async with serve_model(model) as url:
            env = {
                **os.environ,
                env_url: url if fmt == "anthropic" else f"{url}/v1",
                "ANTHROPIC_API_KEY": "test",
                "OPENAI_API_KEY": "test",
            }
            done = await trio.run_process(
                [
                    sys.executable,
                    str(EXAMPLES / f"{script}.py"),
                    *flags,
                    "What does src/app.py print?",
                ],
                env=env,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert "Let me look." in out
    assert "It prints hello." in out
    assert "may only write under notes/" in out
    assert len(model.requests[fmt]) == 2
