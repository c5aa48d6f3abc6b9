"""Tool code as a benchmark suite writes it, run as written.

A small suite in the style of agent benchmarks' tool collections: an ``Inbox``, a
``Calendar`` and a ``Bank`` (pydantic models) make up the environment; every tool takes
what it needs as ``Annotated[Inbox, Depends("inbox")]`` and documents its parameters in
Sphinx style; some return pydantic models. A few ground-truth call sequences replay
through ``run_tool_calls(..., deps=env)`` and the environment must change as expected.
Part of the suite is written against a foreign ``Depends`` class and converted with one
``depends=`` hook.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pydantic

from support import text
from toolnursery import (
    Dependency,
    Depends,
    ToolCall,
    ToolExecutionResult,
    ToolRegistry,
    run_tool_calls,
    tool,
)

# -- the environment ---------------------------------------------------------------------


class Email(pydantic.BaseModel):
    id_: str
    sender: str
    recipients: list[str]
    subject: str
    body: str
    read: bool = False


class Inbox(pydantic.BaseModel):
    account: str
    emails: dict[str, Email] = {}

    def add(self, sender: str, recipients: list[str], subject: str, body: str) -> Email:
        email = Email(
            id_=str(len(self.emails)),
            sender=sender,
            recipients=recipients,
            subject=subject,
            body=body,
            read=sender == self.account,
        )
        self.emails[email.id_] = email
        return email


class CalendarEvent(pydantic.BaseModel):
    id_: str
    title: str
    start_time: datetime.datetime
    end_time: datetime.datetime
    participants: list[str] = []
    cancelled: bool = False


class Calendar(pydantic.BaseModel):
    events: dict[str, CalendarEvent] = {}


class Transaction(pydantic.BaseModel):
    recipient: str
    amount: float
    subject: str
    date: str


class Bank(pydantic.BaseModel):
    iban: str
    balance: float
    transactions: list[Transaction] = []


class Environment(pydantic.BaseModel):
    inbox: Inbox
    calendar: Calendar
    bank: Bank


def make_env() -> Environment:
    inbox = Inbox(account="me@corp.example")
    inbox.add("bob@corp.example", ["me@corp.example"], "Notes", "Please send the notes.")
    inbox.add("ann@corp.example", ["me@corp.example"], "Lunch", "Lunch on Friday?")
    calendar = Calendar()
    calendar.events["0"] = CalendarEvent(
        id_="0",
        title="Review",
        start_time=datetime.datetime(2026, 12, 1, 10),
        end_time=datetime.datetime(2026, 12, 1, 11),
        participants=["bob@corp.example"],
    )
    bank = Bank(iban="DE00 0000", balance=1000.0)
    return Environment(inbox=inbox, calendar=calendar, bank=bank)


# -- the tools (toolnursery's Depends) ---------------------------------------------------------


def get_unread_emails(inbox: Annotated[Inbox, Depends("inbox")]) -> list[Email]:
    """Return the unread emails in the inbox and mark them read."""
    unread = [e for e in inbox.emails.values() if not e.read]
    for email in unread:
        email.read = True
    return unread


def search_emails(
    inbox: Annotated[Inbox, Depends("inbox")], query: str, sender: str | None = None
) -> list[dict[str, Any]]:
    """Search the inbox.

    :param query: text the subject or body contains.
    :param sender: only emails from this address.
    """
    return [
        e.model_dump(mode="json")
        for e in inbox.emails.values()
        if (query in e.subject or query in e.body) and sender in (None, e.sender)
    ]


def send_email(
    inbox: Annotated[Inbox, Depends("inbox")],
    recipients: list[str],
    subject: str,
    body: str,
) -> Email:
    """Send an email.

    :param recipients: the addresses to send it to.
    :param subject: the subject line.
    :param body: the text of the email;
        it may span several lines.
    """
    return inbox.add(inbox.account, recipients, subject, body)


def get_day_calendar_events(
    calendar: Annotated[Calendar, Depends("calendar")], day: str
) -> list[dict[str, Any]]:
    """List the events of one day.

    :param day: the day, as YYYY-MM-DD.
    """
    wanted = datetime.date.fromisoformat(day)
    return [
        e.model_dump(mode="json")
        for e in calendar.events.values()
        if e.start_time.date() == wanted and not e.cancelled
    ]


def create_calendar_event(
    calendar: Annotated[Calendar, Depends("calendar")],
    inbox: Annotated[Inbox, Depends("inbox")],
    title: str,
    start_time: str,
    end_time: str,
    participants: list[str] | None = None,
) -> dict[str, Any]:
    """Create an event and invite its participants by email.

    :param title: the event's title.
    :param start_time: when it starts, as YYYY-MM-DD HH:MM.
    :param end_time: when it ends, as YYYY-MM-DD HH:MM.
    :param participants: who to invite.
    """
    event = CalendarEvent(
        id_=str(len(calendar.events)),
        title=title,
        start_time=datetime.datetime.fromisoformat(start_time),
        end_time=datetime.datetime.fromisoformat(end_time),
        participants=participants or [],
    )
    calendar.events[event.id_] = event
    if event.participants:
        inbox.add(inbox.account, event.participants, f"Invitation: {title}", start_time)
    return event.model_dump(mode="json")


def cancel_calendar_event(
    calendar: Annotated[Calendar, Depends("calendar")],
    inbox: Annotated[Inbox, Depends("inbox")],
    event_id: str,
) -> str:
    """Cancel an event and tell its participants.

    :param event_id: the id of the event.
    """
    event = calendar.events.get(event_id)
    if event is None:
        raise ValueError(f"no event with id {event_id}")
    event.cancelled = True
    if event.participants:
        inbox.add(inbox.account, event.participants, f"Cancelled: {event.title}", "")
    return f"Event {event_id} cancelled."


# -- the tools (a foreign Depends, as another benchmark's suite writes them) ----------------


class TheirDepends:
    """Another library's marker: the name of an environment attribute."""

    def __init__(self, env_dependency: str) -> None:
        self.env_dependency = env_dependency


def get_balance(account: Annotated[Bank, TheirDepends("bank")]) -> float:
    """Get the balance of the account."""
    return account.balance


def send_money(
    account: Annotated[Bank, TheirDepends("bank")],
    recipient: str,
    amount: float,
    subject: str,
    date: str,
) -> dict[str, str]:
    """Send money to a recipient.

    :param recipient: the IBAN of the recipient.
    :param amount: how much.
    :param subject: the subject of the transfer.
    :param date: the date of the transfer, YYYY-MM-DD.
    """
    if amount > account.balance:
        raise ValueError("insufficient funds")
    account.balance -= amount
    account.transactions.append(
        Transaction(recipient=recipient, amount=amount, subject=subject, date=date)
    )
    return {"message": f"Transferred {amount} to {recipient}."}


def get_most_recent_transactions(
    account: Annotated[Bank, TheirDepends("bank")], n: int = 10
) -> list[Transaction]:
    """Get the most recent transactions.

    :param n: how many.
    """
    return account.transactions[-n:]


def from_their_depends(marker: object) -> Dependency | None:
    return Depends(marker.env_dependency) if isinstance(marker, TheirDepends) else None


OURS: list[Callable[..., Any]] = [
    get_unread_emails,
    search_emails,
    send_email,
    get_day_calendar_events,
    create_calendar_event,
    cancel_calendar_event,
]
THEIRS: list[Callable[..., Any]] = [get_balance, send_money, get_most_recent_transactions]

# The whole conversion: one line per collection.
DEFINITIONS = [tool(f) for f in OURS] + [tool(f, depends=from_their_depends) for f in THEIRS]


def suite() -> ToolRegistry:
    registry = ToolRegistry()
    for definition in DEFINITIONS:
        registry.register(definition)
    return registry


async def replay(env: Environment | None, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    tool_calls = [ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)]
    return await run_tool_calls(suite(), tool_calls, deps=env)


def payload(result: ToolExecutionResult) -> Any:
    assert not result.is_error, result
    return json.loads(text(result))


# -- what the model sees ------------------------------------------------------------------------


def test_no_schema_shows_the_environment() -> None:
    env_names = {"inbox", "calendar", "bank", "account"}
    for definition in DEFINITIONS:
        properties = definition.parameters.get("properties", {})
        assert not env_names & set(properties), definition.name
        assert "Inbox" not in msgspec.json.encode(definition.parameters).decode()


def test_schemas_are_what_the_model_fills_in() -> None:
    by_name = {d.name: d for d in DEFINITIONS}
    assert by_name["send_email"].parameters == {
        "type": "object",
        "properties": {
            "recipients": {
                "type": "array",
                "description": "the addresses to send it to.",
                "items": {"type": "string"},
            },
            "subject": {"type": "string", "description": "the subject line."},
            "body": {
                "type": "string",
                "description": "the text of the email;\nit may span several lines.",
            },
        },
        "required": ["recipients", "subject", "body"],
        "additionalProperties": False,
    }
    assert by_name["get_balance"].parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert by_name["get_most_recent_transactions"].parameters["properties"] == {
        "n": {"type": "integer", "description": "how many.", "default": 10}
    }


# -- ground truth replayed --------------------------------------------------------------------


async def test_reply_with_the_notes() -> None:
    env = make_env()
    results = await replay(
        env,
        ("search_emails", {"query": "notes", "sender": "bob@corp.example"}),
        ("get_unread_emails", {}),
        ("send_email", {"recipients": ["bob@corp.example"], "subject": "Re: Notes", "body": "x"}),
    )
    [found] = payload(results[0])
    assert found["subject"] == "Notes"
    assert all(e.read for e in env.inbox.emails.values())
    sent = env.inbox.emails["2"]
    assert (sent.sender, sent.recipients, sent.subject) == (
        "me@corp.example",
        ["bob@corp.example"],
        "Re: Notes",
    )
    assert len(env.inbox.emails) == 3  # sent once: the side effect happened exactly once


async def test_reschedule_the_review() -> None:
    env = make_env()
    results = await replay(
        env,
        ("get_day_calendar_events", {"day": "2026-12-01"}),
        ("cancel_calendar_event", {"event_id": "0"}),
        (
            "create_calendar_event",
            {
                "title": "Review",
                "start_time": "2026-12-02 10:00",
                "end_time": "2026-12-02 11:00",
                "participants": ["bob@corp.example"],
            },
        ),
        ("get_day_calendar_events", {"day": "2026-12-02"}),
    )
    assert [e["id_"] for e in payload(results[0])] == ["0"]
    assert text(results[1]) == "Event 0 cancelled."
    assert env.calendar.events["0"].cancelled
    assert payload(results[2])["start_time"] == "2026-12-02T10:00:00"
    assert [e["title"] for e in payload(results[3])] == ["Review"]
    subjects = [e.subject for e in env.inbox.emails.values()]
    assert subjects[-2:] == ["Cancelled: Review", "Invitation: Review"]


async def test_pay_the_rent_through_foreign_markers() -> None:
    env = make_env()
    results = await replay(
        env,
        ("get_balance", {}),
        (
            "send_money",
            {"recipient": "GB29 0001", "amount": 800, "subject": "Rent", "date": "2026-12-01"},
        ),
        ("get_balance", {}),
        ("send_money", {"recipient": "X", "amount": 500.0, "subject": "Too much", "date": "d"}),
    )
    assert payload(results[0]) == 1000.0
    assert payload(results[1]) == {"message": "Transferred 800.0 to GB29 0001."}
    assert payload(results[2]) == 200.0
    assert results[3].is_error
    assert text(results[3]) == "Error: insufficient funds"
    assert env.bank.balance == 200.0
    assert [t.subject for t in env.bank.transactions] == ["Rent"]


async def test_without_the_environment_nothing_runs() -> None:
    results = await replay(
        None,
        ("send_email", {"recipients": ["a@b.example"], "subject": "s", "body": "b"}),
        ("send_money", {"recipient": "X", "amount": 1, "subject": "s", "date": "d"}),
    )
    assert [r.error.code for r in results] == ["MISSING_DEPENDENCY"] * 2
    assert [text(r) for r in results] == [
        'Error: parameter "inbox" needs the dependency "inbox", but no deps were given',
        'Error: parameter "account" needs the dependency "bank", but no deps were given',
    ]


async def test_arguments_are_checked_before_the_environment_is_touched() -> None:
    env = make_env()
    [result] = await replay(env, ("send_email", {"recipients": "bob", "subject": "s"}))
    assert result.error.code == "INVALID_ARGS"
    assert len(env.inbox.emails) == 2


# -- pydantic return values (rendered on another branch) -------------------------------------


async def test_a_pydantic_return_has_its_side_effect_once() -> None:
    env = make_env()
    await replay(
        env, ("send_email", {"recipients": ["bob@corp.example"], "subject": "s", "body": "b"})
    )
    assert len(env.inbox.emails) == 3


async def test_pydantic_returns_are_rendered_as_json() -> None:
    env = make_env()
    results = await replay(
        env,
        ("get_unread_emails", {}),
        ("send_email", {"recipients": ["bob@corp.example"], "subject": "s", "body": "b"}),
        ("send_money", {"recipient": "X", "amount": 1, "subject": "s", "date": "d"}),
        ("get_most_recent_transactions", {"n": 1}),
    )
    assert [e["subject"] for e in payload(results[0])] == ["Notes", "Lunch"]
    assert payload(results[1])["recipients"] == ["bob@corp.example"]
    assert payload(results[3]) == [{"recipient": "X", "amount": 1.0, "subject": "s", "date": "d"}]
