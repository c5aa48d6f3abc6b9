"""The ``toolnursery`` command (private; ``toolnursery.__main__`` is its entry point)."""

__all__: list[str] = []
