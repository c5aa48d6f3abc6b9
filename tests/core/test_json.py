"""Lossless JSON snapshots (reference B046, B049, B052, B111).

Properties: any JSON value round-trips unchanged through ``snapshot`` + ``thaw`` and
through msgspec encode/decode; any value with something non-JSON inside it — NaN,
±inf, -0.0, bytes, sets, non-string keys, cycles, arbitrary objects, too deep a
nesting — is rejected, and through ``execute()`` yields exactly the B111 text.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import enum
import math
import pickle
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import (
    FrozenDict,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    thaw,
)
from toolnursery._core._json import MAX_JSON_DEPTH, NotJSONError, snapshot

B111 = "Error: tool execution arguments must be losslessly JSON-serializable"

finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not (f == 0.0 and math.copysign(1.0, f) < 0)
)
json_scalars = st.none() | st.booleans() | st.integers() | finite_floats | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def same(a: Any, b: Any) -> bool:
    """Structural equality that also compares JSON kinds (bool ≠ int ≠ float)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and a == b


def frozen_throughout(value: Any) -> bool:
    if isinstance(value, dict):
        return type(value) is FrozenDict and all(frozen_throughout(v) for v in value.values())
    if isinstance(value, list | tuple):
        return type(value) is tuple and all(frozen_throughout(v) for v in value)
    return True


@given(json_values)
def test_any_json_value_round_trips_through_snapshot_and_thaw(value: Any) -> None:
    """B052: snapshot copies every JSON value losslessly; thaw gives the original back."""
    frozen = snapshot(value)
    assert same(thaw(frozen), value)
    assert frozen_throughout(frozen)
    assert frozen == snapshot(frozen)


@given(json_values)
def test_any_json_snapshot_round_trips_through_msgspec(value: Any) -> None:
    """B052: msgspec encodes a snapshot exactly like the original and decodes it back."""
    frozen = snapshot(value)
    encoded = msgspec.json.encode(frozen)
    assert encoded == msgspec.json.encode(value)
    assert same(msgspec.json.decode(encoded), value)


@given(json_values)
def test_snapshot_is_detached_from_the_callers_value(value: Any) -> None:
    """B046: mutating the original afterwards never reaches the snapshot."""
    holder = {"v": value, "list": [1, 2]}
    frozen = snapshot(holder)
    holder["list"].append(3)
    holder["v"] = "changed"
    assert frozen["list"] == (1, 2)
    assert same(thaw(frozen["v"]), value)


class Opaque:
    pass


class Color(enum.Enum):
    RED = "red"


POISONS: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    b"bytes",
    bytearray(b"x"),
    {1, 2},
    frozenset({"a"}),
    Opaque(),
    object(),
    1j,
    decimal.Decimal("1.5"),
    datetime.date(2024, 1, 1),
    Color.RED,
    {1: "int key"},
    {None: "None key"},
    {("t",): "tuple key"},
    len,
    lambda: None,
]

poisons = st.sampled_from(range(len(POISONS))).map(lambda i: POISONS[i])


def _embed(inner: Any, before: list[Any], after: list[Any]) -> list[Any]:
    return [*before, inner, *after]


def _embed_in_dict(inner: Any, base: dict[str, Any], key: str) -> dict[str, Any]:
    out = dict(base)
    out[key] = inner
    return out


poisoned_values = st.recursive(
    poisons,
    lambda inner: (
        st.builds(
            _embed, inner, st.lists(json_values, max_size=2), st.lists(json_values, max_size=2)
        )
        | st.builds(
            _embed_in_dict,
            inner,
            st.dictionaries(st.text(max_size=4), json_values, max_size=2),
            st.text(max_size=4),
        )
    ),
    max_leaves=8,
)


@given(poisoned_values)
def test_any_value_with_non_json_inside_is_rejected(value: Any) -> None:
    """B052: one non-JSON leaf anywhere rejects the whole value with NotJSONError."""
    with pytest.raises(NotJSONError):
        snapshot(value)


@settings(max_examples=60)
@given(poisoned_values)
async def test_non_json_arguments_through_execute_yield_exactly_b111(value: Any) -> None:
    """B111: through execute(), every rejected argument value gives the exact text."""
    registry = ToolRegistry()
    ran: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append("body")
        return "ok"

    registry.register(ToolDefinition("t", "d", {"type": "object"}, body))
    result = await registry.execute(ToolExecutionInput("c1", "t", {"arg": value}))
    assert result.is_error
    assert result.content == (TextContent(B111),)
    assert result.error is None
    assert ran == []


@settings(max_examples=60)
@given(json_values)
async def test_json_arguments_through_execute_reach_the_body_frozen(value: Any) -> None:
    """B046: any JSON argument value reaches the body as an equal, frozen snapshot."""
    registry = ToolRegistry()
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(args)
        return "ok"

    registry.register(ToolDefinition("t", "d", {"type": "object"}, body))
    result = await registry.execute(ToolExecutionInput("c1", "t", {"arg": value}))
    assert not result.is_error
    assert same(thaw(seen[0]["arg"]), value)
    assert frozen_throughout(seen[0])


@given(
    st.lists(json_values, min_size=1, max_size=3)
    | st.dictionaries(st.text(max_size=4), json_values, min_size=1, max_size=3)
)
def test_cycles_are_rejected(container: Any) -> None:
    """B052: a container that reaches itself is circular, not JSON."""
    if isinstance(container, list):
        container.append(container)
    else:
        container["self"] = {"again": [container]}
    with pytest.raises(NotJSONError, match="circular"):
        snapshot(container)


def test_shared_references_are_copied_not_rejected() -> None:
    """B052: a DAG (the same object in two places) is fine and copied twice."""
    shared = {"x": [1, 2]}
    frozen = snapshot({"a": shared, "b": shared, "c": [shared, shared]})
    assert frozen["a"] == frozen["b"] == {"x": (1, 2)}
    assert len(frozen["c"]) == 2


def test_proto_key_is_plain_data() -> None:
    """B052: a key literally named __proto__ is kept as data."""
    assert snapshot({"__proto__": {"polluted": True}}) == {"__proto__": {"polluted": True}}


def test_depth_limit_boundary() -> None:
    """MAX_JSON_DEPTH containers nest fine; one more is rejected, naming the limit."""
    assert MAX_JSON_DEPTH == 256

    def nest(levels: int) -> Any:
        value: Any = "leaf"
        for i in range(levels):
            value = [value] if i % 2 else {"k": value}
        return value

    deepest = snapshot(nest(MAX_JSON_DEPTH))
    assert msgspec.json.decode(msgspec.json.encode(deepest)) == thaw(deepest)
    with pytest.raises(NotJSONError, match="nested deeper than 256 levels"):
        snapshot(nest(MAX_JSON_DEPTH + 1))
    with pytest.raises(NotJSONError):
        snapshot(nest(10_000))


def test_rejection_names_the_path() -> None:
    """Messages name the offending path, msgspec style."""
    with pytest.raises(NotJSONError) as info:
        snapshot({"a": [1, {"b": math.nan}]})
    assert str(info.value) == "value.a[1].b is not a finite JSON number: nan"
    with pytest.raises(NotJSONError) as info:
        snapshot({"a": [b"x"]})
    assert str(info.value) == "value.a[0] is not JSON data: bytes"
    with pytest.raises(NotJSONError) as info:
        snapshot({"m": {3: 1}})
    assert str(info.value) == "value.m has a non-string key: 3"


def test_json_like_containers_and_scalar_subclasses_are_normalized() -> None:
    """Tuples and read-only mappings are JSON containers; str/int/float subclasses become
    the plain type; bool stays bool."""

    class Name(str):
        pass

    class Count(int):
        pass

    class Ratio(float):
        pass

    frozen = snapshot(
        {
            "proxy": MappingProxyType({"a": 1}),
            "tuple": (1, 2),
            "name": Name("x"),
            "count": Count(3),
            "ratio": Ratio(0.5),
            "flag": True,
            Name("key"): None,
        }
    )
    assert type(frozen["proxy"]) is FrozenDict
    assert frozen["tuple"] == (1, 2)
    assert type(frozen["name"]) is str
    assert type(frozen["count"]) is int
    assert type(frozen["ratio"]) is float
    assert frozen["flag"] is True
    assert [type(k) for k in frozen] == [str] * 7
    with pytest.raises(NotJSONError):
        snapshot(Ratio(math.nan))


def test_frozen_dict_is_read_only_hashable_and_copyable() -> None:
    """FrozenDict: every mutator raises TypeError; it hashes, copies to itself, pickles."""
    frozen = snapshot({"a": 1, "b": [1, 2]})
    mutators: list[Callable[[], object]] = [
        lambda: frozen.__setitem__("a", 2),
        lambda: frozen.__delitem__("a"),
        lambda: frozen.clear(),
        lambda: frozen.pop("a"),
        lambda: frozen.popitem(),
        lambda: frozen.setdefault("c", 1),
        lambda: frozen.update({"c": 1}),
    ]
    for mutate in mutators:
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    with pytest.raises(TypeError):
        frozen |= {"c": 1}
    assert frozen == {"a": 1, "b": (1, 2)}
    assert hash(frozen) == hash(snapshot({"b": [1, 2], "a": 1}))
    assert copy.copy(frozen) is frozen
    assert copy.deepcopy(frozen) is frozen
    restored = pickle.loads(pickle.dumps(frozen))
    assert type(restored) is FrozenDict
    assert restored == frozen
    assert repr(snapshot({"a": 1})) == "FrozenDict({'a': 1})"
    assert isinstance(frozen, dict)
