"""The validation engine: compiled schema nodes, and checking arguments against them.

A :class:`Node` is one compiled schema node: a type test, an ``enum``, constraint
checks (:mod:`._constraints`) and what to look into inside the value. The schema DSL
(:mod:`._schema`) and a frozen :class:`msgspec.Struct` (:mod:`._struct_schema`)
both compile to these nodes, so a violation reads the same whatever the tool was
declared with. :func:`validator_for` turns an object's compiled properties into a
:data:`Validator`.

Checking never raises for any arguments: recursion follows the compiled nodes, never
the input, so arbitrarily deep or hostile input costs at most one check per node and
array element.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from msgspec import UNSET

from ._constraints import Check

__all__ = [
    "NOT_AN_OBJECT",
    "Node",
    "Props",
    "Validator",
    "compact_json",
    "is_boolean",
    "is_integer",
    "is_number",
    "is_string",
    "validator_for",
]

Validator: TypeAlias = Callable[[object], list[str]]
"""A compiled validator: arguments → violations (``[]`` when they conform)."""

NOT_AN_OBJECT = '"arguments" must be an object'
"""The single violation reported for arguments that are not a JSON object."""

_MISSING: Any = object()
_dict_get = dict.get
_dict_items = dict.items


def compact_json(value: object) -> str:
    """Render ``value`` as compact JSON, the way ``JSON.stringify`` would."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def is_string(value: object) -> bool:
    return isinstance(value, str)


def is_number(value: object) -> bool:
    t = type(value)
    if t is int or t is float:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_integer(value: object) -> bool:
    # JSON has one number type: 2.0 is the integer 2 (as JSON Schema's "integer" says).
    t = type(value)
    if t is int:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_boolean(value: object) -> bool:
    return isinstance(value, bool)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_array(value: object) -> bool:
    return isinstance(value, list | tuple)


def _is_anything(value: object) -> bool:
    return True


_TESTS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (is_string, "a string"),
    "number": (is_number, "a number"),
    "integer": (is_integer, "an integer"),
    "boolean": (is_boolean, "a boolean"),
    "object": (_is_object, "an object"),
    "array": (_is_array, "an array"),
    "any": (_is_anything, "anything"),
}

Props: TypeAlias = "tuple[tuple[str, bool, Node], ...]"
"""A compiled object: ``(key, required, node)`` in declaration order."""


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


class Node:
    """One compiled schema node: a type test plus what to check inside the value.

    ``kind`` is a DSL type, or ``any`` (no type test). ``nullable`` lets ``None``
    through (a Struct's ``T | None``). ``enum`` is checked on every kind but
    ``object`` and ``array``; ``props`` only on ``object``; ``items`` only on
    ``array``; ``values`` (every value of a mapping) only on ``object`` nodes
    without ``props``. ``checks`` (:mod:`._constraints`) run on every value that
    passed the type test. ``exact_int`` makes an ``integer`` enum refuse ``2.0``
    (msgspec will not convert it to a ``Literal`` int). ``alternatives`` makes a
    union (of kind ``any``): a value passes when it passes one of them.
    """

    __slots__ = (
        "alternatives",
        "checks",
        "enum_message",
        "enum_others",
        "enum_strings",
        "items",
        "kind",
        "nullable",
        "plain",
        "props",
        "test",
        "type_message",
        "values",
    )

    def __init__(
        self,
        kind: str,
        *,
        enum: Sequence[object] | None = None,
        props: Props | None = None,
        items: Node | None = None,
        values: Node | None = None,
        nullable: bool = False,
        exact_int: bool = False,
        alternatives: Sequence[Node] | None = None,
        checks: Sequence[Check] = (),
    ) -> None:
        self.kind = kind
        self.checks: tuple[Check, ...] = tuple(checks)
        self.test, noun = _TESTS[kind]
        self.nullable = nullable
        self.type_message = f" must be {noun} or null" if nullable else f" must be {noun}"
        scalar = kind not in ("object", "array", "any")
        self.enum_message: str | None = None
        self.enum_strings: frozenset[str] = frozenset()
        self.enum_others: tuple[object, ...] = ()
        if enum is not None and kind not in ("object", "array"):
            if kind == "integer" and exact_int:
                # Literal/IntEnum members are ints; msgspec will not widen 2.0 to them.
                self.test = _is_int
            self.enum_message = " must be one of " + compact_json(list(enum))
            self.enum_strings = frozenset(e for e in enum if type(e) is str)
            self.enum_others = tuple(e for e in enum if type(e) is not str)
        self.props = props if kind == "object" else None
        self.items = items if kind == "array" else None
        self.values = values if kind == "object" and props is None else None
        self.plain = scalar and self.enum_message is None and not self.checks
        self.alternatives: tuple[Node, ...] | None = None
        if alternatives is not None:
            self.alternatives = tuple(alternatives)
            nouns = [_TESTS[a.kind][1] for a in self.alternatives] + (["null"] if nullable else [])
            self.type_message = " must be " + " or ".join(dict.fromkeys(nouns))

    def constrain(self, checks: Sequence[Check]) -> None:
        """Add ``checks`` to the node (a value then needs to pass them too)."""
        if checks:
            self.checks += tuple(checks)
            self.plain = False

    def in_enum(self, value: object) -> bool:
        """Whether ``value`` (which passed the type test) is one of the enum values."""
        if isinstance(value, str):
            return str.__str__(value) in self.enum_strings or any(
                type(e) is not str and isinstance(e, str) and e == value for e in self.enum_others
            )
        kind = _json_kind(value)
        return any(_json_kind(e) == kind and e == value for e in self.enum_others)


def _check_props(obj: dict[str, Any], props: Props, prefix: str, out: list[str]) -> None:
    for key, required, node in props:
        value = _dict_get(obj, key, _MISSING)
        if value is _MISSING or value is UNSET:
            if required:
                out.append(f'missing required property "{prefix}{key}"')
            continue
        if node.plain and node.test(value):
            continue  # the common case: a valid scalar needs no path and no call
        _check(value, node, prefix + key, out)


def _check(value: Any, node: Node, path: str, out: list[str]) -> None:
    if value is None and node.nullable:
        return
    if node.alternatives is not None:
        typed: list[str] | None = None
        for alternative in node.alternatives:
            found: list[str] = []
            _check(value, alternative, path, found)
            if not found:
                return
            if typed is None and alternative.test(value):
                typed = found  # of the right type, but it broke a constraint: say which
        out.extend(typed or (f'"{path}"{node.type_message}',))
        return
    if not node.test(value):
        out.append(f'"{path}"{node.type_message}')
        return
    if node.enum_message is not None and not node.in_enum(value):
        out.append(f'"{path}"{node.enum_message}')
    for passes, message in node.checks:
        if not passes(value):
            out.append(f'"{path}"{message}')
    if node.props is not None:
        _check_props(value, node.props, path + ".", out)
    elif node.items is not None:
        items = node.items
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", out)
    elif node.values is not None:
        values = node.values
        for key, item in _dict_items(value):
            _check(item, values, f"{path}.{key}", out)


def validator_for(props: Props) -> Validator:
    """Return the validator of an object whose properties are ``props``."""

    def validate(args: object) -> list[str]:
        if not isinstance(args, dict):
            return [NOT_AN_OBJECT]
        out: list[str] = []
        _check_props(args, props, "", out)
        return out

    return validate
