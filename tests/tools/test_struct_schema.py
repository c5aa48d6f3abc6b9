"""@tool and Struct parameters from real code: every supported annotation, and refusals.

The judge is ``jsonschema``: on generated arguments (valid and not), the advertised
schema accepts exactly what the tool's validation accepts. Refused annotations name
the parameter. Docstrings, pydantic parameters and strict schemas have their own files
(``test_docstrings.py``, ``test_pydantic_params.py``, ``test_strict.py``).
"""

from __future__ import annotations

import datetime
import enum
import sys
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

import annotated_types
import jsonschema
import msgspec
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import (
    RegistrationError,
    ToolArgsError,
    ToolDefinition,
    define_tool,
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


@tool
def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    when: datetime.datetime,
    day: datetime.date,
    at: datetime.time,
    span: datetime.timedelta,
    ref: uuid.UUID,
    price: Decimal,
    code: str | int | None,
    number: int | float,
    mode: Literal["zeta", "alpha", 3],
    cabin: Cabin,
    tags: list[int],
    names: tuple[str, ...],
    unique: set[str],
    table: dict[str, int],
    leg: Leg,
    back: Leg | None,
    anything: Any,
    bounded: Annotated[int, msgspec.Meta(ge=1, le=10)],
    short: Annotated[str, msgspec.Meta(min_length=1, max_length=3, pattern="^[a-z]")],
    maybe_when: datetime.date | None = None,
) -> str:
    """Take every supported annotation.

    Args:
        text: some text.
        leg: the outbound leg.
    """
    return "ok"


FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: str(f) != "-0.0")


def _valid(kind: str) -> st.SearchStrategy[Any]:
    dates = st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1))
    naive = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1))
    leg = st.fixed_dictionaries({"origin": st.text(max_size=3)}, optional={"stops": st.integers()})
    scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=3)
    return {
        "text": st.text(max_size=4),
        "count": st.integers(),
        "ratio": FLOATS | st.integers(),
        "flag": st.booleans(),
        "when": naive.map(lambda d: d.isoformat() + "Z"),
        "day": dates.map(datetime.date.isoformat),
        "at": st.times().map(lambda t: t.isoformat()),
        "span": st.integers(0, 10**6).map(lambda s: f"PT{s}S"),
        "ref": st.uuids().map(str),
        "price": st.decimals(allow_nan=False, allow_infinity=False, places=2).map(str),
        "code": st.none() | st.text(max_size=3) | st.integers(),
        "number": st.integers() | FLOATS,
        "mode": st.sampled_from(["zeta", "alpha", 3]),
        "cabin": st.sampled_from(["economy", "business"]),
        "tags": st.lists(st.integers(), max_size=3),
        "names": st.lists(st.text(max_size=2), max_size=3),
        "unique": st.lists(st.text(max_size=2), max_size=3),
        "table": st.dictionaries(st.text(max_size=2), st.integers(), max_size=3),
        "leg": leg,
        "back": st.none() | leg,
        "anything": st.recursive(scalars, lambda i: st.lists(i, max_size=2), max_leaves=4),
        "bounded": st.integers(1, 10),
        "short": st.from_regex(r"\A[a-z][a-z0-9]{0,2}\Z"),
        "maybe_when": st.none() | dates.map(datetime.date.isoformat),
    }[kind]


#: values of the wrong shape for every parameter (never a wrong-format string: the
#: judge does not check formats, msgspec does)
WRONG = st.sampled_from(
    [None, True, 2.5, -3, "x", "", [], [1, "a"], {}, {"origin": 1}, {"origin": "a", "z": 1}]
)


FORMATTED = {"when", "day", "at", "span", "ref", "price", "maybe_when"}
VALID = {name: _valid(name) for name in everything.parameters["properties"]}


@st.composite
def arguments(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, valid in VALID.items():
        roll = draw(st.integers(0, 59))  # mostly valid: one bad field is the usual case
        if roll == 0:
            continue  # absent
        wrong = WRONG.filter(lambda v: not isinstance(v, str)) if name in FORMATTED else WRONG
        out[name] = draw(wrong if roll == 1 else valid)
    return out


def _accepted(definition: ToolDefinition, args: dict[str, Any]) -> bool:
    try:
        definition.execute(snapshot(args), None)  # type: ignore[arg-type]
    except ToolArgsError:
        return False
    return True


def test_every_supported_annotation_has_its_schema() -> None:
    props = everything.parameters["properties"]
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["at"] == {"type": "string", "format": "time"}
    assert props["span"] == {"type": "string", "format": "duration"}
    assert props["ref"] == {"type": "string", "format": "uuid"}
    assert props["price"] == {"type": "string", "format": "decimal"}
    assert props["code"] == {"type": ["string", "integer", "null"]}
    assert props["number"] == {"type": ["number"]}
    assert props["mode"] == {"enum": ["zeta", "alpha", 3]}  # declaration order
    assert props["cabin"] == {"type": "string", "enum": ["economy", "business"]}
    assert props["bounded"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert props["short"] == {"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^[a-z]"}
    assert props["text"] == {"type": "string", "description": "some text."}
    assert props["leg"]["description"] == "the outbound leg."
    assert props["leg"]["properties"]["origin"] == {
        "type": "string",
        "description": "where it starts.",
    }
    assert props["back"]["type"] == ["object", "null"]
    assert props["anything"] == {}
    assert props["maybe_when"] == {"type": ["string", "null"], "format": "date", "default": None}
    assert everything.parameters["required"] == [n for n in props if n != "maybe_when"]
    assert everything.description == "Take every supported annotation."
    JUDGE.check_schema(everything.parameters)


@given(args=arguments())
@settings(max_examples=400)
def test_property_the_judge_agrees_with_tool_validation(args: dict[str, Any]) -> None:
    schema = everything.parameters
    assert _accepted(everything, args) == JUDGE(schema).is_valid(args)


def test_valid_arguments_arrive_as_the_annotated_types() -> None:
    seen: dict[str, Any] = {}

    @tool
    def typed(when: datetime.datetime, ref: uuid.UUID, price: Decimal, code: str | int) -> str:
        seen.update(when=when, ref=ref, price=price, code=code)
        return "ok"

    typed.execute(
        snapshot(
            {
                "when": "2026-12-01T10:00:00Z",
                "ref": str(uuid.UUID(int=7)),
                "price": "1.10",
                "code": 4,
            }
        ),
        None,  # type: ignore[arg-type]
    )
    assert seen == {
        "when": datetime.datetime(2026, 12, 1, 10, tzinfo=datetime.UTC),
        "ref": uuid.UUID(int=7),
        "price": Decimal("1.10"),
        "code": 4,
    }
    with pytest.raises(ToolArgsError) as info:
        typed.execute(snapshot({"when": "soon", "ref": "x", "price": "1", "code": 1}), None)  # type: ignore[arg-type]
    assert info.value.violations == (
        '"when" must be a valid "date-time"',
        '"ref" must be a valid "uuid"',
    )
    with pytest.raises(ToolArgsError) as info:
        typed.execute(snapshot({"when": "", "ref": "", "price": "", "code": 1.5}), None)  # type: ignore[arg-type]
    assert info.value.violations == (
        '"when" must be a valid "date-time"',
        '"ref" must be a valid "uuid"',
        '"price" must be a valid "decimal"',
        '"code" must be a string or an integer',
    )


class Mutable(msgspec.Struct):
    x: int


class Loop(msgspec.Struct, frozen=True):
    again: list[Loop] = []


def _refusal(annotation: Any) -> str:
    def f(value: Any) -> str:
        return ""

    f.__annotations__ = {"value": annotation, "return": str}
    with pytest.raises(RegistrationError) as info:
        tool(f)
    return str(info.value)


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (bytes, '@tool f: parameter "value" has an unsupported type: bytes'),
        (int | list[int], '@tool f: parameter "value" has an unsupported type: int | list[int]'),
        (
            str | datetime.date,
            '@tool f: parameter "value" has an unsupported type: str | datetime.date',
        ),
        (dict[int, str], '@tool f: parameter "value" has an unsupported type: dict[int, str]'),
        (
            Literal["a", True],
            "@tool f: parameter \"value\" has an unsupported type: Literal['a', True]",
        ),
        (Mutable, "@tool f: parameters Struct Mutable must be declared with frozen=True"),
        (Loop, "@tool f: parameters Struct Loop is recursive; it cannot be inlined"),
        (
            Annotated[int, object],
            "@tool f: parameter \"value\": Annotated metadata <class 'object'> is not enforced "
            "here; use msgspec.Meta (or pydantic parameters, with pydantic installed), "
            "a description string, or Depends(...)",
        ),
    ],
)
def test_each_refused_annotation_names_the_parameter(annotation: Any, message: str) -> None:
    assert _refusal(annotation) == message


def test_foreign_constraints_are_refused_without_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    """annotated_types metadata is never silently dropped: pydantic checks it, or it is refused."""
    monkeypatch.delitem(sys.modules, "pydantic")
    assert _refusal(Annotated[int, annotated_types.Gt(1)]) == (
        '@tool f: parameter "value": Annotated metadata Gt(gt=1) is not enforced here; '
        "use msgspec.Meta (or pydantic parameters, with pydantic installed), "
        "a description string, or Depends(...)"
    )


def test_a_struct_with_pydantic_metadata_is_refused_by_field() -> None:
    class Args(msgspec.Struct, frozen=True):
        n: Annotated[int, pydantic.Field(ge=1)]

    with pytest.raises(RegistrationError, match=r'define_tool\(t\): field "n": Annotated metadata'):
        define_tool(name="t", description="d", parameters=Args, execute=lambda a, c: "")


def test_constraints_inside_unions_and_boolean_literals() -> None:
    @tool
    def f(
        a: Annotated[int, msgspec.Meta(ge=1)] | None = None,
        b: Annotated[str, msgspec.Meta(min_length=2)] | int = 0,
        c: Literal[True] = True,
    ) -> str:
        return ""

    props = f.parameters["properties"]
    assert props["a"] == {"type": ["integer", "null"], "default": None, "minimum": 1}
    assert props["b"] == {
        "anyOf": [{"type": "string", "minLength": 2}, {"type": "integer"}],
        "default": 0,
    }
    assert props["c"] == {"type": "boolean", "enum": [True], "default": True}
    for bad, violation in [
        ({"a": 0}, '"a" must be >= 1'),
        ({"b": "x"}, '"b" must be at least 2 characters long'),
        ({"b": 1.5}, '"b" must be a string or an integer'),
        ({"c": False}, '"c" must be one of [true]'),
    ]:
        with pytest.raises(ToolArgsError) as info:
            f.execute(snapshot(bad), None)  # type: ignore[arg-type]
        assert info.value.violations == (violation,)
        assert not JUDGE(f.parameters).is_valid(bad)
