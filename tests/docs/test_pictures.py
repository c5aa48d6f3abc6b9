"""The docs' generated pictures (docs/_gen/pictures.py): drawn from the code, valid SVG.

The docs build draws them (docs/_gen/hook.py); these tests draw them too, so a picture
that no longer parses, or no longer says what the code does, fails the default run.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from toolnursery import ToolRegistry
from toolnursery._pipeline._compiler import Phase

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_pictures", ROOT / "docs/_gen/pictures.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pictures = _load()


@pytest.fixture(scope="module")
def drawn() -> dict[str, ET.Element]:
    return {name: ET.fromstring(draw()) for name, draw in pictures.PICTURES.items()}


def test_at_least_three_pictures_are_drawn() -> None:
    assert {"phases", "keys-schedule", "benchmark-ratios"} <= set(pictures.PICTURES)


@pytest.mark.timeout(60)
def test_every_picture_is_an_svg_document_with_a_title(drawn: dict[str, ET.Element]) -> None:
    for name, root in drawn.items():
        assert root.tag == f"{SVG}svg", name
        width, height = float(root.attrib["width"]), float(root.attrib["height"])
        assert width > 100, name
        assert height > 100, name
        assert (root.findtext(f"{SVG}title") or "").strip(), name
        # Nothing is drawn outside the picture's box.
        for rect in root.iter(f"{SVG}rect"):
            if "%" in rect.get("width", "") + rect.get("height", ""):
                continue  # a background sized to the picture
            x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
            assert x + float(rect.attrib["width"]) <= width + 0.5, name
            assert y + float(rect.attrib["height"]) <= height + 0.5, name


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_every_generated_picture_is_embedded_and_every_embedded_one_is_generated() -> None:
    linked: set[str] = set()
    for page in (ROOT / "docs").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        linked |= set(re.findall(r"\(images/generated/([\w-]+)\.svg\)", text))
    assert linked == set(pictures.PICTURES)


def test_the_phases_picture_shows_every_phase_in_run_order(
    drawn: dict[str, ET.Element],
) -> None:
    table = pictures.phase_table()
    assert [row[1] for row in table] == ["PRE", "GUARD", "EXECUTE", "POST", "RESULT"]
    assert {row[1] for row in table} == set(Phase.__members__)
    for _stage, _name, _comment, method in table:
        assert callable(getattr(ToolRegistry, method))
    texts = _texts(drawn["phases"])
    names = [t for t in texts if t in {p.name.lower() for p in Phase}]
    assert names == ["pre", "guard", "execute", "post", "result"]
    assert "registry.on_pre_execute" in texts
    assert "tool body" in texts


def test_a_phase_the_picture_does_not_place_fails_the_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pictures, "STAGES", pictures.STAGES[:2])
    with pytest.raises(pictures.PictureError, match=r"STAGES lists .* Phase has"):
        pictures.phases()


@pytest.mark.timeout(60)
def test_the_keys_schedule_is_the_schedulers_and_keeps_its_promises() -> None:
    schedules = pictures.keys_schedules()
    assert schedules == pictures.keys_schedules()  # a mock clock: the same every build
    bench = pictures._load_bench_keys()
    paths = {c.id: c.arguments for c in bench.mixed_calls()}
    for label, rows in schedules.items():
        assert len(rows) == bench.MIXED_CALLS
        edges = sorted(t for *_, start, end in rows for t in (start, end))
        for moment in edges:  # the default cap: at most 10 bodies at once
            assert sum(start <= moment < end for *_, start, end in rows) <= 10, label
        for a, b in itertools.combinations(rows, 2):
            overlap = a[2] < b[3] and b[2] < a[3]
            if overlap and "write" in (a[1], b[1]):
                assert label == "keys", (label, a, b)  # a barrier runs alone
                assert paths[a[0]] != paths[b[0]], (a, b)  # a write runs alone on its key
    finish = {label: max(end for *_, end in rows) for label, rows in schedules.items()}
    assert finish["keys"] * 3 < finish["barriers"]
    assert finish["keys"] == pytest.approx(bench.MIXED_CALLS / 10 * bench.MIXED_SLEEP * 1e3)


def test_the_keys_picture_draws_a_bar_per_call_and_schedule(
    drawn: dict[str, ET.Element],
) -> None:
    groups = {g.attrib["class"]: g for g in drawn["keys-schedule"].iter(f"{SVG}g")}
    for label in ("barriers", "keys"):
        bars = groups[f"schedule schedule-{label}"].findall(f"{SVG}rect")
        assert len(bars) == 100


def test_the_ratio_chart_has_a_bar_per_quoted_row(drawn: dict[str, ET.Element]) -> None:
    page = (ROOT / "docs/benchmarks.md").read_text(encoding="utf-8")
    sections = pictures.benchmark_rows(page)
    rows = [row for _, section in sections for row in section]
    assert ("no hooks", 1.47, 1.44, 1.81) in rows  # one call through the pipeline
    assert any(label == "@tool, awaiting body" for label, *_ in rows)  # the peers
    bars = [r for g in drawn["benchmark-ratios"].iter(f"{SVG}g") for r in g.iter(f"{SVG}rect")]
    assert len(bars) == len(rows)
    texts = _texts(drawn["benchmark-ratios"])
    assert [t for t in texts if re.fullmatch(r"\d+\.\d\d", t)] == [f"{r[1]:.2f}" for r in rows]


def test_the_ratio_chart_reads_the_rows_of_a_table() -> None:
    page = """
### One call: `python benchmarks/bench_pipeline.py`

```text
case                      µs/call           bare µs/call                ratio
----------------------------------------------------------------------------
no hooks       13.78 (13.69–17.38)       9.54 (9.29–9.58)     1.47 (1.44–1.81)
```

### A batch: `python benchmarks/bench_scheduler.py`

```text
wide one     12.34 (12.08–12.50)       8.02 (7.81–8.31)     1.55 (1.48–1.56)
no ratio     12.34 (12.08–12.50)
```

### Peers: `python benchmarks/bench_peers.py`

```text
@tool, awaiting body   16.14 (16.08–17.03)   8.41 (8.30–8.52)   1.95x (1.91–2.00x)
```
"""
    sections = pictures.benchmark_rows(page)
    assert [rows for _, rows in sections] == [
        [("no hooks", 1.47, 1.44, 1.81)],
        [("wide one", 1.55, 1.48, 1.56)],
        [("@tool, awaiting body", 1.95, 1.91, 2.0)],
    ]
    assert ET.fromstring(pictures.benchmark_ratios(page)).tag == f"{SVG}svg"


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("no sections at all", "no section for benchmarks/bench_pipeline.py"),
        (
            "### x: `python benchmarks/bench_pipeline.py`\n\n```text\nnothing here\n```\n",
            "no ratio rows under benchmarks/bench_pipeline.py",
        ),
    ],
)
def test_a_benchmarks_page_without_the_tables_fails_the_build(page: str, message: str) -> None:
    with pytest.raises(pictures.PictureError, match=message):
        pictures.benchmark_rows(page)


def test_the_demo_timeline_draws_every_call_of_the_demo() -> None:
    svg = pictures.demo_timeline()
    root = ET.fromstring(svg)
    text = "".join(root.itertext())
    for n in range(1, 12):
        assert f"c{n}" in text, n
