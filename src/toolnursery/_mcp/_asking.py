"""A served call's questions to its MCP client: ``elicit()`` and ``Ask`` without a service.

On 2025-11-25 a question is an ``elicitation/create`` request on the call's stream
(the client must have declared ``elicitation``). On 2026-07-28 a server sends no
requests: the only question a served call asks is the approval of an ``Ask``, made
before the body runs, so the call answers ``input_required`` with the question and
runs when the client retries with the answer. The retry's ``requestState`` is an
HMAC of the question's tool and arguments and its time, so an answer counts only for
the call it was given for, and only for :data:`ANSWER_TTL_S`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, Final

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .._core._asking import Elicitation
from .._core._decisions import Allow, Ask, Deny, PreToolDecision
from .._core._errors import ElicitationUnavailableError
from .._core._execution import ToolExecution
from .._pipeline._registry import Disposer, ToolRegistry

__all__ = ["ANSWER_TTL_S", "APPROVAL_KEY", "CallQuestions", "ask_the_client", "new_secret"]

APPROVAL_KEY: Final = "toolnursery/approval"
"""The ``inputRequests`` key of a 2026-07-28 approval question."""

ANSWER_TTL_S: Final = 600.0
"""How long a 2026-07-28 approval question stays answerable, in seconds."""

_APPROVAL_SCHEMA: Final = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Allow this call", "default": False}},
    "required": ["approve"],
}

_questions: ContextVar[CallQuestions | None] = ContextVar("toolnursery_mcp_questions", default=None)


class CallQuestions:
    """How one served call asks its client; installed around the call's pipeline."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        secret: bytes,
    ) -> None:
        self._ctx = ctx
        self._params = params
        self._secret = secret
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self.input_required: types.InputRequiredResult | None = None
        """Set when the call must end by asking a 2026-07-28 client."""

    def install(self) -> object:
        """Make this the questions of the calls run in this context (until reset)."""
        return _questions.set(self)

    def _can_elicit(self) -> bool:
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        return not self.modern and self._ctx.session.check_client_capability(wanted)

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicitation:
        """Ask the client's user (an :data:`~toolnursery._core._asking.Asker`)."""
        if self.modern:
            raise ElicitationUnavailableError(
                "the MCP client speaks 2026-07-28, where a running call cannot ask it"
            )
        if not self._can_elicit():
            raise ElicitationUnavailableError("the MCP client did not declare elicitation")
        try:
            result = await self._ctx.session.elicit_form(
                message, dict(schema), related_request_id=self._ctx.request_id
            )
        except MCPError as exc:
            raise ElicitationUnavailableError(
                f"the MCP client could not answer: {exc.error.message}"
            ) from exc
        return Elicitation(action=result.action, content=result.content)

    async def approve(self, name: str, reason: str | None) -> PreToolDecision | None:
        """The client's decision on an ``Ask``; ``None`` when it cannot be asked."""
        message = reason if reason is not None else f'Allow the tool "{name}" to run?'
        if self.modern:
            answer = self._answer()
            if answer is None:
                self.input_required = types.InputRequiredResult(
                    input_requests={
                        APPROVAL_KEY: types.ElicitRequest(
                            params=types.ElicitRequestFormParams(
                                message=message, requested_schema=dict(_APPROVAL_SCHEMA)
                            )
                        )
                    },
                    request_state=self._state(time.time()),
                )
                return Deny(f'tool "{name}" waits for the client\'s approval')
        elif self._can_elicit():
            try:
                answer = await self.elicit(message, _APPROVAL_SCHEMA)
            except ElicitationUnavailableError:
                return None
        else:
            return None
        if answer.action == "accept" and (answer.content or {}).get("approve") is True:
            return Allow()
        return Deny(f'the user declined tool "{name}"')

    def _answer(self) -> Elicitation | None:
        """The retry's answer, if its ``requestState`` is one minted for this call."""
        state = self._params.request_state
        response = (self._params.input_responses or {}).get(APPROVAL_KEY)
        if state is None or not isinstance(response, types.ElicitResult):
            return None
        stamp, _, _ = state.rpartition(".")
        try:
            minted = float(stamp)
        except ValueError:
            return None
        if not (0 <= time.time() - minted <= ANSWER_TTL_S):
            return None
        if not hmac.compare_digest(state, self._state(minted)):
            return None
        return Elicitation(action=response.action, content=response.content)

    def _state(self, minted: float) -> str:
        params = self._params
        bound = json.dumps([params.name, params.arguments, repr(minted)], sort_keys=True)
        digest = hmac.new(self._secret, bound.encode(), hashlib.sha256).hexdigest()
        return f"{minted!r}.{digest}"


def new_secret() -> bytes:
    """A key for one server run's ``requestState`` HMACs."""
    return secrets.token_bytes(32)


def ask_the_client(registry: ToolRegistry) -> Disposer:
    """Route a served call's ``Ask`` to its client when the registry has no approval
    service: the outermost pre-execute listener, so it sees the final decision."""

    async def listener(
        execution: ToolExecution, next: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        decision = await next()
        if type(decision) is not Ask or registry.approval is not None:
            return decision
        questions = _questions.get()
        if questions is None:  # not a served call
            return decision
        answered = await questions.approve(execution.name, decision.reason)
        return decision if answered is None else answered

    return registry.on_pre_execute(listener, prepend=True)
