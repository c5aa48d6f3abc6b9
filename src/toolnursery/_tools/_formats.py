"""String formats: the one ``format`` checker the DSL and raw JSON Schema tools share.

Both validators ask :func:`format_checker` whether a string has a ``format``, so a
value passes one exactly when it passes the other. The checker is ``jsonschema``'s
:class:`~jsonschema.FormatChecker` with every Draft 2020-12 format it knows: ``date``,
``email``, ``uuid``, ``ipv4``, ``ipv6``, ``hostname``, ``regex``, …; ``date-time`` and
``time`` are checked by ``rfc3339-validator`` as RFC 3339 has them (a time zone offset is
required) and ``uri`` by ``rfc3986-validator`` as RFC 3986 has it (absolute), both
maintained packages toolnursery depends on.

They are imported on first use, not when toolnursery is.
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
    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]
    from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

    # Imported by name: jsonschema ships no type information (its stubs are separate).
    jsonschema: Any = importlib.import_module("jsonschema")
    # Draft 2020-12's own formats: the all-drafts default has draft 3's "time" (no offset).
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    ours: dict[str, Callable[[str], bool]] = {
        "date-time": validate_rfc3339,
        "time": lambda value: validate_rfc3339("1970-01-01T" + value),
        "uri": lambda value: validate_rfc3986(value, rule="URI"),
    }
    for name, check in ours.items():
        # Formats constrain strings only: any other value passes.
        checker.checks(name)(lambda value, check=check: not isinstance(value, str) or check(value))
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
