"""Policy decisions, execution modes and restrictions: small tagged values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec.structs import force_setattr

from ._content import ContentBlock, HookContext

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
    "ToolExecutionMode",
    "ToolRestriction",
]


class Allow(msgspec.Struct, frozen=True, tag="allow", tag_field="kind"):
    """Pre-execute decision: run the call."""


class Deny(msgspec.Struct, frozen=True, tag="deny", tag_field="kind"):
    """Pre-execute decision: refuse the call; its text becomes ``Error: <reason>``."""

    reason: str


class Ask(msgspec.Struct, frozen=True, tag="ask", tag_field="kind", omit_defaults=True):
    """Pre-execute decision: run only if the approval service answers ``allowed-once``."""

    reason: str | None = None


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


class ToolExecutionMode(msgspec.Struct, frozen=True):
    """How the scheduler may run one call: alone (``exclusive``) or beside others."""

    kind: Literal["parallel", "exclusive"]


PARALLEL = ToolExecutionMode("parallel")
EXCLUSIVE = ToolExecutionMode("exclusive")


class ToolRestriction(msgspec.Struct, frozen=True, omit_defaults=True):
    """A filter over the tools a scope inherits: ``allow`` keeps, ``deny`` removes."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None
