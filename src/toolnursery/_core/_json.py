"""Lossless JSON snapshots: detach a value from its owner and deep-freeze it.

A value is *lossless JSON* when encoding it and decoding the text gives an equal
value back: ``None``, booleans, strings, integers, finite floats other than ``-0.0``,
lists/tuples and string-keyed dicts of lossless JSON, nested at most
:data:`MAX_JSON_DEPTH` levels. A snapshot copies such a value into immutable
containers (tuples and :class:`FrozenDict`); shared sub-values (a DAG) are copied,
cycles and everything else are rejected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn, TypeAlias

from ._errors import NotJSONError

__all__ = ["MAX_JSON_DEPTH", "FrozenDict", "JSONValue", "NotJSONError", "snapshot", "thaw"]

JSONValue: TypeAlias = "bool | int | float | str | tuple[JSONValue, ...] | FrozenDict | list[Any] | dict[str, Any] | None"
"""A JSON value; snapshots hold only the immutable forms (tuples, FrozenDict)."""

MAX_JSON_DEPTH = 256
"""Containers nested deeper than this are rejected: they cannot be encoded and
decoded again within Python's recursion limit, so they are not lossless here."""


def _readonly(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("FrozenDict is read-only (tool arguments and results are frozen)")


class FrozenDict(dict[str, Any]):
    """A read-only ``dict``: every mutating method raises ``TypeError``.

    It is a real ``dict`` subclass so that ``json``, ``msgspec`` and ``isinstance(x,
    dict)`` treat it as a JSON object; it is hashable when its values are.
    """

    __slots__ = ()

    __setitem__: Callable[..., NoReturn] = _readonly
    __delitem__: Callable[..., NoReturn] = _readonly
    __ior__: Callable[..., NoReturn] = _readonly
    clear: Callable[..., NoReturn] = _readonly
    pop: Callable[..., NoReturn] = _readonly
    popitem: Callable[..., NoReturn] = _readonly
    setdefault: Callable[..., NoReturn] = _readonly
    update: Callable[..., NoReturn] = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


_dict_setitem = dict.__setitem__
_inf = math.inf


def snapshot(value: object) -> Any:
    """Return a detached, deep-frozen copy of a lossless JSON value.

    Args:
        value: any object.

    Returns:
        The copy: dicts become :class:`FrozenDict`, lists and tuples become tuples,
        ``str``/``int``/``float`` subclasses become the plain type.

    Raises:
        NotJSONError: the value (or something inside it) is not lossless JSON.
    """
    return _freeze(value, 0, set(), "value")


def _freeze(value: object, depth: int, active: set[int], path: str) -> Any:
    t = type(value)
    if t is str or t is bool or value is None:
        return value
    if t is int:
        return value
    if t is float:
        f: float = value  # type: ignore[assignment]
        if f != f or f == _inf or f == -_inf or (f == 0.0 and math.copysign(1.0, f) < 0):
            raise NotJSONError(f"{path} is not a finite JSON number: {f!r}")
        return f
    if isinstance(value, dict | MappingProxyType):
        return _freeze_mapping(value, depth, active, path)
    if t is list or t is tuple:
        return _freeze_array(value, depth, active, path)  # type: ignore[arg-type]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _freeze(float(value), depth, active, path)
    raise NotJSONError(f"{path} is not JSON data: {t.__name__}")


def _enter(value: object, depth: int, active: set[int], path: str) -> int:
    if depth >= MAX_JSON_DEPTH:
        raise NotJSONError(f"{path} is nested deeper than {MAX_JSON_DEPTH} levels")
    key = id(value)
    if key in active:
        raise NotJSONError(f"{path} is circular")
    active.add(key)
    return key


def _freeze_mapping(
    value: Mapping[Any, Any], depth: int, active: set[int], path: str
) -> FrozenDict:
    key = _enter(value, depth, active, path)
    out = FrozenDict()
    for k, v in value.items():
        if type(k) is not str:
            if not isinstance(k, str):
                raise NotJSONError(f"{path} has a non-string key: {k!r}")
            k = str(k)
        t = type(v)
        if t is str or t is bool or t is int or v is None:
            _dict_setitem(out, k, v)
        else:
            _dict_setitem(out, k, _freeze(v, depth + 1, active, f"{path}.{k}"))
    active.discard(key)
    return out


def _freeze_array(
    value: list[Any] | tuple[Any, ...], depth: int, active: set[int], path: str
) -> tuple[Any, ...]:
    key = _enter(value, depth, active, path)
    out = tuple([_freeze(v, depth + 1, active, f"{path}[{i}]") for i, v in enumerate(value)])
    active.discard(key)
    return out


def thaw(value: Any) -> Any:
    """Return a mutable deep copy of a snapshot: ``FrozenDict`` → ``dict``, tuple → ``list``."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value
