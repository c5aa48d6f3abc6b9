"""pydantic parameters: a ``BaseModel`` or ``Field`` metadata, checked by pydantic.

The judge is ``jsonschema``: on generated arguments, the advertised schema accepts
exactly what the tool's validation accepts.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import jsonschema
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import RegistrationError, ToolArgsError, ToolDefinition, define_tool, tool
from toolnursery._core._json import snapshot

JUDGE = jsonschema.Draft202012Validator


def _accepted(definition: ToolDefinition, args: dict[str, Any]) -> bool:
    try:
        definition.execute(snapshot(args), None)  # type: ignore[arg-type]
    except ToolArgsError:
        return False
    return True


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


@tool
def move(
    to: Point,
    speed: Annotated[int, pydantic.Field(ge=1, le=100, description="km/h")] = 5,
    label: str = pydantic.Field(default="", max_length=3),
) -> str:
    """Move to a point.

    Args:
        to: the target.
    """
    return f"{to.x},{to.y} at {speed} {label}"


def test_pydantic_model_and_field_metadata_reach_the_schema() -> None:
    schema = move.parameters
    assert schema["properties"]["to"] == {  # inlined and untitled, as on msgspec's path
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
        "required": ["x"],
        "description": "the target.",
    }
    assert "title" not in json.dumps(schema)
    speed = schema["properties"]["speed"]
    assert (speed["minimum"], speed["maximum"], speed["description"]) == (1, 100, "km/h")
    assert schema["properties"]["label"]["maxLength"] == 3
    assert schema["required"] == ["to"]
    assert move.description == "Move to a point."
    JUDGE.check_schema(schema)


def test_pydantic_validates_and_the_body_gets_the_model() -> None:
    assert move.execute(snapshot({"to": {"x": 1}}), None) == "1,0 at 5 "  # type: ignore[arg-type]
    with pytest.raises(ToolArgsError) as info:
        move.execute(snapshot({"to": {"x": "1"}, "speed": 0}), None)  # type: ignore[arg-type]
    assert info.value.violations == (
        '"to.x" is invalid: Input should be a valid integer',
        '"speed" is invalid: Input should be greater than or equal to 1',
    )
    with pytest.raises(ToolArgsError) as info:
        move.execute(snapshot({}), None)  # type: ignore[arg-type]
    assert info.value.violations == ('missing required property "to"',)
    with pytest.raises(ToolArgsError) as info:
        move.execute("not json", None)  # type: ignore[arg-type]
    assert info.value.violations == ('"arguments" must be an object',)


def test_define_tool_takes_a_pydantic_model() -> None:
    definition = define_tool(
        name="point", description="d", parameters=Point, execute=lambda p, c: p.x + p.y
    )
    assert definition.parameters["required"] == ["x"]
    assert definition.execute(snapshot({"x": 2, "y": 3}), None) == 5  # type: ignore[arg-type]


def test_an_unsupported_type_in_a_pydantic_tool_names_the_parameter() -> None:
    def f(to: Point, fn: Any, when: type) -> str:
        return ""

    with pytest.raises(
        RegistrationError, match=r'^@tool f: parameter "when" has an unsupported type'
    ):
        tool(f)


@given(
    to=st.none()
    | st.fixed_dictionaries(
        {"x": st.integers() | st.text(max_size=1)}, optional={"y": st.integers()}
    ),
    speed=st.none() | st.integers(-3, 120) | st.text(max_size=1),
)
def test_property_the_judge_agrees_with_pydantic_validation(to: Any, speed: Any) -> None:
    args = {k: v for k, v in {"to": to, "speed": speed}.items() if v is not None}
    assert _accepted(move, args) == JUDGE(move.parameters).is_valid(args)
