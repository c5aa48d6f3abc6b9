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
input costs at most one check per spec node and array element. A spec compiles to the
:class:`~toolnursery._tools._validator.Node` tree of :mod:`._validator`, which checks
the arguments.

:mod:`toolnursery._tools._struct_schema` derives the same two things — an inlined JSON Schema
and compiled checks (the same :class:`~toolnursery._tools._validator.Node` tree) with the
same violation texts — from a frozen :class:`msgspec.Struct`, for ``define_tool`` and ``@tool``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict, cast

from .._core._json import thaw
from ._constraints import ConstraintError, compile_checks, json_constraints
from ._validator import (
    Node,
    Props,
    Validator,
    compact_json,
    is_boolean,
    is_integer,
    is_number,
    is_string,
    validator_for,
)

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

_SCHEMA_TYPES = ("string", "number", "integer", "boolean", "object", "array")
_SCALAR_TYPES = ("string", "number", "integer", "boolean")
_KEYWORDS = frozenset(SchemaProp.__annotations__)


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
        raise ValueError(f"unreachable variant in validateArgs: {compact_json(kind)}")
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
    "string": (is_string, "a string"),
    "number": (lambda v: is_number(v) and math.isfinite(cast(float, v)), "a finite number"),
    "integer": (lambda v: is_integer(v) and math.isfinite(cast(float, v)), "an integer"),
    "boolean": (is_boolean, "a boolean"),
    "any": (
        lambda v: is_string(v) or is_boolean(v) or (is_number(v) and math.isfinite(cast(float, v))),
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
            raise SpecError(f"{where}: enum value {compact_json(value)} is not {noun}")


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
