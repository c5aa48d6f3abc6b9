"""The mkdocs hook that draws the site's pictures and lays out the API reference.

``hooks:`` in mkdocs.yml runs it. Each picture of ``pictures.PICTURES`` is drawn at
every build and served as ``images/generated/<name>.svg``; pages embed it with an
ordinary image link. A reference page's ``<!-- names: MODULE -->`` line becomes the
module's entries (``reference.expand``). Nothing is written into ``docs/``.
"""

from __future__ import annotations

from typing import Any

import pictures
import reference
from mkdocs.structure.files import File, Files

FOLDER = "images/generated"


def on_files(files: Files, config: Any) -> Files:
    """Draw every picture and add it to the site's files."""
    for name, draw in pictures.PICTURES.items():
        files.append(File.generated(config, f"{FOLDER}/{name}.svg", content=draw()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Lay out a reference page's names (a page without the marker is unchanged)."""
    return reference.expand(markdown)
