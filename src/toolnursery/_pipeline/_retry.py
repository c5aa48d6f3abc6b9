"""The retry policy: a ``tools/execute`` wrapper that re-runs an idempotent tool's failures.

For a call the policy applies to (an ``idempotent=True`` tool, named by ``tools`` when
that is given), the wrapper calls ``next()`` once per attempt. An attempt is retried
when its result is an error whose ``error.code`` is listed in ``codes`` or whose
``error.name`` is the class name of a listed exception (or of a subclass), or when
``next()`` raised a listed exception (an inner wrapper's failure). Between attempts it
sleeps an exponential, capped, jittered backoff on trio's clock, in a cancel scope
that the call's signals cancel: an abort during a backoff ends the call at once with
the last attempt's result. The final result's ``meta`` carries ``{"attempts": n}``.

Refusal (fail closed): a tool named by ``tools`` that is not idempotent is refused when
the policy is installed, and later registrations of one are refused (and rolled back)
through :meth:`ToolRegistry.on_change`. At call time a tool that is not idempotent —
however it became visible — runs once, untouched.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable
from random import random as _uniform
from typing import Any

import msgspec
import trio

from .._core._content import ToolErrorInfo, ToolExecutionResult
from .._core._errors import RegistrationError, ToolError
from .._core._execution import ToolDispatchExecution, record_of
from .._core._json import FrozenDict
from .._core._signal import CancelSignal, link, unlink
from ._deadline import current_definition
from ._registry import Disposer, ToolRegistry, ToolScope

__all__ = ["install_retry_policy"]


def install_retry_policy(
    owner: ToolRegistry | ToolScope,
    *,
    codes: Iterable[str] = (),
    exceptions: tuple[type[BaseException], ...] = (),
    attempts: int = 3,
    backoff_ms: float = 100,
    max_backoff_ms: float = 10_000,
    multiplier: float = 2.0,
    jitter: float = 0.1,
    tools: Iterable[str] | None = None,
    random: Callable[[], float] | None = None,
) -> Disposer:
    """Retry idempotent tools' failures on calls through ``owner``.

    The sleep before attempt ``k + 1`` is ``min(max_backoff_ms, b_k * (1 + jitter *
    (2u - 1)))`` where ``b_1 = min(backoff_ms, max_backoff_ms)``, ``b_{k+1} =
    min(max_backoff_ms, b_k * multiplier)`` and ``u = random()`` (clamped to
    ``[0, 1]``; not called when ``jitter`` is 0).

    Args:
        owner: the registry (every call) or a scope (that scope's calls).
        codes: retry a result whose ``error.code`` is one of these.
        exceptions: :class:`ToolError` subclasses. Retry a result whose
            ``error.name`` is the ``__name__`` of one of them or of any of their
            subclasses (a body's ``ToolError`` reaches a wrapper as a result naming
            its class; other exceptions leave no name, so they cannot be listed), and
            an attempt whose ``next()`` raised an instance of one of them.
        attempts: the most attempts one call makes (1: never retry).
        backoff_ms: the first backoff, in milliseconds.
        max_backoff_ms: the cap on every backoff (jitter included).
        multiplier: the growth factor of the backoff (at least 1).
        jitter: the relative spread of each backoff, between 0 and 1.
        tools: apply only to these tool names (each must be idempotent); ``None``
            applies to every idempotent tool and leaves the others alone.
        random: ``() -> float`` in ``[0, 1)`` for the jitter (default
            :func:`random.random`); inject one for deterministic tests.

    Returns:
        A :class:`Disposer` that uninstalls the policy and its registration check.

    Raises:
        RegistrationError: a parameter is out of range (``attempts`` not a positive
            int; a backoff negative, not finite, or ``max_backoff_ms < backoff_ms``;
            ``multiplier < 1``; ``jitter`` outside ``[0, 1]``), nothing is listed to
            retry (``codes`` and ``exceptions`` empty, or ``tools`` empty),
            ``exceptions`` holds something other than a ``ToolError``
            subclass, or a tool named in ``tools`` is registered (in ``owner``'s view
            or a layer it inherits) without ``idempotent=True``.
    """
    retry_codes = frozenset(_strings(codes, "codes"))
    exception_types = _exception_types(exceptions)
    if not retry_codes and not exception_types:
        raise RegistrationError(
            "install_retry_policy() needs `codes` and/or `exceptions`: it would retry nothing"
        )
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise RegistrationError(
            f"install_retry_policy() attempts must be a positive int, got {attempts!r}"
        )
    _check_number(backoff_ms, "backoff_ms", 0)
    _check_number(max_backoff_ms, "max_backoff_ms", 0)
    if max_backoff_ms < backoff_ms:
        raise RegistrationError(
            "install_retry_policy() max_backoff_ms must be at least backoff_ms, "
            f"got {max_backoff_ms!r} < {backoff_ms!r}"
        )
    _check_number(multiplier, "multiplier", 1)
    _check_number(jitter, "jitter", 0)
    if jitter > 1:
        raise RegistrationError(
            f"install_retry_policy() jitter must be between 0 and 1, got {jitter!r}"
        )
    if random is not None and not callable(random):
        raise RegistrationError(
            f"install_retry_policy() random must be callable, got {type(random).__name__}"
        )
    uniform = _uniform if random is None else random
    names = None if tools is None else frozenset(_strings(tools, "tools"))
    if names is not None and not names:
        raise RegistrationError(
            "install_retry_policy() tools is empty: it would retry nothing "
            "(pass None for every idempotent tool)"
        )

    if isinstance(owner, ToolRegistry):
        registry, scope = owner, None
    elif isinstance(owner, ToolScope):
        registry, scope = owner.registry, owner
    else:
        raise RegistrationError(
            "install_retry_policy() takes a ToolRegistry or a ToolScope, "
            f"got {type(owner).__name__}"
        )
    chain = _chain(scope)
    if names:
        _refuse_non_idempotent(registry, chain, names)

    def eligible(execution: ToolDispatchExecution) -> bool:
        name = execution.name
        if names is not None and name not in names:
            return False
        definition = current_definition(execution, registry.get)
        return definition is not None and definition.idempotent is True

    def retryable(result: ToolExecutionResult) -> bool:
        error = result.error
        if result.is_error is not True or type(error) is not ToolErrorInfo:
            return False
        code, name = error.code, error.name
        if isinstance(code, str) and code in retry_codes:
            return True
        return (
            bool(exception_types)
            and isinstance(name, str)
            and name in _class_names(exception_types)
        )

    async def retry_wrapper(
        execution: ToolDispatchExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        if not eligible(execution):
            return await next()
        record = record_of(execution)  # the pipeline's record of the call, if any
        caller = execution.execution.signal if record is None else record.caller
        attempt = 0
        delay_ms = min(backoff_ms, max_backoff_ms)
        starts: list[float] | None = None
        if record is not None:
            starts = record.attempt_starts = []  # each attempt's start, for the batch log
        while True:
            attempt += 1
            if starts is not None:
                starts.append(trio.current_time())
            raised: ToolError | None = None
            try:
                result = await next()
            except exception_types as exc:  # an inner wrapper's listed failure
                raised = exc
            else:
                if type(result) is not ToolExecutionResult:
                    return result  # not a result: the registry reports it, untouched
                if not retryable(result):
                    break
            if attempt >= attempts:
                break
            sleep_ms = delay_ms
            if jitter:
                u = min(1.0, max(0.0, float(uniform())))
                sleep_ms = min(max_backoff_ms, delay_ms * (1 + jitter * (2 * u - 1)))
            if not await _backoff(sleep_ms / 1000, caller, execution.signal):
                break
            # The registry may have changed during the backoff: never retry a tool
            # that is no longer idempotent.
            if not eligible(execution):
                break
            delay_ms = min(max_backoff_ms, delay_ms * multiplier)
        if raised is not None:
            raise raised
        final = _with_attempts(result, attempt)
        if record is not None and record.clean is result:
            record.clean = final  # final as it is: a clean result, frozen attempts meta
        return final

    # Its backoff sleeps on trio's clock: a batch from asyncio that meets it runs in the
    # trio guest run (toolnursery._aio._route reads this mark).
    retry_wrapper.__toolnursery_needs_trio__ = True  # type: ignore[attr-defined]
    disposers = [owner.on_execute(retry_wrapper)]
    if names:
        watch: list[Disposer] = []

        def on_change() -> None:
            if scope is not None and scope.closed:
                watch[0]()
                return
            _refuse_non_idempotent(registry, chain, names)

        watch.append(registry.on_change(on_change))
        disposers.append(watch[0])

    def undo() -> None:
        for disposer in disposers:
            disposer()

    return Disposer(undo)


async def _backoff(seconds: float, *signals: CancelSignal) -> bool:
    """Sleep ``seconds`` unless one of ``signals`` fires; return whether the sleep ran out.

    A ``Cancelled`` from an enclosing scope (not one of the signals) propagates.
    """
    scope = trio.CancelScope()

    def cancel(_: CancelSignal) -> None:
        scope.cancel()

    linked: list[CancelSignal] = []
    for signal in signals:
        if not any(signal is s for s in linked):
            link(signal, cancel)
            linked.append(signal)
    try:
        with scope:
            await trio.sleep(seconds)
    finally:
        for signal in linked:
            unlink(signal, cancel)
    return not scope.cancelled_caught


def _with_attempts(result: ToolExecutionResult, attempts: int) -> ToolExecutionResult:
    meta = result.meta
    if meta is None:
        merged: dict[str, Any] = FrozenDict(attempts=attempts)
    elif isinstance(meta, dict):
        merged = {**meta, "attempts": attempts}
    else:
        merged = {"attempts": attempts, "meta": meta}
    return msgspec.structs.replace(result, meta=merged)


def _chain(scope: ToolScope | None) -> tuple[ToolScope | None, ...]:
    """The global view, then each scope from the root down to ``scope``."""
    scopes: list[ToolScope] = []
    while scope is not None:
        scopes.append(scope)
        scope = scope.parent
    return (None, *reversed(scopes))


def _refuse_non_idempotent(
    registry: ToolRegistry, chain: tuple[ToolScope | None, ...], names: frozenset[str]
) -> None:
    # Every layer along the chain shows its own tool in its own view (restrictions
    # filter only what a scope inherits), so these views cover every layer.
    for name in sorted(names):
        for scope in chain:
            definition = registry.get(name, scope)
            if definition is not None and definition.idempotent is not True:
                raise RegistrationError(
                    f'tool "{name}" is named by a retry policy but is not declared '
                    "idempotent (ToolDefinition(idempotent=True)); retrying it could "
                    "repeat its side effects"
                )


def _class_names(types: tuple[type[ToolError], ...]) -> frozenset[str]:
    # Walked per failed result: subclasses defined after installation count too.
    seen: set[type[ToolError]] = set()
    pending = list(types)
    while pending:
        cls = pending.pop()
        if cls not in seen:
            seen.add(cls)
            pending.extend(cls.__subclasses__())
    return frozenset(cls.__name__ for cls in seen)


def _strings(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        raise RegistrationError(
            f"install_retry_policy() {what} must be a collection of strings, not a string"
        )
    try:
        items = list(values)
    except TypeError:
        raise RegistrationError(
            f"install_retry_policy() {what} must be a collection of strings, "
            f"got {type(values).__name__}"
        ) from None
    for item in items:
        if not isinstance(item, str):
            raise RegistrationError(
                f"install_retry_policy() {what} must hold strings, got {item!r}"
            )
    return items


def _exception_types(values: object) -> tuple[type[ToolError], ...]:
    if not isinstance(values, tuple):
        raise RegistrationError(
            "install_retry_policy() exceptions must be a tuple of ToolError subclasses, "
            f"got {type(values).__name__}"
        )
    checked: list[type[ToolError]] = []
    for value in values:
        if not (isinstance(value, type) and issubclass(value, ToolError)):
            shown = value.__name__ if isinstance(value, type) else repr(value)
            raise RegistrationError(
                f"install_retry_policy() exceptions must be ToolError subclasses, got {shown}: "
                "only a ToolError leaves its class name on a result (raise a ToolError "
                "subclass from the body, or retry by its code)"
            )
        checked.append(value)
    return tuple(checked)


def _check_number(value: object, what: str, minimum: float) -> None:
    if not (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= minimum
    ):
        raise RegistrationError(
            f"install_retry_policy() {what} must be a finite number of at least {minimum}, "
            f"got {value!r}"
        )
