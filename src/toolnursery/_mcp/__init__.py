"""_mcp: see docs/design.md."""
