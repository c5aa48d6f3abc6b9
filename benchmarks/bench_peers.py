"""The peers' workload: ``lookup(query: str, limit: int = 10)`` through ``run_tool_calls``.

The workload the peers (pydantic-ai, openai-agents, LangGraph) were measured on, so
toolnursery's figure can be set beside theirs: one tool, ``lookup(query: str, limit: int
= 10)``, whose arguments arrive as raw JSON text and are decoded into a msgspec Struct;
odd calls omit ``limit`` (the default applies); N = 1000 calls in one batch,
``max_parallel = N``. The tool is defined twice — with ``define_tool`` and a frozen
Struct ``parameters`` type, and with ``@tool`` from the typed signature — and its body
comes in two kinds: one that awaits one checkpoint (the headline: every real tool
awaits) and one with no ``await``.

Beside each, in the same run, a bare trio nursery runs the same body once per call:
``start_soon`` of a task that decodes the call's raw JSON text into the Struct with a
reused ``msgspec.json.Decoder`` and calls the body. A repetition is the median of
interleaved one-batch samples of both sides (CPU time of the trio thread); the figures
are the median and the min–max over the repetitions of µs per call, and the ratio
toolnursery / bare per repetition.

The peers' own figures are quoted from the design notes, labelled as quoted: they were
measured on a machine of the same class, not by this script, and on a no-op batch.

With ``--n 10 --five`` the batch is a typical model turn (N = 10) with one pass-through
hook in each of the five phases (``passthrough.add_five``), and the quoted peers' per-call
figures are printed as multiples of ours (the peers' figures are N = 1000 no-op batches,
so the multiple is an indication, not a like-for-like measurement).

Run: ``python benchmarks/bench_peers.py`` (``--quick``: one batch per timing instead of
five, well under a minute; ``--n N``; ``--five``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from typing import Any

import msgspec
import trio

from passthrough import add_five
from toolnursery import (
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    run_tool_calls,
    tool,
)

N = 1000
REPS = 3
FIVE = False  # one pass-through hook per phase on ours (--five)

QUOTED = (
    ("pydantic-ai", "119–143"),
    ("LangGraph ToolNode", "202–212"),
    ("openai-agents runner", "587–772"),
    ("bare trio nursery", "5.8–7.2"),
    ("sequential msgspec decode + call + result loop", "0.44–0.79"),
)
"""Per call, N = 1000, a no-op batch: DESIGN.md, "Costs measured on this machine class"."""


class LookupArgs(msgspec.Struct, frozen=True):
    """The lookup tool's arguments."""

    query: str
    limit: int = 10


# -- the bodies: the same functions on both sides ------------------------------------------


async def lookup_awaiting(query: str, limit: int = 10) -> str:
    """Look ``query`` up (awaits one checkpoint, as a real tool awaits its I/O)."""
    await trio.lowlevel.checkpoint()
    return f"{limit} results for {query}"


async def lookup_now(query: str, limit: int = 10) -> str:
    """Look ``query`` up (no ``await``)."""
    return f"{limit} results for {query}"


async def struct_awaiting(args: LookupArgs, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return f"{args.limit} results for {args.query}"


async def struct_now(args: LookupArgs, ctx: ToolRunContext | None) -> str:
    return f"{args.limit} results for {args.query}"


Body = Callable[[LookupArgs], Awaitable[str]]


def define_tool_case(
    body: Callable[[LookupArgs, Any], Awaitable[str]],
) -> tuple[ToolDefinition, Body]:
    definition = define_tool(
        name="lookup",
        description="Look a query up.",
        parameters=LookupArgs,
        execute=body,
        is_concurrency_safe=lambda args: True,
    )
    return definition, lambda args: body(args, None)


def at_tool_case(fn: Callable[..., Awaitable[str]]) -> tuple[ToolDefinition, Body]:
    definition = tool(name="lookup", is_concurrency_safe=lambda args: True)(fn)
    return definition, lambda args: fn(args.query, args.limit)


CASES: tuple[tuple[str, Callable[[], tuple[ToolDefinition, Body]]], ...] = (
    ("define_tool(Struct), awaiting body", lambda: define_tool_case(struct_awaiting)),
    ("@tool, awaiting body", lambda: at_tool_case(lookup_awaiting)),
    ("define_tool(Struct), no-await body", lambda: define_tool_case(struct_now)),
    ("@tool, no-await body", lambda: at_tool_case(lookup_now)),
)


# -- measuring --------------------------------------------------------------------------------


def make_calls(n: int) -> list[ToolCall]:
    """Raw JSON argument text; odd calls omit ``limit``."""
    return [
        ToolCall(
            f"c{i}",
            "lookup",
            f'{{"query": "q{i}"}}' if i % 2 else f'{{"query": "q{i}", "limit": 5}}',
        )
        for i in range(n)
    ]


_decode = msgspec.json.Decoder(LookupArgs).decode


async def run_bare(calls: Sequence[ToolCall], body: Body) -> None:
    async def one(text: str) -> None:
        await body(_decode(text))

    async with trio.open_nursery() as nursery:
        for call in calls:
            nursery.start_soon(one, call.arguments)


async def timed(fn: Callable[[], Awaitable[object]], loops: int) -> float:
    """CPU seconds of ``loops`` runs (process time: on a shared machine, the time other
    processes hold the CPU is not counted; everything here runs on the trio thread)."""
    gc.collect()
    start = time.process_time()
    for _ in range(loops):
        await fn()
    return time.process_time() - start


def check(results: Sequence[Any]) -> None:
    """Every call succeeded; an odd call got the default limit."""
    assert not any(r.is_error for r in results), results[:3]
    texts = [b.text for r in results[:2] for b in r.content if isinstance(b, TextContent)]
    assert texts == ["5 results for q0", "10 results for q1"], texts


async def measure(
    make: Callable[[], tuple[ToolDefinition, Body]], loops: int
) -> tuple[list[float], list[float]]:
    definition, body = make()
    registry = ToolRegistry()
    registry.register(definition)
    if FIVE:
        add_five(registry)
    calls = make_calls(N)

    async def ours() -> None:
        await run_tool_calls(registry, calls, max_parallel=N)

    async def bare() -> None:
        await run_bare(calls, body)

    check(await run_tool_calls(registry, calls, max_parallel=N))  # also warms up
    await bare()
    ours_us: list[float] = []
    bare_us: list[float] = []
    for _ in range(REPS):
        # A repetition is the median of interleaved one-batch samples, so a burst of
        # other load on a shared machine moves one sample, not the repetition.
        ours_s: list[float] = []
        bare_s: list[float] = []
        chunk = max(1, 1000 // N)  # batches per sample: about 1000 calls
        for sample in range(max(5, loops)):
            if sample % 2:  # the order alternates
                bare_s.append(await timed(bare, chunk) / (chunk * N) * 1e6)
                ours_s.append(await timed(ours, chunk) / (chunk * N) * 1e6)
            else:
                ours_s.append(await timed(ours, chunk) / (chunk * N) * 1e6)
                bare_s.append(await timed(bare, chunk) / (chunk * N) * 1e6)
        ours_us.append(statistics.median(ours_s))
        bare_us.append(statistics.median(bare_s))
    return ours_us, bare_us


def spread(values: Sequence[float], unit: str = "") -> str:
    return f"{statistics.median(values):>7.2f}{unit} ({min(values):.2f}–{max(values):.2f}{unit})"


async def main_async(loops: int) -> None:
    print(
        f"python {sys.version.split()[0]}, trio {trio.__version__}, msgspec "
        f"{msgspec.__version__}, toolnursery {version('toolnursery')}"
    )
    print(
        f"lookup(query: str, limit: int = 10), raw JSON arguments into a msgspec Struct, "
        f"odd calls omit limit; N={N}, max_parallel={N}"
        + (", one pass-through hook in each of the five phases" if FIVE else "")
    )
    print(
        f"CPU µs per call, median (min–max) of {REPS} repetitions, each the median of "
        f"{max(5, loops)} interleaved one-batch samples"
    )
    header = f"{'case':<38} {'toolnursery µs':>24} {'bare nursery µs':>24} {'ratio':>22}"
    print(header)
    print("-" * len(header))
    headline: list[float] = []
    for label, make in CASES:
        ours, bare = await measure(make, loops)
        headline = headline or ours
        ratios = [a / b for a, b in zip(ours, bare, strict=True)]
        print(f"{label:<38} {spread(ours):>24} {spread(bare):>24} {spread(ratios, 'x'):>22}")
    print()
    print("Quoted, not measured here (DESIGN.md, same machine class, a no-op batch, N = 1000),")
    print(
        f"and as a multiple of ours ({CASES[0][0]}, median {statistics.median(headline):.2f} µs):"
    )
    for name, figure in QUOTED:
        low, high = (float(x) for x in figure.split("–"))
        ours_us = statistics.median(headline)
        print(
            f"  {name:<48} {figure:>10} µs per call  "
            f"{low / ours_us:6.1f}–{high / ours_us:.1f}x ours"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one batch per timing")
    parser.add_argument("--n", type=int, default=1000, help="calls per batch (max_parallel = N)")
    parser.add_argument("--five", action="store_true", help="a pass-through hook per phase")
    args = parser.parse_args()
    global N, FIVE
    N, FIVE = args.n, args.five
    trio.run(main_async, 1 if args.quick else 5)


if __name__ == "__main__":
    main()
