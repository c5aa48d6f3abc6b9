"""One error tree: every name a result reports is a real class in ``_errors``."""

from __future__ import annotations

import inspect
from typing import Any

import trio

import toolnursery
from toolnursery import (
    AbortError,
    CancelSignal,
    DuplicateCallIdError,
    ToolCall,
    ToolDefinition,
    ToolError,
    ToolnurseryError,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._core import _errors as errors
from toolnursery._core._outcomes import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    ABORTED_RESULT,
    failure_result,
)

# Defined in _errors: the classes report their public home, so match them by the
# name they were defined under (an imported exception would carry another one).
CLASSES = [
    value
    for name, value in vars(errors).items()
    if inspect.isclass(value)
    and issubclass(value, BaseException)
    and value.__module__ in (errors.__name__, "toolnursery")
    and value.__qualname__ == name
]


def test_every_class_is_in_the_tree_exported_and_documented() -> None:
    assert {c.__name__ for c in CLASSES} == set(errors.__all__) - {
        n for n in errors.__all__ if n.isupper()
    }
    doc = errors.__doc__ or ""
    for cls in CLASSES:
        assert issubclass(cls, ToolnurseryError), cls
        assert cls.__name__ in doc, cls
        assert (cls.__doc__ or "").startswith("Raised when"), cls
        assert getattr(toolnursery, cls.__name__) is cls, cls


def test_the_canonical_abort_results_are_abort_errors() -> None:
    assert failure_result(AbortError()) == ABORTED_RESULT
    assert failure_result(AbortError(before_dispatch=True)) == ABORTED_BEFORE_DISPATCH_RESULT


async def test_every_error_name_a_batch_reports_is_a_class() -> None:
    started = trio.Event()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        if args.get("wait"):
            started.set()
            await trio.sleep_forever()
        return "ok"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("t", "t", {"type": "object"}, body, is_concurrency_safe=lambda a: True)
    )
    signal = CancelSignal()
    calls = [
        ToolCall("a", "t"),
        ToolCall("a", "t"),
        ToolCall("b", "nope"),
        ToolCall("c", "t", '{"wait": true}'),
        ToolCall("d", "t"),
    ]
    async with trio.open_nursery() as nursery:

        async def abort_once_started() -> None:
            await started.wait()
            signal.cancel()

        nursery.start_soon(abort_once_started)
        results = await run_tool_calls(registry, calls, signal=signal)
    names = [r.error.name if r.error else None for r in results]
    assert names == [None, "DuplicateCallIdError", "ToolNotFoundError", "AbortError", "AbortError"]
    for name in {n for n in names if n}:
        assert issubclass(getattr(errors, name), ToolError)
    assert results[1] == failure_result(DuplicateCallIdError("a"))
