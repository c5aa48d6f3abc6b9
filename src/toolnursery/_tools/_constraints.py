"""Value constraints: JSON Schema's bounds, lengths, patterns, formats and item rules.

One table says which keyword applies to which JSON type and how a violation reads;
:func:`compile_checks` turns a property's keywords into checks for a compiled
:class:`~toolnursery._tools._validator.Node` (the DSL's and a Struct's), and
:func:`rule` gives the violation text the raw JSON Schema validator reuses, so all
three speak alike: ``"count" must be >= 1``, ``"tags" must have at most 3 items``.

The readings are JSON Schema's (draft 2020-12, as ``jsonschema`` implements it):
lengths count code points, ``pattern`` is ``re.search`` (unanchored), ``multipleOf``
divides exactly for integers and tests an integral quotient for floats, ``uniqueItems``
compares JSON values (``1 == 1.0``, ``1 != True``), ``format`` uses the shared checker
of :mod:`._formats`. A constraint applies only to values of its type; the type test
runs first.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final, TypeAlias

__all__ = [
    "APPLIES_TO",
    "Check",
    "ConstraintError",
    "compile_checks",
    "json_constraints",
    "rule",
    "unique",
]

Check: TypeAlias = "tuple[Callable[[Any], bool], str]"
"""``(passes, message)``: ``passes(value)`` is false on a violation, which reads
``"<path>"`` followed by ``message``."""

_NUMERIC: Final = frozenset(("number", "integer"))
APPLIES_TO: Final[Mapping[str, frozenset[str]]] = {
    "minimum": _NUMERIC,
    "exclusiveMinimum": _NUMERIC,
    "maximum": _NUMERIC,
    "exclusiveMaximum": _NUMERIC,
    "multipleOf": _NUMERIC,
    "minLength": frozenset(("string",)),
    "maxLength": frozenset(("string",)),
    "pattern": frozenset(("string",)),
    "format": frozenset(("string",)),
    "minItems": frozenset(("array",)),
    "maxItems": frozenset(("array",)),
    "uniqueItems": frozenset(("array",)),
    "minProperties": frozenset(("object",)),
    "maxProperties": frozenset(("object",)),
}
"""Every constraint keyword, in the order checks run and the schema lists them."""


class ConstraintError(ValueError):
    """Raised when a constraint keyword's value is unusable; the message says why."""


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def rule(keyword: str, value: Any) -> str:
    """The violation text of ``keyword`` with ``value``, after the quoted path."""
    if keyword == "minimum":
        return f" must be >= {_compact(value)}"
    if keyword == "exclusiveMinimum":
        return f" must be > {_compact(value)}"
    if keyword == "maximum":
        return f" must be <= {_compact(value)}"
    if keyword == "exclusiveMaximum":
        return f" must be < {_compact(value)}"
    if keyword == "multipleOf":
        return f" must be a multiple of {_compact(value)}"
    if keyword == "minLength":
        return f" must be at least {_count(value, 'character')} long"
    if keyword == "maxLength":
        return f" must be at most {_count(value, 'character')} long"
    if keyword == "pattern":
        return f" must match the pattern {_compact(value)}"
    if keyword == "format":
        return f" must be a valid {_compact(value)}"
    if keyword == "minItems":
        return f" must have at least {_count(value, 'item')}"
    if keyword == "maxItems":
        return f" must have at most {_count(value, 'item')}"
    if keyword == "uniqueItems":
        return " must not contain duplicate items"
    if keyword == "minProperties":
        return f" must have at least {_count(value, 'property', 'properties')}"
    if keyword == "maxProperties":
        return f" must have at most {_count(value, 'property', 'properties')}"
    return f' must satisfy "{keyword}": {_compact(value)}'


def json_constraints(kind: object, prop: Mapping[str, Any]) -> dict[str, Any]:
    """The constraint keywords of ``prop`` that apply to ``kind``, as given, in order."""
    return {
        keyword: prop[keyword]
        for keyword, kinds in APPLIES_TO.items()
        if keyword in prop and kind in kinds
    }


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bound(keyword: str, value: object) -> float:
    if not _is_number(value) or not math.isfinite(value):  # type: ignore[arg-type]
        raise ConstraintError(f'"{keyword}" must be a finite number, got {_compact(value)}')
    return value  # type: ignore[return-value]


def _size(keyword: str, value: object) -> int:
    if not _is_number(value) or not float(value).is_integer() or value < 0:  # type: ignore[arg-type, operator]
        raise ConstraintError(f'"{keyword}" must be a non-negative integer, got {_compact(value)}')
    return int(value)  # type: ignore[call-overload, no-any-return]


def _multiple_of(divisor: float) -> Callable[[Any], bool]:
    if isinstance(divisor, float):

        def passes_float(value: Any) -> bool:
            try:
                quotient: float = value / divisor
                return int(quotient) == quotient
            except OverflowError:
                return (Fraction(value) / Fraction(divisor)).denominator == 1

        return passes_float

    def passes(value: Any) -> bool:
        return not value % divisor

    return passes


def _json_key(value: Any) -> object:
    """A hashable key equal for equal JSON values (``1`` and ``1.0``; not ``True``)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(_json_key(v) for v in value))
    if isinstance(value, dict):
        return ("o", frozenset((k, _json_key(v)) for k, v in value.items()))
    return ("?", id(value))


def unique(items: Any) -> bool:
    """Whether no two items of a JSON array are equal JSON values."""
    seen = {_json_key(item) for item in items}
    return len(seen) == len(items)


def _check(keyword: str, value: Any) -> Callable[[Any], bool] | None:
    """The test of one keyword, or ``None`` when it constrains nothing."""
    if keyword == "minimum":
        bound = _bound(keyword, value)
        return lambda v: v >= bound
    if keyword == "exclusiveMinimum":
        bound = _bound(keyword, value)
        return lambda v: v > bound
    if keyword == "maximum":
        bound = _bound(keyword, value)
        return lambda v: v <= bound
    if keyword == "exclusiveMaximum":
        bound = _bound(keyword, value)
        return lambda v: v < bound
    if keyword == "multipleOf":
        if _bound(keyword, value) <= 0:
            raise ConstraintError(f'"multipleOf" must be greater than 0, got {_compact(value)}')
        return _multiple_of(value)
    if keyword in ("minLength", "minItems", "minProperties"):
        size = _size(keyword, value)
        return lambda v: len(v) >= size
    if keyword in ("maxLength", "maxItems", "maxProperties"):
        size = _size(keyword, value)
        return lambda v: len(v) <= size
    if keyword == "pattern":
        if not isinstance(value, str):
            raise ConstraintError(f'"pattern" must be a string, got {_compact(value)}')
        try:
            search = re.compile(value).search
        except re.error as exc:
            raise ConstraintError(f'"pattern" is not a valid regular expression: {exc}') from None
        return lambda v: search(v) is not None
    if keyword == "format":
        return _format_check(value)
    if keyword == "uniqueItems":
        if type(value) is not bool:
            raise ConstraintError(f'"uniqueItems" must be a bool, got {_compact(value)}')
        return unique if value else None
    raise ConstraintError(f'"{keyword}" is not a constraint keyword')


def _format_check(value: object) -> Callable[[Any], bool]:
    from ._formats import KNOWN_FORMATS, format_test

    test = format_test(value) if isinstance(value, str) else None
    if test is None:
        known = ", ".join(KNOWN_FORMATS)
        raise ConstraintError(f"format {_compact(value)} cannot be checked (known: {known}, …)")
    return test


def compile_checks(kind: str, prop: Mapping[str, Any], *, strict: bool) -> tuple[Check, ...]:
    """The checks of the constraint keywords of ``prop`` that apply to ``kind``.

    Args:
        kind: the property's JSON type (``string``, ``number``, ``integer``, ``array``,
            ``object``; other kinds have no constraints here).
        prop: the property's keywords (others than constraints are ignored).
        strict: raise on a keyword that does not apply to ``kind`` or has an
            unusable value; otherwise such keywords are skipped.

    Raises:
        ConstraintError: (``strict`` only) the message names the keyword and why.
    """
    checks: list[Check] = []
    for keyword, kinds in APPLIES_TO.items():
        if keyword not in prop:
            continue
        value = prop[keyword]
        if kind not in kinds:
            if strict:
                where = " or ".join(sorted(kinds))
                raise ConstraintError(f'"{keyword}" applies only to {where} properties')
            continue
        try:
            passes = _check(keyword, value)
        except ConstraintError:
            if strict:
                raise
            continue
        if passes is not None:
            checks.append((passes, rule(keyword, value)))
    return tuple(checks)
