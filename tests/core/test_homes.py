"""Public homes (``_core/_homes.py``): what moves to the public module, and what stays."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import msgspec
import pytest

from toolnursery._core._homes import fixup_module_metadata

PRIVATE = "toolnursery._fake._private"
PUBLIC = "toolnursery_fake_public"


@pytest.fixture
def modules() -> Iterator[tuple[types.ModuleType, types.ModuleType]]:
    """A private module defining things and a public one re-exporting them."""
    private = types.ModuleType(PRIVATE)
    source = """
from __future__ import annotations
from collections.abc import Sequence
import msgspec

class Thing:
    def method(self) -> int:
        return 1

    @property
    def prop(self) -> int:
        return 2

    class Inner:
        pass

class Value(msgspec.Struct, frozen=True):
    items: Sequence[int]

def helper() -> None:
    pass

def borrowed(self: object) -> int:
    return 3

Thing.borrowed = borrowed
CONSTANT = 7
"""
    exec(compile(source, PRIVATE, "exec"), private.__dict__)
    public = types.ModuleType(PUBLIC)
    for name in ("Thing", "Value", "helper", "CONSTANT"):
        setattr(public, name, getattr(private, name))
    sys.modules[PRIVATE] = private
    sys.modules[PUBLIC] = public
    try:
        yield private, public
    finally:
        del sys.modules[PRIVATE]
        del sys.modules[PUBLIC]


def test_classes_functions_and_their_members_move_to_the_public_module(
    modules: tuple[types.ModuleType, types.ModuleType],
) -> None:
    private, _ = modules
    fixup_module_metadata(PUBLIC, ["Thing", "Value", "helper", "CONSTANT"])
    assert private.Thing.__module__ == PUBLIC
    assert private.Thing.method.__module__ == PUBLIC
    assert private.Thing.prop.fget.__module__ == PUBLIC
    assert private.Thing.Inner.__module__ == PUBLIC
    assert private.helper.__module__ == PUBLIC
    assert private.Thing.__qualname__ == "Thing"


def test_a_function_assigned_to_a_class_keeps_its_own_home(
    modules: tuple[types.ModuleType, types.ModuleType],
) -> None:
    private, _ = modules
    fixup_module_metadata(PUBLIC, ["Thing"])
    assert private.borrowed.__module__ == PRIVATE


def test_string_annotations_still_resolve_after_the_move(
    modules: tuple[types.ModuleType, types.ModuleType],
) -> None:
    private, _ = modules
    fixup_module_metadata(PUBLIC, ["Value"])
    # The public module never imported Sequence: msgspec resolves the annotation in the
    # module __module__ names, so it must have been resolved before the move.
    assert "Sequence" not in vars(sys.modules[PUBLIC])
    decoded = msgspec.json.decode(b'{"items": [1, 2]}', type=private.Value)
    assert decoded.items == [1, 2]


def test_an_object_with_a_public_home_already_keeps_it(
    modules: tuple[types.ModuleType, types.ModuleType],
) -> None:
    private, _ = modules
    private.Thing.__module__ = "toolnursery"
    fixup_module_metadata(PUBLIC, ["Thing"])
    assert private.Thing.__module__ == "toolnursery"
