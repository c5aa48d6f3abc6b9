"""The schema DSL: conversion to JSON Schema (B012-B017) and validate_args (B019-B026)."""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery._core._json import FrozenDict, snapshot
from toolnursery._tools._schema import (
    SchemaProp,
    SchemaSpec,
    compile_validator,
    schema_spec_to_json_schema,
    validate_args,
)

NOT_OBJECT = ['"arguments" must be an object']


def ordered(value: object) -> str:
    """JSON text, so that comparing two values also compares key order."""
    return json.dumps(value, ensure_ascii=False)


# --- B012-B017: conversion ------------------------------------------------------------------


@pytest.mark.spec("B012")
def test_converts_spec_to_json_schema_with_required_array() -> None:
    spec: SchemaSpec = {
        "path": {"type": "string", "required": True, "description": "Absolute path"},
        "offset": {"type": "number"},
        "limit": {"type": "number", "description": "Max lines"},
    }
    expected = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Absolute path"},
            "offset": {"type": "number"},
            "limit": {"type": "number", "description": "Max lines"},
        },
        "required": ["path"],
    }
    assert ordered(schema_spec_to_json_schema(spec)) == ordered(expected)


@pytest.mark.spec("B012")
def test_required_flag_never_appears_inside_a_property() -> None:
    schema = schema_spec_to_json_schema(
        {
            "a": {
                "type": "object",
                "required": True,
                "properties": {"b": {"type": "string", "required": True}},
            }
        }
    )
    assert "required" not in schema["properties"]["a"]["properties"]["b"]
    assert schema["properties"]["a"]["required"] == ["b"]
    assert schema["required"] == ["a"]


@pytest.mark.spec("B013")
def test_empty_spec_has_no_required_key() -> None:
    assert ordered(schema_spec_to_json_schema({})) == ordered({"type": "object", "properties": {}})


@pytest.mark.spec("B014")
def test_nested_object_recurses_and_outer_required_lists_it() -> None:
    spec: SchemaSpec = {
        "config": {
            "type": "object",
            "required": True,
            "properties": {
                "host": {"type": "string", "required": True},
                "port": {"type": "number"},
            },
        }
    }
    expected = {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
                "required": ["host"],
            }
        },
        "required": ["config"],
    }
    assert ordered(schema_spec_to_json_schema(spec)) == ordered(expected)


@pytest.mark.spec("B014")
def test_all_optional_nested_object_has_no_required_array() -> None:
    spec: SchemaSpec = {"opts": {"type": "object", "properties": {"a": {"type": "boolean"}}}}
    assert schema_spec_to_json_schema(spec)["properties"]["opts"] == {
        "type": "object",
        "properties": {"a": {"type": "boolean"}},
    }


@pytest.mark.spec("B015")
def test_array_items_convert_recursively() -> None:
    spec: SchemaSpec = {
        "tags": {"type": "array", "items": {"type": "string"}},
        "bare": {"type": "array"},
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "host": {"type": "string", "required": True},
                    "port": {"type": "number"},
                },
            },
        },
    }
    props = schema_spec_to_json_schema(spec)["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["bare"] == {"type": "array"}
    assert ordered(props["servers"]) == ordered(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
                "required": ["host"],
            },
        }
    )


@pytest.mark.spec("B016")
def test_enum_and_default_emitted_as_given_and_omitted_when_absent() -> None:
    spec: SchemaSpec = {
        "color": {"type": "string", "enum": ["red", "green"]},
        "limit": {"type": "number", "default": 100},
        "both": {"type": "string", "enum": ["a", "b"], "default": "a", "description": "pick"},
        "bare": {"type": "string"},
    }
    props = schema_spec_to_json_schema(spec)["properties"]
    assert props["color"] == {"type": "string", "enum": ["red", "green"]}
    assert props["limit"] == {"type": "number", "default": 100}
    assert ordered(props["both"]) == ordered(
        {"type": "string", "description": "pick", "enum": ["a", "b"], "default": "a"}
    )
    assert props["bare"] == {"type": "string"}


@pytest.mark.spec("B017")
def test_empty_description_omitted_empty_enum_and_null_default_emitted() -> None:
    spec: SchemaSpec = {
        "a": {"type": "string", "description": ""},
        "b": {"type": "string", "enum": []},
        "c": {"type": "string", "default": None},
    }
    props = schema_spec_to_json_schema(spec)["properties"]
    assert props["a"] == {"type": "string"}
    assert props["b"] == {"type": "string", "enum": []}
    assert props["c"] == {"type": "string", "default": None}


@pytest.mark.spec("B017")
def test_misplaced_properties_and_items_are_dropped() -> None:
    misplaced: Any = {
        "s": {
            "type": "string",
            "properties": {"x": {"type": "string"}},
            "items": {"type": "string"},
        },
        "o": {"type": "object", "items": {"type": "string"}},
        "arr": {"type": "array", "properties": {"x": {"type": "string"}}},
    }
    props = schema_spec_to_json_schema(misplaced)["properties"]
    assert props == {"s": {"type": "string"}, "o": {"type": "object"}, "arr": {"type": "array"}}


@pytest.mark.spec("B017")
def test_key_order_of_properties_and_top_level() -> None:
    spec: Any = {
        "o": {
            "properties": {"x": {"type": "string", "required": True}},
            "default": {},
            "enum": [],
            "description": "d",
            "required": True,
            "type": "object",
        },
        "a": {"items": {"type": "number"}, "default": [], "description": "d", "type": "array"},
    }
    schema = schema_spec_to_json_schema(spec)
    assert list(schema) == ["type", "properties", "required"]
    assert list(schema["properties"]["o"]) == [
        "type",
        "description",
        "enum",
        "default",
        "properties",
        "required",
    ]
    assert list(schema["properties"]["a"]) == ["type", "description", "default", "items"]


@pytest.mark.spec("B017")
def test_output_is_detached_from_the_spec() -> None:
    enum = ["a"]
    default = {"k": [1]}
    spec: Any = {"x": {"type": "string", "enum": enum, "default": default}}
    schema = schema_spec_to_json_schema(spec)
    enum.append("b")
    default["k"].append(2)
    assert schema["properties"]["x"] == {"type": "string", "enum": ["a"], "default": {"k": [1]}}
    schema["properties"]["x"]["enum"].append("z")
    assert enum == ["a", "b"]


@pytest.mark.spec("B017")
def test_frozen_spec_values_convert_to_plain_json() -> None:
    spec = snapshot({"x": {"type": "string", "enum": ["a"], "default": {"k": [1]}}})
    schema = schema_spec_to_json_schema(spec)
    assert type(schema["properties"]["x"]["enum"]) is list
    assert type(schema["properties"]["x"]["default"]) is dict
    assert json.loads(json.dumps(schema)) == schema


# --- B019-B025: validate_args ----------------------------------------------------------------

PATH_SPEC: SchemaSpec = {"path": {"type": "string", "required": True}, "limit": {"type": "number"}}


@pytest.mark.spec("B019")
def test_valid_args_give_no_violations() -> None:
    assert validate_args(PATH_SPEC, {"path": "/a", "limit": 3}) == []
    assert validate_args(PATH_SPEC, snapshot({"path": "/a"})) == []


@pytest.mark.spec("B019")
@pytest.mark.parametrize(
    "args", [None, "x", "", ["path"], ("path",), 1, 1.5, True, object(), b"{}"]
)
def test_non_object_top_level_is_exactly_one_violation(args: object) -> None:
    assert validate_args(PATH_SPEC, args) == NOT_OBJECT


@pytest.mark.spec("B019")
def test_mapping_that_is_not_a_dict_is_not_an_object() -> None:
    assert validate_args(PATH_SPEC, MappingProxyType({"path": "a"})) == NOT_OBJECT


@pytest.mark.spec("B020")
def test_missing_required_and_unset_value_are_missing() -> None:
    assert validate_args(PATH_SPEC, {}) == ['missing required property "path"']
    assert validate_args(PATH_SPEC, {"path": msgspec.UNSET}) == ['missing required property "path"']
    assert validate_args(PATH_SPEC, {"path": "x", "limit": msgspec.UNSET}) == []


@pytest.mark.spec("B020")
def test_null_is_a_value_not_missing() -> None:
    assert validate_args(PATH_SPEC, {"path": None}) == ['"path" must be a string']
    assert validate_args(PATH_SPEC, {"path": "x", "limit": None}) == ['"limit" must be a number']


@pytest.mark.spec("B021")
def test_extra_keys_allowed_and_defaults_not_applied() -> None:
    spec: SchemaSpec = {"a": {"type": "number", "default": 5}}
    args: dict[str, Any] = {"extra": [1, 2], "other": None}
    assert validate_args(spec, args) == []
    assert args == {"extra": [1, 2], "other": None}


@pytest.mark.spec("B022")
def test_type_messages_are_exact() -> None:
    spec: SchemaSpec = {
        "s": {"type": "string"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "bag": {"type": "object"},
        "tags": {"type": "array"},
    }
    assert validate_args(spec, {"s": 1, "n": "1", "b": 0, "bag": [], "tags": {}}) == [
        '"s" must be a string',
        '"n" must be a number',
        '"b" must be a boolean',
        '"bag" must be an object',
        '"tags" must be an array',
    ]


@pytest.mark.spec("B022")
@pytest.mark.parametrize("value", [True, False])
def test_bool_is_not_a_number(value: bool) -> None:
    assert validate_args({"n": {"type": "number"}}, {"n": value}) == ['"n" must be a number']


@pytest.mark.spec("B022")
@pytest.mark.parametrize("value", [0, -3, 2**80, 10**400, 1.5])
def test_ints_and_floats_are_numbers(value: float) -> None:
    assert validate_args({"n": {"type": "number"}}, {"n": value}) == []


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_float_json_has_no_form_for_is_not_a_number(value: float) -> None:
    assert validate_args({"n": {"type": "number"}}, {"n": value}) == ['"n" must be a number']


def test_integers_past_a_double_keep_their_bounds() -> None:
    spec: SchemaSpec = {"n": {"type": "integer", "maximum": 10}, "s": {"type": "string"}}
    assert validate_args(spec, {"n": 10**400}) == ['"n" must be <= 10']
    assert validate_args(spec, {"n": -(10**400)}) == []
    assert validate_args(spec, {"s": 10**400}) == ['"s" must be a string']


@pytest.mark.spec("B022")
def test_arrays_and_null_are_not_objects_and_tuples_are_arrays() -> None:
    spec: SchemaSpec = {"bag": {"type": "object"}, "tags": {"type": "array"}}
    assert validate_args(spec, {"bag": None, "tags": None}) == [
        '"bag" must be an object',
        '"tags" must be an array',
    ]
    assert validate_args(spec, {"bag": FrozenDict(), "tags": ("a",)}) == []
    assert validate_args(spec, {"bag": ["a"], "tags": "abc"}) == [
        '"bag" must be an object',
        '"tags" must be an array',
    ]


@pytest.mark.spec("B022")
def test_a_failed_type_check_stops_deeper_checks() -> None:
    spec: SchemaSpec = {
        "cfg": {"type": "object", "properties": {"host": {"type": "string", "required": True}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "string", "enum": ["a"]},
    }
    assert validate_args(spec, {"cfg": [1], "tags": "ab", "c": 3}) == [
        '"cfg" must be an object',
        '"tags" must be an array',
        '"c" must be a string',
    ]


@pytest.mark.spec("B023")
def test_enum_message_is_compact_json() -> None:
    spec: SchemaSpec = {"color": {"type": "string", "enum": ["red", "green"]}}
    assert validate_args(spec, {"color": "blue"}) == ['"color" must be one of ["red","green"]']
    assert validate_args(spec, {"color": "red"}) == []


@pytest.mark.spec("B023")
def test_enum_message_keeps_non_ascii_text() -> None:
    spec: SchemaSpec = {"w": {"type": "string", "enum": ["día", "日本"]}}
    assert validate_args(spec, {"w": "x"}) == ['"w" must be one of ["día","日本"]']


@pytest.mark.spec("B023")
def test_a_number_never_matches_a_string_enum() -> None:
    spec: SchemaSpec = {"n": {"type": "number", "enum": ["1", "2"]}}
    assert validate_args(spec, {"n": 1}) == ['"n" must be one of ["1","2"]']
    spec_b: SchemaSpec = {"b": {"type": "boolean", "enum": ["true"]}}
    assert validate_args(spec_b, {"b": True}) == ['"b" must be one of ["true"]']


@pytest.mark.spec("B023")
def test_empty_enum_rejects_every_value() -> None:
    assert validate_args({"e": {"type": "string", "enum": []}}, {"e": ""}) == [
        '"e" must be one of []'
    ]


@pytest.mark.spec("B023")
def test_enum_not_checked_on_objects_and_arrays() -> None:
    spec: Any = {"o": {"type": "object", "enum": ["x"]}, "a": {"type": "array", "enum": ["x"]}}
    assert validate_args(spec, {"o": {}, "a": []}) == []


@pytest.mark.spec("B024")
def test_paths_use_dots_and_indices() -> None:
    spec: SchemaSpec = {
        "config": {"type": "object", "properties": {"host": {"type": "string", "required": True}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"host": {"type": "string", "required": True}},
            },
        },
    }
    args = {"config": {}, "tags": ["a", 1], "servers": [{"host": "h"}, {"port": 1}]}
    assert validate_args(spec, args) == [
        'missing required property "config.host"',
        '"tags[1]" must be a string',
        'missing required property "servers[1].host"',
    ]


@pytest.mark.spec("B024")
def test_all_violations_collected_in_declaration_order() -> None:
    spec: SchemaSpec = {
        "z": {"type": "string", "required": True},
        "a": {"type": "number"},
        "m": {
            "type": "object",
            "properties": {"y": {"type": "boolean"}, "b": {"type": "string", "required": True}},
        },
    }
    args = {"m": {"b": 1, "y": "no"}, "a": "x"}
    assert validate_args(spec, args) == [
        'missing required property "z"',
        '"a" must be a number',
        '"m.y" must be a boolean',
        '"m.b" must be a string',
    ]


@pytest.mark.spec("B024")
def test_deep_paths_through_arrays_of_arrays() -> None:
    spec: SchemaSpec = {
        "grid": {
            "type": "array",
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"v": {"type": "number", "required": True}},
                },
            },
        }
    }
    args = {"grid": [[{"v": 1}], [{"v": 2}, {"v": "3"}, {}]]}
    assert validate_args(spec, args) == [
        '"grid[1][1].v" must be a number',
        'missing required property "grid[1][2].v"',
    ]


@pytest.mark.spec("B024")
def test_object_without_properties_and_array_without_items_only_type_check() -> None:
    spec: SchemaSpec = {"o": {"type": "object"}, "a": {"type": "array"}}
    assert validate_args(spec, {"o": {"anything": [None, {}]}, "a": [1, "x", None, [[]]]}) == []


@pytest.mark.spec("B025")
def test_unknown_type_raises_with_the_reference_text() -> None:
    weird: Any = {"x": {"type": "weird"}}
    with pytest.raises(ValueError, match=r'^unreachable variant in validateArgs: "weird"$'):
        validate_args(weird, {"x": 1})
    with pytest.raises(ValueError, match=r'^unreachable variant in validateArgs: "weird"$'):
        compile_validator(weird)


@pytest.mark.spec("B025")
def test_unknown_nested_type_raises_whatever_the_args() -> None:
    nested: Any = {"o": {"type": "object", "properties": {"x": {"type": "weird"}}}}
    for args in ({}, None, {"o": {"x": 1}}):
        with pytest.raises(ValueError, match="unreachable variant in validateArgs"):
            validate_args(nested, args)


def test_malformed_spec_shapes_raise_type_error() -> None:
    with pytest.raises(TypeError, match="SchemaProp must be a mapping"):
        compile_validator({"x": "string"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="SchemaSpec must be a mapping"):
        compile_validator(["x"])  # type: ignore[arg-type]


def test_self_containing_spec_is_rejected() -> None:
    spec: dict[str, Any] = {"o": {"type": "object"}}
    spec["o"]["properties"] = spec
    with pytest.raises(ValueError, match="must not contain itself"):
        compile_validator(spec)


# --- totality on hostile and deep input -----------------------------------------------------


class Hostile:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")

    __hash__ = object.__hash__

    def __iter__(self) -> Any:
        raise RuntimeError("no iterating")


class SneakyDict(dict[str, Any]):
    def get(self, *args: Any) -> Any:
        raise RuntimeError("no get")

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no getitem")


@pytest.mark.spec("B019")
def test_hostile_values_are_reported_not_raised() -> None:
    spec: SchemaSpec = {
        "s": {"type": "string", "enum": ["a"]},
        "o": {"type": "object", "properties": {"x": {"type": "string", "required": True}}},
        "a": {"type": "array", "items": {"type": "number"}},
    }
    args = {"s": Hostile(), "o": Hostile(), "a": Hostile()}
    assert validate_args(spec, args) == [
        '"s" must be a string',
        '"o" must be an object',
        '"a" must be an array',
    ]
    assert validate_args(spec, SneakyDict(o=SneakyDict(x="y"))) == []


@pytest.mark.spec("B019")
def test_deeply_nested_input_is_refused_not_raised() -> None:
    spec: SchemaSpec = {
        "a": {"type": "array", "items": {"type": "string"}},
        "o": {"type": "object"},
    }
    deep: Any = "leaf"
    for _ in range(250):  # as deep as a snapshot takes (256)
        deep = [deep]
    assert validate_args(spec, {"a": deep, "o": {"x": deep}}) == ['"a[0]" must be a string']
    for _ in range(20_000):
        deep = [deep]
    assert validate_args(spec, {"a": deep}) == ['"arguments" are nested too deeply to be checked']


def test_compiled_validator_is_detached_from_later_spec_changes() -> None:
    spec: dict[str, Any] = {"a": {"type": "string", "required": True, "enum": ["x"]}}
    validate = compile_validator(spec)
    spec["a"]["type"] = "number"
    spec["a"]["enum"].append("y")
    spec["b"] = {"type": "string", "required": True}
    assert validate({"a": "y"}) == ['"a" must be one of ["x"]']
    assert validate({"a": "x"}) == []


def test_required_flag_follows_truthiness() -> None:
    spec: Any = {"a": {"type": "string", "required": False}, "b": {"type": "string", "required": 1}}
    assert validate_args(spec, {}) == ['missing required property "b"']
    assert schema_spec_to_json_schema(spec)["required"] == ["b"]


# --- hypothesis: B019 and B026 ------------------------------------------------------------------

names = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=5)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
lossless_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: f != 0 or math.copysign(1, f) > 0
)
lossless_values = st.recursive(
    st.none() | st.booleans() | st.integers() | lossless_floats | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=10,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(names, inner, max_size=4)
        | st.dictionaries(names, inner, max_size=4).map(FrozenDict)
    ),
    max_leaves=20,
)
odd_objects = st.sampled_from(
    [
        object(),
        b"x",
        {1, 2},
        frozenset(),
        1 + 2j,
        Decimal("1.5"),
        Ellipsis,
        int,
        len,
        Hostile(),
        msgspec.UNSET,
    ]
) | st.builds(MappingProxyType, st.dictionaries(names, json_scalars, max_size=3))
anything = st.recursive(
    json_values | odd_objects,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=15,
)


def props_strategy(depth: int) -> st.SearchStrategy[SchemaProp]:
    """Random SchemaProps nested at most ``depth`` container levels (the satisfiable kind)."""
    description = st.one_of(st.just(None), st.text(max_size=5))
    scalar = st.builds(
        _prop,
        st.sampled_from(["string", "number", "boolean"]),
        st.booleans(),
        description,
        st.none() | st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
    )
    if depth == 0:
        return scalar
    inner = props_strategy(depth - 1)
    obj = st.builds(
        _prop,
        st.just("object"),
        st.booleans(),
        description,
        st.none(),
        st.none() | st.dictionaries(names, inner, max_size=3),
    )
    arr = st.builds(
        _prop, st.just("array"), st.booleans(), description, st.none(), st.none(), st.none() | inner
    )
    return scalar | obj | arr


def _prop(
    kind: str,
    required: bool,
    description: str | None,
    enum: list[str] | None,
    properties: dict[str, SchemaProp] | None = None,
    items: SchemaProp | None = None,
) -> SchemaProp:
    prop: dict[str, Any] = {"type": kind}
    if required:
        prop["required"] = True
    if description is not None:
        prop["description"] = description
    if enum is not None and kind == "string":
        prop["enum"] = enum
    if properties is not None:
        prop["properties"] = properties
    if items is not None:
        prop["items"] = items
    return prop  # type: ignore[return-value]


specs = st.dictionaries(names, props_strategy(2), max_size=4)


def value_for(prop: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values satisfying ``prop``."""
    kind = prop["type"]
    if kind == "string":
        enum = prop.get("enum")
        return st.sampled_from(enum) if enum else st.text(max_size=5)
    if kind == "number":
        return st.integers() | lossless_floats
    if kind == "boolean":
        return st.booleans()
    if kind == "object":
        properties = prop.get("properties")
        return (
            json_object_for(properties)
            if properties is not None
            else st.dictionaries(names, lossless_values, max_size=3)
        )
    items = prop.get("items")
    return st.lists(value_for(items) if items is not None else lossless_values, max_size=3)


def json_object_for(spec: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    required = {k: value_for(p) for k, p in spec.items() if p.get("required")}
    optional = {k: value_for(p) for k, p in spec.items() if not p.get("required")}
    return st.fixed_dictionaries(required, optional=optional)


@pytest.mark.spec("B019")
@given(spec=specs, args=anything)
@settings(max_examples=300)
def test_property_validate_args_is_total(spec: SchemaSpec, args: object) -> None:
    violations = validate_args(spec, args)
    assert isinstance(violations, list)
    assert all(isinstance(v, str) for v in violations)
    if not isinstance(args, dict):
        assert violations == NOT_OBJECT


@pytest.mark.spec("B026")
@given(spec=specs)
def test_property_conversion_is_total_and_required_matches(spec: SchemaSpec) -> None:
    schema = schema_spec_to_json_schema(spec)
    assert json.loads(json.dumps(schema)) == schema
    check_required(spec, schema)


def check_required(spec: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    assert schema["type"] == "object"
    assert list(schema["properties"]) == list(spec)
    assert schema.get("required", []) == [k for k, p in spec.items() if p.get("required")]
    assert "required" not in schema or schema["required"]
    for key, prop in spec.items():
        check_prop(prop, schema["properties"][key])


def check_prop(prop: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    assert schema["type"] == prop["type"]
    assert "required" not in schema or prop["type"] == "object"
    if prop["type"] == "object" and prop.get("properties") is not None:
        check_required(prop["properties"], schema)
    if prop["type"] == "array" and prop.get("items") is not None:
        check_prop(prop["items"], schema["items"])


@pytest.mark.spec("B026")
@given(data=st.data(), spec=specs)
def test_property_args_satisfying_the_spec_validate(data: st.DataObject, spec: SchemaSpec) -> None:
    args = data.draw(json_object_for(spec))
    assert validate_args(spec, args) == []
    assert validate_args(spec, snapshot(args)) == []
    assert compile_validator(spec)(args) == []


@pytest.mark.spec("B026")
@given(data=st.data(), spec=specs)
def test_property_dropping_a_required_key_is_rejected(
    data: st.DataObject, spec: SchemaSpec
) -> None:
    required = [k for k, p in spec.items() if p.get("required")]
    if not required:
        spec = {**spec, "needed": {"type": "string", "required": True}}
        required = ["needed"]
    args = data.draw(json_object_for(spec))
    dropped = data.draw(st.sampled_from(required))
    del args[dropped]
    assert f'missing required property "{dropped}"' in validate_args(spec, args)


@given(spec=specs, args=anything)
def test_compiled_validator_agrees_with_validate_args(spec: SchemaSpec, args: object) -> None:
    assert compile_validator(spec)(args) == validate_args(spec, args)
