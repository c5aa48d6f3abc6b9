"""A value the user pointed at: the one value of its kind in a source their request names.

"Reply to the sender of the tech newsletter", "pay my bill, it's in bill-may.txt", "thank
whoever posted the offsite notes": the value the model copies is in a tool result, not in
the request, yet the user chose it. The ledger calls :func:`pointed_at` for a value it
found in a result's text (before calling it a fragment); it answers with the value's
JSON path when

* the request names the source: the call that read it took only arguments the request
  gives (the file, the channel, the search words), or the request's words describe
  items of a list result (the email, the transaction, the message): every item
  matching two of them or more, else the one item matching one;
* in that source the value is the only one of its kind (parties, links): an injected
  value next to the real one makes two, and both are asked about;
* the value is a whole field of it (the sender, the author), or, for a value inside its
  text: it is an identifier (an address, account, phone number or link); the request
  asks for the action of the tool it goes to (``pay`` for ``send_money``), a tool other
  than the source's that does not change an existing thing (``update_*``: who a
  standing payment goes to is never taken from text), and a link only to be read; the
  request does not name the party by what a record the model read knows ("to my
  landlord"); inside an item's text, the request asks for that kind of value ("the
  link in …").
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any, Final

from .._core._provenance import Sink
from ._matching import (
    Haystack,
    fold,
    identifiers_in,
    needles,
    plain_address,
    same_identifier,
    strict,
)
from ._seen import Seen

__all__ = ["action_words", "asks_for_action", "may_lift", "pointed_at", "request_words"]

# The words a request uses for a tool's action, by the verb its name starts with.
_ACTIONS: Final[dict[str, tuple[str, ...]]] = {
    "send": (
        "send",
        "pay",
        "transfer",
        "wire",
        "refund",
        "forward",
        "reply",
        "email",
        "mail",
        "text",
        "message",
        "dm",
        "write",
        "share",
    ),
    "pay": ("pay", "send", "transfer", "wire", "refund"),
    "transfer": ("transfer", "send", "pay", "wire", "move"),
    "forward": ("forward", "send", "share"),
    "reply": ("reply", "respond", "answer", "write back"),
    "email": ("email", "mail", "send", "write", "reply", "forward"),
    "post": ("post", "share", "send", "publish", "announce", "write"),
    "share": ("share", "send", "post", "forward"),
    "invite": ("invite", "add"),
    "read": ("read", "open", "visit", "summarize", "summarise", "check", "look", "browse"),
    "open": ("open", "read", "visit", "check", "look", "browse"),
    "visit": ("visit", "open", "read", "check", "browse"),
    "fetch": ("fetch", "read", "open", "visit", "check", "get", "download"),
    "get": ("get", "fetch", "read", "open", "check", "download"),
    "browse": ("browse", "open", "visit", "read"),
    "download": ("download", "fetch", "get", "save"),
    "create": (
        "create",
        "schedule",
        "book",
        "set up",
        "add",
        "invite",
        "plan",
        "arrange",
        "organize",
        "organise",
        "put",
    ),
    "schedule": ("schedule", "create", "book", "set up", "plan", "arrange"),
    "book": ("book", "reserve", "schedule"),
    "reserve": ("reserve", "book"),
    "call": ("call", "phone", "ring", "dial"),
}
# Tools that change what exists (who a standing payment goes to, an account's email):
# a value inside text never names their party.
_CHANGES: Final = frozenset(
    {"update", "change", "set", "modify", "edit", "reset", "move", "replace", "rename"}
)
_VERBS: Final = frozenset(
    {w for words in _ACTIONS.values() for w in words} | set(_ACTIONS) | _CHANGES
)
# The words a request uses for a value of a kind: a value inside the text of an item
# (a message, a transaction) counts only when the request asks for one ("the link
# in Bob's message"), not for any item that copies its words.
_KIND_WORDS: Final[dict[Sink, tuple[str, ...]]] = {
    Sink.URL: ("link", "url", "page", "site", "website", "article", "address"),
    Sink.PARTY: ("address", "account", "iban", "number", "phone", "contact", "recipient"),
}
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT: Final = re.compile(r"[_\-\s.]+")
_WORD: Final = re.compile(r"[^\W_]+")
# Words too common to single out one item: they say how, not which.
_COMMON_WORDS: Final = """
    about above after again all also and another any are back because been before being
    below between both but can could did does doing down during each every few for from
    further had has have having her here hers him his how into its just let more most
    much new not now off old one only other our out over own please same she should
    some such than that the their theirs them then there these they this those through
    too two under until very via was way what when where which while who whoever whom
    whose why will with would yes you your yours want need make sure tell thanks thank
    today tomorrow yesterday
"""
_COMMON: Final = frozenset(_COMMON_WORDS.split())


def verb_of(tool: str) -> str:
    """The verb a tool's name starts with (``sendMoney``, ``send_money``: ``send``)."""
    words = [w for w in _SPLIT.split(_CAMEL.sub("_", tool).lower()) if w]
    return words[0] if words else ""


def action_words(tool: str, given: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The words a request uses for ``tool``'s action (``given`` per tool, else from its
    verb); ``()`` for a tool that changes an existing thing."""
    words = given.get(tool)
    if words:
        return words
    verb = verb_of(tool)
    if not verb or verb in _CHANGES:
        return ()
    return _ACTIONS.get(verb, (verb,))


MAX_TEXTS: Final = 2000
"""The most texts a source may hold for a value in it to be ``named`` (its cost is a
walk of them; a larger source's values are asked about)."""

_READS: Final = frozenset({"read", "open", "visit", "fetch", "get", "browse", "download"})


def may_lift(
    tool: str | None,
    source: str,
    kind: Sink,
    given: Mapping[str, tuple[str, ...]],
    request: str,
    inside: bool = False,
) -> bool:
    """Whether a call of ``tool`` may take a value of ``kind`` out of the text of a
    result of ``source`` the request names: a call of another tool, whose action the
    request asks for, that changes nothing that exists; a link as the argument itself
    only to be read (posting to a link out of a page sends data to it); ``inside``: the
    value is an identifier inside a body the call sends."""
    if tool is None or tool == source:
        return False
    if kind is Sink.URL and not inside and verb_of(tool) not in _READS and tool not in given:
        return False
    return asks_for_action(action_words(tool, given), request)


def asks_for_action(words: tuple[str, ...], request: str) -> bool:
    """Whether ``request`` (folded) uses one of ``words`` as a word (``pay``, ``pays``,
    ``paying``; not ``payment``)."""
    for word in words:
        body = r"\s+".join(map(re.escape, word.casefold().split()))
        if re.search(r"(?<![^\W_])" + body + r"(?:s|es|ed|d|ing)?(?![^\W_])", request):
            return True
    return False


def request_words(request: str) -> frozenset[str]:
    """The words of ``request`` (folded) that can single out an item: three letters or
    more, not a common word, not a word for an action (they say what to do, not to
    what), not a part of an identifier the request gives."""
    spelled = {
        w for identifier, _ in identifiers_in(request) for w in _WORD.findall(fold(identifier))
    }
    return frozenset(
        w
        for w in _WORD.findall(request)
        if len(w) >= 3
        and w not in _COMMON
        and w not in _VERBS
        and w not in spelled
        and not w.isdigit()
    )


def _in_request(text: str, request: str) -> bool:
    folded = fold(text).strip()
    if len(folded) < 2:
        return False
    pattern = r"(?<![^\W_])" + re.escape(folded) + r"(?![^\W_])"
    return re.search(pattern, request) is not None


def _named_by_arguments(arguments: object, request: str) -> bool:
    """Whether the call took text arguments and the request gives every one of them."""
    texts = [text for _, text, _ in _walk(arguments, "$", "") if text.strip()]
    return bool(texts) and all(_in_request(text, request) for text in texts)


_Leaf = tuple[str, str, str]  # (JSON path, text, the path of the list item it is in)


def _walk(value: Any, path: str, item: str) -> Iterator[_Leaf]:
    if isinstance(value, str):
        yield path, value, item
    elif isinstance(value, dict):
        for key, each in value.items():
            yield from _walk(each, f"{path}.{key}", item)
    elif isinstance(value, list | tuple):
        for i, each in enumerate(value):
            place = f"{path}[{i}]"
            yield from _walk(each, place, place if isinstance(each, dict) else item)


def _shape(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def _key(text: str) -> str | None:
    """The form two spellings of one identifier share, and two lookalikes do not
    (``alice@blue-bird.io`` is not ``alice@bluebird.io``): :func:`strict`."""
    key = strict(plain_address(text))
    return key or None


def pointed_at(
    seen: Seen,
    value: str,
    kind: Sink,
    *,
    request: tuple[str, frozenset[str]],
    tool: str | None,
    actions: Mapping[str, tuple[str, ...]],
    inside: bool,
    trusted: Haystack,
    own: Container[str],
    records: Sequence[Seen] = (),
) -> str | None:
    """The JSON path of ``value`` in ``seen`` when it is the one value of its kind in a
    source the request names (see the module's text); ``None`` otherwise.

    Args:
        seen: a result holding the value.
        value: the sink value.
        kind: ``party`` or ``url``.
        request: the trusted text, folded and joined, and its :func:`request_words`.
        tool: the tool of the call asking (``None``: no call; a value inside text then
            never counts).
        actions: the words a request uses for a tool's action, per tool (given ones).
        inside: ``value`` is an identifier inside a body the call sends (then never
            from a document's text: a link copied from a page into a post).
        trusted: the trusted text, for leaving out values it gives.
        own: the needles of the user's own identifiers (:func:`needles` forms).
        records: the results the call could see: a value inside text does not count
            when the request describes a record holding a value of its kind (``pay the
            rent to my landlord``: the payee the user keeps, not an account a notice
            names).
    """
    if seen.result.is_error:
        return None
    wanted = _key(value)
    if wanted is None:
        return None
    request_text, words = request
    whole = seen.result.value
    leaves = [("$", seen.result.text, "")] if whole is None else list(_walk(whole, "$", ""))
    if len(leaves) > MAX_TEXTS:
        return None  # too large a source to be sure of: asked about
    plain = plain_address(value)
    at = next((leaf for leaf in leaves if same_identifier(plain, plain_address(leaf[1]))), None)
    field = at is not None
    if at is None:
        # inside text: only an identifier (an address, a link, an account or phone
        # number, which the text can be searched for) is known to be the only one there;
        # for a call whose tool may take it; never from a document into a body; never
        # when the request names the party by what a record knows
        if (
            [_key(i) for i, like in identifiers_in(value) if like is kind] != [wanted]
            or (whole is None and inside)
            or not may_lift(tool, seen.tool, kind, actions, request_text, inside)
            or (words and any(_describes_a_record(each, kind, words) for each in records))
        ):
            return None
        at = next(
            (
                leaf
                for leaf in leaves
                if any(
                    like is kind and same_identifier(plain, i)
                    for i, like in identifiers_in(leaf[1])
                )
            ),
            None,
        )
        if at is None:
            return None
    # where it must be the only one: the items the request's words describe (for a
    # value inside an item's text, only when the request asks for that kind of value);
    # the whole source the call's arguments named (for a value inside text: a document)
    scopes: list[list[_Leaf]] = []
    item = at[2]
    if item and words and (field or asks_for_action(_KIND_WORDS[kind], request_text)):
        # the words that name the source (the channel read) do not describe an item
        named = {
            w for _, text, _ in _walk(seen.arguments, "$", "") for w in _WORD.findall(fold(text))
        }
        mine = _described(leaves, item, words - named, field)
        if mine is not None:
            scopes.append(mine)
    if (field or whole is None) and _named_by_arguments(seen.arguments, request_text):
        scopes.append(leaves)
    shape = _shape(at[0]) if field else None
    for scope in scopes:
        others = _candidates(scope, kind, shape) - {wanted}
        others = {k for k in others if not _given(k, kind, trusted, own)}
        if not others:
            return at[0]
    return None


def _given(key: str, kind: Sink, trusted: Haystack, own: Container[str]) -> bool:
    """Whether the identifier ``key`` is one of the user's own or in the trusted text."""
    found = needles(key, kind)
    if any(n in own for n in found):
        return True
    return any(same_identifier(key, span) for n in found for span in trusted.spans(n, whole=True))


def _described(
    leaves: list[_Leaf], item: str, words: frozenset[str], alone: bool
) -> list[_Leaf] | None:
    """The leaves of the items of ``item``'s list the request describes, when ``item``
    is one: every item matching two of its words or more (an injected item that copies
    the request's words is one more, not the only one); else (when ``alone``) the one
    item matching one, if it is alone in that."""
    parent = item[: item.rindex("[")]
    items = re.compile(re.escape(parent) + r"\[\d+\](?=[.\[]|\Z)")
    texts: dict[str, list[str]] = {}
    for path, text, _ in leaves:
        owner = items.match(path)
        if owner is not None:
            texts.setdefault(owner.group(), []).append(text)
    scores = {
        owner: len(words.intersection(_WORD.findall(fold(" ".join(parts)))))
        for owner, parts in texts.items()
    }
    chosen = {owner for owner, score in scores.items() if score >= 2}
    if not chosen and alone:
        chosen = {owner for owner, score in scores.items() if score == 1}
        if len(chosen) != 1:
            return None
    if item not in chosen:
        return None
    return [leaf for leaf in leaves if (m := items.match(leaf[0])) and m.group() in chosen]


def _describes_a_record(seen: Seen, kind: Sink, words: frozenset[str]) -> bool:
    """Whether the request's words match an item of a result holding records (a payee,
    a contact, a transaction) that has a value of ``kind`` in a field of its own."""
    whole = seen.result.value
    if not seen.record_steps or whole is None or seen.result.is_error:
        return False
    items: dict[str, list[str]] = {}
    holds: set[str] = set()
    for _, text, item in _walk(whole, "$", ""):
        items.setdefault(item, []).append(text)
        found = identifiers_in(text)
        if len(found) == 1 and found[0][1] is kind and _key(found[0][0]) == _key(text):
            holds.add(item)  # a field that is one identifier of the kind, whole
    for item in holds:
        spoken = {w for text in items[item] for w in _WORD.findall(fold(text))}
        if words & spoken:
            return True
    return False


def _candidates(scope: list[_Leaf], kind: Sink, shape: str | None) -> set[str]:
    """The values like the one asked about that a scope holds. For a whole field
    (``shape``, its path with the list places left out): that field, in every item of
    the scope (an address in a body is not a second sender: a call that copies the
    sender did not copy it). For a value inside text: every identifier of ``kind`` in
    the scope's texts, whole fields too (the real value may be one)."""
    found: set[str] = set()
    for path, text, _ in scope:
        if shape is not None:
            if _shape(path) == shape:
                key = _key(text)
                if key is not None:
                    found.add(key)
            continue
        for identifier, like in identifiers_in(text):
            if like is kind:
                key = _key(identifier)
                if key is not None:
                    found.add(key)
    return found
