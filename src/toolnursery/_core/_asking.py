"""Questions from tool bodies to the user or the client's model, through whoever runs
the call.

A body asks the user with ``await elicit(message, schema)`` and the client's model
with ``await sample(prompt, max_tokens=...)``: the question goes to the
:class:`Asker` installed around the call with :func:`asking` — an MCP server
installs one that sends MCP elicitation and sampling requests to its client.
Without an asker, or when the asker cannot reach anyone,
:class:`ElicitationUnavailableError` says so; a body that catches it can carry on
without the answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, Protocol

import msgspec

from ._errors import ElicitationUnavailableError

__all__ = ["Asker", "Elicitation", "Sample", "asking", "elicit", "sample"]


class Elicitation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The user's answer to an :func:`elicit` question.

    Attributes:
        action: ``"accept"`` (answered), ``"decline"`` (refused to) or
            ``"cancel"`` (dismissed the question).
        content: the answer (an object matching the requested schema) when accepted.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Sample(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The client's model's answer to a :func:`sample` prompt.

    Attributes:
        text: the answer's text (``None`` when the model answered with something else).
        model: the model that answered, as the client names it.
        stop_reason: why it stopped (``"endTurn"``, ``"maxTokens"``, ...), if given.
    """

    text: str | None
    model: str
    stop_reason: str | None = None


class Asker(Protocol):
    """Puts a call's questions to the user (``elicit``) or the client's model (``sample``)."""

    async def elicit(
        self, message: str, requested_schema: Mapping[str, Any], key: str | None
    ) -> Elicitation:
        """Ask the user; return the answer."""
        ...

    async def sample(
        self, prompt: str, max_tokens: int, system_prompt: str | None, key: str | None
    ) -> Sample:
        """Ask the client's model; return its answer."""
        ...


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
    return await _current().elicit(message, requested_schema, key)


async def sample(
    prompt: str, *, max_tokens: int, system_prompt: str | None = None, key: str | None = None
) -> Sample:
    """Ask the client's model (MCP sampling) from a tool body, and wait for the answer.

    Served over MCP at 2026-07-28, a call that asks runs again once the client
    answers, as with :func:`elicit`.

    Args:
        prompt: the user message to send.
        max_tokens: the most tokens the answer may have.
        system_prompt: a system prompt, if any.
        key: the question's name, unique within the call (see :func:`elicit`).

    Returns:
        The model's answer.

    Raises:
        ElicitationUnavailableError: nobody can be asked (a client that did not
            declare sampling, a call not served over MCP).
        TypeError: ``prompt`` is not a str.
        ValueError: ``max_tokens`` is not a positive int.
    """
    if not isinstance(prompt, str):
        raise TypeError(f"sample(): prompt must be a str, got {type(prompt).__name__}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"sample(): max_tokens must be a positive int, got {max_tokens!r}")
    return await _current().sample(prompt, max_tokens, system_prompt, key)


def _current() -> Asker:
    asker = _asker.get()
    if asker is None:
        raise ElicitationUnavailableError(
            "this call cannot ask: nothing that runs it takes questions"
        )
    return asker
