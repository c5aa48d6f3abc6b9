"""A small sample project to point the example tools at (the demo's sandbox)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["fill_sandbox"]


_SANDBOX_FILES: Final = {
    "README.md": "# Demo project\n\nA tiny project for the toolnursery demo.\n"
    "TODO: write the real README.\n",
    "src/app.py": 'def main() -> None:\n    print("hello")  # TODO: greet by name\n',
    "src/util.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
    "notes/ideas.md": "- parallel reads\n- exclusive writes\n",
}


def fill_sandbox(root: str | os.PathLike[str]) -> list[str]:
    """Write a small sample project under ``root`` (the demo's sandbox).

    Returns:
        The relative paths written, sorted.
    """
    base = Path(root)
    for name, text in _SANDBOX_FILES.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(_SANDBOX_FILES)
