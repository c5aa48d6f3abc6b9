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
import os
import subprocess
import sys
import types
import uuid
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    CancelSignal,
    ImageContent,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolResult,
    ToolReturn,
    ToolRunContext,
    output_schema,
    run_tool_calls,
    tool,
)
from toolnursery._core._jsonform import render_slow
from toolnursery._core._outcomes import encode_value, normalize
from toolnursery.log import JsonlRecorder, ToolResultEvent, read_log


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
    assert (await run([])).content == (TextContent("[]"),)  # data: an empty list
    assert (await run(())).content == (TextContent("[]"),)
    mixed = await run([TextContent("a"), "b"])
    assert mixed.content == (TextContent('[{"type":"text","text":"a"},"b"]'),)
    assert (await run("plain")).content == (TextContent("plain"),)
    returned = await run(ToolReturn([TextContent("x")], meta={"k": 1}))
    assert returned.content == (TextContent("x"),)
    assert returned.meta == {"k": 1}


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
    if not isinstance(value, str):  # text is text
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


# --- every kind of value a Python tool returns (issue 21) --------------------------------------


class Email(pydantic.BaseModel):
    sender: str
    sent: datetime.datetime
    tags: list[str] = []


class CalendarEvent(pydantic.BaseModel):
    title: str
    day: datetime.date
    attendees: list[Email]


@attrs.define
class Balance:
    iban: str
    amount: Decimal


class Kind(enum.IntEnum):
    SMALL = 1


class Point(msgspec.Struct, tag=True, omit_defaults=True, rename="camel"):
    x_pos: int
    label: str = ""


class Pos(msgspec.Struct, array_like=True):
    x: int
    tags: frozenset[str]


class Pair(tuple[int, int]):
    pass


class Label(str):
    pass


class TaggedRow(msgspec.Struct, array_like=True, tag="row"):
    n: int
    marks: set[Any]


@dataclasses.dataclass
class Node:
    child: Any = None


M = __name__
WHEN = datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            Email(sender="a@x.io", sent=WHEN, tags=["b", "a"]),
            '{"sender":"a@x.io","sent":"2026-12-01T09:30:00Z","tags":["b","a"]}',
        ),
        (
            [CalendarEvent(title="t", day=WHEN.date(), attendees=[Email(sender="s", sent=WHEN)])],
            '[{"title":"t","day":"2026-12-01","attendees":'
            '[{"sender":"s","sent":"2026-12-01T09:30:00Z","tags":[]}]}]',
        ),
        (Balance("DE00", Decimal("12.50")), '{"amount":"12.50","iban":"DE00"}'),
        (Kind.SMALL, "1"),
        ({Kind.SMALL: "k"}, '{"1":"k"}'),
        (Point(3), '{"type":"Point","xPos":3}'),
        (Pos(1, frozenset({"b", "a"})), '[1,["a","b"]]'),
        (WHEN, '"2026-12-01T09:30:00Z"'),
        (datetime.datetime(2026, 12, 1, 9, 30), '"2026-12-01T09:30:00"'),
        (datetime.time(9, 30), '"09:30:00"'),
        (datetime.timedelta(minutes=90), '"PT5400S"'),
        (b"hi", '"aGk="'),
        (Path("/srv/a b.txt"), '"/srv/a b.txt"'),
        ({3, 1, 2}, "[1,2,3]"),
        (frozenset({"b", "a"}), '["a","b"]'),
        ({"b", 2, None, 1.5, True, (1, "x")}, '[null,true,1.5,2,"b",[1,"x"]]'),
        (Pair((1, 2)), "[1,2]"),
        ({1.5: "x", 10: "y", 2: "z"}, '{"1.5":"x","10":"y","2":"z"}'),
        ({datetime.date(2026, 1, 2): 1}, '{"2026-01-02":1}'),
        (-0.0, "-0.0"),
        ({Cabin.ECONOMY: 1, Label("b"): Label("c")}, '{"b":"c","economy":1}'),
        (types.MappingProxyType({"b": 1, "a": {2, 1}}), '{"a":[1,2],"b":1}'),
        (TaggedRow(1, {1, "x"}), '["row",1,[1,"x"]]'),
        (
            {"items": [Balance("X", Decimal(1)), {"when": {WHEN}}, (Kind.SMALL, None)]},
            '{"items":[{"amount":"1","iban":"X"},{"when":["2026-12-01T09:30:00Z"]},[1,null]]}',
        ),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else None,
)
async def test_every_kind_of_value_is_rendered(value: Any, text: str) -> None:
    result = await run(value)
    assert result.is_error is False, result.text
    assert result.content == (TextContent(text),)
    assert encode_value(value) == text
    assert render_slow(value) == text  # the walk agrees with the fast path


FSNAME = os.fsdecode(b"caf\xe9")  # a lone surrogate, as os.scandir hands out


@pytest.mark.parametrize("digits", [4_301, 5_001, 20_000])
async def test_an_int_of_any_size_renders_its_digits(digits: int) -> None:
    n = 10 ** (digits - 1) + 7
    value = {"n": n, "m": [-n], n: Flight("X", n, Airport("AMS", "Schiphol"))}
    result = await run(value)
    assert result.is_error is False, result.text
    body = result.text
    with_digits = decimal_text(n)
    assert len(with_digits) == digits
    assert body == (
        f'{{"{with_digits}":{{"number":"X","seats":{with_digits},'
        '"origin":{"code":"AMS","name":"Schiphol"}},'
        f'"m":[-{with_digits}],"n":{with_digits}}}'
    )
    assert render_slow(value) == body


def decimal_text(n: int) -> str:
    return str(Decimal(n))  # no int-to-text digit limit on this path


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"name": FSNAME}, '{"name":"caf\\\\xe9"}'),
        ([FSNAME, ["\ud800"]], '["caf\\\\xe9",["\\\\ud800"]]'),
        ({FSNAME: 1, "b": 2}, '{"b":2,"caf\\\\xe9":1}'),
        ({FSNAME}, '["caf\\\\xe9"]'),
        (
            Email(sender=FSNAME, sent=WHEN),
            '{"sender":"caf\\\\xe9","sent":"2026-12-01T09:30:00Z","tags":[]}',
        ),
        (Path(FSNAME), '"caf\\\\xe9"'),
    ],
)
async def test_lone_surrogates_are_escaped_at_any_depth(value: Any, text: str) -> None:
    result = await run(value)
    assert result.content == (TextContent(text),)


async def test_a_nested_surrogate_reaches_the_model_and_the_log_escaped(tmp_path: Path) -> None:
    def scan(args: Any, ctx: ToolRunContext) -> Any:
        return {"entries": [{"name": FSNAME, "size": 3}]}

    registry = ToolRegistry()
    registry.register(ToolDefinition("scan", "s", {"type": "object"}, scan))
    calls = [ToolCall("c1", "scan", "{}")]
    expected = '{"entries":[{"name":"caf\\\\xe9","size":3}]}'
    (plain,) = await run_tool_calls(registry, calls)
    assert plain.content == (TextContent(expected),)
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        (recorded,) = await run_tool_calls(registry, calls, recorder=recorder)
    assert recorded == plain
    events = [e for e in read_log(log) if isinstance(e, ToolResultEvent)]
    assert [e.result.content for e in events] == [(TextContent(expected),)]


def _error(result: ToolExecutionResult, returned: str, why: str) -> None:
    assert result.is_error
    assert result.error is None
    assert result.text == (
        f'Error: tool "probe" returned a {returned} with no JSON form: {why}; a tool returns '
        "text, content blocks, a ToolReturn, or data JSON can hold (dicts, lists, numbers, "
        "strings, records, enums, dates, sets)"
    )


class Opaque:
    def __repr__(self) -> str:
        return "<the Opaque>"


class Failing(pydantic.BaseModel):
    n: int

    @pydantic.field_serializer("n")
    def _boom(self, n: int) -> int:
        raise ValueError("no serializer today")


@dataclasses.dataclass
class Holder:
    handle: Any


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (
            {"items": [1, 2, Opaque()]},
            f'result["items"][2] is an object of type {M}.Opaque, which has no JSON form',
        ),
        (math.nan, "result is nan, which has no JSON form (JSON numbers are finite)"),
        (
            {"none": None, "score": [math.nan]},
            'result["score"][0] is nan, which has no JSON form (JSON numbers are finite)',
        ),
        (
            [{"score": -math.inf}],
            'result[0]["score"] is -inf, which has no JSON form (JSON numbers are finite)',
        ),
        (
            {"f": len},
            'result["f"] is an object of type builtin_function_or_method, which has no JSON form',
        ),
        (
            Holder(handle=Opaque()),
            f"result.handle is an object of type {M}.Opaque, which has no JSON form",
        ),
        (
            {"m": [Failing(n=1)]},
            f'result["m"][0] is a {M}.Failing whose '
            "model_dump(mode='json') raised PydanticSerializationError: "
            "Error calling function `_boom`: ValueError: no serializer today",
        ),
        ({(1, 2): "pair"}, "result has a key (1, 2) (tuple), which has no JSON form"),
        ({"d": {None: 1}}, 'result["d"] has a key None (NoneType), which has no JSON form'),
        ({math.nan: 1}, "result has a key nan, which has no JSON form"),
        ({True: 1}, "result has a key True (bool), which has no JSON form"),
        (
            {"s": {1, Opaque()}},
            f'result["s"][<the Opaque> ({M}.Opaque) in the set] is an object of type '
            f"{M}.Opaque, which has no JSON form",
        ),
    ],
    ids=[
        "object",
        "nan",
        "nan-beside-null",
        "inf",
        "function",
        "record-field",
        "pydantic-raises",
        "tuple-key",
        "none-key",
        "nan-key",
        "bool-key",
        "set-item",
    ],
)
async def test_a_value_with_no_json_form_is_an_error_naming_where(value: Any, why: str) -> None:
    _error(await run(value), type(value).__qualname__, why)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (
            {1: "a", "1": "b"},
            "result has two keys that both render as \"1\": 1 (int) and '1' (str)",
        ),
        (
            {1.5: "a", "1.5": "b"},
            "result has two keys that both render as \"1.5\": 1.5 (float) and '1.5' (str)",
        ),
        (
            {"page": {Kind.SMALL: "enum", "1": "text"}},
            'result["page"] has two keys that both render as "1": '
            f"<Kind.SMALL: 1> ({M}.Kind) and '1' (str)",
        ),
        (
            {FSNAME: 1, "caf\\xe9": 2},
            'result has two keys that both render as "caf\\\\xe9": '
            f"{FSNAME!r} (str) and {'caf' + chr(92) + 'xe9'!r} (str)",
        ),
    ],
    ids=["int-and-str", "float-and-str", "enum-and-str", "escaped-surrogate"],
)
async def test_two_keys_rendering_alike_are_an_error_naming_the_key(value: Any, why: str) -> None:
    _error(await run(value), "dict", why)


async def test_a_cycle_is_an_error_not_a_crash() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    _error(
        await run(loop),
        "list",
        'result[1]["again"] is a list that contains itself (a cycle)',
    )


async def test_a_record_holding_itself_is_an_error_not_a_crash() -> None:
    node = Node()
    node.child = node
    _error(await run(node), "Node", f"result is a {M}.Node nested too deep (or in a cycle)")


async def test_a_hostile_value_is_an_error_result_never_an_exception() -> None:
    class Hostile(Mapping[str, int]):
        def __getitem__(self, key: str) -> int:
            raise RuntimeError("cannot read")

        def __iter__(self) -> Iterator[str]:
            raise RuntimeError("cannot iterate")

        def __len__(self) -> int:
            return 1

    result = await run({"s": Hostile()})
    assert result.is_error
    assert "rendering it raised RuntimeError: cannot iterate" in result.text


def test_sets_render_the_same_in_every_process() -> None:
    """A str set's iteration order follows the hash seed, which differs per process
    (a Ray worker's too): plain sets, sets in records and pydantic set fields are sorted."""
    code = (
        "import pydantic, msgspec\n"
        "from toolnursery._core._outcomes import encode_value\n"
        "class Thread(pydantic.BaseModel):\n"
        "    labels: set[str]\n"
        "    nested: list['Thread'] = []\n"
        "class Row(msgspec.Struct):\n"
        "    marks: frozenset[str]\n"
        "words = {f'w{i}' for i in range(40)}\n"
        "value = [words, Row(frozenset(words)), Thread(labels=words, nested=[Thread(labels=words)])]\n"
        "print(encode_value(value))\n"
    )
    texts = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    (text,) = texts
    words = sorted(f"w{i}" for i in range(40))
    assert json.loads(text) == [
        words,
        {"marks": words},
        {"labels": words, "nested": [{"labels": words, "nested": []}]},
    ]


def test_rendering_never_imports_pydantic() -> None:
    code = (
        "import dataclasses, datetime, sys\n"
        "from toolnursery._core._outcomes import normalize\n"
        "@dataclasses.dataclass\n"
        "class D:\n"
        "    when: datetime.date\n"
        "ok = normalize([D(datetime.date(2026, 1, 1)), {1, 2}], 't')\n"
        "bad = normalize({'x': object()}, 't')\n"
        "assert not ok.is_error and bad.is_error, (ok, bad)\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


# --- properties: deterministic, JSON round trip, the fast path agrees with the walk ---------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.dates()
    | st.datetimes(timezones=st.just(datetime.UTC))
    | st.uuids()
    | st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.sampled_from(list(Cabin) + list(Kind))
)
hashables = st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.dates()


@st.composite
def records(draw: st.DrawFn, inner: st.SearchStrategy[Any]) -> Any:
    kind = draw(st.sampled_from(["dataclass", "attrs", "struct", "pydantic"]))
    if kind == "dataclass":
        return Holder(draw(inner))
    if kind == "attrs":
        return Balance(
            draw(st.text(max_size=4)), draw(st.decimals(allow_nan=False, allow_infinity=False))
        )
    if kind == "struct":
        return Pos(draw(st.integers(-5, 5)), draw(st.frozensets(st.text(max_size=3), max_size=3)))
    return Email(
        sender=draw(st.text(max_size=5)),
        sent=WHEN,
        tags=draw(st.lists(st.text(max_size=3), max_size=3)),
    )


renderable = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
        | st.sets(hashables, max_size=4)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=4)
        | records(inner)
    ),
    max_leaves=15,
)


@given(value=renderable)
def test_property_any_renderable_value_renders_deterministically_and_round_trips(
    value: Any,
) -> None:
    text = encode_value(value)
    assert encode_value(value) == text
    assert render_slow(value) == text
    decoded = json.loads(text)
    assert encode_value(decoded) == msgspec.json.encode(decoded, order="deterministic").decode()
    result = normalize(value, "t")
    assert result.is_error is False
    # Text is content as it is; every other value is its JSON.
    assert result.content == (TextContent(value if type(value) is str else text),)


@given(value=renderable, seed=st.randoms())
def test_property_dict_and_set_order_never_shows(value: Any, seed: Any) -> None:
    assert encode_value(_reorder(value, seed)) == encode_value(value)


def _reorder(value: Any, rng: Any) -> Any:
    if type(value) is dict:
        items = list(value.items())
        rng.shuffle(items)
        return {k: _reorder(v, rng) for k, v in items}
    if type(value) is list:
        return [_reorder(v, rng) for v in value]
    return value
