"""What a served MCP call adds to the bare SDK server, part by part, on trio and asyncio.

The in-process 2026-07-28 row of ``bench_mcp.py`` (a no-op tool served by
``mcp_server`` beside the SDK's own low-level server), taken apart by swapping the
``tools/call`` handler for smaller ones (µs per call, process CPU time, every client
open at once, rounds interleaved in alternating order, medians):

* **sdk**: the bare SDK server (its handler returns a ``CallToolResult`` model);
* **wire**: our server, whose handler returns a finished result's wire form (what
  ``mcp_server`` adds around the handler: lifespan, listing, result validation);
* **pipeline**: the handler runs the call through the pipeline in the request's task
  (``registry.execute`` on trio, ``toolnursery.aio.execute`` on asyncio) and answers
  its wire form, nothing else;
* **served**: the real handler (on trio: the call's own task in the server's nursery,
  which lets MCP cancellation end it through the pipeline; on both: the call's
  questions, its report sink, the answer).

``served - pipeline`` is the handler's own cost, ``pipeline - wire`` the pipeline's,
``wire - sdk`` the server's. It swaps private handlers: a measuring tool, not an API.

Run: ``python benchmarks/bench_mcp_parts.py`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from typing import Any

import anyio
from mcp import Client

from bench_mcp import _asyncio_noop, _noop, noop_registry, sdk_server
from toolnursery import CancelSignal, ToolExecutionInput, ToolExecutionResult, aio
from toolnursery._mcp import _aioserve, _serve, _served
from toolnursery.mcp import mcp_server

CALLS = 200
_fixed: list[ToolExecutionResult] = []


async def _trio_wire(registry: Any, scope: Any, deps: Any, ctx: Any, params: Any) -> Any:
    return _served.call_result(_fixed[0])


async def _trio_pipeline(registry: Any, scope: Any, deps: Any, ctx: Any, params: Any) -> Any:
    execution = _served.call_input(ctx, params, scope, CancelSignal())
    return _served.call_result(await registry.execute(execution, deps=deps))


async def _aio_wire(self: Any, registry: Any, scope: Any, deps: Any, ctx: Any, params: Any) -> Any:
    return _served.call_result(_fixed[0])


async def _aio_pipeline(
    self: Any, registry: Any, scope: Any, deps: Any, ctx: Any, params: Any
) -> Any:
    execution = _served.call_input(ctx, params, scope, CancelSignal())
    return _served.call_result(await aio.execute(registry, execution, deps=deps))


async def parts(rounds: int, on_asyncio: bool) -> dict[str, float]:
    body = _asyncio_noop if on_asyncio else _noop
    registry = noop_registry(body)
    probe = ToolExecutionInput("probe", "noop", {})
    _fixed[:] = [await (aio.execute(registry, probe) if on_asyncio else registry.execute(probe))]
    served = (_serve._call, _aioserve.AsyncioServed.call)
    handlers: dict[str, Any] = {
        "sdk": None,
        "wire": (_trio_wire, _aio_wire),
        "pipeline": (_trio_pipeline, _aio_pipeline),
        "served": served,
    }
    samples: dict[str, list[float]] = {name: [] for name in handlers}
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients = {}
            for name, handler in handlers.items():
                server = sdk_server() if handler is None else mcp_server(noop_registry(body))
                clients[name] = await stack.enter_async_context(Client(server, mode="2026-07-28"))
            names = list(clients)
            for round_ in range(rounds + 1):  # the first round warms up
                for name in names if round_ % 2 == 0 else names[::-1]:
                    handler = handlers[name]
                    if handler is not None:
                        _serve._call, _aioserve.AsyncioServed.call = handler  # type: ignore[method-assign]
                    client = clients[name]
                    start = time.process_time()
                    for _ in range(CALLS):
                        await client.call_tool("noop", {})
                    if round_:
                        samples[name].append((time.process_time() - start) / CALLS * 1e6)
    finally:
        _serve._call, _aioserve.AsyncioServed.call = served  # type: ignore[method-assign]
    if on_asyncio:
        await aio.aclose()
    return {name: statistics.median(values) for name, values in samples.items()}


def show(loop: str, rows: dict[str, float]) -> None:
    sdk = rows["sdk"]
    print(
        f"  {loop:<8}"
        + "".join(f"{name} {us:6.1f}  " for name, us in rows.items())
        + f"| server +{rows['wire'] - sdk:.1f}, pipeline +{rows['pipeline'] - rows['wire']:.1f},"
        f" handler +{rows['served'] - rows['pipeline']:.1f}; served / sdk {rows['served'] / sdk:.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    options = parser.parse_args()
    rounds = 5 if options.quick else 21
    print(f"µs per call, {CALLS} calls a round, median of {rounds} interleaved rounds")
    print("  load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    show("trio", anyio.run(parts, rounds, False, backend="trio"))
    show("asyncio", anyio.run(parts, rounds, True, backend="asyncio"))
