"""Where a call's approval goes through: the batch's journal, when one is installed.

A batch with a durable log installs an :class:`ApprovalJournal` for its calls (a context
variable, so the tasks the batch starts see it too). :func:`journaled` gives a call's
request to the innermost journal that owns it — which records the question and the
answer in the batch's log, and answers from the log a call a resumed batch runs again —
and straight to the approval service otherwise (no batch, or a batch with no log).
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import ContextVar, Token
from typing import Protocol

from ._execution import ApprovalOutcome, ApprovalRequest, ApprovalService

__all__ = ["ApprovalJournal", "install_journal", "journaled", "remove_journal"]


class ApprovalJournal(Protocol):
    """A batch's side of its calls' approvals (internal)."""

    def ask(
        self, service: ApprovalService, request: ApprovalRequest
    ) -> Awaitable[ApprovalOutcome] | None:
        """The answer to ``request`` (recorded, and from the log when it holds one), or
        ``None`` when the request is not of one of this batch's calls."""
        ...


_journal: ContextVar[ApprovalJournal | None] = ContextVar("toolnursery_journal", default=None)


def journaled(service: ApprovalService) -> ApprovalService:
    """``service``, asked through the journal installed here (itself when there is none)."""
    journal = _journal.get()
    if journal is None:
        return service
    return _Through(journal, service)


class _Through:
    """An approval service asked through a journal: the journal answers the requests of
    its batch's calls (recording them), the service the rest."""

    __slots__ = ("journal", "service")

    def __init__(self, journal: ApprovalJournal, service: ApprovalService) -> None:
        self.journal = journal
        self.service = service

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        answer = self.journal.ask(self.service, request)
        if answer is None:
            answer = self.service.request(request)
        return await answer


def install_journal(journal: ApprovalJournal) -> Token[ApprovalJournal | None]:
    """Route the approvals of calls run here (and in tasks started here) through
    ``journal``; undo with :func:`remove_journal` in the same context."""
    return _journal.set(journal)


def remove_journal(token: Token[ApprovalJournal | None]) -> None:
    """Undo an :func:`install_journal`."""
    _journal.reset(token)
