"""The API reference's layout (docs/_gen/reference.py): a page per public module, the
main names first, type aliases and constants last, every name once."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import toolnursery

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs/_gen/reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load()


def _public_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(toolnursery.__path__, "toolnursery.")]
    return [
        "toolnursery",
        *(n for n in names if not any(p.startswith("_") for p in n.split(".")[1:])),
    ]


def _markers() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in sorted(REFERENCE.glob("*.md")):
        for module in reference.MARKER.findall(page.read_text(encoding="utf-8")):
            found.setdefault(module, []).append(page.name)
    return found


def test_every_public_module_has_one_reference_page() -> None:
    # A new public module (a framework bridge, say) needs a page of its own: see the
    # comment under "API reference" in mkdocs.yml.
    markers = _markers()
    assert sorted(markers) == sorted(_public_modules())
    assert {m: pages for m, pages in markers.items() if len(pages) > 1} == {}


def test_no_page_is_listed_twice_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", config, flags=re.M)
    assert len(nav) == len(set(nav))
    titles = re.findall(r"^\s*-\s+(toolnursery[\w.]*):", config, flags=re.M)
    assert sorted(titles) == sorted(_public_modules())


@pytest.mark.parametrize("module_name", _public_modules())
def test_every_name_is_listed_once_aliases_and_constants_last(module_name: str) -> None:
    module = importlib.import_module(module_name)
    sections = reference.sections(module_name)
    listed = [name for _, names in sections for name in names]
    assert sorted(listed) == sorted(module.__all__)
    assert len(listed) == len(set(listed))
    titles = [title for title, _ in sections]
    tail = [t for t in titles if t in ("Type aliases", "Constants")]
    assert titles[len(titles) - len(tail) :] == tail
    for title, names in sections:
        if title in ("Type aliases", "Constants"):
            assert all(reference.kind(getattr(module, n)) == title for n in names)


def test_the_package_page_opens_with_the_registry_and_the_batch() -> None:
    sections = reference.sections("toolnursery")
    first = [name for _, names in sections[:3] for name in names]
    for name in ("ToolRegistry", "tool", "define_tool", "run_tool_calls", "open_tool_batch"):
        assert name in first
    assert first[0] == "ToolRegistry"
    assert first.index("run_tool_calls") < first.index("ToolResult")
    titles = [title for title, _ in sections]
    assert titles[-2:] == ["Type aliases", "Constants"]
    kinds = dict(sections)
    assert "TOOL_TIMEOUT" in kinds["Constants"]
    assert "EXCLUSIVE" in kinds["Constants"]
    assert "ExecuteWrapper" in kinds["Type aliases"]
    assert "ToolnurseryError" in kinds["Errors"]


def test_the_marker_becomes_a_heading_per_section_and_an_entry_per_name() -> None:
    page = "# t\n\n<!-- names: toolnursery.examples -->\n\nafter\n"
    expanded = reference.expand(page)
    assert "<!-- names:" not in expanded
    assert expanded.startswith("# t\n")
    assert expanded.endswith("\nafter\n")
    entries = re.findall(r"^::: (toolnursery\.examples\.\w+)$", expanded, flags=re.M)
    assert sorted(entries) == sorted(
        f"toolnursery.examples.{n}" for n in toolnursery.examples.__all__
    )
    assert "## The example tools" in expanded
    assert reference.expand("no marker here") == "no marker here"


def test_a_main_name_the_module_does_not_export_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(reference.MAIN, "toolnursery.examples", (("Main", ("no_such_name",)),))
    with pytest.raises(reference.ReferenceLayoutError, match="no_such_name"):
        reference.sections("toolnursery.examples")
