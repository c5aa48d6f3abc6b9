"""Per-call cost of argument validation on the one engine (jsonschema-rs).

One tool, ``search(query, limit, tags, mode, since)`` with the constraints real tools
declare (``minLength`` and a ``pattern``, ``minimum``/``maximum``, ``maxItems``,
``uniqueItems``, ``enum``, a ``date`` format), defined five ways:

- a raw ``ToolDefinition`` with ``validate=False`` (the body gets the arguments
  unchecked: the floor);
- the same raw definition validated (the default: the engine's compiled check);
- the same schema plus ``"additionalProperties": false``;
- ``define_tool`` with the equivalent ``SchemaSpec`` (its schema, on the same engine);
- ``@tool`` on the equivalent typed signature (the engine, then msgspec builds the
  arguments Struct; a ``pattern`` makes msgspec convert to a pattern-free twin);
- both raw definitions given invalid arguments (the error path: every violation listed).

Each row runs N ``ToolRegistry.execute()`` calls back to back and a bare
``trio.open_nursery()`` that ``start_soon``-s the same body N times; the rows and their
bare runs are interleaved (every row once per repetition, in turn), so drift on a
shared machine spreads over all of them. Time is the CPU time of the trio thread. It
prints µs per call and the ratio execute / bare, as the median with the min–max over
the repetitions, then the validators alone (µs per check, no pipeline).

Run: ``python benchmarks/bench_validation.py`` (``--quick`` for a fast run, ``--calls N``
and ``--repeat R`` to change the sizes).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
import trio

from toolnursery import (
    CancelSignal,
    SchemaSpec,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    tool,
)
from toolnursery._tools._raw import compile_raw_validator
from toolnursery._tools._schema import compile_spec

WORD = "^[^\\s].*$"
SPEC: SchemaSpec = {
    "query": {"type": "string", "required": True, "minLength": 1, "pattern": WORD},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "uniqueItems": True},
    "mode": {"type": "string", "enum": ["fast", "full"]},
    "since": {"type": "string", "format": "date"},
}
SCHEMA, DSL_CHECK = compile_spec(SPEC)
CLOSED = {**SCHEMA, "additionalProperties": False}
ARGS: dict[str, Any] = {
    "query": "trio",
    "limit": 10,
    "tags": ["a", "b"],
    "mode": "fast",
    "since": "2024-05-01",
}
BAD: dict[str, Any] = {"limit": 0, "tags": ["a", "a"], "mode": "slow", "since": "May"}


async def yields(args: Any, ctx: ToolRunContext | None) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


@tool(name="search")
async def typed_search(
    query: Annotated[str, msgspec.Meta(min_length=1, pattern=WORD)],
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10,
    tags: Annotated[list[str], msgspec.Meta(max_length=5)] | None = None,
    mode: Literal["fast", "full"] = "fast",
    since: Annotated[str, msgspec.Meta(extra_json_schema={"format": "date"})] = "",
) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


def registry_of(definition: ToolDefinition) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(definition)
    return registry


def build_rows() -> list[tuple[str, ToolRegistry, dict[str, Any], bool]]:
    """``(label, registry, arguments, whether the call succeeds)``."""
    unchecked = ToolDefinition("search", "Search", SCHEMA, yields, validate=False)
    validated = ToolDefinition("search", "Search", SCHEMA, yields)
    closed = ToolDefinition("search", "Search", CLOSED, yields)
    dsl = define_tool(name="search", description="Search", parameters=SPEC, execute=yields)
    return [
        ("raw ToolDefinition, validate=False", registry_of(unchecked), ARGS, True),
        ("raw, validated (the engine)", registry_of(validated), ARGS, True),
        ("raw + additionalProperties: false", registry_of(closed), ARGS, True),
        ("define_tool, SchemaSpec (the engine)", registry_of(dsl), ARGS, True),
        ("@tool, typed signature (engine + msgspec)", registry_of(typed_search), ARGS, True),
        ("raw, invalid arguments", registry_of(validated), BAD, False),
        ("raw closed, invalid arguments", registry_of(closed), BAD, False),
    ]


async def run_execute(registry: ToolRegistry, args: dict[str, Any], ok: bool, n: int) -> float:
    inputs = [ToolExecutionInput(f"c{i}", "search", args, CancelSignal()) for i in range(n)]
    execute = registry.execute
    gc.collect()
    start = time.process_time()
    for input_ in inputs:
        result = await execute(input_)
    elapsed = time.process_time() - start
    assert result.is_error is not ok, result
    return elapsed


async def run_bare(n: int) -> float:
    gc.collect()
    start = time.process_time()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(yields, ARGS, None)
    return time.process_time() - start


def per_check(check: Callable[[object], list[str]], args: object, n: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(n):
        check(args)
    return (time.process_time() - start) / n * 1e6


async def measure(calls: int, repeat: int) -> None:
    rows = build_rows()
    ours: dict[str, list[float]] = {label: [] for label, *_ in rows}
    bare: dict[str, list[float]] = {label: [] for label, *_ in rows}
    for _label, registry, args, ok in rows:  # warm caches and code paths
        await run_execute(registry, args, ok, min(calls, 200))
    await run_bare(min(calls, 200))
    for _ in range(repeat):
        for label, registry, args, ok in rows:
            ours[label].append(await run_execute(registry, args, ok, calls) / calls * 1e6)
            bare[label].append(await run_bare(calls) / calls * 1e6)
    header = f"{'execute() of one call':<50} {'µs/call':>22} {'bare µs/call':>22} {'ratio':>20}"
    print(f"µs per call and ratio: median (min–max) over {repeat} repetitions of {calls} calls")
    print(header)
    print("-" * len(header))
    for label, *_ in rows:
        ratios = [o / b for o, b in zip(ours[label], bare[label], strict=True)]
        print(
            f"{label:<50} {_spread(ours[label]):>22} {_spread(bare[label]):>22} {_spread(ratios):>20}"
        )

    raw_check = compile_raw_validator(SCHEMA)
    checks = [
        ("the engine (raw schema), valid arguments", raw_check, ARGS),
        ("the engine (the DSL's schema), valid arguments", DSL_CHECK, ARGS),
        ("the engine (raw schema), invalid arguments", raw_check, BAD),
    ]
    samples: dict[str, list[float]] = {label: [] for label, *_ in checks}
    for _ in range(repeat):
        for label, check, args in checks:
            samples[label].append(per_check(check, args, calls))
    print()
    print(f"{'the validator alone':<50} {'µs/check':>22}")
    print("-" * 73)
    for label, *_ in checks:
        print(f"{label:<50} {_spread(samples[label]):>22}")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per repetition")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per row")
    parser.add_argument("--quick", action="store_true", help="1000 calls per repetition")
    options = parser.parse_args()
    calls = 1000 if options.quick else options.calls
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    trio.run(measure, calls, options.repeat)


if __name__ == "__main__":
    main()
