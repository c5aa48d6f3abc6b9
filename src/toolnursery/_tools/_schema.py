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
specs). A spec's JSON Schema is what is checked: it is compiled once by the engine of
:mod:`._validator` (jsonschema-rs), the same engine a raw schema's and a Struct's
arguments go through, with the same violation texts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, Required, TypeAlias, TypedDict, cast

from .._core._json import thaw
from ._validator import SchemaCompileError, Validator, compact_json, compile_schema

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
            property's type (``define_tool`` refuses others), on a scalar property only
            (for an array of choices, put it on ``items``). ``[]`` rejects every value.
        default: a model-visible annotation only, kept verbatim in the schema:
            validation never applies it and never checks it (JSON Schema's reading;
            ``"default": None`` on a string is fine).
        properties: the nested spec of an ``object`` property.
        items: the element schema of an ``array`` property.
        minimum: (and ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
            ``multipleOf``) bounds of a ``number``/``integer``.
        minLength: (and ``maxLength``, ``pattern``, ``format``) a ``string``'s length
            in code points, a regular expression it contains a match of (unanchored,
            matched in linear time: no look-arounds or back-references), a format:
            ``date``, ``date-time``, ``time``, ``email``, ``uri``, ``uuid``,
            ``hostname``, ``ipv4``, ``ipv6``, ``duration``, … (every format of the
            engine; ``define_tool`` refuses one it cannot check).
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
    on a scalar (even ``[]``), ``default`` whenever present (even ``None``), constraints
    (``minimum``, ``pattern``, ``minItems``, …) as given. A ``nullable`` property's
    type is ``[<type>, "null"]`` (and its ``enum``, if any, lists ``None`` too).
    ``properties`` is honoured only on ``object`` properties, ``items`` only on
    ``array`` ones, ``enum`` only on scalars and a constraint only on the types it
    applies to; misplaced ones are dropped (an ``enum`` on an object is kept, and refused) (:func:`~toolnursery.define_tool` refuses
    them). The
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


def _prop_json(prop: Mapping[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    nullable = bool(prop.get("nullable"))
    out: dict[str, Any] = {"type": [kind, "null"] if nullable else kind}
    description = prop.get("description")
    if description is not None and description != "":
        out["description"] = description
    enum = prop.get("enum")
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
        if items is not None:
            out["items"] = _prop_json(items)
    return out


_NUMERIC: Final = frozenset(("number", "integer"))
APPLIES_TO: Final[Mapping[str, frozenset[str]]] = {
    "minimum": _NUMERIC,
    "exclusiveMinimum": _NUMERIC,
    "maximum": _NUMERIC,
    "exclusiveMaximum": _NUMERIC,
    "multipleOf": _NUMERIC,
    "minLength": frozenset(("string",)),
    "maxLength": frozenset(("string",)),
    "pattern": frozenset(("string",)),
    "format": frozenset(("string",)),
    "minItems": frozenset(("array",)),
    "maxItems": frozenset(("array",)),
    "uniqueItems": frozenset(("array",)),
}
"""The DSL's constraint keywords, in the order the schema lists them, and their types."""


def json_constraints(kind: object, prop: Mapping[str, Any]) -> dict[str, Any]:
    """The constraint keywords of ``prop`` that apply to ``kind``, as given, in order."""
    return {
        keyword: prop[keyword]
        for keyword, kinds in APPLIES_TO.items()
        if keyword in prop and kind in kinds
    }


# --- compiling a SchemaSpec ------------------------------------------------------------


class SpecError(ValueError):
    """Raised when a spec uses what the DSL cannot enforce; the message names the property."""


def compile_validator(spec: Mapping[str, SchemaProp]) -> Validator:
    """Analyse ``spec`` once and return a function that validates arguments against it.

    The returned function behaves exactly like ``validate_args(spec, args)`` but does
    no spec work per call, and it is detached from ``spec``: later changes to the spec
    do not affect it. What the DSL cannot enforce is left out of the check (a
    misplaced keyword, a pattern or format the engine refuses):
    :func:`~toolnursery.define_tool` refuses it instead.

    Args:
        spec: the parameter spec.

    Returns:
        A function ``args -> list[str]`` that never raises.

    Raises:
        ValueError: ``spec`` names a type the DSL does not know (the message is
            ``unreachable variant in validateArgs: "<type>"``) or contains itself.
        TypeError: ``spec`` is not a mapping of mappings.
    """
    _walk_props(spec, set(), "", strict=False)
    schema = schema_spec_to_json_schema(spec)
    _scalar_enums_only(schema)
    for _ in range(1000):
        try:
            return compile_schema(schema)
        except SchemaCompileError as exc:
            if not _drop(schema, exc.path):
                raise ValueError(f"the spec cannot be checked: {exc}") from None
    raise ValueError("the spec cannot be checked")  # pragma: no cover


def _scalar_enums_only(node: dict[str, Any]) -> None:
    """Take ``enum`` off the object nodes of a converted spec (the DSL never checked it)."""
    if "object" in (node.get("type"), *(node.get("type") or ())):
        node.pop("enum", None)
    for child in (node.get("properties") or {}).values():
        _scalar_enums_only(child)
    if isinstance(node.get("items"), dict):
        _scalar_enums_only(node["items"])


def _drop(schema: dict[str, Any], path: Sequence[str | int]) -> bool:
    """Remove the keyword at ``path`` from ``schema``; whether there was one."""
    node: Any = schema
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    if not path or not isinstance(node, dict) or path[-1] not in node:
        return False
    del node[path[-1]]
    return True


def compile_spec(spec: Mapping[str, SchemaProp]) -> tuple[dict[str, Any], Validator]:
    """Check ``spec`` strictly, then return its JSON Schema and compiled validator.

    What :func:`~toolnursery.define_tool` uses: on top of what :func:`compile_validator`
    refuses, every keyword must be one the DSL enforces, in the place it applies:
    unknown keywords (``$ref``, ``oneOf``, …), ``properties`` off an ``object``,
    ``items`` off an ``array``, a constraint off its type (``minimum`` on a string),
    a constraint with an unusable value (a ``pattern`` that does not compile or needs
    backtracking, a ``format`` the engine cannot check), an ``enum`` off a scalar type
    (on an ``object`` or an ``array``: put it on the array's ``items``) and an
    ``enum`` value not of the property's type are all refused. A ``default`` is an
    annotation and never refused.

    Raises:
        SpecError: what the DSL cannot enforce, naming the property's path
            (``property "servers[].port": …``).
        ValueError: as for :func:`compile_validator`.
        TypeError: as for :func:`compile_validator`.
    """
    _walk_props(spec, set(), "", strict=True)
    schema = schema_spec_to_json_schema(spec)
    try:
        validate = compile_schema(schema)
    except SchemaCompileError as exc:
        raise SpecError(f'property "{_spec_path(exc.path)}": {exc.reason}') from None
    return schema_spec_to_json_schema(spec), validate


def _spec_path(parts: Sequence[str | int]) -> str:
    """``["properties", "a", "items", "properties", "b", "pattern"]`` → ``a[].b``."""
    out = ""
    i = 0
    while i < len(parts):
        part = parts[i]
        if part == "properties" and i + 1 < len(parts):
            out += f".{parts[i + 1]}" if out else str(parts[i + 1])
            i += 2
        elif part == "items":
            out += "[]"
            i += 1
        else:
            break
    return out


def _walk_props(spec: Mapping[str, Any], active: set[int], prefix: str, *, strict: bool) -> None:
    if not isinstance(spec, Mapping):
        raise TypeError(f"a SchemaSpec must be a mapping, not {type(spec).__name__}")
    if id(spec) in active:
        raise ValueError("a SchemaSpec must not contain itself")
    active.add(id(spec))
    for key, prop in spec.items():
        path = f"{prefix}{key}"
        if strict and not isinstance(key, str):
            raise SpecError(f"property names must be strings, got {key!r}")
        _walk_prop(prop, active, path, strict=strict)
    active.discard(id(spec))


def _walk_prop(prop: Mapping[str, Any], active: set[int], path: str, *, strict: bool) -> None:
    if not isinstance(prop, Mapping):
        raise TypeError(f"a SchemaProp must be a mapping, not {type(prop).__name__}")
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _SCHEMA_TYPES:
        raise ValueError(f"unreachable variant in validateArgs: {compact_json(kind)}")
    if strict:
        _check_keywords(prop, kind, path)
    if kind == "object":
        properties = prop.get("properties")
        if properties is not None:
            _walk_props(properties, active, path + ".", strict=strict)
    elif kind == "array":
        items = prop.get("items")
        if items is not None:
            if id(items) in active:
                raise ValueError("a SchemaProp must not contain itself")
            active.add(id(items))
            _walk_prop(items, active, path + "[]", strict=strict)
            active.discard(id(items))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: object) -> bool:
    return _is_number(value) and math.isfinite(cast(float, value))


_ENUM_FITS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "number": (_finite, "a finite number"),
    "integer": (lambda v: _finite(v) and float(cast(float, v)).is_integer(), "an integer"),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
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
    for keyword, kinds in APPLIES_TO.items():
        if keyword in prop and kind not in kinds:
            on = " or ".join(sorted(kinds))
            raise SpecError(f'{where}: "{keyword}" applies only to {on} properties')
        numeric = keyword not in ("pattern", "format", "uniqueItems")
        if keyword in prop and numeric and not _finite(prop[keyword]):
            got = compact_json(prop[keyword])
            raise SpecError(f'{where}: "{keyword}" must be a finite number, got {got}')
    for flag in ("required", "nullable"):
        if flag in prop and type(prop[flag]) is not bool:
            raise SpecError(f'{where}: "{flag}" must be a bool')
    if "description" in prop and not isinstance(prop["description"], str):
        raise SpecError(f'{where}: "description" must be a string')
    if "enum" not in prop:
        return
    enum = prop["enum"]
    if kind in ("object", "array"):
        hint = ' (to allow a set of item values, put it on "items")' if kind == "array" else ""
        raise SpecError(
            f'{where}: "enum" applies only to string, number, integer or boolean properties{hint}'
        )
    if not isinstance(enum, list | tuple):
        raise SpecError(f'{where}: "enum" must be a list of values')
    fits, noun = _ENUM_FITS[kind]
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
