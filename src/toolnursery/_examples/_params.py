"""The example tools' declared arguments: JSON Schema out, checked values in.

Each tool declares a tuple of :class:`Param`; :func:`parameters_schema` is what the
model sees and :func:`validate` what the body (and its classifier and presenters)
runs, so the two never disagree. A hand-written check rather than a schema
validator: the example tools are raw definitions that validate their own arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from .._core._errors import ToolArgsError

__all__ = [
    "LIST_PARAMS",
    "MOVE_PARAMS",
    "READ_PARAMS",
    "SEARCH_PARAMS",
    "SLEEP_PARAMS",
    "WRITE_PARAMS",
    "Param",
    "parameters_schema",
    "show_number",
    "validate",
]

_Kind = Literal["string", "integer", "number", "boolean"]


class Param:
    """One declared argument: its JSON type, whether required, its default and range."""

    __slots__ = ("default", "description", "kind", "maximum", "minimum", "name", "required")

    def __init__(
        self,
        name: str,
        kind: _Kind,
        description: str,
        *,
        required: bool = False,
        default: object = None,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.description = description
        self.required = required
        self.default = default
        self.minimum = minimum
        self.maximum = maximum

    def schema(self) -> dict[str, Any]:
        """The argument's JSON Schema, as a property of the tool's object schema."""
        out: dict[str, Any] = {"type": self.kind, "description": self.description}
        if self.default is not None:
            out["default"] = self.default
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def check(self, value: object) -> str | None:
        """The violation ``value`` commits, or ``None``."""
        kind = self.kind
        # bool is an int in Python but never a JSON number.
        if kind == "string":
            ok = isinstance(value, str)
        elif kind == "boolean":
            ok = isinstance(value, bool)
        elif kind == "integer":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            article = "an" if kind == "integer" else "a"
            return f'"{self.name}" must be {article} {kind}'
        if isinstance(value, str) and "\x00" in value:
            return f'"{self.name}" must not contain NUL characters'
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = self.minimum, self.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                return f'"{self.name}" must be between {show_number(low)} and {show_number(high)}'
        return None


def show_number(value: float | None) -> str:
    """A bound or a duration as messages show it: ``3`` not ``3.0``, ``any`` for none."""
    if value is None:
        return "any"
    return str(int(value)) if float(value).is_integer() else str(value)


def parameters_schema(params: tuple[Param, ...]) -> dict[str, Any]:
    """The object schema a tool declares for ``params`` (its ``parameters``)."""
    return {
        "type": "object",
        "properties": {p.name: p.schema() for p in params},
        "required": [p.name for p in params if p.required],
    }


def validate(params: tuple[Param, ...], args: object) -> dict[str, Any]:
    """Check ``args`` against ``params``; return them with defaults filled in.

    Raises:
        ToolArgsError: listing every violation, in declaration order.
    """
    if not isinstance(args, Mapping):
        raise ToolArgsError(['"arguments" must be an object'])
    violations: list[str] = []
    values: dict[str, Any] = {}
    for param in params:
        if param.name not in args:
            if param.required:
                violations.append(f'missing required property "{param.name}"')
            values[param.name] = param.default
            continue
        value = args[param.name]
        problem = param.check(value)
        if problem is not None:
            violations.append(problem)
        values[param.name] = value
    if violations:
        raise ToolArgsError(violations)
    return values


READ_PARAMS: Final = (
    Param("path", "string", "The file to read, relative to the root.", required=True),
    Param(
        "max_bytes",
        "integer",
        "Read at most this many bytes.",
        default=100_000,
        minimum=1,
        maximum=10_000_000,
    ),
)
LIST_PARAMS: Final = (
    Param("path", "string", "The directory to list, relative to the root.", default="."),
)
SEARCH_PARAMS: Final = (
    Param("pattern", "string", "The literal text to look for.", required=True),
    Param("path", "string", "A file or directory to search under.", default="."),
    Param("ignore_case", "boolean", "Match regardless of case.", default=False),
    Param(
        "max_results",
        "integer",
        "Stop after this many matches.",
        default=50,
        minimum=1,
        maximum=1000,
    ),
)
WRITE_PARAMS: Final = (
    Param("path", "string", "The file to write, relative to the root.", required=True),
    Param("content", "string", "The complete new text of the file.", required=True),
)
MOVE_PARAMS: Final = (
    Param("source", "string", "The file or directory to move.", required=True),
    Param(
        "destination",
        "string",
        "Its new path; must not exist yet (missing parent directories are created).",
        required=True,
    ),
)
SLEEP_PARAMS: Final = (
    Param("seconds", "number", "How long to wait.", required=True, minimum=0, maximum=60),
)
