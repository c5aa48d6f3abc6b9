"""The mkdocs hook that adds the generated pictures to the site (``hooks:`` in mkdocs.yml).

Each picture of ``pictures.PICTURES`` is drawn at every build and served as
``images/generated/<name>.svg``; pages embed it with an ordinary image link. Nothing
is written into ``docs/``.
"""

from __future__ import annotations

from typing import Any

import pictures
from mkdocs.structure.files import File, Files

FOLDER = "images/generated"


def on_files(files: Files, config: Any) -> Files:
    """Draw every picture and add it to the site's files."""
    for name, draw in pictures.PICTURES.items():
        files.append(File.generated(config, f"{FOLDER}/{name}.svg", content=draw()))
    return files
