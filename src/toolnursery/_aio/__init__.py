"""_aio: see docs/design.md."""
