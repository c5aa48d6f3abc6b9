"""A server's tool list as definitions: pages, checks, and what the hints decide."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp.types as types

from toolnursery import McpAnnotations, McpMountError, ToolReturn, output_schema, thaw
from toolnursery._mcp._listing import checked_tools, list_all_tools, mounted_definition

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def tool(name: str, **fields: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=fields.pop("input_schema", OBJECT), **fields)


class PagedSession:
    """A fake session whose ``tools/list`` answers in pages, recording each cursor."""

    def __init__(self, pages: dict[str | None, tuple[list[types.Tool], str | None]]) -> None:
        self.pages = pages
        self.cursors: list[str | None] = []

    async def list_tools(self, params: types.PaginatedRequestParams | None) -> Any:
        cursor = params.cursor if params is not None else None
        self.cursors.append(cursor)
        tools, next_cursor = self.pages[cursor]
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)


async def test_every_page_is_listed_in_order() -> None:
    session = PagedSession(
        {None: ([tool("a"), tool("b")], "p2"), "p2": ([], "p3"), "p3": ([tool("c")], None)}
    )
    tools = await list_all_tools(session)  # type: ignore[arg-type]
    assert [t.name for t in tools] == ["a", "b", "c"]
    assert session.cursors == [None, "p2", "p3"]


def test_tools_are_keyed_by_prefixed_name_in_the_servers_order() -> None:
    listed = [tool("zeta"), tool("alpha")]
    assert checked_tools("srv", "x_", listed) == {"x_zeta": listed[0], "x_alpha": listed[1]}


def test_a_tool_listed_twice_is_refused() -> None:
    with pytest.raises(McpMountError, match='srv: lists the tool "a" twice'):
        checked_tools("srv", "", [tool("a"), tool("b"), tool("a")])


@pytest.mark.parametrize("schema", [{"type": "string"}, {"properties": {}}])
def test_an_input_schema_that_is_not_an_object_schema_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(McpMountError, match='srv: tool "a" has an inputSchema that is not an'):
        checked_tools("srv", "", [tool("a", input_schema=schema)])


async def test_a_definition_calls_the_tool_by_its_remote_name() -> None:
    seen: list[tuple[str, Any, Any, Any]] = []
    answer = ToolReturn("ok")

    async def call(remote: str, check: Any, args: Any, ctx: Any) -> ToolReturn:
        seen.append((remote, check, args, ctx))
        return answer

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    definition = mounted_definition(
        "x_find", tool("find", description="Find.", input_schema=schema), call
    )
    assert (definition.name, definition.description, definition.parameters) == (
        "x_find",
        "Find.",
        schema,
    )
    ctx = object()
    assert await definition.execute({"q": "a"}, ctx) is answer  # type: ignore[arg-type]
    assert seen == [("find", None, {"q": "a"}, ctx)]


async def no_call(remote: str, check: Any, args: Any, ctx: Any) -> ToolReturn:
    raise AssertionError("not called")


@pytest.mark.parametrize(
    ("hints", "parallel", "idempotent"),
    [
        (None, False, False),
        (types.ToolAnnotations(read_only_hint=True), True, True),
        (types.ToolAnnotations(idempotent_hint=True), False, True),
        (types.ToolAnnotations(read_only_hint=False, idempotent_hint=False), False, False),
    ],
)
def test_the_hints_decide_parallel_safety_and_idempotence(
    hints: types.ToolAnnotations | None, parallel: bool, idempotent: bool
) -> None:
    definition = mounted_definition("t", tool("t", annotations=hints), no_call)
    safe = definition.is_concurrency_safe
    assert (safe is not None and safe({}) is True) is parallel
    assert definition.idempotent is idempotent
    assert (definition.mcp_annotations is None) is (hints is None)


def test_the_tools_title_fills_the_annotations_title_only_when_it_has_none() -> None:
    titled = mounted_definition("t", tool("t", title="Tool"), no_call)
    assert titled.mcp_annotations == McpAnnotations(title="Tool")
    hinted = tool("t", title="Tool", annotations=types.ToolAnnotations(title="Hint"))
    assert mounted_definition("t", hinted, no_call).mcp_annotations == McpAnnotations(title="Hint")


def test_a_declared_output_schema_is_the_definitions_output_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    definition = mounted_definition("t", tool("t", output_schema=schema), no_call)
    declared = output_schema(definition)
    assert declared is not None
    assert thaw(declared) == schema
    assert output_schema(mounted_definition("t", tool("t"), no_call)) is None
