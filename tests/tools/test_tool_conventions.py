"""@tool takes the conventions pydantic codebases use, and refuses what it does not take.

Unknown arguments refuse the call (the schema is closed) unless the tool opts out;
``typing_extensions.TypedDict`` parameters work; docstrings with no summary line are
read in every supported style; a signature has one schema whichever path reads it.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import typing
import uuid
from typing import Annotated, Any, Literal

import jsonschema
import msgspec
import pydantic
import pytest
import typing_extensions
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from support import text
from toolnursery import (
    Depends,
    RegistrationError,
    SchemaProp,
    ToolArgsError,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    run_tool_calls,
    tool,
)
from toolnursery._core._json import snapshot


def registry(*tools: ToolDefinition) -> ToolRegistry:
    reg = ToolRegistry()
    for definition in tools:
        reg.register(definition)
    return reg


def violations(definition: ToolDefinition, args: Any) -> tuple[str, ...]:
    with pytest.raises(ToolArgsError) as info:
        definition.execute(snapshot(args), None)  # type: ignore[arg-type]
    return info.value.violations


# -- unknown arguments ----------------------------------------------------------------------

RAN: list[str] = []


@tool
def book(ctx: ToolRunContext, city: str, nights: int = 1, inbox: str = Depends("inbox")) -> str:
    """Book a hotel."""
    RAN.append(city)
    return f"{city} x{nights} for {inbox}"


@tool
def book_pydantic(city: str, nights: Annotated[int, pydantic.Field(ge=1)] = 1) -> str:
    """Book a hotel (pydantic checks it)."""
    RAN.append(city)
    return f"{city} x{nights}"


@tool
def ping() -> str:
    """Ping."""
    RAN.append("ping")
    return "pong"


@tool(ignore_unknown_arguments=True)
def lenient(city: str) -> str:
    """Takes extras and drops them."""
    return city


@pytest.mark.parametrize("definition", [book, book_pydantic], ids=["msgspec", "pydantic"])
def test_an_unknown_argument_refuses_the_call_naming_the_known_ones(
    definition: ToolDefinition,
) -> None:
    RAN.clear()
    assert definition.parameters["additionalProperties"] is False
    assert violations(definition, {"city": "Oslo", "nigths": 2, "x": 1}) == (
        'unknown argument "nigths" (the tool takes: city, nights)',
        'unknown argument "x" (the tool takes: city, nights)',
    )
    assert RAN == []


def test_a_tool_without_parameters_refuses_any_argument() -> None:
    assert ping.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert violations(ping, {"x": 1}) == ('unknown argument "x" (the tool takes no arguments)',)


async def test_the_model_cannot_fill_a_context_or_injected_parameter() -> None:
    RAN.clear()
    calls = [
        ToolCall("a", "book", {"city": "Oslo", "inbox": "attacker"}),
        ToolCall("b", "book", {"city": "Oslo", "ctx": {"deps": "x"}}),
        ToolCall("c", "book", {"city": "Oslo"}),
    ]
    a, b, c = await run_tool_calls(registry(book), calls, deps={"inbox": "mine"})
    assert a.is_error
    assert text(a) == (
        'Error: invalid arguments: argument "inbox" is supplied by the host, not the model'
    )
    assert b.is_error
    assert text(b) == (
        'Error: invalid arguments: argument "ctx" is supplied by the host, not the model'
    )
    assert text(c) == "Oslo x1 for mine"
    assert RAN == ["Oslo"]


@tool(ignore_unknown_arguments=True)
def lenient_send(to: str, inbox: str = Depends("inbox")) -> str:
    """Takes extras, but never the injected inbox."""
    return f"{to} via {inbox}"


async def test_opting_out_accepts_unknown_arguments_and_drops_them() -> None:
    assert "additionalProperties" not in lenient.parameters
    [result] = await run_tool_calls(
        registry(lenient), [ToolCall("a", "lenient", {"city": "Oslo", "extra": 1})]
    )
    assert text(result) == "Oslo"
    dropped, refused = await run_tool_calls(
        registry(lenient_send),
        [
            ToolCall("a", "lenient_send", {"to": "bo", "extra": 1}),
            ToolCall("b", "lenient_send", {"to": "bo", "inbox": "attacker", "x": 1}),
        ],
        deps={"inbox": "mine"},
    )
    assert text(dropped) == "bo via mine"
    assert text(refused) == (
        'Error: invalid arguments: argument "inbox" is supplied by the host, not the model'
    )
    with pytest.raises(RegistrationError, match="ignore_unknown_arguments must be a bool"):
        tool(ignore_unknown_arguments=1)(lambda city: city)  # type: ignore[call-overload]


def test_a_key_with_quotes_is_named_as_json() -> None:
    assert violations(ping, {'a"b': 1}) == (
        'unknown argument "a\\"b" (the tool takes no arguments)',
    )


def test_arguments_that_are_not_an_object_keep_their_violation() -> None:
    assert violations(book, [1]) == ('"arguments" must be an object',)
    assert violations(book_pydantic, "x") == ('"arguments" must be an object',)


@pytest.mark.spec("B021")
def test_dsl_tools_still_allow_extra_keys() -> None:
    spec: dict[str, SchemaProp] = {"city": {"type": "string", "required": True}}
    dsl = define_tool(name="dsl", description="d", parameters=spec, execute=lambda a, c: a)
    assert "additionalProperties" not in dsl.parameters
    assert dsl.execute(snapshot({"city": "Oslo", "extra": 1}), None) == {  # type: ignore[arg-type]
        "city": "Oslo",
        "extra": 1,
    }


def test_strict_schemas_stay_closed_and_refuse_unknowns() -> None:
    @tool(strict=True)
    def strict_book(city: str, nights: int | None = None) -> str:
        """Strict."""
        return city

    assert strict_book.parameters["additionalProperties"] is False
    assert violations(strict_book, {"city": "Oslo", "nights": None, "x": 1}) == (
        'unknown argument "x" (the tool takes: city, nights)',
    )


# -- typing_extensions.TypedDict ---------------------------------------------------------------


class Room(typing_extensions.TypedDict):
    """A room.

    Attributes:
        beds: how many beds.
    """

    beds: int
    view: typing_extensions.NotRequired[str]


@tool
def reserve(room: Room) -> str:
    """Reserve a room."""
    assert type(room) is dict
    return json.dumps(room, sort_keys=True)


@tool
def reserve_pydantic(room: Room, n: Annotated[int, pydantic.Field(ge=1)] = 1) -> str:
    """Reserve rooms."""
    assert type(room) is dict
    return json.dumps(room, sort_keys=True)


@pytest.mark.parametrize("definition", [reserve, reserve_pydantic], ids=["msgspec", "pydantic"])
async def test_typing_extensions_typeddict_parameters_work(definition: ToolDefinition) -> None:
    assert definition.parameters["properties"]["room"] == {
        "type": "object",
        "properties": {
            "beds": {"type": "integer", "description": "how many beds."},
            "view": {"type": "string"},
        },
        "required": ["beds"],
    }
    ok, bad = await run_tool_calls(
        registry(definition),
        [
            ToolCall("a", definition.name, {"room": {"beds": 2}}),
            ToolCall("b", definition.name, {"room": {"view": "sea"}}),
        ],
    )
    assert text(ok) == '{"beds": 2}'
    assert bad.is_error
    assert "beds" in text(bad)


# -- docstrings with no summary line ---------------------------------------------------------


def google(foo: int, bar: str = "b") -> str:
    """
    Args:
        foo: the foo.
        bar: the bar,
            on two lines.
    """
    return ""


def numpy(foo: int, bar: str = "b") -> str:
    """
    Parameters
    ----------
    foo : int
        the foo.
    bar : str
        the bar,
        on two lines.
    """
    return ""


def sphinx(foo: int, bar: str = "b") -> str:
    """
    :param foo: the foo.
    :param bar: the bar,
        on two lines.
    """
    return ""


def epydoc(foo: int, bar: str = "b") -> str:
    """
    @param foo: the foo.
    @param bar: the bar,
        on two lines.
    """
    return ""


@pytest.mark.parametrize("fn", [google, numpy, sphinx, epydoc], ids=lambda f: f.__name__)
def test_a_docstring_without_a_summary_line_is_read_in_every_style(fn: Any) -> None:
    definition = tool(fn)
    assert definition.description == ""
    props = definition.parameters["properties"]
    assert props["foo"]["description"] == "the foo."
    assert props["bar"]["description"] == "the bar,\non two lines."


def test_epydoc_with_a_summary_keeps_the_summary_only() -> None:
    def fn(foo: int) -> str:
        """Do it.

        @param foo: the foo.
        """
        return ""

    definition = tool(fn)
    assert definition.description == "Do it."
    assert definition.parameters["properties"]["foo"]["description"] == "the foo."


# -- one schema per signature ------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Spot(typing.TypedDict):
    x: int


@dataclasses.dataclass
class Window:
    start: int
    end: int = 10


class Inner(pydantic.BaseModel):
    a: int
    b: str = "x"


ANNOTATIONS: list[tuple[str, Any, Any]] = [
    ("int", int, inspect_empty := object()),
    ("optional float", float | None, None),
    ("constrained optional", Annotated[int, msgspec.Meta(ge=1)] | None, None),
    ("described", Annotated[str, "the text"], "a"),
    ("pattern", Annotated[str, msgspec.Meta(min_length=1, pattern="^a")], "a"),
    ("list default", list[int], []),
    ("dict", dict[str, int], inspect_empty),
    ("enum", Color, Color.RED),
    ("optional enum", Color | None, None),
    ("literal", Literal["x", "y"], "x"),
    ("optional literal", Literal["x"] | None, None),
    ("str or int", str | int, 1),
    ("datetime", datetime.datetime, inspect_empty),
    ("uuid", uuid.UUID, inspect_empty),
    ("typeddict", Spot, inspect_empty),
    ("optional typeddict", Spot | None, None),
    ("dataclass", Window, inspect_empty),
    ("any", Any, None),
]


def _function(annotation: Any, default: Any, pydantic_too: bool) -> Any:
    namespace: dict[str, Any] = {}
    extra = ", z: Annotated[int, pydantic.Field(ge=0)] = 0" if pydantic_too else ""
    tail = "" if default is inspect_empty else " = DEFAULT"
    exec(  # a signature built for the test
        f"def probe(value: ANNOTATION{tail}{extra}) -> str:\n    return ''",
        {
            "ANNOTATION": annotation,
            "DEFAULT": default,
            "Annotated": Annotated,
            "pydantic": pydantic,
        },
        namespace,
    )
    return namespace["probe"]


@pytest.mark.parametrize(
    ("annotation", "default"),
    [(a, d) for _, a, d in ANNOTATIONS],
    ids=[name for name, _, _ in ANNOTATIONS],
)
def test_a_signature_has_one_schema_whichever_path_reads_it(annotation: Any, default: Any) -> None:
    plain = tool(_function(annotation, default, pydantic_too=False)).parameters
    checked = tool(_function(annotation, default, pydantic_too=True)).parameters
    assert "title" not in json.dumps(checked)
    assert "$defs" not in checked
    assert checked["properties"].pop("z") == {"default": 0, "minimum": 0, "type": "integer"}
    assert checked == plain
    jsonschema.Draft202012Validator.check_schema(checked)


def test_a_pydantic_model_parameter_is_inlined_without_titles() -> None:
    @tool
    def take(inner: Inner, maybe: Inner | None = None) -> str:
        """Take."""
        return ""

    inlined = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"default": "x", "type": "string"}},
        "required": ["a"],
    }
    assert take.parameters["properties"]["inner"] == inlined
    assert take.parameters["properties"]["maybe"] == {
        **inlined,
        "type": ["object", "null"],
        "default": None,
    }


class Tree(pydantic.BaseModel):
    children: list[Tree] = []


def test_a_recursive_model_keeps_its_definitions() -> None:
    @tool
    def grow(tree: Tree) -> str:
        """Grow."""
        return ""

    assert grow.parameters["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in grow.parameters["$defs"]
    jsonschema.Draft202012Validator.check_schema(grow.parameters)


# Any annotation built from these reads the same on both paths.
_LEAVES = st.sampled_from(
    [
        int,
        str,
        float,
        bool,
        datetime.date,
        uuid.UUID,
        Color,
        Spot,
        Window,
        Literal["x", "y"],
        str | int,
        Annotated[int, msgspec.Meta(ge=1)],
        Annotated[str, msgspec.Meta(max_length=3)],
    ]
)


def _grow(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        inner.map(lambda a: list[a]),  # type: ignore[valid-type]
        inner.map(lambda a: dict[str, a]),  # type: ignore[valid-type]
        inner.map(lambda a: a | None),
        inner.map(lambda a: Annotated[a, "described"]),
    )


@settings(max_examples=100, deadline=None)
@given(annotation=st.recursive(_LEAVES, _grow, max_leaves=3))
def test_property_any_annotation_has_one_schema_on_both_paths(annotation: Any) -> None:
    try:
        plain = tool(_function(annotation, inspect_empty, pydantic_too=False)).parameters
    except RegistrationError:  # msgspec's path refuses some nestings (a described union)
        assume(False)
    checked = tool(_function(annotation, inspect_empty, pydantic_too=True)).parameters
    checked["properties"].pop("z")
    assert checked == plain, annotation
