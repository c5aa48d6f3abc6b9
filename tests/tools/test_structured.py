"""The structured-output schema subset: assertion (B173-B183) and validation (B184-B196)."""

from __future__ import annotations

import copy
import datetime
import math
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnursery._core._content import TextContent, ToolErrorInfo
from toolnursery._core._errors import OutputSchemaError, ToolArgsError, ToolError
from toolnursery._core._execution import ToolExecutionInput
from toolnursery._pipeline._registry import ToolRegistry
from toolnursery._tools._definition import ToolDefinition
from toolnursery._tools._structured import assert_supported_output_schema, validate_structured_value

KEYWORDS = "(subset: type/properties/required/additionalProperties/items/enum/const + annotations)"
TYPE_LIST = "object/array/string/number/integer/boolean/null"
ROOT = 'schema.type must be "object" (structured output is object-rooted)'


def violations_of(schema: object) -> list[str]:
    with pytest.raises(OutputSchemaError) as info:
        assert_supported_output_schema(schema)
    return list(info.value.violations)


# --- assertion ---------------------------------------------------------------------


@pytest.mark.spec("B173")
def test_accepts_every_supported_keyword_and_type() -> None:
    schema = {
        "type": "object",
        "description": "a finding",
        "title": "Finding",
        "properties": {
            "file": {"type": "string", "description": "path"},
            "line": {"type": "integer"},
            "severity": {"type": "string", "enum": ["low", "high"]},
            "kind": {"type": "string", "const": "bug"},
            "score": {"type": "number"},
            "confirmed": {"type": "boolean"},
            "parent": {"type": "null"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "number", "default": 3, "examples": [1, 2]}},
                "additionalProperties": False,
            },
            "anything": {"type": "array"},
        },
        "required": ["file", "line"],
        "additionalProperties": True,
    }
    assert_supported_output_schema(schema)


@pytest.mark.spec("B173")
def test_accepts_tuples_and_dict_subclasses_as_json_structure() -> None:
    schema = OrderedDict(
        type="object",
        properties=OrderedDict(a={"type": "string", "enum": ("x", "y")}),
        required=("a",),
    )
    assert_supported_output_schema(schema)
    assert validate_structured_value(schema, OrderedDict(a="x")) == []


@pytest.mark.spec("B174")
def test_root_must_be_an_object() -> None:
    assert violations_of({"type": "string"}) == [ROOT]
    assert violations_of({"type": "array", "items": {"type": "string"}}) == [ROOT]


@pytest.mark.spec("B174")
def test_root_violation_only_when_nothing_else_is_wrong() -> None:
    assert violations_of({"type": "string", "minimum": 1}) == [
        f"schema.minimum is not a supported keyword {KEYWORDS}"
    ]


@pytest.mark.spec("B175")
def test_non_object_nodes_and_bad_types() -> None:
    bad: object
    for bad in ("nope", None, [], 3, ()):
        assert violations_of(bad) == ["schema must be a schema object"]
    assert violations_of({}) == [f"schema.type must be one of {TYPE_LIST}"]
    assert violations_of({"type": "tuple"}) == [f"schema.type must be one of {TYPE_LIST}"]
    assert violations_of({"type": "object", "properties": {"a": "str"}}) == [
        "schema.properties.a must be a schema object"
    ]
    assert violations_of({"type": ["string", "null"]}) == [
        "schema.type must be a single type string (type arrays are not supported)"
    ]


@pytest.mark.spec("B175")
def test_invalid_type_skips_type_specific_checks() -> None:
    assert violations_of({"type": "weird", "items": 5, "properties": 7, "enum": []}) == [
        f"schema.type must be one of {TYPE_LIST}"
    ]


@pytest.mark.spec("B176")
@pytest.mark.parametrize(
    "keyword", ["oneOf", "anyOf", "allOf", "not", "pattern", "minimum", "maxLength", "$ref"]
)
def test_unsupported_keywords_are_rejected(keyword: str) -> None:
    assert violations_of({"type": "object", keyword: []}) == [
        f"schema.{keyword} is not a supported keyword {KEYWORDS}"
    ]


@pytest.mark.spec("B176")
def test_every_violation_is_reported() -> None:
    schema = {
        "type": "object",
        "pattern": "x",
        "properties": {"a": {"type": "weird"}, "b": {"type": "string", "minimum": 1}},
    }
    assert violations_of(schema) == [
        f"schema.pattern is not a supported keyword {KEYWORDS}",
        f"schema.properties.a.type must be one of {TYPE_LIST}",
        f"schema.properties.b.minimum is not a supported keyword {KEYWORDS}",
    ]


@pytest.mark.spec("B177")
def test_keywords_on_the_wrong_type() -> None:
    assert violations_of({"type": "object", "items": {"type": "string"}}) == [
        'schema.items is not supported on type "object"'
    ]
    assert violations_of(
        {"type": "object", "properties": {"a": {"type": "string", "properties": {}}}}
    ) == ['schema.properties.a.properties is not supported on type "string"']
    assert violations_of({"type": "object", "enum": [1]}) == [
        'schema.enum is not supported on type "object"'
    ]
    assert violations_of(
        {"type": "object", "properties": {"a": {"type": "array", "const": 1}}}
    ) == ['schema.properties.a.const is not supported on type "array"']


@pytest.mark.spec("B178")
def test_required_must_be_strings_naming_own_properties() -> None:
    assert violations_of({"type": "object", "required": "file"}) == [
        "schema.required must be an array of strings"
    ]
    assert violations_of({"type": "object", "required": [1]}) == [
        "schema.required must be an array of strings"
    ]
    assert violations_of(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}
    ) == ['schema.required names "b" which is not in properties']
    assert violations_of({"type": "object", "required": ["a"]}) == [
        'schema.required names "a" which is not in properties'
    ]


@pytest.mark.spec("B178")
def test_required_is_not_satisfied_by_inherited_names() -> None:
    class Props(dict[str, Any]):
        toString = {"type": "string"}  # a class attribute, not a key

        def __missing__(self, key: str) -> Any:
            return {"type": "string"}

        def __contains__(self, key: object) -> bool:
            return True

    schema = {"type": "object", "properties": Props(), "required": ["toString"]}
    assert violations_of(schema) == ['schema.required names "toString" which is not in properties']


@pytest.mark.spec("B179")
def test_additional_properties_enum_and_const() -> None:
    def prop(**node: Any) -> dict[str, Any]:
        return {"type": "object", "properties": {"a": node}}

    assert violations_of({"type": "object", "additionalProperties": {}}) == [
        "schema.additionalProperties must be a boolean"
    ]
    bad: object
    for bad in ([], [{}], "x", [math.nan], [math.inf], [datetime.date(2020, 1, 1)]):
        assert violations_of(prop(type="string", enum=bad)) == [
            "schema.properties.a.enum must be a non-empty array of scalars"
        ]
    bad_const: object
    for bad_const in ({}, [], math.nan, msgspec.Raw(b"1")):
        assert violations_of(prop(type="string", const=bad_const)) == [
            "schema.properties.a.const must be a scalar"
        ]
    assert_supported_output_schema(prop(type="string", enum=["x", 1, 2.5, True, None]))
    assert_supported_output_schema(prop(type="null", const=None))


@pytest.mark.spec("B180")
def test_annotations_must_be_strings_or_json_data() -> None:
    assert violations_of({"type": "object", "description": 7}) == [
        "schema.description must be a string"
    ]
    assert violations_of({"type": "object", "title": 7}) == ["schema.title must be a string"]
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for key, bad in [
        ("default", lambda: 1),
        ("examples", [msgspec.UNSET]),
        ("examples", [math.inf]),
        ("default", cyclic),
        ("default", datetime.datetime(2020, 1, 1)),
        ("examples", [MappingProxyType({})]),
        ("examples", [{1, 2}]),
        ("default", {1: "non-string key"}),
    ]:
        assert violations_of({"type": "object", key: bad}) == [
            f"schema.{key} annotation must be JSON data"
        ]
    # Every annotation must be JSON data; description/title must also be strings.
    assert violations_of({"type": "object", "title": {1}}) == [
        "schema.title annotation must be JSON data",
        "schema.title must be a string",
    ]
    shared = [1, "x"]
    assert_supported_output_schema(
        {"type": "object", "default": {"a": [1, "x", None, True]}, "examples": [shared, shared]}
    )


@pytest.mark.spec("B181")
def test_a_cycle_is_reported_and_a_dag_is_fine() -> None:
    node: dict[str, Any] = {"type": "object"}
    node["properties"] = {"self": node}
    assert violations_of(node) == ["schema.properties.self is circular"]
    leaf = {"type": "string"}
    assert_supported_output_schema({"type": "object", "properties": {"a": leaf, "b": leaf}})
    items = {"type": "array", "items": leaf}
    assert_supported_output_schema({"type": "object", "properties": {"a": items, "b": items}})


@pytest.mark.spec("B182")
def test_non_plain_structure_is_rejected() -> None:
    assert violations_of({"type": "object", "properties": MappingProxyType({})}) == [
        "schema.properties must be an object of schemas"
    ]
    assert violations_of({"type": "object", "properties": []}) == [
        "schema.properties must be an object of schemas"
    ]
    assert violations_of(
        {"type": "object", "properties": {"at": datetime.datetime(2020, 1, 1)}}
    ) == ["schema.properties.at must be a schema object"]
    assert violations_of(MappingProxyType({"type": "object"})) == ["schema must be a schema object"]


@pytest.mark.spec("B183")
def test_violation_order_within_and_across_nodes() -> None:
    schema = {
        "zeta": 1,
        "default": {1, 2},
        "type": "object",
        "items": {},
        "title": 3,
        "description": 4,
        "alpha": 2,
        "properties": {
            "a": {"type": "string", "enum": [], "const": []},
            "b": {"type": "array", "items": {"type": "nope"}},
        },
        "required": ["a", "missing"],
        "additionalProperties": "no",
        "enum": [1],
    }
    assert violations_of(schema) == [
        f"schema.zeta is not a supported keyword {KEYWORDS}",
        "schema.default annotation must be JSON data",
        f"schema.alpha is not a supported keyword {KEYWORDS}",
        "schema.description must be a string",
        "schema.title must be a string",
        'schema.items is not supported on type "object"',
        'schema.enum is not supported on type "object"',
        "schema.properties.a.enum must be a non-empty array of scalars",
        "schema.properties.a.const must be a scalar",
        f"schema.properties.b.items.type must be one of {TYPE_LIST}",
        'schema.required names "missing" which is not in properties',
        "schema.additionalProperties must be a boolean",
    ]


@pytest.mark.spec("B183")
def test_output_schema_error_shape() -> None:
    with pytest.raises(OutputSchemaError) as info:
        assert_supported_output_schema({"type": "object", "not": {}, "title": 1})
    error = info.value
    assert isinstance(error, ToolError)
    assert error.name == "OutputSchemaError"
    assert error.code == "UNSUPPORTED_SCHEMA"
    assert str(error) == (
        f"unsupported output schema: schema.not is not a supported keyword {KEYWORDS}; "
        "schema.title must be a string"
    )


def test_unset_keys_in_a_schema_read_as_absent() -> None:
    assert_supported_output_schema({"type": "object", "items": msgspec.UNSET, "x": msgspec.UNSET})
    assert violations_of({"type": msgspec.UNSET}) == [f"schema.type must be one of {TYPE_LIST}"]


def _chain(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    node = leaf
    for _ in range(depth):
        node = {"type": "object", "properties": {"n": node}, "required": ["n"]}
    return node


def test_deep_schemas_and_values_do_not_hit_the_recursion_limit() -> None:
    schema = _chain(5000, {"type": "string"})
    assert_supported_output_schema(schema)
    value: Any = "leaf"
    for _ in range(5000):
        value = {"n": value}
    assert validate_structured_value(schema, value) == []
    inner = value
    for _ in range(4999):
        inner = inner["n"]
    inner["n"] = 5
    path = "value" + ".n" * 5000
    assert validate_structured_value(schema, value) == [f'"{path}" must be a string']
    deep_default: Any = []
    for _ in range(5000):
        deep_default = [deep_default]
    assert_supported_output_schema({"type": "object", "default": deep_default})
    items: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        items = {"type": "array", "items": items}
    assert violations_of({"type": "object", "properties": {"a": items, "b": 1}}) == [
        "schema.properties.b must be a schema object"
    ]


# --- validation ----------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {"type": "string"},
        "line": {"type": "integer"},
        "score": {"type": "number"},
        "confirmed": {"type": "boolean"},
        "parent": {"type": "null"},
        "severity": {"type": "string", "enum": ["low", "high"]},
        "kind": {"type": "string", "const": "bug"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "free": {"type": "array"},
        "nested": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
            "additionalProperties": False,
        },
    },
    "required": ["file"],
}


@pytest.mark.spec("B184")
def test_a_valid_value_has_no_violations() -> None:
    assert_supported_output_schema(SCHEMA)
    value = {
        "file": "a.ts",
        "line": 3,
        "score": 0.5,
        "confirmed": True,
        "parent": None,
        "severity": "high",
        "kind": "bug",
        "tags": ("x",),
        "free": [1, {"any": True}],
        "nested": {"x": 1},
    }
    assert validate_structured_value(SCHEMA, value) == []


@pytest.mark.spec("B185")
def test_missing_required_and_wrong_root() -> None:
    assert validate_structured_value(SCHEMA, {}) == ['missing required property "value.file"']
    assert validate_structured_value(SCHEMA, "nope") == ['"value" must be an object']
    assert validate_structured_value(SCHEMA, []) == ['"value" must be an object']


@pytest.mark.spec("B186")
@pytest.mark.parametrize(
    ("key", "bad", "message"),
    [
        ("file", 1, '"value.file" must be a string'),
        ("line", 1.5, '"value.line" must be an integer'),
        ("line", "x", '"value.line" must be an integer'),
        ("line", True, '"value.line" must be an integer'),
        ("score", "x", '"value.score" must be a finite number'),
        ("score", math.nan, '"value.score" must be a finite number'),
        ("score", -math.inf, '"value.score" must be a finite number'),
        ("score", False, '"value.score" must be a finite number'),
        ("confirmed", "yes", '"value.confirmed" must be a boolean'),
        ("confirmed", 1, '"value.confirmed" must be a boolean'),
        ("parent", 0, '"value.parent" must be null'),
    ],
)
def test_scalar_type_violation_messages(key: str, bad: object, message: str) -> None:
    value = {"file": "a", key: bad}
    assert validate_structured_value(SCHEMA, value) == [message]


@pytest.mark.spec("B187")
def test_enum_and_const_violations_quote_the_allowed_values() -> None:
    assert validate_structured_value(SCHEMA, {"file": "a", "severity": "mid"}) == [
        '"value.severity" must be one of ["low","high"]'
    ]
    assert validate_structured_value(SCHEMA, {"file": "a", "kind": "feature"}) == [
        '"value.kind" must be "bug"'
    ]
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "enum": [1, 2]},
            "u": {"type": "string", "const": "é"},
            "b": {"type": "boolean", "enum": [True]},
            "e": {"type": "string", "enum": []},
        },
    }
    assert validate_structured_value(schema, {"n": 1.0, "u": "é", "b": True}) == []
    assert validate_structured_value(schema, {"n": 3, "u": "e", "b": False, "e": "x"}) == [
        '"value.n" must be one of [1,2]',
        '"value.u" must be "é"',
        '"value.b" must be one of [true]',
        '"value.e" must be one of []',
    ]
    # Type first: a value of the wrong type gets only the type message.
    assert validate_structured_value(schema, {"n": "1"}) == ['"value.n" must be an integer']


@pytest.mark.spec("B187")
def test_booleans_are_never_equal_to_numbers() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "enum": [1, 0]}}}
    assert validate_structured_value(schema, {"n": 1}) == []
    flag = {"type": "object", "properties": {"b": {"type": "boolean", "const": True}}}
    assert validate_structured_value(flag, {"b": True}) == []
    assert validate_structured_value(flag, {"b": False}) == ['"value.b" must be true']


@pytest.mark.spec("B188")
def test_arrays_per_index_and_items_less_arrays() -> None:
    assert validate_structured_value(SCHEMA, {"file": "a", "tags": "x"}) == [
        '"value.tags" must be an array'
    ]
    assert validate_structured_value(SCHEMA, {"file": "a", "tags": ["ok", 2, None]}) == [
        '"value.tags[1]" must be a string',
        '"value.tags[2]" must be a string',
    ]
    assert validate_structured_value(SCHEMA, {"file": "a", "free": [{"deep": [1]}, None]}) == []


@pytest.mark.spec("B189")
def test_nested_object_violations_carry_dotted_paths() -> None:
    assert validate_structured_value(SCHEMA, {"file": "a", "nested": {}}) == [
        'missing required property "value.nested.x"'
    ]
    assert validate_structured_value(SCHEMA, {"file": "a", "nested": {"x": 1, "y": 2}}) == [
        '"value.nested.y" is not a declared property (additionalProperties: false)'
    ]
    assert validate_structured_value(SCHEMA, {"file": "a", "nested": 3}) == [
        '"value.nested" must be an object'
    ]


@pytest.mark.spec("B190")
def test_required_key_with_unset_value_is_missing() -> None:
    assert validate_structured_value(SCHEMA, {"file": msgspec.UNSET}) == [
        'missing required property "value.file"'
    ]
    closed = {"type": "object", "additionalProperties": False}
    assert validate_structured_value(closed, {"gone": msgspec.UNSET}) == []


@pytest.mark.spec("B190")
def test_none_is_a_present_null() -> None:
    assert validate_structured_value(SCHEMA, {"file": None}) == ['"value.file" must be a string']


@pytest.mark.spec("B191")
def test_only_own_keys_count_as_present() -> None:
    class Record(dict[str, Any]):
        file = "class attribute"

        def __missing__(self, key: str) -> str:
            return "invented"

        def get(self, key: str, default: Any = None) -> Any:
            return "invented"

    assert validate_structured_value(SCHEMA, Record()) == ['missing required property "value.file"']
    declared = {"type": "object", "properties": {"constructor": {"type": "string"}}}
    assert validate_structured_value(declared, Record()) == []
    closed = {"type": "object", "additionalProperties": False}
    assert validate_structured_value(closed, Record(toString=1)) == [
        '"value.toString" is not a declared property (additionalProperties: false)'
    ]


@pytest.mark.spec("B192")
def test_non_plain_objects_are_not_json_objects() -> None:
    bare = {"type": "object"}
    for value in (
        datetime.datetime(2020, 1, 1),
        MappingProxyType({"a": 1}),
        object(),
        {1, 2},
        7,
    ):
        assert validate_structured_value(bare, value) == ['"value" must be an object']
    assert validate_structured_value(bare, {"any": ["thing"]}) == []


@pytest.mark.spec("B193")
def test_violations_come_in_one_pass_required_first() -> None:
    assert validate_structured_value(SCHEMA, {"line": "x", "severity": "mid"}) == [
        'missing required property "value.file"',
        '"value.line" must be an integer',
        '"value.severity" must be one of ["low","high"]',
    ]
    # "z" is declared last but required: required violations still come first.
    closed: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "object", "required": ["c"]},
            "z": {"type": "string"},
        },
        "required": ["z"],
        "additionalProperties": False,
    }
    assert validate_structured_value(closed, {"u": 1, "b": {}, "a": 2}) == [
        'missing required property "value.z"',
        '"value.a" must be a string',
        'missing required property "value.b.c"',
        '"value.u" is not a declared property (additionalProperties: false)',
    ]


@pytest.mark.spec("B194")
def test_null_typed_const_and_enum() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "null", "const": None}, "b": {"type": "null", "enum": [None]}},
    }
    assert_supported_output_schema(schema)
    assert validate_structured_value(schema, {"a": None, "b": None}) == []


@pytest.mark.spec("B195")
def test_forged_schema_type_raises() -> None:
    with pytest.raises(TypeError, match="tuple"):
        validate_structured_value({"type": "tuple"}, 1)
    with pytest.raises(TypeError, match=r"value\.a"):
        validate_structured_value({"type": "object", "properties": {"a": "str"}}, {"a": 1})


@pytest.mark.spec("B195")
def test_a_forged_cyclic_schema_meeting_a_cyclic_value_raises() -> None:
    node: dict[str, Any] = {"type": "object"}
    node["properties"] = {"self": node}
    value: dict[str, Any] = {}
    value["self"] = value
    with pytest.raises(ValueError, match="circular"):
        validate_structured_value(node, value)
    assert validate_structured_value(node, {"self": {"self": {}}}) == []


@pytest.mark.spec("B196")
def test_integer_number_and_boolean_semantics() -> None:
    schema = {
        "type": "object",
        "properties": {"i": {"type": "integer"}, "n": {"type": "number"}},
    }
    assert validate_structured_value(schema, {"i": 1.0, "n": 10**30}) == []
    assert validate_structured_value(schema, {"i": 2**70, "n": -0.0}) == []
    assert validate_structured_value(schema, {"i": math.inf, "n": math.inf}) == [
        '"value.i" must be an integer',
        '"value.n" must be a finite number',
    ]
    assert validate_structured_value(schema, {"i": False, "n": True}) == [
        '"value.i" must be an integer',
        '"value.n" must be a finite number',
    ]


# --- the capture-tool consumer pattern ------------------------------------------------


@pytest.mark.spec("B197")
async def test_a_capture_tool_rejects_invalid_values_with_invalid_args() -> None:
    captured: list[Any] = []

    async def capture(args: Any, ctx: Any) -> str:
        violations = validate_structured_value(SCHEMA, args)
        if violations:
            raise ToolArgsError(violations)
        captured.append(args)
        return "captured"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            name="structured_output",
            description="Report the result.",
            parameters=SCHEMA,
            execute=capture,
            validate=False,  # the body checks, with the structured-output texts
        )
    )
    bad = await registry.execute(ToolExecutionInput("c1", "structured_output", {"line": "x"}))
    assert bad.is_error
    assert bad.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")
    assert bad.content == (
        TextContent(
            text='Error: invalid arguments: missing required property "value.file"; '
            '"value.line" must be an integer'
        ),
    )
    good = await registry.execute(ToolExecutionInput("c2", "structured_output", {"file": "a"}))
    assert not good.is_error
    assert captured == [{"file": "a"}]


@pytest.mark.spec("B198")
def test_a_schema_outside_the_subset_fails_before_anything_is_built() -> None:
    with pytest.raises(
        OutputSchemaError, match=r"^unsupported output schema: .*annotation must be JSON data"
    ):
        assert_supported_output_schema(
            {"type": "object", "properties": {"answer": {"type": "number", "default": math.nan}}}
        )


# --- properties ------------------------------------------------------------------------

# Recursive schemas with JSON annotations are slow to draw on a loaded machine; the
# example count, not the wall clock, is what these properties need.
SLOW_OK = [HealthCheck.too_slow]
NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
JSON_DATA = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=8),
    "number": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    "integer": st.integers() | st.integers(-(2**50), 2**50).map(float),
    "boolean": st.booleans(),
    "null": st.none(),
}
WRONG = {
    "string": (0, "must be a string"),
    "number": ("1", "must be a finite number"),
    "integer": (1.5, "must be an integer"),
    "boolean": (0, "must be a boolean"),
    "null": (False, "must be null"),
    "object": ("{}", "must be an object"),
    "array": ({}, "must be an array"),
}


@st.composite
def annotation_keys(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["description"] = draw(st.text(max_size=5))
    if draw(st.booleans()):
        out["title"] = draw(st.text(max_size=5))
    if draw(st.booleans()):
        out["default"] = draw(JSON_DATA)
    if draw(st.booleans()):
        out["examples"] = draw(st.lists(JSON_DATA, max_size=2))
    return out


@st.composite
def scalar_nodes(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(SCALAR_VALUES)))
    node: dict[str, Any] = {"type": kind, **draw(annotation_keys())}
    if draw(st.booleans()):
        node["enum"] = draw(st.lists(SCALAR_VALUES[kind], min_size=1, max_size=3))
        if draw(st.booleans()):
            node["const"] = draw(st.sampled_from(node["enum"]))
    elif draw(st.booleans()):
        node["const"] = draw(SCALAR_VALUES[kind])
    return node


def object_nodes(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "object", **draw(annotation_keys())}
        if draw(st.booleans()):
            properties = draw(st.dictionaries(NAMES, children, max_size=4))
            node["properties"] = properties
            if draw(st.booleans()):
                node["required"] = (
                    draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
                    if properties
                    else []
                )
        if draw(st.booleans()):
            node["additionalProperties"] = draw(st.booleans())
        return node

    return build()


def array_nodes(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "array", **draw(annotation_keys())}
        if draw(st.booleans()):
            node["items"] = draw(children)
        return node

    return build()


SCHEMAS = object_nodes(
    st.recursive(
        scalar_nodes(),
        lambda inner: object_nodes(inner) | array_nodes(inner),
        max_leaves=10,
    )
)


def values_for(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = node["type"]
    if kind == "object":
        properties = node.get("properties", {})
        required = set(node.get("required", ()))
        fixed = st.fixed_dictionaries(
            {k: values_for(v) for k, v in properties.items() if k in required},
            optional={k: values_for(v) for k, v in properties.items() if k not in required},
        )
        if node.get("additionalProperties") is False:
            return fixed
        extra = st.dictionaries(NAMES.map(lambda k: "x-" + k), JSON_DATA, max_size=2)
        return st.tuples(fixed, extra).map(lambda pair: {**pair[1], **pair[0]})
    if kind == "array":
        items = values_for(node["items"]) if "items" in node else JSON_DATA
        return st.lists(items, max_size=3)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    return SCALAR_VALUES[kind]


def positions(node: dict[str, Any], value: Any, path: str) -> list[tuple[str, list[Any], str]]:
    """Every (path, route, type) a valid value holds, where route leads to it."""
    out: list[tuple[str, list[Any], str]] = []
    stack: list[tuple[dict[str, Any], Any, str, list[Any]]] = [(node, value, path, [])]
    while stack:
        n, v, p, route = stack.pop()
        out.append((p, route, n["type"]))
        if n["type"] == "object":
            for key, child in n.get("properties", {}).items():
                if key in v:
                    stack.append((child, v[key], f"{p}.{key}", [*route, key]))
        elif n["type"] == "array" and "items" in n:
            for index, item in enumerate(v):
                stack.append((n["items"], item, f"{p}[{index}]", [*route, index]))
    return out


@settings(max_examples=200, suppress_health_check=SLOW_OK)
@given(SCHEMAS)
def test_property_every_generated_schema_is_accepted(schema: dict[str, Any]) -> None:
    assert_supported_output_schema(schema)


@settings(max_examples=200, suppress_health_check=SLOW_OK)
@given(st.data())
def test_property_generated_values_validate(data: st.DataObject) -> None:
    schema = data.draw(SCHEMAS)
    value = data.draw(values_for(schema))
    assert validate_structured_value(schema, value) == []


@settings(max_examples=300, suppress_health_check=SLOW_OK)
@given(st.data())
def test_property_one_wrong_type_gives_exactly_its_violation(data: st.DataObject) -> None:
    schema = data.draw(SCHEMAS)
    value = data.draw(values_for(schema))
    path, route, kind = data.draw(st.sampled_from(positions(schema, value, "value")))
    wrong, message = WRONG[kind]
    mutated = copy.deepcopy(value)
    if route:
        holder = mutated
        for step in route[:-1]:
            holder = holder[step]
        holder[route[-1]] = wrong
    else:
        mutated = wrong
    assert validate_structured_value(schema, mutated) == [f'"{path}" {message}']


ANY_VALUES = st.recursive(
    JSON_DATA
    | st.sampled_from(
        [math.nan, math.inf, msgspec.UNSET, datetime.date(2020, 1, 1), b"x", frozenset({1})]
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(NAMES | st.integers(), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=SLOW_OK)
@given(SCHEMAS, ANY_VALUES)
def test_property_validation_never_raises(schema: dict[str, Any], value: Any) -> None:
    result = validate_structured_value(schema, value)
    assert isinstance(result, list)
    assert all(isinstance(v, str) for v in result)
