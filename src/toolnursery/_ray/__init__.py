"""Tool bodies on a Ray cluster (private; behind :mod:`toolnursery.ray`)."""

__all__: list[str] = []
