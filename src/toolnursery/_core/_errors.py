"""Exceptions raised by toolnursery, and the error codes results carry.

The tree::

    ToolnurseryError                  base of everything raised here
    ├── ToolError                     a failure a tool call can report ({name, code})
    │   ├── ToolArgsError             INVALID_ARGS: arguments violate the schema
    │   ├── ToolNotFoundError         UNKNOWN_TOOL: nothing visible under that name
    │   ├── ToolTimeoutError          TOOL_TIMEOUT: the timeout policy's deadline fired
    │   ├── AbortError                ABORTED / ABORTED_BEFORE_DISPATCH: the call was
    │   │                             cancelled after / before its body was invoked
    │   ├── DuplicateCallIdError      DUPLICATE_CALL_ID: a call id seen before in a batch
    │   ├── InterruptedCallError      INTERRUPTED: a resumed call had started, unfinished,
    │   │                             when the process died, and may not run twice
    │   ├── DependencyError           MISSING_DEPENDENCY: a ``Depends(...)`` parameter
    │   │                             could not be resolved from the run's ``deps``
    │   ├── OutputSchemaError         UNSUPPORTED_SCHEMA: a schema outside the subset
    │   ├── ToolOutputError           INVALID_TOOL_OUTPUT: a body returned a value its
    │   │                             declared output does not allow
    │   ├── AsyncioHostError          NO_ASYNCIO_HOST: an asyncio tool called where no
    │   │                             asyncio loop hosts the trio run
    │   ├── IncompleteCallError       INCOMPLETE_CALL: a streamed call the model never
    │   │                             finished (the stream broke off, or it was garbled)
    │   ├── ElicitationUnavailableError  ELICITATION_UNAVAILABLE: a body asked the user
    │   │                             (``elicit``) or the client's model (``sample``)
    │   │                             and nobody can be asked
    │   ├── McpServerGoneError        MCP_SERVER_GONE: a mounted MCP server's connection
    │   │                             ended before the call finished
    │   ├── McpCallError              MCP_TOOL_ERROR / MCP_REQUEST_FAILED: a mounted
    │   │                             MCP tool reported an error, or its request failed
    │   ├── FileToolError             a bundled file tool's failure: OUTSIDE_ROOT,
    │   │   └── OutsideRootError      NOT_FOUND, OS_ERROR, NOT_A_REGULAR_FILE, ...
    │   └── RemoteToolError           REMOTE_*: a body placed on a Ray cluster gave no
    │                                 answer (worker or node died, no cluster, result
    │                                 not encodable)
    ├── McpMountError                 an MCP server could not be mounted
    ├── NotJSONError (ValueError)     a value is not lossless JSON (names the path)
    ├── StructSchemaError             a Struct cannot be a parameter schema
    ├── LogFormatError (ValueError)   a file read as a log is not one (names the line)
    ├── ResumeError (ValueError)      a log cannot resume these calls
    └── RegistrationError (ValueError) a programmer error at registration time
        └── StrictSchemaError         a schema provider-strict mode cannot take

A :class:`ToolError` raised by a tool body, a policy hook or a wrapper becomes an
``is_error`` result whose ``error`` is ``ToolErrorInfo(name=<class name>, code=<code>)``;
any other exception becomes an ``is_error`` result with the text only. Exceptions of
other libraries are translated where they enter (``raise … from exc``), never here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "DUPLICATE_CALL_ID",
    "MISSING_DEPENDENCY",
    "INTERRUPTED",
    "INVALID_TOOL_OUTPUT",
    "MCP_REQUEST_FAILED",
    "MCP_SERVER_GONE",
    "MCP_TOOL_ERROR",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "REMOTE_NODE_DIED",
    "REMOTE_RESULT_NOT_ENCODABLE",
    "REMOTE_UNAVAILABLE",
    "REMOTE_WORKER_DIED",
    "TOOL_TIMEOUT",
    "AbortError",
    "AsyncioHostError",
    "DependencyError",
    "DuplicateCallIdError",
    "FileToolError",
    "IncompleteCallError",
    "InterruptedCallError",
    "LogFormatError",
    "McpCallError",
    "McpMountError",
    "McpServerGoneError",
    "ElicitationUnavailableError",
    "NotJSONError",
    "OutputSchemaError",
    "OutsideRootError",
    "RegistrationError",
    "ResumeError",
    "StrictSchemaError",
    "StructSchemaError",
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
DUPLICATE_CALL_ID = "DUPLICATE_CALL_ID"
"""Code of a call whose id an earlier call of the same batch already used."""
INTERRUPTED = "INTERRUPTED"
"""Code of a resumed call that started but never finished before the process died,
and whose tool is not idempotent: it is not run again, so its effect happens at most once."""
MISSING_DEPENDENCY = "MISSING_DEPENDENCY"
"""Code of a call whose ``Depends(...)`` parameter could not be resolved from the run's
``deps``: the body did not run."""
REMOTE_WORKER_DIED = "REMOTE_WORKER_DIED"
"""Code of a remote call whose Ray worker (or actor) died while it ran."""
REMOTE_NODE_DIED = "REMOTE_NODE_DIED"
"""Code of a remote call whose node, or the object holding its answer, was lost."""
REMOTE_UNAVAILABLE = "REMOTE_UNAVAILABLE"
"""Code of a remote call that could not be placed: no Ray connection, or unschedulable."""
REMOTE_RESULT_NOT_ENCODABLE = "REMOTE_RESULT_NOT_ENCODABLE"
"""Code of a remote call whose body returned a value that cannot cross as msgspec bytes."""

MCP_SERVER_GONE = "MCP_SERVER_GONE"
"""Code of a mounted MCP call whose server connection ended before it finished."""
MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
"""Code of a mounted MCP call whose server answered with an ``isError`` result."""
MCP_REQUEST_FAILED = "MCP_REQUEST_FAILED"
"""Code of a mounted MCP call whose request the server answered with a JSON-RPC error."""


class ToolnurseryError(Exception):
    """Raised when toolnursery fails: the base class of every exception it defines."""


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
    """Raised when no tool of that name is visible to the calling scope.

    Its message is ``unknown tool "<name>"`` whatever else it carries (the result a
    model sees never names another tool). :meth:`ToolRegistry.require` fills in the
    names the scope does see, so a person can be told what was meant.

    Attributes:
        tool_name: the name asked for.
        known: the names visible to the scope the name was looked up in, sorted
            (empty unless given); never a name that scope cannot see.
        suggestion: the one of ``known`` closest to ``tool_name`` (``difflib``'s
            ratio of at least 0.7), or ``None``.
    """

    code = "UNKNOWN_TOOL"

    def __init__(self, tool_name: str, known: Iterable[str] = ()) -> None:
        self.tool_name = tool_name
        self.known: tuple[str, ...] = tuple(sorted(known))
        self.suggestion: str | None = None
        if self.known:
            import difflib  # only when there is something to suggest

            close = difflib.get_close_matches(tool_name, self.known, n=1, cutoff=0.7)
            self.suggestion = close[0] if close else None
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


class IncompleteCallError(ToolError):
    """Raised when a streamed tool call cannot run because the model never finished it.

    The stream broke off before the call's arguments were complete, or it sent
    something no call can be assembled from (two calls at one index, no tool name).
    The call does not run; its result says why.
    """

    code = "INCOMPLETE_CALL"


class ElicitationUnavailableError(ToolError):
    """Raised when a body asks the user or the client's model and nobody can be asked.

    A body asked with ``elicit`` or ``sample``, but no asker is installed around the
    call, or the one installed cannot reach anyone (an MCP client that did not declare
    elicitation, or sampling).
    """

    code = "ELICITATION_UNAVAILABLE"


class McpServerGoneError(ToolError):
    """Raised when a mounted MCP server's connection ends while a call needs it.

    The server exited, crashed or closed the connection; calls in flight get this
    error (code ``MCP_SERVER_GONE``) and the mount's tools are unregistered.
    """

    code = MCP_SERVER_GONE

    def __init__(self, server: str, detail: str | None = None) -> None:
        self.server = server
        text = f'MCP server "{server}" is gone'
        super().__init__(text if detail is None else f"{text}: {detail}")


class McpCallError(ToolError):
    """Raised when a mounted MCP tool fails: an ``isError`` result or a JSON-RPC error.

    An ``isError`` result's text becomes the message (code ``MCP_TOOL_ERROR``); a
    request the server rejected carries the JSON-RPC error's message (code
    ``MCP_REQUEST_FAILED``).
    """

    code = MCP_TOOL_ERROR


class McpMountError(ToolnurseryError):
    """Raised when an MCP server cannot be mounted: it did not start or initialise in
    time, answered something that is not MCP, or lists tools that cannot be
    registered (a duplicate name, an ``inputSchema`` that is not an object schema, a
    name already taken)."""


class AbortError(ToolError):
    """Raised when a call is cancelled (the batch was aborted, or its signal fired).

    Results report it as ``{name: "AbortError", code: "ABORTED"}`` when the body had
    been invoked, ``code: "ABORTED_BEFORE_DISPATCH"`` when it had not; an asyncio
    tool whose task was cancelled on the asyncio side raises it.

    Args:
        before_dispatch: the body had not been invoked yet.
    """

    code = TOOL_ABORTED

    def __init__(self, *, before_dispatch: bool = False) -> None:
        if before_dispatch:
            super().__init__("tool call aborted before dispatch", code=TOOL_ABORTED_BEFORE_DISPATCH)
        else:
            super().__init__("tool call aborted")


class DuplicateCallIdError(ToolError):
    """Raised when a batch is given a call whose id an earlier call of it already used.

    The later call is not run; its result is ``Error: duplicate tool call id "<id>" in
    this batch``.
    """

    code = DUPLICATE_CALL_ID

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        super().__init__(f'duplicate tool call id "{call_id}" in this batch')


class InterruptedCallError(ToolError):
    """Raised when a resumed call had started, and not finished, before a crash.

    Its tool is not idempotent, so it is not run again: whether its side effect
    happened is unknown. The model can check (e.g. read the file it was writing) and
    call again.
    """

    code = INTERRUPTED

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(
            f'tool call "{tool_name}" was interrupted: it started before the process '
            "stopped and did not finish, so its effect may or may not have happened; it "
            "was not run again because the tool is not idempotent"
        )


class DependencyError(ToolError):
    """Raised when a call's dependency cannot be resolved from the run's ``deps``.

    The call fails with it (``code`` ``MISSING_DEPENDENCY``) before its body runs; the
    message names the parameter and the dependency.
    """

    code = MISSING_DEPENDENCY


class FileToolError(ToolError):
    """Raised when a bundled file tool (:mod:`toolnursery.examples`) fails.

    Its message names paths relative to the tools' root only, never the host path;
    ``code`` says what went wrong (``NOT_FOUND``, ``OS_ERROR``, ``NOT_A_REGULAR_FILE``,
    ``IS_A_DIRECTORY``, ...).
    """


class OutsideRootError(FileToolError):
    """Raised when a path argument resolves to somewhere outside the tools' root."""

    code = "OUTSIDE_ROOT"

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f'path "{path}" is outside the root directory')


class NotJSONError(ToolnurseryError, ValueError):
    """Raised when a value is not lossless JSON; the message names the path."""


class StructSchemaError(ToolnurseryError):
    """Raised when a Struct cannot be a parameter schema; the message names the culprit."""


class LogFormatError(ToolnurseryError, ValueError):
    """Raised when a file read as a recorder log holds a line that is not an event.

    A torn line (an event cut short by a writer that died mid-write) is not an error;
    anything else is, and the message names the file and the line.

    Attributes:
        path: the file.
        line: the 1-based number of the offending line.
        text: the start of that line (at most 80 characters).
        why: what is wrong with it (``not a toolnursery event``, or an event of a kind
            this version does not read: a log of a later format).
    """

    def __init__(
        self, path: str, line: int, text: str, why: str = "not a toolnursery event"
    ) -> None:
        self.path = path
        self.line = line
        self.text: str = text[:80]
        self.why = why
        super().__init__(f"{path}:{line}: {why}: {self.text!r}")


class ResumeError(ToolnurseryError, ValueError):
    """Raised when a log cannot resume a batch: under that batch id it records other
    calls than these (a line at one of their indices is for another call id, tool or
    arguments). A batch id the log does not hold is not an error: every call runs."""


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


class StrictSchemaError(RegistrationError):
    """Raised when a schema uses what provider-strict mode cannot take.

    The message names the keyword and where it is (``#/properties/tags``), and the
    tool when one is known.

    Args:
        message: what strict mode cannot take, and where.
        keyword: the JSON Schema keyword that stops it.
        path: where it is, as a JSON pointer fragment (``#/properties/tags``).
        tool_name: the tool whose schema it is, when known.
    """

    def __init__(
        self, message: str, *, keyword: str = "", path: str = "#", tool_name: str | None = None
    ) -> None:
        self.keyword = keyword
        self.path = path
        self.tool_name = tool_name
        super().__init__(message if tool_name is None else f'tool "{tool_name}": {message}')
