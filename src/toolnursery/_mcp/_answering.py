"""A mounted server's questions to the user, answered for its mount.

A server may ask something mid-call: pushed as ``elicitation/create`` on a
handshake-era connection, or returned as an input-required result on a 2026-07-28
one. Either way the question goes to the mount's ``on_elicit`` callback, or else to
the host's approval service (a question that asks for nothing but a yes), or is
declined with the reason. Sampling requests go to ``on_sample``, or are declined;
a request for the client's roots is always declined.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import mcp.types as types

from .._core._errors import MCP_REQUEST_FAILED, McpCallError
from .._core._execution import ApprovalRequest, ApprovalService, ToolRunContext
from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = ["ElicitHandler", "SampleHandler", "ServerQuestions"]

ElicitHandler: TypeAlias = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
"""``on_elicit(params)``: answers a mounted server's question to the user."""

SampleHandler: TypeAlias = Callable[
    [types.CreateMessageRequestParams], Awaitable[types.CreateMessageResult]
]
"""``on_sample(params)``: answers a mounted server's request for a model completion."""


class ServerQuestions:
    """Answers one mount's server: its elicitation, sampling and roots requests."""

    def __init__(
        self,
        owner: ToolRegistry | ToolScope,
        on_elicit: ElicitHandler | None,
        on_sample: SampleHandler | None,
    ):
        self._owner = owner
        self._on_elicit = on_elicit
        self._on_sample = on_sample

    def approval(self) -> ApprovalService | None:
        """The host's approval service (of the registry the mount registers in), if any."""
        owner = self._owner
        registry = owner.registry if isinstance(owner, ToolScope) else owner
        return registry.approval

    async def answer_all(
        self, requests: Mapping[str, types.InputRequest], ctx: ToolRunContext, tool: str
    ) -> dict[str, Any]:
        """Answer an input-required result's requests, by key, for a retry of ``tool``.

        Raises:
            McpCallError: a request was declined (the message says why).
        """
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            answer = await self.answer(request, ctx, tool)
            if isinstance(answer, types.ErrorData):
                raise McpCallError(
                    f'MCP tool "{tool}" needed input the mount could not give: {answer.message}',
                    code=MCP_REQUEST_FAILED,
                )
            answers[key] = answer
        return answers

    async def answer(
        self, request: types.InputRequest, ctx: ToolRunContext | None, tool: str | None
    ) -> types.ElicitResult | types.CreateMessageResult | types.ErrorData:
        """Answer one request, or say why it is declined."""
        if isinstance(request, types.ElicitRequest):
            return await self.elicit(request.params, ctx, tool)
        if isinstance(request, types.CreateMessageRequest):
            return await self.sample(request.params)
        return _declined("roots", None)

    async def elicit(
        self, params: types.ElicitRequestParams, ctx: ToolRunContext | None, tool: str | None
    ) -> types.ElicitResult | types.ErrorData:
        """Answer a question to the user, asked during the call ``ctx`` (if known)."""
        if self._on_elicit is not None:
            return await self._on_elicit(params)
        approval = self.approval()
        if approval is None:
            return _declined("elicitation", "on_elicit=")
        if not _asks_only_yes(params):
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="elicitation declined: the host's approval service answers yes or no; "
                "this form asks for data (give the mount an on_elicit= callback)",
            )
        if ctx is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="elicitation declined: it names no call the host can ask about",
            )
        outcome = await approval.request(
            ApprovalRequest(
                agent=ctx.agent,
                tool_name=ctx.name,
                call_id=ctx.call_id,
                reason=params.message,
                signal=ctx.signal,
            )
        )
        if outcome == "allowed-once":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline" if outcome == "rejected" else "cancel")

    async def sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """Answer a request for a model completion, or decline it."""
        if self._on_sample is None:
            return _declined("sampling", "on_sample=")
        return await self._on_sample(params)


def _declined(what: str, option: str | None) -> types.ErrorData:
    how = f" (give the mount an {option} callback)" if option else ""
    return types.ErrorData(
        code=types.INVALID_REQUEST, message=f"{what} declined: this client does not offer it{how}"
    )


def _asks_only_yes(params: types.ElicitRequestParams) -> bool:
    """Whether a question needs nothing but consent: a form with no required field."""
    if not isinstance(params, types.ElicitRequestFormParams):
        return False
    schema: Mapping[str, Any] = params.requested_schema
    return not schema.get("required")
