"""MCP tool annotations: the hints a tool declares about itself.

A value only (no MCP SDK, nothing of the registry): a definition declares it as its
``mcp_annotations`` option whether or not it is ever served.
"""

from __future__ import annotations

import msgspec

__all__ = ["McpAnnotations"]


class McpAnnotations(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """MCP's hints about a tool (wire names ``title``, ``readOnlyHint``, …).

    Every hint is optional; ``None`` means the tool does not say, and MCP's defaults
    apply: not read-only, destructive, not idempotent, open-world.

    Attributes:
        title: a human-readable name for a UI.
        read_only: the tool does not modify its environment (``readOnlyHint``).
        destructive: its updates may destroy something (``destructiveHint``;
            meaningful only when it is not read-only).
        idempotent: calling it again with the same arguments has no further effect
            (``idempotentHint``).
        open_world: it reaches entities outside a closed domain, such as the web
            (``openWorldHint``).
    """

    title: str | None = None
    read_only: bool | None = msgspec.field(default=None, name="readOnlyHint")
    destructive: bool | None = msgspec.field(default=None, name="destructiveHint")
    idempotent: bool | None = msgspec.field(default=None, name="idempotentHint")
    open_world: bool | None = msgspec.field(default=None, name="openWorldHint")

    @property
    def may_destroy(self) -> bool:
        """Whether MCP's reading of the hints lets the tool destroy something.

        A read-only tool never does; otherwise ``destructive`` decides, and a tool
        that does not say is taken to be destructive (MCP's default).
        """
        if self.read_only is True:
            return False
        return self.destructive is not False
