"""Struct types whose strings msgspec converts without matching patterns.

msgspec checks a ``Meta(pattern=...)`` with Python's backtracking ``re`` when it
converts, and a pattern such as ``^(a+)+$`` against ``"a" * 40 + "!"`` would hold the
event loop for hours. The validation engine has already matched every pattern of the
schema, in linear time, before msgspec converts; so a Struct with a pattern anywhere
is converted to its *twin* — the same fields, defaults, names and tags, without the
patterns — and the twin's value is then rebuilt as the Struct the body expects
(``__post_init__`` runs once, on the rebuilt instance).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["pattern_free"]


def _meta_without_pattern(meta: msgspec.Meta) -> msgspec.Meta | None:
    kept = {
        name: getattr(meta, name)
        for name in (
            "gt",
            "ge",
            "lt",
            "le",
            "multiple_of",
            "min_length",
            "max_length",
            "tz",
            "title",
            "description",
            "examples",
            "extra_json_schema",
            "extra",
        )
        if getattr(meta, name) is not None
    }
    return msgspec.Meta(**kept) if kept else None


class _Twins:
    __slots__ = ("back", "made")

    def __init__(self) -> None:
        self.made: dict[type, type] = {}
        self.back: dict[type, type] = {}

    def annotation(self, annotation: Any) -> Any:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            inner, *extras = typing.get_args(annotation)
            kept: list[Any] = []
            changed = False
            for extra in extras:
                if isinstance(extra, msgspec.Meta) and extra.pattern is not None:
                    changed = True
                    extra = _meta_without_pattern(extra)
                    if extra is None:
                        continue
                kept.append(extra)
            twin = self.annotation(inner)
            if not changed and twin is inner:
                return annotation
            return typing.Annotated[(twin, *kept)] if kept else twin
        if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
            return self.struct(annotation)
        if origin is None or origin is typing.Literal:
            return annotation
        args = typing.get_args(annotation)
        twins = tuple(self.annotation(arg) for arg in args)
        if all(t is a for t, a in zip(twins, args, strict=True)):
            return annotation
        if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
            return typing.Union[twins]  # noqa: UP007 (a union built from a tuple)
        return origin[twins]

    def struct(self, cls: type[msgspec.Struct]) -> type:
        if cls in self.made:
            return self.made[cls]
        self.made[cls] = cls  # a recursive Struct is refused before it gets here
        fields = msgspec.structs.fields(cls)
        types = [self.annotation(f.type) for f in fields]
        if all(t is f.type for t, f in zip(types, fields, strict=True)):
            return cls
        layout: list[Any] = []
        for field, annotation in zip(fields, types, strict=True):
            if field.default is not msgspec.NODEFAULT:
                layout.append((field.name, annotation, field.default))
            elif field.default_factory is not msgspec.NODEFAULT:
                layout.append(
                    (field.name, annotation, msgspec.field(default_factory=field.default_factory))
                )
            else:
                layout.append((field.name, annotation))
        config = cls.__struct_config__
        twin = msgspec.defstruct(
            cls.__name__,
            layout,
            kw_only=True,
            frozen=config.frozen,
            forbid_unknown_fields=config.forbid_unknown_fields,
            rename={f.name: f.encode_name for f in fields},
            tag=config.tag if config.tag_field is not None else None,
            tag_field=config.tag_field,
            module=cls.__module__,
        )
        self.made[cls] = twin
        self.back[twin] = cls
        return twin

    def rebuild(self, value: Any) -> Any:
        cls = self.back.get(type(value))
        if cls is not None:
            return cls(**{n: self.rebuild(getattr(value, n)) for n in value.__struct_fields__})
        if type(value) is list:
            return [self.rebuild(v) for v in value]
        if type(value) is tuple:
            return tuple(self.rebuild(v) for v in value)
        if type(value) in (set, frozenset):
            return type(value)(self.rebuild(v) for v in value)
        if type(value) is dict:
            return {k: self.rebuild(v) for k, v in value.items()}
        return value


def pattern_free(cls: type[msgspec.Struct]) -> tuple[type, Callable[[Any], Any]] | None:
    """``(twin, twin value -> cls value)`` when ``cls`` has a pattern anywhere, else ``None``."""
    twins = _Twins()
    twin = twins.struct(cls)
    if twin is cls:
        return None
    return twin, twins.rebuild
