"""Policy decisions, execution modes and restrictions: small tagged values."""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

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

    Attributes:
        content: replacement content (``None`` keeps the original; an empty
            sequence replaces it with nothing).
        additional_contexts: contexts appended after the result's own.
    """

    content: tuple[ContentBlock, ...] | list[ContentBlock] | None = None
    additional_contexts: tuple[HookContext, ...] | list[HookContext] = ()


class Block(
    msgspec.Struct, frozen=True, tag="block", tag_field="kind", rename="camel", omit_defaults=True
):
    """Post-execute decision: turn the call into an error whose content is ``feedback``.

    The feedback is used verbatim (no ``Error:`` prefix); ``meta`` and every earlier
    context are dropped, only this decision's ``additional_contexts`` remain.
    """

    feedback: tuple[ContentBlock, ...] | list[ContentBlock]
    additional_contexts: tuple[HookContext, ...] | list[HookContext] = ()


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
