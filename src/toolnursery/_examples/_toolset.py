"""The example tools as definitions, and a registry holding them.

Each definition puts together a tool's declared arguments, its body, its resource
keys and its presenters, all bound to one :class:`SandboxRoot`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

from .._pipeline._registry import ToolRegistry
from .._tools._definition import ToolDefinition
from . import _views as views
from ._bodies import (
    list_dir_body,
    move_path_body,
    read_file_body,
    search_text_body,
    sleep_body,
    write_file_body,
)
from ._keys import read_keys, tree_keys, write_keys
from ._params import (
    LIST_PARAMS,
    MOVE_PARAMS,
    READ_PARAMS,
    SEARCH_PARAMS,
    SLEEP_PARAMS,
    WRITE_PARAMS,
    parameters_schema,
    validate,
)
from ._root import SandboxRoot

__all__ = ["example_registry", "example_tools"]


def _always(_args: object) -> bool:
    return True


def example_tools(root: str | os.PathLike[str]) -> list[ToolDefinition]:
    """The example tools, confined to ``root``.

    Args:
        root: an existing directory; every path argument is resolved against it.

    Returns:
        ``read_file``, ``list_dir``, ``search_text``, ``write_file``, ``move_path``
        and ``sleep``.

    Raises:
        NotADirectoryError: ``root`` is not an existing directory.
    """
    sandbox = SandboxRoot(root)
    safe: Callable[[Any], bool] = _always
    return [
        ToolDefinition(
            "read_file",
            "Read a UTF-8 text file under the root directory.",
            parameters_schema(READ_PARAMS),
            read_file_body(sandbox),
            concurrency_keys=read_keys(sandbox),
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, READ_PARAMS), views.read_call),
            present_result=views.present_result(partial(validate, READ_PARAMS), views.read_result),
        ),
        ToolDefinition(
            "list_dir",
            "List a directory under the root; directories end with '/'.",
            parameters_schema(LIST_PARAMS),
            list_dir_body(sandbox),
            concurrency_keys=tree_keys(sandbox, LIST_PARAMS),
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, LIST_PARAMS), views.list_call),
            present_result=views.present_result(partial(validate, LIST_PARAMS), views.list_result),
        ),
        ToolDefinition(
            "search_text",
            "Find the lines containing a literal text in the files under a path.",
            parameters_schema(SEARCH_PARAMS),
            search_text_body(sandbox),
            concurrency_keys=tree_keys(sandbox, SEARCH_PARAMS),
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, SEARCH_PARAMS), views.search_call),
            present_result=views.present_result(
                partial(validate, SEARCH_PARAMS), views.search_result
            ),
        ),
        ToolDefinition(
            "write_file",
            "Create or replace a UTF-8 text file under the root directory.",
            parameters_schema(WRITE_PARAMS),
            write_file_body(sandbox),
            concurrency_keys=write_keys(sandbox),
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, WRITE_PARAMS), views.write_call),
            present_result=views.present_result(
                partial(validate, WRITE_PARAMS), views.write_result
            ),
        ),
        ToolDefinition(
            "move_path",
            "Move a file or directory under the root to a new path under the root.",
            parameters_schema(MOVE_PARAMS),
            move_path_body(sandbox),
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, MOVE_PARAMS), views.move_call),
            present_result=views.present_result(partial(validate, MOVE_PARAMS), views.move_result),
        ),
        ToolDefinition(
            "sleep",
            "Wait for the given number of seconds.",
            parameters_schema(SLEEP_PARAMS),
            sleep_body,
            is_concurrency_safe=safe,
            validate=False,  # the body checks its arguments and fills defaults
            present_call=views.present_call(partial(validate, SLEEP_PARAMS), views.sleep_call),
            present_result=views.present_result(
                partial(validate, SLEEP_PARAMS), views.sleep_result
            ),
        ),
    ]


def example_registry(root: str | os.PathLike[str]) -> ToolRegistry:
    """A :class:`ToolRegistry` holding the :func:`example_tools` confined to ``root``.

    Raises:
        NotADirectoryError: ``root`` is not an existing directory.
    """
    registry = ToolRegistry()
    for definition in example_tools(root):
        registry.register(definition)
    return registry
