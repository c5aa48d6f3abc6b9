"""The API reference's layout: each public module's names, the main ones first.

A reference page holds the line ``<!-- names: MODULE -->``; the docs build
(``docs/_gen/hook.py``) puts there the module's docstring and one mkdocstrings entry per
name of ``MODULE.__all__``, in sections: the module's main names (:data:`MAIN`, in the order a reader meets them),
then its other functions, classes and errors, and at the end its type aliases and
constants. Every name appears once; a name added to ``__all__`` joins its section
without an edit here.
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from collections.abc import Iterator

# The main names of a module, by section, in reading order.
MAIN: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "toolnursery": (
        (
            "Registry and tools",
            (
                "ToolRegistry",
                "tool",
                "define_tool",
                "ToolDefinition",
                "ToolRunContext",
                "ToolScope",
            ),
        ),
        (
            "Running a batch",
            ("run_tool_calls", "open_tool_batch", "ToolBatch", "ToolCall", "CancelSignal"),
        ),
        ("Results", ("ToolResult", "ToolExecutionResult", "ToolReturn", "ToolErrorInfo")),
    ),
    "toolnursery.log": (
        ("Recording and reading a log", ("JsonlRecorder", "read_log", "replay_log", "plan_resume")),
    ),
    "toolnursery.presentation": (
        ("Views of a call and its result", ("call_view", "result_view", "render_markdown")),
    ),
    "toolnursery.aio": (("From asyncio", ("run_tool_calls", "open_tool_batch", "execute")),),
    "toolnursery.mcp": (("Mounting and serving", ("open_mcp_mount", "McpMount", "mcp_server")),),
    "toolnursery.ray": (("Tool bodies on Ray", ("ray_tool", "RemoteContext")),),
    "toolnursery.testing": (("Testing your tools", ("make_input", "ScriptedApproval")),),
    "toolnursery.examples": (("The example tools", ("example_registry", "fill_sandbox")),),
}

# The sections after the main names, in page order; aliases and constants come last.
KINDS = ("Functions", "Classes", "Errors", "Type aliases", "Constants")

MARKER = re.compile(r"^<!-- names: ([\w.]+) -->$", re.M)


class ReferenceLayoutError(Exception):
    """Raised when :data:`MAIN` names something its module does not export."""


def kind(value: object) -> str:
    """Which of :data:`KINDS` a public value belongs to."""
    if inspect.isclass(value):
        return "Errors" if issubclass(value, BaseException) else "Classes"
    if isinstance(value, types.GenericAlias | types.UnionType) or (
        type(value).__module__ == "typing" and not inspect.isclass(value)
    ):
        return "Type aliases"
    if callable(value):
        return "Functions"
    return "Constants"


def sections(module_name: str) -> list[tuple[str, list[str]]]:
    """``(section heading, names)`` for every name of the module's ``__all__``, once each.

    Raises:
        ReferenceLayoutError: :data:`MAIN` lists a name the module does not export, or twice.
    """
    module = importlib.import_module(module_name)
    exported = list(module.__all__)
    main = MAIN.get(module_name, ())
    listed = [name for _, names in main for name in names]
    unknown = [name for name in listed if name not in exported]
    if unknown or len(set(listed)) != len(listed):
        raise ReferenceLayoutError(
            f"docs/_gen/reference.py MAIN[{module_name!r}] names {unknown or listed}, "
            f"not each once of {module_name}.__all__"
        )
    out = [(title, list(names)) for title, names in main]
    rest: dict[str, list[str]] = {k: [] for k in KINDS}
    for name in sorted(set(exported) - set(listed), key=str.lower):
        rest[kind(getattr(module, name))].append(name)
    for title in KINDS:
        if rest[title]:
            other = bool(main) and title in ("Functions", "Classes")
            out.append((f"Other {title.lower()}" if other else title, rest[title]))
    return out


def entries(module_name: str) -> Iterator[str]:
    """The Markdown that replaces a page's marker: the module's docstring, then a heading
    per section and an entry per name."""
    yield (
        f"::: {module_name}\n    options:\n      show_root_heading: false\n"
        "      show_root_toc_entry: false\n      members: false\n"
    )
    for title, names in sections(module_name):
        yield f"## {title}\n"
        for name in names:
            yield f"::: {module_name}.{name}\n    options:\n      heading_level: 3\n"


def expand(markdown: str) -> str:
    """Replace each ``<!-- names: MODULE -->`` line with the module's entries."""
    return MARKER.sub(lambda match: "\n".join(entries(match[1])), markdown)
