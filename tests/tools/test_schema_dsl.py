"""The DSL's typed keywords: integer, typed enums, nullable, array enums, strict refusals.

Property tests generate random specs, check the emitted schema, validate generated
values, mutate one field and expect exactly its violation, and use ``jsonschema`` as
an independent judge of ``validate_args`` both ways.
"""

from __future__ import annotations

import copy
import json
import math
import string
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import RegistrationError, define_tool
from toolnursery._tools._schema import (
    SchemaSpec,
    SpecError,
    compile_spec,
    compile_validator,
    schema_spec_to_json_schema,
    validate_args,
)

JUDGE = jsonschema.Draft202012Validator


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- examples ----------------------------------------------------------------------------------


def test_integer_is_its_own_type() -> None:
    spec: SchemaSpec = {"n": {"type": "integer", "required": True}}
    assert schema_spec_to_json_schema(spec)["properties"]["n"] == {"type": "integer"}
    assert validate_args(spec, {"n": 3}) == []
    assert validate_args(spec, {"n": 3.0}) == []  # JSON has one number type: 3.0 is 3
    for bad in (3.5, "3", True, None, math.inf):
        assert validate_args(spec, {"n": bad}) == ['"n" must be an integer'], bad


@pytest.mark.parametrize(
    ("kind", "enum", "member", "outsider"),
    [
        ("string", ["a", "b"], "b", "c"),
        ("number", [0.5, 2], 2.0, 1),
        ("integer", [1, 2, 3], 3, 4),
        ("boolean", [True], True, False),
    ],
)
def test_enums_of_every_scalar_type(kind: str, enum: list[Any], member: Any, outsider: Any) -> None:
    spec: Any = {"v": {"type": kind, "enum": enum}}
    schema, validate = compile_spec(spec)
    assert schema["properties"]["v"] == {"type": kind, "enum": enum}
    assert validate({"v": member}) == []
    assert validate({"v": outsider}) == [f'"v" must be one of {_compact(enum)}']


def test_a_boolean_never_matches_a_numeric_enum() -> None:
    spec: SchemaSpec = {"n": {"type": "integer", "enum": [0, 1]}}
    assert validate_args(spec, {"n": True}) == ['"n" must be an integer']


def test_nullable_accepts_null_and_says_so() -> None:
    spec: SchemaSpec = {
        "s": {"type": "string", "nullable": True},
        "c": {"type": "string", "nullable": True, "enum": ["x"]},
        "o": {"type": "object", "nullable": True, "properties": {"a": {"type": "integer"}}},
    }
    props = schema_spec_to_json_schema(spec)["properties"]
    assert props["s"] == {"type": ["string", "null"]}
    assert props["c"] == {"type": ["string", "null"], "enum": ["x", None]}
    assert props["o"]["type"] == ["object", "null"]
    assert validate_args(spec, {"s": None, "c": None, "o": None}) == []
    assert validate_args(spec, {"s": 1, "c": "y", "o": {"a": "1"}}) == [
        '"s" must be a string or null',
        '"c" must be one of ["x",null]',
        '"o.a" must be an integer',
    ]


@pytest.mark.spec("B177")
def test_an_enum_on_an_array_is_refused_and_an_enum_on_its_items_constrains_each_item() -> None:
    """Issue 33, defect 15: JSON Schema's enum on an array lists whole arrays; the DSL
    read it as each item's. It is refused, and the items' enum is the way to say it."""
    on_array: Any = {"tags": {"type": "array", "items": {"type": "string"}, "enum": ["view"]}}
    with pytest.raises(SpecError, match='property "tags": "enum" applies only to string'):
        compile_spec(on_array)
    assert "enum" not in schema_spec_to_json_schema(on_array)["properties"]["tags"]
    spec: SchemaSpec = {
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    }
    schema, validate = compile_spec(spec)
    assert schema["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b"]},
    }
    assert validate({"tags": ["a", "b", "a"]}) == []
    assert validate({"tags": ["a", "c", "d"]}) == [
        '"tags[1]" must be one of ["a","b"]',
        '"tags[2]" must be one of ["a","b"]',
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"p": {"type": "string", "$ref": "#/x"}}, 'property "p": the DSL has no "$ref"'),
        (
            {"o": {"type": "object", "properties": {"n": {"type": "string", "minimum": 1}}}},
            'property "o.n": "minimum" applies only to integer or number properties',
        ),
        ({"p": {"type": "string", "pattern": "("}}, 'property "p": "pattern": "(" is not a valid'),
        (
            {"p": {"type": "string", "pattern": "(?=a)"}},
            'property "p": "pattern": "(?=a)" needs a backtracking regular-expression engine',
        ),
        ({"p": {"type": "string", "format": "colour"}}, 'property "p": format "colour" cannot'),
        ({"n": {"type": "number", "minimum": "1"}}, 'property "n": "minimum" must be a finite'),
        ({"n": {"type": "number", "multipleOf": 0}}, 'property "n": "multipleOf": 0 is less than'),
        ({"s": {"type": "string", "maxLength": -1}}, 'property "s": "maxLength": -1 is less'),
        ({"a": {"type": "array", "minItems": 1.5}}, 'property "a": "minItems": 1.5 is not of'),
        ({"a": {"type": "array", "uniqueItems": 1}}, 'property "a": "uniqueItems": 1 is not of'),
        ({"n": {"type": "number", "enum": ["1", "2"]}}, 'property "n": enum value "1" is not a'),
        ({"i": {"type": "integer", "enum": [1, 1.5]}}, 'property "i": enum value 1.5 is not an'),
        ({"i": {"type": "integer", "enum": [True]}}, 'property "i": enum value true is not an'),
        ({"b": {"type": "boolean", "enum": [0]}}, 'property "b": enum value 0 is not a boolean'),
        ({"s": {"type": "string", "enum": "ab"}}, 'property "s": "enum" must be a list'),
        ({"s": {"type": "string", "enum": [None]}}, 'property "s": enum value null is not a'),
        ({"o": {"type": "object", "enum": [{}]}}, 'property "o": "enum" applies only to string'),
        (
            {"a": {"type": "array", "items": {"type": "object"}, "enum": ["x"]}},
            'property "a": "enum" applies only to string, number, integer or boolean properties',
        ),
        (
            {"a": {"type": "array", "items": {"type": "string"}, "enum": ["x"]}},
            'property "a": "enum" applies only to string, number, integer or boolean properties'
            ' (to allow a set of item values, put it on "items")',
        ),
        (
            {"a": {"type": "array", "items": {"type": "integer", "enum": [1, "2"]}}},
            'property "a[]": enum value "2" is not an integer',
        ),
        ({"s": {"type": "string", "items": {"type": "string"}}}, 'property "s": "items" applies'),
        ({"s": {"type": "array", "properties": {}}}, 'property "s": "properties" applies only'),
        ({"s": {"type": "string", "required": 1}}, 'property "s": "required" must be a bool'),
        ({"s": {"type": "string", "nullable": "yes"}}, 'property "s": "nullable" must be a bool'),
        ({"s": {"type": "string", "description": 3}}, 'property "s": "description" must be'),
    ],
)
def test_what_the_dsl_cannot_enforce_is_refused_with_the_path(spec: Any, message: str) -> None:
    with pytest.raises(SpecError) as info:
        compile_spec(spec)
    assert str(info.value).startswith(message)
    with pytest.raises(RegistrationError) as registration:
        define_tool(name="t", description="d", parameters=spec, execute=lambda a, c: "")
    assert str(registration.value).startswith(f"define_tool(t): {message}")


def test_the_seed_dsl_stays_valid_in_validate_args() -> None:
    """B023: the lenient seed functions still take a string enum on a number."""
    spec: SchemaSpec = {"n": {"type": "number", "enum": ["1", "2"]}}
    assert validate_args(spec, {"n": 1}) == ['"n" must be one of ["1","2"]']


def test_a_valid_default_and_a_nullable_default_are_kept() -> None:
    spec: SchemaSpec = {
        "n": {"type": "integer", "default": 10},
        "s": {"type": "string", "nullable": True, "default": None},
    }
    schema, _ = compile_spec(spec)
    assert schema["properties"]["n"] == {"type": "integer", "default": 10}
    assert schema["properties"]["s"] == {"type": ["string", "null"], "default": None}


def test_a_default_is_an_annotation_kept_verbatim_even_when_its_property_rejects_it() -> None:
    """What Python signatures (``= None``) and hand-written schemas produce defines fine."""
    spec: Any = {
        "s": {"type": "string", "default": None},
        "b": {"type": "boolean", "default": "false"},
        "c": {"type": "string", "enum": ["a"], "default": "b"},
        "n": {"type": "integer", "minimum": 1, "default": 0},
    }
    schema, validate = compile_spec(spec)
    assert [p["default"] for p in schema["properties"].values()] == [None, "false", "b", 0]
    assert validate({}) == []  # never applied
    assert validate({"s": None, "b": "false"}) == ['"s" must be a string', '"b" must be a boolean']
    definition = define_tool(name="t", description="d", parameters=spec, execute=lambda a, c: "")
    assert definition.parameters == schema


# --- hypothesis: random specs --------------------------------------------------------------------

names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=4)
finite = st.floats(allow_nan=False, allow_infinity=False, width=32)
SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=4),
    "number": st.integers(-(2**40), 2**40) | finite,
    "integer": st.integers(-(2**40), 2**40),
    "boolean": st.booleans(),
}


@st.composite
def scalar_props(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(SCALAR_VALUES)) -> dict[str, Any]:
    kind = draw(st.sampled_from(kinds))
    prop: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        prop["enum"] = draw(st.lists(SCALAR_VALUES[kind], min_size=1, max_size=3, unique=True))
    return prop


def props(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    scalar = scalar_props()
    if depth == 0:
        leaf = scalar
    else:
        inner = props(depth - 1)
        leaf = (
            scalar
            | st.builds(lambda p: {"type": "object", "properties": p}, spec_of(inner))
            | st.builds(lambda i: {"type": "array", "items": i}, inner)
            | st.just({"type": "object"})
            | st.just({"type": "array"})
        )
    return st.builds(_flags, leaf, st.booleans(), st.booleans(), st.text(max_size=3))


def _flags(
    prop: dict[str, Any], required: bool, nullable: bool, description: str
) -> dict[str, Any]:
    out = dict(prop)
    if required:
        out["required"] = True
    if nullable:
        out["nullable"] = True
    if description:
        out["description"] = description
    return out


def spec_of(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(names, inner, max_size=4)


specs = spec_of(props(2))


def item_prop(prop: Mapping[str, Any]) -> dict[str, Any] | None:
    """The effective item prop of an array (its enum moved onto the items)."""
    items = prop.get("items")
    if "enum" not in prop:
        return None if items is None else dict(items)
    return {**(items or {"type": "any"}), "enum": prop["enum"]}


def value_for(prop: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    kind = prop["type"]
    if kind == "any" or ("enum" in prop and kind != "array"):
        base: st.SearchStrategy[Any] = st.sampled_from(prop["enum"])
    elif kind in SCALAR_VALUES:
        base = SCALAR_VALUES[kind]
    elif kind == "object":
        inner = prop.get("properties")
        base = object_for(inner) if inner is not None else st.dictionaries(names, st.integers())
    else:
        item = item_prop(prop)
        base = st.lists(value_for(item) if item is not None else st.text(max_size=2), max_size=3)
    return base | st.none() if prop.get("nullable") else base


def object_for(spec: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    required = {k: value_for(p) for k, p in spec.items() if p.get("required")}
    optional = {k: value_for(p) for k, p in spec.items() if not p.get("required")}
    return st.fixed_dictionaries(required, optional=optional)


NOUNS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}
WRONG = {"string": 7, "number": "7", "integer": 0.5, "boolean": "no", "object": [], "array": {}}


def mutations(prop: Mapping[str, Any], value: Any, path: str) -> list[tuple[str, Any, str]]:
    """Every one-field mutation inside ``value``: ``(path, new value, the violation)``."""
    kind = prop["type"]
    out: list[tuple[str, Any, str]] = []
    if kind != "any":
        noun = NOUNS[kind] + (" or null" if prop.get("nullable") else "")
        out.append((path, WRONG[kind], f'"{path}" must be {noun}'))
    enum = prop.get("enum")
    if enum and kind != "array":
        outsider = _outside(kind, enum)
        if outsider is not None:
            listed = [*enum, None] if prop.get("nullable") else enum
            out.append((path, outsider, f'"{path}" must be one of {_compact(listed)}'))
    if value is None:
        return out
    if kind == "object" and prop.get("properties") is not None:
        for key, inner in prop["properties"].items():
            if key in value:
                out.extend(mutations(inner, value[key], f"{path}.{key}"))
                if inner.get("required"):
                    out.append(
                        (f"{path}.{key}", DELETE, f'missing required property "{path}.{key}"')
                    )
    if kind == "array":
        item = item_prop(prop)
        if item is not None:
            for i, element in enumerate(value):
                out.extend(mutations(item, element, f"{path}[{i}]"))
    return out


DELETE: Any = object()


def _outside(kind: str, enum: list[Any]) -> Any:
    if kind == "string":
        return max(enum, key=len) + "~"
    if kind in ("number", "integer"):
        return int(max(enum)) + 1
    if kind == "boolean":
        return None if len(enum) == 2 else not enum[0]
    return "~".join(str(e) for e in enum) + "~" if all(isinstance(e, str) for e in enum) else None


def apply(args: dict[str, Any], path: str, new: Any) -> dict[str, Any]:
    """Return a copy of ``args`` with the value at ``path`` (``a.b[2].c``) replaced."""
    out = copy.deepcopy(args)
    steps: list[Any] = []
    for part in path.replace("[", ".[").split("."):
        steps.append(int(part[1:-1]) if part.startswith("[") else part)
    target: Any = out
    for step in steps[:-1]:
        target = target[step]
    if new is DELETE:
        del target[steps[-1]]
    else:
        target[steps[-1]] = new
    return out


def judged_valid(schema: Mapping[str, Any], value: Any) -> bool:
    return bool(JUDGE(schema).is_valid(value))


@given(spec=specs)
def test_property_random_specs_compile_and_the_schema_is_valid_json_schema(spec: Any) -> None:
    schema, _ = compile_spec(spec)
    JUDGE.check_schema(schema)
    assert schema == schema_spec_to_json_schema(spec)
    assert list(schema["properties"]) == list(spec)
    for key, prop in spec.items():
        emitted = schema["properties"][key]
        expected_type = [prop["type"], "null"] if prop.get("nullable") else prop["type"]
        assert emitted["type"] == expected_type
        if prop["type"] == "array" and "enum" in prop:
            assert "enum" not in emitted
            assert emitted["items"]["enum"] == prop["enum"]


@given(data=st.data(), spec=specs)
@settings(max_examples=200)
def test_property_generated_valid_values_validate_and_the_judge_agrees(
    data: st.DataObject, spec: Any
) -> None:
    schema, validate = compile_spec(spec)
    args = data.draw(object_for(spec))
    assert validate(args) == []
    assert validate_args(spec, args) == []
    assert judged_valid(schema, args)


@given(data=st.data(), spec=specs)
@settings(max_examples=300)
def test_property_a_one_field_mutation_gives_exactly_its_violation(
    data: st.DataObject, spec: Any
) -> None:
    schema, validate = compile_spec(spec)
    args = data.draw(object_for(spec))
    sites: list[tuple[str, Any, str]] = []
    for key, prop in spec.items():
        if key in args:
            sites.extend(mutations(prop, args[key], key))
            if prop.get("required"):
                sites.append((key, DELETE, f'missing required property "{key}"'))
    if not sites:
        return
    path, new, violation = data.draw(st.sampled_from(sites))
    mutated = apply(args, path, new)
    assert validate(mutated) == [violation]
    assert not judged_valid(schema, mutated)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | finite | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)


@given(data=st.data(), spec=specs)
@settings(max_examples=300)
def test_property_the_judge_agrees_with_validate_args_both_ways(
    data: st.DataObject, spec: Any
) -> None:
    """Valid per jsonschema ⇔ no violations, on arbitrary and near-valid arguments."""
    schema = schema_spec_to_json_schema(spec)
    keys = st.sampled_from(list(spec)) | names if spec else names
    arbitrary = st.dictionaries(keys, json_values, max_size=4)
    spliced = st.builds(lambda a, b: {**a, **b}, object_for(spec), arbitrary)
    args = data.draw(arbitrary | object_for(spec) | spliced)
    assert (validate_args(spec, args) == []) == judged_valid(schema, args)
    assert compile_validator(spec)(args) == validate_args(spec, args)


@pytest.mark.parametrize(
    ("prop", "good", "bad", "violation"),
    [
        ({"type": "integer", "minimum": 1}, 1, 0, '"v" must be >= 1'),
        ({"type": "number", "exclusiveMinimum": 0}, 0.5, 0, '"v" must be > 0'),
        ({"type": "number", "maximum": 2.5}, 2.5, 3, '"v" must be <= 2.5'),
        ({"type": "integer", "exclusiveMaximum": 10}, 9, 10, '"v" must be < 10'),
        ({"type": "integer", "multipleOf": 5}, 10.0, 12, '"v" must be a multiple of 5'),
        ({"type": "number", "multipleOf": 0.5}, 1.5, 1.25, '"v" must be a multiple of 0.5'),
        ({"type": "string", "minLength": 2}, "ab", "é", '"v" must be at least 2 characters long'),
        ({"type": "string", "maxLength": 1}, "é", "ab", '"v" must be at most 1 character long'),
        ({"type": "string", "pattern": "[0-9]"}, "a1", "ab", '"v" must match the pattern "[0-9]"'),
        (
            {"type": "string", "format": "date"},
            "2024-02-29",
            "2024-02-30",
            '"v" must be a valid "date"',
        ),
        ({"type": "array", "minItems": 1}, [0], [], '"v" must have at least 1 item'),
        ({"type": "array", "maxItems": 2}, [1, 2], [1, 2, 3], '"v" must have at most 2 items'),
        (
            {"type": "array", "uniqueItems": True},
            [1, True],
            [1, 1.0],
            '"v" must not contain duplicate items',
        ),
        (
            {"type": "array", "uniqueItems": True},
            [[1], [2]],
            [{"a": 1}, {"a": 1.0}],
            '"v" must not contain duplicate items',
        ),
        ({"type": "array", "uniqueItems": False}, [1, 1], "x", '"v" must be an array'),
    ],
)
def test_each_constraint_reads_as_its_rule(
    prop: dict[str, Any], good: Any, bad: Any, violation: str
) -> None:
    spec: Any = {"v": prop}
    schema, validate = compile_spec(spec)
    assert schema["properties"]["v"] == prop
    assert validate({"v": good}) == []
    assert validate({"v": bad}) == [violation]
    assert JUDGE(schema, format_checker=jsonschema.FormatChecker()).is_valid({"v": good})
    assert not JUDGE(schema, format_checker=jsonschema.FormatChecker()).is_valid({"v": bad})


def test_constraints_apply_to_array_items_beside_their_enum() -> None:
    spec: Any = {
        "codes": {
            "type": "array",
            "items": {"type": "string", "maxLength": 2, "enum": ["a", "abc"]},
        }
    }
    _, validate = compile_spec(spec)
    assert validate({"codes": ["a"]}) == []
    assert validate({"codes": ["abc", "b"]}) == [
        '"codes[0]" must be at most 2 characters long',
        '"codes[1]" must be one of ["a","abc"]',
    ]


def test_a_nullable_constrained_value_takes_null_and_a_wrong_type_skips_the_rules() -> None:
    spec: Any = {"n": {"type": "integer", "nullable": True, "minimum": 5}}
    _, validate = compile_spec(spec)
    assert validate({"n": None}) == []
    assert validate({"n": "7"}) == ['"n" must be an integer or null']
