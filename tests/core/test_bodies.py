"""What the pipeline reads from a tool body: async or not, and whether it may suspend.

A coroutine function with no ``await``, ``async for`` or ``async with`` cannot reach a
checkpoint, so the pipeline runs it without a cancel scope; anything it cannot inspect
may suspend. Wrappers that only await a body carry the body's answer.
"""

from __future__ import annotations

import functools
from typing import Any

import trio

from toolnursery import attach_output, define_tool
from toolnursery._core._bodies import is_async, mark_may_suspend, may_suspend


async def pure(args: Any, ctx: Any) -> str:
    return "ok"


async def awaits(args: Any, ctx: Any) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


def sync_body(args: Any, ctx: Any) -> str:
    return "ok"


def test_may_suspend_reads_the_body_code() -> None:
    async def iterates(args: Any, ctx: Any) -> str:
        async for _ in args:
            pass
        return "ok"

    async def enters(args: Any, ctx: Any) -> str:
        async with args:
            return "ok"

    async def comprehends(args: Any, ctx: Any) -> list[Any]:
        return [await item for item in args]

    assert may_suspend(pure) is False
    assert may_suspend(awaits) is True
    assert may_suspend(iterates) is True
    assert may_suspend(enters) is True
    assert may_suspend(comprehends) is True


def test_an_await_in_a_nested_function_is_not_the_bodys() -> None:
    async def outer(args: Any, ctx: Any) -> Any:
        async def inner() -> None:
            await trio.lowlevel.checkpoint()

        return inner  # defined, never awaited here

    assert may_suspend(outer) is False


def test_what_cannot_be_inspected_may_suspend() -> None:
    class Body:
        async def __call__(self, args: Any, ctx: Any) -> str:
            return "ok"

    assert may_suspend(Body()) is True
    assert may_suspend(functools.partial(pure, {})) is True
    # len, not print: a worker that ran Ray has a Python function as builtins.print
    assert may_suspend(len) is True


def test_the_answer_is_per_code_object_and_stable() -> None:
    def make(suspends: bool) -> Any:
        if suspends:

            async def body(args: Any, ctx: Any) -> str:
                await trio.lowlevel.checkpoint()
                return "ok"

        else:

            async def body(args: Any, ctx: Any) -> str:
                return "ok"

        return body

    for suspends in (True, False, True, False):  # the second of each answers from the cache
        assert may_suspend(make(suspends)) is suspends


def test_a_wrapper_carries_its_bodys_answer() -> None:
    def wrap(body: Any) -> Any:
        async def wrapper(args: Any, ctx: Any) -> Any:
            return await body(args, ctx)

        return wrapper

    for body, expected in ((pure, False), (awaits, True)):
        wrapper = wrap(body)
        assert may_suspend(wrapper) is True  # its own code awaits
        mark_may_suspend(wrapper, body)
        assert may_suspend(wrapper) is expected


def test_a_wrapper_that_takes_no_attributes_is_left_alone() -> None:
    wrapper = functools.partial(pure)
    mark_may_suspend(len, pure)  # a builtin: no attributes to set
    mark_may_suspend(wrapper, pure)
    assert may_suspend(len) is True
    assert may_suspend(wrapper) is False  # a partial takes attributes


def test_only_a_boolean_mark_counts() -> None:
    async def body(args: Any, ctx: Any) -> str:
        return "ok"

    body.__toolnursery_may_suspend__ = "no"  # type: ignore[attr-defined]
    assert may_suspend(body) is False  # read from the code, not the mark
    body.__toolnursery_may_suspend__ = True  # type: ignore[attr-defined]
    assert may_suspend(body) is True


def test_define_tool_and_attach_output_carry_the_body_answer() -> None:
    async def pure_dict(args: Any, ctx: Any) -> dict[str, int]:
        return {"n": 1}

    async def awaits_dict(args: Any, ctx: Any) -> dict[str, int]:
        await trio.lowlevel.checkpoint()
        return {"n": 1}

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for body, expected in ((pure_dict, False), (awaits_dict, True)):
        definition = define_tool(name="t", description="d", parameters={}, execute=body)
        assert may_suspend(definition.execute) is expected
        assert may_suspend(attach_output(definition, schema).execute) is expected


def test_is_async_means_calling_returns_a_coroutine() -> None:
    class AsyncCall:
        async def __call__(self, args: Any, ctx: Any) -> str:
            return "ok"

    class SyncCall:
        def __call__(self, args: Any, ctx: Any) -> str:
            return "ok"

    async def agen(args: Any, ctx: Any) -> Any:
        yield "ok"

    assert is_async(pure) is True
    assert is_async(awaits) is True
    assert is_async(AsyncCall()) is True
    assert is_async(functools.partial(pure, {})) is True
    assert is_async(sync_body) is False
    assert is_async(SyncCall()) is False
    assert is_async(agen) is False  # calling it returns an async generator, not a coroutine
    assert is_async(print) is False
