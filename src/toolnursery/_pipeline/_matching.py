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

import bisect
import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Final

from .._core._provenance import Sink

__all__ = [
    "Date",
    "Haystack",
    "dates_in",
    "fold",
    "identifiers_in",
    "is_address",
    "needles",
    "plain_address",
    "prepared",
    "same_date",
    "same_identifier",
    "skeleton",
    "skeletons",
    "strict",
]

_NON_WORD: Final = re.compile(r"[\W_]+")
_URL_HEAD: Final = re.compile(r"(?:(?:https?|hxxps?|mailto)\b[\W_]*)?(?:www[\W_]+)?")


def fold(text: str) -> str:
    """``text`` Unicode-normalized (NFKC) and case-folded."""
    if text.isascii():  # the usual case: ASCII's case-folding is lower(), which is faster
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


_normal = fold


def skeleton(text: str) -> str:
    """``text``'s tokens joined: the form two spellings of one identifier share."""
    return _NON_WORD.sub("", _normal(text))


def needles(value: str, kind: Sink) -> tuple[str, ...]:
    """The skeletons that stand for ``value`` when looking for it (``()``: nothing to find).

    Links (and any value written with a scheme or a leading ``www``) drop those; a phone
    number also stands for its last ten digits and, written with a country code, for
    its national forms (``+44 20 7946 0012``: ``020 7946 0012``). What a needle finds is
    then compared by :func:`same_identifier`.
    """
    text = _normal(value).strip()
    head = _URL_HEAD.match(text)
    if head is not None and head.end() < len(text):
        text = text[head.end() :]
    joined = _NON_WORD.sub("", text)
    if not joined:
        return ()
    if joined.isdigit():
        return _phone_needles(text, joined)
    return (joined,)


def _phone_needles(text: str, joined: str) -> tuple[str, ...]:
    found = [joined]
    if 10 < len(joined) <= 15:
        found.append(joined[-10:])
    if 8 <= len(joined) <= 15 and text.startswith(("+", "00")):
        digits = joined[2:] if text.startswith("00") else joined
        found += ["0" + digits[k:] for k in (1, 2, 3)]  # a country code of 1-3 digits
    return tuple(found)


@functools.lru_cache(maxsize=8192)
def prepared(value: str, kind: Sink) -> tuple[tuple[str, ...], str, bool]:
    """What looking ``value`` up needs, worked out once per value: its needles
    (:func:`needles`), its case-folded form (a record field's key) and whether it is
    written as an address (:func:`is_address`)."""
    return needles(value, kind), value.casefold(), _ADDRESS.search(fold(value)) is not None


def skeletons(texts: Iterable[str]) -> dict[str, str]:
    """``{needle: text}`` for ``texts``: each text's needles (:func:`needles`), in bulk."""
    found: dict[str, str] = {}
    plain: list[str] = []
    for text in texts:
        if text.isascii() and not _URL_HEAD.match(text).end():  # type: ignore[union-attr]
            plain.append(text)
        else:
            for needle in needles(text, Sink.PARTY):
                found.setdefault(needle, text)
    if not plain:  # ("".split() is one empty text, not none)
        return found
    joined = _NON_WORD_KEPT.sub("", _APART.join(t.replace(_APART, " ") for t in plain).casefold())
    for needle, text in zip(joined.split(_APART), plain, strict=True):
        if needle:
            if needle.isdigit():
                for each in _phone_needles(text.strip(), needle):
                    found.setdefault(each, text)
            else:
                found.setdefault(needle, text)
    return found


_ADDRESS: Final = re.compile(r"@|://|\Awww\.|\.[a-z]{2,}(?:/|\Z)|[\[(]\s*(?:at|dot)\s*[\])]")
_SAID_AT: Final = re.compile(r"\s*[\[({<]\s*at\s*[\])}>]\s*|\s+at\s+")
_SAID_DOT: Final = re.compile(r"\s*[\[({<]\s*dot\s*[\])}>]\s*|\s+dot\s+")
_NOT_ADDRESS: Final = re.compile(r"[^\w@.+\-/:?=&#%~]+")
_PHONE_CHARS: Final = frozenset("0123456789+()-. ")  # what a written phone number holds
_ADDRESS_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyz0123456789@.+-/:?=&#%~_"
)  # what an address spelled without spaces is made of (the text is case-folded)


@functools.lru_cache(maxsize=4096)
def strict(value: str) -> str:
    """The form in which two spellings of one identifier are *equal*, for trusting it.

    Emails and links keep their punctuation (``alice@blue-bird.io`` is not
    ``alice@bluebird.io``) but drop spaces, a scheme, a leading ``www``, a trailing
    slash, and read ``[at]``/``[dot]`` as ``@``/``.``; anything else (account and phone
    numbers, names) is its skeleton.
    """
    text = _normal(value).strip()
    if not _ADDRESS.search(text):
        return _NON_WORD.sub("", text)
    text = _NOT_ADDRESS.sub("", _SAID_DOT.sub(".", _SAID_AT.sub("@", text)))
    head = _URL_HEAD.match(text)
    if head is not None and head.end() < len(text):
        text = text[head.end() :]
    return text.rstrip("/.")


_NAMED: Final = re.compile(r"[^<>@]*<\s*([^<>\s@]+@[^<>\s@]+)\s*>\s*")


def plain_address(value: str) -> str:
    """``value`` without a display name: ``Alice Chen <alice@x.io>`` is ``alice@x.io``
    (a name holding ``@`` is not a display name: the value is kept whole)."""
    if "<" in value:
        named = _NAMED.fullmatch(value)
        if named is not None:
            return named.group(1)
    return value


def is_address(value: str) -> bool:
    """Whether ``value`` is written as an email or a link (its punctuation counts)."""
    return _ADDRESS.search(_normal(value)) is not None


def same_identifier(value: str, seen: str) -> bool:
    """Whether ``seen`` writes the identifier ``value`` is, by :func:`strict` forms.

    Numbers compare as phone numbers: two written with a country code (``+`` or ``00``)
    are one when their digits are (a trunk ``(0)`` after the code aside); a number
    written without one is the same as one written with a code of one to three digits
    followed by its digits (its leading trunk ``0`` aside): ``020 7946 0012`` is
    ``+44 20 7946 0012`` and ``(555) 123-4567`` is ``+1 555 123 4567``, but
    ``+1 207 946 0012`` is not ``+44 20 7946 0012``.
    """
    a, b = strict(value), strict(seen)
    if a == b:
        return bool(a)
    if not (a.isdigit() and b.isdigit()):
        return False
    coded_a, forms_a = _phone_forms(value, a)
    coded_b, forms_b = _phone_forms(seen, b)
    if coded_a == coded_b:
        return bool(forms_a & forms_b)
    coded, plain = (forms_a, forms_b) if coded_a else (forms_b, forms_a)
    return any(
        len(national) >= 7 and number.endswith(national) and 1 <= len(number) - len(national) <= 3
        for number in coded
        for national in plain
    )


def _phone_forms(raw: str, digits: str) -> tuple[bool, set[str]]:
    """Whether ``raw`` is written with a country code, and its digits as compared."""
    text = _normal(raw).strip()
    if text.startswith("+") or text.startswith("00"):
        if "(0)" in text.replace(" ", ""):  # "+44 (0)20 ...": a trunk zero, not dialled
            digits = _NON_WORD.sub("", re.sub(r"\(\s*0\s*\)", "", text))
        return True, {digits[2:] if text.startswith("00") else digits}
    return False, {digits[1:] if digits.startswith("0") else digits}


class Haystack:
    """Texts prepared for :meth:`find`: normalized once, searched as one string.

    A value is found when its skeleton's characters appear in order with nothing but
    separators (characters that are not letters or digits, or the words ``at`` and
    ``dot``) between them, starting and ending at a token boundary: exactly a run of
    whole tokens. The texts are kept apart (a run never joins the end of one text to the
    start of the next), and :meth:`find` says which text holds a value.
    """

    __slots__ = ("_bare", "_joined", "_maps", "_offsets", "_plain", "_said", "texts")

    def __init__(self, texts: str | list[str]) -> None:
        self.texts = [texts] if isinstance(texts, str) else texts
        offsets: list[int] = []
        position = 0
        parts: list[str] = []
        for text in self.texts:
            normal = _normal(text).replace(_APART, " ")
            offsets.append(position)
            parts.append(normal)
            position += len(normal) + 1
        self._joined = joined = _APART.join(parts)
        self._offsets = offsets
        # The tokens, without separators, then also without the words "at" and "dot": a
        # run of whole tokens is a run of either (see _runs); a needle in neither is nowhere.
        self._plain = _NON_WORD.sub("", joined)
        said, self._said = _SAID.subn(" ", joined)
        self._bare = _NON_WORD.sub("", said)
        self._maps: tuple[_TokenMap, _TokenMap] | None = None

    def _runs(self, needle: str) -> Iterator[tuple[int, int]]:
        """Each ``(start, end)`` in the joined text where ``needle`` is a run of whole
        tokens of one text. Its letters, separators dropped, are the needle, with the words
        "at"/"dot" between them either all kept (a run of the tokens) or all dropped (a run
        of the tokens but those words); only a needle spelling "at" or "dot" itself, in a
        text with two such words or more, can keep one and drop another: then the pattern
        decides."""
        if self._said >= 2 and ("at" in needle or "dot" in needle):
            for match in _pattern(needle).finditer(self._joined):
                yield match.span()
            return
        if needle not in self._plain and needle not in self._bare:
            return
        maps = self._maps
        if maps is None:
            maps = self._maps = (_TokenMap(self._joined, True), _TokenMap(self._joined, False))
        found: set[tuple[int, int]] = set()
        for flat, token_map in zip((self._plain, self._bare), maps, strict=True):
            found.update(token_map.runs(flat, needle, self._offsets))
        yield from sorted(found)

    def spans(self, needle: str, *, whole: bool = False) -> Iterator[str]:
        """Each place ``needle`` (a skeleton) is a run of whole tokens, as written there.

        With ``whole``, a run inside a longer address (an email or link without spaces:
        ``now.com/berlin`` inside ``www.weather-now.com/berlin``, ``shop.example.co``
        inside ``shop.example.co.uk``) or number (``20 7946 0012`` inside
        ``+44 20 7946 0012``) is given as that whole address or number, so comparing it
        with a value tells the one from a part of it."""
        joined = self._joined
        around = _PHONE_CHARS if needle.isdigit() else _ADDRESS_CHARS
        for start, end in self._runs(needle):
            if whole:
                while start > 0 and joined[start - 1] in around:
                    start -= 1
                while end < len(joined) and joined[end] in around:
                    end += 1
                yield joined[start:end].strip().rstrip(".,;:!?")
            else:
                yield joined[start:end]

    def find(self, needle: str) -> int:
        """The index of the first text in which ``needle`` (a skeleton) is a run of whole
        tokens; ``-1`` when none is."""
        for start, _ in self._runs(needle):
            return bisect.bisect_right(self._offsets, start) - 1
        return -1


class _TokenMap:
    """Where each token of a joined text starts and ends, there and in its flat form (the
    tokens concatenated; ``said=False``: leaving out the words "at" and "dot")."""

    __slots__ = ("flat_ends", "flat_starts", "joined_ends", "joined_starts")

    def __init__(self, joined: str, said: bool) -> None:
        flat_starts: list[int] = []
        flat_ends: list[int] = []
        joined_starts: list[int] = []
        joined_ends: list[int] = []
        position = 0
        for token in _TOKEN.finditer(joined):
            word = token.group()
            if not said and (word == "at" or word == "dot"):
                continue
            flat_starts.append(position)
            position += len(word)
            flat_ends.append(position)
            joined_starts.append(token.start())
            joined_ends.append(token.end())
        self.flat_starts = flat_starts
        self.flat_ends = flat_ends
        self.joined_starts = joined_starts
        self.joined_ends = joined_ends

    def runs(self, flat: str, needle: str, offsets: list[int]) -> Iterator[tuple[int, int]]:
        """The runs of whole tokens of one text that spell ``needle`` in ``flat``."""
        at = flat.find(needle)
        while at >= 0:
            first = bisect.bisect_left(self.flat_starts, at)
            if first < len(self.flat_starts) and self.flat_starts[first] == at:
                last = bisect.bisect_left(self.flat_ends, at + len(needle))
                if last < len(self.flat_ends) and self.flat_ends[last] == at + len(needle):
                    start = self.joined_starts[first]
                    end = self.joined_ends[last]
                    if bisect.bisect_right(offsets, start) == bisect.bisect_right(offsets, end):
                        yield start, end
            at = flat.find(needle, at + 1)


_APART: Final = "\x00"  # between texts: no separator may cross it
_NON_WORD_KEPT: Final = re.compile(r"(?:(?!\x00)[\W_])+")
_TOKEN: Final = re.compile(r"[^\W_]+")
_SAID: Final = re.compile(r"(?<![^\W_])(?:at|dot)(?![^\W_])")
_GAP: Final = r"(?:(?!\x00)[\W_]|(?<![^\W_])(?:at|dot)(?![^\W_]))*"


@functools.lru_cache(maxsize=4096)
def _pattern(needle: str) -> re.Pattern[str]:
    body = _GAP.join(re.escape(c) for c in needle)
    return re.compile(r"(?<![^\W_])" + body + r"(?![^\W_])")


# -- identifiers inside a body of text -------------------------------------------------

_EMAIL: Final = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_LINK: Final = re.compile(r"(?:(?:https?|hxxps?)://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
_DOMAIN: Final = re.compile(
    r"(?<![\w.-])(?:[a-z0-9-]+\.)+(?:com|org|net|io|co|ai|app|dev|info|biz|xyz|me|us|uk|de"
    r"|fr|eu|ru|cn|ly|gl|to|sh|site|online|shop|link|click|win)\b(?:/[^\s<>\"')\]]*)?",
    re.IGNORECASE,
)
_IBAN: Final = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,30}\b")
_IBAN_HEAD: Final = re.compile(r"[A-Z][A-Z]\d\d")
_PHONE: Final = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d\b")
_PARTY: Final = Sink.PARTY
_URL: Final = Sink.URL
_SEVEN_DIGITS: Final = re.compile(r"[^0-9]*(?:[0-9][^0-9]*){7}")
_DIGIT_RUN: Final = re.compile(r"\d(?:[ ().-]*\d){6}")
# ASCII bytes by class, for identifiers_in's gates: digit "0", capital "A", other "x"
_CLASSES: Final = bytes(48 if 48 <= b <= 57 else 65 if 65 <= b <= 90 else 120 for b in range(256))


_DEFANGED_AT: Final = re.compile(r"\s*[\[({]\s*(?:at|@)\s*[\])}]\s*", re.IGNORECASE)
_DEFANGED_DOT: Final = re.compile(r"\s*[\[({]\s*(?:dot|\.)\s*[\])}]\s*", re.IGNORECASE)
_SPELLED: Final = re.compile(
    r"(?<![\w.+-])([\w.+-]+)\s+at\s+([\w-]+(?:\s+dot\s+[\w-]+)+)(?![\w-])", re.IGNORECASE
)
_SPELLED_DOT: Final = re.compile(r"\s+dot\s+", re.IGNORECASE)


def _refanged(text: str) -> str:
    """``text`` with addresses written to dodge a filter written plainly: ``x [at] y
    [dot] com``, ``evil[.]com``, ``x at y dot com`` become ``x@y.com``, ``evil.com``;
    full-width and other compatibility characters become their plain forms (NFKC)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if "[" in text or "(" in text or "{" in text:
        text = _DEFANGED_DOT.sub(".", _DEFANGED_AT.sub("@", text))
    if " dot " in text.casefold():
        text = _SPELLED.sub(lambda m: m.group(1) + "@" + _SPELLED_DOT.sub(".", m.group(2)), text)
    return text


def identifiers_in(text: str) -> list[tuple[str, Sink]]:
    """The identifiers a body of text holds: emails, account numbers and phone numbers
    (as parties), links (as URLs), in order of appearance. An address written to dodge
    a filter (``x [at] y [dot] com``, ``evil[.]com``, ``x at y dot com``) is found, as
    written plainly."""
    text = _refanged(text)
    found: list[tuple[int, str, Sink]] = []
    if "@" in text or "." in text:
        start = 0
        # the words holding "@" or "." (str.split: one pass in C; a regex scan costs more)
        for word in text.split():
            if "@" in word:
                match: re.Match[str] | None = _EMAIL.search(word)
                kind = _PARTY
            elif "." in word:
                match = _LINK.match(word) or _DOMAIN.search(word)
                kind = _URL
            else:
                continue
            start = text.find(word, start)  # no word between holds it: none has "@" or "."
            if match is not None:
                value = match.group().rstrip(".,;:!?")
                found.append((start + match.start(), value, kind))
            start += len(word)
    if text.isascii():
        # One C pass over the bytes tells the three gates below apart: each digit
        # becomes "0", each capital "A", each phone separator goes, the rest is "x".
        classes = text.encode().translate(_CLASSES, b" ().-")
        numbers = classes.count(48) >= 7  # seven digits (b"0")
        run = numbers and b"0000000" in classes
        head = numbers and b"AA00" in classes  # (separators gone: may say yes wrongly)
    else:  # \d is any decimal digit: the patterns
        numbers = _SEVEN_DIGITS.match(text) is not None
        run = numbers and _DIGIT_RUN.search(text) is not None
        head = numbers and _IBAN_HEAD.search(text) is not None
    if not numbers:
        return [(value, kind) for _, value, kind in found]  # in order already
    taken = [(begin, begin + len(value)) for begin, value, _ in found]
    # a phone number is seven digits or more with only phone separators between
    # them: without such a run, there is none to look for
    patterns = (_IBAN, _PHONE) if run else (_IBAN,)
    # an account number starts with two capitals and two digits: a search for
    # those skips the text in C, where the full pattern tries every position
    for pattern in patterns if head else patterns[1:]:
        for number in pattern.finditer(text):
            span = number.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            digits = sum(c.isdigit() for c in number.group())
            if pattern is _PHONE and (digits < 7 or _is_date(number.group())):
                continue
            taken.append(span)
            found.append((span[0], number.group(), _PARTY))
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
