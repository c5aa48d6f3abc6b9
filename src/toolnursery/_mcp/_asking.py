"""A served call's questions to its MCP client: ``elicit()`` and ``Ask`` without a service.

On 2025-11-25 a question is an ``elicitation/create`` request on the call's stream
(the client must have declared ``elicitation``). On 2026-07-28 a server sends no
requests: a call that asks ends with an ``input_required`` result carrying the
question, and the client retries the call with the answer — the body runs again
from the start, and this time ``elicit()`` returns the answer (what the body did
before asking, it does again). Answers accumulate across rounds in the
``requestState``, which is sealed with an HMAC over the call's tool and arguments:
a state that was altered, is older than :data:`ANSWER_TTL_S`, or was minted for
another call is refused with a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any, Final, NoReturn

import mcp.types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .._aio._api import asyncio_tool
from .._core._asking import Elicitation, Sample
from .._core._decisions import Allow, Ask, Deny, PreToolDecision
from .._core._errors import ElicitationUnavailableError, ToolError
from .._core._execution import ToolExecution
from .._core._outcomes import error_message
from .._pipeline._argcheck import refused_arguments
from .._pipeline._registry import Disposer, ToolRegistry

__all__ = [
    "ANSWER_TTL_S",
    "APPROVAL_KEY",
    "CallQuestions",
    "InputRequired",
    "PRIMED_KEY",
    "ask_the_client",
    "close_sse_stream",
    "new_secret",
]

PRIMED_KEY: Final = "toolnursery.sse_primed"
"""The ASGI scope key of the event (a ``trio.Event`` on trio, an ``asyncio.Event`` on
asyncio) that :func:`~toolnursery.mcp.mcp_asgi_app` sets once a response has sent its
first bytes (a POST stream's priming event)."""

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


class InputRequired(ToolError):
    """Raised when a served 2026-07-28 call asks its client: the call ends here, and
    answers ``input_required`` (its result is replaced; observers see this error)."""

    code = "INPUT_REQUIRED"


class CallQuestions:
    """How one served call asks its client; installed around the call's pipeline."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        secret: bytes,
    ) -> None:
        """The questions of the call ``params`` describes, with the answers so far.

        Raises:
            MCPError: the retry's ``requestState`` is not one this server minted for
                this call (altered, expired, or another call's).
        """
        self._ctx = ctx
        self._params = params
        self._secret = secret
        self._count = 0
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._answers: dict[str, Elicitation | Sample] = self._verified() if self.modern else {}
        self.input_required: types.InputRequiredResult | None = None
        """Set when the call must end by asking a 2026-07-28 client."""
        self.missing: types.ClientCapabilities | None = None
        """What a 2026-07-28 client lacked when the call asked it (the protocol's
        answer to such a call is a -32021 error, should the body not carry on)."""

    def install(self) -> Token[CallQuestions | None]:
        """Make this the questions of the calls run in this context (until
        :meth:`uninstall`)."""
        return _questions.set(self)

    def uninstall(self, token: Token[CallQuestions | None]) -> None:
        """Undo the :meth:`install` that returned ``token`` (in the same context)."""
        _questions.reset(token)

    async def close_stream(self) -> bool:
        """Close this call's SSE stream (see :func:`close_sse_stream`)."""
        close = self._ctx.close_sse_stream
        if close is None:
            return False
        # Closed before its priming event went out, the client would have no event id
        # to resume from: mcp_asgi_app says when the response's first event is sent.
        scope = getattr(self._ctx.request, "scope", None)
        primed = scope.get(PRIMED_KEY) if isinstance(scope, dict) else None
        if isinstance(primed, asyncio.Event):
            await _wait_on_the_loop(primed)  # a body in the trio guest run waits too
        elif primed is not None:
            await primed.wait()
        await close()
        return True

    def _can(self, capability: types.ClientCapabilities) -> bool:
        if self._ctx.session.check_client_capability(capability):
            return True
        if self.modern:
            self.missing = capability
        return False

    def _can_elicit(self) -> bool:
        return self._can(types.ClientCapabilities(elicitation=types.ElicitationCapability()))

    def _key(self, kind: str, key: str | None) -> str:
        if key is None:
            key = f"toolnursery/{kind}/{self._count}"
            self._count += 1
        return key

    async def elicit(
        self, message: str, requested_schema: Mapping[str, Any], key: str | None = None
    ) -> Elicitation:
        """Ask the client's user (see :class:`~toolnursery._core._asking.Asker`)."""
        key = self._key("elicit", key)
        answer = self._answers.get(key)
        if isinstance(answer, Elicitation):
            return answer
        if not self._can_elicit():
            raise ElicitationUnavailableError("the MCP client did not declare elicitation")
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=message, requested_schema=dict(requested_schema)
            )
        )
        if self.modern:
            self._ask(key, "elicit", request)
        try:
            result = await self._ctx.session.send_request(
                request, types.ElicitResult, metadata=self._related()
            )
        except MCPError as exc:
            raise ElicitationUnavailableError(
                f"the MCP client could not answer: {exc.error.message}"
            ) from exc
        return Elicitation(action=result.action, content=result.content)

    async def sample(
        self, prompt: str, max_tokens: int, system_prompt: str | None, key: str | None = None
    ) -> Sample:
        """Ask the client's model (see :class:`~toolnursery._core._asking.Asker`)."""
        key = self._key("sample", key)
        answer = self._answers.get(key)
        if isinstance(answer, Sample):
            return answer
        if not self._can(types.ClientCapabilities(sampling=types.SamplingCapability())):
            raise ElicitationUnavailableError("the MCP client did not declare sampling")
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text=prompt)
                    )
                ],
                max_tokens=max_tokens,
                system_prompt=system_prompt,
            )
        )
        if self.modern:
            self._ask(key, "sample", request)
        try:
            result = await self._ctx.session.send_request(
                request, types.CreateMessageResult, metadata=self._related()
            )
        except MCPError as exc:
            raise ElicitationUnavailableError(
                f"the MCP client could not answer: {exc.error.message}"
            ) from exc
        return _sample(result)

    def _related(self) -> ServerMessageMetadata:
        return ServerMessageMetadata(related_request_id=self._ctx.request_id)

    def missing_capability_error(self) -> MCPError:
        """The 2026-07-28 answer to a call whose question the client could not take."""
        assert self.missing is not None
        data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=self.missing)
        return MCPError(
            types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            "the call needs a client capability the client did not declare",
            data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )

    async def approve(self, name: str, reason: str | None) -> PreToolDecision | None:
        """The client's decision on an ``Ask``; ``None`` when it cannot be asked."""
        message = reason if reason is not None else f'Allow the tool "{name}" to run?'
        answer = self._answers.get(APPROVAL_KEY)
        if not isinstance(answer, Elicitation):
            if not self._can_elicit():
                return None
            try:
                answer = await self.elicit(message, _APPROVAL_SCHEMA, APPROVAL_KEY)
            except InputRequired:
                return Deny(f'tool "{name}" waits for the client\'s approval')
            except ElicitationUnavailableError:
                return None
        if answer.action == "accept" and (answer.content or {}).get("approve") is True:
            return Allow()
        return Deny(f'the user declined tool "{name}"')

    def _ask(self, key: str, kind: str, request: types.InputRequest) -> NoReturn:
        """End this 2026-07-28 round with ``request``, to be answered on the retry."""
        self.input_required = types.InputRequiredResult(
            input_requests={key: request}, request_state=self._seal(key, kind)
        )
        raise InputRequired(f"waiting for the client's answer to {key!r}")

    def _seal(self, asked: str, kind: str) -> str:
        payload = {
            "t": time.time(),
            "call": [self._params.name, self._params.arguments],
            "asked": [asked, kind],
            "answers": {
                key: [
                    "sample" if isinstance(answer, Sample) else "elicit",
                    msgspec.to_builtins(answer),
                ]
                for key, answer in self._answers.items()
            },
        }
        body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
        return f"{body}.{self._mac(body)}"

    def _mac(self, body: str) -> str:
        # surrogatepass: a forged state may hold lone surrogates; it still gets a MAC
        # (which it fails), never an encoding error.
        data = body.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, data, hashlib.sha256).hexdigest()

    def _verified(self) -> dict[str, Elicitation | Sample]:
        """The answers so far: the state's, and the retry's to the question it asked."""
        state = self._params.request_state
        if state is None:  # a first round (responses without a state are not trusted)
            return {}
        body, _, mac = state.rpartition(".")
        # compared as bytes: compare_digest refuses a str that is not ASCII
        given = mac.encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(given, self._mac(body).encode()):
            _refuse("requestState failed its integrity check")
        payload = json.loads(base64.urlsafe_b64decode(body))
        if not (0 <= time.time() - payload["t"] <= ANSWER_TTL_S):
            _refuse("requestState has expired; call the tool again")
        if payload["call"] != [self._params.name, self._params.arguments]:
            _refuse("requestState belongs to another call")
        answers: dict[str, Elicitation | Sample] = {
            key: msgspec.convert(value, Sample)
            if kind == "sample"
            else msgspec.convert(value, Elicitation)
            for key, (kind, value) in payload["answers"].items()
        }
        asked, kind = payload["asked"]
        response = (self._params.input_responses or {}).get(asked)
        if kind == "elicit" and isinstance(response, types.ElicitResult):
            answers[asked] = Elicitation(action=response.action, content=response.content)
        elif kind == "sample" and isinstance(response, types.CreateMessageResult):
            answers[asked] = _sample(response)
        return answers


@asyncio_tool
async def _wait_on_the_loop(event: asyncio.Event) -> None:
    """Wait for an asyncio event: awaited in an asyncio task, or from the trio guest
    run (which an asyncio host's calls use for trio bodies) as a task on the loop."""
    await event.wait()


def _sample(result: types.CreateMessageResult) -> Sample:
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else None
    return Sample(text=text, model=result.model, stop_reason=result.stop_reason)


def _refuse(message: str) -> NoReturn:
    raise MCPError(types.INVALID_PARAMS, message)


async def close_sse_stream() -> bool:
    """Close the SSE stream of the served MCP call this body runs in, mid-call.

    For a long call over streamable HTTP (SEP-1699 polling): the client's connection
    is let go, the call goes on, and what it sends meanwhile — progress, logs, its
    result — is kept in the server's event store; the client reconnects with
    ``Last-Event-ID`` (after the ``retry`` the server suggested) and gets all of it.

    Returns:
        Whether a stream was closed: ``False`` outside a served call, over stdio, on a
        2026-07-28 request, for a client older than 2025-11-25 (it could not resume)
        or on a server without an event store (``mcp_asgi_app(max_events=0)``).
    """
    questions = _questions.get()
    return False if questions is None else await questions.close_stream()


def new_secret() -> bytes:
    """A key for one server run's ``requestState`` HMACs."""
    return secrets.token_bytes(32)


def ask_the_client(registry: ToolRegistry) -> Disposer:
    """Route a served call's ``Ask`` to its client when the registry has no approval
    service: the outermost pre-execute listener, so it sees the final decision. A call
    whose arguments the tool's own check refuses is not put to the client, as none is
    put to an approval service: it is denied with the check's message, the text of the
    ``INVALID_ARGS`` result a grant would have led to (a denial: it carries no code)."""

    async def listener(
        execution: ToolExecution, next: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        decision = await next()
        if type(decision) is not Ask or registry.approval is not None:
            return decision
        questions = _questions.get()
        if questions is None:  # not a served call
            return decision
        refused = refused_arguments(
            registry.get(execution.name, execution.agent), execution.arguments
        )
        if refused is not None:  # nobody is asked about arguments the tool would refuse
            return Deny(error_message(refused))
        answered = await questions.approve(execution.name, decision.reason)
        return decision if answered is None else answered

    return registry.on_pre_execute(listener, prepend=True)
