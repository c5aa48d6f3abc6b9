"""Exception groups from our own nurseries, reduced to what the caller should see.

A nursery the library opens for its own tasks wraps whatever leaves it in a
``BaseExceptionGroup``, nested when nurseries nest. Those tasks are an implementation
detail, so each boundary that owns such a nursery reports what is inside instead:

* :func:`collapse` — the one exception a group holds, else the group (a batch and the
  CLI's batch run; with ``drop_cancelled`` the batch also looks past cancellations);
* :func:`innermost` — the inside of a chain of one-member groups (the MCP mount,
  which may hand on a group that holds several exceptions, unwrapped);
* :func:`only_cancelled` — whether an exception is just cancellation, so that the
  boundary re-raises one bare ``trio.Cancelled`` (``except Cancelled`` above it works);
  :func:`bare_cancelled` does that around a block (the MCP mount's and server's calls).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio

__all__ = ["bare_cancelled", "collapse", "innermost", "leaves", "only_cancelled"]


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions ``exc`` holds, nested groups flattened, in order.

    Args:
        exc: a group, or any other exception (its own only leaf).

    Returns:
        The non-group exceptions, depth first, in the order the groups list them.
    """
    found: list[BaseException] = []
    stack = [exc]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseExceptionGroup):
            stack.extend(reversed(item.exceptions))
        else:
            found.append(item)
    return found


def collapse(
    group: BaseExceptionGroup[BaseException], *, drop_cancelled: bool = False
) -> BaseException:
    """The one exception ``group`` holds (nested groups flattened), else ``group``.

    Args:
        group: what a nursery of ours raised.
        drop_cancelled: look past ``trio.Cancelled`` when the group holds several
            exceptions: a lone other exception is the one (a failure that cancelled
            its siblings reaches the caller as itself), and a group of nothing but
            cancellations is its first ``Cancelled``.

    Returns:
        The exception to raise in the group's place (``group`` itself when it holds
        several that matter).
    """
    found = leaves(group)
    if len(found) == 1:
        return found[0]
    if drop_cancelled:
        failures = [leaf for leaf in found if not isinstance(leaf, trio.Cancelled)]
        if not failures:
            return found[0]
        if len(failures) == 1:
            return failures[0]
    return group


def innermost(exc: BaseException) -> BaseException:
    """``exc`` without its one-member group wrappers.

    Unlike :func:`collapse`, a group of several exceptions is kept, but unwrapped from
    any one-member groups around it; a non-group exception is returned as is.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def only_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``trio.Cancelled`` or a group of nothing else (nested too)."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return False


@contextmanager
def bare_cancelled() -> Iterator[None]:
    """Re-raise a nursery's group of only ``trio.Cancelled`` as one bare ``Cancelled``.

    Code above a call (the SDK's request handling, a pipeline catching the cancellation
    it owns) tests ``except Cancelled``; a call that needs a task of its own must not
    hand it a group instead. Any other group passes unchanged.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        if only_cancelled(group):
            raise leaves(group)[0] from None
        raise
