"""pydantic parameters: a ``BaseModel`` or ``pydantic.Field`` metadata, checked by pydantic.

When a tool's parameters use pydantic — ``define_tool(parameters=SomeModel)``, an
``@tool`` parameter annotated with a ``BaseModel``, ``Annotated[int, Field(ge=1)]``,
``annotated_types`` metadata, or a ``Field(...)`` default — the schema is pydantic's
JSON Schema and validation is pydantic's (strict, on the JSON form of the arguments, so
what the schema says is what is accepted). pydantic is imported only if the caller
already did: without it such parameters cannot exist.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

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
    model: type[Any], owner: str, descriptions: Mapping[str, str]
) -> tuple[dict[str, Any], Parse]:
    """The JSON Schema of a ``BaseModel`` and a parser ``args -> model instance``."""
    import pydantic

    try:
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
    return model_plan(model, owner, descriptions)


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
