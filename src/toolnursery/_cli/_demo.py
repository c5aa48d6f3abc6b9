"""``toolnursery demo``: one bundled batch on the example tools, and what ran when.

The batch shows the scheduler's rules on real file work: reads, a listing, a search
and a sleep overlap in one pool; a keyed write waits only for the earlier calls whose
resource keys conflict with its own (a read of the same file, a search over its
directory tree) and runs while other calls still run; an exclusive move is a barrier;
a pre-execute policy denies a write outside ``notes/`` before it runs; a call with
invalid arguments fails in the tool's own validation; and a path that escapes the
sandbox is refused.

The timeline is measured by an ``on_execute`` wrapper around each dispatch, so it
shows when each tool body ran (a denied call never reaches dispatch).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import textwrap
from collections.abc import Awaitable, Callable, Mapping
from contextlib import ExitStack
from functools import partial
from pathlib import PurePosixPath
from typing import Final

import msgspec
import trio

from .._batch._recorder import RecorderEvent, ToolCallRecorder
from .._batch._scheduler import run_tool_calls
from .._core._arguments import parse_arguments
from .._core._content import TextContent, ToolCall, ToolExecutionResult
from .._core._decisions import Deny, PreToolDecision, ResourceKey
from .._core._execution import ToolDispatchExecution, ToolExecution, ToolExecutionInput
from .._examples._sandbox import fill_sandbox
from .._examples._toolset import example_registry
from .._machine._conflicts import conflicting_resources, group_heads
from .._pipeline._registry import ToolRegistry
from ._cards import example_presenters
from ._common import EXIT_OK, open_log, say
from ._timeline import timeline_format, write_timeline

__all__ = ["DEMO_CALLS", "DemoRun", "Span", "demo_command", "render_demo", "run_demo"]

_IDEAS: Final = "- parallel reads\n- keyed writes\n- exclusive moves\n"

DEMO_CALLS: Final = (
    ToolCall("c1", "read_file", '{"path": "notes/ideas.md"}'),
    ToolCall("c2", "list_dir", '{"path": "src"}'),
    ToolCall("c3", "search_text", '{"pattern": "TODO"}'),
    ToolCall("c4", "sleep", '{"seconds": 0.05}'),
    ToolCall(
        "c5",
        "write_file",
        msgspec.json.encode({"path": "notes/ideas.md", "content": _IDEAS}).decode(),
    ),
    ToolCall("c6", "read_file", '{"path": "README.md"}'),
    ToolCall(
        "c7",
        "move_path",
        '{"source": "notes/ideas.md", "destination": "notes/archive/ideas.md"}',
    ),
    ToolCall("c8", "read_file", '{"path": "notes/archive/ideas.md"}'),
    ToolCall("c9", "write_file", '{"path": "src/app.py", "content": "print(\\"pwned\\")\\n"}'),
    ToolCall("c10", "read_file", '{"file": "README.md"}'),
    ToolCall("c11", "read_file", '{"path": "../../etc/passwd"}'),
)
"""The bundled batch, in model order."""

_BAR: Final = 40


class Span(msgspec.Struct, frozen=True):
    """When one call's dispatch ran, in milliseconds since the batch started."""

    start_ms: float
    end_ms: float


class DemoRun(msgspec.Struct, frozen=True):
    """Everything the demo measured: the calls, their modes and keys, spans and results."""

    calls: tuple[ToolCall, ...]
    modes: tuple[str, ...]
    spans: tuple[Span | None, ...]
    denied: frozenset[str]
    results: tuple[ToolExecutionResult, ...]
    keys: tuple[tuple[ResourceKey, ...], ...] = ()


def _under(path: str, directory: str) -> bool:
    """Whether ``path`` (relative, after normalizing ``..``) lies inside ``directory``."""
    if os.path.isabs(path):
        return False
    parts = PurePosixPath(os.path.normpath(path).replace(os.sep, "/")).parts
    return len(parts) > 1 and parts[0] == directory


_WRITTEN: Final = {"write_file": ("path",), "move_path": ("source", "destination")}
"""The tools the demo's policy confines, and their path arguments."""


def notes_only_policy(
    denied: set[str],
) -> Callable[
    [ToolExecution, Callable[[], Awaitable[PreToolDecision]]], Awaitable[PreToolDecision]
]:
    """A pre-execute listener: ``write_file`` and ``move_path`` only under ``notes/``."""

    async def notes_only(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        args = execution.arguments
        fields = _WRITTEN.get(execution.name, ())
        if fields and isinstance(args, Mapping):
            for field in fields:
                path = args.get(field)
                if isinstance(path, str) and not _under(path, "notes"):
                    denied.add(execution.call_id)
                    return Deny(f'{execution.name} may only write under notes/, not "{path}"')
        return await next_()

    return notes_only


async def run_demo(
    root: str | os.PathLike[str],
    *,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    registry: ToolRegistry | None = None,
) -> DemoRun:
    """Run :data:`DEMO_CALLS` on the example tools under ``root`` and measure it.

    Args:
        root: the sandbox (filled by :func:`toolnursery.examples.fill_sandbox`).
        max_parallel: the batch's cap.
        recorder: receives the batch's durable events.
        registry: the registry to use instead of ``example_registry(root)``.
    """
    registry = registry if registry is not None else example_registry(root)
    denied: set[str] = set()
    registry.on_pre_execute(notes_only_policy(denied))
    spans: dict[str, Span] = {}
    t0 = trio.current_time()

    async def timed(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        start = trio.current_time()
        try:
            return await next_()
        finally:
            spans[view.call_id] = Span((start - t0) * 1000, (trio.current_time() - t0) * 1000)

    registry.on_execute(timed)
    classified = [
        registry.execution_mode(
            ToolExecutionInput(call.id, call.name, parse_arguments(call.arguments))
        )
        for call in DEMO_CALLS
    ]
    results = await run_tool_calls(
        registry, DEMO_CALLS, max_parallel=max_parallel, recorder=recorder
    )
    return DemoRun(
        DEMO_CALLS,
        tuple(mode.kind for mode in classified),
        tuple(spans.get(call.id) for call in DEMO_CALLS),
        frozenset(denied),
        tuple(results),
        tuple(mode.keys for mode in classified),
    )


def _text(result: ToolExecutionResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def _arguments_text(arguments: object) -> str:
    return arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()


def _preview(text: str, width: int) -> str:
    lines = text.splitlines() or [""]
    first = lines[0]
    extra = len(lines) - 1
    more = f"  (+{extra} line{'s' if extra > 1 else ''})" if extra else ""
    if len(first) + len(more) > width:
        first = first[: max(width - len(more) - 3, 10)] + "..."
    return first + more


def _status(run: DemoRun, index: int) -> str:
    result = run.results[index]
    if not result.is_error:
        return "ok"
    if run.calls[index].id in run.denied:
        return "DENIED"
    return result.error.code if result.error is not None else "ERROR"


def _bar(span: Span, total: float) -> str:
    first = min(int(span.start_ms / total * _BAR), _BAR - 1)
    last = max(first + 1, min(math.ceil(span.end_ms / total * _BAR), _BAR))
    return "|" + " " * first + "=" * (last - first) + " " * (_BAR - last) + "|"


def _ids(run: DemoRun, indices: list[int]) -> str:
    names = [f"{run.calls[i].id} {run.calls[i].name}" for i in indices]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _notes(run: DemoRun) -> list[str]:
    """What the timeline shows, stated from the measurements."""
    notes: list[str] = []
    calls, spans, modes = run.calls, run.spans, run.modes
    keys = [run.keys[i] if i < len(run.keys) else () for i in range(len(calls))]
    # The group each call belongs to: the calls since the last exclusive barrier.
    group = group_heads(modes)

    def blockers(i: int) -> list[int]:
        if modes[i] != "keyed":
            return []
        return [
            j
            for j in range(group[i], i)
            if modes[j] == "keyed"
            and spans[j] is not None
            and conflicting_resources(keys[j], keys[i])
        ]

    barrier = next((i for i, mode in enumerate(modes) if mode == "exclusive"), len(calls))
    pool = [i for i in range(barrier) if not blockers(i)][:4]
    timed = [span for i in pool if (span := spans[i]) is not None]
    if len(timed) > 1 and len(timed) == len(pool):
        first_end = min(s.end_ms for s in timed)
        if all(s.start_ms <= first_end for s in timed):
            notes.append(
                f"{', '.join(calls[i].id for i in pool)} conflict with nothing before them: "
                f"all of them started before the first one ended ({first_end:.1f} ms); "
                "they ran side by side."
            )
    for i, span in enumerate(spans):
        waited = blockers(i)
        if span is None or not waited:
            continue
        last = max(s.end_ms for j in waited if (s := spans[j]) is not None)
        if span.start_ms < last:
            continue
        on = ", ".join(
            f"{calls[j].id} {calls[j].name} ({', '.join(conflicting_resources(keys[j], keys[i]))})"
            for j in waited
        )
        text = (
            f"{calls[i].id} {calls[i].name} is keyed: it waited only for the earlier calls "
            f"it conflicts with — {on} — and started at {span.start_ms:.1f} ms, after "
            f"they ended (the last at {last:.1f} ms)"
        )
        beside = [
            j
            for j, other in enumerate(spans)
            if j != i
            and j not in waited
            and other is not None
            and other.start_ms <= span.start_ms < other.end_ms
        ]
        if beside:
            verb = "was" if len(beside) == 1 else "were"
            text += (
                f". {_ids(run, beside)}, which it does not conflict with, {verb} still "
                "running: it is no barrier"
            )
        ahead = [
            j
            for j in range(i + 1, len(calls))
            if (other := spans[j]) is not None and other.start_ms < span.start_ms
        ]
        if ahead:
            text += f"; {_ids(run, ahead)}, later in the batch, started before it"
        notes.append(text + ".")
    for i, mode in enumerate(modes):
        span = spans[i]
        if mode != "exclusive" or span is None or run.results[i].is_error:
            continue
        before = [s.end_ms for s in spans[:i] if s is not None]
        after = next((s for s in spans[i + 1 :] if s is not None), None)
        text = (
            f"{calls[i].id} {calls[i].name} is exclusive: a barrier. It started at "
            f"{span.start_ms:.1f} ms, after every earlier body ended "
            f"(the last at {max(before, default=0.0):.1f} ms)"
        )
        if after is not None:
            text += f", and the next call started only after it ended ({after.start_ms:.1f} ms)"
        notes.append(text + ".")
    for i, call in enumerate(calls):
        status = _status(run, i)
        closed = (
            " Its keys cannot be computed, so it ran exclusive (fail-closed)."
            if modes[i] == "exclusive"
            else ""
        )
        if status == "DENIED":
            notes.append(f"{call.id} was denied by the pre-execute policy: its body never ran.")
        elif status == "INVALID_ARGS":
            notes.append(
                f"{call.id} had invalid arguments: the tool's own validation refused them." + closed
            )
        elif status == "OUTSIDE_ROOT":
            notes.append(
                f"{call.id} tried to leave the sandbox: refused, nothing was read." + closed
            )
    return notes


def render_demo(run: DemoRun, sandbox: str) -> str:
    """The demo's report: the batch, the timeline, the results, and what they show."""
    out: list[str] = [
        f"toolnursery demo: {len(run.calls)} tool calls on the example tools",
        f"sandbox: {sandbox}",
        'policy:  a pre-execute listener denies write_file and move_path outside "notes/"',
        "",
        "the batch, in model order:",
    ]
    name_w = max(len(c.name) for c in run.calls)
    for call, mode in zip(run.calls, run.modes, strict=True):
        out.append(
            f"  {call.id:<3} {call.name:<{name_w}}  {mode:<9}  {_preview(_arguments_text(call.arguments), 60)}"
        )
    total = max((s.end_ms for s in run.spans if s is not None), default=0.0) or 1.0
    out += ["", "timeline: when each tool body ran (ms since the batch started)"]
    header = f"  {'':<3} {'':<{name_w}}  {'start':>7} {'end':>7}  "
    scale = f"0 ms{f'{total:.0f} ms':>{_BAR - 2}}"
    out.append(header + " " + scale)
    for call, span in zip(run.calls, run.spans, strict=True):
        row = f"  {call.id:<3} {call.name:<{name_w}}  "
        if span is None:
            out.append(row + f"{'-':>7} {'-':>7}   (never ran)")
        else:
            out.append(row + f"{span.start_ms:>7.1f} {span.end_ms:>7.1f}  {_bar(span, total)}")
    out += ["", "results, in model order:"]
    status_w = max(len(_status(run, i)) for i in range(len(run.calls)))
    for i, (call, result) in enumerate(zip(run.calls, run.results, strict=True)):
        status = _status(run, i)
        out.append(f"  {call.id:<3} {status:<{status_w}}  {_preview(_text(result), 66)}")
    notes = _notes(run)
    if notes:
        out += ["", "what happened:"]
        for note in notes:
            out += textwrap.wrap(note, 88, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


NEXT_STEP = """
next: see it drawn (toolnursery demo --timeline demo.html), replay it as cards
(toolnursery demo --log demo.jsonl, then toolnursery replay demo.jsonl), run your own
calls (toolnursery run calls.json), or write your first tool: docs/tutorial.md.
"""
"""What the demo prints last: where to go from here."""


def demo_command(options: argparse.Namespace) -> int:
    """Run ``toolnursery demo`` with parsed ``options`` in a fresh temporary sandbox.

    Returns:
        The exit code: 0 once the report is written.

    Raises:
        UsageError: ``--log`` cannot be opened, or ``--timeline`` names neither a
            ``.svg`` nor an ``.html`` file, or cannot be written.
    """
    timeline = getattr(options, "timeline", None)
    if timeline is not None:
        timeline_format(timeline)
    with ExitStack() as stack:
        log = open_log(options.log, stack)
        kept = _Kept(log) if timeline is not None else None
        recorder: ToolCallRecorder | None = kept if kept is not None else log
        sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-demo-"))
        fill_sandbox(sandbox)
        run = trio.run(
            partial(run_demo, sandbox, max_parallel=options.max_parallel, recorder=recorder)
        )
        sys.stdout.write(render_demo(run, f"{sandbox} (temporary, removed on exit)"))
        sys.stdout.write(NEXT_STEP)
        sys.stdout.flush()
    if kept is not None and timeline is not None:
        write_timeline(
            timeline,
            kept.events,
            registry=example_presenters(),
            title="toolnursery demo: the batch's timeline",
        )
        say(f"wrote {timeline}: {len(run.calls)} calls")
    return EXIT_OK


class _Kept:
    """Keeps the batch's events for the picture, and forwards them to the log."""

    def __init__(self, inner: ToolCallRecorder | None) -> None:
        self.inner = inner
        self.events: list[RecorderEvent] = []

    def record(self, event: RecorderEvent, /) -> None:
        if self.inner is not None:
            self.inner.record(event)
        self.events.append(event)
