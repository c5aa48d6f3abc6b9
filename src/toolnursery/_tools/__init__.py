"""_tools: see docs/design.md."""
