"""Sink markers and record declarations: on the definition, refused when unknown, never sent."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    Ask,
    Origin,
    PreToolDecision,
    ProvenanceFinding,
    RegistrationError,
    SchemaProp,
    Sink,
    ToolDefinition,
    ToolRegistry,
    define_tool,
    strict_json_schema,
    tool,
)

SPEC = SchemaProp(type="string", required=True)


async def _body(args: Any, ctx: Any) -> str:
    return "ok"


def test_tool_reads_sink_markers_from_annotated_parameters() -> None:
    @tool(records=("contacts[].email",))
    def send(
        to: Annotated[list[str], Sink.PARTY],
        body: Annotated[str, "the text", Sink.CONTENT],
        password: Annotated[str, Sink.SECRET, Sink.INTENT],
        n: int = 1,
    ) -> str:
        """Send."""
        return "ok"

    assert send.sinks == {
        "to": (Sink.PARTY,),
        "body": (Sink.CONTENT,),
        "password": (Sink.SECRET, Sink.INTENT),
    }
    assert send.records == ("contacts[].email",)
    assert send.parameters["properties"]["body"] == {"type": "string", "description": "the text"}


def test_the_schema_sent_to_the_model_carries_no_marker() -> None:
    @tool(records=("[].email",))
    def send(to: Annotated[str, Sink.PARTY], body: Annotated[str, Sink.CONTENT]) -> str:
        """Send."""
        return "ok"

    registry = ToolRegistry()
    registry.register(send)
    for schema in (registry.schemas()[0].parameters, strict_json_schema(send.parameters)):
        text = repr(schema)
        for word in ("sink", "party", "content", "records", "email"):
            assert word not in text.lower()


def test_dsl_and_raw_definitions_declare_sinks_by_name() -> None:
    dsl = define_tool(
        name="send",
        description="Send.",
        parameters={"to": SPEC, "body": SPEC},
        execute=_body,
        sinks={"to": Sink.PARTY, "body": "content"},
    )
    raw = ToolDefinition(
        "pay",
        "Pay.",
        {"type": "object", "properties": {"iban": {"type": "string"}}},
        _body,
        sinks={"iban": (Sink.PARTY,)},
        records=("[].iban",),
    )
    registry = ToolRegistry()
    registry.register(dsl)
    registry.register(raw)
    assert dsl.sinks == {"to": Sink.PARTY, "body": "content"}
    assert raw.records == ("[].iban",)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sinks": {"to": "recipient"}}, "unknown sink kind 'recipient'"),
        ({"sinks": {"nope": Sink.PARTY}}, 'sinks names "nope"'),
        ({"sinks": ["to"]}, "sinks must be a mapping"),
        ({"records": ("contacts..email",)}, "is not a record path"),
        ({"records": "contacts[].email"}, "records must be a tuple"),
    ],
)
def test_unknown_kinds_and_bad_paths_are_refused_at_registration(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(RegistrationError, match=message):
        ToolRegistry().register(
            define_tool(
                name="send", description="Send.", parameters={"to": SPEC}, execute=_body, **options
            )
        )
    definition = ToolDefinition(
        "send", "Send.", {"type": "object", "properties": {"to": {"type": "string"}}}, _body
    )
    with pytest.raises(RegistrationError, match=message):
        ToolRegistry().register(msgspec.structs.replace(definition, **options))


def test_an_unknown_kind_in_annotated_metadata_is_refused() -> None:
    with pytest.raises(ValueError, match="not a valid Sink"):
        Sink("recipient")
    with pytest.raises(RegistrationError, match="Annotated metadata"):

        @tool
        def send(to: Annotated[str, "party", object()]) -> str:
            """Send."""
            return "ok"


findings = st.builds(
    ProvenanceFinding,
    argument=st.text(max_size=8),
    value=st.text(max_size=20),
    kind=st.sampled_from(list(Sink)),
    origin=st.sampled_from(list(Origin)),
    source_tool=st.none() | st.text(max_size=8),
    source_call=st.none() | st.text(max_size=8),
    source_path=st.none() | st.text(max_size=8),
    reason=st.none() | st.text(max_size=20),
)


@given(st.none() | st.text(max_size=20), st.lists(findings, max_size=3))
def test_an_ask_with_findings_round_trips_as_json(reason: str | None, found: list[Any]) -> None:
    ask = Ask(reason, provenance=found)
    assert ask.provenance == tuple(found)
    decoded = msgspec.json.decode(msgspec.json.encode(ask), type=PreToolDecision)
    assert decoded == ask
    if not found:
        assert b"provenance" not in msgspec.json.encode(ask)  # as before: omitted
