"""Finding a value inside text, robust to how identifiers are usually written.

A value and a text are compared as *token skeletons*: Unicode-normalized (NFKC),
case-folded, cut into runs of letters and digits. A value is found in a text when its
skeleton (its tokens joined) equals the joined skeleton of a run of whole tokens of the
text, so ``DE89 3704 0044`` finds ``de8937040044``, ``Evil@Example.COM`` finds
``evil@example.com`` and an address broken over two lines is still one address; a value
never matches half a token (``bob`` is not in ``bobby``). A second reading of every text
drops the words ``at`` and ``dot`` (``evil [at] example [dot] com``). Links drop their
scheme and a leading ``www``; phone numbers compare by their digits, the last ten when
one side has a country code the other lacks. Dates compare as dates, whatever their
format (``2026-05-03``, ``3 May 2026``, ``May 3rd``, ``03/05/2026``).

What this cannot see (a value spelled out in words, a computed or paraphrased value)
is simply not found: the caller treats it as unseen, never as trusted.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from .._core._provenance import Sink

__all__ = ["Date", "Haystack", "dates_in", "identifiers_in", "needles", "same_date", "skeleton"]

_TOKEN: Final = re.compile(r"[^\W_]+")
_FILLER: Final = frozenset({"at", "dot"})
_URL_PREFIX: Final = frozenset({"http", "https", "hxxp", "hxxps", "www", "mailto"})
_PHONE_VALUE: Final = re.compile(r"\A\s*(?:\+|00)?[\d\s().-]+\Z")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def skeleton(text: str) -> str:
    """``text``'s tokens joined: the form two spellings of one identifier share."""
    return "".join(_tokens(text))


def needles(value: str, kind: Sink) -> tuple[str, ...]:
    """The skeletons that stand for ``value`` when looking for it (``()``: nothing to find)."""
    tokens = _tokens(value)
    if kind is Sink.URL or (tokens and tokens[0] in _URL_PREFIX):
        while tokens and tokens[0] in _URL_PREFIX:
            tokens = tokens[1:]
    joined = "".join(tokens)
    if not joined:
        return ()
    found = [joined]
    digits = re.sub(r"\D", "", value)
    if 7 <= len(digits) <= 15 and _PHONE_VALUE.match(value):
        # a phone number: its digits, and its last ten (without a country code)
        found.append(digits)
        if len(digits) > 10:
            found.append(digits[-10:])
    return tuple(dict.fromkeys(found))


class Haystack:
    """A text prepared for :meth:`find`: its token skeleton and the token boundaries."""

    __slots__ = ("_readings", "text")

    def __init__(self, text: str, *, loose: bool = False) -> None:
        self.text = text
        tokens = _tokens(text)
        readings = [_reading(tokens)]
        if any(t in _FILLER for t in tokens):
            readings.append(_reading([t for t in tokens if t not in _FILLER]))
        if loose:
            digits = [t for t in tokens if t.isdigit()]
            if len(digits) > 1:
                readings.append(_reading(digits))  # digits split by words or letters
        self._readings = readings

    def find(self, needle: str) -> bool:
        """Whether ``needle`` (a skeleton) is a run of whole tokens of the text."""
        for joined, starts, ends in self._readings:
            position = joined.find(needle)
            while position >= 0:
                if position in starts and position + len(needle) in ends:
                    return True
                position = joined.find(needle, position + 1)
        return False


def _reading(tokens: list[str]) -> tuple[str, frozenset[int], frozenset[int]]:
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for token in tokens:
        starts.append(position)
        position += len(token)
        ends.append(position)
    return "".join(tokens), frozenset(starts), frozenset(ends)


# -- identifiers inside a body of text -------------------------------------------------

_EMAIL: Final = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL: Final = re.compile(
    r"(?:(?:https?|hxxps?)://|www\.)[^\s<>\"')\]]+"
    r"|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|co|ai|app|dev|info|biz|xyz|me|us|uk|de"
    r"|fr|eu|ru|cn|ly|gl|to|sh|site|online|shop|link|click)\b(?:/[^\s<>\"')\]]*)?",
    re.IGNORECASE,
)
_IBAN: Final = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,30}\b")
_PHONE: Final = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d\b")


def identifiers_in(text: str) -> list[tuple[str, Sink]]:
    """The identifiers a body of text holds: emails, account numbers and phone numbers
    (as parties), links (as URLs), in order of appearance."""
    found: list[tuple[int, str, Sink]] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in ((_EMAIL, Sink.PARTY), (_URL, Sink.URL), (_IBAN, Sink.PARTY)):
        for match in pattern.finditer(text):
            span = match.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            taken.append(span)
            found.append((span[0], match.group().rstrip(".,;:!?"), kind))
    for match in _PHONE.finditer(text):
        span = match.span()
        if any(a < span[1] and span[0] < b for a, b in taken):
            continue
        if sum(c.isdigit() for c in match.group()) >= 7 and not _is_date(match.group()):
            taken.append(span)
            found.append((span[0], match.group(), Sink.PARTY))
    found.sort()
    return [(value, kind) for _, value, kind in found]


# -- dates ------------------------------------------------------------------------------

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_MONTH: Final = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY: Final = r"(\d{1,2})(?:st|nd|rd|th)?"
_ISO: Final = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_NUMERIC: Final = re.compile(r"\b(\d{1,2})[/.](\d{1,2})(?:[/.](\d{4}|\d{2}))?\b")
_MONTH_DAY: Final = re.compile(_MONTH + r"\s+" + _DAY + r"\b(?:,?\s+(\d{4}))?", re.IGNORECASE)
_DAY_MONTH: Final = re.compile(
    r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+(\d{4}))?", re.IGNORECASE
)

Date = tuple[int | None, int, int]
"""``(year or None, month, day)``."""


def _is_date(text: str) -> bool:
    return bool(_ISO.search(text) or _NUMERIC.fullmatch(text.strip()))


def _valid(year: int | None, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31 and (year is None or 1900 <= year <= 2200)


def dates_in(text: str) -> set[Date]:
    """Every date ``text`` writes, in the usual formats (both readings of ``03/05``)."""
    found: set[Date] = set()
    for match in _ISO.finditer(text):
        full, month, day = (int(g) for g in match.groups())
        if _valid(full, month, day):
            found.add((full, month, day))
    for match in _NUMERIC.finditer(text):
        first, second, year_text = match.groups()
        year: int | None = None if year_text is None else int(year_text)
        if year is not None and len(year_text) == 2:
            year += 2000
        for month, day in ((int(first), int(second)), (int(second), int(first))):
            if _valid(year, month, day):
                found.add((year, month, day))
    for match in _MONTH_DAY.finditer(text):
        month_name, day_text, year_text = match.groups()
        year = int(year_text) if year_text else None
        if _valid(year, _MONTHS[month_name.casefold()], int(day_text)):
            found.add((year, _MONTHS[month_name.casefold()], int(day_text)))
    for match in _DAY_MONTH.finditer(text):
        day_text, month_name, year_text = match.groups()
        year = int(year_text) if year_text else None
        if _valid(year, _MONTHS[month_name.casefold()], int(day_text)):
            found.add((year, _MONTHS[month_name.casefold()], int(day_text)))
    return found


def same_date(value: set[Date], seen: set[Date]) -> bool:
    """Whether a date of ``value`` is one of ``seen`` (a date written without its year
    matches that day of any year)."""
    for year, month, day in value:
        for seen_year, seen_month, seen_day in seen:
            if (month, day) == (seen_month, seen_day) and (
                year is None or seen_year is None or year == seen_year
            ):
                return True
    return False
