"""Every install line a reader can copy works as written from a checkout.

toolnursery is installed from a checkout of its repository (it is not on the package
index), so ``pip install 'toolnursery[ray]'`` answers "No matching distribution": a page
says ``pip install -e '.[ray]'``, naming extras that pyproject.toml declares. The pages
checked are docs/ and the README, and the docstrings of the public modules (the API
reference renders them).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shlex
import tomllib
from pathlib import Path

import pytest

import toolnursery

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
)
PIP_INSTALL = re.compile(r"pip install((?:\s+(?:'[^']*'|\"[^\"]*\"|[^\s`'\"()&#;|]+))+)")
OTHER_PACKAGES = {"build", "rich"}  # from the index, by their own names
NOT_ON_THE_INDEX = re.compile(r"(?<![\w/.-])toolnursery\[")
WHEEL = re.compile(r"^\$\(echo dist/toolnursery-\*\.whl\)(\[[^\]]*\])?$")


def _public_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(toolnursery.__path__, "toolnursery.")]
    public = [n for n in names if not any(p.startswith("_") for p in n.split(".")[1:])]
    return ["toolnursery", *sorted(public)]


def _texts() -> list[tuple[str, str]]:
    texts = [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in PAGES]
    for name in _public_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an extra not installed: its page is built where it is
            continue
        texts.append((f"{name} (docstring)", module.__doc__ or ""))
    return texts


def problems(text: str) -> list[str]:
    """What is wrong with the install lines of ``text`` (nothing: an empty list)."""
    found = []
    for line in text.splitlines():
        for match in PIP_INSTALL.finditer(line):
            command = f"pip install{match[1]}"
            for word in shlex.split(match[1]):
                extras = re.fullmatch(r"\.(?:\[([^\]]*)\])?", word)
                wheel = WHEEL.fullmatch(word)
                if word in ("-e", "--editable") or word in OTHER_PACKAGES:
                    continue
                if extras is None and wheel is None:
                    found.append(f"{command!r}: {word!r} is not installable from a checkout")
                    continue
                named = (extras or wheel)[1] or ""  # type: ignore[index]
                unknown = [e for e in named.strip("[]").split(",") if e and e not in EXTRAS]
                if unknown:
                    found.append(f"{command!r}: no extra {', '.join(unknown)} in pyproject.toml")
        if NOT_ON_THE_INDEX.search(line):
            found.append(f"{line.strip()!r}: toolnursery[...] is not on the package index")
    return found


@pytest.mark.parametrize(("where", "text"), _texts(), ids=[where for where, _ in _texts()])
def test_every_install_line_works_from_a_checkout(where: str, text: str) -> None:
    assert problems(text) == [], where


def test_the_check_catches_a_line_that_would_not_install() -> None:
    assert problems("Install it: `pip install 'toolnursery[ray]'`.") == [
        "\"pip install 'toolnursery[ray]'\": 'toolnursery[ray]' is not installable from a checkout",
        "\"Install it: `pip install 'toolnursery[ray]'`.\": toolnursery[...] is not on the "
        "package index",
    ]
    assert problems("pip install -e '.[cli,nope]'") == [
        "\"pip install -e '.[cli,nope]'\": no extra nope in pyproject.toml"
    ]
    assert problems("`'toolnursery[anthropic]'`") != []
    assert problems("pip install -e '.[cli,openai]' && toolnursery demo") == []
    assert problems('pip install "$(echo dist/toolnursery-*.whl)[cli]"') == []
