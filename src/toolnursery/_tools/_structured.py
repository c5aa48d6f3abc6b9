"""The structured-output schema subset: assert a schema is inside it, validate values.

A structured-output schema demands a machine-readable result from a model (a
subagent's answer, a workflow step). It is deliberately *not* full JSON Schema: it
travels verbatim to the model as a forced tool's ``parameters`` and the produced
value is validated here, so every accepted keyword is one :func:`validate_structured_value`
enforces and :func:`assert_supported_output_schema` rejects everything else loudly.

The subset: an object-rooted tree of nodes, each with one ``type`` (``object``,
``array``, ``string``, ``number``, ``integer``, ``boolean``, ``null``) and only
``properties`` / ``required`` / ``additionalProperties`` (objects), ``items``
(arrays), ``enum`` / ``const`` (scalars), plus the annotations ``description``,
``title`` (strings) and ``default``, ``examples`` (JSON data).

Python reading of the JSON rules: a JSON object is a ``dict`` (subclasses included;
a key is looked up with ``dict``'s own methods, never a subclass override), an array
is a ``list`` or ``tuple``; ``bool`` is never a number; ``1.0`` is an integer; NaN
and infinities are not numbers; anything else (a ``set``, a ``datetime``, a
``MappingProxyType``, a class instance) is not JSON structure. A key whose value is
:data:`msgspec.UNSET` counts as absent. Both walks use an explicit stack, so a
schema or value nested thousands of levels deep never reaches the recursion limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .._core._errors import OutputSchemaError

__all__ = ["assert_supported_output_schema", "validate_structured_value"]

_SCHEMA_TYPES: Final = ("object", "array", "string", "number", "integer", "boolean", "null")
_SCALAR_TYPES: Final = frozenset(_SCHEMA_TYPES[2:])
_CONSTRAINTS: Final = frozenset(
    ("type", "properties", "required", "additionalProperties", "items", "enum", "const")
)
_ANNOTATIONS: Final = frozenset(("description", "title", "default", "examples"))
# The fixed order misplaced keywords are reported in, with the types each belongs to.
_PLACEMENT: Final = (
    ("properties", frozenset(("object",))),
    ("required", frozenset(("object",))),
    ("additionalProperties", frozenset(("object",))),
    ("items", frozenset(("array",))),
    ("enum", _SCALAR_TYPES),
    ("const", _SCALAR_TYPES),
)
_TYPE_LIST: Final = "/".join(_SCHEMA_TYPES)
_ROOT_NOT_OBJECT: Final = 'schema.type must be "object" (structured output is object-rooted)'

_ABSENT: Final = msgspec.UNSET
"""Sentinel for "no such key"; an explicit ``UNSET`` value reads the same way."""

_get = dict.get
_contains = dict.__contains__
_items = dict.items
_keys = dict.keys


def _field(node: dict[Any, Any], key: str) -> Any:
    # dict.get on the base class: a subclass's __missing__/get cannot invent keys.
    return _get(node, key, _ABSENT)


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_scalar(value: object) -> bool:
    """Whether ``value`` may be an ``enum`` member or a ``const``."""
    if value is None or isinstance(value, str | bool | int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _is_json_data(value: object) -> bool:
    """Whether ``value`` is JSON data: scalars, arrays and string-keyed dicts of them.

    Shared sub-values (a DAG) are fine; a container inside itself is not.
    """
    stack: list[tuple[bool, Any]] = [(False, value)]
    ancestors: set[int] = set()
    while stack:
        leaving, item = stack.pop()
        if leaving:
            ancestors.discard(id(item))
            continue
        if _is_scalar(item):
            continue
        if isinstance(item, dict):
            if not _is_schema_map(item):
                return False
            children: Any = dict.values(item)
        elif isinstance(item, list | tuple):
            children = item
        else:
            return False
        if id(item) in ancestors:
            return False
        ancestors.add(id(item))
        stack.append((True, item))
        stack.extend((False, child) for child in children)
    return True


def assert_supported_output_schema(schema: object) -> None:
    """Check that ``schema`` is an object-rooted schema inside the structured subset.

    Every violation in the tree is collected, with paths rooted at ``schema``: per
    node, unknown keywords and annotations that are not JSON data in the node's key
    order, then ``description``/``title``, then ``type``, then keywords misplaced for
    the type (``properties``, ``required``, ``additionalProperties``, ``items``,
    ``enum``, ``const``), then the type's own checks (each property schema in key
    order, ``required``, ``additionalProperties``; ``items``; ``enum``, ``const``).
    The object-root violation is reported only when nothing else is wrong.

    Args:
        schema: the candidate schema, typically a decoded JSON object.

    Raises:
        OutputSchemaError: the schema uses anything outside the subset; its
            ``violations`` list every problem, e.g.
            ``schema.properties.a.pattern is not a supported keyword (...)``.
    """
    violations = _schema_violations(schema)
    if not violations and isinstance(schema, dict) and _field(schema, "type") != "object":
        violations.append(_ROOT_NOT_OBJECT)
    if violations:
        raise OutputSchemaError(violations)


def _schema_violations(root: object) -> list[str]:
    out: list[str] = []
    # Tasks: ("node", node, path) | ("tail", node, path) | ("leave", node, "").
    stack: list[tuple[str, Any, str]] = [("node", root, "schema")]
    ancestors: set[int] = set()
    while stack:
        task, node, path = stack.pop()
        if task == "leave":
            ancestors.discard(id(node))
        elif task == "tail":
            _object_tail(node, path, out)
        elif not isinstance(node, dict):
            out.append(f"{path} must be a schema object")
        elif id(node) in ancestors:
            out.append(f"{path} is circular")
        else:
            ancestors.add(id(node))
            stack.append(("leave", node, ""))
            _check_node(node, path, out, stack)
    return out


def _check_node(
    node: dict[Any, Any], path: str, out: list[str], stack: list[tuple[str, Any, str]]
) -> None:
    for key, value in _items(node):
        if value is _ABSENT or key in _CONSTRAINTS:
            continue
        if key in _ANNOTATIONS:
            if not _is_json_data(value):
                out.append(f"{path}.{key} annotation must be JSON data")
            continue
        out.append(
            f"{path}.{key} is not a supported keyword (subset: type/properties/required/"
            "additionalProperties/items/enum/const + annotations)"
        )
    for key in ("description", "title"):
        value = _field(node, key)
        if value is not _ABSENT and not isinstance(value, str):
            out.append(f"{path}.{key} must be a string")

    kind = _field(node, "type")
    if not isinstance(kind, str) or kind not in _SCHEMA_TYPES:
        if isinstance(kind, list | tuple):
            out.append(f"{path}.type must be a single type string (type arrays are not supported)")
        else:
            out.append(f"{path}.type must be one of {_TYPE_LIST}")
        return
    for key, types in _PLACEMENT:
        if kind not in types and _field(node, key) is not _ABSENT:
            out.append(f'{path}.{key} is not supported on type "{kind}"')

    if kind == "object":
        # The tail (required, additionalProperties) runs after every property subtree.
        stack.append(("tail", node, path))
        properties = _field(node, "properties")
        if properties is _ABSENT:
            return
        if not _is_schema_map(properties):
            out.append(f"{path}.properties must be an object of schemas")
            return
        for key, child in reversed(list(_items(properties))):
            stack.append(("node", child, f"{path}.properties.{key}"))
    elif kind == "array":
        items = _field(node, "items")
        if items is not _ABSENT:
            stack.append(("node", items, f"{path}.items"))
    else:
        allowed = _field(node, "enum")
        if allowed is not _ABSENT and not (
            isinstance(allowed, list | tuple) and allowed and all(map(_is_scalar, allowed))
        ):
            out.append(f"{path}.enum must be a non-empty array of scalars")
        const = _field(node, "const")
        if const is not _ABSENT and not _is_scalar(const):
            out.append(f"{path}.const must be a scalar")


def _is_schema_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(key, str) for key in _keys(value))


def _object_tail(node: dict[Any, Any], path: str, out: list[str]) -> None:
    required = _field(node, "required")
    if required is not _ABSENT:
        if not isinstance(required, list | tuple) or not all(
            isinstance(name, str) for name in required
        ):
            out.append(f"{path}.required must be an array of strings")
        else:
            properties = _field(node, "properties")
            declared = properties if _is_schema_map(properties) else {}
            for name in required:
                if not _contains(declared, name):
                    out.append(f'{path}.required names "{name}" which is not in properties')
    extra = _field(node, "additionalProperties")
    if extra is not _ABSENT and not isinstance(extra, bool):
        out.append(f"{path}.additionalProperties must be a boolean")


# --- value validation ------------------------------------------------------------


def _is_number(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_SCALAR_CHECKS: Final[dict[str, tuple[Callable[[object], bool], str]]] = {
    "string": (lambda v: isinstance(v, str), "must be a string"),
    "number": (_is_number, "must be a finite number"),
    "integer": (_is_integer, "must be an integer"),
    "boolean": (lambda v: isinstance(v, bool), "must be a boolean"),
    "null": (lambda v: v is None, "must be null"),
}


def _same_scalar(a: object, b: object) -> bool:
    """JSON equality of two scalars: ``True`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is None and b is None


def validate_structured_value(schema: dict[str, Any], value: object) -> list[str]:
    """Validate ``value`` against a schema that passed :func:`assert_supported_output_schema`.

    One pass collects every violation, with paths rooted at ``value``: for an
    object, missing required properties first, then each declared property in
    declaration order, then undeclared keys (``additionalProperties: false``); an
    array's items by index; a scalar's type, then ``enum``, then ``const``.

    Args:
        schema: an asserted structured-output schema.
        value: any object; typically the decoded arguments of a capture tool.

    Returns:
        The violations, e.g. ``['missing required property "value.file"',
        '"value.line" must be an integer']``; empty when the value is valid. Never
        raises for any ``value``.

    Raises:
        TypeError: the schema has a node or ``type`` the assertion would reject
            (a forged schema; the message names the type and path).
        ValueError: the schema is circular and the value follows the cycle.
    """
    out: list[str] = []
    # Tasks: ("check", node, value, path) | ("extra", properties, value, path) |
    # ("leave", pair, None, "") for the circular-schema backstop.
    stack: list[tuple[str, Any, Any, str]] = [("check", schema, value, "value")]
    active: set[tuple[int, int]] = set()
    while stack:
        task, node, item, path = stack.pop()
        if task == "leave":
            active.discard(node)
        elif task == "extra":
            for key, child in _items(item):
                if child is not _ABSENT and _field(node, key) is _ABSENT:
                    out.append(
                        f'"{path}.{key}" is not a declared property (additionalProperties: false)'
                    )
        else:
            _check_value(node, item, path, out, stack, active)
    return out


def _check_value(
    node: object,
    value: object,
    path: str,
    out: list[str],
    stack: list[tuple[str, Any, Any, str]],
    active: set[tuple[int, int]],
) -> None:
    if not isinstance(node, dict):
        raise TypeError(f"schema node for {path!r} is not a schema object: {type(node).__name__}")
    kind = _field(node, "type")
    scalar = _SCALAR_CHECKS.get(kind) if isinstance(kind, str) else None
    if scalar is not None:
        matches, message = scalar
        if not matches(value):
            out.append(f'"{path}" {message}')
            return
        allowed = _field(node, "enum")
        if allowed is not _ABSENT and not any(_same_scalar(value, entry) for entry in allowed):
            out.append(f'"{path}" must be one of {_json_text(list(allowed))}')
            return
        const = _field(node, "const")
        if const is not _ABSENT and not _same_scalar(value, const):
            out.append(f'"{path}" must be {_json_text(const)}')
        return
    if kind == "object":
        if not isinstance(value, dict):
            out.append(f'"{path}" must be an object')
            return
        properties = _field(node, "properties")
        declared: dict[str, Any] = {} if properties is _ABSENT else properties
        required = _field(node, "required")
        if required is not _ABSENT:
            for name in required:
                if _field(value, name) is _ABSENT:
                    out.append(f'missing required property "{path}.{name}"')
        _guard(node, value, path, stack, active)
        if _field(node, "additionalProperties") is False:
            stack.append(("extra", declared, value, path))
        for key, child in reversed(list(_items(declared))):
            present = _field(value, key)
            if present is not _ABSENT:
                stack.append(("check", child, present, f"{path}.{key}"))
        return
    if kind == "array":
        if not isinstance(value, list | tuple):
            out.append(f'"{path}" must be an array')
            return
        items = _field(node, "items")
        if items is not _ABSENT:
            _guard(node, value, path, stack, active)
            for index in range(len(value) - 1, -1, -1):
                stack.append(("check", items, value[index], f"{path}[{index}]"))
        return
    raise TypeError(
        f"unsupported schema type {kind!r} for {path!r}: "
        "validate_structured_value needs a schema that passed assert_supported_output_schema"
    )


def _guard(
    node: object,
    value: object,
    path: str,
    stack: list[tuple[str, Any, Any, str]],
    active: set[tuple[int, int]],
) -> None:
    # An asserted schema is acyclic, so a walk bounded by it always ends; only a
    # circular (forged) schema meeting a circular value could revisit a pair.
    pair = (id(node), id(value))
    if pair in active:
        raise ValueError(
            f"schema is circular at {path!r}: assert_supported_output_schema rejects it"
        )
    active.add(pair)
    stack.append(("leave", pair, None, ""))
