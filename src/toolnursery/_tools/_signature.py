"""How ``@tool`` reads a function's signature: exposed, context and injected parameters.

Every parameter is one of: the run context (annotated ``ToolRunContext`` or
``ToolRunContext[D]``), injected (marked :func:`~toolnursery.Depends`, as its default or
as ``Annotated`` metadata, or a foreign marker the ``depends=`` hook maps), or exposed
to the model. Only exposed parameters reach a schema.

``Annotated`` metadata is read the same whichever path then checks the arguments
(msgspec's, or pydantic's once any parameter uses pydantic): a string (or
``typing_extensions.Doc``) is the parameter's description, ``msgspec.Meta`` and
pydantic / ``annotated_types`` metadata are constraints, a dependency marker is
injection, and anything else is refused, naming the parameter — nothing is dropped
silently. On msgspec's path a bare ``dict`` is a JSON object (``dict[str, Any]``), and
TypedDict, dataclass and attrs classes become frozen Structs for the schema and
validation; the body still receives instances of the declared classes.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TypeAlias

import msgspec
import msgspec.inspect as mi

from .._core._errors import RegistrationError, ToolArgsError
from .._core._execution import ToolRunContext
from .._core._provenance import Sink
from ._docstrings import field_docs
from ._inject import DependsHook, Injected, is_context, marker
from ._struct_check import pattern_free

__all__ = [
    "Kind",
    "Param",
    "ParamPlan",
    "closed_plan",
    "for_pydantic",
    "for_struct",
    "invoker",
    "read_signature",
]

_Invoke: TypeAlias = Callable[[Any, ToolRunContext[Any]], Any]


class Kind(enum.Enum):
    """Where the value of one parameter comes from when the body is called."""

    ARGUMENT = "argument"  # the validated argument of that name
    CONVERTED = "converted"  # the validated argument, converted to the declared class
    CONTEXT = "context"  # the run context
    INJECTED = "injected"  # resolved from the run's deps


class Param(NamedTuple):
    """An exposed parameter: ``(name, annotation, default or inspect.Parameter.empty)``."""

    name: str
    annotation: Any
    default: Any


class ParamPlan(NamedTuple):
    """How the body gets one parameter: ``(name, kind, positional only, payload)``.

    ``payload`` is the :class:`Injected` of an injected parameter and the converter of
    a converted one.
    """

    name: str
    kind: Kind
    positional: bool
    payload: Any


_EMPTY: Final = inspect.Parameter.empty
_ANY_OBJECT: Final = dict[str, Any]


def read_signature(
    fn: Callable[..., Any], owner: str, hook: DependsHook | None, body_async: bool
) -> tuple[list[Param], list[ParamPlan], bool]:
    """Split ``fn``'s parameters: ``(exposed, plan, pydantic metadata seen)``.

    Raises:
        RegistrationError: the signature cannot be read; a parameter is variadic,
            unannotated, or carries ``Annotated`` metadata nothing here understands
            (or a dependency marker inside a type).
    """
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise RegistrationError(f"{owner}: cannot read the signature: {exc}") from exc
    exposed: list[Param] = []
    plan: list[ParamPlan] = []
    pydantic_seen = False
    for param in signature.parameters.values():
        name = param.name
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise RegistrationError(
                f'{owner}: parameter "{name}" is variadic; tool parameters must be named'
            )
        annotation = hints.get(name, _EMPTY)
        if annotation is _EMPTY:
            raise RegistrationError(f'{owner}: parameter "{name}" needs a type annotation')
        positional = param.kind is param.POSITIONAL_ONLY
        where = f'parameter "{name}"'
        dep = None
        if param.default is not _EMPTY:
            dep = marker(param.default, hook, owner, f"the default of {where}")
        if typing.get_origin(annotation) is typing.Annotated:
            inner, *extras = typing.get_args(annotation)
            if any(isinstance(extra, Sink) for extra in extras):  # read by sink_markers
                extras = [extra for extra in extras if not isinstance(extra, Sink)]
                annotation = typing.Annotated[(inner, *extras)] if extras else inner
            for extra in extras:
                found = marker(extra, hook, owner, f"the metadata of {where}")
                if found is not None:
                    dep = found
            if dep is not None:
                annotation = inner
        if dep is not None:
            injected = Injected(name, dep, annotation, owner, body_async)
            plan.append(ParamPlan(name, Kind.INJECTED, positional, injected))
            continue
        if is_context(_strip(annotation)):
            plan.append(ParamPlan(name, Kind.CONTEXT, positional, None))
            continue
        walk = _Metadata(owner, where, hook)
        annotation = walk.map(annotation)
        pydantic_seen = pydantic_seen or walk.pydantic
        exposed.append(Param(name, annotation, param.default))
        plan.append(ParamPlan(name, Kind.ARGUMENT, positional, None))
    return exposed, plan, pydantic_seen


def _strip(annotation: object) -> object:
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation


# -- one walk over an annotation --------------------------------------------------------


def _rebuild(annotation: Any, map_arg: Callable[[Any], Any]) -> Any:
    """``annotation`` with ``map_arg`` applied to its type arguments (itself if unchanged)."""
    origin = typing.get_origin(annotation)
    if origin is None or origin is typing.Literal:
        return annotation
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        inner = map_arg(args[0])
        return annotation if inner is args[0] else typing.Annotated[(inner, *args[1:])]
    new = tuple(a if a is Ellipsis or isinstance(a, list) else map_arg(a) for a in args)
    if all(n is a for n, a in zip(new, args, strict=True)):
        return annotation
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[new]  # noqa: UP007  (built from a tuple)
    if origin is typing.Required or origin is typing.NotRequired:
        return origin[new[0]]
    try:
        return origin[new]
    except TypeError:
        return annotation


class _Metadata:
    """Normalize ``Annotated`` metadata, path-independently (see the module docstring)."""

    def __init__(self, owner: str, where: str, hook: DependsHook | None) -> None:
        self.owner = owner
        self.where = where
        self.hook = hook
        self.pydantic = False

    def map(self, annotation: Any) -> Any:
        if typing.get_origin(annotation) is not typing.Annotated:
            return _rebuild(annotation, self.map)
        inner, *extras = typing.get_args(annotation)
        kept = [self._one(extra) for extra in extras]
        mapped = self.map(inner)
        if mapped is inner and all(k is e for k, e in zip(kept, extras, strict=True)):
            return annotation
        return typing.Annotated[(mapped, *kept)]

    def _one(self, extra: object) -> object:
        if isinstance(extra, str):
            return msgspec.Meta(description=extra)
        if type(extra).__name__ == "Doc" and isinstance(getattr(extra, "documentation", 0), str):
            return msgspec.Meta(description=extra.documentation)  # type: ignore[attr-defined]
        if isinstance(extra, msgspec.Meta):
            return extra
        if _is_pydantic(extra):
            self.pydantic = True
            return extra
        if marker(extra, self.hook, self.owner, f"the metadata of {self.where}") is not None:
            raise RegistrationError(
                f"{self.owner}: {self.where}: a dependency marker must annotate the "
                f"parameter itself, not a type inside it ({extra!r})"
            )
        raise RegistrationError(
            f"{self.owner}: {self.where}: Annotated metadata {extra!r} is not enforced "
            "here; use msgspec.Meta (or pydantic parameters, with pydantic installed), "
            "a description string, or Depends(...)"
        )


def _is_pydantic(extra: object) -> bool:
    if "pydantic" not in sys.modules:
        return False
    cls = type(extra)
    if cls.__module__.startswith(("pydantic", "annotated_types")):
        return True
    return hasattr(cls, "__get_pydantic_core_schema__") or hasattr(
        cls, "__get_pydantic_json_schema__"
    )


# -- the two paths ----------------------------------------------------------------------


def for_struct(
    params: list[Param], owner: str
) -> tuple[list[Param], dict[str, Callable[[Any], Any]]]:
    """msgspec's path: bare ``dict`` as ``dict[str, Any]``, record classes as Structs.

    Returns the parameters to build the arguments Struct from and, by name, the
    converters that turn a validated value back into the declared class.
    """
    return _Shapes(owner, pydantic=False).params(params)


def for_pydantic(
    params: list[Param], owner: str
) -> tuple[list[Param], dict[str, Callable[[Any], Any]]]:
    """pydantic's path: ``msgspec.Meta`` as the ``pydantic.Field`` it means, record
    classes (TypedDict, dataclass, attrs) as pydantic models; converters as above."""
    return _Shapes(owner, pydantic=True).params(params)


class _Shapes:
    """Rewrite annotations for one path; remember the classes made for record classes."""

    def __init__(self, owner: str, *, pydantic: bool) -> None:
        self.owner = owner
        self.pydantic = pydantic
        self.made: dict[type, type] = {}
        self.active: set[type] = set()
        self.classes = False
        self.name = ""

    def params(self, params: list[Param]) -> tuple[list[Param], dict[str, Callable[[Any], Any]]]:
        out: list[Param] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        for param in params:
            self.classes = False
            self.name = param.name
            mapped = self.map(param.annotation)
            out.append(param._replace(annotation=mapped))
            if self.classes:
                dump = _pydantic_dump(mapped) if self.pydantic else msgspec.to_builtins
                converters[param.name] = _converter(param.name, param.annotation, dump)
        return out, converters

    def map(self, annotation: Any) -> Any:
        if annotation is dict:
            return _ANY_OBJECT
        origin = typing.get_origin(annotation)
        if origin is dict and not typing.get_args(annotation):
            return _ANY_OBJECT
        if origin is typing.Annotated and self.pydantic:
            inner, *extras = typing.get_args(annotation)
            kept = [self._field(e) if isinstance(e, msgspec.Meta) else e for e in extras]
            return typing.Annotated[(self.map(inner), *kept)]
        if isinstance(annotation, type) and origin is None and _is_record(annotation):
            self.classes = True
            return self._record(annotation)
        return _rebuild(annotation, self.map)

    def _record(self, cls: type) -> type:
        made = self.made.get(cls)
        if made is not None:
            return made
        if cls in self.active:
            raise RegistrationError(f"{self.owner}: {cls.__qualname__} is recursive")
        self.active.add(cls)
        try:
            info = mi.type_info(cls)
            hints = typing.get_type_hints(cls, include_extras=True)
        except (NameError, TypeError, ValueError) as exc:
            raise RegistrationError(f"{self.owner}: {cls.__qualname__}: {exc}") from exc
        assert isinstance(info, mi.TypedDictType | mi.DataclassType)
        fields: list[tuple[str, Any, Any]] = []
        for field in info.fields:
            annotation = self.map(_strip_required(hints[field.name]))
            if field.required:
                default: Any = _EMPTY
            elif field.default is msgspec.NODEFAULT or _mutable(field.default):
                default = _ABSENT  # absent stays absent: the class applies its own default
            else:
                default = field.default
            fields.append((field.encode_name, annotation, default))
        self.active.discard(cls)
        try:
            made = self._pydantic_model(cls, fields) if self.pydantic else _struct(cls, fields)
        except (TypeError, ValueError) as exc:
            raise RegistrationError(f"{self.owner}: {cls.__qualname__}: {exc}") from exc
        self.made[cls] = made
        return made

    def _pydantic_model(self, cls: type, fields: list[tuple[str, Any, Any]]) -> type:
        import pydantic

        docs = field_docs(cls)
        spec: dict[str, Any] = {}
        for name, annotation, default in fields:
            info: dict[str, Any] = {}
            if docs.get(name):
                info["description"] = docs[name]
            if default is _ABSENT:
                info["default_factory"] = _none
            elif default is not _EMPTY:
                info["default"] = default
            spec[name] = (annotation, pydantic.Field(**info))
        return pydantic.create_model(cls.__name__, __module__=cls.__module__, **spec)  # type: ignore[no-any-return]

    def _field(self, meta: msgspec.Meta) -> Any:
        import pydantic

        if meta.tz is not None:
            raise RegistrationError(
                f'{self.owner}: parameter "{self.name}": msgspec.Meta(tz=...) has no '
                "pydantic form; use pydantic's AwareDatetime/NaiveDatetime"
            )
        kwargs: dict[str, Any] = {}
        for key in _META_TO_FIELD:
            value = getattr(meta, key)
            if value is not None:
                kwargs[key] = list(value) if key == "examples" else value
        if meta.extra_json_schema:
            kwargs["json_schema_extra"] = dict(meta.extra_json_schema)
        return pydantic.Field(**kwargs)


_ABSENT: Final = object()

_META_TO_FIELD: Final = (
    "gt",
    "ge",
    "lt",
    "le",
    "multiple_of",
    "pattern",
    "min_length",
    "max_length",
    "title",
    "description",
    "examples",
)


def _none() -> None:
    return None


def _struct(cls: type, fields: list[tuple[str, Any, Any]]) -> type:
    spec = [
        (n, a) if d is _EMPTY else (n, a, msgspec.UNSET if d is _ABSENT else d)
        for n, a, d in fields
    ]
    struct = msgspec.defstruct(cls.__name__, spec, frozen=True, kw_only=True, module=cls.__module__)
    struct.__doc__ = cls.__doc__  # its field descriptions
    return struct


def _pydantic_dump(annotation: Any) -> Callable[[Any], Any]:
    import pydantic

    adapter = pydantic.TypeAdapter(annotation)

    def dump(value: Any) -> Any:
        return adapter.dump_python(value, mode="json", exclude_unset=True)

    return dump


def _converter(name: str, declared: Any, dump: Callable[[Any], Any]) -> Callable[[Any], Any]:
    convert = msgspec.convert
    # msgspec would match the declared patterns with Python's re: the engine matched them.
    twin = pattern_free(declared)
    target, rebuild = (declared, None) if twin is None else twin

    def to_declared(value: Any) -> Any:
        try:
            converted = convert(dump(value), target, strict=False)
            return converted if rebuild is None else rebuild(converted)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise ToolArgsError([f'"{name}" is invalid: {exc}']) from exc

    return to_declared


def _is_record(cls: type) -> bool:
    if issubclass(cls, msgspec.Struct) or "pydantic" in getattr(cls, "__module__", ""):
        return False
    if _is_typeddict(cls) or dataclasses.is_dataclass(cls):
        return True
    return hasattr(cls, "__attrs_attrs__")


def _is_typeddict(cls: type) -> bool:
    """``typing.TypedDict`` or ``typing_extensions.TypedDict`` (a class of its own before
    Python 3.13, which pydantic asks for before 3.12; loaded only if someone used it)."""
    if typing.is_typeddict(cls):
        return True
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(cls))


def _strip_required(annotation: Any) -> Any:
    while typing.get_origin(annotation) in (typing.Required, typing.NotRequired):
        annotation = typing.get_args(annotation)[0]
    return annotation


def _mutable(value: object) -> bool:
    return isinstance(value, list | dict | set | bytearray)


# -- unknown arguments -------------------------------------------------------------------


def closed_plan(
    schema: dict[str, Any],
    parse: Callable[[Any], Any],
    names: list[str],
    hosted: list[str],
    *,
    closed: bool = True,
) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    """``parse`` refusing what the model may not send, and ``schema`` saying so.

    An argument naming a context or injected parameter (``hosted``) is always refused
    (``argument "inbox" is supplied by the host, not the model``); with ``closed``, so
    is any other argument not in ``names`` (the exposed parameters, in declaration
    order), and the schema gets ``additionalProperties: false``. One violation per such
    key, in the order sent, then the other violations of the remaining arguments.
    """
    known = frozenset(names)
    host = frozenset(hosted)
    allowed = known if closed else None
    takes = f"the tool takes: {', '.join(names)}" if names else "the tool takes no arguments"
    encode = msgspec.json.encode

    def refused(key: str) -> str | None:
        if key in host:
            return f"argument {encode(key).decode()} is supplied by the host, not the model"
        if allowed is not None and key not in allowed:
            return f"unknown argument {encode(key).decode()} ({takes})"
        return None

    def parse_guarded(args: Any) -> Any:
        if not isinstance(args, dict):
            return parse(args)
        if allowed is not None:
            if allowed.issuperset(args):
                return parse(args)
        elif host.isdisjoint(args):
            return parse(args)
        found = [text for text in map(refused, args) if text is not None]
        rest = {k: v for k, v in args.items() if k not in host}
        try:  # and what else is wrong, as a validator lists every violation
            parse({k: v for k, v in rest.items() if allowed is None or k in allowed})
        except ToolArgsError as exc:
            found.extend(exc.violations)
        raise ToolArgsError(found)

    if not closed and not host:
        return schema, parse
    return ({**schema, "additionalProperties": False} if closed else schema), parse_guarded


# -- calling the body ---------------------------------------------------------------------


def invoker(
    fn: Callable[..., Any], plan: list[ParamPlan], body_async: bool
) -> tuple[_Invoke, Callable[..., Any]]:
    """The call of ``fn`` from validated arguments and the context, and what to ask
    whether it may suspend (``fn`` itself, unless a dependency is awaited first).

    With neither injected nor converted parameters it is the plain call (no cache, no
    loop over the plan): a tool without dependencies pays nothing for them.
    """
    if all(p.kind is Kind.ARGUMENT or p.kind is Kind.CONTEXT for p in plan):
        return _plain_invoker(
            fn, [(p.name, p.kind is Kind.CONTEXT, p.positional) for p in plan]
        ), fn
    sources = [(p.name, p.kind, p.positional, p.payload) for p in plan]
    if body_async:
        invoke = _injecting_async(fn, sources)
        awaits = any(p.kind is Kind.INJECTED and p.payload.call is not None for p in plan)
        return invoke, invoke if awaits else fn
    return _injecting_sync(fn, sources), fn


def _plain_invoker(fn: Callable[..., Any], plan: list[tuple[str, bool, bool]]) -> _Invoke:
    positional = tuple((n, c) for n, c, p in plan if p)
    keyword = tuple((n, c) for n, c, p in plan if not p)
    if not positional:

        def invoke_keywords(typed: Any, ctx: ToolRunContext[Any]) -> Any:
            return fn(**{n: ctx if c else getattr(typed, n) for n, c in keyword})

        return invoke_keywords

    def invoke(typed: Any, ctx: ToolRunContext[Any]) -> Any:
        return fn(
            *[ctx if c else getattr(typed, n) for n, c in positional],
            **{n: ctx if c else getattr(typed, n) for n, c in keyword},
        )

    return invoke


_Source: TypeAlias = tuple[str, Kind, bool, Any]
_ARGUMENT = Kind.ARGUMENT
_CONVERTED = Kind.CONVERTED
_CONTEXT = Kind.CONTEXT
_INJECTED = Kind.INJECTED


def _value(source: _Source, typed: Any, ctx: ToolRunContext[Any]) -> Any:
    name, kind, _, payload = source
    if kind is _ARGUMENT:
        return getattr(typed, name)
    if kind is _CONTEXT:
        return ctx
    assert kind is _CONVERTED
    return payload(getattr(typed, name))


def _injecting_sync(fn: Callable[..., Any], sources: list[_Source]) -> _Invoke:
    def invoke(typed: Any, ctx: ToolRunContext[Any]) -> Any:
        cache: dict[Any, Any] = {}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for source in sources:
            name, kind, positional, payload = source
            value = payload.get(ctx, cache) if kind is _INJECTED else _value(source, typed, ctx)
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
        return fn(*args, **kwargs)

    return invoke


def _injecting_async(fn: Callable[..., Any], sources: list[_Source]) -> _Invoke:
    async def invoke(typed: Any, ctx: ToolRunContext[Any]) -> Any:
        cache: dict[Any, Any] = {}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for source in sources:
            name, kind, positional, payload = source
            if kind is _INJECTED:
                value = await payload.aget(ctx, cache)  # a dependency may suspend
            else:
                value = _value(source, typed, ctx)
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
        return await fn(*args, **kwargs)

    return invoke
