"""Provider-strict schemas: every property required, optionals nullable, no other keys;
what strict mode cannot take is refused naming the keyword, and null arguments the
original schema did not allow are read as absent.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any

import jsonschema
import msgspec
import pydantic
import pytest

from toolnursery import (
    StrictSchemaError,
    define_tool,
    from_strict_arguments,
    strict_json_schema,
    tool,
)
from toolnursery._core._json import snapshot

JUDGE = jsonschema.Draft202012Validator


class Cabin(enum.Enum):
    ECONOMY = "economy"
    BUSINESS = "business"


class Leg(msgspec.Struct, frozen=True):
    """One leg.

    Attributes:
        origin: where it starts.
    """

    origin: str
    stops: int = 0


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


@tool(strict=True)
def book(origin: str, seats: int = 1, cabin: Cabin = Cabin.ECONOMY, leg: Leg | None = None) -> str:
    """Book a flight."""
    return f"{origin} {seats} {cabin.value} {leg}"


def test_strict_schema_requires_everything_and_makes_optionals_nullable() -> None:
    schema = book.parameters
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["origin", "seats", "cabin", "leg"]
    props = schema["properties"]
    assert props["origin"] == {"type": "string"}
    assert props["seats"] == {"type": ["integer", "null"]}
    assert props["cabin"] == {"type": ["string", "null"], "enum": ["economy", "business", None]}
    assert props["leg"]["type"] == ["object", "null"]
    assert props["leg"]["additionalProperties"] is False
    assert props["leg"]["required"] == ["origin", "stops"]
    assert props["leg"]["properties"]["stops"] == {"type": ["integer", "null"]}
    JUDGE.check_schema(schema)


def test_strict_tool_reads_null_as_absent() -> None:
    sent = {"origin": "LAX", "seats": None, "cabin": None, "leg": {"origin": "JFK", "stops": None}}
    assert JUDGE(book.parameters).is_valid(sent)
    assert book.execute(snapshot(sent), None) == "LAX 1 economy Leg(origin='JFK', stops=0)"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {
                "type": "object",
                "properties": {
                    "t": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
            },
            'strict mode needs "additionalProperties": false (at #/properties/t',
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "patternProperties": {}}}},
            'strict mode does not take "patternProperties" (at #/properties/s)',
        ),
        (
            {"type": "object", "properties": {"p": {"type": "string", "format": "decimal"}}},
            'strict mode does not take "format": "decimal" (at #/properties/p)',
        ),
        (
            {"type": "object", "properties": {"a": {}}},
            'strict mode needs a "type" (at #/properties/a',
        ),
        (
            {"type": "object", "properties": {"o": {"type": "object"}}},
            'strict mode needs "properties" on every object (at #/properties/o',
        ),
        (
            {"type": "object", "properties": {"u": {"oneOf": [{"type": "string"}]}}},
            'strict mode does not take "oneOf" (at #/properties/u)',
        ),
        ({"type": "array"}, "strict mode needs an object-rooted schema"),
    ],
)
def test_strict_refuses_what_strict_mode_cannot_take_naming_the_keyword(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(StrictSchemaError) as info:
        strict_json_schema(schema)
    assert str(info.value).startswith(message)


def test_strict_option_refuses_at_definition_naming_the_tool() -> None:
    with pytest.raises(
        StrictSchemaError, match=r'^@tool t: strict mode needs "additionalProperties"'
    ):

        @tool(strict=True)
        def t(table: dict[str, int]) -> str:
            return ""


class GoArgs(pydantic.BaseModel):
    to: Point
    speed: Annotated[int, pydantic.Field(ge=1)] = 5


def test_strict_keeps_refs_and_rewrites_defs() -> None:
    # A model's own schema keeps pydantic's $defs (an @tool signature's is inlined).
    go = define_tool(name="go", description="Go.", parameters=GoArgs, execute=lambda a, c: "")
    strict = strict_json_schema(go.parameters)
    assert strict["required"] == ["to", "speed"]
    assert strict["$defs"]["Point"]["additionalProperties"] is False
    assert strict["$defs"]["Point"]["required"] == ["x", "y"]
    assert strict["properties"]["speed"]["type"] == ["integer", "null"]
    assert "default" not in json.dumps(strict)
    assert go.parameters["required"] == ["to"]  # the input is not modified


def test_from_strict_arguments_keeps_the_very_object_when_nothing_changes() -> None:
    arguments = snapshot({"origin": "LAX", "leg": {"origin": "JFK"}})
    assert from_strict_arguments(book.parameters, arguments) is arguments


def test_from_strict_arguments_drops_only_nulls_the_original_did_not_allow() -> None:
    original = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["string", "null"]},
            "c": {"type": "string"},
            "d": {"type": "array", "items": {"$ref": "#/$defs/X"}},
        },
        "required": ["c"],
        "$defs": {"X": {"type": "object", "properties": {"y": {"type": "integer"}}}},
    }
    sent = {"a": None, "b": None, "c": None, "d": [{"y": None}, {"y": 1}], "extra": None}
    assert from_strict_arguments(original, sent) == {
        "b": None,
        "c": None,
        "d": [{}, {"y": 1}],
        "extra": None,
    }


def test_from_strict_arguments_keeps_a_null_the_original_requires() -> None:
    original = {
        "type": "object",
        "properties": {"v": {"type": ["integer", "null"]}, "n": {"type": "integer"}},
        "required": ["v"],
    }
    assert from_strict_arguments(original, {"v": None, "n": None}) == {"v": None}


def test_from_strict_arguments_reads_inside_anyof_tuples_and_nullable_refs() -> None:
    """An optional list of objects (anyOf), a tuple (prefixItems), a $ref to a def that
    takes null: each read at its own depth."""
    original = {
        "type": "object",
        "properties": {
            "legs": {
                "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Leg"}}, {"type": "null"}]
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"$ref": "#/$defs/Leg"}, {"type": "integer"}],
                "items": False,
            },
            "note": {"$ref": "#/$defs/Note"},
        },
        "required": ["legs", "pair"],
        "$defs": {
            "Leg": {
                "type": "object",
                "properties": {"origin": {"type": "string"}, "stops": {"type": "integer"}},
                "required": ["origin"],
            },
            "Note": {"type": ["string", "null"]},
        },
    }
    sent = {
        "legs": [{"origin": "a", "stops": None}],
        "pair": [{"origin": "b", "stops": None}, 3],
        "note": None,
    }
    assert from_strict_arguments(original, sent) == {
        "legs": [{"origin": "a"}],
        "pair": [{"origin": "b"}, 3],
        "note": None,
    }


class Row(msgspec.Struct, frozen=True):
    v: int | None
    n: int = 0


@tool(strict=True)
def rows(v: int | None, items: list[Row] | None = None) -> str:
    """Rows."""
    return f"{v} {items}"


def test_a_strict_tool_keeps_a_required_none_and_reads_an_optional_list() -> None:
    sent = {"v": None, "items": [{"v": None, "n": None}]}
    assert JUDGE(rows.parameters).is_valid(sent)
    assert rows.execute(snapshot(sent), None) == "None [Row(v=None, n=0)]"  # type: ignore[arg-type]


def test_constraints_the_tool_checks_are_left_out_of_the_strict_schema() -> None:
    """minLength, maxLength and uniqueItems: the provider does not take them, the tool
    still refuses a call that breaks them."""
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
        "required": ["s", "tags"],
    }
    strict = strict_json_schema(schema)
    assert strict["properties"]["s"] == {"type": "string"}
    assert strict["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["s"]["minLength"] == 1  # the tool's own schema keeps them
