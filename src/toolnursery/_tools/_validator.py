"""The validation engine: a JSON Schema compiled once by jsonschema-rs, and its texts.

:func:`compile_schema` checks a tool's parameters schema once (under its draft's
metaschema) and returns a :data:`Validator`: ``arguments -> violations``, ``[]`` when
they conform. Every schema toolnursery validates against goes through it: a raw
:class:`~toolnursery.ToolDefinition`'s (a mounted MCP tool's, a framework's), the
schema DSL's (:mod:`._schema`) and a Struct's or ``@tool`` signature's
(:mod:`._struct_schema`), so a violation reads the same whatever the tool was
declared with: ``missing required property "path"``, ``"limit" must be >= 1``,
``"tags[1]" must be a string``, ``unknown argument "extra" (the tool takes: a, b)``.

What the engine is set to do, for every schema:

- nothing is retrieved: a ``$ref`` that does not resolve inside the schema is refused
  when the schema is compiled (a retriever that refuses every URI, ``http``, ``file``
  or any other);
- ``pattern`` and ``patternProperties`` run on a regular-expression engine without
  backtracking (linear in the input): a pattern that needs one (a look-around, a
  back-reference) is refused when the schema is compiled;
- ``format`` is checked, and a format the engine does not know is refused when the
  schema is compiled.

Checking never raises: a value that is not JSON (a direct call with an object) is
reported, not raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import jsonschema_rs
from msgspec import UNSET

__all__ = [
    "NOT_AN_OBJECT",
    "SchemaCompileError",
    "Validator",
    "compact_json",
    "compile_schema",
    "engine_for",
    "pointer_path",
]

Validator: TypeAlias = Callable[[object], list[str]]
"""A compiled validator: arguments → violations (``[]`` when they conform)."""

Formats: TypeAlias = Mapping[str, Callable[[str], bool]]

NOT_AN_OBJECT = '"arguments" must be an object'
"""The single violation reported for arguments that are not a JSON object."""

_NOUNS: Final = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
    "null": "null",
}
_REGEX: Final = jsonschema_rs.RegexOptions()
"""The regex crate alone: no backtracking, linear in the input."""


class SchemaCompileError(ValueError):
    """Raised when a schema cannot be validated against; the message says where and why.

    ``path`` is where in the schema (a list of keys and indices), ``keyword`` the
    keyword at fault when there is one, ``reason`` the message without the place.
    """

    def __init__(
        self, message: str, path: Sequence[str | int] = (), keyword: str = "", reason: str = ""
    ) -> None:
        super().__init__(message)
        self.path = list(path)
        self.keyword = keyword
        self.reason = reason or message


def compact_json(value: object) -> str:
    """Render ``value`` as compact JSON, the way ``JSON.stringify`` would."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _refuse(uri: str) -> Any:
    raise ValueError(f"{uri} is not retrieved")


def pointer_path(parts: Sequence[str | int]) -> str:
    """``["a", 1, "b"]`` → ``a[1].b`` (an instance path as the violation texts show it)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def compile_schema(schema: Mapping[str, Any], *, formats: Formats | None = None) -> Validator:
    """Compile ``schema`` (a JSON object, its ``$schema`` naming the draft) into a validator.

    Args:
        schema: the JSON Schema of a tool's arguments (plain JSON: dicts and lists).
            ``$schema`` picks the draft (4, 6, 7, 2019-09, 2020-12; absent: 2020-12).
        formats: format checks of the caller's own, over the engine's (a Struct's
            ``date-time`` is what msgspec decodes).

    Returns:
        ``args -> violations``; never raises. Arguments that are not a ``dict`` give
        ``['"arguments" must be an object']``.

    Raises:
        SchemaCompileError: ``$schema`` is not a draft the engine knows, the schema is
            invalid under its metaschema, a ``$ref`` does not resolve inside it, a
            pattern needs a backtracking engine or a format is unknown.
    """
    return _Compiled(schema, formats)


class _Compiled:
    """A compiled schema as ``args -> violations``. It pickles as its schema (the engine's
    validator does not pickle, and a Ray worker needs the definition that holds it), and is
    compiled again where it is unpickled."""

    __slots__ = ("_formats", "_is_valid", "_iter_errors", "_memo", "_schema")

    def __init__(self, schema: Mapping[str, Any], formats: Formats | None) -> None:
        validator = engine_for(schema, formats=formats)
        self._schema = schema
        self._formats = formats
        self._is_valid = validator.is_valid
        self._iter_errors = validator.iter_errors
        self._memo = _Memo(schema)

    def __call__(self, args: object) -> list[str]:
        if not isinstance(args, dict):
            return [NOT_AN_OBJECT]
        try:
            if self._is_valid(args):
                return []
            return _violations(self._memo, args, list(self._iter_errors(args)))
        except ValueError:  # a value jsonschema-rs cannot read (not JSON, msgspec.UNSET)
            return _not_plain(self._memo, args, self._iter_errors)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Compiled, (self._schema, self._formats))


def engine_for(schema: Any, *, formats: Formats | None = None) -> jsonschema_rs.Validator:
    """The engine's own validator of ``schema``, set as :func:`compile_schema` says.

    For a caller that words the errors itself (a mounted tool's ``outputSchema``).

    Raises:
        SchemaCompileError: as for :func:`compile_schema`.
    """
    try:
        return jsonschema_rs.validator_for(
            schema,
            formats=dict(formats) if formats else None,
            validate_formats=True,
            ignore_unknown_formats=False,
            retriever=_refuse,
            pattern_options=_REGEX,
        )
    except jsonschema_rs.ValidationError as exc:
        raise _compile_error(exc) from None
    except (jsonschema_rs.ReferencingError, ValueError, TypeError, RecursionError) as exc:
        raise SchemaCompileError(_first_line(exc)) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _compile_error(exc: jsonschema_rs.ValidationError) -> SchemaCompileError:
    """The reason a schema is refused, worded ``<what> at <where>: <why>``."""
    where = list(exc.instance_path)
    at = "/".join(str(p) for p in where) or "the root"
    kind = type(exc.kind).__name__
    message = exc.message
    if message.startswith("Unknown meta-schema"):
        dialect = message.split("'")[1] if message.count("'") >= 2 else message
        return SchemaCompileError(f"written for an unknown $schema {compact_json(dialect)}")
    if kind == "Referencing":
        ref = message.split("'")[1] if message.count("'") >= 2 else message
        if message.startswith("Pointer"):
            ref = "#" + ref
        reason = f'$ref "{ref}" does not resolve inside the schema (nothing is retrieved)'
        return SchemaCompileError(f"refused: {reason}", where, "$ref", reason)
    if message.startswith("Unknown format"):
        name = message.split("'")[1] if message.count("'") >= 2 else message
        reason = (
            f"format {compact_json(name)} cannot be checked "
            "(a format is checked or refused, never skipped)"
        )
        return SchemaCompileError(f"refused at {at}: {reason}", where, "format", reason)
    keyword = str(where[-1]) if where and isinstance(where[-1], str) else ""
    if kind == "Format" and getattr(exc.kind, "format", "") == "regex":
        pattern = exc.instance
        if not _backtracking_only(pattern):
            reason = f'"{keyword}": {compact_json(pattern)} is not a valid regular expression'
            return SchemaCompileError(
                f"not a valid JSON Schema at {at}: {reason}", where, keyword, reason
            )
        reason = (
            f'"{keyword}": {compact_json(pattern)} needs a backtracking regular-expression engine '
            "(a look-around or back-reference); patterns are matched in linear time only"
        )
        return SchemaCompileError(f"refused at {at}: {reason}", where, keyword, reason)
    if kind == "AnyOf" and keyword == "type":
        message = f"{compact_json(exc.instance)} is not a JSON Schema type"
    reason = f'"{keyword}": {message}' if keyword else message
    return SchemaCompileError(f"not a valid JSON Schema at {at}: {message}", where, keyword, reason)


def _backtracking_only(pattern: object) -> bool:
    """Whether ``pattern`` compiles only on a backtracking engine (fancy-regex)."""
    try:
        jsonschema_rs.validator_for(
            {"pattern": pattern}, pattern_options=jsonschema_rs.FancyRegexOptions()
        )
    except (jsonschema_rs.ValidationError, ValueError):
        return False
    return True


# --- violations ------------------------------------------------------------------------------


def _node(schema: Any, parts: Sequence[str | int]) -> Any:
    node = schema
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


_CONSUMES: Final = frozenset(("items", "additionalProperties", "unevaluatedProperties"))


def _template(schema: Any, schema_path: Sequence[str | int]) -> tuple[tuple[int, int], ...]:
    """The sort key of a schema path: ``(position, instance index to interleave or -1)``."""
    out: list[tuple[int, int]] = []
    node = schema
    at = 0
    parent = ""
    for part in schema_path:
        if isinstance(node, dict):
            keys = list(node)
            position = keys.index(part) if part in keys else len(keys)
            if parent in ("properties", "patternProperties", "prefixItems"):
                out.append((position, -1))
                at += 1
            elif part in _CONSUMES:
                out.append((position, at))
                at += 1
            else:
                out.append((position, -1))
        elif isinstance(node, list) and isinstance(part, int):
            out.append((part, -1))
        else:
            break
        node = node[part]
        parent = str(part) if isinstance(node, dict | list) else ""
    return tuple(out)


def _key(template: tuple[tuple[int, int], ...], instance: Sequence[str | int]) -> list[int]:
    key: list[int] = []
    for position, at in template:
        key.append(position)
        if at >= 0:
            item = instance[at] if at < len(instance) else 0
            key.append(item if isinstance(item, int) else 0)
    return key


class _Error:
    """What the texts need of one engine error, each read once."""

    __slots__ = ("error", "kind", "name", "path", "schema_path")

    def __init__(self, error: jsonschema_rs.ValidationError) -> None:
        self.error = error
        self.kind: Any = error.kind
        self.name = type(self.kind).__name__
        self.schema_path = tuple(error.schema_path)
        self.path = tuple(error.instance_path)


class _Memo:
    """Per compiled schema: sort keys and rule texts by schema path (a schema's paths are few)."""

    __slots__ = ("rules", "schema", "templates")

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.templates: dict[tuple[str | int, ...], tuple[tuple[int, int], ...]] = {}
        self.rules: dict[tuple[str | int, ...], str | None] = {}

    def template(self, schema_path: tuple[str | int, ...]) -> tuple[tuple[int, int], ...]:
        found = self.templates.get(schema_path)
        if found is None:
            found = self.templates[schema_path] = _template(self.schema, schema_path)
        return found

    def rule(self, schema_path: tuple[str | int, ...]) -> str | None:
        if schema_path not in self.rules:
            keyword = str(schema_path[-1]) if schema_path else ""
            self.rules[schema_path] = _rule(keyword, _node(self.schema, schema_path))
        return self.rules[schema_path]


def _quoted(path: str) -> str:
    return f'"{path}"' if path else '"arguments"'


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _rule(keyword: str, value: Any) -> str | None:
    if keyword == "minimum":
        return f" must be >= {compact_json(value)}"
    if keyword == "exclusiveMinimum":
        return f" must be > {compact_json(value)}"
    if keyword == "maximum":
        return f" must be <= {compact_json(value)}"
    if keyword == "exclusiveMaximum":
        return f" must be < {compact_json(value)}"
    if keyword == "multipleOf":
        return f" must be a multiple of {compact_json(value)}"
    if keyword == "minLength":
        return f" must be at least {_count(value, 'character')} long"
    if keyword == "maxLength":
        return f" must be at most {_count(value, 'character')} long"
    if keyword == "pattern":
        return f" must match the pattern {compact_json(value)}"
    if keyword == "format":
        return f" must be a valid {compact_json(value)}"
    if keyword == "minItems":
        return f" must have at least {_count(value, 'item')}"
    if keyword == "maxItems":
        return f" must have at most {_count(value, 'item')}"
    if keyword == "uniqueItems":
        return " must not contain duplicate items"
    if keyword == "minProperties":
        return f" must have at least {_count(value, 'property', 'properties')}"
    if keyword == "maxProperties":
        return f" must have at most {_count(value, 'property', 'properties')}"
    if keyword == "enum":
        return f" must be one of {compact_json(value)}"
    if keyword == "const":
        return f" must be {compact_json(value)}"
    return None


def _types(value: Any) -> str:
    kinds = [value] if isinstance(value, str) else list(value)
    return " or ".join(_NOUNS.get(k, str(k)) for k in kinds)


def _unknown(schema: Any, parent: Sequence[str | int], path: str, keys: Sequence[str]) -> list[str]:
    properties = _node(schema, [*parent, "properties"])
    known = ", ".join(properties) if isinstance(properties, dict) and properties else ""
    out = []
    for key in keys:
        if not path:
            takes = f"the tool takes: {known}" if known else "the tool takes no arguments"
            out.append(f'unknown argument "{key}" ({takes})')
        else:
            takes = f"the object takes: {known}" if known else "the object takes no properties"
            out.append(f'unknown property "{path}.{key}" ({takes})')
    return out


def _texts(memo: _Memo, args: Any, seen: _Error) -> list[str]:
    schema = memo.schema
    kind = seen.kind
    name = seen.name
    schema_path = seen.schema_path
    keyword = str(schema_path[-1]) if schema_path else ""
    path = pointer_path(seen.path)
    where = _quoted(path)
    if name == "Required":
        prefix = f"{path}." if path else ""
        return [f'missing required property "{prefix}{kind.property}"']
    if name == "Type":
        value = _node_of(args, seen.path)
        if _is_big_int(value):
            return _big_int(schema, schema_path[:-1], where, value)
        declared = _node(schema, schema_path)
        return [f"{where} must be {_types(declared if declared is not None else kind.types)}"]
    if name in ("AdditionalProperties", "UnevaluatedProperties"):
        return _unknown(schema, schema_path[:-1], path, kind.unexpected)
    if name in ("AnyOf", "OneOfNotValid"):
        return _alternatives(memo, args, seen, where)
    if name == "Not":
        return [f"{where} must not match {compact_json(_node(schema, schema_path))}"]
    if name == "OneOfMultipleValid":
        return [f'{where} must match exactly one of the "oneOf" schemas, not several']
    if name == "FalseSchema":
        parent = schema_path[:-1]
        obj = _node_of(args, seen.path)
        if keyword == "additionalProperties" and isinstance(obj, dict):
            properties = _node(schema, [*parent, "properties"]) or {}
            if _node(schema, [*parent, "patternProperties"]) is None:
                return _unknown(schema, parent, path, [k for k in obj if k not in properties])
        return [f"{where} is not allowed here"]
    if name in ("BacktrackLimitExceeded", "RegexEngineFailure"):
        return [f"{where} cannot be matched against its pattern"]
    text = memo.rule(schema_path)
    if text is not None:
        return [f"{where}{text}"]
    return [f'{where} breaks "{keyword}": {seen.error.message}']


def _alternatives(memo: _Memo, args: Any, seen: _Error, where: str) -> list[str]:
    """A union: the texts of the branch the value has the type of, else the types."""
    depth = len(seen.path)
    branches = [[_Error(e) for e in found] for found in seen.kind.context]
    for found in branches:
        if not any(e.name == "Type" and len(e.path) == depth for e in found):
            return _texts_of(memo, args, found)
    nouns: list[str] = []
    for found in branches:
        for e in found:
            if e.name == "Type" and len(e.path) == depth:
                nouns.append(_types(_node(memo.schema, e.schema_path) or e.kind.types))
    if nouns:
        return [f"{where} must be " + " or ".join(dict.fromkeys(nouns))]
    keyword = str(seen.schema_path[-1]) if seen.schema_path else "anyOf"
    return [f'{where} breaks "{keyword}": {seen.error.message}']


def _violations(memo: _Memo, args: Any, errors: list[jsonschema_rs.ValidationError]) -> list[str]:
    """The texts of ``errors``, in declaration order; a failed type check hides the rest."""
    return _texts_of(memo, args, [_Error(e) for e in errors])


def _texts_of(memo: _Memo, args: Any, errors: list[_Error]) -> list[str]:
    typed = {e.path for e in errors if e.name == "Type" and not _is_big_int(_node_of(args, e.path))}
    keyed = []
    for seen in errors:
        parts = seen.path
        if typed:
            depth = len(parts) if seen.name == "Type" and parts in typed else len(parts) + 1
            if any(parts[:i] in typed for i in range(depth)):
                continue  # inside (or beside) a value that failed its type check
        schema_path = seen.schema_path
        instance: Sequence[str | int] = parts
        if seen.name == "Required":
            name = seen.kind.property
            parent = schema_path[:-1]
            if isinstance(_node(memo.schema, [*parent, "properties", name]), dict | bool):
                schema_path = (*parent, "properties", name)
                instance = (*parts, name)
        keyed.append((_key(memo.template(schema_path), instance), seen))
    keyed.sort(key=lambda pair: pair[0])
    out: list[str] = []
    for _, seen in keyed:
        for text in _texts(memo, args, seen):
            if text not in out:
                out.append(text)
    return out


# --- integers beyond a double, values that are not JSON ------------------------------------------


def _node_of(args: Any, parts: Sequence[str | int]) -> Any:
    return _node(args, parts)


def _is_big_int(value: object) -> bool:
    """Whether ``value`` is an integer a double cannot hold (the engine reads it as null)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _big_int(schema: Any, parent: Sequence[str | int], where: str, value: int) -> list[str]:
    """An integer past a double's range (the engine reads it as null): checked here."""
    node = _node(schema, parent)
    if not isinstance(node, dict):
        return []
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or ())
    if kinds and not {"integer", "number"} & set(kinds):
        return [f"{where} must be {_types(kinds)}"]
    out = []
    tests: dict[str, Callable[[Any], bool]] = {
        "minimum": lambda b: value >= b,
        "exclusiveMinimum": lambda b: value > b,
        "maximum": lambda b: value <= b,
        "exclusiveMaximum": lambda b: value < b,
        "multipleOf": lambda b: isinstance(b, int) and value % b == 0,
    }
    for keyword, passes in tests.items():
        bound = node.get(keyword)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and not passes(bound):
            out.append(f"{where}{_rule(keyword, bound)}")
    if "enum" in node and value not in node["enum"]:
        out.append(f"{where}{_rule('enum', node['enum'])}")
    return out


_NOT_JSON: Any = object()


def _plain(value: Any, path: list[str | int], odd: list[str]) -> Any:
    """``value`` as the JSON types jsonschema-rs reads; what is not JSON is noted."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is UNSET:
                continue  # a key whose value is UNSET is absent
            out[str(key)] = _plain(item, [*path, str(key)], odd)
        return out
    if isinstance(value, list | tuple):
        return [_plain(item, [*path, i], odd) for i, item in enumerate(value)]
    odd.append(f"{_quoted(pointer_path(path))} is not a JSON value")
    return None


TOO_DEEP: Final = '"arguments" are nested too deeply to be checked'


def _not_plain(memo: _Memo, args: Any, iter_errors: Callable[[Any], Any]) -> list[str]:
    odd: list[str] = []
    try:
        plain = _plain(args, [], odd)
        errors = list(iter_errors(plain))
        out = _violations(memo, plain, errors)
    except (ValueError, RecursionError):  # deeper than the engine reads
        return [TOO_DEEP]
    for text in odd:  # a value that is not JSON is refused, whatever its schema
        path = text.rsplit(" is not", 1)[0]
        if not any(v.startswith(path + " ") for v in out):
            out.append(text)
    return out
