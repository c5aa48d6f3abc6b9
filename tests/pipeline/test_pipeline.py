"""The pipeline of one ``execute()``: snapshot, policy, wrappers, dispatch, post, observers.

Reference behaviours B045–B115, B129–B132 and B205–B207, except those of the modules the
pipeline drives, which have their own files: the views (test_execution.py), signal
replacement (test_signal.py), building results (test_outcomes.py), error texts and
codes (test_errors.py) and decisions (test_decisions.py). Cancellation precedence,
B116–B126, lives in test_cancellation.py. Every ``execute()`` test runs on both drivers (the
``driver`` fixture, ``tests/drivers.py``): ``registry.execute`` under trio and
``toolnursery.aio.execute`` on the native asyncio driver, whose hooks see the caller's signal
fused with the awaiting task's cancellation (``Driver.passes_on``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from drivers import Driver, neutral
from support import OK, Trace, call, context, text, wire
from support import tool as define
from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    TOOL_ABORTED_BEFORE_DISPATCH,
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Block,
    CancelSignal,
    Deny,
    FrozenDict,
    HookContext,
    TextContent,
    ToolDefinition,
    ToolDispatchExecution,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
)

Body = Callable[[Any, ToolRunContext], Awaitable[Any]]


async def _ok(args: Any, ctx: ToolRunContext) -> list[TextContent]:
    return [TextContent("ok")]


def tool(name: str = "echo", body: Any = None, **kwargs: Any) -> ToolDefinition:
    """``support.tool`` with a loop-neutral body: the tests that take the ``driver``
    fixture run it on both drivers (it awaits only through the driver, or nothing)."""
    return define(name, neutral(body if body is not None else _ok), **kwargs)


def context_labels(result: ToolExecutionResult) -> list[str]:
    return [c.content[0].text for c in result.additional_contexts]  # type: ignore[union-attr]


class Approval:
    """A fake approval service answering from a list, recording requests."""

    def __init__(self, *outcomes: Any, gate: trio.Event | None = None) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[ApprovalRequest] = []
        self.gate = gate

    async def request(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        return self.outcomes.pop(0)


# -- D. input snapshot, materialization, freezing ---------------------------------------


@pytest.mark.spec("B045")
def test_one_fresh_token_shared_by_every_phase(driver: Driver) -> None:
    """B045: each execute() mints a fresh token; every phase sees the same execution."""

    async def main() -> None:
        registry = ToolRegistry()
        seen_in_body: list[ToolExecutionToken] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            seen_in_body.append(ctx.token)
            return "ok"

        registry.register(tool(body=body))
        trace = Trace(registry)
        await driver.execute(registry, call())
        await driver.execute(registry, call(call_id="c2"))
        first, second = trace.executions[:4], trace.executions[4:]
        assert trace.events == ["pre", "execute", "post", "result"] * 2
        assert all(e is first[0] for e in first)
        assert all(e is second[0] for e in second)
        assert type(first[0].token) is ToolExecutionToken
        assert first[0].token is not second[0].token
        assert seen_in_body == [first[0].token, second[0].token]
        assert "token" not in ToolExecutionInput.__struct_fields__

    driver.run(main)


@pytest.mark.spec("B046")
def test_arguments_are_snapshotted_once_and_deep_frozen(driver: Driver) -> None:
    """B046: policy and body see one frozen copy; the caller's object is untouched."""

    async def main() -> None:
        registry = ToolRegistry()
        caller_args = {"path": "/a", "opts": {"tags": ["x", "y"]}}
        seen: list[Any] = []

        def guard(execution: ToolExecution) -> None:
            seen.append(execution.arguments)

        async def body(args: Any, ctx: ToolRunContext) -> str:
            seen.append(args)
            with pytest.raises(TypeError):
                args["path"] = "/etc/passwd"
            with pytest.raises(TypeError):
                args["opts"]["tags"] = []
            with pytest.raises(AttributeError):
                args["opts"]["tags"].append("z")
            return "ok"

        registry.register(tool(body=body))
        registry.guard(guard)
        trace = Trace(registry)
        result = await driver.execute(registry, call(arguments=caller_args))
        assert result == OK
        frozen = seen[0]
        assert all(s is frozen for s in seen)
        assert all(e.arguments is frozen for e in trace.executions)
        assert type(frozen) is FrozenDict
        assert type(frozen["opts"]) is FrozenDict
        assert frozen["opts"]["tags"] == ("x", "y")
        assert frozen == {"path": "/a", "opts": {"tags": ("x", "y")}}
        assert caller_args == {"path": "/a", "opts": {"tags": ["x", "y"]}}
        assert type(caller_args) is dict
        caller_args["opts"]["tags"].append("still mutable")  # type: ignore[index]
        assert frozen["opts"]["tags"] == ("x", "y")

    driver.run(main)


@pytest.mark.spec("B047")
def test_every_phase_and_the_error_shell_use_one_input_read(driver: Driver) -> None:
    """B047: the input is frozen; parent/agent/signal reach every phase and the error shell."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        scope = registry.scope()
        parent = ToolExecutionToken()
        signal = CancelSignal()
        trace = Trace(registry)
        input_ = call(signal=signal, agent=scope, parent=parent)
        with pytest.raises(AttributeError):
            input_.parent = None  # type: ignore[misc]
        await driver.execute(registry, input_)
        await driver.execute(
            registry, call(arguments={"f": object()}, signal=signal, agent=scope, parent=parent)
        )
        assert trace.events == ["pre", "execute", "post", "result", "result"]
        for execution in trace.executions:
            assert execution.parent is parent
            assert execution.agent is scope
            assert driver.passes_on(signal, execution.signal)
            assert execution.call_id == "c1"

    driver.run(main)


@pytest.mark.spec("B048")
def test_nested_arguments_are_read_once(driver: Driver) -> None:
    """B048: a mapping whose items change between reads is read exactly once."""

    async def main() -> None:
        reads: list[int] = []

        class Shifty(dict[str, Any]):
            def items(self) -> Any:
                reads.append(1)
                if len(reads) == 1:
                    return iter([("mode", "safe")])
                return iter([("mode", {1, 2})])

        registry = ToolRegistry()
        seen: list[Any] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            seen.append(args)
            return "ok"

        registry.register(tool(body=body))
        result = await driver.execute(registry, call(arguments={"outer": Shifty()}))
        assert result == OK
        assert seen == [{"outer": {"mode": "safe"}}]
        assert reads == [1]

    driver.run(main)


class _Opaque:
    pass


@pytest.mark.spec("B049")
@pytest.mark.parametrize(
    "bad",
    [
        {"fn": lambda: 1},
        {"items": {1, 2}},
        {"obj": _Opaque()},
        {"raw": b"bytes"},
        {"nan": float("nan")},
        {1: "non-string key"},
        ["not", "an", {"inner": float("inf")}],
    ],
    ids=["function", "set", "instance", "bytes", "nan", "int-key", "nested-inf"],
)
def test_non_json_arguments_skip_every_phase_but_publish_one_result(
    driver: Driver, bad: Any
) -> None:
    """B049/B111: exact text, no policy/body/post, one result for global + scoped observers."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        registry.register(tool(body=body))
        registry.guard(lambda execution: ran.append("guard"))
        scope = registry.scope()
        global_trace = Trace(registry)
        scoped_trace = Trace(scope)
        parent = ToolExecutionToken()
        signal = CancelSignal()
        before = repr(bad)
        result = await driver.execute(
            registry, call(arguments=bad, agent=scope, parent=parent, signal=signal)
        )
        assert wire(result) == {
            "content": [
                {
                    "type": "text",
                    "text": "Error: tool execution arguments must be losslessly JSON-serializable",
                }
            ],
            "isError": True,
        }
        assert ran == []
        assert global_trace.events == ["result"]
        assert scoped_trace.events == ["result"]
        (execution,) = global_trace.executions
        assert scoped_trace.executions == [execution]
        assert execution.arguments is msgspec.UNSET
        assert execution.agent is scope
        assert execution.parent is parent
        assert driver.passes_on(signal, execution.signal)
        with pytest.raises(AttributeError):
            execution.arguments = {}
        assert global_trace.results[0] is result
        if "lambda" not in before and "_Opaque" not in before:
            assert repr(bad) == before

    driver.run(main)


@pytest.mark.spec("B050")
def test_a_raising_argument_read_becomes_its_message(driver: Driver) -> None:
    """B050: an argument mapping that raises while read is reported with its own message."""

    async def main() -> None:
        reads: list[int] = []

        class Exploding(dict[str, Any]):
            def items(self) -> Any:
                reads.append(1)
                raise RuntimeError("getter exploded")

        registry = ToolRegistry()
        registry.register(tool())
        trace = Trace(registry)
        result = await driver.execute(registry, call(arguments=Exploding()))
        assert wire(result) == {
            "content": [{"type": "text", "text": "Error: getter exploded"}],
            "isError": True,
        }
        assert reads == [1]
        assert trace.events == ["result"]

    driver.run(main)


@pytest.mark.spec("B051")
def test_argument_failure_beats_a_pre_aborted_signal(driver: Driver) -> None:
    """B051: non-JSON args + an already-fired signal → the materialization error, once."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        trace = Trace(registry)
        signal = CancelSignal()
        signal.cancel("stop")
        result = await driver.execute(registry, call(arguments={"bad": {1, 2}}, signal=signal))
        assert (
            text(result) == "Error: tool execution arguments must be losslessly JSON-serializable"
        )
        assert result.error is None
        assert trace.events == ["result"]

    driver.run(main)


# -- E. pre-execute, ask and approval ----------------------------------------------------


@pytest.mark.spec("B055")
def test_no_listeners_or_pass_through_listeners_allow(driver: Driver) -> None:
    """B055: with no listeners, or listeners that call next(), the call runs."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        assert await driver.execute(registry, call()) == OK

        async def passthrough(execution: Any, next_: Any) -> Any:
            return await next_()

        registry.on_pre_execute(passthrough)
        registry.on_pre_execute(passthrough)
        assert await driver.execute(registry, call()) == OK

    driver.run(main)


@pytest.mark.spec("B055")
def test_deny_short_circuits_before_execute_with_the_exact_shape(driver: Driver) -> None:
    """B055/B109: deny → exactly {content: [Error: reason], isError: true}; no wrapper, no body."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        async def deny(execution: Any, next_: Any) -> Any:
            return Deny("policy says no")

        async def wrap(view: Any, next_: Any) -> Any:
            ran.append("execute")
            return await next_()

        registry.register(tool(body=body))
        registry.on_pre_execute(deny)
        registry.on_execute(wrap)
        result = await driver.execute(registry, call())
        assert wire(result) == {
            "content": [{"type": "text", "text": "Error: policy says no"}],
            "isError": True,
        }
        assert ran == []

    driver.run(main)


@pytest.mark.spec("B056")
def test_denials_pass_through_post_execute_but_stay_errors(driver: Driver) -> None:
    """B056: post-execute sees a denial; accept-with-content rewrites it yet keeps isError."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        seen: list[ToolExecutionResult] = []

        async def deny(execution: Any, next_: Any) -> Any:
            return Deny("blocked by policy")

        async def post(execution: Any, result: ToolExecutionResult, next_: Any) -> Any:
            seen.append(result)
            return Accept(content=[TextContent("rewritten denial")])

        registry.on_pre_execute(deny)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert text(seen[0]) == "Error: blocked by policy"
        assert text(result) == "rewritten denial"
        assert result.is_error is True
        assert result.error is None

    driver.run(main)


@pytest.mark.spec("B057")
@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (RuntimeError("pre exploded"), None),
        (ToolError("pre exploded", code="DENIED"), {"name": "ToolError", "code": "DENIED"}),
    ],
)
def test_raising_pre_listener_skips_body_and_post(
    driver: Driver, exc: Exception, error: Any
) -> None:
    """B057: a raising pre-execute listener → Error: message (+ {name, code} for ToolError)."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        async def pre(execution: Any, next_: Any) -> Any:
            raise exc

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            ran.append("post")
            return await next_()

        registry.register(tool(body=body))
        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        expected: dict[str, Any] = {
            "content": [{"type": "text", "text": "Error: pre exploded"}],
            "isError": True,
        }
        if error is not None:
            expected["error"] = error
        assert wire(result) == expected
        assert ran == []

    driver.run(main)


@pytest.mark.spec("B058")
def test_waterfalls_run_in_order_with_prepend_outermost(driver: Driver) -> None:
    """B058: pre before/after, wrapper around dispatch, then post; prepend runs first."""

    async def main() -> None:
        registry = ToolRegistry()
        events: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            events.append("dispatch")
            return "ok"

        def pre(label: str) -> Any:
            async def listener(execution: Any, next_: Any) -> Any:
                events.append(f"pre:{label}:before")
                decision = await next_()
                events.append(f"pre:{label}:after")
                return decision

            return listener

        async def wrap(view: Any, next_: Any) -> Any:
            events.append("execute:before")
            result = await next_()
            events.append("execute:after")
            return result

        def post(label: str) -> Any:
            async def listener(execution: Any, result: Any, next_: Any) -> Any:
                events.append(f"post:{label}:before")
                decision = await next_()
                events.append(f"post:{label}:after")
                return decision

            return listener

        registry.register(tool(body=body))
        registry.on_pre_execute(pre("a"))
        registry.on_pre_execute(pre("first"), prepend=True)
        registry.on_execute(wrap)
        registry.on_post_execute(post("a"))
        registry.on_post_execute(post("b"))
        assert await driver.execute(registry, call()) == OK
        assert events == [
            "pre:first:before",
            "pre:a:before",
            "pre:a:after",
            "pre:first:after",
            "execute:before",
            "dispatch",
            "execute:after",
            "post:a:before",
            "post:b:before",
            "post:b:after",
            "post:a:after",
        ]

    driver.run(main)


@pytest.mark.spec("B059")
def test_scoped_listeners_see_only_their_agents_calls(driver: Driver) -> None:
    """B059: scoped pre/execute/post/result listeners skip other agents and agent-less calls."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        mine = registry.scope()
        other = registry.scope()
        everyone = Trace(registry)
        scoped = Trace(mine)
        await driver.execute(registry, call(call_id="mine", agent=mine))
        await driver.execute(registry, call(call_id="other", agent=other))
        await driver.execute(registry, call(call_id="none"))
        assert [e.call_id for e in scoped.executions] == ["mine"] * 4
        assert [e.call_id for e in everyone.executions] == (
            ["mine"] * 4 + ["other"] * 4 + ["none"] * 4
        )

    driver.run(main)


@pytest.mark.spec("B059")
def test_nested_scope_calls_reach_ancestor_listeners(driver: Driver) -> None:
    """B059 (chains): a listener on a scope also sees calls of scopes nested inside it."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        parent = registry.scope()
        child = registry.scope(parent)
        trace = Trace(parent)
        child_trace = Trace(child)
        await driver.execute(registry, call(call_id="child", agent=child))
        await driver.execute(registry, call(call_id="parent", agent=parent))
        assert [e.call_id for e in trace.executions] == ["child"] * 4 + ["parent"] * 4
        assert [e.call_id for e in child_trace.executions] == ["child"] * 4

    driver.run(main)


def ask_listener(reason: str | None = None) -> Any:
    async def listener(execution: Any, next_: Any) -> Any:
        return Ask(reason)

    return listener


@pytest.mark.spec("B060")
@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("needs approval", "Error: needs approval"),
        (None, 'Error: tool "echo" requires approval (not yet supported)'),
    ],
)
def test_ask_without_approval_service_degrades_to_deny(
    driver: Driver, reason: str | None, expected: str
) -> None:
    """B060: no approval service → deny with the ask's reason, else the default text."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        registry.on_pre_execute(ask_listener(reason))
        result = await driver.execute(registry, call(agent=registry.scope()))
        assert wire(result) == {"content": [{"type": "text", "text": expected}], "isError": True}

    driver.run(main)


@pytest.mark.spec("B061")
def test_allowed_once_runs_the_call_and_forwards_the_ask_fields(driver: Driver) -> None:
    """B061: the service receives agent, tool name, call id, reason and the caller's signal."""

    async def main() -> None:
        approval = Approval("allowed-once", "allowed-once")
        registry = ToolRegistry(approval=approval)
        registry.register(tool())
        registry.on_pre_execute(ask_listener("risky"))
        scope = registry.scope()
        signal = CancelSignal()
        result = await driver.execute(registry, call(call_id="c9", agent=scope, signal=signal))
        assert result == OK
        (request,) = approval.requests
        assert msgspec.structs.replace(request, signal=signal) == ApprovalRequest(
            scope, "echo", "c9", "risky", signal
        )
        assert driver.passes_on(signal, request.signal)
        assert registry.approval is approval

    driver.run(main)


@pytest.mark.spec("B061")
def test_reasonless_ask_forwards_no_reason(driver: Driver) -> None:
    """B061: the reason is forwarded only if the ask had one."""

    async def main() -> None:
        approval = Approval("allowed-once")
        registry = ToolRegistry(approval=approval)
        registry.register(tool())
        registry.on_pre_execute(ask_listener(None))
        assert await driver.execute(registry, call(agent=registry.scope())) == OK
        assert approval.requests[0].reason is None

    driver.run(main)


@pytest.mark.spec("B062")
@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("rejected", 'Error: the user rejected tool "echo"'),
        ("cancelled", 'Error: approval for tool "echo" was cancelled'),
        (
            "unavailable",
            'Error: tool "echo" requires approval, but no approval channel is available',
        ),
    ],
)
def test_non_grant_outcomes_deny_with_fixed_reasons(
    driver: Driver, outcome: str, expected: str
) -> None:
    """B062: rejected / cancelled / unavailable deny with fixed texts (the ask's reason unused)."""

    async def main() -> None:
        registry = ToolRegistry(approval=Approval(outcome))
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        registry.register(tool(body=body))
        registry.on_pre_execute(ask_listener("my own reason"))
        result = await driver.execute(registry, call(agent=registry.scope()))
        assert wire(result) == {"content": [{"type": "text", "text": expected}], "isError": True}
        assert ran == []

    driver.run(main)


@pytest.mark.spec("B063")
def test_agentless_ask_is_denied_without_consulting_the_service(driver: Driver) -> None:
    """B063: no agent to route through → fixed denial; the service is never asked."""

    async def main() -> None:
        approval = Approval("allowed-once")
        registry = ToolRegistry(approval=approval)
        registry.register(tool())
        registry.on_pre_execute(ask_listener("ignored"))
        result = await driver.execute(registry, call())
        assert text(result) == (
            'Error: tool "echo" requires approval, but the call has no agent to route it through'
        )
        assert result.error is None
        assert approval.requests == []

    driver.run(main)


@pytest.mark.spec("B064")
def test_rogue_outcome_is_an_unreachable_error_that_skips_post(driver: Driver) -> None:
    """B064: an outcome outside the four → Error: unreachable variant…, no error key, no post."""

    async def main() -> None:
        registry = ToolRegistry(approval=Approval("yolo"))
        registry.register(tool())
        trace = Trace(registry)
        registry.on_pre_execute(ask_listener())
        result = await driver.execute(registry, call(agent=registry.scope()))
        assert wire(result) == {
            "content": [
                {"type": "text", "text": 'Error: unreachable variant in ApprovalOutcome: "yolo"'}
            ],
            "isError": True,
        }
        assert trace.events == ["pre", "result"]

    driver.run(main)


@pytest.mark.spec("B064")
def test_raising_approval_service_is_an_error_that_skips_post(driver: Driver) -> None:
    """B064 (code): a raising approval service is handled like a rogue outcome."""

    async def main() -> None:

        class Broken:
            async def request(self, request: ApprovalRequest) -> Any:
                raise RuntimeError("approval backend down")

        registry = ToolRegistry(approval=Broken())
        registry.register(tool())
        trace = Trace(registry)
        registry.on_pre_execute(ask_listener())
        result = await driver.execute(registry, call(agent=registry.scope()))
        assert text(result) == "Error: approval backend down"
        assert trace.events == ["pre", "result"]

    driver.run(main)


@pytest.mark.spec("B065")
@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("allowed-once", "Error: tool call aborted before dispatch"),
        ("cancelled", "Error: tool call aborted before dispatch"),
        ("rejected", 'Error: the user rejected tool "echo"'),
        (
            "unavailable",
            'Error: tool "echo" requires approval, but no approval channel is available',
        ),
    ],
)
def test_caller_cancellation_overtaking_approval(
    driver: Driver, outcome: str, expected: str
) -> None:
    """B065: allowed-once/cancelled after the caller aborted → ABORTED_BEFORE_DISPATCH;
    rejected/unavailable still deny."""

    async def main() -> None:
        gate = driver.event()
        approval = Approval(outcome, gate=gate)
        registry = ToolRegistry(approval=approval)
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        registry.register(tool(body=body))
        registry.on_pre_execute(ask_listener())
        signal = CancelSignal()
        results: list[ToolExecutionResult] = []

        async def run() -> None:
            results.append(
                await driver.execute(registry, call(agent=registry.scope(), signal=signal))
            )

        async with driver.open_nursery() as nursery:
            nursery.start_soon(run)
            await driver.wait_all_tasks_blocked()
            assert len(approval.requests) == 1
            signal.cancel("user pressed stop")
            gate.set()
        (result,) = results
        assert text(result) == expected
        assert ran == []
        if outcome in ("allowed-once", "cancelled"):
            assert result.error == ToolErrorInfo("AbortError", TOOL_ABORTED_BEFORE_DISPATCH)
        else:
            assert result.error is None

    driver.run(main)


# -- F. guards ----------------------------------------------------------------------------


@pytest.mark.spec("B067")
def test_guards_run_after_the_waterfall_and_cannot_be_bypassed(driver: Driver) -> None:
    """B067: a guard runs only after a final allow; a prepended allow cannot undo its denial."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        def guard(execution: ToolExecution) -> str | None:
            ran.append("guard")
            return "guarded"

        async def force_allow(execution: Any, next_: Any) -> Any:
            ran.append("force-allow")
            return Allow()

        registry.register(tool(body=body))
        registry.guard(guard)
        registry.on_pre_execute(force_allow, prepend=True)
        result = await driver.execute(registry, call())
        assert wire(result) == {
            "content": [{"type": "text", "text": "Error: guarded"}],
            "isError": True,
        }
        assert ran == ["force-allow", "guard"]

    driver.run(main)


@pytest.mark.spec("B067")
def test_guards_skip_denied_calls_and_run_after_allowed_once(driver: Driver) -> None:
    """B067: a pre-execute deny never reaches guards; ask → allowed-once does."""

    async def main() -> None:
        registry = ToolRegistry(approval=Approval("allowed-once"))
        registry.register(tool())
        consulted: list[str] = []
        registry.guard(lambda execution: consulted.append(execution.call_id))
        decisions = iter([Deny("no"), Ask("please")])

        async def pre(execution: Any, next_: Any) -> Any:
            return next(decisions)

        registry.on_pre_execute(pre)
        scope = registry.scope()
        denied = await driver.execute(registry, call(call_id="denied", agent=scope))
        asked = await driver.execute(registry, call(call_id="asked", agent=scope))
        assert text(denied) == "Error: no"
        assert asked == OK
        assert consulted == ["asked"]

    driver.run(main)


@pytest.mark.spec("B068")
def test_guards_compose_monotonically_global_first(driver: Driver) -> None:
    """B068: global guards before scoped ones; None abstains; the first reason wins."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        scope = registry.scope()
        order: list[str] = []

        def make(label: str, reason: str | None) -> Any:
            def guard(execution: ToolExecution) -> str | None:
                order.append(label)
                return reason

            return guard

        scope.guard(make("scoped", "scoped reason"))
        registry.guard(make("global-abstains", None))
        registry.guard(make("global-denies", "global reason"))
        registry.guard(make("never", "unused"))
        result = await driver.execute(registry, call(agent=scope))
        assert text(result) == "Error: global reason"
        assert order == ["global-abstains", "global-denies"]
        order.clear()
        registry2 = ToolRegistry()
        registry2.register(tool())
        scope2 = registry2.scope()
        scope2.guard(make("scoped", "scoped reason"))
        registry2.guard(make("global-abstains", None))
        assert text(await driver.execute(registry2, call(agent=scope2))) == "Error: scoped reason"
        assert order == ["global-abstains", "scoped"]

    driver.run(main)


@pytest.mark.spec("B069")
def test_scoped_guards_apply_only_to_that_agent(driver: Driver) -> None:
    """B069: a global guard applies to every call; a scoped one only to its agent's calls."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        scope = registry.scope()
        scope.guard(lambda execution: "scoped no")
        assert text(await driver.execute(registry, call(agent=scope))) == "Error: scoped no"
        assert await driver.execute(registry, call(agent=registry.scope())) == OK
        assert await driver.execute(registry, call()) == OK
        registry.guard(lambda execution: "global no")
        assert text(await driver.execute(registry, call())) == "Error: global no"
        assert (
            text(await driver.execute(registry, call(agent=registry.scope()))) == "Error: global no"
        )

    driver.run(main)


@pytest.mark.spec("B070")
def test_duplicate_guard_registrations_are_independent(driver: Driver) -> None:
    """B070: the same guard twice → lifting one leaves the other; closing the scope removes both."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        scope = registry.scope()

        def guard(execution: ToolExecution) -> str:
            return "nope"

        lift_first = scope.guard(guard)
        scope.guard(guard)
        lift_first()
        assert text(await driver.execute(registry, call(agent=scope))) == "Error: nope"
        scope.close()
        assert await driver.execute(registry, call(agent=scope)) == OK

    driver.run(main)


@pytest.mark.spec("B071")
def test_empty_string_denies_and_guards_see_unknown_tools(driver: Driver) -> None:
    """B071: any string denies (even ''); guards run for unknown names; they get the execution."""

    async def main() -> None:
        registry = ToolRegistry()
        seen: list[Any] = []

        def guard(execution: ToolExecution) -> str:
            seen.append(execution)
            return ""

        registry.guard(guard)
        result = await driver.execute(registry, call("ghost"))
        assert wire(result) == {"content": [{"type": "text", "text": "Error: "}], "isError": True}
        assert type(seen[0]) is ToolExecution
        assert seen[0].name == "ghost"

    driver.run(main)


@pytest.mark.spec("B071")
def test_raising_guard_is_an_error_that_skips_post(driver: Driver) -> None:
    """B071: a raising guard → Error: message; post-execute skipped; body not run."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())

        def guard(execution: ToolExecution) -> None:
            raise ToolError("guard broke", code="GUARD")

        registry.guard(guard)
        trace = Trace(registry)
        result = await driver.execute(registry, call())
        assert wire(result) == {
            "content": [{"type": "text", "text": "Error: guard broke"}],
            "isError": True,
            "error": {"name": "ToolError", "code": "GUARD"},
        }
        assert trace.events == ["pre", "result"]

    driver.run(main)


@pytest.mark.spec("B071")
def test_guard_returning_a_non_string_is_an_unreachable_error(driver: Driver) -> None:
    """B071: only str denies and None abstains; anything else is an unreachable-variant error."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        registry.guard(lambda execution: 42)  # type: ignore[arg-type,return-value]
        result = await driver.execute(registry, call())
        assert text(result) == "Error: unreachable variant in ToolGuard result: 42"

    driver.run(main)


# -- G. execute wrappers and signals ---------------------------------------------------


@pytest.mark.spec("B073")
def test_execute_runs_only_for_calls_that_passed_policy(driver: Driver) -> None:
    """B073: wrappers see allowed calls only — not denials, guard denials or pre-phase aborts."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        entered: list[str] = []

        async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
            entered.append(view.call_id)
            return await next_()

        async def pre(execution: ToolExecution, next_: Any) -> Any:
            if execution.call_id == "denied":
                return Deny("no")
            if execution.call_id == "aborted":
                execution.signal.cancel()
            return await next_()

        registry.on_pre_execute(pre)
        registry.guard(lambda e: "guarded" if e.call_id == "guarded" else None)
        registry.on_execute(wrap)
        for call_id in ("denied", "guarded", "aborted", "allowed"):
            await driver.execute(registry, call(call_id=call_id))
        assert entered == ["allowed"]

    driver.run(main)


@pytest.mark.spec("B074")
def test_a_raising_body_reaches_wrappers_and_post_as_a_result(driver: Driver) -> None:
    """B074: the base next() normalizes a raise into an error result, which then reaches post."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            raise ToolError("boom", code="BOOM")

        seen: list[ToolExecutionResult] = []

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            seen.append(result)
            return result

        async def post(execution: Any, result: ToolExecutionResult, next_: Any) -> Any:
            seen.append(result)
            return await next_()

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        expected = ToolExecutionResult(
            (TextContent("Error: boom"),), True, ToolErrorInfo("ToolError", "BOOM")
        )
        assert seen == [expected, expected]
        assert result == expected

    driver.run(main)


@pytest.mark.spec("B075")
def test_wrapper_short_circuit_skips_the_body_and_keeps_contexts(driver: Driver) -> None:
    """B075: a wrapper's own result (with its contexts) goes through post and becomes final."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        cached = ToolExecutionResult(
            (TextContent("cached"),), False, additional_contexts=(context("from wrapper"),)
        )

        async def wrap(view: Any, next_: Any) -> Any:
            return cached

        posted: list[ToolExecutionResult] = []

        async def post(execution: Any, result: ToolExecutionResult, next_: Any) -> Any:
            posted.append(result)
            return await next_()

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert ran == []
        assert posted == [cached]
        assert result == cached

    driver.run(main)


@pytest.mark.spec("B076")
@pytest.mark.parametrize(
    ("exc", "error"),
    [(RuntimeError("wrapper broke"), None), (ToolError("wrapper broke", code="WRAP"), "WRAP")],
)
def test_raising_wrapper_skips_post_and_drops_deferred_contexts(
    driver: Driver, exc: Exception, error: str | None
) -> None:
    """B076/B132: a raising wrapper → Error: message; post skipped; body contexts dropped."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            return "ok"

        async def wrap(view: Any, next_: Any) -> Any:
            await next_()
            raise exc

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        trace = Trace(registry)
        result = await driver.execute(registry, call())
        assert text(result) == "Error: wrapper broke"
        assert result.additional_contexts == ()
        assert (result.error.code if result.error else None) == error
        assert trace.events == ["pre", "execute", "result"]

    driver.run(main)


# -- H. dispatch: resolution and normalization ------------------------------------------


@pytest.mark.spec("B086")
def test_unknown_tool_is_resolved_at_dispatch_and_passes_post(driver: Driver) -> None:
    """B086/B104: pre, guards and wrappers see an unknown name; the error reaches post."""

    async def main() -> None:
        registry = ToolRegistry()
        consulted: list[str] = []
        registry.guard(lambda e: consulted.append("guard"))
        trace = Trace(registry)
        result = await driver.execute(registry, call("nope"))
        assert trace.events == ["pre", "execute", "post", "result"]
        assert consulted == ["guard"]
        assert wire(result) == {
            "content": [{"type": "text", "text": 'Error: unknown tool "nope"'}],
            "isError": True,
            "error": {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"},
        }

    driver.run(main)


@pytest.mark.spec("B086")
def test_pre_execute_deny_on_an_unknown_name_wins(driver: Driver) -> None:
    """B086: a pre-execute deny for an unknown name yields the deny text, not UNKNOWN_TOOL."""

    async def main() -> None:
        registry = ToolRegistry()

        async def deny(execution: Any, next_: Any) -> Any:
            return Deny("not on my watch")

        registry.on_pre_execute(deny)
        result = await driver.execute(registry, call("nope"))
        assert text(result) == "Error: not on my watch"
        assert result.error is None

    driver.run(main)


# -- I. post-execute --------------------------------------------------------------------


@pytest.mark.spec("B091")
def test_accept_replaces_content_keeping_success_meta_or_error(driver: Driver) -> None:
    """B091: accept(content) keeps is_error, error and meta; next() is accept-unchanged."""

    async def main() -> None:
        registry = ToolRegistry()

        async def good(args: Any, ctx: ToolRunContext) -> Any:
            return ToolReturn([TextContent("raw")], meta={"k": 1})

        async def bad(args: Any, ctx: ToolRunContext) -> Any:
            raise ToolError("bad", code="BAD")

        registry.register(tool("good", body=good))
        registry.register(tool("bad", body=bad))

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Accept(content=(TextContent("redacted"),))

        dispose = registry.on_post_execute(post)
        success = await driver.execute(registry, call("good"))
        failure = await driver.execute(registry, call("bad"))
        assert wire(success) == {
            "content": [{"type": "text", "text": "redacted"}],
            "isError": False,
            "meta": {"k": 1},
        }
        assert wire(failure) == {
            "content": [{"type": "text", "text": "redacted"}],
            "isError": True,
            "error": {"name": "ToolError", "code": "BAD"},
        }
        dispose()

        async def passthrough(execution: Any, result: Any, next_: Any) -> Any:
            return await next_()

        registry.on_post_execute(passthrough)
        unchanged = await driver.execute(registry, call("good"))
        assert wire(unchanged) == {
            "content": [{"type": "text", "text": "raw"}],
            "isError": False,
            "meta": {"k": 1},
        }

    driver.run(main)


@pytest.mark.spec("B092")
def test_block_is_verbatim_feedback_with_only_its_own_contexts(driver: Driver) -> None:
    """B092/B110: block → {content: feedback, isError: true} + the decision's contexts only."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            ctx.defer_context(context("deferred"))
            return ToolReturn([TextContent("secret")], meta={"k": 1})

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            return msgspec.structs.replace(
                result, additional_contexts=(*result.additional_contexts, context("wrapper"))
            )

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Block(
                feedback=[TextContent("do not read secrets")],
                additional_contexts=[context("block's own")],
            )

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert wire(result) == {
            "content": [{"type": "text", "text": "do not read secrets"}],
            "isError": True,
            "additionalContexts": [
                {"content": [{"type": "text", "text": "block's own"}], "source": "test"}
            ],
        }

    driver.run(main)


@pytest.mark.spec("B093")
def test_accept_contexts_append_after_existing_ones(driver: Driver) -> None:
    """B093: accept's additional_contexts follow the result's own contexts."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            return "ok"

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Accept(additional_contexts=[context("post")])

        registry.register(tool(body=body))
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert text(result) == "ok"
        assert context_labels(result) == ["deferred", "post"]

    driver.run(main)


@pytest.mark.spec("B094")
@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (RuntimeError("post broke"), None),
        (ToolError("post broke", code="POST_FAILURE"), "POST_FAILURE"),
    ],
)
def test_raising_post_listener_drops_contexts_and_meta(
    driver: Driver, exc: Exception, error: str | None
) -> None:
    """B094/B132: a raising post listener → Error: message; contexts and meta dropped."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            ctx.defer_context(context("deferred"))
            return ToolReturn([TextContent("ok")], meta={"k": 1})

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            raise exc

        registry.register(tool(body=body))
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        expected: dict[str, Any] = {
            "content": [{"type": "text", "text": "Error: post broke"}],
            "isError": True,
        }
        if error:
            expected["error"] = {"name": "ToolError", "code": error}
        assert wire(result) == expected

    driver.run(main)


@pytest.fixture
def matrix_registry() -> tuple[ToolRegistry, list[str]]:
    registry = ToolRegistry(approval=Approval("yolo"))
    posted: list[str] = []

    async def ok(args: Any, ctx: ToolRunContext) -> str:
        return "ok"

    async def fails(args: Any, ctx: ToolRunContext) -> str:
        raise RuntimeError("tool failed")

    registry.register(tool("ok", body=ok))
    registry.register(tool("fails", body=fails))

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        kind = execution.call_id
        if kind == "deny":
            return Deny("denied")
        if kind == "pre-raises":
            raise RuntimeError("pre exploded")
        if kind == "approval-raises":
            return Ask()
        if kind == "abort-in-pre":
            execution.signal.cancel()
        return await next_()

    def guard(execution: ToolExecution) -> str | None:
        if execution.call_id == "guard-denies":
            return "guarded"
        if execution.call_id == "guard-raises":
            raise RuntimeError("guard exploded")
        return None

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        if view.call_id == "wrapper-raises":
            raise RuntimeError("wrapper exploded")
        return await next_()

    async def post(execution: ToolExecution, result: Any, next_: Any) -> Any:
        posted.append(execution.call_id)
        return await next_()

    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    return registry, posted


@pytest.mark.spec("B095")
@pytest.mark.parametrize(
    ("case", "name", "through_post"),
    [
        ("success", "ok", True),
        ("tool-error", "fails", True),
        ("unknown", "nope", True),
        ("deny", "ok", True),
        ("guard-denies", "ok", True),
        ("abort-in-pre", "ok", True),
        ("non-json-args", "ok", False),
        ("pre-aborted", "ok", False),
        ("pre-raises", "ok", False),
        ("approval-raises", "ok", False),
        ("guard-raises", "ok", False),
        ("wrapper-raises", "ok", False),
    ],
)
def test_post_execute_bypass_matrix(
    driver: Driver,
    matrix_registry: tuple[ToolRegistry, list[str]],
    case: str,
    name: str,
    through_post: bool,
) -> None:
    """B095: which outcomes pass through post-execute and which go straight to observers."""

    async def main() -> None:
        registry, posted = matrix_registry
        observed: list[str] = []
        registry.on_result(lambda execution, result: observed.append(execution.call_id))
        signal = CancelSignal()
        if case == "pre-aborted":
            signal.cancel()
        arguments = {"bad": {1}} if case == "non-json-args" else {}
        await driver.execute(
            registry, call(name, arguments, call_id=case, signal=signal, agent=registry.scope())
        )
        assert posted == ([case] if through_post else [])
        assert observed == [case]

    driver.run(main)


@pytest.mark.spec("B096")
def test_accept_with_empty_content_replaces_with_nothing(driver: Driver) -> None:
    """B096: Accept(content=[]) empties the content; only None keeps it."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Accept(content=[])

        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert result.content == ()
        assert wire(result) == {"content": [], "isError": False}

    driver.run(main)


@pytest.mark.spec("B097")
def test_call_id_survives_content_replacement(driver: Driver) -> None:
    """B097: the observed execution keeps the model's call id when post replaces content."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Accept(content=[TextContent("replaced")])

        registry.on_post_execute(post)
        trace = Trace(registry)
        result = await driver.execute(registry, call(call_id="model-call-7"))
        assert text(result) == "replaced"
        assert {e.call_id for e in trace.executions} == {"model-call-7"}

    driver.run(main)


# -- J. materialization and observers -------------------------------------------------


@pytest.mark.spec("B098")
def test_execute_returns_the_frozen_object_observers_received(driver: Driver) -> None:
    """B098: the returned result is the very frozen object observers saw."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            return ToolReturn([TextContent("a")], meta={"nested": [{"x": 1}]})

        registry.register(tool(body=body))
        trace = Trace(registry)
        result = await driver.execute(registry, call())
        assert trace.results == [result]
        assert trace.results[0] is result
        assert type(result.content) is tuple
        with pytest.raises(AttributeError):
            result.is_error = True  # type: ignore[misc]
        with pytest.raises(TypeError):
            result.meta["nested"] = 1
        assert type(result.meta["nested"]) is tuple

    driver.run(main)


@pytest.mark.spec("B100")
@pytest.mark.parametrize(
    "case",
    ["success", "deny", "unknown", "raise", "non-json-args", "pre-aborted", "bad-result"],
)
def test_exactly_one_result_notification_per_execute(driver: Driver, case: str) -> None:
    """B100: one on_result call on every path."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            if case == "raise":
                raise RuntimeError("x")
            if case == "bad-result":
                return ToolReturn([TextContent("x")], meta={1, 2})
            return "ok"

        registry.register(tool(body=body))

        async def pre(execution: Any, next_: Any) -> Any:
            return Deny("no") if case == "deny" else await next_()

        registry.on_pre_execute(pre)
        results: list[ToolExecutionResult] = []
        registry.on_result(lambda execution, result: results.append(result))
        signal = CancelSignal()
        if case == "pre-aborted":
            signal.cancel()
        result = await driver.execute(
            registry,
            call(
                "nope" if case == "unknown" else "echo",
                {"x": {1}} if case == "non-json-args" else {},
                signal=signal,
            ),
        )
        assert results == [result]
        assert results[0] is result

    driver.run(main)


@pytest.mark.spec("B101")
def test_observer_failures_are_logged_and_contained(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    """B101: a raising observer is logged as a warning; the others still run."""

    async def main() -> None:

        class Hostile(Exception):
            def __str__(self) -> str:
                raise RuntimeError("cannot print")

        registry = ToolRegistry()
        registry.register(tool())
        seen: list[str] = []

        def raises(execution: Any, result: Any) -> None:
            raise RuntimeError("observer exploded")

        def hostile(execution: Any, result: Any) -> None:
            raise Hostile()

        registry.on_result(raises)
        registry.on_result(hostile)
        registry.on_result(lambda execution, result: seen.append("third"))
        with caplog.at_level(logging.WARNING, logger="toolnursery"):
            result = await driver.execute(registry, call(call_id="c7"))
        assert result == OK
        assert seen == ["third"]
        messages = [r.getMessage() for r in caplog.records if r.name == "toolnursery"]
        assert messages == [
            'tool "echo" (c7): tools/result observer failed: observer exploded',
            'tool "echo" (c7): tools/result observer failed: <unprintable thrown value>',
        ]
        assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == "toolnursery")

    driver.run(main)


@pytest.mark.spec("B101")
def test_observer_returning_an_awaitable_is_logged_not_awaited(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    """B101: observers are synchronous; a returned coroutine is closed and reported."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        awaited: list[str] = []

        async def sneaky() -> None:
            awaited.append("awaited")

        registry.on_result(lambda execution, result: sneaky())  # type: ignore[arg-type]
        with caplog.at_level(logging.WARNING, logger="toolnursery"):
            assert await driver.execute(registry, call()) == OK
        assert awaited == []
        assert [r.getMessage() for r in caplog.records if r.name == "toolnursery"] == [
            'tool "echo" (c1): tools/result observer failed: '
            "observer returned an awaitable; observers must be synchronous"
        ]

    driver.run(main)


@pytest.mark.spec("B102")
def test_result_observers_are_scope_filtered(driver: Driver) -> None:
    """B102: two calls for agent A + one agent-less → scoped 2, global 3."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        scope = registry.scope()
        scoped: list[str] = []
        everyone: list[str] = []
        scope.on_result(lambda e, r: scoped.append(e.call_id))
        registry.on_result(lambda e, r: everyone.append(e.call_id))
        await driver.execute(registry, call(call_id="a1", agent=scope))
        await driver.execute(registry, call(call_id="a2", agent=scope))
        await driver.execute(registry, call(call_id="none"))
        assert scoped == ["a1", "a2"]
        assert everyone == ["a1", "a2", "none"]

    driver.run(main)


@pytest.mark.spec("B103")
def test_observers_run_before_execute_returns(driver: Driver) -> None:
    """B103: an observer's registry change is visible to the next classification."""

    async def main() -> None:
        registry = ToolRegistry()
        dispose = registry.register(tool())

        def swap(execution: Any, result: Any) -> None:
            dispose()
            registry.register(tool(is_concurrency_safe=lambda args: True))

        registry.on_result(swap)
        assert registry.execution_mode(call()) == EXCLUSIVE
        await driver.execute(registry, call())
        assert registry.execution_mode(call()) == PARALLEL

    driver.run(main)


# -- M. contexts ------------------------------------------------------------------------


@pytest.mark.spec("B129")
def test_context_order_deferred_then_wrapper_then_post(driver: Driver) -> None:
    """B129: deferred (call order) → wrapper → post; each keeps its source and meta."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred-1", meta={"i": 1}))
            ctx.defer_context(HookContext((TextContent("deferred-2"),), "other-source"))
            return "ok"

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            return msgspec.structs.replace(
                result, additional_contexts=(*result.additional_contexts, context("wrapper"))
            )

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            return Accept(additional_contexts=(context("post"),))

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert context_labels(result) == ["deferred-1", "deferred-2", "wrapper", "post"]
        assert result.additional_contexts[0].meta == {"i": 1}
        assert result.additional_contexts[1].source == "other-source"

    driver.run(main)


@pytest.mark.spec("B129")
def test_wrapper_sees_deferred_contexts_only_after_dispatch_merges_them(driver: Driver) -> None:
    """B129: deferred contexts precede the wrapper's own even when the wrapper adds them."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            return "ok"

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            return msgspec.structs.replace(result, additional_contexts=(context("wrapper"),))

        registry.register(tool(body=body))
        registry.on_execute(wrap)
        assert context_labels(await driver.execute(registry, call())) == ["deferred", "wrapper"]

    driver.run(main)


@pytest.mark.spec("B130")
def test_deferred_contexts_survive_a_raising_body_but_not_a_block(driver: Driver) -> None:
    """B130: a raising body keeps its deferred contexts; a block keeps only its own."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            raise RuntimeError("composite failed")

        registry.register(tool(body=body))
        failed = await driver.execute(registry, call())
        assert text(failed) == "Error: composite failed"
        assert context_labels(failed) == ["deferred"]

        async def block(execution: Any, result: Any, next_: Any) -> Any:
            return Block(feedback=[TextContent("blocked")])

        registry.on_post_execute(block)
        blocked = await driver.execute(registry, call())
        assert blocked.additional_contexts == ()
        assert text(blocked) == "blocked"

    driver.run(main)


# -- S. event mechanics -----------------------------------------------------------------


@pytest.mark.spec("B205")
def test_all_four_seams_fire_for_an_allowed_call(driver: Driver) -> None:
    """B205: pre-execute, execute, post-execute and result all fire, in that order."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        trace = Trace(registry)
        assert await driver.execute(registry, call()) == OK
        assert trace.events == ["pre", "execute", "post", "result"]

    driver.run(main)


@pytest.mark.spec("B206")
def test_disposing_removes_all_four_listeners(driver: Driver) -> None:
    """B206: each disposer (and closing the owning scope) removes its listener."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        events: list[str] = []

        async def pre(e: Any, n: Any) -> Any:
            events.append("pre")
            return await n()

        async def wrap(v: Any, n: Any) -> Any:
            events.append("execute")
            return await n()

        async def post(e: Any, r: Any, n: Any) -> Any:
            events.append("post")
            return await n()

        disposers = [
            registry.on_pre_execute(pre),
            registry.on_execute(wrap),
            registry.on_post_execute(post),
            registry.on_result(lambda e, r: events.append("result")),
        ]
        await driver.execute(registry, call())
        assert events == ["pre", "execute", "post", "result"]
        for dispose in disposers:
            dispose()
        events.clear()
        assert await driver.execute(registry, call()) == OK
        assert events == []

        scope = registry.scope()
        scope.on_pre_execute(pre)
        scope.on_execute(wrap)
        scope.on_post_execute(post)
        scope.on_result(lambda e, r: events.append("result"))
        await driver.execute(registry, call(agent=scope))
        assert events == ["pre", "execute", "post", "result"]
        scope.close()
        events.clear()
        await driver.execute(registry, call(agent=scope))
        assert events == []

    driver.run(main)


@pytest.mark.spec("B207")
def test_listeners_added_during_a_waterfall_do_not_join_it(driver: Driver) -> None:
    """B207: the list is captured when a waterfall starts; additions and removals wait."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        events: list[str] = []

        async def late(e: Any, n: Any) -> Any:
            events.append("late")
            return await n()

        disposers: list[Any] = []

        async def second(e: Any, n: Any) -> Any:
            events.append("second")
            return await n()

        async def first(e: Any, n: Any) -> Any:
            events.append("first")
            registry.on_pre_execute(late)
            disposers[0]()  # remove `second` mid-waterfall
            return await n()

        registry.on_pre_execute(first)
        disposers.append(registry.on_pre_execute(second))
        await driver.execute(registry, call())
        assert events == ["first", "second"]
        events.clear()
        await driver.execute(registry, call())
        assert events == ["first", "late"]

    driver.run(main)


@pytest.mark.spec("B207")
def test_listener_registered_in_pre_joins_the_same_calls_post_waterfall(driver: Driver) -> None:
    """B207: each waterfall captures its own list when it starts — a post listener added
    during pre-execute sees that very call's post phase; an observer added in the body too."""

    async def main() -> None:
        registry = ToolRegistry()
        events: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            registry.on_result(lambda e, r: events.append("observer"))
            return "ok"

        registry.register(tool(body=body))

        async def post(e: Any, r: Any, n: Any) -> Any:
            events.append("post")
            return await n()

        async def pre(e: Any, n: Any) -> Any:
            registry.on_post_execute(post)
            return await n()

        registry.on_pre_execute(pre)
        await driver.execute(registry, call())
        assert events == ["post", "observer"]

    driver.run(main)


@pytest.mark.spec("B207")
def test_calling_next_twice_advances_the_shared_queue(driver: Driver) -> None:
    """B207: a second next() runs the following listener, not the same ones again."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        events: list[str] = []

        async def twice(e: Any, n: Any) -> Any:
            events.append("twice")
            await n()
            return await n()

        async def short_circuit(e: Any, n: Any) -> Any:
            events.append("b")
            return Allow()

        async def c(e: Any, n: Any) -> Any:
            events.append("c")
            return Deny("c denies")

        registry.on_pre_execute(twice)
        registry.on_pre_execute(short_circuit)
        registry.on_pre_execute(c)
        result = await driver.execute(registry, call())
        assert events == ["twice", "b", "c"]
        assert text(result) == "Error: c denies"

    driver.run(main)


@pytest.mark.spec("B207")
def test_next_twice_in_wrappers_reruns_the_inner_chain_and_post_advances(driver: Driver) -> None:
    """B207, with a deliberate difference for execute wrappers: a wrapper's ``next`` is
    bound to its position, so a second call re-runs the inner wrappers and a fresh body
    (retry wrappers depend on it); the post waterfall keeps the shared queue."""

    async def main() -> None:
        registry = ToolRegistry()
        bodies: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            bodies.append("body")
            return "ok"

        registry.register(tool(body=body))

        async def retry(v: Any, n: Any) -> Any:
            await n()
            return await n()

        async def inner(v: Any, n: Any) -> Any:
            bodies.append("inner")
            return await n()

        registry.on_execute(retry)
        registry.on_execute(inner)
        result = await driver.execute(registry, call())
        assert bodies == ["inner", "body", "inner", "body"]
        assert result == OK

        posts: list[str] = []

        async def post_twice(e: Any, r: Any, n: Any) -> Any:
            await n()
            return await n()

        async def post_b(e: Any, r: Any, n: Any) -> Any:
            posts.append("b")
            return Accept()

        async def post_c(e: Any, r: Any, n: Any) -> Any:
            posts.append("c")
            return Accept(content=[TextContent("from c")])

        registry.on_post_execute(post_twice)
        registry.on_post_execute(post_b)
        registry.on_post_execute(post_c)
        assert text(await driver.execute(registry, call())) == "from c"
        assert posts == ["b", "c"]

    driver.run(main)


# -- robustness ------------------------------------------------------------------------


def test_listener_that_never_calls_next_short_circuits_the_rest(driver: Driver) -> None:
    """B058: a pre listener returning Allow without next() skips later listeners; so does post."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        events: list[str] = []

        async def shortcut(e: Any, n: Any) -> Any:
            events.append("shortcut")
            return Allow()

        async def skipped(e: Any, n: Any) -> Any:
            events.append("skipped")
            return Deny("should not run")

        async def post_shortcut(e: Any, r: Any, n: Any) -> Any:
            events.append("post-shortcut")
            return Accept()

        async def post_skipped(e: Any, r: Any, n: Any) -> Any:
            events.append("post-skipped")
            return Block(feedback=[TextContent("nope")])

        registry.on_pre_execute(shortcut)
        registry.on_pre_execute(skipped)
        registry.on_post_execute(post_shortcut)
        registry.on_post_execute(post_skipped)
        assert await driver.execute(registry, call()) == OK
        assert events == ["shortcut", "post-shortcut"]

    driver.run(main)


@pytest.mark.parametrize("phase", ["pre", "post"])
def test_listener_returning_a_rogue_decision_is_an_unreachable_error(
    driver: Driver, phase: str
) -> None:
    """B057/B094: a decision outside the union is an error that skips post-execute."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())

        async def pre(e: Any, n: Any) -> Any:
            return "allow" if phase == "pre" else await n()

        posted: list[str] = []

        async def post(e: Any, r: Any, n: Any) -> Any:
            posted.append("post")
            return None if phase == "post" else await n()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        result = await driver.execute(registry, call())
        assert result.is_error
        assert text(result).startswith("Error: unreachable variant in ")
        assert posted == ([] if phase == "pre" else ["post"])

    driver.run(main)


def test_wrapper_returning_a_non_result_is_an_error(driver: Driver) -> None:
    """A wrapper must return a ToolExecutionResult; anything else is an error result."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())

        async def wrap(v: Any, n: Any) -> Any:
            return "ok"

        registry.on_execute(wrap)
        result = await driver.execute(registry, call())
        assert text(result) == 'Error: unreachable variant in tools/execute result: "ok"'

    driver.run(main)


def test_plain_def_body_runs_in_a_worker_thread(driver: Driver) -> None:
    """A sync body runs in a worker thread and its return value is normalized."""

    async def main() -> None:
        import threading

        registry = ToolRegistry()
        threads: list[threading.Thread] = []

        def body(args: Any, ctx: ToolRunContext) -> str:
            threads.append(threading.current_thread())
            return f"sync {args['x']}"

        registry.register(tool(body=body))
        result = await driver.execute(registry, call(arguments={"x": 1}))
        assert text(result) == "sync 1"
        assert threads[0] is not threading.main_thread()

    driver.run(main)


def test_ten_thousand_deep_arguments_are_rejected_as_not_lossless(driver: Driver) -> None:
    """B111: nesting deeper than MAX_JSON_DEPTH (256) is the arguments error, not a crash."""

    async def main() -> None:
        nested: Any = 0
        for _ in range(10_000):
            nested = {"a": [nested]}
        registry = ToolRegistry()
        registry.register(tool())
        trace = Trace(registry)
        result = await driver.execute(registry, call(arguments=nested))
        assert (
            text(result) == "Error: tool execution arguments must be losslessly JSON-serializable"
        )
        assert trace.events == ["result"]

    driver.run(main)


# -- views, stages and edge normalizations -----------------------------------------------


@pytest.mark.spec("B101")
def test_observer_returning_a_non_coroutine_awaitable_is_reported(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    """B101: any awaitable an observer returns is reported; observers are synchronous."""

    async def main() -> None:

        class Later:
            def __await__(self) -> Any:
                yield from ()

        registry = ToolRegistry()
        registry.register(tool())
        registry.on_result(lambda execution, result: Later())  # type: ignore[arg-type]
        with caplog.at_level(logging.WARNING, logger="toolnursery"):
            assert await driver.execute(registry, call()) == OK
        assert "observers must be synchronous" in caplog.records[0].getMessage()

    driver.run(main)


def test_three_stages_compose_like_execute(driver: Driver) -> None:
    """prepare → dispatch → finalize (the scheduler's stages) give execute()'s results,
    and the prepare states are the bypass matrix: PENDING, RESOLVED or FINAL."""

    async def main() -> None:
        from toolnursery._pipeline._dispatch import dispatch
        from toolnursery._pipeline._stages import FINAL, PENDING, RESOLVED, finalize, prepare

        registry = ToolRegistry()
        registry.register(tool())

        async def pre(execution: ToolExecution, next_: Any) -> Any:
            if execution.call_id == "deny":
                return Deny("no")
            if execution.call_id == "raise":
                raise RuntimeError("pre exploded")
            return await next_()

        registry.on_pre_execute(pre)
        ok = await prepare(registry, call(call_id="ok"))
        denied = await prepare(registry, call(call_id="deny"))
        raised = await prepare(registry, call(call_id="raise"))
        assert (ok.state, denied.state, raised.state) == (PENDING, RESOLVED, FINAL)
        await dispatch(ok)
        assert ok.state == RESOLVED
        assert ok.invoked
        assert await finalize(ok) == OK
        assert text(await finalize(denied)) == "Error: no"
        assert text(await finalize(raised)) == "Error: pre exploded"
        assert ok.state == denied.state == raised.state == FINAL

    driver.run(main)


def test_carried_dispatch_lets_the_enclosing_scope_cancel_the_body(driver: Driver) -> None:
    """dispatch(carried=True): no scope of its own — the enclosing scope's Cancelled
    reaches the caller after the body was marked invoked."""

    async def main() -> None:
        from toolnursery._pipeline._dispatch import dispatch
        from toolnursery._pipeline._stages import prepare

        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            await driver.sleep(10)
            return "never"

        registry.register(tool(body=body))
        prepared = await prepare(registry, call())
        async with driver.move_on_after(1) as scope:
            await dispatch(prepared, carried=True)
        assert scope.cancelled_caught
        assert prepared.invoked
        assert prepared.result is None

    driver.run(main)


@pytest.mark.spec("B207")
def test_observers_added_or_removed_during_emit_wait_for_the_next_call(driver: Driver) -> None:
    """B207: the observer list is captured when the emit starts."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool())
        seen: list[str] = []
        disposers: list[Any] = []

        def first(execution: ToolExecution, result: ToolExecutionResult) -> None:
            seen.append(f"first:{execution.call_id}")
            if execution.call_id == "c1":
                registry.on_result(lambda e, r: seen.append(f"late:{e.call_id}"))
                disposers[0]()

        registry.on_result(first)
        disposers.append(registry.on_result(lambda e, r: seen.append(f"second:{e.call_id}")))
        await driver.execute(registry, call(call_id="c1"))
        await driver.execute(registry, call(call_id="c2"))
        assert seen == ["first:c1", "second:c1", "first:c2", "late:c2"]

    driver.run(main)
