"""Tools written the way real collections write them, with the constraints they declare.

An email-and-calendar set, once as ``@tool`` functions (``msgspec.Meta`` and
``pydantic.Field``), once as raw JSON Schema (what an MCP server lists), run through a
registry: every declared constraint is advertised and enforced, a broken one is an
``INVALID_ARGS`` result naming the argument and the rule, and no body runs for it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import pydantic
import pytest

from support import text
from toolnursery import ToolDefinition, ToolExecutionInput, ToolRegistry, tool

SENT: list[Any] = []

Email = Annotated[str, msgspec.Meta(extra_json_schema={"format": "email"})]


@tool
def send_email(
    to: Email,
    subject: Annotated[str, msgspec.Meta(min_length=1, max_length=78)],
    body: str = "",
    cc: Annotated[list[Email], msgspec.Meta(max_length=5)] | None = None,
) -> str:
    """Send an email.

    Args:
        to: the recipient.
        subject: the subject line.
        body: the text.
        cc: copies.
    """
    SENT.append(("email", to, subject))
    return "sent"


@tool
def create_event(
    title: str,
    start: Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})],
    duration_minutes: Annotated[int, msgspec.Meta(ge=5, le=480, multiple_of=5)] = 30,
    visibility: Literal["public", "private"] = "private",
) -> str:
    """Create a calendar event."""
    SENT.append(("event", title, duration_minutes))
    return "created"


@tool
def transfer(
    iban: Annotated[str, pydantic.Field(pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")],
    amount: Annotated[float, pydantic.Field(gt=0, le=10_000)],
) -> str:
    """Transfer money."""
    SENT.append(("transfer", iban, amount))
    return "done"


MCP_LISTED = ToolDefinition(
    "book_flight",
    "Book a flight",
    {
        "type": "object",
        "properties": {
            "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "date": {"type": "string", "format": "date"},
            "passengers": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
            "seats": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
        "required": ["from", "to", "date"],
        "additionalProperties": False,
    },
    lambda args, ctx: SENT.append(("flight", args["from"], args["to"])) or "booked",
)


@pytest.fixture
def registry() -> ToolRegistry:
    SENT.clear()
    registry = ToolRegistry()
    for definition in (send_email, create_event, transfer, MCP_LISTED):
        registry.register(definition)
    return registry


async def call(registry: ToolRegistry, name: str, arguments: Any) -> tuple[str, str | None]:
    result = await registry.execute(ToolExecutionInput("c1", name, arguments))
    return text(result), None if result.error is None else result.error.code


def test_the_declared_constraints_are_what_the_model_is_shown() -> None:
    props = send_email.parameters["properties"]
    assert props["to"] == {"type": "string", "description": "the recipient.", "format": "email"}
    assert props["subject"]["minLength"] == 1
    assert props["cc"]["maxItems"] == 5
    event = create_event.parameters["properties"]["duration_minutes"]
    assert (event["minimum"], event["maximum"], event["multipleOf"]) == (5, 480, 5)
    assert transfer.parameters["properties"]["amount"]["exclusiveMinimum"] == 0


@pytest.mark.parametrize(
    ("name", "arguments", "violations"),
    [
        (
            "send_email",
            {"to": "ada", "subject": ""},
            ['"to" must be a valid "email"', '"subject" must be at least 1 character long'],
        ),
        (
            "send_email",
            {"to": "a@b.org", "subject": "x", "cc": ["c@d.org", "nope"]},
            ['"cc[1]" must be a valid "email"'],
        ),
        (
            "create_event",
            {"title": "t", "start": "tomorrow"},
            ['"start" must be a valid "date-time"'],
        ),
        (
            "create_event",
            {"title": "t", "start": "2024-05-01T09:00:00Z", "duration_minutes": 7},
            ['"duration_minutes" must be a multiple of 5'],
        ),
        (
            "create_event",
            {"title": "t", "start": "2024-05-01T09:00:00Z", "duration_minutes": 600},
            ['"duration_minutes" must be <= 480'],
        ),
        (
            "book_flight",
            {"from": "lhr", "to": "JFK", "date": "2024-13-01"},
            ['"from" must match the pattern "^[A-Z]{3}$"', '"date" must be a valid "date"'],
        ),
        (
            "book_flight",
            {
                "from": "LHR",
                "to": "JFK",
                "date": "2024-12-01",
                "passengers": 0,
                "seats": ["1A", "1A"],
            },
            ['"passengers" must be >= 1', '"seats" must not contain duplicate items'],
        ),
    ],
)
async def test_a_broken_constraint_is_an_invalid_args_result_and_no_body_runs(
    registry: ToolRegistry, name: str, arguments: dict[str, Any], violations: list[str]
) -> None:
    found, code = await call(registry, name, arguments)
    assert code == "INVALID_ARGS"
    assert found == "Error: invalid arguments: " + "; ".join(violations)
    assert SENT == []


async def test_pydantic_constraints_are_enforced_too(registry: ToolRegistry) -> None:
    found, code = await call(registry, "transfer", {"iban": "DE00", "amount": 0})
    assert code == "INVALID_ARGS"
    assert '"iban" is invalid' in found
    assert '"amount" is invalid: Input should be greater than 0' in found
    assert SENT == []


async def test_calls_within_the_constraints_run(registry: ToolRegistry) -> None:
    assert await call(registry, "send_email", {"to": "ada@example.org", "subject": "hi"}) == (
        "sent",
        None,
    )
    assert await call(
        registry,
        "create_event",
        {"title": "t", "start": "2024-05-01T09:00:00+02:00", "duration_minutes": 45},
    ) == ("created", None)
    assert await call(registry, "transfer", {"iban": "DE89370400440532013000", "amount": 12.5}) == (
        "done",
        None,
    )
    assert await call(
        registry, "book_flight", {"from": "LHR", "to": "JFK", "date": "2024-12-01"}
    ) == ("booked", None)
    assert [entry[0] for entry in SENT] == ["email", "event", "transfer", "flight"]
