"""How @tool reads signatures: annotations as users write them, the same on both paths."""

from __future__ import annotations

import dataclasses
import datetime
import inspect
from typing import Annotated, Any, NotRequired, TypedDict

import attrs
import msgspec
import pydantic
import pytest
import trio
import typing_extensions

from toolnursery import Depends, RegistrationError, ToolArgsError, tool
from toolnursery._core._execution import ToolExecution, ToolExecutionToken, ToolRunContext
from toolnursery._core._json import snapshot
from toolnursery._core._signal import CancelSignal
from toolnursery._tools._definition import ToolDefinition


def make_ctx(deps: Any = None) -> ToolRunContext[Any]:
    execution = ToolExecution("c", "t", {}, CancelSignal(), None, None, ToolExecutionToken())
    return ToolRunContext(execution, CancelSignal(), [], deps)


async def run(definition: ToolDefinition, args: Any, deps: Any = None) -> Any:
    frozen = snapshot(args)
    if inspect.iscoroutinefunction(definition.execute):
        return await definition.execute(frozen, make_ctx(deps))
    return await trio.to_thread.run_sync(definition.execute, frozen, make_ctx(deps))


# -- bare dict, TypedDict, dataclass, attrs ---------------------------------------------------


async def test_bare_dict_and_list_of_dict_are_json_objects() -> None:
    seen: list[Any] = []

    @tool
    def f(filters: dict, rows: list[dict] | None = None) -> str:  # type: ignore[type-arg]
        seen.append((filters, rows))
        return "ok"

    assert f.parameters["properties"] == {
        "filters": {"type": "object"},
        "rows": {"type": ["array", "null"], "default": None, "items": {"type": "object"}},
    }
    await run(f, {"filters": {"a": 1}, "rows": [{"b": [2]}]})
    assert seen == [({"a": 1}, [{"b": (2,)}])]  # the frozen argument snapshot
    with pytest.raises(ToolArgsError) as info:
        await run(f, {"filters": [1]})
    assert info.value.violations == ('"filters" must be an object',)


class Address(TypedDict):
    """A postal address.

    Attributes:
        city: the city.
    """

    city: str
    zip: NotRequired[str]


@dataclasses.dataclass
class Meeting:
    """A meeting.

    Attributes:
        title: what it is about.
        start: when it starts.
    """

    title: str
    start: datetime.datetime
    attendees: list[str] = dataclasses.field(default_factory=list)
    room: str = "main"


@attrs.define
class Budget:
    amount: int
    currency: str = "EUR"


async def test_typeddict_dataclass_and_attrs_parameters_arrive_as_themselves() -> None:
    seen: list[Any] = []

    @tool
    def plan(where: Address, what: Meeting, cost: Budget, more: list[Meeting] | None = None) -> str:
        seen.extend([where, what, cost, more])
        return "ok"

    props = plan.parameters["properties"]
    assert props["where"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city."},
            "zip": {"type": "string"},
        },
        "required": ["city"],
    }
    assert props["what"]["required"] == ["title", "start"]
    assert props["what"]["properties"]["start"] == {
        "type": "string",
        "description": "when it starts.",
        "format": "date-time",
    }
    assert props["what"]["properties"]["room"] == {"type": "string", "default": "main"}
    assert props["cost"]["properties"]["currency"] == {"type": "string", "default": "EUR"}
    await run(
        plan,
        {
            "where": {"city": "Oslo"},
            "what": {"title": "sync", "start": "2026-12-01T10:00:00Z"},
            "cost": {"amount": 3},
            "more": [{"title": "b", "start": "2026-12-02T10:00:00Z", "room": "x"}],
        },
    )
    start = datetime.datetime(2026, 12, 1, 10, tzinfo=datetime.UTC)
    assert seen == [
        {"city": "Oslo"},  # an absent NotRequired key stays absent
        Meeting("sync", start, [], "main"),  # the class's own defaults and factories
        Budget(3, "EUR"),
        [Meeting("b", start + datetime.timedelta(days=1), [], "x")],
    ]
    with pytest.raises(ToolArgsError) as info:
        await run(plan, {"where": {}, "what": {"title": 1, "start": "x"}, "cost": {"amount": 1}})
    assert info.value.violations == (
        'missing required property "where.city"',
        '"what.title" must be a string',
        '"what.start" must be a valid "date-time"',
    )


def test_a_recursive_dataclass_is_refused_by_name() -> None:
    with pytest.raises(RegistrationError, match="Node is recursive"):
        tool(takes_node)


@dataclasses.dataclass
class Node:
    children: list[Node]


def takes_node(tree: Node) -> str:
    return ""


# -- Annotated, the same on both paths ----------------------------------------------------------


class Extra(pydantic.BaseModel):
    note: str


class Inbox:
    pass


PATHS = ["msgspec", "pydantic"]


def define(path: str, annotation: Any, name: str = "value", doc: str | None = None) -> Any:
    """@tool over ``def f(<name>: annotation[, extra: Extra | None = None])``."""

    def f(**kwargs: Any) -> str:
        return repr(kwargs)

    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY)]
    annotations: dict[str, Any] = {name: annotation, "return": str}
    if path == "pydantic":
        params.append(inspect.Parameter("extra", inspect.Parameter.KEYWORD_ONLY, default=None))
        annotations["extra"] = Extra | None
    f.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    f.__annotations__ = annotations
    f.__doc__ = doc
    return tool(f)


def prop(definition: Any, name: str = "value") -> dict[str, Any]:
    found = dict(definition.parameters["properties"][name])
    found.pop("title", None)  # pydantic's, not ours
    return found


@pytest.mark.parametrize("path", PATHS)
def test_a_string_is_a_description_on_both_paths(path: str) -> None:
    definition = define(path, Annotated[int, "how many"])
    assert prop(definition) == {"type": "integer", "description": "how many"}
    doc = define(path, Annotated[int, typing_extensions.Doc("how many")])
    assert prop(doc) == {"type": "integer", "description": "how many"}


@pytest.mark.parametrize("path", PATHS)
async def test_msgspec_meta_is_applied_on_both_paths(path: str) -> None:
    definition = define(path, Annotated[int, msgspec.Meta(ge=1, description="count")])
    assert prop(definition) == {"type": "integer", "description": "count", "minimum": 1}
    with pytest.raises(ToolArgsError) as info:
        await run(definition, {"value": 0})
    assert len(info.value.violations) == 1
    assert info.value.violations[0].startswith('"value" ')
    assert await run(definition, {"value": 2}) in ("{'value': 2}", "{'value': 2, 'extra': None}")


@pytest.mark.parametrize("path", PATHS)
def test_unknown_metadata_is_refused_on_both_paths(path: str) -> None:
    with pytest.raises(RegistrationError) as info:
        define(path, Annotated[int, object])
    assert str(info.value) == (
        "@tool f: parameter \"value\": Annotated metadata <class 'object'> is not enforced "
        "here; use msgspec.Meta (or pydantic parameters, with pydantic installed), "
        "a description string, or Depends(...)"
    )
    with pytest.raises(RegistrationError, match='parameter "value": Annotated metadata 3'):
        define(path, list[Annotated[int, 3]])


@pytest.mark.parametrize("path", PATHS)
async def test_a_dependency_marker_is_injected_on_both_paths(path: str) -> None:
    definition = define(path, Annotated[Inbox, Depends("inbox")], name="inbox")
    assert "inbox" not in definition.parameters["properties"]
    inbox = Inbox()
    assert "inbox" in await run(definition, {}, {"inbox": inbox})


@pytest.mark.parametrize("path", PATHS)
def test_multi_line_descriptions_keep_their_line_breaks_on_both_paths(path: str) -> None:
    doc = """Do it.

    Args:
        value: the first line,
            the second line.

            A second paragraph.
    """
    definition = define(path, int, doc=doc)
    assert prop(definition)["description"] == (
        "the first line,\nthe second line.\n\nA second paragraph."
    )


@pytest.mark.parametrize("path", PATHS)
def test_a_string_overrides_the_docstring_entry_on_both_paths(path: str) -> None:
    doc = """Do it.

    Args:
        value: from the docstring.
    """
    definition = define(path, Annotated[int, "from the annotation"], doc=doc)
    assert prop(definition)["description"] == "from the annotation"


def test_meta_with_a_timezone_has_no_pydantic_form() -> None:
    with pytest.raises(RegistrationError, match=r"msgspec.Meta\(tz=...\) has no pydantic form"):
        define("pydantic", Annotated[datetime.datetime, msgspec.Meta(tz=True)])


@pytest.mark.parametrize("path", PATHS)
async def test_record_classes_arrive_as_themselves_on_both_paths(path: str) -> None:
    for annotation, args, expected, bad in [
        (Address, {"city": "Oslo"}, {"city": "Oslo"}, []),
        (Budget, {"amount": 3}, Budget(3, "EUR"), {"amount": "3"}),
        (
            list[Meeting],
            [{"title": "t", "start": "2026-12-01T10:00:00Z"}],
            [Meeting("t", datetime.datetime(2026, 12, 1, 10, tzinfo=datetime.UTC))],
            [{"title": "t"}],
        ),
    ]:
        definition = define(path, annotation)
        assert await run(definition, {"value": args}) in (
            repr({"value": expected}),
            repr({"value": expected, "extra": None}),
        )
        with pytest.raises(ToolArgsError) as info:
            await run(definition, {"value": bad})
        assert '"value' in info.value.violations[0]
    schema = define(path, Address).parameters
    address = schema["properties"]["value"]  # inlined on both paths
    assert address["properties"]["city"]["description"] == "the city."
