"""String formats: the one ``format`` checker the DSL and raw JSON Schema tools share.

Both validators ask :func:`format_checker` whether a string has a ``format``, so a
value passes one exactly when it passes the other. The checker is ``jsonschema``'s
:class:`~jsonschema.FormatChecker` with every Draft 2020-12 format it knows: ``date``,
``email``, ``uuid``, ``ipv4``, ``ipv6``, ``hostname``, ``regex``, …, and, through the
maintained format packages toolnursery depends on (``rfc3339-validator``,
``rfc3986-validator``), ``date-time`` and ``time`` as RFC 3339 has them (a time zone
offset is required) and ``uri`` as RFC 3986 has it (absolute).

``jsonschema`` is imported on first use, not when toolnursery is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any, Final

__all__ = ["KNOWN_FORMATS", "format_checker", "format_test"]

KNOWN_FORMATS: Final = ("date", "date-time", "time", "email", "uri", "uuid")
"""The formats toolnursery promises to check (the checker knows more)."""


@cache
def format_checker() -> Any:
    """The shared ``jsonschema.FormatChecker`` (Draft 2020-12's formats)."""
    # Imported by name: jsonschema ships no type information (its stubs are separate).
    jsonschema: Any = importlib.import_module("jsonschema")
    # Draft 2020-12's own formats: the all-drafts default has draft 3's "time" (no offset).
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    missing = [name for name in KNOWN_FORMATS if name not in checker.checkers]
    if missing:  # pragma: no cover - the format packages are dependencies
        raise ImportError(
            f"jsonschema cannot check the formats {missing}: install toolnursery's "
            "dependencies rfc3339-validator and rfc3986-validator"
        )
    return checker


def format_test(name: str) -> Callable[[object], bool] | None:
    """Return ``value -> bool`` for the format ``name``, or ``None`` if it is unknown."""
    checker = format_checker()
    if name not in checker.checkers:
        return None
    conforms = checker.conforms

    def test(value: object) -> bool:
        return bool(conforms(value, name))

    return test
