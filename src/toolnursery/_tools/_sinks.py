"""Sink markers on a tool's parameters: read from ``@tool`` signatures, normalized for policies."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .._core._provenance import Sink, sink_kind
from ._definition import ToolOptions

__all__ = ["merge_sink_markers", "sinks_of"]


def _markers(fn: Callable[..., Any]) -> dict[str, tuple[Sink, ...]]:
    """The ``Annotated[..., Sink.X]`` markers of ``fn``'s parameters (top level only)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        return {}  # read_signature reports an unreadable signature, by name
    found: dict[str, tuple[Sink, ...]] = {}
    for name, annotation in hints.items():
        if name == "return" or typing.get_origin(annotation) is not typing.Annotated:
            continue
        kinds = tuple(extra for extra in typing.get_args(annotation)[1:] if isinstance(extra, Sink))
        if kinds:
            found[name] = kinds
    return found


def merge_sink_markers(fn: Callable[..., Any], options: ToolOptions) -> ToolOptions:
    """``options`` with ``fn``'s ``Annotated`` sink markers added to its ``sinks``
    (a kind given in ``sinks=`` for the same parameter comes first)."""
    markers = _markers(fn)
    if not markers:
        return options
    merged: dict[str, tuple[Sink, ...]] = {
        name: _kinds(kinds) for name, kinds in (options.sinks or {}).items()
    }
    for name, kinds in markers.items():
        given = merged.get(name, ())
        merged[name] = (*given, *(k for k in kinds if k not in given))
    return msgspec.structs.replace(options, sinks=merged)


def _kinds(kinds: object) -> tuple[Sink, ...]:
    items = kinds if isinstance(kinds, tuple | list) else (kinds,)
    return tuple(dict.fromkeys(sink_kind(k) for k in items))


def sinks_of(definition: ToolOptions | None) -> Mapping[str, tuple[Sink, ...]]:
    """A definition's sink parameters, each with its kinds (``{}``: none)."""
    sinks = None if definition is None else definition.sinks
    if not sinks:
        return {}
    return {name: _kinds(kinds) for name, kinds in sinks.items()}
