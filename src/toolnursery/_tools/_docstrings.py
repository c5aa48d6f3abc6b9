"""Docstrings → a tool's description and its parameters' descriptions.

Google, Sphinx (reST), NumPy and Epydoc styles are read by ``docstring_parser`` (the
style is detected per docstring), with or without a summary line. Only the summary and the free text after it become the
description; the sections (arguments, returns, raises, examples, …) never do.
"""

from __future__ import annotations

import inspect

import docstring_parser

__all__ = ["field_docs", "parse_docstring"]

_ARGUMENTS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})
_FIELDS = frozenset({*_ARGUMENTS, "attribute", "attr", "ivar", "var", "cvar"})


def parse_docstring(
    doc: str | None, kinds: frozenset[str] = _ARGUMENTS
) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-name descriptions.

    Args:
        doc: the docstring as written (``fn.__doc__``), in Google, Sphinx, NumPy or
            Epydoc style (indentation is normalized here).
        kinds: the entry kinds collected (``param``, ``attribute``, ``ivar``, …).

    Returns:
        ``(description, descriptions)``: the summary and the text after it up to the
        first section, and each wanted entry's text by name (``*args``/``**kw`` without
        the stars; its line breaks and blank lines kept, indentation removed).
    """
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    if not doc.split("\n", 1)[0].strip():
        # No summary line (``"""\n    Args: ..."""``): the blank first line, kept, makes
        # the Google parser read "Args:" as a section rather than as the summary. A
        # summary after it is read the same either way.
        text = "\n" + text
    parsed = docstring_parser.parse(text)
    found: dict[str, str] = {}
    for meta in parsed.meta:
        if not meta.args or meta.args[0] not in kinds or meta.description is None:
            continue
        name = meta.arg_name if isinstance(meta, docstring_parser.DocstringParam) else None
        name = (name if name is not None else meta.args[-1]).lstrip("*")
        found.setdefault(name, _lines(meta.description))
    return (parsed.description or "").strip(), found


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


def field_docs(cls: type) -> dict[str, str]:
    """The field descriptions in a class docstring (``Attributes:`` and the like)."""
    return parse_docstring(cls.__doc__, _FIELDS)[1]
