"""_ray: see docs/design.md."""
