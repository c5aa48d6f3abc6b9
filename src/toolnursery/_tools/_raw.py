"""Raw JSON Schema tools: arguments checked by ``jsonschema`` before the body runs.

A :class:`~toolnursery.ToolDefinition` built directly — a mounted MCP tool, an
imported framework tool, a hand-written schema — gets an ``execute`` that validates
the call's arguments against its ``parameters`` first (unless ``validate=False``),
the way ``define_tool``'s does. :func:`compile_raw_validator` does the schema work
once per definition: it picks the validator class from ``$schema`` (Draft 2020-12
when absent), refuses a schema that is not valid under its own metaschema, and binds
the shared format checker of :mod:`._formats`. Each call then costs one
``jsonschema`` pass; violations are turned into the DSL's texts (``missing required
property "path"``, ``"limit" must be >= 1``) and raised as
:class:`~toolnursery.ToolArgsError`, which the registry reports as ``INVALID_ARGS``.

Arguments are read as JSON: a read-only ``dict`` is an object and a ``tuple`` an array
(frozen arguments are made of both).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, Final

from .._core._bodies import is_async, mark_may_suspend
from .._core._errors import ToolArgsError
from .._core._json import thaw
from ._constraints import APPLIES_TO, rule
from ._formats import format_checker
from ._schema import SpecError, compile_spec
from ._validator import NOT_AN_OBJECT, Validator

__all__ = [
    "VALIDATES_ATTR",
    "RawSchemaError",
    "compile_raw_validator",
    "inline_check",
    "mark_validating",
    "validating_execute",
]

VALIDATES_ATTR: Final = "__toolnursery_validates__"
"""Set on an ``execute`` that validates its own arguments: ``True`` (``define_tool``'s)
or the :class:`_Mark` of a raw wrapper (which a wrapper around it may copy)."""


class _Mark:
    """What a raw wrapper checks against, and what it wraps."""

    __slots__ = ("body", "check", "parameters", "wrapper")

    def __init__(
        self,
        parameters: object,
        body: Callable[..., Any],
        wrapper: Callable[..., Any],
        check: Callable[[Any], Any],
    ) -> None:
        self.parameters = parameters
        self.body = body
        self.wrapper = wrapper
        self.check = check  # arguments -> their violations (falsy: valid)


def inline_check(
    execute: Callable[..., Any],
) -> tuple[Callable[..., Any], Callable[[Any], Any]] | None:
    """The body behind a raw wrapper made by :func:`validating_execute`, and its check.

    The check is a plain function of the frozen arguments returning their violations
    (a falsy value when they are valid; else the list :class:`ToolArgsError` takes), so
    the pipeline can call it in place of the wrapper, with no coroutine layer around the
    body. ``None``: ``execute`` is not such a wrapper (it is called as it is).
    """
    mark = getattr(execute, VALIDATES_ATTR, None)
    if isinstance(mark, _Mark) and mark.wrapper is execute:
        return mark.body, mark.check
    return None


_NOUNS: Final = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


class RawSchemaError(ValueError):
    """Raised when ``parameters`` is not a valid JSON Schema; the message says where."""


def mark_validating(execute: Callable[..., Any]) -> None:
    """Record that ``execute`` validates its arguments itself (``define_tool``'s does)."""
    setattr(execute, VALIDATES_ATTR, True)


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


@cache
def _validator_classes() -> tuple[Any, Callable[[Any], Any]]:
    """``(jsonschema.validators, class -> the class reading tuples as arrays)``."""
    # Imported by name: jsonschema ships no type information (its stubs are separate).
    validators: Any = importlib.import_module("jsonschema.validators")

    @cache
    def reading_tuples(cls: Any) -> Any:
        checker = cls.TYPE_CHECKER.redefine(
            "array", lambda _checker, instance: isinstance(instance, list | tuple)
        )
        return validators.extend(cls, type_checker=checker)

    return validators, reading_tuples


def compile_raw_validator(schema: Mapping[str, Any], *, use_dsl: bool = True) -> Validator:
    """Check ``schema`` once and return ``args -> violations`` for it.

    A schema the DSL reads the same way (see :func:`_as_spec`, the common shape of
    MCP and framework tools) is checked by the DSL's compiled nodes; any other by
    ``jsonschema``. Both give the same verdicts in the same words.

    Args:
        schema: a JSON Schema for a tool's arguments; ``$schema`` picks the draft
            (4, 6, 7, 2019-09 or 2020-12; absent means 2020-12).
        use_dsl: ``False`` always checks with ``jsonschema`` (to compare the two).

    Returns:
        A function that never raises: ``[]`` for valid arguments, else the
        violations in the DSL's words; arguments that are not an object give
        ``['"arguments" must be an object']``.

    Raises:
        RawSchemaError: ``$schema`` names no draft ``jsonschema`` knows, or the
            schema is invalid under its draft's metaschema (the message names the
            keyword's path).
    """
    validators, reading_tuples = _validator_classes()
    try:
        schema = thaw(schema)  # a copy of its own, with JSON arrays as lists
    except RecursionError:
        raise RawSchemaError("not a valid JSON Schema: it contains itself") from None
    cls = validators.validator_for(schema, default=None)
    if cls is None:
        if "$schema" in schema:
            raise RawSchemaError(f"written for an unknown $schema {_compact(schema['$schema'])}")
        cls = validators.Draft202012Validator
    try:
        cls.check_schema(schema)
    except Exception as exc:  # jsonschema.SchemaError, or a schema that is not JSON
        where = "/".join(str(p) for p in getattr(exc, "path", ())) or "the root"
        message = getattr(exc, "message", str(exc))
        raise RawSchemaError(f"not a valid JSON Schema at {where}: {message}") from None
    same = use_dsl and schema.get("$schema", _SAME[0]) in _SAME
    spec = _as_spec(schema) if same else None
    if spec is not None:
        try:
            return compile_spec(spec)[1]
        except SpecError:
            pass  # outside what the DSL takes (a contradiction, an unknown format)
    validator = reading_tuples(cls)(schema, format_checker=format_checker())
    iter_errors = validator.iter_errors

    def validate(args: object) -> list[str]:
        if not isinstance(args, dict):
            return [NOT_AN_OBJECT]
        try:
            errors = iter_errors(args)
            first = next(errors, None)
            if first is None:
                return []
            return _violations([first, *errors])
        except Exception as exc:  # an unresolvable $ref, a broken format checker
            return [f'"arguments" cannot be validated: {exc}']

    return validate


_SAME: Final = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
)
"""Drafts whose reading of every keyword the DSL has is Draft 2020-12's."""

_ANNOTATIONS: Final = frozenset(("title", "description", "default", "examples", "$comment"))
_PROP_KEYWORDS: Final = frozenset(
    ("type", "enum", "properties", "required", "items", *APPLIES_TO, *_ANNOTATIONS)
) - {"minProperties", "maxProperties"}
_SCALARS: Final = frozenset(("string", "number", "integer", "boolean"))


def _as_spec(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The DSL spec that checks exactly what ``schema`` does, or ``None``.

    Taken when every node is one the DSL reads the same way: an ``object`` root, each
    property one JSON type (or that type and ``"null"``), only the DSL's keywords and
    annotations, no ``enum`` on an array or an object (the DSL reads those
    differently). The DSL's checks agree with ``jsonschema`` (a property test
    compares them) and cost a tenth of its pass.
    """
    extra = set(schema) - {"type", "properties", "required", "$schema", *_ANNOTATIONS}
    if schema.get("type") != "object" or extra:
        return None
    return _object_spec(schema)


def _object_spec(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if any(name not in properties for name in required):
        return None
    spec: dict[str, Any] = {}
    for name, prop in properties.items():
        converted = _prop_spec(prop)
        if converted is None:
            return None
        if name in required:
            converted["required"] = True
        spec[name] = converted
    return spec


def _prop_spec(prop: object) -> dict[str, Any] | None:
    if not isinstance(prop, dict) or not set(prop) <= _PROP_KEYWORDS:
        return None
    kind = prop.get("type")
    out: dict[str, Any] = {}
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        kind = kind[0] if kind[1] == "null" else kind[1]
        out["nullable"] = True
        enum = prop.get("enum")
        if enum is not None and None not in enum:
            return None  # a nullable type whose enum leaves null out: jsonschema's reading
    if not isinstance(kind, str) or kind not in _SCALARS | {"object", "array"}:
        return None
    for key, value in prop.items():
        if key in ("description", "default"):
            out[key] = value
        elif key == "enum":
            if kind not in _SCALARS:
                return None
            out["enum"] = [v for v in value if v is not None]
        elif key in APPLIES_TO:
            out[key] = value
    out["type"] = kind
    if kind == "object":
        if "properties" in prop or "required" in prop:
            nested = _object_spec(prop)
            if nested is None:
                return None
            out["properties"] = nested
    elif "properties" in prop or "required" in prop:
        return None
    if "items" in prop:
        items = _prop_spec(prop["items"]) if kind == "array" else None
        if items is None:
            return None
        out["items"] = items
    return out


def _path(parts: Iterable[object]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def _quoted(path: str) -> str:
    return f'"{path}"' if path else '"arguments"'


def _violations(errors: list[Any]) -> list[str]:
    out: list[str] = []
    for error in errors:
        keyword = error.validator
        value = error.validator_value
        path = _path(error.absolute_path)
        prefix = f"{path}." if path else ""
        instance = error.instance
        if keyword == "required" and isinstance(instance, dict):
            for key in value:
                text = f'missing required property "{prefix}{key}"'
                if key not in instance and text not in out:
                    out.append(text)
        elif keyword == "type":
            kinds = [value] if isinstance(value, str) else list(value)
            nouns = " or ".join(_NOUNS.get(k, k) for k in kinds)
            out.append(f"{_quoted(path)} must be {nouns}")
        elif keyword == "enum":
            out.append(f"{_quoted(path)} must be one of {_compact(value)}")
        elif keyword == "const":
            out.append(f"{_quoted(path)} must be {_compact(value)}")
        elif keyword in APPLIES_TO:
            out.append(f"{_quoted(path)}{rule(keyword, value)}")
        elif keyword in ("anyOf", "oneOf") and error.context:
            out.extend(t for t in _alternatives(_quoted(path), error) if t not in out)
        elif keyword == "additionalProperties" and value is False and isinstance(instance, dict):
            out.extend(_unknown(error.schema, instance, prefix))
        elif keyword in ("additionalProperties", "unevaluatedProperties") and value is False:
            out.append(f"{_quoted(path)} has an unexpected property: {error.message}")
        else:
            out.append(f'{_quoted(path)} breaks "{keyword}": {error.message}')
    return out


def _alternatives(where: str, error: Any) -> list[str]:
    """A failed ``anyOf``/``oneOf`` in our words: the types it takes, when the value has
    none of them, else what is wrong with it in the alternatives of its type."""
    here = list(error.absolute_path)
    subs = list(error.context)
    wrong_type = [e for e in subs if e.validator == "type" and list(e.absolute_path) == here]
    if len(wrong_type) == len(subs):
        nouns: list[str] = []
        for sub in wrong_type:
            kinds = (
                [sub.validator_value]
                if isinstance(sub.validator_value, str)
                else sub.validator_value
            )
            nouns.extend(n for n in (_NOUNS.get(k, k) for k in kinds) if n not in nouns)
        return [f"{where} must be {' or '.join(nouns)}"]
    return _violations([e for e in subs if e not in wrong_type])


def _unknown(schema: Any, instance: dict[str, Any], prefix: str) -> list[str]:
    """One line per key ``additionalProperties: false`` refuses, naming the known ones."""
    declared = schema.get("properties", {}) if isinstance(schema, dict) else {}
    patterns = schema.get("patternProperties", {}) if isinstance(schema, dict) else {}
    names = list(declared) if isinstance(declared, dict) else []
    if prefix:
        takes = f"the object takes: {', '.join(names)}" if names else "the object takes none"
    else:
        takes = f"the tool takes: {', '.join(names)}" if names else "the tool takes no arguments"
    noun = "property" if prefix else "argument"
    return [
        f'unknown {noun} "{prefix}{key}" ({takes})'
        for key in instance
        if key not in names and not any(re.search(p, key) for p in patterns)
    ]


def validating_execute(
    parameters: Mapping[str, Any], execute: Callable[..., Any]
) -> Callable[..., Any]:
    """Return ``execute`` wrapped to validate its arguments against ``parameters``.

    ``execute`` comes back as it is when it already validates them (``define_tool``'s,
    or one made here for the same ``parameters`` object, perhaps wrapped again); a
    wrapper made here for other ``parameters`` is replaced. The wrapper is async
    exactly when ``execute`` is and carries its ``__toolnursery_*`` marks (an output
    schema, whether it may suspend).

    Raises:
        RawSchemaError: as for :func:`compile_raw_validator`.
    """
    mark = getattr(execute, VALIDATES_ATTR, None)
    if mark is True or (isinstance(mark, _Mark) and mark.parameters is parameters):
        return execute
    if isinstance(mark, _Mark) and mark.wrapper is execute:
        execute = mark.body  # the same body, checked against the new parameters
    validate = compile_raw_validator(parameters)
    wrapper: Callable[..., Any]
    if is_async(execute):

        async def execute_async(args: Any, ctx: Any) -> Any:
            violations = validate(args)
            if violations:
                raise ToolArgsError(violations)
            return await execute(args, ctx)

        wrapper = execute_async
    else:

        def execute_sync(args: Any, ctx: Any) -> Any:
            violations = validate(args)
            if violations:
                raise ToolArgsError(violations)
            return execute(args, ctx)

        wrapper = execute_sync
    for attr, value in getattr(execute, "__dict__", {}).items():
        if attr.startswith("__toolnursery_"):
            setattr(wrapper, attr, value)
    mark_may_suspend(wrapper, execute)
    setattr(wrapper, VALIDATES_ATTR, _Mark(parameters, execute, wrapper, validate))
    setattr(wrapper, "__wrapped__", execute)  # noqa: B010 (what inspect.unwrap follows)
    return wrapper
