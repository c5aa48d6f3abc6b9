"""_mcp: see docs/design.md."""

__all__: list[str] = []
