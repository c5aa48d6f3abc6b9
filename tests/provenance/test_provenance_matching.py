"""Matching a value inside text: formatting-robust, never half a token."""

from __future__ import annotations

import bisect
import re
import string

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st

from toolnursery import Sink
from toolnursery._pipeline._matching import (
    Haystack,
    _pattern,
    dates_in,
    identifiers_in,
    needles,
    same_identifier,
)


def found(value: str, text: str, kind: Sink = Sink.PARTY) -> bool:
    haystack = Haystack(text)
    return any(haystack.find(n) >= 0 for n in needles(value, kind))


def test_identifiers_are_found_however_they_are_written() -> None:
    assert found("DE89370400440532013000", "pay DE89 3704 0044\n0532 0130 00 today")
    assert found("evil@example.com", "write to Evil@Example.COM.")
    assert found("evil@example.com", "write to evil [at] example [dot] com")
    assert found("https://www.evil.com/pay/", "see evil.com/pay")
    assert found("evil.com/pay", "see hxxps://evil[.]com/pay", Sink.URL)
    assert found("+1 555 123 4567", "call (555) 123-4567")
    assert found("ＥＶＩＬ@example.com", "evil@example.com")  # NFKC: full-width letters


def test_a_value_never_matches_part_of_a_token() -> None:
    assert not found("bob", "bobby tables")
    assert not found("exam", "example.com")
    assert not found("evil@example.com", "evil@example.community")
    assert not found("nobody@x.com", "")


def test_dates_compare_as_dates() -> None:
    assert (2026, 5, 3) in dates_in("on 2026-05-03T10:00")
    assert (None, 5, 3) in dates_in("May 3rd")
    assert (2026, 5, 3) in dates_in("3 May 2026")
    assert {(2026, 3, 5), (2026, 5, 3)} <= dates_in("03/05/2026")
    assert dates_in("no date here") == set()


def test_identifiers_inside_a_body() -> None:
    body = "Mail evil@x.com, pay DE89 3704 0044 0532 0130 00, see www.evil.com/a or evil.io."
    assert identifiers_in(body) == [
        ("evil@x.com", Sink.PARTY),
        ("DE89 3704 0044 0532 0130 00", Sink.PARTY),
        ("www.evil.com/a", Sink.URL),
        ("evil.io", Sink.URL),
    ]
    assert identifiers_in("See you at 10:00 on May 4.") == []


groups = st.lists(
    st.text(alphabet=string.ascii_uppercase + string.digits, min_size=2, max_size=5),
    min_size=2,
    max_size=6,
)
separators = st.sampled_from([" ", "  ", "\n", "-", ". ", " / "])


@given(groups, separators, st.booleans())
def test_a_grouped_identifier_is_found_in_any_spacing_and_case(
    parts: list[str], separator: str, lower: bool
) -> None:
    value = "".join(parts)
    written = separator.join(p.lower() if lower else p for p in parts)
    assert found(value, f"account: {written} (thanks)")


@given(
    st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=8),
    st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=4),
)
def test_a_word_is_not_found_inside_a_longer_word(word: str, tail: str) -> None:
    assume(word not in {"the", "here", "www", "http", "https", "hxxp", "hxxps", "mailto"})
    assert not found(word, f"the {word}{tail} here")
    assert found(word, f"the {word} here")


tricky_words = st.sampled_from(
    ["at", "dot", "a", "t", "do", "ta", "ot", "evil", "x1", "com", "att", "_"]
)
tricky_text = st.lists(
    st.tuples(tricky_words, st.sampled_from([" ", ".", "[", "]", "", "\n", "@", "-"])),
    max_size=7,
).map(lambda pairs: "".join(word + gap for word, gap in pairs))


@given(
    st.lists(tricky_text, min_size=1, max_size=3), st.lists(tricky_words, min_size=1, max_size=3)
)
def test_the_token_map_finds_what_the_token_pattern_finds(
    texts: list[str], words: list[str]
) -> None:
    # The pattern is the definition (letters in order, only separators or the words
    # "at"/"dot" between them, whole tokens, within one text); the map is the fast path.
    needle = "".join(words).replace("_", "")
    assume(needle)
    haystack = Haystack(texts)
    joined = "\x00".join(t.casefold() for t in texts)
    first = _pattern(needle).search(joined)
    expected = -1 if first is None else bisect.bisect_right(haystack._offsets, first.start()) - 1
    assert haystack.find(needle) == expected
    written = {m.group() for m in _pattern(needle).finditer(joined)}
    spans = set(haystack.spans(needle))
    assert written <= spans
    assert bool(spans) == bool(written)


def test_trusting_needs_the_same_identifier_not_the_same_letters() -> None:
    assert same_identifier("Alice@Bluebird.io", "alice@bluebird.io")
    assert same_identifier("alice@bluebird.io", "alice [at] bluebird [dot] io")
    assert same_identifier("https://www.wiki.example/notes/", "wiki.example/notes")
    assert same_identifier("DE89370400440532013000", "DE89 3704 0044 0532 0130 00")
    assert same_identifier("+44 20 7946 0011", "020 7946 0011")
    assert not same_identifier("alice@blue-bird.io", "alice@bluebird.io")
    assert not same_identifier("bob@h.omeorg", "bob@home.org")
    assert not same_identifier("evil.com/pay", "evil.com/p/ay")
    assert not same_identifier("", "")


def test_trusted_text_holds_a_whole_address_not_a_part_of_one() -> None:
    from toolnursery._pipeline._matching import is_address

    text = (
        "Check www.weather-now.com/berlin, then mail jo@mail.acme-corp.com or shop.example.co.uk."
    )

    def trusted(value: str) -> bool:
        haystack = Haystack(text)
        whole = is_address(value)
        return any(
            same_identifier(value, span)
            for needle in needles(value, Sink.URL)
            for span in haystack.spans(needle, whole=whole)
        )

    assert trusted("https://weather-now.com/berlin/")
    assert trusted("JO@mail.acme-corp.com")
    assert trusted("shop.example.co.uk")
    assert not trusted("now.com/berlin")  # a suffix of the user's link is another site
    assert not trusted("jo@mail.acme")
    assert not trusted("shop.example.co")


_json_leaf = st.one_of(st.text("ab", max_size=2), st.integers(0, 3), st.none(), st.booleans())
_json = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=12,
)


def _reference(value: object, steps: tuple[str | None, ...], path: str) -> list[tuple[str, str]]:
    """The texts at a record path, with their JSON paths, walked the plain way."""
    if not steps:
        if type(value) is str or type(value) is int:
            return [(path, str(value))]
        if type(value) is list:
            return [
                (f"{path}[{i}]", str(item))
                for i, item in enumerate(value)
                if type(item) is str or type(item) is int
            ]
        return []
    step, rest = steps[0], steps[1:]
    if step is None:
        if type(value) is not list:
            return []
        return [p for i, item in enumerate(value) for p in _reference(item, rest, f"{path}[{i}]")]
    if type(value) is not dict or step not in value:
        return []
    return _reference(value[step], rest, f"{path}.{step}")


@given(_json, st.sampled_from(["[].x", "x[].y", "[].x[]", "x", "[].x.y", "[][].x"]))
def test_a_record_walk_names_each_text_by_its_json_path(value: object, path: str) -> None:
    _check_walk(value, path)


def _check_walk(value: object, path: str) -> None:
    from toolnursery._core._provenance import record_steps
    from toolnursery._pipeline._seen import Walk as _Walk

    steps = record_steps(path)
    assert steps is not None
    walk = _Walk(value, steps)
    expected = _reference(value, steps, "$")
    assert walk.texts == [text for _, text in expected]
    assert [walk.path(n) for n in range(len(walk.texts))] == [p for p, _ in expected]


def test_phone_numbers_compare_with_and_without_their_country_code() -> None:
    same = [
        ("+442079460012", "020 7946 0012"),
        ("+44 20 7946 0012", "+44 (0)20 7946 0012"),
        ("0044 20 7946 0012", "+442079460012"),
        ("+4930901820", "030 901820"),
        ("+1 555 123 4567", "(555) 123-4567"),
    ]
    for value, seen in same:
        assert same_identifier(value, seen), (value, seen)
        assert same_identifier(seen, value), (seen, value)
    # another country code on the same digits is another number
    assert not same_identifier("+1 207 946 0012", "+44 20 7946 0012")
    assert not same_identifier("+33 20 7946 0012", "+44 (0)20 7946 0012")
    assert not same_identifier("+1 503 555 1234", "+1535551234")  # a zero is a digit
    # ... and a request naming the number with its code holds it whole
    haystack = Haystack("Text Raj on +44 20 7946 0012, please.")
    spans = [s for n in needles("+12079460012", Sink.PARTY) for s in haystack.spans(n, whole=True)]
    assert spans
    assert not any(same_identifier("+12079460012", span) for span in spans)
    national = Haystack("Text Raj at 020 7946 0012.")
    assert any(
        same_identifier("+442079460012", span)
        for n in needles("+442079460012", Sink.PARTY)
        for span in national.spans(n, whole=True)
    )


def test_a_display_name_is_not_part_of_the_address() -> None:
    from toolnursery._pipeline._matching import plain_address

    assert plain_address("Dana Moss <dana@moss-design.com>") == "dana@moss-design.com"
    assert plain_address(" <dana@moss-design.com> ") == "dana@moss-design.com"
    assert plain_address("dana@moss-design.com") == "dana@moss-design.com"
    # a "name" holding an address is no display name: the value stays whole
    assert plain_address("evil@x.com <dana@moss-design.com>") == (
        "evil@x.com <dana@moss-design.com>"
    )
    assert plain_address("Dana <dana@moss-design.com> evil@x.com") == (
        "Dana <dana@moss-design.com> evil@x.com"
    )


def test_an_address_written_to_dodge_a_filter_is_found_in_a_body() -> None:
    assert identifiers_in("send it to billing [at] pay-me (dot) com now") == [
        ("billing@pay-me.com", Sink.PARTY)
    ]
    assert identifiers_in("see hxxps://evil[.]com/pay") == [("hxxps://evil.com/pay", Sink.URL)]
    assert identifiers_in("write evil at example dot com") == [("evil@example.com", Sink.PARTY)]
    # prose with "at" and brackets is prose
    assert identifiers_in("meet at 10 at the cafe (at noon) [draft]") == []
    # full-width letters are the letters (NFKC)
    assert identifiers_in("form: \uff48\uff52\uff0e\uff43\uff4f/apply") == [
        ("hr.co/apply", Sink.URL)
    ]


@given(
    st.sampled_from(["1", "44", "49", "353"]),
    st.sampled_from(["1", "44", "49", "353"]),
    st.text("0123456789", min_size=7, max_size=10).filter(lambda d: not d.startswith("0")),
    st.sampled_from([" ", "-", ""]),
)
def test_a_phone_number_is_one_number_under_one_country_code(
    code: str, other: str, digits: str, gap: str
) -> None:
    coded = f"+{code}{gap}{digits}"
    assert same_identifier(coded, f"0{digits}")  # the national form
    assert same_identifier(f"0{digits}", coded)
    assert same_identifier(coded, f"00{code} {digits}")
    if other != code:
        assert not same_identifier(coded, f"+{other}{gap}{digits}")


_rows = st.lists(
    st.dictionaries(
        st.sampled_from(["x", "y"]),
        st.one_of(st.text(max_size=5), st.integers(), st.none(), st.lists(st.text(max_size=3))),
    ),
    max_size=6,
)


@given(st.one_of(_rows, st.dictionaries(st.just("x"), _rows)), st.sampled_from(["[].x", "x[].x"]))
def test_a_record_walk_of_rows_names_each_text_by_its_json_path(value: object, path: str) -> None:
    """The shape records usually have (a list of objects) takes the walk's fast path:
    every row with the field, some without, a null or a list in the field."""
    _check_walk(value, path)


def _identifiers_scanning_every_word(text: str) -> list[tuple[str, Sink]]:
    """identifiers_in as plainly written: every pattern run over the whole text."""
    from toolnursery._pipeline import _matching as m

    text = m._refanged(text)
    found: list[tuple[int, str, Sink]] = []
    taken: list[tuple[int, int]] = []
    for candidate in re.finditer(r"[^\s@.]*[@.]\S*", text):
        word, start = candidate.group(), candidate.start()
        kind = Sink.PARTY if "@" in word else Sink.URL
        match = (
            m._EMAIL.search(word) if "@" in word else m._LINK.match(word) or m._DOMAIN.search(word)
        )
        if match is not None:
            value = match.group().rstrip(".,;:!?")
            taken.append((start + match.start(), start + match.start() + len(value)))
            found.append((start + match.start(), value, kind))
    if m._SEVEN_DIGITS.match(text):
        for pattern in (m._IBAN, m._PHONE) if m._DIGIT_RUN.search(text) else (m._IBAN,):
            for number in pattern.finditer(text):
                span = number.span()
                if any(a < span[1] and span[0] < b for a, b in taken):
                    continue
                digits = sum(c.isdigit() for c in number.group())
                if pattern is m._PHONE and (digits < 7 or m._is_date(number.group())):
                    continue
                taken.append(span)
                found.append((span[0], number.group(), Sink.PARTY))
    found.sort()
    return [(value, kind) for _, value, kind in found]


_pieces = st.sampled_from(
    [
        "a",
        "B",
        "@",
        ".",
        " ",
        "\n",
        "\t",
        "\u00a0",
        "\u2003",
        "\x1c",
        "\x85",
        "(",
        ")",
        ",",
        "-",
        "x.com",
        "evil@x.io",
        "https://w.io/a",
        "www.",
        "+44 20 7946 0012",
        "GB29NWBK60161331926819",
        "GB29 NWBK 6016",
        "[at]",
        "[dot]",
        " at ",
        " dot ",
        "1",
        "23",
        "4567",
        "\uff45",
        "é",
        "IBAN:",
        "\u0663\u0664",  # digits of another script (\d, not [0-9])
        "\uff11\uff12",  # full-width digits (NFKC: 1, 2)
        "AB",
        "7",
    ]
)


@given(st.lists(_pieces, max_size=14).map("".join))
def test_identifiers_in_finds_what_scanning_every_word_finds(text: str) -> None:
    """The candidate words found with str.split and the account-number scan skipped
    without two capitals and two digits give what every pattern over the text gives."""
    assert identifiers_in(text) == _identifiers_scanning_every_word(text)


_paths = st.sampled_from(["[].x", "[].y", "x[].y", "[].x[]", "x", "x.y", "[].x.y", "[][].x", "[]"])


@given(
    st.one_of(_json, _rows, st.dictionaries(st.just("x"), _rows)),
    st.lists(_paths, min_size=1, max_size=3),
)
def test_record_fields_read_by_their_type_are_the_fields_the_walk_finds(
    value: object, paths: list[str]
) -> None:
    """A result's declared fields, read from its text with a decoder of only those
    fields, are the texts the walk of its whole value finds, path by path; when the
    value has another shape than the paths say, the reader gives way to the walk."""
    from toolnursery import TextContent, ToolExecutionResult
    from toolnursery._core._provenance import record_steps
    from toolnursery._pipeline._seen import Walk, record_texts

    steps = tuple(s for s in map(record_steps, paths) if s is not None)
    text = msgspec.json.encode(value).decode()
    result = ToolExecutionResult(content=(TextContent(text),), is_error=False)
    read = record_texts(result, steps)
    assert read is None or read == [Walk(msgspec.json.decode(text), s).texts for s in steps]
    if paths == ["[].x"] and type(value) is list and all(type(v) is dict for v in value):
        assert read is not None  # the usual shape is read by type


def test_paths_that_disagree_on_a_shape_are_walked() -> None:
    from toolnursery import TextContent, ToolExecutionResult
    from toolnursery._core._provenance import record_steps
    from toolnursery._pipeline._seen import record_texts

    result = ToolExecutionResult(content=(TextContent('{"x": [{"y": "a"}]}'),), is_error=False)
    for paths in (["x", "x[].y"], ["x[].y", "x"], ["x.y", "x[].y"]):
        steps = tuple(s for s in map(record_steps, paths) if s is not None)
        assert record_texts(result, steps) is None
    assert record_texts(result, (record_steps("x[].y"),)) == [["a"]]  # type: ignore[arg-type]


def test_identifiers_at_the_edges_of_the_number_gates() -> None:
    """Seven digits is the least a phone number has; the gates that skip the number
    patterns (counted in one pass over ASCII text) keep exactly what they find."""
    cases = {
        "call 555-1234 now": [("555-1234", Sink.PARTY)],
        "call 55-1234 now": [],
        "call 555 123 4567.": [("555 123 4567", Sink.PARTY)],
        "pay GB29 NWBK 6016 1331 9268 19 now": [("GB29 NWBK 6016 1331 9268 19", Sink.PARTY)],
        "pay gb29 nwbk 6016 1331 9268 19": [("6016 1331 9268 19", Sink.PARTY)],
        "call ５５５-１２３４": [("555-1234", Sink.PARTY)],  # full-width: NFKC
    }
    for text, expected in cases.items():
        assert identifiers_in(text) == expected, text
        assert _identifiers_scanning_every_word(text) == expected, text
