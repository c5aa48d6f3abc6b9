"""_core: see docs/design.md."""
