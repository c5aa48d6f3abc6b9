"""``@tool`` against pydantic-ai for the same 16 Python functions: schemas side by side.

Run: ``python scripts/compare_pydantic_ai_schemas.py`` (pydantic-ai installed). For each
function it prints the JSON Schema (and description) toolnursery's ``@tool`` gives and
the one pydantic-ai's own ``Tool(fn).tool_def`` gives, and every difference between them
by JSON path; ``--quiet`` prints the differences only. The kinds of difference that
remain are explained in docs/bring-your-tools.md ("@tool beside pydantic-ai").
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import sys
import typing
import uuid
from typing import Annotated, Any, Literal

import msgspec
import pydantic
import typing_extensions
from pydantic_ai.tools import Tool

from toolnursery import tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(typing.TypedDict):
    """A point.

    Attributes:
        x: across.
        y: down.
    """

    x: int
    y: int


class Box(typing_extensions.TypedDict):
    width: int
    label: typing_extensions.NotRequired[str]


class Person(pydantic.BaseModel):
    name: str
    age: int = 0


@dataclasses.dataclass
class Window:
    start: int
    end: int = 10


def scalars(a: int, b: str, c: float, d: bool) -> str:
    """Scalars, all required.

    Args:
        a: an int.
        b: a str.
        c: a float.
        d: a bool.
    """
    return ""


def defaults(a: int = 1, b: str = "x", c: float | None = None) -> str:
    """Defaults and an optional."""
    return ""


def choices(color: Color, mode: Literal["fast", "slow"] = "fast") -> str:
    """An Enum and a Literal."""
    return ""


def containers(ids: list[int], tags: dict[str, str], pair: tuple[int, ...] = ()) -> str:
    """Containers."""
    return ""


def typed_dict(point: Point) -> str:
    """A typing.TypedDict."""
    return ""


def typed_dict_ext(box: Box) -> str:
    """A typing_extensions.TypedDict with a NotRequired key."""
    return ""


def model(person: Person) -> str:
    """A pydantic model."""
    return ""


def data_class(window: Window) -> str:
    """A dataclass."""
    return ""


def field_constraints(n: Annotated[int, pydantic.Field(ge=1, le=10)] = 5) -> str:
    """pydantic Field constraints."""
    return ""


def annotated_text(
    q: Annotated[str, "the query"], limit: Annotated[int, msgspec.Meta(ge=0)] = 3
) -> str:
    """Annotated descriptions and msgspec constraints."""
    return ""


def google_no_summary(foo: int, bar: str = "b") -> str:
    """
    Args:
        foo: the foo.
        bar: the bar.
    """
    return ""


def numpy_style(foo: int, bar: str = "b") -> str:
    """NumPy style.

    Parameters
    ----------
    foo : int
        the foo.
    bar : str
        the bar.
    """
    return ""


def sphinx_style(foo: int, bar: str = "b") -> str:
    """Sphinx style.

    :param foo: the foo.
    :param bar: the bar.
    """
    return ""


def epydoc_style(foo: int, bar: str = "b") -> str:
    """Epydoc style.

    @param foo: the foo.
    @param bar: the bar.
    """
    return ""


def no_arguments() -> str:
    """No arguments at all."""
    return ""


def times(when: datetime.datetime, day: datetime.date, key: uuid.UUID) -> str:
    """Dates and a UUID."""
    return ""


FUNCTIONS: tuple[Any, ...] = (
    scalars,
    defaults,
    choices,
    containers,
    typed_dict,
    typed_dict_ext,
    model,
    data_class,
    field_constraints,
    annotated_text,
    google_no_summary,
    numpy_style,
    sphinx_style,
    epydoc_style,
    no_arguments,
    times,
)


def differences(ours: Any, theirs: Any, path: str = "$") -> list[str]:
    """Every place the two JSON values differ, by JSON path."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            where = f"{path}.{key}"
            if key not in theirs:
                out.append(f"{where}: only @tool: {json.dumps(ours[key])}")
            elif key not in ours:
                out.append(f"{where}: only pydantic-ai: {json.dumps(theirs[key])}")
            else:
                out.extend(differences(ours[key], theirs[key], where))
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs = enumerate(zip(ours, theirs, strict=True))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{path}[{i}]")]
    if ours != theirs:
        return [f"{path}: @tool {json.dumps(ours)} / pydantic-ai {json.dumps(theirs)}"]
    return []


def main() -> None:
    quiet = "--quiet" in sys.argv
    same = 0
    for fn in FUNCTIONS:
        ours = tool(fn)
        mine = {"description": ours.description, "parameters": ours.parameters}
        try:
            theirs = Tool(fn).tool_def
        except Exception as exc:  # pydantic refuses typing.TypedDict before Python 3.12
            print(f"== {fn.__name__}: pydantic-ai refuses it: {str(exc).splitlines()[0]}")
            if not quiet:
                print("   " + json.dumps(mine, sort_keys=True))
            continue
        other = {
            "description": theirs.description or "",
            "parameters": theirs.parameters_json_schema,
        }
        found = differences(mine, other)
        same += not found
        print(f"== {fn.__name__}: {'same' if not found else f'{len(found)} difference(s)'}")
        if not quiet:
            left = json.dumps(mine, indent=1, sort_keys=True).splitlines()
            right = json.dumps(other, indent=1, sort_keys=True).splitlines()
            width = max(len(line) for line in left)
            print(f"   {'@tool':<{width}}  pydantic-ai")
            for i in range(max(len(left), len(right))):
                a = left[i] if i < len(left) else ""
                b = right[i] if i < len(right) else ""
                print(f"   {a:<{width}}  {b}")
        for line in found:
            print(f"   - {line}")
    print(f"{same} of {len(FUNCTIONS)} give the same schema and description")


if __name__ == "__main__":
    main()
