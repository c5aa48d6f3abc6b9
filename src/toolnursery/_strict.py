"""Arguments sent against a provider-strict schema, back in the original schema's form.

Strict function-calling modes (OpenAI's ``strict: true``) need every property required
and optional ones nullable; :func:`toolnursery.providers.strict_parameters` rewrites a
schema so. A model then sends ``null`` for "not given": :func:`from_strict_arguments`
turns such arguments back into what the original schema expects — a ``null`` is
removed only where the original had the property optional *and* not nullable, so a
meaningful ``null`` (an ``int | None`` parameter) survives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["from_strict_arguments"]


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def from_strict_arguments(schema: Mapping[str, Any], arguments: Any) -> Any:
    """Turn arguments sent against ``strict_json_schema(schema)`` back into ``schema``'s form.

    A ``null`` for a property that ``schema`` (the original) has as optional and not
    nullable is removed, at every object level the schema describes (nested
    properties, array items, ``$ref`` into ``$defs``); everything else is kept.

    Args:
        schema: the original (non-strict) schema.
        arguments: the decoded arguments.

    Returns:
        The arguments: ``arguments`` itself when nothing was removed, else a copy
        (containers are copied only along the way to a removal).
    """
    defs = schema.get("$defs") or {}
    return _restore(schema, arguments, defs, 0)


def _restore(schema: Mapping[str, Any], value: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > 64:
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        return value if target is None else _restore(target, value, defs, depth + 1)
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        properties = schema["properties"]
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = properties.get(key)
            if not isinstance(sub, Mapping):
                out[key] = item
            elif item is None and key not in required and not _allows_null(sub, defs):
                changed = True
            else:
                out[key] = restored = _restore(sub, item, defs, depth + 1)
                changed = changed or restored is not item
        return out if changed else value
    items = schema.get("items")
    if isinstance(value, list | tuple) and isinstance(items, Mapping):
        elements = [_restore(items, item, defs, depth + 1) for item in value]
        if all(a is b for a, b in zip(elements, value, strict=True)):
            return value
        return elements
    return value


def _allows_null(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    if "null" in _types(schema):
        return True
    if None in (schema.get("enum") or ()):
        return True
    if any(_allows_null(m, defs) for m in schema.get("anyOf") or ()):
        return True
    return not ({"type", "enum", "const", "anyOf", "$ref"} & set(schema))
