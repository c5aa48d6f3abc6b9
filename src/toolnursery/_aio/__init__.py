"""Hosting toolnursery inside asyncio (private; behind :mod:`toolnursery.aio`)."""

__all__: list[str] = []
