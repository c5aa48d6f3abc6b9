"""_cli: see docs/design.md."""
