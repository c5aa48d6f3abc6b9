"""Typed tool outputs: attach_output validates, renders and keeps the structured value.

A declared output (a structured-output schema or a msgspec.Struct type) turns the body's
return value into ``content`` for the model and ``structured_content`` for programs; a
value that does not fit is a ``ToolOutputError`` result naming the path, never a crash.
The pipeline keeps the structured value like ``meta``: snapshotted and frozen (B098/B099),
kept by a post-execute accept, dropped by a block (B092) and by an abort.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
import pytest
import trio
import trio.testing

from support import text
from toolnursery import (
    INVALID_TOOL_OUTPUT,
    TOOL_ABORTED,
    Accept,
    Block,
    CancelSignal,
    FrozenDict,
    ImageContent,
    OutputSchemaError,
    RegistrationError,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolOutputError,
    ToolRegistry,
    ToolResult,
    ToolReturn,
    ToolRunContext,
    attach_output,
    define_tool,
    output_schema,
)
from toolnursery.presentation import GenericResultView, result_view

FINDING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {"type": "string"},
        "line": {"type": "integer"},
        "severity": {"type": "string", "enum": ["low", "high"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["file", "severity"],
    "additionalProperties": False,
}


class Position(msgspec.Struct, frozen=True):
    line: int
    column: int = 1


class Count(msgspec.Struct, frozen=True, rename="camel"):
    file_name: str
    lines: Annotated[int, msgspec.Meta(ge=0)]
    first: Position | None = None


def raw_tool(body: Any, name: str = "probe") -> ToolDefinition:
    return ToolDefinition(name, f"the {name} tool", {"type": "object", "properties": {}}, body)


def returning(value: Any) -> Callable[[Any, ToolRunContext], Awaitable[Any]]:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return value

    return body


async def run(definition: ToolDefinition, args: Any = None, **kwargs: Any) -> ToolExecutionResult:
    registry = ToolRegistry()
    registry.register(definition)
    return await registry.execute(
        ToolExecutionInput("c1", definition.name, {} if args is None else args, **kwargs)
    )


def failure(message: str) -> ToolExecutionResult:
    return ToolExecutionResult(
        (TextContent("Error: " + message),),
        True,
        ToolErrorInfo("ToolOutputError", INVALID_TOOL_OUTPUT),
    )


# -- schema outputs -------------------------------------------------------------------------


async def test_a_schema_output_keeps_the_value_and_renders_it_as_json() -> None:
    value = {"file": "a.py", "severity": "high", "tags": ["x"]}
    result = await run(attach_output(raw_tool(returning(value)), FINDING))
    assert result == ToolExecutionResult(
        (TextContent('{\n  "file": "a.py",\n  "severity": "high",\n  "tags": [\n    "x"\n  ]\n}'),),
        False,
        structured_content={"file": "a.py", "severity": "high", "tags": ("x",)},
    )
    assert type(result.structured_content) is FrozenDict
    with pytest.raises(TypeError):
        result.structured_content["file"] = "b.py"


async def test_the_structured_value_is_detached_from_the_body_s_object() -> None:
    value: dict[str, Any] = {"file": "a.py", "severity": "low", "tags": []}
    result = await run(attach_output(raw_tool(returning(value)), FINDING))
    value["tags"].append("later")
    assert result.structured_content["tags"] == ()


async def test_every_violation_is_one_tool_error_result_naming_the_paths() -> None:
    value = {"line": 1.5, "severity": "mid", "extra": 1}
    result = await run(attach_output(raw_tool(returning(value), "find"), FINDING))
    assert result == failure(
        'tool "find" returned invalid output: missing required property "value.file"; '
        '"value.line" must be an integer; "value.severity" must be one of ["low","high"]; '
        '"value.extra" is not a declared property (additionalProperties: false)'
    )
    assert result.structured_content is None


@pytest.mark.parametrize(
    ("value", "violation"),
    [
        ("just text", '"value" must be an object'),
        (None, '"value" must be an object'),
        ({"file": "a", "severity": "low", "tags": {1, 2}}, "value.tags is not JSON data: set"),
        (
            {"file": "a", "severity": "low", "line": math.nan},
            "value.line is not a finite JSON number: nan",
        ),
    ],
)
async def test_a_value_that_is_not_a_json_object_fits_nothing(value: Any, violation: str) -> None:
    result = await run(attach_output(raw_tool(returning(value)), FINDING))
    assert result == failure(f'tool "probe" returned invalid output: {violation}')


def test_the_schema_is_asserted_once_at_attach_time() -> None:
    bad = {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}
    with pytest.raises(OutputSchemaError) as raised:
        attach_output(raw_tool(returning({})), bad)
    assert raised.value.violations == (
        "schema.properties.a.pattern is not a supported keyword (subset: type/properties/"
        "required/additionalProperties/items/enum/const + annotations)",
    )
    with pytest.raises(OutputSchemaError, match="structured output is object-rooted"):
        attach_output(raw_tool(returning({})), {"type": "string"})
    with pytest.raises(OutputSchemaError, match=r"schema is not lossless JSON: .*-0\.0"):
        attach_output(raw_tool(returning({})), {"type": "object", "default": -0.0})


async def test_the_schema_is_snapshotted_so_later_edits_change_nothing() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    definition = attach_output(raw_tool(returning({"n": "x"})), schema)
    schema["properties"]["n"]["type"] = "string"
    assert (await run(definition)).is_error
    assert output_schema(definition) == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }


# -- Struct outputs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        Count("a.py", 3, Position(2)),
        {"fileName": "a.py", "lines": 3, "first": {"line": 2}},
        ToolReturn(structured=Count("a.py", 3, Position(2))),
    ],
    ids=["instance", "dict", "tool-return"],
)
async def test_a_struct_output_keeps_the_json_form(value: Any) -> None:
    result = await run(attach_output(raw_tool(returning(value)), Count))
    expected = {"fileName": "a.py", "lines": 3, "first": {"line": 2, "column": 1}}
    assert result.structured_content == expected
    assert not result.is_error
    assert msgspec.json.decode(text(result)) == expected


@pytest.mark.parametrize(
    ("value", "violation"),
    [
        ({"lines": 3}, 'missing required property "value.fileName"'),
        (
            {"fileName": "a", "lines": 1, "first": {"column": 2}},
            'missing required property "value.first.line"',
        ),
        ({"fileName": "a", "lines": -1}, '"value.lines" is invalid: Expected `int` >= 0'),
        # A Struct's constructor checks nothing; the round trip through builtins does.
        (Count("a", "many"), '"value.lines" is invalid: Expected `int`, got `str`'),  # type: ignore[arg-type]
        ("text", '"value" is invalid: Expected `object`, got `str`'),
        (Count("a", 1, object()), "value is not JSON data: Encoding objects of type object"),  # type: ignore[arg-type]
    ],
)
async def test_a_struct_violation_names_the_path(value: Any, violation: str) -> None:
    result = await run(attach_output(raw_tool(returning(value), "count"), Count))
    assert result.is_error
    assert result.error == ToolErrorInfo("ToolOutputError", INVALID_TOOL_OUTPUT)
    assert text(result).startswith(f'Error: tool "count" returned invalid output: {violation}')


async def test_a_closed_struct_reports_an_undeclared_key() -> None:
    class Closed(msgspec.Struct, forbid_unknown_fields=True):
        a: int

    result = await run(attach_output(raw_tool(returning({"a": 1, "b": 2})), Closed))
    assert result == failure(
        'tool "probe" returned invalid output: "value.b" is not a declared property'
    )


async def test_a_struct_float_that_is_not_lossless_json_is_refused() -> None:
    class Score(msgspec.Struct):
        score: float

    result = await run(attach_output(raw_tool(returning(Score(math.inf))), Score))
    assert result == failure(
        'tool "probe" returned invalid output: value.score is not a finite JSON number: inf'
    )


def test_the_struct_schema_is_rooted_at_the_object() -> None:
    schema = output_schema(attach_output(raw_tool(returning({})), Count))
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["required"] == ("fileName", "lines")
    assert schema["properties"]["lines"] == {"type": "integer", "minimum": 0}
    # The nested Struct stays under $defs, so the root's references resolve.
    assert schema["properties"]["first"]["anyOf"][0] == {"$ref": "#/$defs/Position"}
    assert schema["$defs"]["Position"]["required"] == ("line",)

    flat = output_schema(attach_output(raw_tool(returning({})), Position))
    assert flat == {
        "title": "Position",
        "type": "object",
        "properties": {"line": {"type": "integer"}, "column": {"type": "integer", "default": 1}},
        "required": ("line",),
    }


class Custom:
    pass


class Odd(msgspec.Struct):
    c: Custom


def test_structs_without_an_object_schema_are_refused() -> None:
    class Row(msgspec.Struct, array_like=True):
        a: int

    class Lossy(msgspec.Struct):
        score: float = math.nan

    class Local(msgspec.Struct):
        here: LocalOnly  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(OutputSchemaError, match="Row must not be array_like"):
        attach_output(raw_tool(returning({})), Row)
    with pytest.raises(OutputSchemaError, match="Odd has no JSON Schema: Generating JSON schema"):
        attach_output(raw_tool(returning({})), Odd)
    with pytest.raises(OutputSchemaError, match="Local has no JSON Schema: name 'LocalOnly'"):
        attach_output(raw_tool(returning({})), Local)
    with pytest.raises(
        OutputSchemaError,
        match=r"Lossy schema is not JSON: value.properties.score.default is not a finite",
    ):
        attach_output(raw_tool(returning({})), Lossy)


# -- rendering --------------------------------------------------------------------------------


async def test_render_gets_the_arguments_and_the_typed_value() -> None:
    seen: list[Any] = []

    def render(args: Any, value: Count) -> str:
        seen.append((args, value))
        return f"{value.file_name}: {value.lines} lines"

    definition = attach_output(
        raw_tool(returning({"fileName": "a.py", "lines": 2})), Count, render=render
    )
    result = await run(definition, {"path": "a.py"})
    assert result == ToolExecutionResult(
        (TextContent("a.py: 2 lines"),),
        False,
        structured_content={"fileName": "a.py", "lines": 2, "first": None},
    )
    assert seen == [({"path": "a.py"}, Count("a.py", 2))]


@pytest.mark.parametrize(
    ("rendered", "content"),
    [
        (
            [TextContent("a"), ImageContent("aGk=", "image/png")],
            (TextContent("a"), ImageContent("aGk=", "image/png")),
        ),
        ((TextContent("a"),), (TextContent("a"),)),
        (TextContent("one"), (TextContent("one"),)),
        ([], ()),
    ],
)
async def test_render_may_return_content_blocks(rendered: Any, content: Any) -> None:
    definition = attach_output(
        raw_tool(returning({"n": 1})), {"type": "object"}, render=lambda args, value: rendered
    )
    result = await run(definition)
    assert result.content == content
    assert result.structured_content == {"n": 1}


def _boom(args: Any, value: Any) -> str:
    raise RuntimeError("boom")


def _tool_error(args: Any, value: Any) -> str:
    raise ToolError("not today", code="NOPE")


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def _unprintable(args: Any, value: Any) -> str:
    raise Unprintable


def _silent(args: Any, value: Any) -> str:
    raise KeyError


@pytest.mark.parametrize(
    ("render", "message"),
    [
        (_boom, "output.render failed: boom"),
        (_unprintable, "output.render failed: <unprintable thrown value>"),
        (_silent, "output.render failed: KeyError"),
        (_tool_error, "output.render failed: not today"),
        (
            lambda a, v: 42,
            "output.render failed: render returned int; expected a str or a sequence of content blocks",
        ),
        (
            lambda a, v: ["text"],
            "output.render failed: render returned list; expected a str or a sequence of content blocks",
        ),
    ],
)
async def test_a_failing_render_is_a_tool_output_error(render: Any, message: str) -> None:
    definition = attach_output(raw_tool(returning({"n": 1})), {"type": "object"}, render=render)
    assert await run(definition) == failure(message)


def test_a_tool_output_error_carries_its_parts() -> None:
    error = ToolOutputError("t", ["a", "b"])
    assert (error.tool_name, error.violations, error.code, error.name) == (
        "t",
        ("a", "b"),
        "INVALID_TOOL_OUTPUT",
        "ToolOutputError",
    )
    assert error.message == 'tool "t" returned invalid output: a; b'
    assert isinstance(error, ToolError)


# -- the body's side -----------------------------------------------------------------------


async def test_a_tool_return_sets_meta_and_may_bring_its_own_content() -> None:
    own = ToolReturn([TextContent("two findings")], meta={"ui": 1}, structured={"n": 2})
    result = await run(attach_output(raw_tool(returning(own)), {"type": "object"}))
    assert result == ToolExecutionResult(
        (TextContent("two findings"),), False, meta={"ui": 1}, structured_content={"n": 2}
    )
    rendered = await run(
        attach_output(
            raw_tool(returning(ToolReturn(meta=3, structured={"n": 2}))), {"type": "object"}
        )
    )
    assert rendered == ToolExecutionResult(
        (TextContent('{\n  "n": 2\n}'),), False, meta=3, structured_content={"n": 2}
    )


async def test_a_tool_return_without_a_value_is_invalid() -> None:
    result = await run(
        attach_output(raw_tool(returning(ToolReturn([TextContent("x")]))), {"type": "object"})
    )
    assert result == failure('tool "probe" returned invalid output: "value" must be an object')


async def test_errors_the_body_raises_are_its_own() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        raise ToolError("disk full", code="ENOSPC")

    result = await run(attach_output(raw_tool(body), {"type": "object"}))
    assert result == ToolExecutionResult(
        (TextContent("Error: disk full"),), True, ToolErrorInfo("ToolError", "ENOSPC")
    )


async def test_an_async_body_stays_async_and_a_sync_body_stays_sync() -> None:
    threads: list[bool] = []

    def sync_body(args: Any, ctx: ToolRunContext) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return {"n": 1}

    async_def = attach_output(raw_tool(returning({"n": 1})), {"type": "object"})
    plain_def = attach_output(raw_tool(sync_body), {"type": "object"})
    assert inspect.iscoroutinefunction(async_def.execute)
    assert not inspect.iscoroutinefunction(plain_def.execute)
    assert (await run(plain_def)).structured_content == {"n": 1}
    assert threads == [False]  # the registry ran it in a worker thread


async def test_a_cancelled_body_is_aborted_and_keeps_no_value(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def slow(args: Any, ctx: ToolRunContext) -> Any:
        await trio.sleep(10)
        return {"n": 1}

    signal = CancelSignal()
    results: list[ToolExecutionResult] = []
    definition = attach_output(raw_tool(slow), {"type": "object"})
    async with trio.open_nursery() as nursery:

        async def go() -> None:
            results.append(await run(definition, signal=signal))

        nursery.start_soon(go)
        await trio.sleep(1)
        signal.cancel()
    assert results[0].error is not None
    assert results[0].error.code == TOOL_ABORTED
    assert results[0].structured_content is None


def test_attach_output_refuses_misuse() -> None:
    typed = attach_output(raw_tool(returning({})), {"type": "object"})
    with pytest.raises(RegistrationError, match='tool "probe" already declares an output'):
        attach_output(typed, {"type": "object"})
    with pytest.raises(RegistrationError, match="render must be callable"):
        attach_output(raw_tool(returning({})), {"type": "object"}, render="json")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="not int"):
        attach_output(raw_tool(returning({})), int)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="not list"):
        attach_output(raw_tool(returning({})), [])  # type: ignore[arg-type]


def test_everything_but_execute_is_kept() -> None:
    def present(args: Any) -> None:
        return None

    definition = msgspec.structs.replace(
        raw_tool(returning({})), timeout_ms=5.0, present_call=present, idempotent=True
    )
    typed = attach_output(definition, {"type": "object"})
    assert typed.execute is not definition.execute
    assert msgspec.structs.replace(typed, execute=definition.execute) == definition
    assert output_schema(definition) is None
    assert output_schema(typed) == {"type": "object"}


async def test_define_tool_validates_arguments_before_the_output() -> None:
    async def count(args: Any, ctx: ToolRunContext) -> Count:
        return Count(args["path"], len(args["path"]))

    definition = attach_output(
        define_tool(
            name="count",
            description="Count.",
            parameters={"path": {"type": "string", "required": True}},
            execute=count,
        ),
        Count,
        render=lambda args, value: f"{value.lines}",
    )
    ok = await run(definition, {"path": "abc"})
    assert ok == ToolExecutionResult(
        (TextContent("3"),),
        False,
        structured_content={"fileName": "abc", "lines": 3, "first": None},
    )
    bad = await run(definition, {})
    assert bad.error == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")


# -- the pipeline keeps it like meta ----------------------------------------------------------


async def test_post_execute_sees_it_accept_keeps_it_and_block_drops_it() -> None:
    seen: list[Any] = []
    observed: list[ToolExecutionResult] = []

    async def post(execution: ToolExecution, result: ToolExecutionResult, next_: Any) -> Any:
        seen.append(result.structured_content)
        return Accept(content=[TextContent("summarized")])

    registry = ToolRegistry()
    registry.register(attach_output(raw_tool(returning({"n": 1})), {"type": "object"}))
    registry.on_post_execute(post)
    registry.on_result(lambda execution, result: observed.append(result))
    accepted = await registry.execute(ToolExecutionInput("c1", "probe", {}))
    assert seen == [{"n": 1}]
    assert accepted == ToolExecutionResult(
        (TextContent("summarized"),), False, structured_content={"n": 1}
    )
    assert observed == [accepted]

    async def block(execution: ToolExecution, result: ToolExecutionResult, next_: Any) -> Any:
        return Block(feedback=[TextContent("no")])

    registry.on_post_execute(block, prepend=True)
    blocked = await registry.execute(ToolExecutionInput("c2", "probe", {}))
    assert blocked == ToolExecutionResult((TextContent("no"),), True)


async def test_a_structured_value_that_is_not_lossless_json_is_the_b099_error() -> None:
    # Without attach_output nothing checks it before the final materialization.
    result = await run(raw_tool(returning(ToolReturn([TextContent("x")], structured={1, 2}))))
    assert result == ToolExecutionResult(
        (TextContent("Error: tool result must be losslessly JSON-serializable"),), True
    )


async def test_a_plain_tool_return_threads_structured_through() -> None:
    result = await run(raw_tool(returning(ToolReturn([TextContent("x")], structured={"a": [1]}))))
    assert result.structured_content == {"a": (1,)}
    assert msgspec.json.encode(result) == (
        b'{"content":[{"type":"text","text":"x"}],"isError":false,"structuredContent":{"a":[1]}}'
    )


async def test_result_presenters_see_the_structured_value() -> None:
    def present_result(args: Any, result: ToolResult) -> GenericResultView:
        return GenericResultView(title=f"{result.structured['n']} found")

    definition = msgspec.structs.replace(
        attach_output(raw_tool(returning({"n": 4})), {"type": "object"}),
        present_result=present_result,
    )
    result = await run(definition)
    assert result_view(definition, {}, result) == GenericResultView(title="4 found")


async def test_define_tool_output_keyword_attaches_a_typed_output() -> None:
    """define_tool(output=...) validates, renders and keeps structured_content."""
    import msgspec as _msgspec

    from toolnursery import ToolExecutionInput, ToolRegistry, define_tool, output_schema

    class Weather(_msgspec.Struct, frozen=True):
        city: str
        celsius: float

    async def body(args: object, ctx: object) -> Weather:
        return Weather(city="Oslo", celsius=-3.5)

    definition = define_tool(
        name="weather",
        description="d",
        parameters={"city": {"type": "string", "required": True}},
        execute=body,
        output=Weather,
        render_output=lambda args, value: f"{value.city}: {value.celsius} C",
    )
    assert output_schema(definition) is not None
    registry = ToolRegistry()
    registry.register(definition)
    result = await registry.execute(ToolExecutionInput("c1", "weather", {"city": "Oslo"}))
    assert result.is_error is False
    assert result.structured_content == {"city": "Oslo", "celsius": -3.5}
    assert result.content[0].text == "Oslo: -3.5 C"  # type: ignore[union-attr]


async def test_tool_decorator_output_keyword_reports_invalid_output() -> None:
    from toolnursery import ToolExecutionInput, ToolRegistry, tool

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @tool(output=schema)
    async def count(word: str) -> dict[str, object]:
        """Count letters."""
        return {"n": "not a number"}

    registry = ToolRegistry()
    registry.register(count)
    result = await registry.execute(ToolExecutionInput("c1", "count", {"word": "abc"}))
    assert result.is_error is True
    assert result.error is not None
    assert result.error.code == "INVALID_TOOL_OUTPUT"
    assert '"value.n" must be an integer' in result.content[0].text  # type: ignore[union-attr]


def test_render_output_without_output_is_refused() -> None:
    from toolnursery import RegistrationError, define_tool

    async def body(args: object, ctx: object) -> str:
        return "x"

    with pytest.raises(RegistrationError, match="render_output needs output"):
        define_tool(
            name="t", description="d", parameters={}, execute=body, render_output=lambda a, v: "x"
        )
