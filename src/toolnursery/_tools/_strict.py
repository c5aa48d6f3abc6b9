"""Provider-strict schemas: the subset a strict function-calling mode decodes against.

Strict modes (OpenAI's ``strict: true`` tools, for one) constrain the model's output to
the schema, and take only a subset of JSON Schema: every object lists all its
properties as required and allows no others, an optional property is expressed as
nullable instead, and a handful of keywords are not accepted at all.
:func:`strict_json_schema` rewrites a tool's parameter schema into that form, or says
which keyword stops it; :func:`from_strict_arguments` turns arguments a model sent
against the strict form back into the original form (a ``null`` for a property that
was optional and not nullable means "absent").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from .._core._errors import StrictSchemaError

__all__ = ["from_strict_arguments", "strict_json_schema"]

UNSUPPORTED: Final = frozenset(
    {
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
    }
)
"""Keywords strict mode does not take (the schema is refused, naming the keyword)."""

LOCAL_ONLY: Final = frozenset({"uniqueItems", "minLength", "maxLength"})
"""Constraints strict mode does not take but toolnursery checks when the call arrives:
left out of the strict schema (the provider does not enforce them; the tool does)."""

FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats strict mode takes."""

_DROPPED: Final = ("default", "title", *sorted(LOCAL_ONLY))
"""Annotations strict mode has no use for (every property is sent), and the
:data:`LOCAL_ONLY` constraints, removed."""


def strict_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return the provider-strict form of a tool's parameter schema (a new dict).

    At every object: ``additionalProperties`` is ``false``, ``required`` lists every
    property, and each property that was optional becomes nullable (``"type": [...,
    "null"]``, ``None`` added to an ``enum``, or ``{"type": "null"}`` added to an
    ``anyOf``) — a model then sends ``null`` for "not given", which
    :func:`from_strict_arguments` turns back into an absent key. ``default`` and
    ``title`` are dropped, and so are ``minLength``, ``maxLength`` and ``uniqueItems``
    (:data:`LOCAL_ONLY`): the tool's own validation still enforces them. ``$defs`` are rewritten in place; ``$ref`` stays.

    Args:
        schema: an object-rooted JSON Schema, e.g. a definition's ``parameters``.

    Returns:
        The strict schema; ``schema`` is not modified.

    Raises:
        StrictSchemaError: the schema uses something strict mode cannot take — a
            keyword in :data:`UNSUPPORTED`, an ``additionalProperties`` other than
            ``false`` (a ``dict[str, T]``), an object without ``properties``, a
            schema with no ``type`` (``Any``), a ``format`` outside :data:`FORMATS`
            — naming the keyword and its path (``#/properties/tags``).
    """
    out = copy.deepcopy(dict(schema))
    if _types(out) != {"object"}:
        raise StrictSchemaError(
            'strict mode needs an object-rooted schema ("type": "object")', keyword="type"
        )
    _strict(out, "#")
    for name, sub in (out.get("$defs") or {}).items():
        _strict(sub, f"#/$defs/{name}")
    return out


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _strict(schema: dict[str, Any], path: str) -> None:
    for keyword in schema:
        if keyword in UNSUPPORTED:
            raise StrictSchemaError(
                f'strict mode does not take "{keyword}" (at {path})', keyword=keyword, path=path
            )
    for keyword in _DROPPED:
        schema.pop(keyword, None)
    fmt = schema.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise StrictSchemaError(
            f'strict mode does not take "format": "{fmt}" (at {path})', keyword="format", path=path
        )
    if not ({"type", "enum", "const", "anyOf", "$ref"} & set(schema)):
        raise StrictSchemaError(
            f'strict mode needs a "type" (at {path}: any value is allowed)',
            keyword="type",
            path=path,
        )
    for i, member in enumerate(schema.get("anyOf") or ()):
        _strict(member, f"{path}/anyOf/{i}")
    if "object" in _types(schema):
        _object(schema, path)
    items = schema.get("items")
    if isinstance(items, dict):
        _strict(items, f"{path}/items")
    for i, item in enumerate(schema.get("prefixItems") or ()):
        _strict(item, f"{path}/prefixItems/{i}")


def _object(schema: dict[str, Any], path: str) -> None:
    extra = schema.get("additionalProperties", False)
    if extra is not False:
        raise StrictSchemaError(
            f'strict mode needs "additionalProperties": false (at {path}: a mapping of '
            "arbitrary keys cannot be strict)",
            keyword="additionalProperties",
            path=path,
        )
    properties = schema.get("properties")
    if properties is None and path == "#":
        properties = schema["properties"] = {}  # a tool without parameters
    if not isinstance(properties, dict):
        raise StrictSchemaError(
            f'strict mode needs "properties" on every object (at {path}: a free-form object)',
            keyword="properties",
            path=path,
        )
    required = set(schema.get("required") or ())
    for name, sub in properties.items():
        _strict(sub, f"{path}/properties/{name}")
        if name not in required:
            properties[name] = _nullable(sub)
    schema["additionalProperties"] = False
    schema["required"] = list(properties)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    if "anyOf" in schema:
        members = schema["anyOf"]
        if not any(_types(m) == {"null"} for m in members):
            members.append({"type": "null"})
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        kind.append("null")
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    if "const" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    return schema


def from_strict_arguments(schema: Mapping[str, Any], arguments: Any) -> Any:
    """Turn arguments sent against ``strict_json_schema(schema)`` back into ``schema``'s form.

    A ``null`` for a property that ``schema`` (the original) has as optional and not
    nullable is removed, at every object level the schema describes (nested
    properties, array items and tuple positions, the member of an ``anyOf`` the value
    is, ``$ref`` into ``$defs``); everything else is kept — a ``null`` the original
    takes (a required ``int | None``) too.

    Args:
        schema: the original (non-strict) schema.
        arguments: the decoded arguments.

    Returns:
        The arguments: ``arguments`` itself when nothing was removed, else a copy
        (containers are copied only along the way to a removal).
    """
    defs = schema.get("$defs") or {}
    return _restore(schema, arguments, defs, 0)


_MAX_DEPTH: Final = 64


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """``schema`` with its ``$ref`` (into ``$defs``) followed; itself if there is none."""
    for _ in range(_MAX_DEPTH - depth):
        ref = schema.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
            return schema
        target = defs.get(ref.removeprefix("#/$defs/"))
        if not isinstance(target, Mapping):
            return schema
        schema = target
    return schema


def _restore(schema: Mapping[str, Any], value: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH or value is None:
        return value
    schema = _resolve(schema, defs, depth)
    members = schema.get("anyOf")
    if isinstance(members, list | tuple):
        member = _member(members, value, defs, depth)
        if member is not None:
            return _restore(member, value, defs, depth + 1)
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        properties = schema["properties"]
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = properties.get(key)
            if not isinstance(sub, Mapping):
                out[key] = item
            elif item is None and key not in required and not _allows_null(sub, defs, depth):
                changed = True
            else:
                out[key] = restored = _restore(sub, item, defs, depth + 1)
                changed = changed or restored is not item
        return out if changed else value
    if isinstance(value, list | tuple):
        return _restore_items(schema, value, defs, depth)
    return value


def _restore_items(
    schema: Mapping[str, Any],
    value: list[Any] | tuple[Any, ...],
    defs: Mapping[str, Any],
    depth: int,
) -> Any:
    prefix = schema.get("prefixItems")
    prefix = prefix if isinstance(prefix, list | tuple) else ()
    items = schema.get("items")
    elements: list[Any] = []
    for i, item in enumerate(value):
        sub = prefix[i] if i < len(prefix) else items
        elements.append(_restore(sub, item, defs, depth + 1) if isinstance(sub, Mapping) else item)
    if all(a is b for a, b in zip(elements, value, strict=True)):
        return value
    return elements


_KIND: Final = {dict: "object", list: "array", tuple: "array", str: "string", bool: "boolean"}


def _member(
    members: Any, value: Any, defs: Mapping[str, Any], depth: int
) -> Mapping[str, Any] | None:
    """The ``anyOf`` member ``value`` was sent as.

    Strict mode sends every property of an object, so an object is the member whose
    properties are exactly its keys; otherwise the first member whose type takes it.
    """
    candidates = [
        m
        for m in (_resolve(m, defs, depth) for m in members if isinstance(m, Mapping))
        if _takes(m, value)
    ]
    if isinstance(value, dict):
        keys = set(value)
        for member in candidates:
            properties = member.get("properties")
            if isinstance(properties, Mapping) and set(properties) == keys:
                return member
    return candidates[0] if candidates else None


def _takes(schema: Mapping[str, Any], value: Any) -> bool:
    types = _types(schema)
    if not types:
        return True  # no type (an enum, a const, a nested anyOf): let it be tried
    kind = _KIND.get(type(value))
    if kind is None and isinstance(value, int | float):
        kind = "integer" if isinstance(value, int) or float(value).is_integer() else "number"
        return kind in types or "number" in types
    return kind in types


def _allows_null(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> bool:
    if depth > _MAX_DEPTH:
        return True  # cannot tell: keep the null, the tool's own check reports it
    schema = _resolve(schema, defs, depth)
    if "null" in _types(schema):
        return True
    if None in (schema.get("enum") or ()):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if any(_allows_null(m, defs, depth + 1) for m in schema.get("anyOf") or ()):
        return True
    return not ({"type", "enum", "const", "anyOf", "$ref"} & set(schema))
