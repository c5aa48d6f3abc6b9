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

:func:`struct_schema` derives the same two things — an inlined JSON Schema and compiled
checks with the same violation texts — from a frozen :class:`msgspec.Struct`, for
``define_tool`` and ``@tool``. What the schema advertises is what is enforced: a field
type with no JSON Schema form here is rejected at definition time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict

import msgspec
import msgspec.inspect as mi
from msgspec import NODEFAULT, UNSET

from ._errors import StructSchemaError
from ._json import thaw

__all__ = [
    "SchemaProp",
    "SchemaSpec",
    "SchemaType",
    "compile_validator",
    "schema_spec_to_json_schema",
    "validate_args",
]

SchemaType: TypeAlias = Literal["string", "number", "boolean", "object", "array"]
"""The property types the DSL knows."""


class SchemaProp(TypedDict, total=False):
    """One property of a :data:`SchemaSpec`.

    Attributes:
        type: the JSON type of the value.
        required: ``True`` makes the property required (absent means optional).
        description: model-facing text; an empty string is omitted from the schema.
        enum: the allowed values (strings), checked on ``string``, ``number`` and
            ``boolean`` properties; ``[]`` rejects every value.
        default: a model-visible annotation only — validation never applies it.
        properties: the nested spec of an ``object`` property (ignored on other types).
        items: the element schema of an ``array`` property (ignored on other types).
    """

    type: Required[SchemaType]
    required: NotRequired[bool]
    description: NotRequired[str]
    enum: NotRequired[Sequence[str]]
    default: NotRequired[Any]
    properties: NotRequired[Mapping[str, SchemaProp]]
    items: NotRequired[SchemaProp]


SchemaSpec: TypeAlias = dict[str, SchemaProp]
"""The author-facing parameter schema: argument name → :class:`SchemaProp`."""

Validator: TypeAlias = Callable[[object], list[str]]
"""A compiled validator: arguments → violations (``[]`` when they conform)."""

NOT_AN_OBJECT = '"arguments" must be an object'
"""The single violation reported for arguments that are not a JSON object."""

_SCHEMA_TYPES = ("string", "number", "boolean", "object", "array")
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
    order ``type, description, enum, default, properties, required | items``;
    ``description`` is emitted only when non-empty, ``enum`` whenever present (even
    ``[]``), ``default`` whenever present (even ``None``). ``properties`` is honoured
    only on ``object`` properties and ``items`` only on ``array`` ones; misplaced ones
    are dropped. The result shares no mutable object with ``spec``.

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
    out: dict[str, Any] = {"type": kind}
    description = prop.get("description")
    if description is not None and description != "":
        out["description"] = description
    enum = prop.get("enum")
    if enum is not None:
        out["enum"] = thaw(list(enum))
    if "default" in prop:
        out["default"] = thaw(prop["default"])
    if kind == "object":
        properties = prop.get("properties")
        if properties is not None:
            _object_json(properties, out)
    elif kind == "array":
        items = prop.get("items")
        if items is not None:
            out["items"] = _prop_json(items)
    return out


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

    ``kind`` is a DSL type, or one of the extra kinds ``define_tool`` derives from
    Struct fields (``integer``, ``any``). ``nullable`` lets ``None`` through (a
    Struct's ``T | None``). ``enum`` is checked only on scalar kinds; ``props``
    only on ``object``; ``items`` only on ``array``; ``values`` (every value of a
    mapping) only on ``object`` nodes without ``props``.
    """

    __slots__ = (
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
    ) -> None:
        self.kind = kind
        self.test, noun = _TESTS[kind]
        self.nullable = nullable
        self.type_message = f" must be {noun} or null" if nullable else f" must be {noun}"
        scalar = kind not in ("object", "array", "any")
        self.enum_message: str | None = None
        self.enum_strings: frozenset[str] = frozenset()
        self.enum_others: tuple[object, ...] = ()
        if enum is not None and scalar:
            if kind == "integer":
                # Literal/IntEnum members are ints; msgspec will not widen 2.0 to them.
                self.test = _is_int
            self.enum_message = " must be one of " + _compact(list(enum))
            self.enum_strings = frozenset(e for e in enum if type(e) is str)
            self.enum_others = tuple(e for e in enum if type(e) is not str)
        self.props = props if kind == "object" else None
        self.items = items if kind == "array" else None
        self.values = values if kind == "object" and props is None else None
        self.plain = scalar and self.enum_message is None

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
    if not node.test(value):
        out.append(f'"{path}"{node.type_message}')
        return
    if node.enum_message is not None:
        if not node.in_enum(value):
            out.append(f'"{path}"{node.enum_message}')
    elif node.props is not None:
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
    return validator_for(_compile_props(spec, set()))


def _compile_props(spec: Mapping[str, Any], active: set[int]) -> Props:
    if not isinstance(spec, Mapping):
        raise TypeError(f"a SchemaSpec must be a mapping, not {type(spec).__name__}")
    if id(spec) in active:
        raise ValueError("a SchemaSpec must not contain itself")
    active.add(id(spec))
    props = []
    for key, prop in spec.items():
        node = _compile_prop(prop, active)
        props.append((key, _is_required(prop), node))
    active.discard(id(spec))
    return tuple(props)


def _compile_prop(prop: Mapping[str, Any], active: set[int]) -> Node:
    if not isinstance(prop, Mapping):
        raise TypeError(f"a SchemaProp must be a mapping, not {type(prop).__name__}")
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _SCHEMA_TYPES:
        raise ValueError(f"unreachable variant in validateArgs: {_compact(kind)}")
    enum = prop.get("enum")
    if kind == "object":
        properties = prop.get("properties")
        if properties is None:
            return Node(kind)
        return Node(kind, props=_compile_props(properties, active))
    if kind == "array":
        items = prop.get("items")
        if items is None:
            return Node(kind)
        if id(items) in active:
            raise ValueError("a SchemaProp must not contain itself")
        active.add(id(items))
        node = Node(kind, items=_compile_prop(items, active))
        active.discard(id(items))
        return node
    return Node(kind, enum=None if enum is None else list(enum))


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


# --- Struct parameters -------------------------------------------------------------------


class _NoSchemaError(Exception):
    """Raised internally when a type has no JSON Schema form here."""


FieldDocs: TypeAlias = Callable[[type], Mapping[str, str]]
"""Where nested Structs' field descriptions come from (their docstrings)."""


def struct_schema(
    cls: type[msgspec.Struct], descriptions: Mapping[str, str], noun: str, field_docs: FieldDocs
) -> tuple[dict[str, Any], Props]:
    """Derive the inlined JSON Schema (no ``$ref``) and the compiled props of a Struct.

    Args:
        cls: a frozen Struct subclass (nested Structs must be frozen too).
        descriptions: the top-level fields' descriptions (by attribute name).
        noun: what a top-level field is called in messages (``field``, ``parameter``).
        field_docs: gives a nested Struct's field descriptions.

    Returns:
        ``(schema, props)``; ``validator_for(props)`` validates arguments for ``cls``.

    Raises:
        StructSchemaError: a Struct is not frozen, is ``array_like`` or recursive, or
            a field's type has no form in the schema.
    """
    return _struct_object(cls, set(), descriptions, noun, field_docs, top=True)


def _struct_object(
    cls: type[msgspec.Struct],
    active: set[type],
    descriptions: Mapping[str, str],
    noun: str,
    field_docs: FieldDocs,
    *,
    top: bool,
) -> tuple[dict[str, Any], Props]:
    config = cls.__struct_config__
    if not config.frozen:
        raise StructSchemaError(
            f"parameters Struct {cls.__name__} must be declared with frozen=True"
        )
    if config.array_like:
        raise StructSchemaError(f"parameters Struct {cls.__name__} must not be array_like")
    if cls in active:
        raise StructSchemaError(
            f"parameters Struct {cls.__name__} is recursive; it cannot be inlined"
        )
    active.add(cls)
    where_prefix = "" if top else f"{cls.__name__}."
    properties: dict[str, Any] = {}
    required: list[str] = []
    props: list[tuple[str, bool, Node]] = []
    if config.tag_field is not None and isinstance(config.tag, str | int):
        kind = "string" if isinstance(config.tag, str) else "integer"
        properties[config.tag_field] = {"type": kind, "enum": [config.tag]}
        props.append((config.tag_field, False, Node(kind, enum=[config.tag])))
    for field in msgspec.structs.fields(cls):
        try:
            info = mi.type_info(field.type)
            schema, node = _field_schema(
                info, field.default, descriptions.get(field.name), active, field_docs
            )
        except (_NoSchemaError, TypeError, ValueError):
            raise StructSchemaError(
                f'{noun} "{where_prefix}{field.name}" has an unsupported type: {_show(field.type)}'
            ) from None
        properties[field.encode_name] = schema
        if field.required:
            required.append(field.encode_name)
        props.append((field.encode_name, field.required, node))
    active.discard(cls)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    if config.forbid_unknown_fields:
        out["additionalProperties"] = False
    return out, tuple(props)


def _show(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _field_schema(
    info: mi.Type,
    default: object,
    doc: str | None,
    active: set[type],
    field_docs: FieldDocs,
) -> tuple[dict[str, Any], Node]:
    extra: dict[str, Any] = {}
    info = _unwrap(info, extra)
    nullable = False
    if isinstance(info, mi.UnionType):
        rest = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(rest) != 1 or len(rest) == len(info.types):
            raise _NoSchemaError
        nullable = True
        info = _unwrap(rest[0], extra)
    json_type, enum, tail, node, nullable = _shape(info, active, nullable, field_docs)
    out: dict[str, Any] = {} if json_type is None else {"type": json_type}
    if nullable and json_type is not None:
        out["type"] = [json_type, "null"]
    description = extra.pop("description", doc)
    if description:
        out["description"] = description
    if enum is not None:
        out["enum"] = [*enum, None] if nullable else enum
    if default is not NODEFAULT:
        try:
            out["default"] = thaw(msgspec.to_builtins(default))
        except (TypeError, ValueError):
            pass
    out.update(tail)
    out.update(extra)
    return out, node


def _unwrap(info: mi.Type, extra: dict[str, Any]) -> mi.Type:
    while isinstance(info, mi.Metadata):
        if info.extra_json_schema:
            extra.update(info.extra_json_schema)
        info = info.type
    return info


def _shape(
    info: mi.Type, active: set[type], nullable: bool, field_docs: FieldDocs
) -> tuple[str | None, list[Any] | None, dict[str, Any], Node, bool]:
    """Map one (unwrapped) type: ``(json type, enum, other keys, node, nullable)``."""
    if isinstance(info, mi.StrType):
        tail = _constraints(info, "minLength", "maxLength", "pattern")
        return "string", None, tail, Node("string", nullable=nullable), nullable
    if isinstance(info, mi.BoolType):
        return "boolean", None, {}, Node("boolean", nullable=nullable), nullable
    if isinstance(info, mi.IntType | mi.FloatType):
        kind = "integer" if isinstance(info, mi.IntType) else "number"
        tail = _constraints(
            info, "exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum", "multipleOf"
        )
        return kind, None, tail, Node(kind, nullable=nullable), nullable
    if isinstance(info, mi.LiteralType | mi.EnumType):
        if isinstance(info, mi.LiteralType):
            values = list(info.values)
        else:
            values = [member.value for member in info.cls]
        if None in values:
            nullable = True
            values = [v for v in values if v is not None]
        if values and all(isinstance(v, str) for v in values):
            kind = "string"
        elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            kind = "integer"
        else:
            raise _NoSchemaError
        return kind, values, {}, Node(kind, enum=values, nullable=nullable), nullable
    if isinstance(info, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        tail = {}
        item = _unwrap(info.item_type, {})
        items: Node | None = None
        if not isinstance(item, mi.AnyType):
            tail["items"], items = _field_schema(item, NODEFAULT, None, active, field_docs)
        tail.update(_constraints(info, "minItems", "maxItems"))
        return "array", None, tail, Node("array", items=items, nullable=nullable), nullable
    if isinstance(info, mi.DictType):
        if not isinstance(_unwrap(info.key_type, {}), mi.StrType):
            raise _NoSchemaError
        tail = {}
        value = _unwrap(info.value_type, {})
        value_node: Node | None = None
        if not isinstance(value, mi.AnyType):
            tail["additionalProperties"], value_node = _field_schema(
                value, NODEFAULT, None, active, field_docs
            )
        tail.update(_constraints(info, "minProperties", "maxProperties"))
        return "object", None, tail, Node("object", values=value_node, nullable=nullable), nullable
    if isinstance(info, mi.StructType):
        schema, props = _struct_object(
            info.cls, active, field_docs(info.cls), "field", field_docs, top=False
        )
        del schema["type"]
        return "object", None, schema, Node("object", props=props, nullable=nullable), nullable
    if isinstance(info, mi.AnyType):
        return None, None, {}, Node("any"), nullable
    raise _NoSchemaError


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
