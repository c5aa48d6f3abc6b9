"""The public test helpers in ``toolnursery.testing``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from support import text
from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    Ask,
    CancelSignal,
    Deny,
    TextContent,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
)
from toolnursery.testing import PhaseRecorder, ScriptedApproval, make_input, tool_from_function

# -- tool_from_function ------------------------------------------------------------------


async def test_tool_from_async_function_of_args() -> None:
    """An async (args) function becomes a body that runs in the calling task."""

    async def shout(args: Any) -> str:
        """Shout the text back.

        More detail that is not the description.
        """
        return str(args["text"]).upper()

    definition = tool_from_function(shout)
    assert definition.name == "shout"
    assert definition.description == "Shout the text back."
    assert definition.parameters == {"type": "object"}
    assert definition.is_concurrency_safe is None
    registry = ToolRegistry()
    registry.register(definition)
    result = await registry.execute(make_input("shout", {"text": "hi"}))
    assert text(result) == "HI"
    assert registry.execution_mode(make_input("shout")) == EXCLUSIVE


async def test_tool_from_async_function_of_args_and_ctx() -> None:
    """An (args, ctx) function receives the run context and can defer contexts."""
    seen: list[ToolRunContext] = []

    async def body(args: Any, ctx: ToolRunContext) -> ToolReturn:
        seen.append(ctx)
        return ToolReturn([TextContent(ctx.call_id)], meta={"n": 1})

    registry = ToolRegistry()
    registry.register(tool_from_function(body, "ctxful", description="uses ctx"))
    result = await registry.execute(make_input("ctxful", call_id="c42"))
    assert text(result) == "c42"
    assert result.meta == {"n": 1}
    assert seen[0].name == "ctxful"
    assert registry.get("ctxful").description == "uses ctx"  # type: ignore[union-attr]


async def test_tool_from_sync_function_runs_in_a_worker_thread() -> None:
    """A plain def (args) runs in a worker thread like any sync body."""
    threads: list[threading.Thread] = []

    def add(args: Any) -> str:
        threads.append(threading.current_thread())
        return str(args["a"] + args["b"])

    registry = ToolRegistry()
    registry.register(tool_from_function(add, parallel=True))
    result = await registry.execute(make_input("add", {"a": 1, "b": 2}))
    assert text(result) == "3"
    assert threads[0] is not threading.main_thread()
    assert registry.execution_mode(make_input("add")) == PARALLEL


async def test_tool_from_sync_function_of_args_and_ctx_and_defaults() -> None:
    """(args, ctx) sync functions pass through; optional extra parameters are allowed."""

    def body(args: Any, ctx: ToolRunContext, suffix: str = "!") -> str:
        return ctx.name + suffix

    registry = ToolRegistry()
    registry.register(
        tool_from_function(body, "named", parameters={"type": "object", "properties": {}})
    )
    assert text(await registry.execute(make_input("named"))) == "named!"
    assert registry.schemas()[0].parameters == {"type": "object", "properties": {}}


async def test_tool_from_lambda_and_callable_object() -> None:
    """A lambda needs a name; an object with an async __call__ counts as async."""

    class Echo:
        async def __call__(self, args: Any) -> str:
            return str(args["v"])

    registry = ToolRegistry()
    registry.register(tool_from_function(lambda args: "lam", "lam"))
    registry.register(tool_from_function(Echo(), "echo"))
    assert text(await registry.execute(make_input("lam"))) == "lam"
    assert text(await registry.execute(make_input("echo", {"v": "x"}))) == "x"
    with pytest.raises(TypeError, match="needs a name"):
        tool_from_function(lambda args: "x")


def test_tool_from_function_rejects_wrong_arity() -> None:
    """Functions that cannot take (args) or (args, ctx) are rejected early."""

    def none() -> str:
        return "x"

    def three(a: Any, b: Any, c: Any) -> str:
        return "x"

    with pytest.raises(TypeError, match="takes 0 positional"):
        tool_from_function(none)
    with pytest.raises(TypeError, match="takes 3 positional"):
        tool_from_function(three)


# -- make_input ---------------------------------------------------------------------------


def test_make_input_defaults_and_overrides() -> None:
    """Fresh call ids and signals by default; every field can be given."""
    first = make_input("t")
    second = make_input("t")
    assert type(first) is ToolExecutionInput
    assert first.arguments == {}
    assert first.call_id != second.call_id
    assert first.call_id.startswith("call-")
    assert first.signal is not second.signal
    assert not first.signal.cancelled
    registry = ToolRegistry()
    scope = registry.scope()
    signal = CancelSignal()
    parent = ToolExecutionToken()
    given = make_input("t", {"a": 1}, call_id="c1", signal=signal, agent=scope, parent=parent)
    assert given == ToolExecutionInput("c1", "t", {"a": 1}, signal, scope, parent)


# -- PhaseRecorder ---------------------------------------------------------------------


async def test_phase_recorder_records_phases_per_call_and_passes_through() -> None:
    """Every phase is recorded as (phase, call_id); outcomes are unchanged."""
    registry = ToolRegistry()
    registry.register(tool_from_function(lambda args: "ok", "ok"))
    recorder = PhaseRecorder()
    recorder.install(registry)

    async def deny(execution: Any, next_: Any) -> Any:
        return Deny("no") if execution.call_id == "denied" else await next_()

    registry.on_pre_execute(deny)
    ok = await registry.execute(make_input("ok", call_id="allowed"))
    denied = await registry.execute(make_input("ok", call_id="denied"))
    assert text(ok) == "ok"
    assert text(denied) == "Error: no"
    assert recorder.phases == [
        ("pre", "allowed"),
        ("execute", "allowed"),
        ("post", "allowed"),
        ("result", "allowed"),
        ("pre", "denied"),
        ("post", "denied"),
        ("result", "denied"),
    ]
    assert recorder.phases_for("denied") == ["pre", "post", "result"]
    assert recorder.results == [ok, denied]


async def test_phase_recorder_prepends_so_short_circuits_are_still_seen() -> None:
    """Installed first by default: a short-circuiting listener registered earlier does not
    hide the phase from the recorder."""
    registry = ToolRegistry()
    registry.register(tool_from_function(lambda args: "ok", "ok"))

    async def short(execution: Any, next_: Any) -> Any:
        return Deny("short")

    registry.on_pre_execute(short)
    recorder = PhaseRecorder()
    recorder.install(registry)
    late = PhaseRecorder()
    late.install(registry, prepend=False)
    await registry.execute(make_input("ok", call_id="c1"))
    assert recorder.phases_for("c1") == ["pre", "post", "result"]
    assert late.phases_for("c1") == ["post", "result"]


async def test_phase_recorder_on_a_scope_and_disposal() -> None:
    """A scope's recorder sees only that scope's calls; its disposer removes all four."""
    registry = ToolRegistry()
    registry.register(tool_from_function(lambda args: "ok", "ok"))
    scope = registry.scope()
    recorder = PhaseRecorder()
    dispose = recorder.install(scope)
    await registry.execute(make_input("ok", call_id="mine", agent=scope))
    await registry.execute(make_input("ok", call_id="global"))
    assert {call_id for _, call_id in recorder.phases} == {"mine"}
    dispose()
    recorder.clear()
    assert recorder.phases == []
    await registry.execute(make_input("ok", call_id="after", agent=scope))
    assert recorder.phases == []
    assert recorder.results == []


# -- ScriptedApproval ------------------------------------------------------------------


async def ask(execution: Any, next_: Any) -> Any:
    return Ask("please")


async def test_scripted_approval_answers_a_sequence_in_order() -> None:
    """The n-th request gets the n-th outcome; requests are recorded."""
    approval = ScriptedApproval(["allowed-once", "rejected"])
    registry = ToolRegistry(approval=approval)
    registry.register(tool_from_function(lambda args: "ran", "t"))
    registry.on_pre_execute(ask)
    scope = registry.scope()
    first = await registry.execute(make_input("t", call_id="c1", agent=scope))
    second = await registry.execute(make_input("t", call_id="c2", agent=scope))
    assert text(first) == "ran"
    assert text(second) == 'Error: the user rejected tool "t"'
    assert [r.call_id for r in approval.requests] == ["c1", "c2"]
    assert approval.requests[0].reason == "please"
    assert approval.requests[0].agent is scope
    assert approval.remaining == []


async def test_scripted_approval_by_call_id_then_tool_name_then_default() -> None:
    """A mapping answers by call id first, then by tool name, then the default."""
    approval = ScriptedApproval(
        {"special": "allowed-once", "t": "cancelled"}, default="unavailable"
    )
    registry = ToolRegistry(approval=approval)
    registry.register(tool_from_function(lambda args: "ran", "t"))
    registry.register(tool_from_function(lambda args: "ran", "u"))
    registry.on_pre_execute(ask)
    scope = registry.scope()
    by_id = await registry.execute(make_input("t", call_id="special", agent=scope))
    by_name = await registry.execute(make_input("t", call_id="c2", agent=scope))
    by_default = await registry.execute(make_input("u", call_id="c3", agent=scope))
    assert text(by_id) == "ran"
    assert text(by_name) == 'Error: approval for tool "t" was cancelled'
    assert text(by_default) == (
        'Error: tool "u" requires approval, but no approval channel is available'
    )
    assert approval.remaining == []


async def test_scripted_approval_without_an_answer_fails_loudly() -> None:
    """An exhausted script without a default surfaces as an error result naming the call."""
    approval = ScriptedApproval([])
    registry = ToolRegistry(approval=approval)
    registry.register(tool_from_function(lambda args: "ran", "t"))
    registry.on_pre_execute(ask)
    result = await registry.execute(make_input("t", call_id="c9", agent=registry.scope()))
    assert text(result) == 'Error: ScriptedApproval has no outcome for call "c9" (tool "t")'
    with pytest.raises(TypeError):
        ScriptedApproval("allowed-once")  # type: ignore[arg-type]


async def test_scripted_approval_sees_the_callers_signal() -> None:
    """The recorded request carries the caller's signal (to test cancellation races)."""
    approval = ScriptedApproval(["allowed-once"])
    registry = ToolRegistry(approval=approval)
    registry.register(tool_from_function(lambda args: "ran", "t"))
    registry.on_pre_execute(ask)
    signal = CancelSignal()
    await registry.execute(make_input("t", signal=signal, agent=registry.scope()))
    assert approval.requests[0].signal is signal


async def test_docs_testing_example_runs_as_written() -> None:
    """docs/testing.md's first example is a working test."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
    code = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)[0]
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(code, str(page), "exec"), namespace)
    await namespace["test_risky_tool_needs_approval"]()


async def test_module_docstring_example_runs() -> None:
    """The example in toolnursery.testing's docstring is a working test."""
    import textwrap

    import toolnursery.testing as testing_module

    doc = testing_module.__doc__ or ""
    code = textwrap.dedent(doc.split("Example::", 1)[1])
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    exec(compile(code, "toolnursery.testing", "exec"), namespace)
    await namespace["test_echo"]()
