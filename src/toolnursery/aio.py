"""asyncio-native use of toolnursery: await batches from asyncio, run asyncio tools.

From asyncio code, :func:`run_tool_calls`, :func:`execute` and :func:`open_tool_batch`
take the same arguments and give the same results as their trio counterparts::

    import asyncio
    import toolnursery.aio

    async def main() -> None:
        results = await toolnursery.aio.run_tool_calls(registry, calls)

    asyncio.run(main())

A batch runs on one of two drivers of the same batch machine, chosen automatically
(:func:`batch_driver` says which, and why): natively on the running loop when every
tool it calls is an :func:`asyncio_tool` body or a plain ``def`` and no hook is marked
:func:`needs_trio`; otherwise in a trio run hosted as a guest of the loop (one
long-lived run per loop, started by the first batch that needs it and shut down when
the loop shuts down, as ``asyncio.run`` / ``asyncio.Runner`` do, or on
``await aclose()``).

Cancellation crosses in both directions. Cancelling the awaiting asyncio task aborts
the batch (or the call) through its signal, waits until every started call has
settled, and then lets ``CancelledError`` propagate; an internal failure of the
scheduler surfaces as the same exception. A body declared with :func:`asyncio_tool`
runs on the asyncio loop (in the guest run: as a task, which a trio cancellation of its
call cancels and waits for).

See ``docs/asyncio.md``.
"""

from __future__ import annotations

from ._aio._api import AsyncioHostError as AsyncioHostError
from ._aio._api import AsyncioToolBatch as AsyncioToolBatch
from ._aio._api import BatchDriver as BatchDriver
from ._aio._api import Driver as Driver
from ._aio._api import aclose as aclose
from ._aio._api import asyncio_tool as asyncio_tool
from ._aio._api import batch_driver as batch_driver
from ._aio._api import execute as execute
from ._aio._api import is_asyncio_tool as is_asyncio_tool
from ._aio._api import logger as logger
from ._aio._api import needs_trio as needs_trio
from ._aio._api import open_tool_batch as open_tool_batch
from ._aio._api import run_tool_calls as run_tool_calls
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

__all__ = [
    "AsyncioHostError",
    "AsyncioToolBatch",
    "BatchDriver",
    "Driver",
    "aclose",
    "asyncio_tool",
    "batch_driver",
    "execute",
    "is_asyncio_tool",
    "needs_trio",
    "open_tool_batch",
    "run_tool_calls",
]

_fixup_module_metadata(__name__, __all__)
