"""Exception groups the MCP tasks raise, brought back to the one error they carry.

A call or a connection that runs in a nursery of its own gets its failures wrapped
in groups; the code above it (the SDK's request handling, the pipeline, the caller's
``async with``) expects the bare exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio

__all__ = ["bare_cancelled", "unwrap_single"]


@contextmanager
def bare_cancelled() -> Iterator[None]:
    """Re-raise a nursery's group of only ``trio.Cancelled`` as one bare ``Cancelled``.

    Code above a call (the SDK's request handling, a pipeline catching the
    cancellation it owns) tests ``except Cancelled``; a call that needs a task of
    its own must not hand it a group instead.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        cancelled, rest = group.split(trio.Cancelled)
        if rest is None and cancelled is not None:
            first: BaseException = cancelled
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        raise


def unwrap_single(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (``exc`` if it is not one)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
