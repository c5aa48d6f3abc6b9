"""Questions from tool bodies to the user, through whoever runs the call.

A body asks with ``await elicit(message, schema)``: the question goes to the asker
installed around the call with :func:`asking` — an MCP server installs one that
sends an MCP elicitation to its client. Without an asker, or when the asker cannot
reach anyone, :class:`ElicitationUnavailableError` says so; a body that catches it
can carry on without the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias

import msgspec

from ._errors import ElicitationUnavailableError

__all__ = ["Asker", "Elicitation", "asking", "elicit"]


class Elicitation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The user's answer to an :func:`elicit` question.

    Attributes:
        action: ``"accept"`` (answered), ``"decline"`` (refused to) or
            ``"cancel"`` (dismissed the question).
        content: the answer (an object matching the requested schema) when accepted.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


Asker: TypeAlias = Callable[[str, Mapping[str, Any], "str | None"], Awaitable[Elicitation]]
"""Puts a question (message, requested JSON Schema, key) to the user; returns the answer."""

_asker: ContextVar[Asker | None] = ContextVar("toolnursery_asker", default=None)


@contextmanager
def asking(asker: Asker) -> Iterator[None]:
    """Send the questions of calls run inside the block to ``asker``."""
    token = _asker.set(asker)
    try:
        yield
    finally:
        _asker.reset(token)


async def elicit(
    message: str, requested_schema: Mapping[str, Any], *, key: str | None = None
) -> Elicitation:
    """Ask the user a question from a tool body, and wait for the answer.

    Served over MCP at 2026-07-28, a call that asks ends with the question, and
    runs again from the start once the client answers: this time ``elicit()``
    returns the answer. What the body did before asking, it does again.

    Args:
        message: the question, for a person.
        requested_schema: the JSON Schema of the answer (an object of plain-typed
            properties, as MCP's form elicitation allows).
        key: the question's name, unique within the call (default: its position
            among the call's questions); 2026-07-28 clients see it.

    Returns:
        The user's answer.

    Raises:
        ElicitationUnavailableError: nobody can be asked (see the class).
        TypeError: ``message`` is not a str or ``requested_schema`` not a mapping.
    """
    if not isinstance(message, str):
        raise TypeError(f"elicit(): message must be a str, got {type(message).__name__}")
    if not isinstance(requested_schema, Mapping):
        raise TypeError(
            f"elicit(): requested_schema must be a mapping, got {type(requested_schema).__name__}"
        )
    asker = _asker.get()
    if asker is None:
        raise ElicitationUnavailableError(
            "this call cannot ask the user: nothing that runs it takes questions"
        )
    return await asker(message, requested_schema, key)
