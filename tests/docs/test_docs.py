"""The user docs and the packaging metadata keep their promises.

The docs' examples themselves run through Sybil (see conftest.py at the repository root
and docs/contributing.md); this file checks what a reader or the package index sees.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import toolnursery

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

GENERATED = ROOT / "docs" / "images" / "generated"
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)[^)]*\)|<(https?://[^>]+)>")


def _links(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in MARKDOWN_LINK.finditer(text)]


def _public_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(toolnursery.__path__, "toolnursery.")]
    public = [n for n in names if not any(p.startswith("_") for p in n.split(".")[1:])]
    return ["toolnursery", *sorted(public)]


def _ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_version_is_the_package_metadata_and_the_changelog() -> None:
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/toolnursery/__init__.py"
    assert toolnursery.__version__ == metadata.version("toolnursery")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    assert released[0][0] == toolnursery.__version__  # the newest release section
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{released[0][0]}]")


def test_import_does_not_read_the_package_metadata() -> None:
    """``__version__`` is a constant: importing the package does not load
    importlib.metadata (a fifth of the import's time)."""
    code = "import sys, toolnursery; print('importlib.metadata' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "False"


def test_license_file_matches_the_declared_license() -> None:
    assert PYPROJECT["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c)" in text
    assert "toolnursery contributors" in text


@pytest.mark.parametrize("path", USER_DOCS, ids=_ids)
def test_user_docs_cite_no_behaviour_ids(path: Path) -> None:
    """Behaviour ids are for the tests; a reader cannot look them up."""
    found = re.findall(r"\bB\d{3}\b", path.read_text(encoding="utf-8"))
    assert found == []


@pytest.mark.parametrize("path", USER_DOCS, ids=_ids)
def test_user_docs_link_only_inside_the_repository(path: Path) -> None:
    external = [
        link for link in _links(path.read_text(encoding="utf-8")) if re.match(r"\w+:", link)
    ]
    assert external == []


def test_docs_links_resolve_to_files_that_ship() -> None:
    """Relative links in docs/ name pages of the site (mkdocs --strict checks anchors)."""
    broken = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for link in _links(path.read_text(encoding="utf-8")):
            target = (path.parent / link.split("#", 1)[0]).resolve()
            if target.is_relative_to(GENERATED):
                continue  # drawn by the docs build: tests/docs/test_pictures.py
            if not (target.is_relative_to(ROOT / "docs") and target.exists()):
                broken.append((_ids(path), link))
    assert broken == []


def test_readme_links_work_on_the_package_index() -> None:
    """The index page shows README.md alone: a relative link there leads nowhere."""
    links = _links((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [link for link in links if not link.startswith("#")] == []


def test_every_docs_page_is_in_the_site_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", config, flags=re.M))
    pages = {
        str(p.relative_to(ROOT / "docs"))
        for p in (ROOT / "docs").rglob("*.md")
        if not p.name.startswith("_")  # a fragment (_part_*.md) waiting to join a page
    }
    assert sorted(pages - nav) == []
    assert sorted(nav - pages) == []


def test_the_site_builds_strictly_and_documents_every_public_name(tmp_path: Path) -> None:
    """The API reference is generated: every ``__all__`` name gets its own entry."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    pages = {
        page.parent.relative_to(site): page.read_text(encoding="utf-8")
        for page in sorted((site / "reference").rglob("index.html"))
    }
    anchors = {a for html in pages.values() for a in re.findall(r'id="(toolnursery[\w.]*)"', html)}
    # docs_sphinx_roles.py turns the docstrings' Sphinx roles into code spans.
    roles = [
        p
        for p, html in pages.items()
        if re.search(r":(?:func|class|meth|data|attr|exc):<code>", html)
    ]
    assert roles == []
    missing = []
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        missing += [
            f"{module_name}.{n}" for n in module.__all__ if f"{module_name}.{n}" not in anchors
        ]
    assert missing == []
