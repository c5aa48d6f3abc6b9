"""_batch: see docs/design.md."""
