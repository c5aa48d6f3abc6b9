"""An execute wrapper that replaces ``view.signal``, on both drivers: the body sees the
replacement, firing it cancels only that call's body, and a replacement that never
fires changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from drivers import Driver, current
from toolnursery import (
    CancelSignal,
    ToolCall,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
)

ABORTED = ToolErrorInfo("AbortError", "ABORTED")
Next = Callable[[], Awaitable[ToolExecutionResult]]


def setup(driver: Driver, fire_at: float | None) -> tuple[ToolRegistry, list[str]]:
    """A registry whose wrapper gives call ``c1`` a replacement signal, fired at
    ``fire_at`` (never when ``None``); each body records whether its signal fired."""
    seen: list[str] = []
    replacements: dict[str, CancelSignal] = {}

    async def body(args: Any, ctx: ToolRunContext) -> str:
        try:
            await current().sleep(args["s"])
        finally:
            # what the body's signal says once it ends: fired only by c1's replacement
            seen.append(f"{ctx.call_id}:{'fired' if ctx.signal.cancelled else 'quiet'}")
        return f"ok:{ctx.call_id}"

    async def wrap(view: ToolDispatchExecution, next_: Next) -> ToolExecutionResult:
        if view.call_id != "c1":
            return await next_()
        replacement = replacements["c1"] = CancelSignal()
        view.signal = replacement

        async def fire() -> None:
            await current().sleep(fire_at if fire_at is not None else float("inf"))
            replacement.cancel()

        async with current().background(fire):
            try:
                return await next_()
            finally:
                view.signal = view.execution.signal

    registry = ToolRegistry()
    registry.register(
        driver.tool(
            define_tool(
                name="nap",
                description="Sleep s seconds.",
                parameters={"s": {"type": "number"}},
                execute=body,
                is_concurrency_safe=lambda a: True,
            )
        )
    )
    registry.on_execute(wrap)
    return registry, seen


@pytest.mark.spec("B077", "B078")
def test_firing_a_replacement_cancels_only_its_call_in_a_batch(driver: Driver) -> None:
    async def main() -> tuple[list[Any], float, list[str]]:
        registry, seen = setup(driver, fire_at=1)
        calls = [ToolCall("c1", "nap", {"s": 5}), ToolCall("c2", "nap", {"s": 2})]
        results = await driver.run_tool_calls(registry, calls)
        return [r.error or r.text for r in results], driver.now(), sorted(seen)

    outcome, now, seen = driver.run(main)
    assert outcome == [ABORTED, "ok:c2"]
    assert now == pytest.approx(2)
    assert seen == ["c1:fired", "c2:quiet"]


def test_a_replacement_that_never_fires_changes_nothing(driver: Driver) -> None:
    async def main() -> tuple[list[Any], list[str]]:
        registry, seen = setup(driver, fire_at=None)
        calls = [ToolCall("c1", "nap", {"s": 1}), ToolCall("c2", "nap", {"s": 1})]
        results = await driver.run_tool_calls(registry, calls)
        return [r.text for r in results], sorted(seen)

    assert driver.run(main) == (["ok:c1", "ok:c2"], ["c1:quiet", "c2:quiet"])


@pytest.mark.parametrize("fire_at", [1.0, None])
def test_a_replacement_in_one_execute(driver: Driver, fire_at: float | None) -> None:
    async def main() -> Any:
        registry, _ = setup(driver, fire_at=fire_at)
        result = await driver.execute(
            registry, ToolExecutionInput(name="nap", arguments={"s": 3}, call_id="c1")
        )
        return result.error or result.text, driver.now()

    outcome, now = driver.run(main)
    if fire_at is None:
        assert (outcome, now) == ("ok:c1", pytest.approx(3))
    else:
        assert (outcome, now) == (ABORTED, pytest.approx(1))
