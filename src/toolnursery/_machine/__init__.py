"""The batch's sans-IO core (private): state machines that do no I/O and import no event loop.

:mod:`._call` is one call's life (its two state diagrams, the transition tables, the abort
and timeout precedence); :mod:`._batch` is a batch's (records, classification, admission,
the commit cursor, statistics), returning the next step to its driver instead of awaiting
it; :mod:`._admission` and :mod:`._conflicts` are the cap and the resource keys it uses.
The trio driver is :mod:`toolnursery._batch._driver`; a test checks that no module here
imports trio, asyncio or anyio.
"""

__all__: list[str] = []
