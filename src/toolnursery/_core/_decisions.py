"""Policy decisions, execution modes and restrictions: small tagged values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

import msgspec
from msgspec.structs import force_setattr

from ._content import ContentBlock, HookContext
from ._provenance import ProvenanceFinding

__all__ = [
    "EXCLUSIVE",
    "PARALLEL",
    "Accept",
    "Allow",
    "Ask",
    "Block",
    "Deny",
    "PostToolDecision",
    "PreToolDecision",
    "ResourceKey",
    "ToolExecutionMode",
    "ToolRestriction",
]


class Allow(msgspec.Struct, frozen=True, tag="allow", tag_field="kind"):
    """Pre-execute decision: run the call."""


class Deny(msgspec.Struct, frozen=True, tag="deny", tag_field="kind"):
    """Pre-execute decision: refuse the call; its text becomes ``Error: <reason>``."""

    reason: str


class Ask(msgspec.Struct, frozen=True, tag="ask", tag_field="kind", omit_defaults=True):
    """Pre-execute decision: run only if the approval service answers ``allowed-once``.

    Attributes:
        reason: why, for the person asked.
        provenance: what a provenance policy found about the call's sink arguments
            (handed on as :attr:`ApprovalRequest.provenance`).
    """

    reason: str | None = None
    provenance: tuple[ProvenanceFinding, ...] = ()

    def __post_init__(self) -> None:
        if type(self.provenance) is not tuple:
            force_setattr(self, "provenance", tuple(self.provenance))


PreToolDecision: TypeAlias = Allow | Deny | Ask
"""What a pre-execute listener returns."""


class Accept(
    msgspec.Struct, frozen=True, tag="accept", tag_field="kind", rename="camel", omit_defaults=True
):
    """Post-execute decision: keep the result, optionally replacing its content.

    Sequences are stored as tuples, so a decision built from lists is still frozen
    and equal to its msgspec round trip.

    Attributes:
        content: replacement content (``None`` keeps the original; an empty
            sequence replaces it with nothing).
        additional_contexts: contexts appended after the result's own.
    """

    content: Sequence[ContentBlock] | None = None
    additional_contexts: Sequence[HookContext] = ()

    def __post_init__(self) -> None:
        content = self.content
        if content is not None and type(content) is not tuple:
            force_setattr(self, "content", tuple(content))
        if type(self.additional_contexts) is not tuple:
            force_setattr(self, "additional_contexts", tuple(self.additional_contexts))


class Block(
    msgspec.Struct, frozen=True, tag="block", tag_field="kind", rename="camel", omit_defaults=True
):
    """Post-execute decision: turn the call into an error whose content is ``feedback``.

    The feedback is used verbatim (no ``Error:`` prefix); ``meta`` and every earlier
    context are dropped, only this decision's ``additional_contexts`` remain.
    """

    feedback: Sequence[ContentBlock]
    additional_contexts: Sequence[HookContext] = ()

    def __post_init__(self) -> None:
        if type(self.feedback) is not tuple:
            force_setattr(self, "feedback", tuple(self.feedback))
        if type(self.additional_contexts) is not tuple:
            force_setattr(self, "additional_contexts", tuple(self.additional_contexts))


PostToolDecision: TypeAlias = Accept | Block
"""What a post-execute listener returns."""


class ResourceKey(msgspec.Struct, frozen=True):
    """One resource a call touches, and how: ``read`` or ``write``.

    Two calls conflict when they name the same ``resource`` and at least one of them
    writes it; reads of one resource never conflict. The resource is any string the
    tool author chooses (``"fs:/repo/a.md"``, ``"db:users"``); only equality matters.

    Example::

        concurrency_keys=lambda args: [ResourceKey.write(f"fs:{args['path']}")]
    """

    resource: str
    mode: Literal["read", "write"]

    @classmethod
    def read(cls, resource: str) -> ResourceKey:
        """A read of ``resource`` (conflicts only with writes of it)."""
        return cls(resource, "read")

    @classmethod
    def write(cls, resource: str) -> ResourceKey:
        """A write of ``resource`` (conflicts with every other access to it)."""
        return cls(resource, "write")


class ToolExecutionMode(msgspec.Struct, frozen=True, omit_defaults=True):
    """How the scheduler may run one call, a value tagged by ``kind``.

    * ``{"kind": "parallel"}`` — beside any other non-exclusive call.
    * ``{"kind": "exclusive"}`` — alone: a barrier in its batch.
    * ``{"kind": "keyed", "keys": [...]}`` — beside other non-exclusive calls, except
      that it waits for every *earlier* call of its batch whose keys conflict with
      its own (same resource, at least one ``write``). ``keys`` are canonical: one
      per resource (a write subsumes a read of it), sorted by resource; ``()`` means
      it conflicts with nothing.

    A consumer that knows only ``parallel`` and ``exclusive`` and treats everything
    but ``parallel`` as exclusive stays on the safe side.

    Raises:
        ValueError: ``keys`` is given for a kind other than ``keyed``.
    """

    kind: Literal["parallel", "exclusive", "keyed"]
    keys: tuple[ResourceKey, ...] = ()

    def __post_init__(self) -> None:
        keys = self.keys
        if type(keys) is not tuple:
            force_setattr(self, "keys", keys := tuple(keys))
        if keys and self.kind != "keyed":
            raise ValueError(f"ToolExecutionMode(kind={self.kind!r}) takes no keys")


PARALLEL: Final = ToolExecutionMode("parallel")
"""The mode of a call that may overlap any other call of its batch."""
EXCLUSIVE: Final = ToolExecutionMode("exclusive")
"""The mode of a call that runs alone: a barrier between the calls before and after it."""


class ToolRestriction(msgspec.Struct, frozen=True, omit_defaults=True):
    """A filter over the tools a scope inherits: ``allow`` keeps, ``deny`` removes."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None
