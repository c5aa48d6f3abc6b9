"""pydantic parameters: a ``BaseModel`` or ``pydantic.Field`` metadata, checked by pydantic.

When a tool's parameters use pydantic — ``define_tool(parameters=SomeModel)``, an
``@tool`` parameter annotated with a ``BaseModel``, ``Annotated[int, Field(ge=1)]``,
``annotated_types`` metadata, or a ``Field(...)`` default — the schema is pydantic's
JSON Schema and validation is pydantic's (strict, on the JSON form of the arguments, so
what the schema says is what is accepted). pydantic is imported only if the caller
already did: without it such parameters cannot exist.

For ``@tool`` the schema of a signature is the same whichever path reads it: pydantic's
is brought to the form msgspec's path writes — no ``title`` on fields, models and enums
inlined rather than behind ``$ref`` (unless recursive), and ``anyOf`` of plain typed
branches (``int | None``) written as a list of types, where the two mean the same.
"""

from __future__ import annotations

import functools
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec

from .._core._errors import RegistrationError, ToolArgsError
from ._validator import NOT_AN_OBJECT

__all__ = ["model_plan", "signature_plan", "uses_pydantic"]

Parse = Callable[[Any], Any]


def uses_pydantic(annotations: Iterable[object], defaults: Iterable[object] = ()) -> bool:
    """Whether any annotation (or default) is pydantic's to check."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    from pydantic.fields import FieldInfo as field_info

    if any(isinstance(d, field_info) for d in defaults):
        return True
    return any(_mentions_pydantic(a, pydantic.BaseModel, field_info) for a in annotations)


def _mentions_pydantic(annotation: object, base: type, field_info: type) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, base):
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *extras = typing.get_args(annotation)
        for extra in extras:
            module = type(extra).__module__
            if isinstance(extra, field_info) or module.startswith(("pydantic", "annotated_types")):
                return True
        return _mentions_pydantic(inner, base, field_info)
    return any(_mentions_pydantic(a, base, field_info) for a in typing.get_args(annotation))


def model_plan(
    model: type[Any], owner: str, descriptions: Mapping[str, str], *, plain: bool = False
) -> tuple[dict[str, Any], Parse]:
    """The JSON Schema of a ``BaseModel`` and a parser ``args -> model instance``.

    ``plain``: in the form msgspec's path writes (see the module docstring).
    """
    import pydantic

    try:
        if plain:
            schema = _plain(model.model_json_schema(schema_generator=_untitled_fields()))
        else:
            schema = model.model_json_schema()
    except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
        raise RegistrationError(f"{owner}: {model.__name__} has no JSON Schema: {exc}") from None
    schema.pop("title", None)
    properties = schema.get("properties", {})
    for name, text in descriptions.items():
        prop = properties.get(name)
        if isinstance(prop, dict) and text and "description" not in prop:
            prop["description"] = text
    return schema, _parser(model)


def signature_plan(
    tool_name: str,
    owner: str,
    params: list[tuple[str, Any, Any]],
    descriptions: Mapping[str, str],
    empty: object,
) -> tuple[dict[str, Any], Parse]:
    """A pydantic model built from ``(name, annotation, default)`` parameters, planned."""
    import pydantic

    fields: dict[str, Any] = {}
    for name, annotation, default in params:
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
            message = str(exc).splitlines()[0]
            raise RegistrationError(
                f'{owner}: parameter "{name}" has an unsupported type: {message}'
            ) from None
        fields[name] = (annotation, ... if default is empty else default)
    try:
        model = pydantic.create_model(
            f"{tool_name}_args", __config__=pydantic.ConfigDict(frozen=True), **fields
        )
    except (pydantic.PydanticUserError, TypeError, ValueError) as exc:
        raise RegistrationError(f"{owner}: {exc}") from None
    return model_plan(model, owner, descriptions, plain=True)


@functools.cache
def _untitled_fields() -> type[Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class UntitledFields(GenerateJsonSchema):
        """pydantic's JSON Schema without a ``title`` per field."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return UntitledFields


class _Cycle(Exception):
    """A ``$ref`` that leads back to itself: the definitions stay."""


_DEFS: Final = "#/$defs/"


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its (acyclic) ``$defs`` inlined, untitled, and simple unions merged."""
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        rest = {k: v for k, v in schema.items() if k != "$defs"}
        try:
            schema = _inline(rest, defs, frozenset())
        except _Cycle:
            pass
    return _merge_unions(schema)  # type: ignore[no-any-return]


def _inline(node: Any, defs: dict[str, Any], seen: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS) and ref[len(_DEFS) :] in defs:
        name = ref[len(_DEFS) :]
        if name in seen:
            raise _Cycle
        target = _inline(defs[name], defs, seen | {name})
        out = {k: v for k, v in target.items() if k != "title"}
        out.update((k, _inline(v, defs, seen)) for k, v in node.items() if k != "$ref")
        return out
    if "properties" in node and isinstance(node["properties"], dict):
        out = dict(node)
        out["properties"] = {k: _inline(v, defs, seen) for k, v in node["properties"].items()}
        return {k: v if k == "properties" else _inline(v, defs, seen) for k, v in out.items()}
    return {k: _inline(v, defs, seen) for k, v in node.items()}


_ONLY_FOR: Final[dict[str, frozenset[str]]] = {
    "null": frozenset(),
    "boolean": frozenset(),
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "integer": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    ),
    "number": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    ),
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}),
    "object": frozenset(
        {"properties", "required", "additionalProperties", "minProperties", "maxProperties"}
    ),
}
"""The keywords that constrain only values of one JSON type (so they can share a node)."""

_NOTES: Final = frozenset({"description", "examples"})
"""Keywords that annotate and constrain nothing: a branch's may move up to the node."""


def _merge_unions(node: Any) -> Any:
    """``anyOf`` of branches ``{"type": T, <T's own keywords>}`` as one ``type: [T, ...]``."""
    if isinstance(node, list):
        return [_merge_unions(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _merge_unions(v) for k, v in value.items()}
        else:
            out[key] = _merge_unions(value)
    branches = out.get("anyOf")
    if "type" in out or not isinstance(branches, list) or len(branches) < 2:
        return out
    types: list[str] = []
    merged: dict[str, Any] = {}
    values: list[Any] = []  # the branches' enum / const values, when every one has them
    listed = 0
    for branch in branches:
        kind = branch.get("type") if isinstance(branch, dict) else None
        if not isinstance(kind, str) or kind not in _ONLY_FOR or kind in types:
            return out
        own = {k: v for k, v in branch.items() if k != "type"}
        if "const" in own:
            values.append(own.pop("const"))
            listed += 1
        elif isinstance(own.get("enum"), list):
            values.extend(own.pop("enum"))
            listed += 1
        if not (_ONLY_FOR[kind] | _NOTES).issuperset(own) or not merged.keys().isdisjoint(own):
            return out
        types.append(kind)
        merged.update(own)
    if "integer" in types and "number" in types:
        return out  # their keywords would constrain both
    if listed:
        if listed + ("null" in types) != len(branches):
            return out  # a branch any value of its type passes: no one enum says it
        merged["enum"] = [*values, None] if "null" in types else values
    rest = {k: v for k, v in out.items() if k != "anyOf"}
    return {"type": types, **merged, **rest}


def _parser(model: type[Any]) -> Parse:
    import pydantic

    encode = msgspec.json.encode
    validate = model.model_validate_json

    def parse(args: Any) -> Any:
        if not isinstance(args, dict):
            raise ToolArgsError([NOT_AN_OBJECT])
        try:
            return validate(encode(args), strict=True)
        except pydantic.ValidationError as exc:
            raise ToolArgsError(_violations(exc)) from exc

    return parse


def _violations(exc: Any) -> list[str]:
    out: list[str] = []
    for error in exc.errors(include_url=False):
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]
        ).removeprefix(".")
        if error["type"] == "missing":
            out.append(f'missing required property "{path}"')
        elif path:
            out.append(f'"{path}" is invalid: {error["msg"]}')
        else:
            out.append(f'"arguments" are invalid: {error["msg"]}')
    return out
