"""The batch's sans-IO core on its own — the call machine (``_core/_lifecycle.py``) and the
batch machine (``_machine/``): it imports no event loop, and it runs a batch with none (the
scheduler's property tests drive it the same way, in ``test_scheduler_properties.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolnursery import (
    CancelSignal,
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    _machine,
)
from toolnursery._core import _lifecycle as _call
from toolnursery._core._lifecycle import (
    PENDING,
    RESOLVED,
    SLOT_MOVES,
    STATE_MOVES,
    CallMachine,
    Slot,
    after_abort,
    cut_short,
)
from toolnursery._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, ABORTED_RESULT
from toolnursery._machine._batch import DONE, INLINE, POOL, BatchMachine
from toolnursery._pipeline._dispatch import settle_dispatch

MACHINE = [*sorted(Path(_machine.__file__).parent.glob("*.py")), Path(_call.__file__)]
LOOPS = {"trio", "asyncio", "anyio", "sniffio"}


def imported(tree: ast.AST) -> set[str]:
    """The top-level packages a module imports at run time (``TYPE_CHECKING`` blocks
    skipped), anywhere in it (in functions too)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module"):
            names.add("<dynamic import>")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def test_the_machine_imports_no_event_loop() -> None:
    modules = MACHINE
    assert {m.name for m in modules} >= {"_lifecycle.py", "_batch.py", "_admission.py"}
    for module in modules:
        found = imported(ast.parse(module.read_text(), str(module)))
        assert not found & (LOOPS | {"<dynamic import>"}), (module.name, found & LOOPS)


def test_the_import_check_sees_an_event_loop_import() -> None:
    """The check above can fail: it finds a loop imported in a function, not one only
    for type checking."""
    source = (
        "import typing\nif typing.TYPE_CHECKING:\n    import trio\ndef f():\n    import asyncio\n"
    )
    assert imported(ast.parse(source)) & LOOPS == {"asyncio"}


def test_the_call_machine_tables_allow_only_the_drawn_moves() -> None:
    assert set(SLOT_MOVES[Slot.SETTLED]) == {Slot.COMMITTED}
    assert SLOT_MOVES[Slot.COMMITTED] == ()
    assert set(STATE_MOVES[PENDING]) == {RESOLVED, _call.FINAL}


@pytest.mark.spec("B126")
def test_abort_and_timeout_precedence_is_decided_in_the_call_machine() -> None:
    ok = ToolExecutionResult((), False)
    assert cut_short(invoked=False) is ABORTED_BEFORE_DISPATCH_RESULT
    assert cut_short(invoked=True) is ABORTED_RESULT
    timed = cut_short(invoked=True, timed_out=250)
    assert timed.error is not None
    assert timed.error.code == "TOOL_TIMEOUT"  # its own deadline came first: it wins
    assert after_abort(ok, invoked=True) is ABORTED_RESULT
    assert after_abort(ok, invoked=False) is ABORTED_BEFORE_DISPATCH_RESULT
    assert after_abort(timed, invoked=True) is timed  # an error stays as it is
    machine = CallMachine()
    machine.slot = Slot.RUNNING
    machine.invoked = True
    machine.unwind()
    assert (machine.state, machine.slot, machine.result) == (RESOLVED, Slot.SETTLED, ABORTED_RESULT)
    with pytest.raises(AssertionError):
        machine.unwind()  # SETTLED: not running any more


async def _body(args: object, ctx: ToolRunContext) -> str:
    await _never()  # it may suspend: a pooled call (the machine runs no body)
    return "never"


async def _never() -> None:
    raise AssertionError("the machine runs no body")


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        ToolDefinition("p", "p", {"type": "object"}, _body, is_concurrency_safe=lambda a: True)
    )
    registry.register(ToolDefinition("x", "x", {"type": "object"}, _body))
    return registry


def test_a_batch_runs_on_the_machine_with_no_event_loop() -> None:
    """Start, admission, settle out of order, commit in model order: plain method calls."""
    machine = BatchMachine(_registry(), CancelSignal(), None, 2, None)
    for i, name in enumerate(["p", "p", "p", "x"]):
        machine.add(ToolCall(f"c{i}", name, "{}"))
    machine.add(ToolCall("c0", "p", "{}"))  # a repeated id: decided without the registry
    machine.closed = True
    first, second, third, barrier, repeated = machine.calls
    steps = []
    for call in (first, second):
        keys = machine.classify(call)
        assert keys == ()
        steps.append(machine.start(call, keys, inline=False, barrier=False))
    assert steps == [POOL, POOL]
    assert machine.full()  # the cap: the driver waits before the third call
    settle_dispatch(second, "two")  # the later call settles first
    second.slot = Slot.SETTLED
    machine.settled(second)
    assert machine.commit_now() is None
    assert machine.results == []  # model order: the first has not settled
    settle_dispatch(first, "one")
    first.slot = Slot.SETTLED
    machine.settled(first)
    machine.commit_now()
    assert [r.content[0].text for r in machine.results] == ["one", "two"]
    assert machine.classify(third) == ()
    assert machine.start(third, (), inline=False, barrier=False) == POOL
    assert machine.classify(barrier) is None  # exclusive: the driver drains first
    machine.signal.cancel("stop")
    third.slot = Slot.RUNNING
    third.invoked = True
    third.unwind()  # the abort unwinds the running call
    machine.settled(third)
    machine.commit_now()
    machine.finish_unstarted()  # the barrier and the repeat never started
    assert machine.results[2] is ABORTED_RESULT
    assert machine.results[3:] == [ABORTED_BEFORE_DISPATCH_RESULT] * 2
    machine.admission.check()
    statistics = machine.statistics()
    assert (statistics.started, statistics.committed) == (5, 5)
    assert repeated.slot is Slot.COMMITTED
    assert DONE != INLINE != POOL
