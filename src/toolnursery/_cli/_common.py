"""What the ``toolnursery`` commands share: exit codes, usage errors, the ``--tools``
registry, the example sandbox, reading CALLS, opening ``--log``, and the messages on
stderr.

Every command reports bad usage or input by raising :class:`UsageError` before
anything runs; :func:`~toolnursery._cli._main.main` turns it into exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

from .._batch._recorder import JsonlRecorder
from .._core._content import ToolCall
from .._core._controls import shown
from .._examples._sandbox import fill_sandbox
from .._examples._toolset import example_registry
from .._pipeline._registry import ToolRegistry
from ._cards import rich_missing
from ._input import CallsInputError, parse_calls

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAX_CALLS",
    "MAX_PARALLEL",
    "MAX_REPEAT",
    "MAX_WIDTH",
    "UsageError",
    "bounded_int",
    "load_registry",
    "open_log",
    "read_calls",
    "require_rich",
    "sandbox_registry",
    "say",
    "version",
]

EXIT_OK: Final = 0
"""The batch ran (tool failures are results, not exit codes), or the log was shown."""
EXIT_FAILED: Final = 1
"""The batch itself failed (e.g. the log could not be written)."""
EXIT_USAGE: Final = 2
"""Bad usage or input: nothing ran (or a corrupt log)."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C cancelled the batch (every result is still printed)."""

# The largest counts and sizes the options take: each is far past any real use, and
# bounds what a mistyped number can make the command build (a batch, a card's lines).
MAX_CALLS: Final = 100_000
"""The most calls ``bench -n`` builds."""
MAX_PARALLEL: Final = 100_000
"""The largest ``--max-parallel``."""
MAX_REPEAT: Final = 100
"""The most timed repetitions ``bench --repeat`` runs."""
MAX_WIDTH: Final = 1_000
"""The widest cards ``--width`` draws, in columns."""


class UsageError(Exception):
    """Raised when the command line or its input is unusable; nothing has run."""


def say(message: str) -> None:
    """Write ``toolnursery: message`` to stderr, flushed: stdout carries only results.

    Control characters in it (a tool name, an error text) are shown escaped.
    """
    print(f"toolnursery: {shown(message)}", file=sys.stderr, flush=True)


def version() -> str:
    """toolnursery's version: ``__version__``, which the package's metadata is built from
    (the same from an installed wheel and from a bare source tree)."""
    from .. import __version__

    return __version__


def bounded_int(limit: int) -> Callable[[str], int]:
    """An argparse ``type=`` for a count or size: an integer from 1 to ``limit``.

    The returned function raises :class:`argparse.ArgumentTypeError` for anything
    else; argparse names the option in its one-line error: ``argument -n: expected a
    positive integer of at most 100000, got '99999999999999999999'``.
    """

    def parse(text: str) -> int:
        value = _integer(text)
        if value is None or not 1 <= value <= limit:
            raise argparse.ArgumentTypeError(
                f"expected a positive integer of at most {limit}, got {_shown(text)}"
            )
        return value

    parse.__name__ = f"integer from 1 to {limit}"
    return parse


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # not an integer, or more digits than int() converts
        return None


def _shown(text: str) -> str:
    """``text`` quoted for an error line, cut when it is long."""
    return repr(text) if len(text) <= 40 else repr(text[:37]) + "..."


def require_rich(what: str) -> None:
    """Refuse ``what`` (an option or command that draws cards) when rich is missing.

    Raises:
        UsageError: :mod:`rich` cannot be imported.
    """
    if rich_missing():
        raise UsageError(
            f"{what} draws cards with rich, which is not installed: "
            "pip install -e '.[cli]' (or pip install rich)"
        )


def read_calls(source: str) -> list[ToolCall]:
    """The tool calls in CALLS: the file ``source``, or stdin when it is ``-``.

    Raises:
        UsageError: the input cannot be read, is not UTF-8, or holds no valid calls
            (the message names the source and line).
    """
    if source == "-":
        name = "<stdin>"
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError("<stdin>: not UTF-8 text") from None
    else:
        name = source
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read CALLS {source!r}: {exc.strerror or exc}") from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise UsageError(f"{source} line {line}: not UTF-8 text") from exc
    try:
        return parse_calls(text, name)
    except CallsInputError as exc:
        raise UsageError(str(exc)) from exc


def sandbox_registry(root: str | None, stack: ExitStack) -> ToolRegistry:
    """The bundled example tools, working in ``root`` or in a temporary sandbox.

    Args:
        root: the ``--root`` directory, or ``None`` for a sandbox that ``stack`` removes.
        stack: owns the sandbox's lifetime.

    Raises:
        UsageError: ``root`` is not a directory.
    """
    if root is None:
        sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-"))
        fill_sandbox(sandbox)
        say(f"no --root: the example tools work in a temporary sandbox {sandbox} (removed on exit)")
        return example_registry(sandbox)
    try:
        return example_registry(root)
    except NotADirectoryError:
        raise UsageError(f"--root {root!r} is not a directory") from None


def open_log(path: str | None, stack: ExitStack) -> JsonlRecorder | None:
    """The ``--log`` recorder, closed by ``stack``; ``None`` without ``--log``.

    Raises:
        UsageError: the log cannot be opened for appending.
    """
    if path is None:
        return None
    try:
        recorder = JsonlRecorder(path)
    except OSError as exc:
        raise UsageError(f"cannot open --log {path!r}: {exc.strerror or exc}") from exc
    stack.callback(recorder.close)
    return recorder


def load_registry(spec: str) -> ToolRegistry:
    """Resolve a ``--tools MODULE:ATTR`` spec to a :class:`ToolRegistry`.

    ``MODULE`` is a dotted module name (the current directory is importable, as with
    ``python -m``) or a path to a ``.py`` file; ``ATTR`` (dotted) names a registry or
    a callable taking no arguments that returns one.

    Raises:
        UsageError: the spec is malformed, does not import (an exception or a
            ``sys.exit()`` while importing), or names something else.
    """
    module_name, colon, attr = spec.rpartition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"--tools {spec!r}: expected MODULE:ATTR, e.g. mytools:registry")
    module = _import(module_name, spec)
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"--tools {spec!r}: {module_name!r} has no attribute {attr!r}"
            ) from None
    if isinstance(target, ToolRegistry):
        return target
    if not callable(target):
        raise UsageError(
            f"--tools {spec!r}: expected a ToolRegistry or a callable returning one, "
            f"got {type(target).__name__}"
        )
    try:
        made = target()
    except SystemExit as exc:
        raise UsageError(
            f"--tools {spec!r}: calling {attr}() exited with {_exit_status(exc)}"
        ) from None
    except Exception as exc:
        raise UsageError(f"--tools {spec!r}: calling {attr}() raised {_describe(exc)}") from exc
    if not isinstance(made, ToolRegistry):
        raise UsageError(
            f"--tools {spec!r}: {attr}() returned {type(made).__name__}, not a ToolRegistry"
        )
    return made


def _import(module_name: str, spec: str) -> Any:
    is_file = module_name.endswith(".py") or os.sep in module_name or "/" in module_name
    try:
        if is_file:
            return _import_file(Path(module_name), spec)
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
        return importlib.import_module(module_name)
    except UsageError:
        raise
    except ModuleNotFoundError as exc:
        raise UsageError(f"--tools {spec!r}: cannot import {module_name!r}: {exc}") from exc
    except SystemExit as exc:
        # sys.exit() at import would end the command with that code, having run
        # nothing and said nothing: a module that exits is a module that failed.
        raise UsageError(
            f"--tools {spec!r}: the tools module {module_name!r} exited during import "
            f"with {_exit_status(exc)}"
        ) from None
    except Exception as exc:
        raise UsageError(
            f"--tools {spec!r}: importing {module_name!r} raised {_describe(exc)}"
        ) from exc


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise UsageError(f"--tools {spec!r}: no such file {str(path)!r}")
    name = f"_toolnursery_tools_{abs(hash(path.resolve()))}"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"--tools {spec!r}: {str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    loaded = False
    try:
        loader_spec.loader.exec_module(module)
        loaded = True
    finally:
        if not loaded:  # a module that failed (or exited) half-way must not be found again
            sys.modules.pop(name, None)
    return module


def _exit_status(exc: SystemExit) -> str:
    """``SystemExit``'s status as Python would exit with it (``None`` is 0)."""
    code = exc.code
    if code is None or isinstance(code, int):
        return f"code {int(code or 0)}"
    return f"message {str(code)!r} (code 1)"


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
