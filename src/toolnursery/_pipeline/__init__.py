"""_pipeline: see docs/design.md."""
