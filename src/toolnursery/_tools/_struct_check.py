"""A Struct's argument check: its formats, msgspec's refusals as violations, and the
pattern-free twin msgspec converts to.

A Struct's (or ``@tool`` signature's) schema is checked by the engine with
:data:`MSGSPEC_FORMATS`: a string field of a type msgspec decodes (``datetime``,
``UUID``, ``Decimal``, …) has the format msgspec reads. :func:`readable` words what
msgspec still refuses when it converts (``"level" must be an integer`` for ``2.0``
against a ``Literal[1, 2]``).

msgspec checks a ``Meta(pattern=...)`` with Python's backtracking ``re`` when it
converts, and a pattern such as ``^(a+)+$`` against ``"a" * 40 + "!"`` would hold the
event loop for hours. The validation engine has already matched every pattern of the
schema, in linear time, before msgspec converts; so a Struct with a pattern anywhere
is converted to its *twin* — the same fields, defaults, names and tags, without the
patterns — and the twin's value is then rebuilt as the Struct the body expects
(``__post_init__`` runs once, on the rebuilt instance).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec

__all__ = ["MSGSPEC_FORMATS", "field_path", "pattern_free", "readable"]


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


_ABSENT: Any = msgspec.UNSET
"""A twin field's default standing for "absent": the declared class's default applies."""


def _attrs_nothing() -> object:
    import attrs  # an attrs class is being read, so attrs is installed

    return attrs.NOTHING


class _Twins:
    __slots__ = ("back", "fields", "made")

    def __init__(self) -> None:
        self.made: dict[type, type] = {}
        self.back: dict[type, type] = {}
        self.fields: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}

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
        if isinstance(annotation, type) and typing.is_typeddict(annotation):
            return self.typeddict(annotation)
        if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
            return self.dataclass(annotation)
        if isinstance(annotation, type) and hasattr(annotation, "__attrs_attrs__"):
            return self.attrs_class(annotation)
        if origin is None or origin is typing.Literal:
            return annotation
        if origin in (typing.Required, typing.NotRequired):
            (inner,) = typing.get_args(annotation)
            twin = self.annotation(inner)
            return annotation if twin is inner else origin[twin]
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

    def typeddict(self, cls: type) -> type:
        """A TypedDict's twin: its values are dicts either way (nothing to rebuild)."""
        if cls in self.made:
            return self.made[cls]
        self.made[cls] = cls
        hints = typing.get_type_hints(cls, include_extras=True)
        twins = {name: self.annotation(hint) for name, hint in hints.items()}
        if all(twins[n] is hints[n] for n in hints):
            return cls
        make: Any = typing.TypedDict  # called with a computed name
        twin: type = make(cls.__name__, twins, total=getattr(cls, "__total__", True))
        self.made[cls] = twin
        return twin

    def dataclass(self, cls: type) -> type:
        """A dataclass's twin (its ``init`` fields), rebuilt as ``cls`` after converting."""
        if cls in self.made:
            return self.made[cls]
        self.made[cls] = cls
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = [f for f in dataclasses.fields(cls) if f.init]
        twins = {f.name: self.annotation(hints[f.name]) for f in fields}
        if all(twins[f.name] is hints[f.name] for f in fields):
            return cls
        layout: list[Any] = []
        for f in fields:
            if f.default is not dataclasses.MISSING:
                layout.append((f.name, twins[f.name], dataclasses.field(default=f.default)))
            elif f.default_factory is not dataclasses.MISSING:
                factory = dataclasses.field(default_factory=f.default_factory)
                layout.append((f.name, twins[f.name], factory))
            else:
                layout.append((f.name, twins[f.name]))
        twin = dataclasses.make_dataclass(cls.__name__, layout, kw_only=True)
        self.made[cls] = twin
        self.back[twin] = cls
        return twin

    def plan(self) -> None:
        """For each twin: its field names, and those that may hold another twin."""
        for twin in self.back:
            hints = typing.get_type_hints(twin, include_extras=True)
            names = self._names(twin)
            deep = tuple(n for n in names if self._holds_twin(hints.get(n)))
            self.fields[twin] = (names, deep)

    @staticmethod
    def _names(twin: type) -> tuple[str, ...]:
        if issubclass(twin, msgspec.Struct):
            return tuple(twin.__struct_fields__)
        return tuple(f.name for f in dataclasses.fields(twin))  # type: ignore[arg-type]

    def _holds_twin(self, annotation: Any) -> bool:
        if annotation in self.back:
            return True
        return any(self._holds_twin(arg) for arg in typing.get_args(annotation))

    def attrs_class(self, cls: type) -> type:
        """An attrs class's twin (a dataclass of its ``init`` fields), rebuilt as ``cls``."""
        if cls in self.made:
            return self.made[cls]
        self.made[cls] = cls
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = [f for f in cls.__attrs_attrs__ if f.init]  # type: ignore[attr-defined]
        twins = {f.name: self.annotation(hints.get(f.name, Any)) for f in fields}
        if all(twins[f.name] is hints.get(f.name, Any) for f in fields):
            return cls
        layout: list[Any] = []
        for f in fields:
            alias = getattr(f, "alias", None) or f.name.lstrip("_")
            default = f.default
            if default is _attrs_nothing():
                layout.append((alias, twins[f.name]))
            else:  # absent stays absent: the class's own default (or factory) applies
                layout.append((alias, twins[f.name], dataclasses.field(default=_ABSENT)))
        twin = dataclasses.make_dataclass(cls.__name__, layout, kw_only=True)
        self.made[cls] = twin
        self.back[twin] = cls
        return twin

    def rebuild(self, value: Any) -> Any:
        cls = self.back.get(type(value))
        if cls is not None:
            names, deep = self.fields[type(value)]
            given = {n: getattr(value, n) for n in names}
            for name in deep:
                given[name] = self.rebuild(given[name])
            return cls(**{n: v for n, v in given.items() if v is not _ABSENT})
        if type(value) is list:
            return [self.rebuild(v) for v in value]
        if type(value) is tuple:
            return tuple(self.rebuild(v) for v in value)
        if type(value) in (set, frozenset):
            return type(value)(self.rebuild(v) for v in value)
        if type(value) is dict:
            return {k: self.rebuild(v) for k, v in value.items()}
        return value


def pattern_free(cls: Any) -> tuple[Any, Callable[[Any], Any]] | None:
    """``(twin, twin value -> cls value)`` when ``cls`` (a Struct, or any annotation:
    TypedDicts and dataclasses inside it too) has a pattern anywhere, else ``None``."""
    twins = _Twins()
    twin = twins.annotation(cls)
    if twin is cls:
        return None
    twins.plan()
    return twin, twins.rebuild


def _decodes(kind: type) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            msgspec.convert(value, kind)
        except msgspec.ValidationError:
            return False
        return True

    return check


MSGSPEC_FORMATS: Mapping[str, Callable[[str], bool]] = {
    "date-time": _decodes(datetime.datetime),
    "date": _decodes(datetime.date),
    "time": _decodes(datetime.time),
    "duration": _decodes(datetime.timedelta),
    "uuid": _decodes(uuid.UUID),
    "decimal": _decodes(decimal.Decimal),
}
"""A Struct's string formats are what msgspec decodes for the field's type."""


def field_path(parts: Iterable[str | int]) -> str:
    """``["properties", "a", "properties", "b", "pattern"]`` → ``a.b``."""
    names = []
    after = False
    for part in parts:
        if after:
            names.append(str(part))
        after = part == "properties"
    return ".".join(names)


_EXPECTED: Final = {
    "Expected `int`": "must be an integer",
    "Expected `str`": "must be a string",
    "Expected `float`": "must be a number",
    "Expected `bool`": "must be a boolean",
    "Expected `object`": "must be an object",
    "Expected `array`": "must be an array",
}


def readable(exc: msgspec.ValidationError) -> str:
    """msgspec's refusal as a violation: ``"level" must be an integer`` (``2.0``, a Literal)."""
    text = str(exc)
    head, at, path = text.rpartition(" - at `$")
    if not at or not path.endswith("`"):
        return f'"arguments" are invalid: {text}'
    where = f'"{path[:-1].removeprefix(".")}"'
    rule = _EXPECTED.get(head.split(",", 1)[0])
    return f"{where} {rule}" if rule else f"{where} is invalid: {head}"
