"""Struct parameters: a frozen :class:`msgspec.Struct` → an inlined JSON Schema and checks.

``define_tool(parameters=SomeStruct)`` and ``@tool`` (which builds a Struct from the
signature) derive the model-facing schema here; the validation engine
(:mod:`._validator`) checks arguments against that schema with the DSL's violation
texts, then msgspec converts the checked arguments to the Struct. What the schema advertises is what is enforced:
a type with no JSON Schema form here, or ``Annotated`` metadata msgspec would ignore, is
refused at definition time, naming the field.

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``; ``datetime``, ``date``,
``time``, ``timedelta``, ``UUID``, ``Decimal`` (strings with a ``format``); ``Literal``
and ``Enum`` (in declaration order); unions of those (``str | int | None``); ``list``,
``tuple[T, ...]``, ``set``, ``frozenset``, ``dict[str, T]``; frozen Structs; ``T | None``;
``Any``; ``Annotated[T, msgspec.Meta(...)]`` constraints and descriptions.

Constraints (``Meta(ge=1, max_length=8, pattern=...)``, and JSON Schema keywords given
as ``Meta(extra_json_schema={"format": "email"})``) are in the schema, so the engine
checks them with the DSL's texts (``"count" must be >= 1``) before msgspec converts.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import msgspec
import msgspec.inspect as mi
from msgspec import NODEFAULT

from .._core._errors import StructSchemaError
from .._core._json import thaw

__all__ = ["FieldDocs", "struct_schema"]


class _NoSchemaError(Exception):
    """Raised internally when a type has no JSON Schema form here."""


FieldDocs: TypeAlias = Callable[[type], Mapping[str, str]]
"""Where nested Structs' field descriptions come from (their docstrings)."""

_FORMATS: dict[type[mi.Type], str] = {
    mi.DateTimeType: "date-time",
    mi.DateType: "date",
    mi.TimeType: "time",
    mi.TimeDeltaType: "duration",
    mi.UUIDType: "uuid",
    mi.DecimalType: "decimal",
}
"""Types msgspec decodes from strings, and the ``format`` the schema gives them."""

_EMPTY_FACTORIES: tuple[object, ...] = (list, dict, set, frozenset)
"""The factories msgspec makes of an empty container default: the schema shows it."""

_SCALARS = (mi.StrType, mi.IntType, mi.FloatType, mi.BoolType, mi.LiteralType, mi.EnumType)


class _Walk:
    """What a walk over one Struct (and the Structs inside it) carries along."""

    __slots__ = ("active", "field_docs", "orders")

    def __init__(self, field_docs: FieldDocs) -> None:
        self.active: set[type] = set()
        self.field_docs = field_docs
        # msgspec reports a Literal's values sorted; the annotation keeps their order.
        self.orders: dict[frozenset[tuple[type, object]], tuple[object, ...]] = {}


def struct_schema(
    cls: type[msgspec.Struct], descriptions: Mapping[str, str], noun: str, field_docs: FieldDocs
) -> dict[str, Any]:
    """Derive the inlined JSON Schema (no ``$ref``) of a Struct.

    Args:
        cls: a frozen Struct subclass (nested Structs must be frozen too).
        descriptions: the top-level fields' descriptions (by attribute name).
        noun: what a top-level field is called in messages (``field``, ``parameter``).
        field_docs: gives a nested Struct's field descriptions.

    Returns:
        The schema; the engine's validator of it checks arguments for ``cls``.

    Raises:
        StructSchemaError: a Struct is not frozen, is ``array_like`` or recursive, a
            field's type has no form in the schema, or its ``Annotated`` metadata is
            not ``msgspec.Meta``.
    """
    return _struct_object(cls, _Walk(field_docs), descriptions, noun, top=True)


def _struct_object(
    cls: type[msgspec.Struct],
    walk: _Walk,
    descriptions: Mapping[str, str],
    noun: str,
    *,
    top: bool,
) -> dict[str, Any]:
    config = cls.__struct_config__
    if not config.frozen:
        raise StructSchemaError(
            f"parameters Struct {cls.__name__} must be declared with frozen=True"
        )
    if config.array_like:
        raise StructSchemaError(f"parameters Struct {cls.__name__} must not be array_like")
    if cls in walk.active:
        raise StructSchemaError(
            f"parameters Struct {cls.__name__} is recursive; it cannot be inlined"
        )
    walk.active.add(cls)
    where_prefix = "" if top else f"{cls.__name__}."
    properties: dict[str, Any] = {}
    required: list[str] = []
    if config.tag_field is not None and isinstance(config.tag, str | int):
        kind = "string" if isinstance(config.tag, str) else "integer"
        properties[config.tag_field] = {"type": kind, "enum": [config.tag]}
    for field in msgspec.structs.fields(cls):
        where = f'{noun} "{where_prefix}{field.name}"'
        try:
            _scan(field.type, walk, where)
            msgspec.json.Decoder(field.type)  # msgspec's own refusals (ambiguous unions)
            info = mi.type_info(field.type)
            default = field.default
            if default is NODEFAULT and field.default_factory in _EMPTY_FACTORIES:
                default = field.default_factory()  # an empty list, dict or set
            schema = _field_schema(info, default, descriptions.get(field.name), walk)
        except StructSchemaError:
            raise
        except (_NoSchemaError, TypeError, ValueError):
            raise StructSchemaError(
                f"{where} has an unsupported type: {_show(field.type)}"
            ) from None
        properties[field.encode_name] = schema
        if field.required:
            required.append(field.encode_name)
    walk.active.discard(cls)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    if config.forbid_unknown_fields:
        out["additionalProperties"] = False
    return out


def _scan(annotation: object, walk: _Walk, where: str) -> None:
    """Record Literal orders and refuse ``Annotated`` metadata msgspec would ignore."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(annotation)
        for extra in extras:
            if not isinstance(extra, msgspec.Meta):
                raise StructSchemaError(
                    f"{where}: Annotated metadata {_show(extra)} is not enforced here; "
                    "use msgspec.Meta (or pydantic parameters, with pydantic installed)"
                )
        _scan(inner, walk, where)
        return
    if origin is typing.Literal:
        values = tuple(v for v in typing.get_args(annotation) if v is not None)
        walk.orders.setdefault(frozenset((type(v), v) for v in values), values)
        return
    for arg in typing.get_args(annotation):
        if not isinstance(arg, str | int | float | bool | None):
            _scan(arg, walk, where)


def _show(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _field_schema(info: mi.Type, default: object, doc: str | None, walk: _Walk) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    info = _unwrap(info, extra)
    nullable = False
    if isinstance(info, mi.UnionType):
        rest = [t for t in info.types if not isinstance(t, mi.NoneType)]
        nullable = len(rest) < len(info.types)
        if len(rest) > 1:
            return _annotate(_union(rest, nullable, walk), extra, doc, default)
        info = _unwrap(rest[0], extra)
    json_type, enum, tail, nullable = _shape(info, walk, nullable)
    out: dict[str, Any] = {} if json_type is None else {"type": json_type}
    if nullable and json_type is not None:
        out["type"] = [json_type, "null"]
    if enum is not None:
        out["enum"] = [*enum, None] if nullable else enum
    out.update(tail)
    return _annotate(out, extra, doc, default)


def _annotate(
    out: dict[str, Any], extra: dict[str, Any], doc: str | None, default: object
) -> dict[str, Any]:
    """Put description, default and ``Meta`` extras on a property, in schema order."""
    ordered: dict[str, Any] = {}
    if "type" in out:
        ordered["type"] = out.pop("type")
    description = extra.pop("description", doc)
    if description:
        ordered["description"] = description
    if "enum" in out:
        ordered["enum"] = out.pop("enum")
    if default is not NODEFAULT:
        try:
            ordered["default"] = thaw(msgspec.to_builtins(default))
        except (TypeError, ValueError):
            pass
    ordered.update(out)
    ordered.update(extra)
    return ordered


def _union(members: list[mi.Type], nullable: bool, walk: _Walk) -> dict[str, Any]:
    """A union of scalars: ``{"type": [...]}`` when plain, else ``anyOf``."""
    schemas: list[dict[str, Any]] = []
    for member in members:
        if not isinstance(_unwrap(member, {}), _SCALARS + tuple(_FORMATS)):
            raise _NoSchemaError
        schemas.append(_field_schema(member, NODEFAULT, None, walk))
    if all(set(s) == {"type"} and isinstance(s["type"], str) for s in schemas):
        types = list(dict.fromkeys(s["type"] for s in schemas))
        if "number" in types and "integer" in types:
            types.remove("integer")
        return {"type": [*types, "null"] if nullable else types}
    return {"anyOf": [*schemas, {"type": "null"}] if nullable else schemas}


def _unwrap(info: mi.Type, extra: dict[str, Any]) -> mi.Type:
    while isinstance(info, mi.Metadata):
        if info.extra_json_schema:
            extra.update(info.extra_json_schema)
        info = info.type
    return info


def _shape(
    info: mi.Type, walk: _Walk, nullable: bool
) -> tuple[str | None, list[Any] | None, dict[str, Any], bool]:
    """Map one (unwrapped) type: ``(json type, enum, other keys, nullable)``."""
    if isinstance(info, mi.StrType):
        tail = _constraints(info, "minLength", "maxLength", "pattern")
        return "string", None, tail, nullable
    if type(info) in _FORMATS:
        tail = {"format": _FORMATS[type(info)]}
        return "string", None, tail, nullable
    if isinstance(info, mi.BoolType):
        return "boolean", None, {}, nullable
    if isinstance(info, mi.IntType | mi.FloatType):
        kind = "integer" if isinstance(info, mi.IntType) else "number"
        tail = _constraints(
            info, "exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum", "multipleOf"
        )
        return kind, None, tail, nullable
    if isinstance(info, mi.LiteralType | mi.EnumType):
        return _enum_shape(info, walk, nullable)
    if isinstance(info, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        tail = {}
        item = _unwrap(info.item_type, {})
        if not isinstance(item, mi.AnyType):  # the item's own Meta is kept (a format, ...)
            tail["items"] = _field_schema(info.item_type, NODEFAULT, None, walk)
        tail.update(_constraints(info, "minItems", "maxItems"))
        return "array", None, tail, nullable
    if isinstance(info, mi.DictType):
        if not isinstance(_unwrap(info.key_type, {}), mi.StrType):
            raise _NoSchemaError
        tail = {}
        value = _unwrap(info.value_type, {})
        if not isinstance(value, mi.AnyType):
            tail["additionalProperties"] = _field_schema(info.value_type, NODEFAULT, None, walk)
        tail.update(_constraints(info, "minProperties", "maxProperties"))
        return "object", None, tail, nullable
    if isinstance(info, mi.StructType):
        docs = walk.field_docs(info.cls)
        schema = _struct_object(info.cls, walk, docs, "field", top=False)
        del schema["type"]
        return "object", None, schema, nullable
    if isinstance(info, mi.AnyType):
        return None, None, {}, nullable
    raise _NoSchemaError


def _enum_shape(
    info: mi.LiteralType | mi.EnumType, walk: _Walk, nullable: bool
) -> tuple[str | None, list[Any] | None, dict[str, Any], bool]:
    values: list[Any]
    if isinstance(info, mi.LiteralType):
        declared = walk.orders.get(frozenset((type(v), v) for v in info.values))
        values = list(info.values if declared is None else declared)
    else:
        values = [member.value for member in info.cls]
    if None in values:
        nullable = True
        values = [v for v in values if v is not None]
    kind: str | None
    if values and all(isinstance(v, str) for v in values):
        kind = "string"
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        kind = "integer"
    elif values and all(isinstance(v, bool) for v in values):
        kind = "boolean"
    elif values and all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
        kind = None  # a Literal of strings and integers: the enum alone says it
    else:
        raise _NoSchemaError
    return kind, values, {}, nullable


_CONSTRAINT_ATTRS = {
    "minLength": "min_length",
    "maxLength": "max_length",
    "pattern": "pattern",
    "exclusiveMinimum": "gt",
    "minimum": "ge",
    "exclusiveMaximum": "lt",
    "maximum": "le",
    "multipleOf": "multiple_of",
    "minItems": "min_length",
    "maxItems": "max_length",
    "minProperties": "min_length",
    "maxProperties": "max_length",
}


def _constraints(info: mi.Type, *keys: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in keys:
        value = getattr(info, _CONSTRAINT_ATTRS[key], None)
        if value is not None:
            out[key] = value
    return out
