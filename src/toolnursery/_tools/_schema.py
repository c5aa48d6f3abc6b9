"""The schema DSL: ``SchemaSpec`` → JSON Schema, and argument validation.

A :data:`SchemaSpec` maps each argument name to a :class:`SchemaProp`. Required-ness
is a per-property flag (``"required": True``), not a separate array::

    spec: SchemaSpec = {
        "path": {"type": "string", "required": True, "description": "Absolute path"},
        "limit": {"type": "number"},
    }

:func:`schema_spec_to_json_schema` emits the model-facing JSON Schema;
:func:`validate_args` lists every way some arguments violate a spec (``[]`` when they
conform). :func:`compile_validator` does the spec analysis once and returns a function
that only checks arguments — :func:`~toolnursery.define_tool` uses it so a call pays
for the checks and nothing else.

Validation never raises for any ``args`` (totality covers arguments, not malformed
specs): recursion follows the spec, never the input, so arbitrarily deep or hostile
input costs at most one check per spec node and array element.

:mod:`toolnursery._tools._struct_schema` derives the same two things — an inlined JSON Schema
and compiled checks (the :class:`Node` tree here) with the same violation texts — from a
frozen :class:`msgspec.Struct`, for ``define_tool`` and ``@tool``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict, cast

from msgspec import UNSET

from .._core._json import thaw
from ._constraints import Check, ConstraintError, compile_checks, json_constraints

__all__ = [
    "SchemaProp",
    "SchemaSpec",
    "SchemaType",
    "compile_validator",
    "schema_spec_to_json_schema",
    "validate_args",
]

SchemaType: TypeAlias = Literal["string", "number", "integer", "boolean", "object", "array"]
"""The property types the DSL knows."""

EnumValue: TypeAlias = "str | int | float | bool"
"""A value an ``enum`` may list."""


class SchemaProp(TypedDict, total=False):
    """One property of a :data:`SchemaSpec`.

    Attributes:
        type: the JSON type of the value (``integer`` accepts integral numbers,
            ``2.0`` included, and never a ``bool``).
        required: ``True`` makes the property required (absent means optional).
        nullable: ``True`` also accepts ``null`` (the schema says ``["<type>", "null"]``).
        description: model-facing text; an empty string is omitted from the schema.
        enum: the allowed values — strings, numbers, integers or booleans, of the
            property's type (``define_tool`` refuses others). On an ``array`` it
            constrains every item (the schema puts it on ``items``). ``[]``
            rejects every value.
        default: a model-visible annotation only, kept verbatim in the schema:
            validation never applies it and never checks it (JSON Schema's reading;
            ``"default": None`` on a string is fine).
        properties: the nested spec of an ``object`` property.
        items: the element schema of an ``array`` property.
        minimum: (and ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
            ``multipleOf``) bounds of a ``number``/``integer``.
        minLength: (and ``maxLength``, ``pattern``, ``format``) a ``string``'s length
            in code points, a regular expression it contains a match of
            (``re.search``), a format: ``date``, ``date-time``, ``time``, ``email``,
            ``uri``, ``uuid`` (or another the shared checker of ``_formats`` knows).
        minItems: (and ``maxItems``, ``uniqueItems``) an ``array``'s length; ``True``
            refuses equal items (``1`` and ``1.0`` are equal, ``1`` and ``True`` not).
    """

    type: Required[SchemaType]
    required: NotRequired[bool]
    nullable: NotRequired[bool]
    description: NotRequired[str]
    enum: NotRequired[Sequence[EnumValue]]
    default: NotRequired[Any]
    properties: NotRequired[Mapping[str, SchemaProp]]
    items: NotRequired[SchemaProp]
    minimum: NotRequired[float]
    maximum: NotRequired[float]
    exclusiveMinimum: NotRequired[float]
    exclusiveMaximum: NotRequired[float]
    multipleOf: NotRequired[float]
    minLength: NotRequired[int]
    maxLength: NotRequired[int]
    pattern: NotRequired[str]
    format: NotRequired[str]
    minItems: NotRequired[int]
    maxItems: NotRequired[int]
    uniqueItems: NotRequired[bool]


SchemaSpec: TypeAlias = dict[str, SchemaProp]
"""The author-facing parameter schema: argument name → :class:`SchemaProp`."""

Validator: TypeAlias = Callable[[object], list[str]]
"""A compiled validator: arguments → violations (``[]`` when they conform)."""

NOT_AN_OBJECT = '"arguments" must be an object'
"""The single violation reported for arguments that are not a JSON object."""

_SCHEMA_TYPES = ("string", "number", "integer", "boolean", "object", "array")
_SCALAR_TYPES = ("string", "number", "integer", "boolean")
_KEYWORDS = frozenset(SchemaProp.__annotations__)
_MISSING: Any = object()
_dict_get = dict.get
_dict_items = dict.items


def _compact(value: object) -> str:
    """Render ``value`` as compact JSON, the way ``JSON.stringify`` would."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _is_required(prop: Mapping[str, Any]) -> bool:
    return bool(prop.get("required"))


# --- conversion -------------------------------------------------------------------


def schema_spec_to_json_schema(spec: Mapping[str, SchemaProp]) -> dict[str, Any]:
    """Convert a spec to the JSON Schema the model sees.

    The result is ``{"type": "object", "properties": {...}, "required": [...]}`` with
    ``required`` omitted when no property is required. Each property's keys come in the
    order ``type, description, enum, default, <constraints>, properties, required |
    items``; ``description`` is emitted only when non-empty, ``enum`` whenever present
    (even ``[]``), ``default`` whenever present (even ``None``), constraints
    (``minimum``, ``pattern``, ``minItems``, …) as given. A ``nullable`` property's
    type is ``[<type>, "null"]`` (and its ``enum``, if any, lists ``None`` too). An
    array's ``enum`` is emitted on its ``items``, which it constrains. ``properties``
    is honoured only on ``object`` properties, ``items`` only on ``array`` ones and a
    constraint only on the types it applies to; misplaced ones are dropped
    (:func:`~toolnursery.define_tool` refuses them). The
    result shares no mutable object with ``spec``.

    Args:
        spec: the parameter spec.

    Returns:
        A fresh JSON Schema dict.
    """
    return _object_json(spec, {"type": "object"})


def _object_json(spec: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, prop in spec.items():
        properties[key] = _prop_json(prop)
        if _is_required(prop):
            required.append(key)
    out["properties"] = properties
    if required:
        out["required"] = required
    return out


def _prop_json(prop: Mapping[str, Any], item_enum: Sequence[Any] | None = None) -> dict[str, Any]:
    kind = prop.get("type")
    nullable = bool(prop.get("nullable"))
    out: dict[str, Any] = {"type": [kind, "null"] if nullable else kind}
    description = prop.get("description")
    if description is not None and description != "":
        out["description"] = description
    enum = prop.get("enum") if item_enum is None else item_enum
    if enum is not None and kind != "array":
        values = thaw(list(enum))
        out["enum"] = [*values, None] if nullable and None not in values else values
    if "default" in prop:
        out["default"] = thaw(prop["default"])
    out.update(thaw(json_constraints(kind, prop)))
    if kind == "object":
        properties = prop.get("properties")
        if properties is not None:
            _object_json(properties, out)
    elif kind == "array":
        items = prop.get("items")
        moved = _array_enum(prop)
        if items is not None:
            out["items"] = _prop_json(items, moved)
        elif moved is not None:
            out["items"] = {"enum": thaw(list(moved))}
    return out


def _array_enum(prop: Mapping[str, Any]) -> Sequence[Any] | None:
    """The ``enum`` of an array property that constrains its items, if any.

    It moves onto ``items`` when they are absent or a scalar without an ``enum`` of
    their own; otherwise it is dropped (and ``define_tool`` refuses it).
    """
    enum = prop.get("enum")
    if enum is None:
        return None
    items = prop.get("items")
    if items is None:
        return list(enum)
    if isinstance(items, Mapping) and items.get("type") in _SCALAR_TYPES and "enum" not in items:
        return list(enum)
    return None


# --- validation engine --------------------------------------------------------------


def _is_string(value: object) -> bool:
    return isinstance(value, str)


def _is_number(value: object) -> bool:
    t = type(value)
    if t is int or t is float:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
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


def _is_boolean(value: object) -> bool:
    return isinstance(value, bool)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_array(value: object) -> bool:
    return isinstance(value, list | tuple)


def _is_anything(value: object) -> bool:
    return True


_TESTS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (_is_string, "a string"),
    "number": (_is_number, "a number"),
    "integer": (_is_integer, "an integer"),
    "boolean": (_is_boolean, "a boolean"),
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
            self.enum_message = " must be one of " + _compact(list(enum))
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


# --- compiling a SchemaSpec ------------------------------------------------------------


class SpecError(ValueError):
    """Raised when a spec uses what the DSL cannot enforce; the message names the property."""


def compile_validator(spec: Mapping[str, SchemaProp]) -> Validator:
    """Analyse ``spec`` once and return a function that validates arguments against it.

    The returned function behaves exactly like ``validate_args(spec, args)`` but does
    no spec work per call, and it is detached from ``spec``: later changes to the spec
    do not affect it.

    Args:
        spec: the parameter spec.

    Returns:
        A function ``args -> list[str]`` that never raises.

    Raises:
        ValueError: ``spec`` names a type the DSL does not know (the message is
            ``unreachable variant in validateArgs: "<type>"``) or contains itself.
        TypeError: ``spec`` is not a mapping of mappings.
    """
    return validator_for(_compile_props(spec, set(), "", strict=False))


def compile_spec(spec: Mapping[str, SchemaProp]) -> tuple[dict[str, Any], Validator]:
    """Check ``spec`` strictly, then return its JSON Schema and compiled validator.

    What :func:`~toolnursery.define_tool` uses: on top of what :func:`compile_validator`
    refuses, every keyword must be one the DSL enforces, in the place it applies:
    unknown keywords (``$ref``, ``oneOf``, …), ``properties`` off an ``object``,
    ``items`` off an ``array``, a constraint off its type (``minimum`` on a string),
    a constraint with an unusable value (a ``pattern`` that does not compile, a
    ``format`` no checker knows), an ``enum`` on an ``object`` (or on an array of
    non-scalars) and an ``enum`` value not of the property's type are all refused. A
    ``default`` is an annotation and never refused.

    Raises:
        SpecError: what the DSL cannot enforce, naming the property's path
            (``property "servers[].port": …``).
        ValueError: as for :func:`compile_validator`.
        TypeError: as for :func:`compile_validator`.
    """
    props = _compile_props(spec, set(), "", strict=True)
    return schema_spec_to_json_schema(spec), validator_for(props)


def _compile_props(
    spec: Mapping[str, Any], active: set[int], prefix: str, *, strict: bool
) -> Props:
    if not isinstance(spec, Mapping):
        raise TypeError(f"a SchemaSpec must be a mapping, not {type(spec).__name__}")
    if id(spec) in active:
        raise ValueError("a SchemaSpec must not contain itself")
    active.add(id(spec))
    props = []
    for key, prop in spec.items():
        path = f"{prefix}{key}"
        if strict and not isinstance(key, str):
            raise SpecError(f"property names must be strings, got {key!r}")
        node = _compile_prop(prop, active, path, strict=strict)
        props.append((key, _is_required(prop), node))
    active.discard(id(spec))
    return tuple(props)


def _compile_prop(prop: Mapping[str, Any], active: set[int], path: str, *, strict: bool) -> Node:
    if not isinstance(prop, Mapping):
        raise TypeError(f"a SchemaProp must be a mapping, not {type(prop).__name__}")
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _SCHEMA_TYPES:
        raise ValueError(f"unreachable variant in validateArgs: {_compact(kind)}")
    if strict:
        _check_keywords(prop, kind, path)
    try:
        checks = compile_checks(kind, prop, strict=strict)
    except ConstraintError as exc:
        raise SpecError(f'property "{path}": {exc}') from None
    nullable = bool(prop.get("nullable"))
    enum = prop.get("enum")
    node: Node
    if kind == "object":
        properties = prop.get("properties")
        if properties is None:
            node = Node(kind, nullable=nullable)
        else:
            node = Node(
                kind,
                props=_compile_props(properties, active, path + ".", strict=strict),
                nullable=nullable,
            )
    elif kind == "array":
        items = prop.get("items")
        moved = _array_enum(prop)
        item_node: Node | None = None
        if items is not None:
            if id(items) in active:
                raise ValueError("a SchemaProp must not contain itself")
            active.add(id(items))
            item_node = _compile_prop(items, active, path + "[]", strict=strict)
            active.discard(id(items))
            if moved is not None:
                item_node = Node(
                    item_node.kind,
                    enum=moved,
                    nullable=item_node.nullable,
                    checks=item_node.checks,
                )
        elif moved is not None:
            item_node = Node("any", enum=moved)
        node = Node(kind, items=item_node, nullable=nullable)
    else:
        node = Node(kind, enum=None if enum is None else list(enum), nullable=nullable)
    node.constrain(checks)
    return node


_ENUM_FITS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (_is_string, "a string"),
    "number": (lambda v: _is_number(v) and math.isfinite(cast(float, v)), "a finite number"),
    "integer": (lambda v: _is_integer(v) and math.isfinite(cast(float, v)), "an integer"),
    "boolean": (_is_boolean, "a boolean"),
    "any": (
        lambda v: (
            _is_string(v) or _is_boolean(v) or (_is_number(v) and math.isfinite(cast(float, v)))
        ),
        "a string, number or boolean",
    ),
}


def _check_keywords(prop: Mapping[str, Any], kind: str, path: str) -> None:
    where = f'property "{path}"'
    for key in prop:
        if key not in _KEYWORDS:
            raise SpecError(f'{where}: the DSL has no "{key}" keyword, so it cannot enforce it')
    if "properties" in prop and kind != "object":
        raise SpecError(f'{where}: "properties" applies only to an object property')
    if "items" in prop and kind != "array":
        raise SpecError(f'{where}: "items" applies only to an array property')
    for flag in ("required", "nullable"):
        if flag in prop and type(prop[flag]) is not bool:
            raise SpecError(f'{where}: "{flag}" must be a bool')
    if "description" in prop and not isinstance(prop["description"], str):
        raise SpecError(f'{where}: "description" must be a string')
    if "enum" not in prop:
        return
    enum = prop["enum"]
    if not isinstance(enum, list | tuple):
        raise SpecError(f'{where}: "enum" must be a list of values')
    member_kind = kind
    if kind == "object":
        raise SpecError(f'{where}: "enum" is not supported on an object property')
    if kind == "array":
        items = prop.get("items")
        if items is None:
            member_kind = "any"
        elif not isinstance(items, Mapping) or items.get("type") not in _SCALAR_TYPES:
            raise SpecError(
                f'{where}: "enum" on an array needs scalar items (it constrains each item)'
            )
        elif "enum" in items:
            raise SpecError(f'{where}: "enum" is given on both the array and its items')
        else:
            member_kind = items["type"]
    fits, noun = _ENUM_FITS[member_kind]
    for value in enum:
        if not fits(value):
            raise SpecError(f"{where}: enum value {_compact(value)} is not {noun}")


def validate_args(spec: Mapping[str, SchemaProp], args: object) -> list[str]:
    """List every way ``args`` violates ``spec``, in spec declaration order.

    Violations read ``missing required property "config.host"``, ``"tags[1]" must be
    a string``, ``"color" must be one of ["red","green"]``; a value that fails its
    type check is not looked into further. Extra keys are allowed and defaults are not
    applied. A required key whose value is :data:`msgspec.UNSET` counts as missing;
    ``None`` is a value (``"path" must be a string``). ``bool`` is not a number.

    Args:
        spec: the parameter spec.
        args: anything; a non-object (not a ``dict``, e.g. ``None``, a string, a list)
            yields exactly ``['"arguments" must be an object']``.

    Returns:
        The violations; ``[]`` when ``args`` conforms.

    Raises:
        ValueError: the spec names an unknown type (``unreachable variant in
            validateArgs: "<type>"``), whatever ``args`` is.
        TypeError: the spec is not a mapping of mappings.
    """
    return compile_validator(spec)(args)
