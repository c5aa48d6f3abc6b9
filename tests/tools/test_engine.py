"""The one validation engine (jsonschema-rs): what it refuses when a schema is defined,
and what it can never do while arguments are checked.

Issue 33's defects 2, 4, 6, 7 and 15 each have a regression test here (or, for 15, in
test_schema_dsl.py): nothing is ever retrieved for a ``$ref``, no pattern can freeze the
loop, a format is checked or refused, a ``$schema`` that is not text is a
``RegistrationError``. An argument a closed schema does not declare is named with the
parameters the tool takes.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any, TypedDict

import attrs
import msgspec
import pydantic
import pytest

from toolnursery import (
    RegistrationError,
    ToolArgsError,
    ToolDefinition,
    ToolRunContext,
    define_tool,
    tool,
)
from toolnursery._core._json import snapshot
from toolnursery._tools._raw import RawSchemaError, compile_raw_validator

CATASTROPHIC = "^(a+)+$"
"""Exponential on a backtracking engine against ``"a" * n + "!"``."""
HOSTILE = "a" * 5000 + "!"


def body(args: Any, ctx: ToolRunContext) -> str:
    return "ran"


def violations(definition: ToolDefinition, args: Any) -> tuple[str, ...]:
    try:
        definition.execute(snapshot(args), None)  # type: ignore[arg-type]
    except ToolArgsError as exc:
        return exc.violations
    return ()


# --- defect 2: nothing is ever retrieved -------------------------------------------------------


class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        payload = b'{"type": "string", "const": "served"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that would serve a schema, and the paths it was asked for."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("where", ["property", "anyOf", "$id"])
def test_a_remote_ref_is_refused_at_definition_and_never_requested(
    schema_server: tuple[str, list[str]], where: str
) -> None:
    url, hits = schema_server
    ref = f"{url}/schema.json"
    schema: dict[str, Any] = {
        "property": {"type": "object", "properties": {"x": {"$ref": ref}}},
        "anyOf": {"type": "object", "properties": {"x": {"anyOf": [{"$ref": ref}]}}},
        "$id": {"$id": f"{url}/root.json", "properties": {"x": {"$ref": "schema.json"}}},
    }[where]
    with pytest.raises(RegistrationError) as info:
        ToolDefinition("fetchy", "d", schema, body)
    assert str(info.value) == (
        f'tool "fetchy" parameters are refused: $ref "{ref}" does not resolve inside the '
        "schema (nothing is retrieved)"
    )
    assert hits == []


def test_a_file_ref_is_refused_and_the_file_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"enum": ["TOP-SECRET-VALUE"]}')
    schema = {"type": "object", "properties": {"x": {"$ref": secret.as_uri()}}}
    with pytest.raises(RegistrationError) as info:
        ToolDefinition("reader", "d", schema, body)
    assert "does not resolve inside the schema (nothing is retrieved)" in str(info.value)
    assert "TOP-SECRET" not in str(info.value)
    with pytest.raises(RawSchemaError):
        compile_raw_validator({"$ref": "#/$defs/absent"})


def test_a_ref_inside_the_schema_still_resolves() -> None:
    schema = {
        "type": "object",
        "$defs": {"port": {"type": "integer", "minimum": 1}},
        "properties": {"port": {"$ref": "#/$defs/port"}},
    }
    definition = ToolDefinition("t", "d", schema, body)
    assert violations(definition, {"port": 80}) == ()
    assert violations(definition, {"port": 0}) == ('"port" must be >= 1',)


# --- defect 4: no pattern can freeze the loop ------------------------------------------------------


@pytest.mark.timeout(20)
def test_a_catastrophic_pattern_in_a_raw_schema_is_matched_in_linear_time() -> None:
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": CATASTROPHIC}},
        "patternProperties": {CATASTROPHIC: {"type": "integer"}},
    }
    check = compile_raw_validator(schema)
    assert check({"word": HOSTILE}) == [f'"word" must match the pattern "{CATASTROPHIC}"']
    assert check({HOSTILE: "not checked: the key does not match"}) == []
    assert check({"aaaa": "x"}) == ['"aaaa" must be an integer']


class Inner(msgspec.Struct, frozen=True):
    code: Annotated[str, msgspec.Meta(pattern="(a+)+b")]


class Outer(msgspec.Struct, frozen=True):
    inner: Inner
    tags: list[Annotated[str, msgspec.Meta(pattern="(a+)+b", max_length=9000)]] = []


@dataclasses.dataclass
class Record:
    code: Annotated[str, msgspec.Meta(pattern="(a+)+b")]
    note: str = "n"


class Entry(TypedDict):
    code: Annotated[str, msgspec.Meta(pattern="(a+)+b")]


@attrs.define
class Card:
    code: Annotated[str, msgspec.Meta(pattern="(a+)+b")]
    n: int = 3


@pytest.mark.timeout(20)
def test_a_catastrophic_msgspec_pattern_never_runs_on_pythons_re() -> None:
    seen: list[Any] = []

    def keep(args: Outer, ctx: ToolRunContext) -> str:
        seen.append(args)
        return "ran"

    nested = define_tool(name="nested", description="d", parameters=Outer, execute=keep)
    # Each matches in linear time ("ab" at the end) and is exponential for Python's re.
    matching = "a" * 5000 + "!ab"
    assert violations(nested, {"inner": {"code": matching}, "tags": [matching]}) == ()
    assert seen == [Outer(Inner(matching), [matching])]
    assert type(seen[0].inner) is Inner
    assert violations(nested, {"inner": {"code": HOSTILE}}) == (
        '"inner.code" must match the pattern "(a+)+b"',
    )

    @tool
    def shout(word: Annotated[str, msgspec.Meta(pattern=CATASTROPHIC)]) -> str:
        return word.upper()

    assert violations(shout, {"word": HOSTILE}) == (
        f'"word" must match the pattern "{CATASTROPHIC}"',
    )
    assert shout.execute(snapshot({"word": "aaa"}), None) == "AAA"  # type: ignore[arg-type]

    @tool
    def records(record: Record, entry: Entry, card: Card) -> str:
        return repr((record, entry, card))

    args = {"record": {"code": matching}, "entry": {"code": matching}, "card": {"code": matching}}
    assert records.execute(snapshot(args), None) == repr(  # type: ignore[arg-type]
        (Record(matching), {"code": matching}, Card(matching))
    )


def test_a_pattern_that_needs_backtracking_is_refused_at_definition() -> None:
    with pytest.raises(RegistrationError) as info:
        ToolDefinition(
            "t", "d", {"type": "object", "properties": {"p": {"pattern": "(?=a)a"}}}, body
        )
    assert str(info.value) == (
        'tool "t" parameters are refused at properties/p/pattern: "pattern": "(?=a)a" needs a '
        "backtracking regular-expression engine (a look-around or back-reference); patterns "
        "are matched in linear time only"
    )

    with pytest.raises(RegistrationError, match='parameter "w": "pattern": "\\(a\\)\\\\\\\\1"'):

        @tool
        def echo(w: Annotated[str, msgspec.Meta(pattern=r"(a)\1")]) -> str:
            return w


# --- defect 6: a format is checked or refused, never skipped ---------------------------------------


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("hostname", "example.org", "-not-a-host-"),
        ("duration", "P3DT4H", "3 days"),
        ("iri", "https://例え.jp/パス", "not an iri"),
        ("uri-template", "https://example.org/{id}", "https://example.org/{id"),
        ("ipv4", "192.0.2.1", "192.0.2.256"),
    ],
)
def test_formats_the_docs_name_are_checked_on_raw_schemas_and_the_dsl(
    fmt: str, good: str, bad: str
) -> None:
    raw = ToolDefinition(
        "t", "d", {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}, body
    )
    dsl = define_tool(
        name="t",
        description="d",
        parameters={"v": {"type": "string", "format": fmt}},
        execute=body,
    )
    for definition in (raw, dsl):
        assert violations(definition, {"v": good}) == ()
        assert violations(definition, {"v": bad}) == (f'"v" must be a valid "{fmt}"',)


def test_a_format_the_engine_cannot_check_is_refused_at_definition() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "colour"}}}
    with pytest.raises(RegistrationError) as info:
        ToolDefinition("paint", "d", schema, body)
    assert str(info.value) == (
        'tool "paint" parameters are refused at properties/v/format: format "colour" cannot be '
        "checked (a format is checked or refused, never skipped)"
    )
    assert ToolDefinition("paint", "d", schema, body, validate=False).parameters is schema
    with pytest.raises(RegistrationError, match='format "colour" cannot be checked'):

        @tool
        def paint(v: Annotated[str, msgspec.Meta(extra_json_schema={"format": "colour"})]) -> str:
            return v


# --- defect 7: $schema that is not text -------------------------------------------------------------


@pytest.mark.parametrize("dialect", [5, None, ["x"], {"$ref": "x"}])
def test_a_dollar_schema_that_is_not_text_is_a_registration_error(dialect: Any) -> None:
    with pytest.raises(RegistrationError) as info:
        ToolDefinition("odd", "d", {"$schema": dialect, "type": "object"}, body)
    assert str(info.value).startswith(
        'tool "odd" parameters are not a valid JSON Schema at $schema: '
    )


# --- unknown arguments ------------------------------------------------------------------------------


def test_an_argument_a_closed_schema_does_not_declare_is_named_with_what_the_tool_takes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "foo": {"type": "string"},
            "bar": {
                "type": "object",
                "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    }
    check = compile_raw_validator(schema)
    assert check({"foo": "x", "extra": 1, "more": 2}) == [
        'unknown argument "extra" (the tool takes: foo, bar)',
        'unknown argument "more" (the tool takes: foo, bar)',
    ]
    assert check({"bar": {"host": "h", "tls": True}}) == [
        'unknown property "bar.tls" (the object takes: host, port)'
    ]
    empty = compile_raw_validator({"type": "object", "additionalProperties": False})
    assert empty({"x": 1}) == ['unknown argument "x" (the tool takes no arguments)']


# --- what the agreement tests held, as plain tests ---------------------------------------------------


def test_tool_signatures_with_meta_and_pydantic_field_constraints_read_alike() -> None:
    @tool
    def plain(
        count: Annotated[int, msgspec.Meta(ge=1, le=10)],
        name: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")] = "x",
    ) -> str:
        return "ok"

    @tool
    def with_pydantic(
        count: Annotated[int, pydantic.Field(ge=1, le=10)],
        name: Annotated[str, pydantic.Field(max_length=3)] = "x",
    ) -> str:
        return "ok"

    samples: list[tuple[dict[str, Any], bool, bool]] = [
        ({"count": 1}, True, True),
        ({"count": 0}, False, False),
        ({"count": 11}, False, False),
        ({"count": 5, "name": "abc"}, True, True),
        ({"count": 5, "name": "abcd"}, True, False),
        ({"count": 5, "name": "A"}, False, True),
        ({"name": "a"}, False, False),
    ]
    for args, plain_ok, pydantic_ok in samples:
        assert (violations(plain, args) == ()) is plain_ok, args
        assert (violations(with_pydantic, args) == ()) is pydantic_ok, args
    assert violations(plain, {"count": 0, "name": "A"}) == (
        '"count" must be >= 1',
        '"name" must match the pattern "^[a-z]+$"',
    )


def test_keywords_beyond_the_dsl_read_as_a_path_and_a_rule() -> None:
    schema = {
        "type": "object",
        "properties": {
            "k": {"const": "x"},
            "t": {"type": ["string", "null"]},
            "u": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 0}]},
            "n": {"not": {"type": "string"}},
            "p": {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
            "o": {"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]},
        },
    }
    check = compile_raw_validator(schema)
    assert check({"k": "y", "t": 1, "u": "abc", "n": "s", "p": [1, 2], "o": "ab"}) == [
        '"k" must be "x"',
        '"t" must be a string or null',
        '"u" must be at most 2 characters long',
        '"n" must not match {"type":"string"}',
        '"p[1]" is not allowed here',
        '"o" must match exactly one of the "oneOf" schemas, not several',
    ]
    assert check({"u": -1}) == ['"u" must be >= 0']
    assert check({"u": True}) == ['"u" must be a string or an integer']


def test_violations_come_in_declaration_order_whatever_order_the_arguments_have() -> None:
    schema = {
        "type": "object",
        "properties": {
            "z": {"type": "string"},
            "a": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "m": {"type": "integer"},
        },
        "required": ["m", "q"],
    }
    check = compile_raw_validator(schema)
    assert check({"a": [-1, "x", -2], "z": 1}) == [
        '"z" must be a string',
        '"a[0]" must be >= 0',
        '"a[1]" must be an integer',
        '"a[2]" must be >= 0',
        'missing required property "m"',
        'missing required property "q"',
    ]


# --- a mounted server's schemas ---------------------------------------------------------------------


async def test_a_mounted_tool_whose_schema_reaches_outside_is_skipped_and_nothing_is_fetched(
    schema_server: tuple[str, list[str]],
) -> None:
    pytest.importorskip("mcp")
    import mcp.types as types
    from mcp.server import Server, ServerRequestContext

    from toolnursery import ToolExecutionInput, ToolRegistry
    from toolnursery.mcp import open_mcp_mount

    url, hits = schema_server
    tools = [
        types.Tool(name="ok", input_schema={"type": "object", "properties": {}}),
        types.Tool(
            name="fetchy",
            input_schema={"type": "object", "properties": {"x": {"$ref": f"{url}/s.json"}}},
        ),
        types.Tool(
            name="slow",
            input_schema={"type": "object", "properties": {"w": {"pattern": "(?<=a)b"}}},
        ),
        types.Tool(
            name="painter",
            input_schema={"type": "object", "properties": {"c": {"format": "colour"}}},
        ),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    server: Server[Any] = Server("engine", on_list_tools=list_tools, on_call_tool=call_tool)
    registry = ToolRegistry()
    async with open_mcp_mount(registry, server=server, prefix="m_") as mount:
        names = mount.names
        skipped = dict(mount.skipped)
        result = await registry.execute(ToolExecutionInput("c1", "m_fetchy", {"x": 1}))
    assert names == ("m_ok",)
    assert sorted(skipped) == ["m_fetchy", "m_painter", "m_slow"]
    assert "nothing is retrieved" in skipped["m_fetchy"]
    assert "linear time only" in skipped["m_slow"]
    assert 'format "colour" cannot be checked' in skipped["m_painter"]
    assert result.error is not None
    assert result.error.code == "UNKNOWN_TOOL"
    assert hits == []


def test_a_compiled_schema_pickles_and_validates_alike_where_it_is_unpickled() -> None:
    # A Ray worker receives the definition that holds the check; the engine's own validator
    # does not pickle, so the check travels as its schema and compiles again there.
    import pickle

    from toolnursery._tools._validator import compile_schema

    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": "^a+$"}, "n": {"type": "integer"}},
        "required": ["q"],
    }
    check = compile_schema(schema)
    again = pickle.loads(pickle.dumps(check))
    for args in ({"q": "aa"}, {"q": "ab"}, {"q": 1, "n": "x"}, {}, []):
        assert again(args) == check(args)
    assert again({"q": "ab"}) != []
