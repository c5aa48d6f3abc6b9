"""define_tool (B027-B033) with a SchemaSpec and with a Struct, and @tool."""

from __future__ import annotations

import enum
import inspect
import json
import math
import re
from typing import Annotated, Any, Literal

import msgspec
import pytest
import trio

import toolnursery._tools._define as define_module
from toolnursery._core._content import (
    TextContent,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolResult,
    ToolSchema,
)
from toolnursery._core._errors import RegistrationError, ToolArgsError
from toolnursery._core._execution import (
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRunContext,
)
from toolnursery._core._json import FrozenDict, snapshot
from toolnursery._core._signal import CancelSignal
from toolnursery._pipeline._registry import ToolRegistry
from toolnursery._tools._define import MAX_TIMEOUT_MS, define_tool, parse_docstring, tool
from toolnursery._tools._definition import ToolDefinition
from toolnursery._tools._presentation import GenericCallView, GenericResultView
from toolnursery._tools._schema import (
    SchemaSpec,
    compile_spec,
    schema_spec_to_json_schema,
)
from toolnursery._tools._struct_schema import struct_schema


def make_ctx(args: Any = None) -> ToolRunContext:
    execution = ToolExecution(
        call_id="c",
        name="t",
        arguments=args,
        signal=CancelSignal(),
        agent=None,
        parent=None,
        token=ToolExecutionToken(),
    )
    return ToolRunContext(execution, CancelSignal(), [])


async def run(definition: ToolDefinition, args: Any) -> Any:
    """Call ``execute`` as the registry would: await an async one, thread a sync one."""
    frozen = args if isinstance(args, str) else snapshot(args)
    if inspect.iscoroutinefunction(definition.execute):
        return await definition.execute(frozen, make_ctx(frozen))
    return await trio.to_thread.run_sync(definition.execute, frozen, make_ctx(frozen))


SHOUT_SPEC: SchemaSpec = {
    "text": {"type": "string", "required": True, "description": "what to say"},
    "uppercase": {"type": "boolean"},
}


async def shout(args: Any, ctx: ToolRunContext) -> str:
    text: str = args["text"]
    return text.upper() if args.get("uppercase") else text


def record(log: list[Any], item: Any, answer: Any) -> Any:
    """Append ``item`` to ``log`` and return ``answer`` (for one-line fakes)."""
    log.append(item)
    return answer


def shout_tool(**overrides: Any) -> ToolDefinition:
    options: dict[str, Any] = {
        "name": "shout",
        "description": "Repeat text",
        "parameters": SHOUT_SPEC,
        "execute": shout,
    }
    options.update(overrides)
    return define_tool(**options)


# --- B027: a registry-ready definition with a typed body ---------------------------------------


@pytest.mark.spec("B027")
async def test_define_tool_returns_a_definition_with_converted_schema() -> None:
    definition = shout_tool()
    assert isinstance(definition, ToolDefinition)
    assert definition.name == "shout"
    assert definition.description == "Repeat text"
    assert definition.parameters == schema_spec_to_json_schema(SHOUT_SPEC)
    assert await run(definition, {"text": "hello", "uppercase": True}) == "HELLO"


@pytest.mark.spec("B027")
async def test_optional_absent_runs_the_body() -> None:
    def body(args: Any, ctx: ToolRunContext) -> str:
        return f"{args['req']}:{args.get('opt', 'none')}"

    definition = define_tool(
        name="opt",
        description="d",
        parameters={"req": {"type": "string", "required": True}, "opt": {"type": "string"}},
        execute=body,
    )
    assert await run(definition, {"req": "hello"}) == "hello:none"
    assert await run(definition, {"req": "hello", "opt": "x"}) == "hello:x"


@pytest.mark.spec("B027")
async def test_body_receives_the_frozen_args_object_itself() -> None:
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(args)
        return "ok"

    definition = define_tool(name="t", description="d", parameters=SHOUT_SPEC, execute=body)
    args = snapshot({"text": "a", "extra": [1]})
    assert await definition.execute(args, make_ctx(args)) == "ok"
    assert seen[0] is args


@pytest.mark.spec("B027")
def test_execute_keeps_the_body_sync_or_async() -> None:
    def sync_body(args: Any, ctx: ToolRunContext) -> str:
        return "s"

    class AsyncCallable:
        async def __call__(self, args: Any, ctx: ToolRunContext) -> str:
            return "a"

    assert inspect.iscoroutinefunction(shout_tool().execute)
    assert not inspect.iscoroutinefunction(shout_tool(execute=sync_body).execute)
    assert inspect.iscoroutinefunction(shout_tool(execute=AsyncCallable()).execute)


@pytest.mark.spec("B027")
def test_sync_body_runs_and_validates_without_trio() -> None:
    definition = shout_tool(execute=lambda args, ctx: args["text"] * 2)
    assert definition.execute(snapshot({"text": "ab"}), make_ctx()) == "abab"
    with pytest.raises(ToolArgsError):
        definition.execute(snapshot({}), make_ctx())


@pytest.mark.spec("B027")
def test_later_changes_to_the_spec_do_not_affect_the_definition() -> None:
    spec: dict[str, Any] = {"a": {"type": "string", "required": True}}
    definition = define_tool(name="t", description="d", parameters=spec, execute=lambda a, c: "ok")
    spec["a"]["type"] = "number"
    spec["b"] = {"type": "string", "required": True}
    assert definition.parameters == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
    }
    assert definition.execute(snapshot({"a": "x"}), make_ctx()) == "ok"


@pytest.mark.spec("B027")
def test_validator_is_compiled_once_per_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def counting(spec: Any) -> Any:
        calls.append(spec)
        return compile_spec(spec)

    monkeypatch.setattr(define_module, "compile_spec", counting)
    definition = shout_tool(execute=lambda args, ctx: "ok")
    for _ in range(3):
        assert definition.execute(snapshot({"text": "x"}), make_ctx()) == "ok"
        with pytest.raises(ToolArgsError):
            definition.execute(snapshot({}), make_ctx())
        assert definition.is_concurrency_safe is None
    assert len(calls) == 1


# --- B028/B029: invalid arguments never reach the body ------------------------------------------


@pytest.mark.spec("B028")
async def test_invalid_args_raise_tool_args_error_and_skip_the_body() -> None:
    ran: list[object] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args)
        return "ran"

    definition = define_tool(
        name="read",
        description="d",
        parameters={"path": {"type": "string", "required": True}},
        execute=body,
    )
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {})
    assert str(info.value) == 'invalid arguments: missing required property "path"'
    assert info.value.code == "INVALID_ARGS"
    assert info.value.name == "ToolArgsError"
    assert ran == []


@pytest.mark.spec("B028")
async def test_sync_body_is_also_guarded() -> None:
    ran: list[object] = []
    definition = shout_tool(execute=lambda args, ctx: record(ran, args, "ran"))
    with pytest.raises(ToolArgsError):
        await run(definition, {"text": 3})
    assert ran == []


@pytest.mark.spec("B029")
async def test_violations_are_kept_in_order_and_joined() -> None:
    definition = define_tool(
        name="t",
        description="d",
        parameters={"a": {"type": "string", "required": True}, "b": {"type": "number"}},
        execute=lambda args, ctx: "unreachable",
    )
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {"b": "x"})
    assert info.value.violations == ('missing required property "a"', '"b" must be a number')
    assert (
        info.value.message
        == 'invalid arguments: missing required property "a"; "b" must be a number'
    )


@pytest.mark.spec("B021")
async def test_defaults_are_not_applied_for_a_spec() -> None:
    seen: list[Any] = []
    definition = define_tool(
        name="t",
        description="d",
        parameters={"limit": {"type": "number", "default": 10}},
        execute=lambda args, ctx: record(seen, args, "ok"),
    )
    assert await run(definition, {"other": 1}) == "ok"
    assert seen == [FrozenDict({"other": 1})]


# --- B030: timeout_ms ---------------------------------------------------------------------------


@pytest.mark.spec("B030")
@pytest.mark.parametrize("timeout", [1, 0.5, 30_000, MAX_TIMEOUT_MS])
def test_positive_finite_timeout_is_attached(timeout: float) -> None:
    assert shout_tool(timeout_ms=timeout).timeout_ms == timeout


@pytest.mark.spec("B030")
def test_timeout_absent_when_not_declared() -> None:
    assert shout_tool().timeout_ms is None


@pytest.mark.spec("B030")
@pytest.mark.parametrize(
    "timeout",
    [0, -1, -0.5, math.nan, math.inf, -math.inf, True, False, "10"],
)
def test_invalid_timeout_raises_at_definition(timeout: Any) -> None:
    with pytest.raises(RegistrationError) as info:
        shout_tool(timeout_ms=timeout)
    assert str(info.value) == "define_tool(shout): timeout_ms must be a positive finite number"


@pytest.mark.spec("B030")
def test_timeout_over_a_year_raises_the_registry_text() -> None:
    """B030: the bound is checked once, so define_tool says what register() says."""
    with pytest.raises(RegistrationError) as info:
        shout_tool(timeout_ms=MAX_TIMEOUT_MS + 1)
    assert str(info.value) == (
        "define_tool(shout): timeout_ms must be at most one year (31536000000 ms)"
    )


# --- B031: presenters validate softly -----------------------------------------------------------


@pytest.mark.spec("B031")
def test_presenters_absent_unless_declared() -> None:
    definition = shout_tool()
    assert definition.present_call is None
    assert definition.present_result is None
    assert definition.is_concurrency_safe is None


@pytest.mark.spec("B031")
def test_valid_args_give_the_authors_view_verbatim() -> None:
    view = GenericCallView(title="Open /a", kind="read", raw_input="/a")
    result_view = GenericResultView(title="done")
    seen: list[Any] = []

    def present_result(args: Any, result: ToolResult) -> GenericResultView:
        seen.append(result)
        return result_view

    definition = shout_tool(present_call=lambda args: view, present_result=present_result)
    result = ToolResult(content=(TextContent("x"),), is_error=False)
    assert definition.present_call is not None
    assert definition.present_result is not None
    assert definition.present_call(snapshot({"text": "/a"})) is view
    assert definition.present_result(snapshot({"text": "/a"}), result) is result_view
    assert seen == [result]


@pytest.mark.spec("B031")
@pytest.mark.parametrize("args", [{}, {"text": 1}, None, "not json", ["text"]])
def test_invalid_args_give_none_without_calling_the_presenter(args: Any) -> None:
    called: list[object] = []
    definition = shout_tool(
        present_call=lambda a: record(called, a, None),
        present_result=lambda a, r: record(called, a, None),
    )
    assert definition.present_call is not None
    assert definition.present_result is not None
    assert definition.present_call(args) is None
    assert definition.present_result(args, ToolResult(content=(), is_error=True)) is None
    assert called == []


@pytest.mark.spec("B031")
def test_a_raising_presenter_gives_none() -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError("presenter bug")

    definition = shout_tool(present_call=boom, present_result=boom)
    assert definition.present_call is not None
    assert definition.present_result is not None
    assert definition.present_call({"text": "a"}) is None
    assert definition.present_result({"text": "a"}, ToolResult(content=(), is_error=False)) is None


# --- B032: the classifier wrapper ------------------------------------------------------------------


@pytest.mark.spec("B032")
@pytest.mark.parametrize("args", [{}, {"text": 2}, None, "{oops"])
def test_invalid_args_classify_false_without_calling_the_classifier(args: Any) -> None:
    called: list[object] = []
    definition = shout_tool(is_concurrency_safe=lambda a: record(called, a, True))
    assert definition.is_concurrency_safe is not None
    assert definition.is_concurrency_safe(args) is False
    assert called == []


@pytest.mark.spec("B032")
def test_valid_args_return_the_authors_value() -> None:
    definition = shout_tool(is_concurrency_safe=lambda a: a["text"] == "read")
    assert definition.is_concurrency_safe is not None
    assert definition.is_concurrency_safe({"text": "read"}) is True
    assert definition.is_concurrency_safe({"text": "write"}) is False
    truthy = shout_tool(is_concurrency_safe=lambda a: "yes")
    assert truthy.is_concurrency_safe is not None
    answer: object = truthy.is_concurrency_safe({"text": "x"})
    assert answer == "yes"


@pytest.mark.spec("B032")
def test_a_raising_classifier_is_false() -> None:
    def boom(args: Any) -> bool:
        raise RuntimeError("classifier bug")

    definition = shout_tool(is_concurrency_safe=boom)
    assert definition.is_concurrency_safe is not None
    assert definition.is_concurrency_safe({"text": "x"}) is False


# --- B033: composition with unparseable JSON -------------------------------------------------------


@pytest.mark.spec("B033")
async def test_unparseable_json_string_is_not_an_object() -> None:
    with pytest.raises(ToolArgsError) as info:
        await run(shout_tool(), "{not json")
    assert str(info.value) == 'invalid arguments: "arguments" must be an object'


@pytest.mark.spec("B033")
async def test_empty_object_runs_an_all_optional_tool() -> None:
    definition = define_tool(
        name="t",
        description="d",
        parameters={"x": {"type": "string"}},
        execute=lambda args, ctx: f"x={args.get('x')}",
    )
    assert await run(definition, {}) == "x=None"


# --- parameters: malformed ------------------------------------------------------------------------


def test_unknown_spec_type_is_rejected_at_definition() -> None:
    with pytest.raises(
        RegistrationError, match=r'define_tool\(t\): unreachable variant in validateArgs: "weird"'
    ):
        define_tool(name="t", description="d", parameters={"x": {"type": "weird"}}, execute=shout)  # type: ignore[typeddict-item]


@pytest.mark.parametrize("parameters", [None, 3, ["x"], dict, msgspec.Struct])
def test_parameters_must_be_a_spec_or_a_struct_subclass(parameters: Any) -> None:
    with pytest.raises(RegistrationError, match=r"define_tool\(t\): parameters must be"):
        define_tool(name="t", description="d", parameters=parameters, execute=shout)


def test_execute_must_be_callable() -> None:
    with pytest.raises(RegistrationError, match="execute must be callable"):
        define_tool(name="t", description="d", parameters={}, execute="nope")  # type: ignore[call-overload]


# --- Struct parameters (B018: the typed view) ------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Server(msgspec.Struct, frozen=True):
    """A server.

    Attributes:
        host: the host name.
    """

    host: str
    port: int = 80


class Deploy(msgspec.Struct, frozen=True):
    """Deploy arguments.

    Attributes:
        target: where to deploy,
            fully qualified.
    """

    target: str
    count: int = 1
    ratio: float = 0.5
    dry_run: bool = False
    mode: Literal["fast", "safe"] = "safe"
    color: Color = Color.RED
    tags: list[str] = []
    servers: tuple[Server, ...] = ()
    primary: Server | None = None
    labels: dict[str, int] = {}
    note: Annotated[str, msgspec.Meta(description="free text", max_length=5)] = ""
    extra: Any = None


def deploy_tool(**overrides: Any) -> ToolDefinition:
    options: dict[str, Any] = {
        "name": "deploy",
        "description": "Deploy",
        "parameters": Deploy,
        "execute": lambda args, ctx: args,
    }
    options.update(overrides)
    return define_tool(**options)


@pytest.mark.spec("B018")
def test_struct_schema_is_inlined_with_required_and_optional_keys() -> None:
    schema = deploy_tool().parameters
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    assert schema["required"] == ["target"]
    props = schema["properties"]
    assert props["target"] == {
        "type": "string",
        "description": "where to deploy,\nfully qualified.",
    }
    assert props["count"] == {"type": "integer", "default": 1}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["dry_run"] == {"type": "boolean", "default": False}
    assert props["mode"] == {"type": "string", "enum": ["fast", "safe"], "default": "safe"}
    assert props["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert props["tags"] == {"type": "array", "default": [], "items": {"type": "string"}}
    server = {
        "type": "object",
        "properties": {
            "host": {"type": "string", "description": "the host name."},
            "port": {"type": "integer", "default": 80},
        },
        "required": ["host"],
    }
    assert props["servers"] == {"type": "array", "default": [], "items": server}
    assert props["primary"] == {**server, "type": ["object", "null"], "default": None}
    assert props["labels"] == {
        "type": "object",
        "default": {},
        "additionalProperties": {"type": "integer"},
    }
    assert props["note"] == {
        "type": "string",
        "description": "free text",
        "default": "",
        "maxLength": 5,
    }
    assert props["extra"] == {"default": None}


@pytest.mark.spec("B018")
async def test_struct_body_receives_a_typed_frozen_instance() -> None:
    instance = await run(
        deploy_tool(),
        {"target": "prod", "servers": [{"host": "a"}], "color": "green", "labels": {"x": 1}},
    )
    assert isinstance(instance, Deploy)
    assert instance.target == "prod"
    assert instance.count == 1
    assert instance.servers == (Server(host="a", port=80),)
    assert instance.color is Color.GREEN
    assert instance.labels == {"x": 1}
    with pytest.raises(AttributeError):
        instance.target = "other"  # type: ignore[misc]


@pytest.mark.spec("B018")
async def test_struct_violations_use_the_dsl_texts() -> None:
    args = {
        "target": 1,
        "count": "2",
        "ratio": True,
        "dry_run": "no",
        "mode": "slow",
        "color": "blue",
        "tags": ["a", 2],
        "servers": [{"host": "a"}, {"port": 1}],
        "primary": {"host": None},
        "labels": {"x": "1"},
    }
    with pytest.raises(ToolArgsError) as info:
        await run(deploy_tool(), args)
    assert info.value.violations == (
        '"target" must be a string',
        '"count" must be an integer',
        '"ratio" must be a number',
        '"dry_run" must be a boolean',
        '"mode" must be one of ["fast","safe"]',
        '"color" must be one of ["red","green"]',
        '"tags[1]" must be a string',
        'missing required property "servers[1].host"',
        '"primary.host" must be a string',
        '"labels.x" must be an integer',
    )


@pytest.mark.spec("B018")
@pytest.mark.parametrize("value", [True, 1.5, "1", None])
async def test_integer_field_rejects_non_integers(value: Any) -> None:
    with pytest.raises(ToolArgsError) as info:
        await run(deploy_tool(), {"target": "t", "count": value})
    assert info.value.violations == ('"count" must be an integer',)


@pytest.mark.spec("B018")
async def test_integral_float_is_an_integer() -> None:
    instance = await run(deploy_tool(), {"target": "t", "count": 3.0})
    assert instance.count == 3
    assert type(instance.count) is int


@pytest.mark.spec("B018")
async def test_optional_struct_field_accepts_null() -> None:
    instance = await run(deploy_tool(), {"target": "t", "primary": None})
    assert instance.primary is None


@pytest.mark.spec("B018")
async def test_constraint_failure_becomes_a_readable_violation() -> None:
    with pytest.raises(ToolArgsError) as info:
        await run(deploy_tool(), {"target": "t", "note": "too long"})
    assert info.value.violations == ('"note" must be at most 5 characters long',)


@pytest.mark.spec("B033")
async def test_struct_tool_rejects_a_raw_string() -> None:
    with pytest.raises(ToolArgsError) as info:
        await run(deploy_tool(), "not json")
    assert info.value.violations == ('"arguments" must be an object',)


class Mutable(msgspec.Struct):
    x: int


class HasMutable(msgspec.Struct, frozen=True):
    inner: Mutable


def test_struct_must_be_frozen() -> None:
    with pytest.raises(RegistrationError) as info:
        define_tool(name="t", description="d", parameters=Mutable, execute=shout)
    assert (
        str(info.value)
        == "define_tool(t): parameters Struct Mutable must be declared with frozen=True"
    )
    with pytest.raises(RegistrationError, match="Mutable must be declared with frozen=True"):
        define_tool(name="t", description="d", parameters=HasMutable, execute=shout)


class Unsupported(msgspec.Struct, frozen=True):
    blob: bytes


class NestedUnsupported(msgspec.Struct, frozen=True):
    when: list[Unsupported]


class Node(msgspec.Struct, frozen=True):
    children: list[Node] = []


class AmbiguousUnion(msgspec.Struct, frozen=True):
    value: int | list[int]  # unions of scalars are supported; this one is not


def test_struct_field_without_a_schema_form_is_rejected_by_name() -> None:
    with pytest.raises(RegistrationError) as info:
        define_tool(name="t", description="d", parameters=Unsupported, execute=shout)
    assert str(info.value) == 'define_tool(t): field "blob" has an unsupported type: bytes'
    with pytest.raises(
        RegistrationError,
        match=re.escape('field "Unsupported.blob" has an unsupported type: bytes'),
    ):
        define_tool(name="t", description="d", parameters=NestedUnsupported, execute=shout)
    with pytest.raises(RegistrationError) as union_info:
        define_tool(name="t", description="d", parameters=AmbiguousUnion, execute=shout)
    assert (
        str(union_info.value)
        == 'define_tool(t): field "value" has an unsupported type: int | list[int]'
    )


def test_recursive_struct_is_rejected() -> None:
    with pytest.raises(RegistrationError, match="Node is recursive"):
        define_tool(name="t", description="d", parameters=Node, execute=shout)


class Renamed(msgspec.Struct, frozen=True, rename="camel"):
    file_path: str


async def test_struct_rename_uses_wire_names_in_schema_and_messages() -> None:
    definition = define_tool(
        name="t", description="d", parameters=Renamed, execute=lambda a, c: a.file_path
    )
    assert definition.parameters["required"] == ["filePath"]
    assert await run(definition, {"filePath": "/x"}) == "/x"
    with pytest.raises(ToolArgsError, match='missing required property "filePath"'):
        await run(definition, {"file_path": "/x"})


def test_struct_schema_is_derived_once_per_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def counting(cls: Any, *args: Any) -> Any:
        calls.append(cls)
        return struct_schema(cls, *args)

    monkeypatch.setattr(define_module, "struct_schema", counting)
    definition = deploy_tool(is_concurrency_safe=lambda a: True)
    for _ in range(3):
        assert isinstance(definition.execute(snapshot({"target": "t"}), make_ctx()), Deploy)
        assert definition.is_concurrency_safe is not None
        assert definition.is_concurrency_safe({"target": "t"}) is True
    assert calls == [Deploy]


def test_struct_presenters_and_classifier_get_the_instance() -> None:
    definition = deploy_tool(
        is_concurrency_safe=lambda a: a.dry_run,
        present_call=lambda a: GenericCallView(title=a.target),
    )
    assert definition.is_concurrency_safe is not None
    assert definition.present_call is not None
    assert definition.is_concurrency_safe({"target": "t", "dry_run": True}) is True
    assert definition.is_concurrency_safe({"target": "t"}) is False
    assert definition.is_concurrency_safe({"target": "t", "note": "too long"}) is False
    assert definition.present_call({"target": "prod"}) == GenericCallView(title="prod")
    assert definition.present_call({"target": "t", "note": "too long"}) is None


# --- @tool ---------------------------------------------------------------------------------------


@tool
async def grep(pattern: str, ctx: ToolRunContext, path: str = ".", limit: int | None = None) -> str:
    """Search files for a pattern.

    Uses the index when present.

    Args:
        pattern (str): the regular
            expression.
        path: the directory to search.

    Returns:
        The matching lines.
    """
    return f"{pattern}|{path}|{limit}|{ctx.call_id}"


def test_tool_derives_name_description_and_schema() -> None:
    assert isinstance(grep, ToolDefinition)
    assert grep.name == "grep"
    assert grep.description == "Search files for a pattern.\n\nUses the index when present."
    assert json.dumps(grep.parameters) == json.dumps(
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "the regular\nexpression."},
                "path": {
                    "type": "string",
                    "description": "the directory to search.",
                    "default": ".",
                },
                "limit": {"type": ["integer", "null"], "default": None},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }
    )


async def test_tool_async_body_gets_arguments_and_context() -> None:
    assert inspect.iscoroutinefunction(grep.execute)
    assert await run(grep, {"pattern": "x", "limit": 2}) == "x|.|2|c"
    with pytest.raises(ToolArgsError) as info:
        await run(grep, {"path": 1})
    assert info.value.violations == (
        'missing required property "pattern"',
        '"path" must be a string',
    )


async def test_tool_with_options_and_a_sync_body() -> None:
    @tool(
        name="add",
        description="Add numbers",
        timeout_ms=1000,
        is_concurrency_safe=lambda a: a.a > 0,
    )
    def adder(a: int, b: float = 1.5, /) -> str:
        return str(a + b)

    assert isinstance(adder, ToolDefinition)
    assert adder.name == "add"
    assert adder.description == "Add numbers"
    assert adder.timeout_ms == 1000
    assert not inspect.iscoroutinefunction(adder.execute)
    assert await run(adder, {"a": 2}) == "3.5"
    assert adder.is_concurrency_safe is not None
    assert adder.is_concurrency_safe({"a": 1}) is True
    assert adder.is_concurrency_safe({"a": -1}) is False
    assert adder.is_concurrency_safe({"a": "x"}) is False


def test_tool_without_docstring_has_empty_description() -> None:
    @tool()
    def bare(x: Literal["a", "b"]) -> str:
        return x

    assert bare.description == ""
    assert bare.parameters["properties"]["x"] == {"type": "string", "enum": ["a", "b"]}
    assert bare.execute(snapshot({"x": "b"}), make_ctx()) == "b"


def test_tool_rejects_unsupported_and_missing_annotations() -> None:
    def blob(data: bytes) -> str:
        return ""

    with pytest.raises(RegistrationError) as info:
        tool(blob)
    assert str(info.value) == '@tool blob: parameter "data" has an unsupported type: bytes'

    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(
        RegistrationError, match='@tool untyped: parameter "x" needs a type annotation'
    ):
        tool(untyped)

    def variadic(*names: str) -> str:
        return ""

    with pytest.raises(RegistrationError, match='parameter "names" is variadic'):
        tool(variadic)


def test_tool_rejects_invalid_timeout() -> None:
    with pytest.raises(RegistrationError, match="timeout_ms must be a positive finite number"):
        tool(timeout_ms=0)(lambda: "")


def test_tool_presenters_validate_softly() -> None:
    @tool(present_call=lambda a: GenericCallView(title=a.path))
    def read(path: str) -> str:
        return path

    assert read.present_call is not None
    assert read.present_call({"path": "/a"}) == GenericCallView(title="/a")
    assert read.present_call({}) is None


def test_parse_docstring_sections() -> None:
    doc = """Summary line.

    Body paragraph.

    Args:
        a (int): first
            continued.
        *b: second.

    Raises:
        ValueError: not an argument.
    """
    assert parse_docstring(doc) == (
        "Summary line.\n\nBody paragraph.",
        {"a": "first\ncontinued.", "b": "second."},
    )
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Only a summary.") == ("Only a summary.", {})


# --- through the registry ---------------------------------------------------------------------


@pytest.mark.spec("B027")
async def test_registry_round_trip_register_schemas_execute() -> None:
    registry = ToolRegistry()
    registry.register(shout_tool())
    assert registry.schemas() == [
        ToolSchema(
            name="shout",
            description="Repeat text",
            parameters=schema_spec_to_json_schema(SHOUT_SPEC),
        )
    ]
    result = await registry.execute(
        ToolExecutionInput(
            call_id="1", name="shout", arguments={"text": "hello", "uppercase": True}
        )
    )
    assert result == ToolExecutionResult(content=(TextContent("HELLO"),), is_error=False)


@pytest.mark.spec("B028")
async def test_registry_reports_invalid_args_as_a_structured_error() -> None:
    registry = ToolRegistry()
    registry.register(
        define_tool(
            name="read",
            description="d",
            parameters={"path": {"type": "string", "required": True}},
            execute=lambda args, ctx: "unreachable",
        )
    )
    result = await registry.execute(ToolExecutionInput(call_id="1", name="read", arguments={}))
    assert result == ToolExecutionResult(
        content=(TextContent('Error: invalid arguments: missing required property "path"'),),
        is_error=True,
        error=ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS"),
    )


@pytest.mark.spec("B033")
async def test_registry_passes_unparseable_json_through_to_the_validator() -> None:
    registry = ToolRegistry()
    registry.register(shout_tool())
    result = await registry.execute(ToolExecutionInput(call_id="1", name="shout", arguments="{bad"))
    assert result.content == (
        TextContent('Error: invalid arguments: "arguments" must be an object'),
    )
    assert result.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")


@pytest.mark.spec("B032")
def test_registry_classifies_invalid_args_exclusive() -> None:
    registry = ToolRegistry()
    registry.register(shout_tool(is_concurrency_safe=lambda a: True))
    mode = registry.execution_mode
    assert (
        mode(ToolExecutionInput(call_id="1", name="shout", arguments={"text": "x"})).kind
        == "parallel"
    )
    assert mode(ToolExecutionInput(call_id="2", name="shout", arguments={})).kind == "exclusive"


class Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    level: Literal[1, 2, 3] = 1
    names: frozenset[str] = frozenset()


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Ranked(msgspec.Struct, frozen=True):
    priority: Priority
    maybe: Any | None = None


class IntKeys(msgspec.Struct, frozen=True):
    table: dict[int, str]


async def test_struct_integer_enums_sets_and_unknown_fields() -> None:
    definition = define_tool(name="t", description="d", parameters=Strict, execute=lambda a, c: a)
    assert definition.parameters == {
        "type": "object",
        "properties": {
            "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
            "names": {"type": "array", "default": [], "items": {"type": "string"}},
        },
        "additionalProperties": False,
    }
    instance = await run(definition, {"level": 2, "names": ["a", "a"]})
    assert instance == Strict(level=2, names=frozenset({"a"}))
    for not_an_int in (True, 2.0, "2"):
        with pytest.raises(ToolArgsError) as info:
            await run(definition, {"level": not_an_int})
        assert info.value.violations == ('"level" must be an integer',)
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {"level": 4})
    assert info.value.violations == ('"level" must be one of [1,2,3]',)
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {"surprise": 1})
    assert info.value.violations == ('unknown argument "surprise" (the tool takes: level, names)',)


async def test_struct_int_enum_field() -> None:
    definition = define_tool(name="t", description="d", parameters=Ranked, execute=lambda a, c: a)
    assert definition.parameters["properties"]["priority"] == {"type": "integer", "enum": [1, 2]}
    assert definition.parameters["properties"]["maybe"] == {"default": None}
    assert (await run(definition, {"priority": 2, "maybe": [1]})).priority is Priority.HIGH
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {"priority": "2"})
    assert info.value.violations == ('"priority" must be an integer',)


def test_dict_with_non_string_keys_is_unsupported() -> None:
    with pytest.raises(
        RegistrationError, match=re.escape('field "table" has an unsupported type: dict[int, str]')
    ):
        define_tool(name="t", description="d", parameters=IntKeys, execute=shout)


def test_idempotent_is_threaded_onto_the_definition() -> None:
    from toolnursery import define_tool, tool

    async def body(args: object, ctx: object) -> str:
        return "ok"

    assert define_tool(name="t", description="d", parameters={}, execute=body).idempotent is False
    assert define_tool(
        name="t", description="d", parameters={}, execute=body, idempotent=True
    ).idempotent

    @tool(idempotent=True)
    async def lookup(key: str) -> str:
        """Look a key up."""
        return key

    assert lookup.idempotent is True


def test_idempotent_must_be_a_bool() -> None:
    import pytest

    from toolnursery import RegistrationError, define_tool

    async def body(args: object, ctx: object) -> str:
        return "ok"

    with pytest.raises(RegistrationError, match="idempotent must be a bool"):
        define_tool(name="t", description="d", parameters={}, execute=body, idempotent="yes")  # type: ignore[arg-type]
