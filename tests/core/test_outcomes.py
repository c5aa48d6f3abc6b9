"""Building results: a body's return normalized, failure texts, the lossless final check.

Reference behaviours B084, B085, B087, B088, B090, B098, B099 and B132.
"""

from __future__ import annotations

from typing import Any

import pytest

from support import Trace, call, context, text, tool, wire
from toolnursery import (
    FrozenDict,
    HookContext,
    ImageContent,
    TextContent,
    ToolArgsError,
    ToolError,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
)

# -- a body's return, normalized ---------------------------------------------------


class CustomToolError(ToolError):
    code = "CUSTOM"


@pytest.mark.spec("B084")
async def test_content_list_is_exactly_content_and_is_error() -> None:
    """B084: a content list → exactly {content, isError: false}; str and a tuple likewise."""
    registry = ToolRegistry()
    returns: list[Any] = [
        [TextContent("a"), ImageContent("aGk=", "image/png")],
        (TextContent("a"), ImageContent("aGk=", "image/png")),
    ]

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return returns.pop(0)

    registry.register(tool(body=body))
    for _ in range(2):
        result = await registry.execute(call())
        assert wire(result) == {
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            ],
            "isError": False,
        }
        assert type(result.content) is tuple

    async def text_body(args: Any, ctx: ToolRunContext) -> str:
        return "plain"

    registry.register(tool("text", body=text_body))
    assert wire(await registry.execute(call("text"))) == {
        "content": [{"type": "text", "text": "plain"}],
        "isError": False,
    }


@pytest.mark.spec("B085")
async def test_tool_return_threads_meta_and_omits_it_when_absent() -> None:
    """B085: ToolReturn(content, meta) puts meta on the result; no meta → no key."""
    registry = ToolRegistry()
    returns = [
        ToolReturn([TextContent("a")], meta={"lines": [1, 2]}),
        ToolReturn((TextContent("b"),)),
    ]

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return returns.pop(0)

    registry.register(tool(body=body))
    with_meta = await registry.execute(call())
    without = await registry.execute(call())
    assert wire(with_meta) == {
        "content": [{"type": "text", "text": "a"}],
        "isError": False,
        "meta": {"lines": [1, 2]},
    }
    assert type(with_meta.meta) is FrozenDict
    assert wire(without) == {"content": [{"type": "text", "text": "b"}], "isError": False}


async def test_a_single_content_block_return_is_one_block() -> None:
    """B084: returning one block is the same as a one-element list."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return ImageContent("aGk=", "image/gif")

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert result == ToolExecutionResult((ImageContent("aGk=", "image/gif"),), False)


@pytest.mark.spec("B090")
@pytest.mark.parametrize("value", [object(), {"f": len}, [TextContent("x"), object()]])
async def test_malformed_body_return_is_an_ordinary_error(value: Any) -> None:
    """B090: a return that is not text, blocks, a ToolReturn or JSON → an error result."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return value

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert result.is_error
    assert text(result).startswith('Error: tool "echo" returned ')
    assert result.error is None


# -- failure texts and identities --------------------------------------------------


@pytest.mark.spec("B087")
@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (ToolError("tool failed", code="BOOM"), {"name": "ToolError", "code": "BOOM"}),
        (CustomToolError("tool failed"), {"name": "CustomToolError", "code": "CUSTOM"}),
        (ToolArgsError(["tool failed"]), {"name": "ToolArgsError", "code": "INVALID_ARGS"}),
        (ValueError("tool failed"), None),
    ],
)
async def test_raising_body_reports_message_and_tool_error_identity(
    exc: Exception, error: Any
) -> None:
    """B087/B113: Error: message; {name, code} only for ToolError, named by concrete class."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        raise exc

    registry.register(tool(body=body))
    result = await registry.execute(call())
    message = "invalid arguments: tool failed" if isinstance(exc, ToolArgsError) else "tool failed"
    expected: dict[str, Any] = {
        "content": [{"type": "text", "text": f"Error: {message}"}],
        "isError": True,
    }
    if error is not None:
        expected["error"] = error
    assert wire(result) == expected


@pytest.mark.spec("B088")
async def test_message_extraction_never_raises() -> None:
    """B088: an exception whose str() raises → <unprintable thrown value>; an empty one → its
    class name."""

    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no printing")

    registry = ToolRegistry()
    raised: list[Exception] = [Hostile(), KeyError(), RuntimeError()]

    async def body(args: Any, ctx: ToolRunContext) -> str:
        raise raised.pop(0)

    registry.register(tool(body=body))
    assert text(await registry.execute(call())) == "Error: <unprintable thrown value>"
    assert text(await registry.execute(call())) == "Error: KeyError"
    assert text(await registry.execute(call())) == "Error: RuntimeError"


async def test_tool_error_with_broken_identity_keeps_only_its_text() -> None:
    """B087: a ToolError whose code cannot be read still yields Error: message."""

    class Broken(ToolError):
        @property
        def code(self) -> str:  # type: ignore[override]
            raise RuntimeError("no code")

    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        raise Broken("broken identity")

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert wire(result) == {
        "content": [{"type": "text", "text": "Error: broken identity"}],
        "isError": True,
    }


async def test_unreachable_values_render_even_when_unprintable() -> None:
    """B088: rogue values are rendered as JSON, else repr, else <unprintable thrown value>."""

    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    registry = ToolRegistry()
    registry.register(tool())
    values: list[Any] = [Opaque(), Hostile()]
    registry.guard(lambda execution: values.pop(0))
    first = await registry.execute(call())
    second = await registry.execute(call())
    assert text(first) == "Error: unreachable variant in ToolGuard result: <opaque>"
    assert text(second) == (
        "Error: unreachable variant in ToolGuard result: <unprintable thrown value>"
    )


# -- the final result: lossless JSON, frozen ---------------------------------------


@pytest.mark.spec("B090")
async def test_non_block_items_fail_final_materialization() -> None:
    """B090/B112: a list holding non-blocks fails the lossless-result check."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return [TextContent(123)]  # type: ignore[arg-type]  # a block, but not JSON text

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert wire(result) == {
        "content": [
            {"type": "text", "text": "Error: tool result must be losslessly JSON-serializable"}
        ],
        "isError": True,
    }


@pytest.mark.spec("B099")
@pytest.mark.parametrize(
    "bad_result",
    [
        ToolExecutionResult((TextContent("x"),), False, meta=lambda: 1),
        ToolExecutionResult((TextContent("x"),), False, meta={"n": float("nan")}),
        ToolExecutionResult(
            (TextContent("x"),), False, additional_contexts=(context("c", meta={1, 2}),)
        ),
        ToolExecutionResult((TextContent(42),), False),  # type: ignore[arg-type]
        ToolExecutionResult(("not a block",), False),  # type: ignore[arg-type]
        ToolExecutionResult((TextContent("x"),), False, error="not info"),  # type: ignore[arg-type]
    ],
    ids=["function-meta", "nan-meta", "set-context-meta", "int-text", "str-block", "str-error"],
)
async def test_non_json_final_result_is_replaced_before_observers(
    bad_result: ToolExecutionResult,
) -> None:
    """B099/B112: a lossy final outcome → the exact error; contexts and meta dropped."""
    registry = ToolRegistry()
    registry.register(tool())

    async def wrap(view: Any, next_: Any) -> Any:
        return bad_result

    registry.on_execute(wrap)
    trace = Trace(registry)
    result = await registry.execute(call())
    assert wire(result) == {
        "content": [
            {"type": "text", "text": "Error: tool result must be losslessly JSON-serializable"}
        ],
        "isError": True,
    }
    assert trace.results == [result]
    assert trace.results[0].is_error


@pytest.mark.spec("B099")
async def test_wrapper_result_with_list_content_is_frozen_not_rejected() -> None:
    """B098: a wrapper result built with lists is materialized into tuples, not rejected."""
    registry = ToolRegistry()
    registry.register(tool())
    ctx_with_list = HookContext([TextContent("c")], "test", {"m": [1]})  # type: ignore[arg-type]

    async def wrap(view: Any, next_: Any) -> Any:
        return ToolExecutionResult(
            [TextContent("x")],  # type: ignore[arg-type]
            False,
            additional_contexts=[ctx_with_list],  # type: ignore[arg-type]
            meta=[1, {"a": 2}],
        )

    registry.on_execute(wrap)
    result = await registry.execute(call())
    assert type(result.content) is tuple
    assert type(result.additional_contexts) is tuple
    assert type(result.additional_contexts[0].content) is tuple
    assert result.meta == (1, {"a": 2})
    assert wire(result) == {
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
        "additionalContexts": [
            {"content": [{"type": "text", "text": "c"}], "source": "test", "meta": {"m": [1]}}
        ],
        "meta": [1, {"a": 2}],
    }


@pytest.mark.spec("B098")
async def test_empty_context_list_from_a_wrapper_is_normalized() -> None:
    """B084/B098: an empty list of contexts is frozen to () and omitted on the wire."""
    registry = ToolRegistry()
    registry.register(tool())

    async def wrap(view: Any, next_: Any) -> Any:
        return ToolExecutionResult(
            (TextContent("x"),),
            False,
            additional_contexts=[],  # type: ignore[arg-type]
        )

    registry.on_execute(wrap)
    result = await registry.execute(call())
    assert result.additional_contexts == ()
    assert wire(result) == {"content": [{"type": "text", "text": "x"}], "isError": False}


@pytest.mark.spec("B099")
@pytest.mark.parametrize(
    "contexts",
    [
        ("not a context",),
        (HookContext((TextContent(1),), "src"),),  # type: ignore[arg-type]
        (HookContext((TextContent("x"),), 7),),  # type: ignore[arg-type]
    ],
    ids=["not-a-context", "bad-block", "bad-source"],
)
async def test_malformed_contexts_fail_materialization(contexts: Any) -> None:
    """B099/B132: contexts are checked like the rest of the final result."""
    registry = ToolRegistry()
    registry.register(tool())

    async def wrap(view: Any, next_: Any) -> Any:
        return ToolExecutionResult((TextContent("x"),), False, additional_contexts=contexts)

    registry.on_execute(wrap)
    result = await registry.execute(call())
    assert text(result) == "Error: tool result must be losslessly JSON-serializable"
    assert result.additional_contexts == ()


@pytest.mark.spec("B132")
async def test_final_materialization_failure_drops_contexts() -> None:
    """B132: a result that fails materialization loses its contexts."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        ctx.defer_context(context("deferred"))
        return ToolReturn([TextContent("x")], meta=object())

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert text(result) == "Error: tool result must be losslessly JSON-serializable"
    assert result.additional_contexts == ()
