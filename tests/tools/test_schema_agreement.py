"""DSL, Struct/@tool and raw-schema validation agree with jsonschema, constraints included.

Hypothesis draws specs (and Struct parameter types) with bounds, lengths, patterns,
formats and item rules, then values around their edges, and checks each validator
accepts exactly what ``jsonschema`` (Draft 2020-12) accepts for the schema the model
is shown. ``jsonschema`` checks ``date-time``, ``time`` and ``uri`` only with optional
packages, so the judge takes those three from toolnursery's checker; every other
format is ``jsonschema``'s own.
"""

from __future__ import annotations

from typing import Annotated, Any

import jsonschema
import msgspec
import pydantic
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toolnursery import ToolArgsError, ToolDefinition, define_tool, tool
from toolnursery._tools._formats import format_checker
from toolnursery._tools._raw import compile_raw_validator
from toolnursery._tools._schema import compile_spec

pytestmark = pytest.mark.timeout(120)


def _judge_formats() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    ours = format_checker().checkers
    for name in ("date-time", "time", "uri"):
        checker.checkers.setdefault(name, ours[name])
    return checker


JUDGE_FORMATS = _judge_formats()


def judge(schema: dict[str, Any], args: Any) -> bool:
    return bool(
        jsonschema.Draft202012Validator(schema, format_checker=JUDGE_FORMATS).is_valid(args)
    )


# --- values: JSON near the edges of the constraints drawn below ----------------------------

FORMAT_SAMPLES = [
    "2024-02-29",
    "2023-02-29",
    "2024-05-01T09:30:00Z",
    "2024-05-01T09:30:00",
    "2024-05-01t09:30:00.5+02:00",
    "09:30:00Z",
    "25:00:00Z",
    "a@b",
    "ab",
    "https://example.org/x",
    "not a uri",
    "urn:isbn:0451450523",
    "12345678-1234-5678-1234-567812345678",
    "12345678-1234-5678-1234-56781234567",
]
names = st.sampled_from(["a", "b", "c", "d"])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-8, 8),
    st.sampled_from([-2.5, -0.5, 0.0, 0.5, 1.5, 2.0, 3.0, 2.5, 1e300]),
    st.text(alphabet="ab09@:-", max_size=5),
    st.sampled_from(FORMAT_SAMPLES),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)

# --- DSL specs with constraints -------------------------------------------------------------

NUMBERS = st.integers(-4, 4) | st.sampled_from([-2.5, 0.5, 1.5])
PATTERNS = st.sampled_from(["^a", "b$", "[0-9]", "^[a-z]*$", "a|b", "^.{2}$"])
FORMATS = st.sampled_from(["date", "date-time", "time", "email", "uri", "uuid"])


@st.composite
def constrained(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": kind}
    if kind in ("number", "integer"):
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if draw(st.booleans()):
                prop[keyword] = draw(NUMBERS)
        if draw(st.booleans()):
            prop["multipleOf"] = draw(st.sampled_from([1, 2, 3, 0.5, 0.25, 1.5]))
    elif kind == "string":
        for keyword in ("minLength", "maxLength"):
            if draw(st.booleans()):
                prop[keyword] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            prop["pattern"] = draw(PATTERNS)
        if draw(st.booleans()):
            prop["format"] = draw(FORMATS)
    if kind != "boolean" and draw(st.integers(0, 4)) == 0:
        scalar = {"string": scalars.filter(lambda v: isinstance(v, str))}.get(
            kind, st.integers(-3, 3)
        )
        prop["enum"] = draw(st.lists(scalar, min_size=1, max_size=3, unique=True))
    return prop


def spec_props(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    scalar = st.sampled_from(["string", "number", "integer", "boolean"]).flatmap(constrained)
    if depth == 0:
        return scalar
    return st.one_of(scalar, arrays(depth), objects(depth))


@st.composite
def arrays(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "array"}
    if draw(st.booleans()):
        prop["items"] = draw(spec_props(depth - 1))
    for keyword in ("minItems", "maxItems"):
        if draw(st.booleans()):
            prop[keyword] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        prop["uniqueItems"] = draw(st.booleans())
    return prop


@st.composite
def objects(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    return {"type": "object", "properties": draw(specs(depth - 1))}


@st.composite
def specs(draw: st.DrawFn, depth: int = 2) -> dict[str, Any]:
    keys = draw(st.lists(names, max_size=3, unique=True))
    spec: dict[str, Any] = {}
    for key in keys:
        prop = dict(draw(spec_props(depth)))
        if draw(st.booleans()):
            prop["required"] = True
        if draw(st.integers(0, 3)) == 0:
            prop["nullable"] = True
        spec[key] = prop
    return spec


def _paths(violations: list[str]) -> set[str]:
    return {v.split('"')[1] for v in violations}


@settings(max_examples=400, deadline=None)
@given(spec=specs(), args=st.dictionaries(names, values, max_size=4))
def test_dsl_and_raw_validation_agree_with_jsonschema(
    spec: dict[str, Any], args: dict[str, Any]
) -> None:
    schema, validate = compile_spec(spec)
    expected = judge(schema, args)
    event("valid" if expected else "invalid")
    found = validate(args)
    assert (found == []) is expected, (schema, args, found)
    raw = compile_raw_validator(schema)(args)  # the DSL's nodes, read from the schema
    assert (raw == []) is expected, (schema, args, raw)
    assert raw == found
    checked = compile_raw_validator(schema, use_dsl=False)(args)  # jsonschema's pass
    assert (checked == []) is expected, (schema, args, checked)
    assert _paths(found) == _paths(checked), (schema, args, found, checked)


def _accepts(definition: ToolDefinition, args: dict[str, Any]) -> bool:
    try:
        definition.execute(args, None)  # type: ignore[arg-type]
    except ToolArgsError:
        return False
    return True


# --- Struct parameters (what @tool builds from a signature) -----------------------------------


@st.composite
def field_types(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["int", "float", "str", "list"]))
    meta: dict[str, Any] = {}
    if kind in ("int", "float"):
        bound = st.integers(-4, 4) if kind == "int" else NUMBERS
        for pair in (("ge", "gt"), ("le", "lt")):
            if draw(st.booleans()):
                meta[draw(st.sampled_from(pair))] = draw(bound)
        if draw(st.booleans()):
            choices = [1, 2, 3] if kind == "int" else [1, 2, 0.5, 0.25]
            meta["multiple_of"] = draw(st.sampled_from(choices))
        base: Any = int if kind == "int" else float
    elif kind == "str":
        for keyword in ("min_length", "max_length"):
            if draw(st.booleans()):
                meta[keyword] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            meta["pattern"] = draw(PATTERNS)
        if draw(st.booleans()):
            meta["extra_json_schema"] = {"format": draw(FORMATS)}
        base = str
    else:
        for keyword in ("min_length", "max_length"):
            if draw(st.booleans()):
                meta[keyword] = draw(st.integers(0, 3))
        base = list[int]
    annotated = Annotated[base, msgspec.Meta(**meta)] if meta else base
    return annotated | None if draw(st.booleans()) else annotated


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fields=st.dictionaries(names, field_types(), max_size=3),
    required=st.sets(names),
    args=st.dictionaries(names, values, max_size=4),
)
def test_struct_parameters_agree_with_jsonschema(
    fields: dict[str, Any], required: set[str], args: dict[str, Any]
) -> None:
    layout = [(n, t) if n in required else (n, t, None) for n, t in sorted(fields.items())]
    layout.sort(key=len)
    cls = msgspec.defstruct("Args", layout, frozen=True, kw_only=True)
    definition = define_tool(name="t", description="d", parameters=cls, execute=lambda a, c: "ok")
    expected = judge(definition.parameters, args)
    event("valid" if expected else "invalid")
    assert _accepts(definition, args) is expected, (definition.parameters, args)


def test_tool_signatures_with_meta_and_pydantic_field_constraints_agree() -> None:
    @tool
    def plain(
        count: Annotated[int, msgspec.Meta(ge=1, le=10)],
        name: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")] = "x",
    ) -> str:
        return "ok"

    @tool
    def with_pydantic(
        count: Annotated[int, pydantic.Field(ge=1, le=10)],
        name: Annotated[str, pydantic.Field(max_length=3)] = "x",
    ) -> str:
        return "ok"

    samples: list[dict[str, Any]] = [
        {"count": 1},
        {"count": 0},
        {"count": 11},
        {"count": 5, "name": "abc"},
        {"count": 5, "name": "abcd"},
        {"count": 5, "name": "A"},
        {"name": "a"},
    ]
    for definition in (plain, with_pydantic):
        assert definition.parameters["properties"]["count"]["minimum"] == 1
        for args in samples:
            expected = judge(definition.parameters, args)
            assert _accepts(definition, args) is expected, (definition.name, args)


# --- raw schemas beyond the DSL: jsonschema's verdicts, in the DSL's words ----------------------


@st.composite
def raw_props(draw: st.DrawFn, depth: int = 1) -> dict[str, Any]:
    """A property using keywords the DSL has not (so jsonschema checks it)."""
    choice = draw(st.integers(0, 5 if depth else 3))
    if choice == 0:
        return {"const": draw(scalars)}
    if choice == 1:
        kinds = draw(
            st.lists(
                st.sampled_from(["string", "integer", "null", "array"]),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        return {"type": kinds}
    if choice == 2:
        return {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 0}]}
    if choice == 3:
        return {"not": {"type": draw(st.sampled_from(["string", "number", "null"]))}}
    if choice == 4:
        return {"type": "array", "prefixItems": [draw(raw_props(depth - 1))], "items": False}
    return {
        "type": "object",
        "properties": {"a": draw(raw_props(depth - 1))},
        "additionalProperties": False,
        "required": draw(st.sampled_from([[], ["a"]])),
    }


@settings(max_examples=300, deadline=None)
@given(
    props=st.dictionaries(names, raw_props(), max_size=3),
    closed=st.booleans(),
    args=st.dictionaries(names, values, max_size=4),
)
def test_raw_schemas_beyond_the_dsl_agree_and_every_violation_names_its_path(
    props: dict[str, Any], closed: bool, args: dict[str, Any]
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if closed:
        schema["additionalProperties"] = False
    expected = judge(schema, args)
    event("valid" if expected else "invalid")
    found = compile_raw_validator(schema)(args)
    assert (found == []) is expected, (schema, args, found)
    for violation in found:
        assert violation.startswith(('"', 'missing required property "')), violation
