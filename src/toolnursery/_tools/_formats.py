"""String formats: the one ``format`` checker the DSL and raw JSON Schema tools share.

Both validators ask :func:`format_checker` whether a string has a ``format``, so a
value passes one exactly when it passes the other. The checker is ``jsonschema``'s
:class:`~jsonschema.FormatChecker` with every Draft 2020-12 format it knows (``date``,
``email``, ``uuid``, ``ipv4``, ``ipv6``, ``hostname``, ``regex``, …, and more when its
optional format packages are installed), completed by the ones it cannot check without
them:

- ``date-time`` — RFC 3339 ``2024-05-01T09:30:00Z`` (a time zone offset is required;
  ``T``/``t`` between date and time, a fraction of any length);
- ``time`` — RFC 3339 ``09:30:00+02:00`` (with an offset);
- ``uri`` — an absolute URI: a scheme, ``:``, then no whitespace, no characters RFC
  3986 excludes, and well-formed ``%XX`` escapes.

``jsonschema`` is imported on first use, not when toolnursery is.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from datetime import date, time
from functools import cache
from typing import Any, Final

__all__ = ["KNOWN_FORMATS", "format_checker", "format_test"]

KNOWN_FORMATS: Final = ("date", "date-time", "time", "email", "uri", "uuid")
"""The formats toolnursery promises to check (the checker knows more)."""

_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})", re.ASCII)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(?:[^\x00-\x20\x7f<>\"{}|\\^`%]|%[0-9A-Fa-f]{2})*")


def _offset_ok(offset: str) -> bool:
    if offset in ("Z", "z"):
        return True
    return int(offset[1:3]) <= 23 and int(offset[4:6]) <= 59


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True  # formats constrain strings only
    match = _DATE_TIME.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    try:
        date(year, month, day)
        time(hour, minute, second)
    except ValueError:
        return False
    return _offset_ok(match[8])


def _is_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _TIME.fullmatch(value)
    if match is None:
        return False
    try:
        time(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return False
    return _offset_ok(match[5])


def _is_uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return _URI.fullmatch(value) is not None


_OURS: Final = {"date-time": _is_date_time, "time": _is_time, "uri": _is_uri}


@cache
def format_checker() -> Any:
    """The shared ``jsonschema.FormatChecker``: its formats plus ``date-time``, ``time``, ``uri``."""
    # Imported by name: jsonschema ships no type information (its stubs are separate).
    jsonschema: Any = importlib.import_module("jsonschema")
    # Draft 2020-12's own formats: the all-drafts default has draft 3's "time" (no offset).
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    for name, check in _OURS.items():
        if name not in checker.checkers:
            checker.checks(name)(check)
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
