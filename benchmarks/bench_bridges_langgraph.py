r"""LangGraph: ``ToolNode`` against toolnursery's ``ToolBatchNode`` in the same graph.

One graph shape, ``START → tools → END``, whose state holds one ``AIMessage`` with
N = 10 tool calls of ``lookup(query: str, limit: int = 10)`` (odd calls omit
``limit``); the ``tools`` node is, in turn:

* LangGraph's ``ToolNode`` over a LangChain ``@tool`` whose asyncio body awaits one
  ``asyncio.sleep(0)``;
* ``toolnursery.langgraph.ToolBatchNode`` over a registry whose ``@tool`` body, declared
  ``asyncio_tool``, awaits one ``asyncio.sleep(0)`` (the node runs the batch on
  ``toolnursery.aio``'s asyncio driver; ``--body trio``: a trio ``@tool`` awaiting one
  trio checkpoint, run in the trio guest run), with five pass-through hooks (one
  listener in each phase: pre-execute, guard, execute wrapper, post-execute, result
  observer);
* ``ToolBatchNode([lookup])``: our node over the same LangChain tool as ``ToolNode``,
  with the same five hooks (its tool runs as ``ToolNode`` runs it, inside our batch);
* a node that returns N fresh ``ToolMessage``\s without running anything (the graph's
  own cost and that of handling N results, which every tools node pays: subtracted
  from both).

A sample is one ``ainvoke`` of each graph, interleaved (CPU time of the process: the
trio guest run's I/O thread counts too); a repetition is the median of the samples.
Per call: (graph − baseline graph) / N. Printed: µs per call of each node, median
(min–max) over the repetitions, and ``ToolNode`` / ours per repetition; and the ratio
of whole turns, graph included. For where our cost goes, two more rows, in the same
interleaving and with no graph: the node awaited directly, and the same batch through
``toolnursery.aio.run_tool_calls`` (the asyncio crossing without the node).

Run: ``python benchmarks/bench_bridges_langgraph.py`` (``--quick``: fewer samples;
``--body trio``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from typing import Any

import trio
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as langchain_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import toolnursery.aio
from passthrough import guard, post, pre
from passthrough import observe as observer
from passthrough import wrap as wrapper
from toolnursery import (
    ToolCall,
    ToolRegistry,
    tool,
)
from toolnursery.aio import asyncio_tool
from toolnursery.langgraph import ToolBatchNode

N = 10
REPS = 5


@langchain_tool
async def lookup(query: str, limit: int = 10) -> str:
    """Look a query up."""
    await asyncio.sleep(0)
    return f"{limit} results for {query}"


@tool(name="lookup", is_concurrency_safe=lambda args: True)
async def lookup_trio(query: str, limit: int = 10) -> str:
    """Look a query up."""
    await trio.lowlevel.checkpoint()
    return f"{limit} results for {query}"


@asyncio_tool
@tool(name="lookup", is_concurrency_safe=lambda args: True)
async def lookup_asyncio(query: str, limit: int = 10) -> str:
    """Look a query up."""
    await asyncio.sleep(0)
    return f"{limit} results for {query}"


BODY = ["asyncio"]
"""Ours: the body declared ``asyncio_tool`` (the default), or a trio ``@tool``; ``--body``."""


def registry_with_five_hooks(registry: ToolRegistry | None = None) -> ToolRegistry:
    if registry is None:
        registry = ToolRegistry()
        registry.register(lookup_asyncio if BODY[0] == "asyncio" else lookup_trio)
    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.on_execute(wrapper)
    registry.on_post_execute(post)
    registry.on_result(observer)
    return registry


def turn(n: int = N) -> AIMessage:
    calls = [
        {
            "id": f"c{i}",
            "name": "lookup",
            "args": {"query": f"q{i}"} if i % 2 else {"query": f"q{i}", "limit": 5},
        }
        for i in range(n)
    ]
    return AIMessage("", tool_calls=calls)


def graph_of(node: Any) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


async def baseline(state: MessagesState) -> dict[str, Any]:
    return {
        "messages": [
            ToolMessage(content="ok", tool_call_id=f"c{i}", name="lookup", status="success")
            for i in range(N)
        ]
    }


def check(state: dict[str, Any]) -> None:
    """Every call succeeded, in model order; an odd call got the default limit."""
    messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in messages] == [f"c{i}" for i in range(N)], messages
    assert all(m.status == "success" for m in messages), messages
    assert [m.content for m in messages[:2]] == ["5 results for q0", "10 results for q1"]


async def cpu(fn: Callable[[], Awaitable[object]], loops: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(loops):
        await fn()
    return (time.process_time() - start) / loops


def spread(values: Sequence[float], unit: str = "") -> str:
    return f"{statistics.median(values):>8.1f}{unit} ({min(values):.1f}–{max(values):.1f}{unit})"


async def measure(samples: int, loops: int) -> dict[str, list[float]]:
    state = {"messages": [turn()]}
    registry = registry_with_five_hooks()
    node = ToolBatchNode(registry)
    calls = [ToolCall(c["id"], c["name"], c["args"]) for c in turn().tool_calls]
    lc_node = ToolBatchNode([lookup])
    registry_with_five_hooks(lc_node.registry)
    graphs = {
        "toolnode": graph_of(ToolNode([lookup])),
        "ours": graph_of(node),
        "ours_lc": graph_of(lc_node),
        "baseline": graph_of(baseline),
    }
    for name in ("toolnode", "ours", "ours_lc"):
        check(await graphs[name].ainvoke(state))
    runs: dict[str, Callable[[], Awaitable[object]]] = {
        name: (lambda app=app: app.ainvoke(state)) for name, app in graphs.items()
    }
    runs["node"] = lambda: node(state)
    runs["aio"] = lambda: toolnursery.aio.run_tool_calls(registry, calls)
    for _ in range(20):  # warm-up
        for run in runs.values():
            await run()
    out: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(REPS):
        taken: dict[str, list[float]] = {key: [] for key in out}
        for _ in range(samples):
            for name, run in runs.items():
                taken[name].append(await cpu(run, loops))
        for name in out:
            out[name].append(statistics.median(taken[name]))
    return out


def bench_langgraph(quick: bool = False) -> dict[str, list[float]]:
    """Measure and print; returns the per-repetition medians (seconds per turn)."""
    print(
        f"python {sys.version.split()[0]}, langgraph {version('langgraph')}, langchain-core "
        f"{version('langchain-core')}, trio {trio.__version__}, toolnursery {version('toolnursery')}"
    )
    samples, loops = (5, 5) if quick else (15, 10)
    print(
        f"LangGraph START → tools → END, {N} calls per turn; CPU µs, median (min–max) of {REPS} "
        f"repetitions, each the median of {samples} interleaved samples of {loops} turns"
    )
    turns = asyncio.run(measure(samples, loops))
    per_call = {
        name: [(t - e) / N * 1e6 for t, e in zip(turns[name], turns["baseline"], strict=True)]
        for name in ("toolnode", "ours", "ours_lc")
    }
    ratios = [a / b for a, b in zip(per_call["toolnode"], per_call["ours"], strict=True)]
    lc_ratios = [a / b for a, b in zip(per_call["toolnode"], per_call["ours_lc"], strict=True)]
    whole = [a / b for a, b in zip(turns["toolnode"], turns["ours"], strict=True)]
    print(f"{'':<44} {'µs per call':>26}")
    print(f"{'ToolNode (LangChain @tool, asyncio body)':<44} {spread(per_call['toolnode'])}")
    print(f"{f'ToolBatchNode ({BODY[0]} @tool, five hooks)':<44} {spread(per_call['ours'])}")
    print(f"{'ratio ToolNode / ToolBatchNode':<44} {spread(ratios, 'x')}")
    print(f"{'ToolBatchNode([lookup]), five hooks':<44} {spread(per_call['ours_lc'])}")
    print(f"{'ratio ToolNode / ToolBatchNode([lookup])':<44} {spread(lc_ratios, 'x')}")
    print(f"{'baseline graph, per turn (µs)':<44} {spread([e * 1e6 for e in turns['baseline']])}")
    print(f"{'whole turn, graph included: ratio':<44} {spread(whole, 'x')}")
    for name, label in (
        ("node", "ToolBatchNode awaited directly, no graph"),
        ("aio", "toolnursery.aio.run_tool_calls, same batch"),
    ):
        print(f"{label + ' (µs per call)':<44} {spread([t / N * 1e6 for t in turns[name]])}")
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--body", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    BODY[0] = args.body
    bench_langgraph(args.quick)


if __name__ == "__main__":
    main()
