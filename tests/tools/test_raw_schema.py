"""Raw JSON Schema definitions: arguments validated by the engine before the body.

A ``ToolDefinition`` built directly (a mounted MCP tool, an imported framework tool)
checks its arguments against ``parameters`` with the validator ``$schema`` names,
compiled once when the definition is made; ``validate=False`` opts out. Violations
read like the DSL's and become ``INVALID_ARGS`` results; the body never runs.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from support import text
from toolnursery import (
    RegistrationError,
    ToolArgsError,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    attach_output,
    define_tool,
    tool,
)
from toolnursery._core._bodies import is_async, may_suspend
from toolnursery._core._json import snapshot
from toolnursery._tools import _raw
from toolnursery._tools._output import output_schema

READ = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "mode": {"type": "string", "enum": ["text", "bytes"]},
    },
    "required": ["path"],
}


class Spy:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def __call__(self, args: Any, ctx: ToolRunContext) -> str:
        self.seen.append(args)
        return "ran"


class SyncSpy:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, args: Any, ctx: ToolRunContext) -> str:
        self.seen.append(args)
        return "ran"


async def run(definition: ToolDefinition, arguments: Any) -> tuple[str, str | None]:
    registry = ToolRegistry()
    registry.register(definition)
    result = await registry.execute(ToolExecutionInput("c1", definition.name, arguments))
    return text(result), None if result.error is None else result.error.code


async def test_a_raw_definition_refuses_a_missing_required_property_before_its_body() -> None:
    body = Spy()
    definition = ToolDefinition("read", "Read a file", READ, body)
    assert await run(definition, {}) == (
        'Error: invalid arguments: missing required property "path"',
        "INVALID_ARGS",
    )
    assert body.seen == []
    assert await run(definition, {"path": "a", "limit": 5}) == ("ran", None)
    assert body.seen == [{"path": "a", "limit": 5}]


@pytest.mark.parametrize(
    ("arguments", "violations"),
    [
        ({"path": ""}, ['"path" must be at least 1 character long']),
        ({"path": "a", "limit": 0}, ['"limit" must be >= 1']),
        ({"path": "a", "limit": 1001}, ['"limit" must be <= 1000']),
        ({"path": "a", "limit": 2.5}, ['"limit" must be an integer']),
        ({"path": "a", "limit": True}, ['"limit" must be an integer']),
        ({"path": "a", "tags": ["x", "x"]}, ['"tags" must not contain duplicate items']),
        ({"path": "a", "tags": ["x", 1]}, ['"tags[1]" must be a string']),
        ({"path": "a", "mode": "lines"}, ['"mode" must be one of ["text","bytes"]']),
        ("not an object", ['"arguments" must be an object']),
    ],
)
def test_violations_name_the_path_and_the_rule(arguments: Any, violations: list[str]) -> None:
    definition = ToolDefinition("read", "Read a file", READ, SyncSpy())
    with pytest.raises(ToolArgsError) as info:
        definition.execute(snapshot(arguments), None)  # type: ignore[arg-type]
    assert list(info.value.violations) == violations


def test_nested_paths_and_several_violations_are_all_reported() -> None:
    schema = {
        "type": "object",
        "properties": {
            "server": {
                "type": "object",
                "properties": {
                    "host": {"type": "string"},
                    "port": {"type": "integer", "exclusiveMaximum": 65536},
                },
                "required": ["host"],
                "additionalProperties": False,
            },
            "ids": {"type": "array", "items": {"type": "string", "format": "uuid"}, "maxItems": 2},
        },
    }
    check = _raw.compile_raw_validator(schema)
    assert check({"server": {"host": "h", "port": 1}, "ids": []}) == []
    violations = check({"server": {"port": 65536, "x": 1}, "ids": ["nope", "a", "b"]})
    assert set(violations) == {
        '"server.port" must be < 65536',
        'missing required property "server.host"',
        'unknown property "server.x" (the object takes: host, port)',
        '"ids" must have at most 2 items',
        '"ids[0]" must be a valid "uuid"',
        '"ids[1]" must be a valid "uuid"',
        '"ids[2]" must be a valid "uuid"',
    }


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-05-01T09:30:00.25+02:00", "2024-05-01T09:30:00"),
        ("time", "23:59:59Z", "24:00:00Z"),
        ("email", "ada@example.org", "ada.example.org"),
        ("uri", "https://example.org/a%20b?q=1", "example.org/a b"),
        ("uuid", "12345678-1234-5678-1234-567812345678", "12345678123456781234567812345678"),
    ],
)
def test_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    check = _raw.compile_raw_validator(
        {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    )
    assert check({"v": good}) == []
    assert check({"v": bad}) == [f'"v" must be a valid "{fmt}"']
    assert check({"v": 3}) == ['"v" must be a string']


def test_the_draft_is_picked_by_dollar_schema() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    check = _raw.compile_raw_validator(draft4)  # a boolean exclusiveMinimum: draft 4's form
    assert check({"n": 1}) == []
    assert check({"n": 0}) != []
    with pytest.raises(RegistrationError) as info:
        ToolDefinition(
            "t", "d", {**draft4, "$schema": "https://json-schema.org/draft/2020-12/schema"}, Spy()
        )
    assert str(info.value).startswith(
        'tool "t" parameters are not a valid JSON Schema at properties/n/exclusiveMinimum: '
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"n": {"type": "int"}}},
            'tool "t" parameters are not a valid JSON Schema at properties/n/type: ',
        ),
        (
            {"type": "object", "required": "path"},
            'tool "t" parameters are not a valid JSON Schema at required: ',
        ),
        (
            {"$schema": "https://example.org/my-dialect", "type": "object"},
            'tool "t" parameters are written for an unknown $schema "https://example.org/my-dialect"',
        ),
    ],
)
def test_an_invalid_schema_is_refused_when_the_definition_is_made(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(RegistrationError) as info:
        ToolDefinition("t", "d", schema, Spy())
    assert str(info.value).startswith(message)
    assert ToolDefinition("t", "d", schema, Spy(), validate=False).parameters is schema


async def test_validate_false_keeps_the_body_as_given() -> None:
    body = Spy()
    definition = ToolDefinition("read", "Read a file", READ, body, validate=False)
    assert definition.execute is body
    assert await run(definition, {}) == ("ran", None)
    assert body.seen == [{}]


def test_validate_must_be_a_bool() -> None:
    definition = ToolDefinition("t", "d", READ, Spy(), validate=1)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="validate must be a bool"):
        ToolRegistry().register(definition)


def test_the_schema_is_compiled_once_per_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    real = _raw.compile_raw_validator

    def counting(schema: Any) -> Any:
        compiled.append(schema)
        return real(schema)

    monkeypatch.setattr(_raw, "compile_raw_validator", counting)
    definition = ToolDefinition("read", "Read a file", READ, SyncSpy())
    for _ in range(5):
        with pytest.raises(ToolArgsError):
            definition.execute(snapshot({}), None)  # type: ignore[arg-type]
    assert compiled == [READ]
    msgspec.structs.replace(definition, timeout_ms=5)  # same parameters: not compiled again
    assert len(compiled) == 1


def test_the_wrapper_keeps_the_body_kind_and_its_marks() -> None:
    def sync_body(args: Any, ctx: ToolRunContext) -> str:
        return "sync"

    async def step_body(args: Any, ctx: ToolRunContext) -> str:
        return "step"  # no await: never suspends

    sync = ToolDefinition("s", "d", READ, sync_body)
    assert sync.execute is not sync_body
    assert not is_async(sync.execute)
    assert sync.execute(snapshot({"path": "p"}), None) == "sync"  # type: ignore[arg-type]
    step = ToolDefinition("a", "d", READ, step_body)
    assert is_async(step.execute)
    assert may_suspend(step.execute) is False


def test_replacing_the_parameters_checks_the_new_schema_once() -> None:
    body = SyncSpy()
    definition = ToolDefinition("read", "Read a file", READ, body)
    loose = {"type": "object"}
    replaced = msgspec.structs.replace(definition, parameters=loose)
    assert replaced.execute.__wrapped__ is body  # type: ignore[attr-defined]
    assert replaced.execute(snapshot({}), None) == "ran"  # type: ignore[arg-type]
    assert body.seen == [{}]  # the old "required" is gone, and the body ran once


async def test_an_output_wrapper_keeps_the_check_and_is_not_checked_twice() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> dict[str, Any]:
        return {"n": len(args["path"])}

    raw = ToolDefinition("read", "Read a file", READ, body)
    typed = attach_output(raw, {"type": "object", "properties": {"n": {"type": "integer"}}})
    assert output_schema(typed) is not None
    assert typed.execute.__wrapped__ is raw.execute  # type: ignore[attr-defined]
    assert await run(typed, {}) == (
        'Error: invalid arguments: missing required property "path"',
        "INVALID_ARGS",
    )
    assert (await run(typed, {"path": "abc"}))[0] == '{\n  "n": 3\n}'


def test_define_tool_and_tool_definitions_are_not_checked_twice() -> None:
    defined = define_tool(
        name="t", description="d", parameters={"n": {"type": "integer"}}, execute=Spy()
    )

    @tool
    def decorated(n: int) -> str:
        return ""

    for definition in (defined, decorated):
        assert _raw.argument_check(definition.execute) is not None  # it checks itself
        assert _raw.validating_execute(definition.parameters, definition.execute) is (
            definition.execute
        )
        assert not hasattr(definition.execute, "__wrapped__")


def test_an_unresolvable_reference_is_refused_when_the_definition_is_made() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "https://schemas.invalid/never.json"}},
    }
    with pytest.raises(_raw.RawSchemaError, match="nothing is retrieved"):
        _raw.compile_raw_validator(schema)


def test_a_frozen_schema_is_read_as_json() -> None:
    check = _raw.compile_raw_validator(snapshot({**READ, "additionalProperties": False}))
    assert check({"path": "p"}) == []
    assert check({}) == ['missing required property "path"']
    looped: dict[str, Any] = {"type": "object"}
    looped["properties"] = {"self": looped}
    with pytest.raises(_raw.RawSchemaError, match="it contains itself"):
        _raw.compile_raw_validator(looped)


def test_frozen_arguments_are_json_arrays_and_objects() -> None:
    check = _raw.compile_raw_validator(READ)
    assert check(snapshot({"path": "p", "tags": ["a", "b"]})) == []
    assert check({"path": "p", "tags": ("a", "a")}) == ['"tags" must not contain duplicate items']
