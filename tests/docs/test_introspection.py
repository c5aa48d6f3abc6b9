"""help(), inspect.signature and typing.get_type_hints work on every public name.

The walk covers ``__all__`` of the package and of every public submodule (any module
below it with no underscore-led name on its path, ``toolnursery.providers.anthropic``
included), so a module added later is checked without editing this file. Annotations that name a class across an import cycle are the
usual failure: the name is imported only for type checkers and ``NameError`` surfaces
at runtime, in ``help()`` as well.
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import pydoc
import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest

import toolnursery


def _public_modules() -> list[str]:
    """The package and every module below it with no underscore-led name on its path."""
    names = ["toolnursery"]
    for info in pkgutil.walk_packages(toolnursery.__path__, "toolnursery."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


def _public_names() -> Iterator[tuple[str, str]]:
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            yield module_name, name


PUBLIC = list(_public_names())


def _is_data(value: object) -> bool:
    """A constant (``TOOL_TIMEOUT``): ``help("...")`` of a string is a topic lookup."""
    return isinstance(value, str | int | float | bool | bytes | type(None))


def _is_alias(value: object) -> bool:
    """A type alias (``ExecuteWrapper``): documented, but not a callable to sign."""
    return isinstance(value, types.GenericAlias | types.UnionType) or (
        type(value).__module__ == "typing" and not inspect.isclass(value)
    )


def _builtin_constructor(cls: type) -> bool:
    """An error class or a dict subclass (``SchemaProp``) that keeps its builtin base's
    constructor: Python gives such classes no signature (``inspect.signature(ValueError)``
    fails too)."""
    if not issubclass(cls, BaseException | dict):
        return False
    for base in cls.__mro__:
        if "__init__" in vars(base) or "__new__" in vars(base):
            return base.__module__ == "builtins"
    return True


def _own_functions(cls: type) -> Iterator[tuple[str, Any]]:
    for attribute, value in vars(cls).items():
        if attribute.startswith("_") and attribute not in ("__init__", "__call__"):
            continue
        if isinstance(value, property):
            value = value.fget
        elif isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if inspect.isfunction(value):
            yield attribute, value


def test_every_public_module_is_walked() -> None:
    modules = _public_modules()
    for expected in (
        "toolnursery",
        "toolnursery.aio",
        "toolnursery.examples",
        "toolnursery.testing",
    ):
        assert expected in modules
    for module_name in modules:
        assert hasattr(importlib.import_module(module_name), "__all__"), module_name
    assert len(PUBLIC) > 100


@pytest.mark.parametrize(("module_name", "name"), PUBLIC)
def test_help_renders(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    if _is_data(value):
        return
    out = io.StringIO()
    pydoc.Helper(output=out).help(value)
    text = out.getvalue()
    assert "No Python documentation found" not in text
    assert text.strip()


@pytest.mark.parametrize(("module_name", "name"), PUBLIC)
def test_signature(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    if _is_data(value) or _is_alias(value) or not callable(value):
        return
    if inspect.isclass(value) and _builtin_constructor(value):
        return
    signature = inspect.signature(value)
    # Resolving every annotation string is what help() does too.
    typing.get_type_hints(value.__init__ if inspect.isclass(value) else value)
    assert isinstance(signature, inspect.Signature)


@pytest.mark.parametrize(("module_name", "name"), PUBLIC)
def test_type_hints(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    if _is_data(value) or _is_alias(value):
        return
    if inspect.isfunction(value):
        typing.get_type_hints(value)
    elif inspect.isclass(value):
        typing.get_type_hints(value)
        for _attribute, function in _own_functions(value):
            typing.get_type_hints(function)
