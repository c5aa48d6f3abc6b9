"""Fail-closed classification of one call: how the scheduler may run it.

A tool's classifiers decide: ``is_concurrency_safe`` returning exactly ``True`` makes a
call ``parallel``; otherwise ``concurrency_keys`` (if declared) makes it ``keyed`` with
the canonical keys it names; anything else — no classifier, one that raises, keys that
are not an iterable of :class:`ResourceKey` — makes it ``exclusive``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._core._decisions import EXCLUSIVE, PARALLEL, ResourceKey, ToolExecutionMode
from .._tools._definition import ToolDefinition

__all__ = ["classify"]

_MAX_KEYS: Final = 4096
_NO_KEYS: Final = ToolExecutionMode("keyed")


def classify(definition: ToolDefinition, arguments: Any) -> ToolExecutionMode:
    """Fail-closed classification of one call by its definition's classifiers.

    ``is_concurrency_safe`` returning exactly ``True`` → ``PARALLEL``; raising →
    ``EXCLUSIVE``; otherwise ``concurrency_keys`` decides (``keyed``), and without one
    the call is ``EXCLUSIVE``.
    """
    safe = definition.is_concurrency_safe
    if safe is not None:
        try:
            if safe(arguments) is True:
                return PARALLEL
        except Exception:
            return EXCLUSIVE
    keys = definition.concurrency_keys
    if keys is None:
        return EXCLUSIVE
    try:
        return _keyed(keys(arguments))
    except Exception:
        return EXCLUSIVE


def _keyed(keys: Iterable[Any]) -> ToolExecutionMode:
    """The canonical keyed mode of what a ``concurrency_keys`` returned.

    One key per resource (a write subsumes a read), sorted by resource. Anything but
    an iterable of :class:`ResourceKey` — a string, a mapping, a key whose fields are
    not a string and ``"read"``/``"write"``, more than ``_MAX_KEYS`` keys — is
    exclusive: an empty result must not come from a mistake.
    """
    if isinstance(keys, str | bytes | bytearray | Mapping):
        return EXCLUSIVE
    modes: dict[str, str] = {}
    for count, key in enumerate(keys):
        if count >= _MAX_KEYS or not isinstance(key, ResourceKey):
            return EXCLUSIVE
        resource, mode = key.resource, key.mode
        if type(resource) is not str:
            return EXCLUSIVE
        if mode == "write":
            modes[resource] = "write"
        elif mode == "read":
            modes.setdefault(resource, "read")
        else:
            return EXCLUSIVE
    if not modes:
        return _NO_KEYS
    return ToolExecutionMode(
        "keyed",
        tuple(
            ResourceKey(r, "write" if m == "write" else "read") for r, m in sorted(modes.items())
        ),
    )
