"""The public API: what each public module exports, and the home its objects report.

Every public module (the package and every module below it with no underscore-led
name on its path) lists its names in ``__all__``; every class and function it exports
reports a public module that exports it under that name as its home — never the
private module that defines it — so ``repr()``, tracebacks and pickles name the public
path. The names that moved to :mod:`toolnursery.presentation` and
:mod:`toolnursery.log` still resolve from the package for one release, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import types
import typing
import warnings
from collections.abc import Iterator

import msgspec
import pytest

import toolnursery
import toolnursery.log
import toolnursery.presentation


def _is_public(module_name: str) -> bool:
    parts = module_name.split(".")
    return parts[0] == "toolnursery" and not any(part.startswith("_") for part in parts[1:])


def _public_modules() -> list[str]:
    names = ["toolnursery"]
    for info in pkgutil.walk_packages(toolnursery.__path__, "toolnursery."):
        if _is_public(info.name):
            names.append(info.name)
    return sorted(names)


MODULES = _public_modules()

# The faces that only re-export: every public name bound in them is an export.
THIN = [
    "toolnursery",
    "toolnursery.log",
    "toolnursery.mcp",
    "toolnursery.presentation",
    "toolnursery.providers",
    "toolnursery.ray",
]

MOVED = {
    **dict.fromkeys(
        [
            "DiffCallView",
            "DiffResultView",
            "FileDiff",
            "FileLocation",
            "GenericCallView",
            "GenericResultView",
            "TerminalCallView",
            "TerminalResultView",
            "ToolCallKind",
            "ToolCallView",
            "ToolResultView",
            "call_view",
            "render_markdown",
            "render_terminal",
            "result_view",
        ],
        "toolnursery.presentation",
    ),
    **dict.fromkeys(
        [
            "LOG_FORMAT",
            "ApprovalEvent",
            "ContextEvent",
            "JsonlRecorder",
            "ProgressEvent",
            "RecorderEvent",
            "ResumePlan",
            "ResumedCall",
            "ToolCallEvent",
            "ToolCallRecorder",
            "ToolResultEvent",
            "iter_log",
            "plan_resume",
            "read_log",
            "replay_log",
        ],
        "toolnursery.log",
    ),
}


def _exports() -> Iterator[tuple[str, str]]:
    for module_name in MODULES:
        for name in importlib.import_module(module_name).__all__:
            yield module_name, name


EXPORTS = list(_exports())


def _has_home(value: object) -> bool:
    """A class or a function: the objects that carry a module of their own."""
    return isinstance(value, type | types.FunctionType)


def test_the_walk_finds_every_public_module() -> None:
    for expected in (*THIN, "toolnursery.aio", "toolnursery.testing"):
        assert expected in MODULES
    assert not [name for name in MODULES if not _is_public(name)]


@pytest.mark.parametrize("module_name", MODULES)
def test_all_is_sorted_and_unique(module_name: str) -> None:
    names = importlib.import_module(module_name).__all__
    assert len(names) == len(set(names))
    assert list(names) == sorted(names, key=lambda n: (not n.isupper(), n[0].islower(), n))


@pytest.mark.parametrize("module_name", MODULES)
def test_every_exported_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert hasattr(module, name), name


@pytest.mark.parametrize("module_name", MODULES)
def test_no_public_name_is_missing_from_all(module_name: str) -> None:
    module = importlib.import_module(module_name)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    if module_name in THIN:
        assert public == set(module.__all__)
    else:  # its own imports are its business; what it defines or re-homes is exported
        homed_here = {
            name
            for name in public
            if getattr(vars(module)[name], "__module__", None) == module_name
        }
        assert homed_here <= set(module.__all__)


def test_the_package_is_smaller() -> None:
    # + Depends, Dependency, DependencyError; elicit, Elicitation, ElicitationUnavailableError,
    # sample, Sample; Sink, Origin, ProvenanceFinding, ProvenanceLedger, RecordedApprovals,
    # install_provenance_guard
    assert len(toolnursery.__all__) == 128
    assert not set(MOVED) & set(toolnursery.__all__)
    shared = (set(toolnursery.presentation.__all__) | set(toolnursery.log.__all__)) - set(MOVED)
    assert shared == {"LogFormatError", "ResumeError"}  # the error tree stays whole
    for name in shared:
        assert getattr(toolnursery.log, name) is getattr(toolnursery, name)


@pytest.mark.parametrize(("module_name", "name"), EXPORTS)
def test_exported_objects_report_a_public_home(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    home = getattr(value, "__module__", None)
    if not _has_home(value):  # a constant, or a type alias reporting typing's module
        assert not (isinstance(home, str) and home.startswith("toolnursery.")) or _is_public(home)
        return
    assert _is_public(home), (name, home)
    # The home exports it under that name: pickle and help() find it there.
    assert name in importlib.import_module(home).__all__
    assert value.__qualname__ == value.__name__ == name
    # The package runs its fixup first: an object it shares keeps it as the home.
    assert home == ("toolnursery" if vars(toolnursery).get(name) is value else module_name)


@pytest.mark.parametrize(("module_name", "name"), EXPORTS)
def test_exported_objects_pickle_by_reference(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    if _has_home(value):
        assert pickle.loads(pickle.dumps(value)) is value


@pytest.mark.parametrize(("module_name", "name"), EXPORTS)
def test_members_of_exported_classes_report_the_class_home(module_name: str, name: str) -> None:
    value = getattr(importlib.import_module(module_name), name)
    if not isinstance(value, type):
        return
    for attribute, member in vars(value).items():
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        elif isinstance(member, property):
            member = member.fget
        # Members the class body defined (typing and namedtuple synthesize others).
        if (
            isinstance(member, type | types.FunctionType)
            and member.__qualname__.startswith(f"{name}.")
            and member.__module__.startswith("toolnursery")
        ):
            assert member.__module__ == value.__module__, (name, attribute, member.__module__)


@pytest.mark.parametrize(("module_name", "name"), EXPORTS)
def test_rehomed_classes_resolve_their_annotations(module_name: str, name: str) -> None:
    # A class's string annotations are resolved in the module its __module__ names; the
    # fixup resolves them where they were written before it moves the class.
    value = getattr(importlib.import_module(module_name), name)
    if not isinstance(value, type):
        return
    typing.get_type_hints(value)
    if issubclass(value, msgspec.Struct):
        msgspec.inspect.type_info(value)


def test_a_rehomed_struct_round_trips() -> None:
    from toolnursery import ToolCall
    from toolnursery.log import RecorderEvent, ToolCallEvent
    from toolnursery.presentation import DiffCallView, FileDiff, ToolCallView

    event = ToolCallEvent("b1", 0, ToolCall("c1", "write", '{"path": "a"}'))
    assert msgspec.json.decode(msgspec.json.encode(event), type=RecorderEvent) == event
    view = DiffCallView(title="Write a", diffs=(FileDiff(path="a", old_text=None, new_text="x"),))
    assert msgspec.json.decode(msgspec.json.encode(view), type=ToolCallView) == view
    assert pickle.loads(pickle.dumps(view)) == view
    assert repr(type(view)) == "<class 'toolnursery.presentation.DiffCallView'>"


@pytest.mark.parametrize(("name", "home"), sorted(MOVED.items()))
def test_moved_names_live_only_in_their_home(name: str, home: str) -> None:
    """0.1.0 dropped the aliases that kept them importable from the top."""
    assert name in importlib.import_module(home).__all__
    assert not hasattr(toolnursery, name)
    assert name not in toolnursery.__all__
    with pytest.raises(ImportError, match=name):
        exec(f"from toolnursery import {name}", {})


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
            _ = toolnursery.NoSuchName
