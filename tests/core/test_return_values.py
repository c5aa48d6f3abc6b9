"""A body may return any JSON-encodable value: it becomes one deterministic JSON text block.

Text, content blocks and ``ToolReturn`` stay content; a list is content only when every
item is a block. ``result.text`` reads a result's text, typed for ``mypy --strict``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    CancelSignal,
    ImageContent,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolResult,
    ToolReturn,
    ToolRunContext,
    output_schema,
    tool,
)
from toolnursery._core._outcomes import encode_value, normalize


class Airport(msgspec.Struct, frozen=True):
    code: str
    name: str


@dataclasses.dataclass
class Flight:
    number: str
    seats: int
    origin: Airport


class Cabin(enum.Enum):
    ECONOMY = "economy"


async def run(value: Any, output: Any = None) -> ToolExecutionResult:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return value

    definition = ToolDefinition("probe", "p", {"type": "object"}, body)
    if output is not None:
        from toolnursery import attach_output

        definition = attach_output(definition, output)
    registry = ToolRegistry()
    registry.register(definition)
    return await registry.execute(ToolExecutionInput("c1", "probe", {}, CancelSignal()))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": 1, "a": [True, None]}, '{"a":[true,null],"b":1}'),
        (["LAX", "JFK"], '["LAX","JFK"]'),
        (("LAX", 1), '["LAX",1]'),
        (42, "42"),
        (-1.5, "-1.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (2**80, "1208925819614629174706176"),
        ({}, "{}"),
        ({2: "two", 1: "one"}, '{"1":"one","2":"two"}'),
        (Airport("LAX", "Los Angeles"), '{"code":"LAX","name":"Los Angeles"}'),
        (
            Flight("UA1", 3, Airport("JFK", "Kennedy")),
            '{"number":"UA1","seats":3,"origin":{"code":"JFK","name":"Kennedy"}}',
        ),
        ([Airport("SFO", "San Francisco")], '[{"code":"SFO","name":"San Francisco"}]'),
        (datetime.date(2026, 12, 1), '"2026-12-01"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (Decimal("1.10"), '"1.10"'),
        (Cabin.ECONOMY, '"economy"'),
        ({"z", "a"}, '["a","z"]'),
        ({"nested": {"y": 1, "x": {"b": 2, "a": 1}}}, '{"nested":{"x":{"a":1,"b":2},"y":1}}'),
    ],
)
async def test_a_json_value_becomes_one_deterministic_text_block(value: Any, text: str) -> None:
    result = await run(value)
    assert result.is_error is False
    assert result.content == (TextContent(text),)
    assert result.structured_content is None  # kept only for a declared output


async def test_a_list_of_blocks_stays_content_and_a_mixed_list_is_a_value() -> None:
    blocks = [TextContent("a"), ImageContent("aGk=", "image/png")]
    assert (await run(blocks)).content == tuple(blocks)
    assert (await run(tuple(blocks))).content == tuple(blocks)
    assert (await run([])).content == ()
    mixed = await run([TextContent("a"), "b"])
    assert mixed.content == (TextContent('[{"type":"text","text":"a"},"b"]'),)
    assert (await run("plain")).content == (TextContent("plain"),)
    returned = await run(ToolReturn([TextContent("x")], meta={"k": 1}))
    assert returned.content == (TextContent("x"),)
    assert returned.meta == {"k": 1}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (object(), "Encoding objects of type object is unsupported"),
        ({"f": len}, "Encoding objects of type builtin_function_or_method is unsupported"),
        (math.nan, "value is not a finite JSON number: nan"),
        ([1, math.inf], "value[1] is not a finite JSON number: inf"),
        (-0.0, "value is not a finite JSON number: -0.0"),
    ],
)
async def test_a_value_that_is_not_json_keeps_the_clear_error(value: Any, why: str) -> None:
    result = await run(value)
    assert result.is_error
    assert result.error is None
    kind = type(value).__name__
    assert result.text == (
        f'Error: tool "probe" returned {kind}, which is not JSON-encodable ({why}); '
        "a tool body returns a str, content blocks, a ToolReturn or a JSON-encodable value"
    )


async def test_a_declared_output_validates_the_value_and_keeps_it() -> None:
    @tool(
        output={
            "type": "object",
            "properties": {"codes": {"type": "array", "items": {"type": "string"}}},
        }
    )
    def airports() -> dict[str, list[str]]:
        return {"codes": ["LAX", "JFK"]}

    assert output_schema(airports) is not None
    registry = ToolRegistry()
    registry.register(airports)
    result = await registry.execute(ToolExecutionInput("c", "airports", {}, CancelSignal()))
    assert result.structured_content == {"codes": ("LAX", "JFK")}
    assert json.loads(result.text) == {"codes": ["LAX", "JFK"]}


async def test_tool_bodies_returning_values_work_through_the_decorator() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    registry = ToolRegistry()
    registry.register(add)
    result = await registry.execute(
        ToolExecutionInput("c", "add", {"a": 2, "b": 3}, CancelSignal())
    )
    assert result.text == "5"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f == 0 and math.copysign(1, f) < 0)
    )
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(value=json_values, seed=st.randoms())
def test_property_encoding_round_trips_and_ignores_key_order(value: Any, seed: Any) -> None:
    text = encode_value(value)
    assert json.loads(text) == value
    shuffled = _shuffle(value, seed)
    assert encode_value(shuffled) == text
    result = normalize(value, "t")
    if not isinstance(value, str) and value != []:  # text is text; [] is no blocks
        assert result.content == (TextContent(text),)


def _shuffle(value: Any, rng: Any) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffle(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffle(v, rng) for v in value]
    return value


# --- the typed text accessor -------------------------------------------------------------------


def test_text_concatenates_the_text_blocks_and_skips_others() -> None:
    result = ToolExecutionResult(
        (TextContent("a"), ImageContent("aGk=", "image/png"), TextContent("b")), False
    )
    assert result.text == "ab"
    assert ToolExecutionResult((), False).text == ""
    assert ToolResult((TextContent("x"), TextContent("y")), False).text == "xy"
    assert "text" not in msgspec.json.decode(msgspec.json.encode(result))


def test_text_passes_mypy_strict(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from typing import assert_type\n"
        "from toolnursery import ToolExecutionResult, ToolResult\n"
        "def read(result: ToolExecutionResult, seen: ToolResult) -> str:\n"
        "    assert_type(result.text, str)\n"
        "    return result.text + seen.text\n"
    )
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", str(snippet)]
    )
    assert status == 0, out + err
