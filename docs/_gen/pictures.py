"""The documentation's pictures, drawn from the code and the repository's data.

Each picture is a function returning SVG text; :data:`PICTURES` names the ones the docs
build writes (``docs/_gen/hook.py`` adds them to the site under ``images/generated/``),
so no picture is drawn by hand and pasted. The pictures read:

- ``phases``: the pipeline's hook phases (``Phase`` of ``_pipeline/_compiler.py``, each
  with the comment it carries there) and the registry method that adds each kind of hook;
- ``keys-schedule``: the schedule the scheduler produces for the workload of
  ``benchmarks/bench_keys.py``, once with exclusive barriers and once with resource keys,
  run on trio's mock clock (so the build is quick and the picture the same every time);
- ``benchmark-ratios``: the ratio columns of the tables ``docs/benchmarks.md`` quotes;
- ``demo-timeline``: the demo batch's timeline (``toolnursery demo --log``), drawn by
  ``toolnursery.timeline.draw_timeline``.

A picture that cannot be drawn raises :class:`PictureError`, which fails the build.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS_PAGE = ROOT / "docs" / "benchmarks.md"
BENCH_KEYS = ROOT / "benchmarks" / "bench_keys.py"

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
INK = "#1f2328"
MUTED = "#57606a"
GRID = "#d0d7de"
BLUE = "#3b6fd4"
ORANGE = "#e07b1a"
GREEN = "#2e9d5b"
PALE = "#eef2fb"


class PictureError(Exception):
    """Raised when a picture's source (code, data file or page) is not what it expects."""


# --- a few SVG helpers -------------------------------------------------------------


def _svg(width: float, height: float, title: str) -> ET.Element:
    root = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "width": f"{width:.0f}",
            "height": f"{height:.0f}",
            "viewBox": f"0 0 {width:.0f} {height:.0f}",
            "font-family": FONT,
            "font-size": "13",
            "role": "img",
        },
    )
    ET.SubElement(root, "title").text = title
    # A white ground: the site's dark palette would otherwise swallow the dark text.
    _rect(root, 0, 0, width, height, fill="white")
    return root


def _rect(parent: ET.Element, x: float, y: float, w: float, h: float, **attrs: str) -> ET.Element:
    values = {"x": f"{x:.1f}", "y": f"{y:.1f}", "width": f"{w:.1f}", "height": f"{h:.1f}"}
    return ET.SubElement(parent, "rect", {**values, **_attrs(attrs)})


def _text(parent: ET.Element, x: float, y: float, text: str, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, "text", {"x": f"{x:.1f}", "y": f"{y:.1f}", **_attrs(attrs)})
    element.text = text
    return element


def _line(parent: ET.Element, x1: float, y1: float, x2: float, y2: float, **attrs: str) -> None:
    points = {"x1": f"{x1:.1f}", "y1": f"{y1:.1f}", "x2": f"{x2:.1f}", "y2": f"{y2:.1f}"}
    ET.SubElement(parent, "line", {**points, **_attrs(attrs)})


def _attrs(attrs: dict[str, str]) -> dict[str, str]:
    """``font_size="11"`` → ``font-size="11"``; ``class_`` → ``class``."""
    return {key.rstrip("_").replace("_", "-"): value for key, value in attrs.items()}


def _serialize(root: ET.Element) -> str:
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


# --- the pipeline's phases -----------------------------------------------------------

# The stages a call goes through (``_pipeline/_stages.py``) and the hook phases each runs,
# in the order they run; ``phases()`` refuses a ``Phase`` missing here or listed twice.
STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("prepare", "before the body", ("PRE", "GUARD")),
    ("dispatch", "around the body", ("EXECUTE",)),
    ("finalize", "after the body", ("POST", "RESULT")),
)


def phase_table() -> list[tuple[str, str, str, str]]:
    """``(stage, phase name, what the code says it is, the registry method)`` in run order.

    Raises:
        PictureError: ``STAGES`` and the code's ``Phase`` disagree, or a phase has no
            comment or no registry method.
    """
    from toolnursery._pipeline import _compiler, _registry

    phase = _compiler.Phase
    staged = [name for _, _, names in STAGES for name in names]
    if sorted(staged) != sorted(phase.__members__) or len(set(staged)) != len(staged):
        raise PictureError(
            f"docs/_gen/pictures.py STAGES lists {sorted(staged)}, "
            f"the code's Phase has {sorted(phase.__members__)}"
        )
    comments = dict(re.findall(r"^\s*(\w+) = \d+\s*# (.+)$", inspect.getsource(phase), re.M))
    methods = _registry_methods(inspect.getsource(_registry))
    table = []
    for stage, _, names in STAGES:
        for name in names:
            if name not in comments or name not in methods:
                raise PictureError(f"Phase.{name} has no comment or no registry method")
            table.append((stage, name, comments[name], methods[name]))
    return table


def _registry_methods(source: str) -> dict[str, str]:
    """Which public registry method adds a hook of each phase (``_add_hook(Phase.X, ...)``)."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "_add_hook"
                and call.args
                and isinstance(call.args[0], ast.Attribute)
            ):
                found.setdefault(call.args[0].attr, node.name)
    return found


def phases() -> str:
    """The call's three stages, each with its hook phases in run order, around the body."""
    table = phase_table()
    box_w, box_h, gap, pad = 200.0, 92.0, 14.0, 16.0
    width = pad * 2 + len(table) * box_w + (len(table) - 1) * gap + box_w * 0.55 + gap
    height = 250.0
    root = _svg(width, height, "The pipeline of one call: its stages and hook phases")
    _text(root, pad, 24, "One call through the pipeline", font_size="16", font_weight="600")
    x = pad
    top = 70.0
    body_after = next(i for i, row in enumerate(table) if row[1] == "EXECUTE")
    for stage, label, names in STAGES:
        span = len(names) * box_w + (len(names) - 1) * gap
        if "EXECUTE" in names:
            span += box_w * 0.55 + gap
        _rect(root, x - 6, top - 28, span + 12, box_h + 44, rx="10", fill=PALE, stroke=GRID)
        _text(root, x, top - 10, f"{stage}: {label}", fill=MUTED, font_weight="600")
        x += span + gap
    x = pad
    for index, (_stage, name, comment, method) in enumerate(table):
        group = ET.SubElement(root, "g", {"class": f"phase phase-{name.lower()}"})
        _rect(group, x, top, box_w, box_h, rx="8", fill="white", stroke=BLUE, stroke_width="1.5")
        _text(group, x + 10, top + 22, name.lower(), font_weight="600", fill=BLUE)
        _text(
            group,
            x + 10,
            top + 42,
            f"registry.{method}",
            font_size="12",
            fill=INK,
            font_family="ui-monospace, monospace",
        )
        for offset, chunk in enumerate(_wrap(comment, 30)[:2]):
            _text(group, x + 10, top + 62 + 15 * offset, chunk, font_size="11.5", fill=MUTED)
        x += box_w + gap
        if index == body_after:
            body_w = box_w * 0.55
            _rect(root, x, top + 14, body_w, box_h - 28, rx="8", fill=GREEN)
            _text(
                root,
                x + body_w / 2,
                top + box_h / 2 + 5,
                "tool body",
                fill="white",
                font_weight="600",
                text_anchor="middle",
            )
            x += body_w + gap
    _line(
        root,
        pad,
        top + box_h + 42,
        x - gap,
        top + box_h + 42,
        stroke=MUTED,
        stroke_width="1.5",
        marker_end="url(#arrow)",
    )
    defs = ET.SubElement(root, "defs")
    marker = ET.SubElement(
        defs,
        "marker",
        {
            "id": "arrow",
            "viewBox": "0 0 10 10",
            "refX": "9",
            "refY": "5",
            "markerWidth": "8",
            "markerHeight": "8",
            "orient": "auto",
        },
    )
    ET.SubElement(marker, "path", {"d": "M0,0 L10,5 L0,10 z", "fill": MUTED})
    _text(
        root,
        pad,
        top + box_h + 62,
        "each hook is registered on the registry or a scope; a phase with no hooks is skipped",
        fill=MUTED,
        font_size="12",
    )
    return _serialize(root)


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


# --- barriers against resource keys --------------------------------------------------


def _load_bench_keys() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_docs_bench_keys", BENCH_KEYS)
    if spec is None or spec.loader is None:
        raise PictureError(f"cannot load {BENCH_KEYS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def keys_schedules() -> dict[str, list[tuple[str, str, float, float]]]:
    """When each call of the ``bench_keys.py`` workload ran, with barriers and with keys.

    The benchmark's own calls and registries run on trio's mock clock (its bodies sleep,
    the clock jumps), so the times are the schedule's, not the machine's: ``{"barriers":
    rows, "keys": rows}``, each row ``(call id, tool name, start ms, end ms)`` in model
    order.
    """
    bench = _load_bench_keys()
    calls = bench.mixed_calls()
    out = {}
    for label, keyed in (("barriers", False), ("keys", True)):
        spans, origin = _schedule(bench.mixed_registry(keyed), calls, bench.run_tool_calls)
        if set(spans) != {c.id for c in calls}:
            raise PictureError(f"bench_keys: not every call ran with {label}")
        out[label] = [
            (c.id, c.name, (spans[c.id][0] - origin) * 1e3, (spans[c.id][1] - origin) * 1e3)
            for c in calls
        ]
    return out


def _schedule(
    registry: Any, calls: list[Any], run_tool_calls: Callable[..., Any]
) -> tuple[dict[str, tuple[float, float]], float]:
    """Run one batch on a mock clock: each call's (start, end) of dispatch, and the origin."""
    import trio
    import trio.testing

    spans: dict[str, tuple[float, float]] = {}

    async def timed(execution: Any, next: Callable[[], Any]) -> Any:
        start = trio.current_time()
        try:
            return await next()
        finally:
            spans[execution.call_id] = (start, trio.current_time())

    registry.on_execute(timed)

    async def run() -> float:
        start = trio.current_time()
        await run_tool_calls(registry, calls)
        return start

    origin = trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
    return spans, origin


def keys_schedule() -> str:
    """Two panels on one time axis: the barrier schedule above, the keyed one below."""
    schedules = keys_schedules()
    total = max(end for rows in schedules.values() for *_, end in rows)
    left, right, pad = 170.0, 30.0, 16.0
    plot_w = 620.0
    row_h = 2.4
    rows = len(schedules["barriers"])
    panel_h = rows * row_h
    width = left + plot_w + right
    height = 60 + 2 * (panel_h + 50) + 40
    root = _svg(width, height, "The benchmark's batch with exclusive barriers and resource keys")
    _text(
        root,
        pad,
        24,
        "bench_keys.py's batch: when each call's body ran",
        font_size="16",
        font_weight="600",
    )
    _text(
        root,
        pad,
        44,
        f"{rows} calls (rows, in model order), 5 ms bodies, cap 10; the schedule on a mock clock",
        fill=MUTED,
        font_size="12",
    )
    scale = plot_w / total
    y = 70.0
    names = {"barriers": "exclusive barriers", "keys": "resource keys"}
    for label, calls in schedules.items():
        finish = max(end for *_, end in calls)
        _text(root, pad, y + 16, names[label], font_weight="600")
        _text(root, pad, y + 34, f"done at {finish:.0f} ms", fill=MUTED, font_size="12")
        _rect(root, left, y, plot_w, panel_h, fill="#f6f8fa")
        group = ET.SubElement(root, "g", {"class": f"schedule schedule-{label}"})
        for row, (call_id, tool, start, end) in enumerate(calls):
            bar = _rect(
                group,
                left + start * scale,
                y + row * row_h,
                max((end - start) * scale, 1),
                row_h - 0.4,
                fill=ORANGE if tool == "write" else BLUE,
            )
            ET.SubElement(bar, "title").text = f"{call_id} {tool}: {start:.0f}–{end:.0f} ms"
        y += panel_h + 50
    for tick in range(0, int(total) + 1, 25):
        x = left + tick * scale
        _line(root, x, 66, x, y - 46, stroke=GRID, stroke_width="0.6")
        _text(root, x, y - 30, f"{tick}", fill=MUTED, font_size="11", text_anchor="middle")
    _text(
        root,
        left + plot_w,
        y - 14,
        "ms from the batch's start",
        fill=MUTED,
        font_size="11",
        text_anchor="end",
    )
    for offset, (colour, what) in enumerate(((BLUE, "read"), (ORANGE, "write"))):
        _rect(root, pad + offset * 70, y - 22, 12, 12, fill=colour)
        _text(root, pad + offset * 70 + 17, y - 12, what, font_size="12")
    return _serialize(root)


# --- the benchmark ratios --------------------------------------------------------------

# The page's sections whose tables have a ratio column, charted in this order.
RATIO_SECTIONS = (
    ("bench_pipeline.py", "one call through execute()"),
    ("bench_scheduler.py", "a batch of 1000 calls"),
    ("bench_peers.py", "the peers' workload"),
)
_RATIO_ROW = re.compile(
    r"^(?P<label>\S.*?)\s{2,}[\d.]+ \([\d.–-]+\)\s+[\d.]+ \([\d.–-]+\)\s+"
    r"(?P<ratio>[\d.]+)x? \((?P<low>[\d.]+)x?[–-](?P<high>[\d.]+)x?\)\s*$"
)


def benchmark_rows(page: str) -> list[tuple[str, list[tuple[str, float, float, float]]]]:
    """The ratio rows of each of :data:`RATIO_SECTIONS` in the benchmarks page's text.

    Returns ``(section title, [(row label, median, min, max), ...])`` per section.

    Raises:
        PictureError: a section's heading or table is missing, or has no ratio row.
    """
    out = []
    for script, title in RATIO_SECTIONS:
        heading = re.search(rf"^###.*`python benchmarks/{re.escape(script)}`.*$", page, re.M)
        if heading is None:
            raise PictureError(f"docs/benchmarks.md has no section for benchmarks/{script}")
        block = re.search(r"^```text\n(.*?)^```", page[heading.end() :], re.M | re.S)
        rows = []
        for line in block.group(1).splitlines() if block else ():
            match = _RATIO_ROW.match(line)
            if match:
                ratio, low, high = (float(match[k]) for k in ("ratio", "low", "high"))
                rows.append((match["label"], ratio, low, high))
        if not rows:
            raise PictureError(f"docs/benchmarks.md: no ratio rows under benchmarks/{script}")
        out.append((title, rows))
    return out


def benchmark_ratios(page: str | None = None) -> str:
    """A bar per row of the quoted tables: the ratio to a bare trio nursery, with its spread."""
    sections = benchmark_rows(page or BENCHMARKS_PAGE.read_text(encoding="utf-8"))
    left, plot_w, right, pad, row_h = 380.0, 420.0, 60.0, 16.0, 19.0
    high = max(h for _, rows in sections for *_, h in rows)
    limit = max(2.0, float(int(high) + 1))
    scale = plot_w / limit
    count = sum(len(rows) + 1.6 for _, rows in sections)
    height = 90 + count * row_h + 40
    root = _svg(left + plot_w + right, height, "The benchmarks' ratios to a bare trio nursery")
    _text(
        root,
        pad,
        24,
        "Time per call against a bare trio nursery (1 = as fast as bare trio)",
        font_size="16",
        font_weight="600",
    )
    _text(
        root,
        pad,
        44,
        "median of the repetitions, the line their min–max; from the tables on this page",
        fill=MUTED,
        font_size="12",
    )
    top = 64.0
    bottom = height - 40
    for tick in range(int(limit) + 1):
        x = left + tick * scale
        _line(
            root,
            x,
            top,
            x,
            bottom,
            stroke=INK if tick == 1 else GRID,
            stroke_width="1.2" if tick == 1 else "0.6",
        )
        _text(root, x, bottom + 16, f"{tick}×", fill=MUTED, font_size="11", text_anchor="middle")
    y = top + 6
    for title, rows in sections:
        _text(root, pad, y + 13, title, font_weight="600")
        y += row_h * 1.2
        group = ET.SubElement(root, "g", {"class": "ratios"})
        for label, ratio, low, high_ in rows:
            _text(group, left - 8, y + 13, label, font_size="12", text_anchor="end")
            colour = GREEN if ratio < 1 else BLUE
            bar = _rect(group, left, y + 3, ratio * scale, row_h - 6, fill=colour, rx="2")
            ET.SubElement(bar, "title").text = f"{label}: {ratio:g} ({low:g}–{high_:g})"
            _line(
                group,
                left + low * scale,
                y + row_h / 2,
                left + high_ * scale,
                y + row_h / 2,
                stroke=INK,
                stroke_width="1.2",
            )
            _text(
                group,
                left + max(ratio, high_) * scale + 5,
                y + 13,
                f"{ratio:.2f}",
                font_size="11",
                fill=MUTED,
            )
            y += row_h
        y += row_h * 0.4
    return _serialize(root)


# --- the demo batch's timeline -------------------------------------------------------


def demo_timeline() -> str:
    """The demo batch's timeline: ``toolnursery demo --log``, drawn by ``draw_timeline``.

    Shown in ``docs/tutorial.md`` (its "A record of what ran" step).
    """
    import subprocess
    import sys
    import tempfile

    from toolnursery.timeline import draw_timeline

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "demo.jsonl"
        command = [sys.executable, "-m", "toolnursery", "demo", "--log", str(log)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        return str(draw_timeline(log, title="toolnursery demo"))


PICTURES: dict[str, Callable[[], str]] = {
    "phases": phases,
    "keys-schedule": keys_schedule,
    "benchmark-ratios": benchmark_ratios,
    "demo-timeline": demo_timeline,
}
"""The pictures the docs build writes, as ``images/generated/<name>.svg``."""
