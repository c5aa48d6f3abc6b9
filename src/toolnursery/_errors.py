"""Exceptions raised by toolnursery, and the error codes results carry.

The tree::

    ToolnurseryError                  base of everything raised here
    ├── ToolError                     a failure a tool call can report ({name, code})
    │   ├── ToolArgsError             INVALID_ARGS: arguments violate the schema
    │   ├── ToolNotFoundError         UNKNOWN_TOOL: nothing visible under that name
    │   ├── ToolTimeoutError          TOOL_TIMEOUT: the timeout policy's deadline fired
    │   ├── OutputSchemaError         UNSUPPORTED_SCHEMA: a schema outside the subset
    │   ├── ToolOutputError           INVALID_TOOL_OUTPUT: a body returned a value its
    │   │                             declared output does not allow
    │   ├── AsyncioHostError          NO_ASYNCIO_HOST: an asyncio tool called where no
    │   │                             asyncio loop hosts the trio run
    │   └── RemoteToolError           REMOTE_*: a body placed on a Ray cluster gave no
    │                                 answer (worker or node died, no cluster, result
    │                                 not encodable)
    └── RegistrationError (ValueError) a programmer error at registration time

A :class:`ToolError` raised by a tool body, a policy hook or a wrapper becomes an
``is_error`` result whose ``error`` is ``ToolErrorInfo(name=<class name>, code=<code>)``;
any other exception becomes an ``is_error`` result with the text only.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "INVALID_TOOL_OUTPUT",
    "REMOTE_NODE_DIED",
    "REMOTE_RESULT_NOT_ENCODABLE",
    "REMOTE_UNAVAILABLE",
    "REMOTE_WORKER_DIED",
    "TOOL_TIMEOUT",
    "AsyncioHostError",
    "OutputSchemaError",
    "RegistrationError",
    "RemoteToolError",
    "ToolArgsError",
    "ToolError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolTimeoutError",
    "ToolnurseryError",
]

TOOL_ABORTED = "ABORTED"
"""Code of a call cancelled after its body was invoked."""
TOOL_ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
"""Code of a call cancelled before its body was invoked."""
TOOL_TIMEOUT = "TOOL_TIMEOUT"
"""Code of a call whose timeout-policy deadline fired."""
INVALID_TOOL_OUTPUT = "INVALID_TOOL_OUTPUT"
"""Code of a call whose body returned a value its declared output does not allow."""
REMOTE_WORKER_DIED = "REMOTE_WORKER_DIED"
"""Code of a remote call whose Ray worker (or actor) died while it ran."""
REMOTE_NODE_DIED = "REMOTE_NODE_DIED"
"""Code of a remote call whose node, or the object holding its answer, was lost."""
REMOTE_UNAVAILABLE = "REMOTE_UNAVAILABLE"
"""Code of a remote call that could not be placed: no Ray connection, or unschedulable."""
REMOTE_RESULT_NOT_ENCODABLE = "REMOTE_RESULT_NOT_ENCODABLE"
"""Code of a remote call whose body returned a value that cannot cross as msgspec bytes."""


class ToolnurseryError(Exception):
    """Base class of every exception toolnursery defines."""


class ToolError(ToolnurseryError):
    """Raised when a tool call fails in a way the model should see with a code.

    Raise it (or a subclass) from a tool body or a policy hook: the call's result
    becomes ``Error: <message>`` with ``error = ToolErrorInfo(name, code)``, where
    ``name`` is the concrete class name.

    Args:
        message: the model-facing message (the result text is ``Error: <message>``).
        code: a machine-routable code; defaults to the class attribute ``code``.
    """

    code: str = "TOOL_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def name(self) -> str:
        """The concrete class name, as results report it."""
        return type(self).__name__


class ToolArgsError(ToolError):
    """Raised when a call's arguments violate the tool's parameter schema.

    Its message is ``invalid arguments: `` followed by the violations joined by ``"; "``.
    """

    code = "INVALID_ARGS"

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__("invalid arguments: " + "; ".join(self.violations))


class ToolNotFoundError(ToolError):
    """Raised when no tool of that name is visible to the calling scope."""

    code = "UNKNOWN_TOOL"

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(f'unknown tool "{tool_name}"')


class ToolTimeoutError(ToolError):
    """Raised when the timeout policy's own deadline ends a call."""

    code = TOOL_TIMEOUT

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(f"tool call timed out after {_format_ms(timeout_ms)}ms")


class OutputSchemaError(ToolError):
    """Raised when a structured-output schema uses something outside the subset.

    Its message is ``unsupported output schema: `` followed by every violation
    joined by ``"; "``.
    """

    code = "UNSUPPORTED_SCHEMA"

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__("unsupported output schema: " + "; ".join(self.violations))


class ToolOutputError(ToolError):
    """Raised when a tool's body returns a value its declared output does not allow.

    Its message is ``tool "<name>" returned invalid output: `` followed by the
    violations joined by ``"; "``; a renderer that fails gives
    ``output.render failed: <message>`` instead.

    Args:
        tool_name: the tool whose output was invalid.
        violations: the problems, each naming the path (``"value.count" ...``).
        message: a message to use instead of the violations' one.
    """

    code = INVALID_TOOL_OUTPUT

    def __init__(
        self, tool_name: str, violations: Sequence[str] = (), *, message: str | None = None
    ) -> None:
        self.tool_name = tool_name
        self.violations: tuple[str, ...] = tuple(violations)
        if message is None:
            message = f'tool "{tool_name}" returned invalid output: ' + "; ".join(self.violations)
        super().__init__(message)


class AsyncioHostError(ToolError):
    """Raised when an asyncio tool is called in a trio run that no asyncio loop hosts.

    An asyncio tool runs only in calls started from asyncio code through
    :mod:`toolnursery.aio`; under a plain ``trio.run`` its call fails with this error
    (an ``is_error`` result, code ``NO_ASYNCIO_HOST``).
    """

    code = "NO_ASYNCIO_HOST"

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(
            f'asyncio tool "{tool_name}" needs an asyncio host loop: it runs only in calls '
            "started from asyncio through toolnursery.aio (run_tool_calls, open_tool_batch, "
            "execute), and this trio run has none"
        )


class RemoteToolError(ToolError):
    """Raised when a tool body placed on a Ray cluster gives no answer.

    Its ``code`` says why: ``REMOTE_WORKER_DIED``, ``REMOTE_NODE_DIED``,
    ``REMOTE_UNAVAILABLE`` or ``REMOTE_RESULT_NOT_ENCODABLE`` (see
    :mod:`toolnursery.ray`).
    """

    code = REMOTE_UNAVAILABLE


class RegistrationError(ToolnurseryError, ValueError):
    """Raised when a definition, listener or restriction is rejected at registration."""


def _format_ms(ms: float) -> str:
    return str(int(ms)) if float(ms).is_integer() else repr(float(ms))
