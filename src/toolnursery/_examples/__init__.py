"""_examples: the bundled file tools behind :mod:`toolnursery.examples`."""

__all__: list[str] = []
