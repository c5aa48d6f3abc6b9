"""Dependencies: what a tool body is given by the run, never by the model.

A run passes ``deps=`` (``run_tool_calls``, ``open_tool_batch``, ``registry.execute``);
every body reads it as ``ctx.deps``. An ``@tool`` parameter marked :func:`Depends` — as
its default (``inbox: Inbox = Depends("inbox")``) or as ``Annotated`` metadata
(``Annotated[Inbox, Depends("inbox")]``) — is resolved from it for each call and never
appears in the schema the model sees:

- ``Depends("inbox")``: ``deps["inbox"]`` when ``deps`` is a mapping, else
  ``deps.inbox``;
- ``Depends(fn)``: ``fn(ctx)`` (or ``fn()`` when it takes no argument), sync or async,
  once per call however many parameters name it (``use_cache=False``: once per
  parameter);
- ``Depends()``: the one value in ``deps`` (``deps`` itself, or one of its fields or
  mapping values) that is an instance of the parameter's class.

A dependency that cannot be resolved fails the call with :class:`DependencyError`
before the body runs. A ``depends=`` hook on ``@tool`` maps another library's markers
to :func:`Depends` (:data:`DependsHook`).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .._core._bodies import is_async
from .._core._errors import DependencyError, RegistrationError
from .._core._execution import ToolRunContext

__all__ = [
    "Dependency",
    "DependencyError",
    "Depends",
    "DependsHook",
    "Injected",
    "is_context",
    "marker",
]


class Dependency:
    """A parameter's dependency marker, as :func:`Depends` makes it.

    Attributes:
        dependency: a name in ``deps``, a callable given the run context, or
            ``None`` (the parameter's class picks the value out of ``deps``).
        use_cache: a callable dependency runs once per call for all the parameters
            that name it (``False``: once per parameter).
    """

    __slots__ = ("dependency", "use_cache")

    def __init__(
        self,
        dependency: str | Callable[..., Any] | None = None,
        *,
        use_cache: bool = True,
    ) -> None:
        if dependency is not None and not isinstance(dependency, str) and not callable(dependency):
            raise TypeError(
                "Depends() takes a name in deps, a callable or nothing, "
                f"not {type(dependency).__name__}"
            )
        self.dependency: str | Callable[..., Any] | None = dependency
        self.use_cache: bool = use_cache

    def __repr__(self) -> str:
        if self.dependency is None:
            return "Depends()"
        if isinstance(self.dependency, str):
            return f"Depends({self.dependency!r})"
        return f"Depends({getattr(self.dependency, '__qualname__', self.dependency)!r})"


def Depends(
    dependency: str | Callable[..., Any] | None = None, /, *, use_cache: bool = True
) -> Any:
    """Mark an ``@tool`` parameter as injected from the run's ``deps``, not exposed to the model.

    Use it as the parameter's default or as ``Annotated`` metadata::

        @tool
        def send(to: str, inbox: Annotated[Inbox, Depends("inbox")]) -> str: ...

        @tool
        async def fetch(url: str, client: Client = Depends(lambda ctx: ctx.deps.http)) -> str: ...

    Args:
        dependency: ``"name"`` — ``deps["name"]`` (a mapping) or ``deps.name``; a
            callable — called with the run context (or with nothing, if it takes no
            argument), awaited if async; omitted — the value in ``deps`` that is an
            instance of the parameter's class (``deps`` itself, or exactly one of its
            fields or values).
        use_cache: call a callable dependency once per call for every parameter
            naming it (the default), or once per parameter.

    Returns:
        The marker (a :class:`Dependency`; typed ``Any`` so it fits any default).
    """
    return Dependency(dependency, use_cache=use_cache)


DependsHook: TypeAlias = Callable[[object], Dependency | None]
"""``@tool(depends=...)``: maps a foreign marker (``Annotated`` metadata or a default
value) to a :class:`Dependency`, or ``None`` to leave it alone."""


def is_context(annotation: object) -> bool:
    """Whether ``annotation`` is the run context (``ToolRunContext``, ``ToolRunContext[D]``)."""
    if annotation is ToolRunContext:
        return True
    if isinstance(annotation, type):
        return issubclass(annotation, ToolRunContext)
    return typing.get_origin(annotation) is ToolRunContext


def marker(value: object, hook: DependsHook | None, owner: str, where: str) -> Dependency | None:
    """The :class:`Dependency` ``value`` is (itself, or what ``hook`` maps it to), else ``None``."""
    if isinstance(value, Dependency):
        return value
    if hook is None:
        return None
    try:
        mapped = hook(value)
    except Exception as exc:
        raise RegistrationError(f"{owner}: the depends hook raised on {where}: {exc!r}") from exc
    if mapped is not None and not isinstance(mapped, Dependency):
        raise RegistrationError(
            f"{owner}: the depends hook must return Depends(...) or None, "
            f"got {type(mapped).__name__} for {where}"
        )
    return mapped


_MISSING: Final = object()


class Injected:
    """One injected parameter, compiled at definition time: :meth:`get` resolves it."""

    __slots__ = ("cache_key", "call", "cls", "key", "name", "takes_ctx", "use_cache")

    def __init__(
        self, name: str, dep: Dependency, annotation: object, owner: str, body_async: bool
    ) -> None:
        self.name = name
        self.key: str | None = None
        self.call: Callable[..., Any] | None = None
        self.cache_key: object = None
        self.cls: type | None = None
        self.takes_ctx = True
        self.use_cache = dep.use_cache
        target = dep.dependency
        if isinstance(target, str):
            self.key = target
        elif target is None:
            cls = _bare(annotation)
            if not isinstance(cls, type):
                raise RegistrationError(
                    f'{owner}: parameter "{name}" is Depends() without a dependency, so '
                    f"its annotation must be a class to look up in deps, not {annotation!r}"
                )
            self.cls = cls
        else:
            if not body_async and is_async(target):
                raise RegistrationError(
                    f'{owner}: parameter "{name}" depends on the async {_show(target)}, '
                    "but the tool body is sync; make the body async or the dependency sync"
                )
            self.call = target
            self.cache_key = _cache_key(target)
            self.takes_ctx = _takes_argument(target)

    def describe(self) -> str:
        """The dependency as messages name it."""
        if self.key is not None:
            return f'"{self.key}"'
        if self.cls is not None:
            return f"of type {self.cls.__qualname__}"
        return _show(self.call)

    def get(self, ctx: ToolRunContext[Any], cache: dict[Any, Any]) -> Any:
        """Resolve for one call from a sync body (a callable's result is not awaited).

        Raises:
            DependencyError: the dependency is missing, ambiguous, or async.
        """
        call = self.call
        if call is None:
            return self._lookup(getattr(ctx, "deps", None))  # a remote context has none
        key = self.cache_key
        if self.use_cache and key in cache:
            return cache[key]
        value = call(ctx) if self.takes_ctx else call()
        if inspect.isawaitable(value):
            close = getattr(value, "close", None)
            if close is not None:
                close()
            raise DependencyError(
                f'parameter "{self.name}": dependency {self.describe()} returned an '
                "awaitable, which a sync tool body cannot await"
            )
        if self.use_cache:
            cache[key] = value
        return value

    async def aget(self, ctx: ToolRunContext[Any], cache: dict[Any, Any]) -> Any:
        """Resolve for one call from an async body (a callable's awaitable is awaited)."""
        call = self.call
        if call is None:
            return self._lookup(getattr(ctx, "deps", None))  # a remote context has none
        key = self.cache_key
        if self.use_cache and key in cache:
            return cache[key]
        value = call(ctx) if self.takes_ctx else call()
        if inspect.isawaitable(value):
            value = await value
        if self.use_cache:
            cache[key] = value
        return value

    def _lookup(self, deps: Any) -> Any:
        key = self.key
        if key is not None:
            if isinstance(deps, Mapping):
                value = deps.get(key, _MISSING)
            else:
                value = getattr(deps, key, _MISSING)
            if value is not _MISSING:
                return value
            raise self._missing(deps)
        cls = self.cls
        assert cls is not None
        if isinstance(deps, cls):
            return deps
        found = [v for v in _members(deps) if isinstance(v, cls)]
        if len(found) == 1:
            return found[0]
        if found:
            raise DependencyError(
                f'parameter "{self.name}" needs the dependency {self.describe()}, and deps '
                f"({type(deps).__name__}) has {len(found)} such values; name one: "
                'Depends("<name>")'
            )
        raise self._missing(deps)

    def _missing(self, deps: Any) -> DependencyError:
        why = "no deps were given" if deps is None else f"deps ({type(deps).__name__}) has none"
        return DependencyError(
            f'parameter "{self.name}" needs the dependency {self.describe()}, but {why}'
        )


def _members(deps: Any) -> list[Any]:
    """The values a class-typed ``Depends()`` may pick: a mapping's values, an object's fields."""
    if deps is None:
        return []
    if isinstance(deps, Mapping):
        return list(deps.values())
    names: dict[str, None] = {}
    for name in getattr(type(deps), "__struct_fields__", ()):
        names[name] = None
    if dataclasses.is_dataclass(deps):
        for field in dataclasses.fields(deps):
            names[field.name] = None
    for name in getattr(deps, "__dict__", {}):
        if not name.startswith("_"):
            names[name] = None
    for klass in type(deps).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if isinstance(name, str) and not name.startswith("_"):
                names[name] = None
    return [v for v in (getattr(deps, n, _MISSING) for n in names) if v is not _MISSING]


def _cache_key(call: Callable[..., Any]) -> object:
    """What the per-call cache files ``call``'s value under: the callable itself, so
    equal callables share one value, or its identity when it cannot be hashed (an
    ``eq=True`` dataclass with ``__call__``); it lives as long as the tool does."""
    try:
        hash(call)
    except Exception:
        return ("unhashable", id(call))
    return call


def _bare(annotation: object) -> object:
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation


def _takes_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can take the context positionally (else it is called with nothing)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )


def _show(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))
