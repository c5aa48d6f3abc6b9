"""Public homes: an object re-exported by a public module reports that module.

trio's ``fixup_module_metadata`` idea. ``repr()``, ``help()``, tracebacks and pickling
by reference then name ``toolnursery.ToolRegistry``, not the private module that
defines it today, so code can move between private modules without a user noticing —
and a pickle written before the move still loads after it.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

__all__ = ["fixup_module_metadata"]


def fixup_module_metadata(module_name: str, names: Iterable[str]) -> None:
    """Make the objects ``module_name`` exports as ``names`` report it as their home.

    Run at the end of a public module, over its ``__all__``. Only an object that still
    reports a private home (a ``toolnursery._…`` module) moves, so an object two public
    modules export keeps the first one to run as its home: the package runs first,
    and keeps its errors when :mod:`toolnursery.log` re-exports some of them.

    A moved class takes its methods, properties and nested classes along; every
    ``__qualname__`` stays as it is (the public names are the private ones). Its string
    annotations (``from __future__ import annotations``) are resolved first, in the
    module they were written in: ``typing.get_type_hints`` and msgspec resolve a
    class's annotations in the module its ``__module__`` names, where the private
    module's own imports are not.

    Args:
        module_name: the public module, already in :data:`sys.modules`.
        names: the names it exports.
    """
    module = sys.modules[module_name]
    seen: set[int] = set()
    for name in names:
        _fix(getattr(module, name), module_name, seen)


def _is_private(module: object) -> bool:
    if not isinstance(module, str) or not module.startswith("toolnursery."):
        return False
    return any(part.startswith("_") for part in module.split(".")[1:])


def _fix(obj: Any, home: str, seen: set[int], owner: str = "") -> None:
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    elif isinstance(obj, property):
        for accessor in (obj.fget, obj.fset, obj.fdel):
            _fix(accessor, home, seen, owner)
        return
    # Only classes and functions have a home of their own: a type alias reports
    # typing's or collections.abc's module, a constant none.
    if id(obj) in seen or not isinstance(obj, type | types.FunctionType):
        return
    # A member moves with its class only if the class body defined it: a module-level
    # function assigned to a class attribute keeps its own home.
    if owner and not obj.__qualname__.startswith(owner):
        return
    seen.add(id(obj))
    written_in = obj.__module__
    if not _is_private(written_in):
        return
    if isinstance(obj, type):
        _resolve_annotations(obj, sys.modules[written_in])
        for member in list(vars(obj).values()):
            _fix(member, home, seen, f"{obj.__qualname__}.")
    obj.__module__ = home


def _resolve_annotations(cls: type, written_in: object) -> None:
    annotations = vars(cls).get("__annotations__")
    if not isinstance(annotations, dict):
        return
    namespace = dict(vars(written_in))
    local = dict(vars(cls))
    for field, annotation in list(annotations.items()):
        if isinstance(annotation, str):
            try:
                annotations[field] = eval(annotation, namespace, local)
            except NameError:  # a name only a type checker sees: leave it to them
                continue
