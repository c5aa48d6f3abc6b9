"""The JSON form of a body's return value, and JSON-safe strings.

A body may return plain data (dicts, lists, tuples, numbers, strings, booleans,
``None``) or the records and scalars Python code returns: dataclasses, attrs classes,
msgspec Structs, pydantic models, enums, dates and times, UUIDs, decimals, bytes,
paths, sets. :func:`render_value` gives each its JSON form as compact text, the same
text for equal values in every process (dict keys and set items sorted, record
fields in declaration order), with lone surrogates escaped as
:func:`json_safe_text` escapes them.

The common case costs one C-level encoding: msgspec encodes the value and, when the
text holds no ``null`` (the only form a non-finite float can take there), or when the
value is plain data the text decodes back to, it is the answer. Anything else — a type
msgspec does not know, a non-string key, a surrogate, a set it cannot order — takes
the walk, which builds the JSON form with msgspec doing the leaves and the records'
shapes, and which alone decides what has no JSON form: a non-finite float, two keys
that render alike, a key or an object with no JSON form, a cycle. That error
(:class:`NotJSONError`) names where: ``result["items"][2].when``.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import math
import re
import sys
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final, TypeVar

import msgspec

from ._errors import NotJSONError
from ._json import MAX_JSON_DEPTH, FrozenDict

__all__ = [
    "json_safe",
    "json_safe_text",
    "render_slow",
    "render_value",
    "returned_value",
    "text_is_safe",
    "utf8_safe",
]

T = TypeVar("T")

_encoder: Final = msgspec.json.Encoder(order="deterministic")
_plain_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder()
_NULL: Final = b"null"
_REPR_MAX: Final = 60  # an error names a key or set item by its repr, cut to this
_RANK_NONE, _RANK_BOOL, _RANK_NUMBER, _RANK_STR, _RANK_OTHER = range(5)


# -- JSON-safe strings -------------------------------------------------------------------

_SURROGATES: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def utf8_safe(parts: object) -> bool:
    """Whether msgspec encodes ``parts`` (so it holds no string to escape)."""
    # msgspec encodes a string as UTF-8, which fails on a lone surrogate (a high-low
    # pair too): when the encoding succeeds there is nothing for json_safe to escape,
    # and one C-level pass replaces its walk. Any failure falls back to the walk.
    try:
        msgspec.json.encode(parts)
    except Exception:
        return False
    return True


def text_is_safe(text: str) -> bool:
    """Whether ``text`` holds no surrogate (so :func:`json_safe_text` returns it as is)."""
    # ``isascii`` is O(1) in CPython: the common case costs no scan at all.
    return text.isascii() or _SURROGATES.search(text) is None


def _escape_surrogate(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 2:  # a high-low pair: the character it encodes
        return chr(0x10000 + ((ord(found[0]) - 0xD800) << 10) + (ord(found[1]) - 0xDC00))
    point = ord(found)
    if 0xDC80 <= point <= 0xDCFF:  # an undecodable byte, as os.fsdecode escapes it
        return f"\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}"


def json_safe_text(text: str) -> str:
    """Return ``text`` with every lone surrogate escaped, so it encodes as UTF-8.

    ``\\xNN`` for an undecodable byte ``NN`` (U+DC80–U+DCFF, as ``os.fsdecode`` makes
    it), ``\\uXXXX`` for any other lone surrogate; a high-low surrogate pair becomes
    the character it encodes. Text without surrogates is returned as is.
    """
    if text_is_safe(text):
        return text
    return _SURROGATES.sub(_escape_surrogate, text)


def json_safe(value: T) -> T:
    """Return ``value`` with every string in it made JSON-safe by :func:`json_safe_text`.

    Walks Structs, tuples, lists and dicts (keys too); returns the very same object
    when nothing needed escaping, so a clean value costs no copies.
    """
    return _safe(value)  # type: ignore[no-any-return]


def _safe(value: Any) -> Any:
    t = type(value)
    if t is str:
        return json_safe_text(value)
    if t is tuple or t is list:
        items = [_safe(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return tuple(items) if t is tuple else items
    if isinstance(value, dict):
        pairs = [(_safe(k), _safe(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return FrozenDict(pairs) if isinstance(value, FrozenDict) else dict(pairs)
    if isinstance(value, msgspec.Struct):
        changes = {}
        for name in value.__struct_fields__:
            old = getattr(value, name)
            new = _safe(old)
            if new is not old:
                changes[name] = new
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


# -- rendering values ------------------------------------------------------------------


def render_value(value: object) -> str:
    """Render ``value`` as compact, deterministic JSON text.

    Raises:
        NotJSONError: the value (or something in it) has no JSON form; the message
            names it and where it is, as ``result[...]``.
    """
    try:
        raw = _encoder.encode(value)
        # msgspec writes a non-finite float as null: text without a null is exact, and
        # so is plain data that the text decodes back to (a NaN never equals None).
        if _NULL not in raw or (
            (type(value) is dict or type(value) is list) and _decoder.decode(raw) == value
        ):
            return raw.decode()
    except Exception:  # a type, key, set or string msgspec does not take as is
        pass
    return render_slow(value)


def returned_value(text: str) -> Any:
    """The JSON value ``text`` is as :func:`render_value` writes one — a number, boolean,
    null, object or array in compact form — else ``text`` itself.

    What a framework that keeps a tool's returned value (pydantic-ai, fastmcp's client)
    is given for a result's text: ``"0"`` becomes ``0``, prose stays prose.
    """
    if not text or text[0] == '"':
        return text
    try:
        value = _decoder.decode(text)
    except (msgspec.DecodeError, ValueError):  # not JSON, or an int past 64 bits
        return text
    return value if _plain_encoder.encode(value).decode() == text else text


def render_slow(value: object) -> str:
    """:func:`render_value` without the fast path (the walk alone): the same text."""
    try:
        data = _walk(value, True, 0, set())
    except _Unrenderable as exc:
        raise NotJSONError(exc.describe()) from None
    return _plain_encoder.encode(data).decode()


class _Unrenderable(Exception):
    """A value with no JSON form; collects the path as it unwinds."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        self.segments: list[str] = []

    def describe(self) -> str:
        return "result" + "".join(reversed(self.segments)) + " " + self.what


def _key_segment(key: object) -> str:
    if type(key) is str:
        return "[" + msgspec.json.encode(json_safe_text(key)).decode() + "]"
    return f"[{_describe_key(key)}]"


def _describe_key(key: object) -> str:
    try:
        text = repr(key)
    except Exception:
        text = "<unprintable>"
    if len(text) > _REPR_MAX:
        text = text[: _REPR_MAX - 3] + "..."
    return f"{text} ({_type_name(key)})"


def _type_name(value: object) -> str:
    t = type(value)
    module = t.__module__
    return t.__qualname__ if module == "builtins" else f"{module}.{t.__qualname__}"


def _walk(value: Any, sort: bool, depth: int, active: set[int]) -> Any:
    """The JSON form of ``value`` as builtins (dicts with str keys, lists, scalars).

    ``sort``: sort dict keys (a value as the body built it); off for what msgspec or
    pydantic already put in order (a record's fields stay in declaration order).
    """
    t = type(value)
    if t is str:
        return json_safe_text(value)
    if t is int:
        return value if value.bit_length() < _INT_TEXT_BITS else _digits(value)
    if value is None or t is bool:
        return value
    if t is float:
        return _finite(value)
    if isinstance(value, enum.Enum):
        return _walk(value.value, sort, depth, active)
    if isinstance(value, dict):
        return _walk_dict(value, sort, depth, active)
    if t is list or t is tuple or isinstance(value, list | tuple):
        return _walk_items(value, sort, depth, active)
    if isinstance(value, set | frozenset):
        return _walk_set(value, depth, active)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return json_safe_text(str(value))
    if isinstance(value, int):
        return _walk(int(value), sort, depth, active)
    if isinstance(value, float):
        return _finite(float(value))
    if _is_pydantic(value):
        return _walk_pydantic(value, depth, active)
    if isinstance(value, PurePath):
        return json_safe_text(str(value))
    if isinstance(value, Mapping):
        return _walk_dict(dict(value), sort, depth, active)
    if isinstance(value, msgspec.Struct) or _is_dataclass(value) or _is_attrs(value):
        return _walk_record(value, depth, active)
    return _leaf(value)


# CPython refuses to turn an int of more than ``sys.get_int_max_str_digits()`` digits
# (4,300 by default, 640 at the least) into text, and msgspec's encoder with it. Below
# this many bits an int has fewer than 640 digits; above it, decimal writes the digits,
# which has no such limit.
_INT_TEXT_BITS: Final = 2_000


def _digit_text(n: int) -> str:
    """``n``'s decimal digits, whatever its size."""
    return str(decimal.Decimal(n))


def _digits(n: int) -> msgspec.Raw:
    """``n`` as a raw JSON number, whatever its size."""
    return msgspec.Raw(_digit_text(n).encode())


def _finite(f: float) -> float:
    if f != f or f == math.inf or f == -math.inf:
        raise _Unrenderable(f"is {f!r}, which has no JSON form (JSON numbers are finite)")
    return f


def _enter(value: object, depth: int, active: set[int]) -> int:
    if depth >= MAX_JSON_DEPTH:
        raise _Unrenderable(f"is nested deeper than {MAX_JSON_DEPTH} levels")
    key = id(value)
    if key in active:
        raise _Unrenderable(f"is a {_type_name(value)} that contains itself (a cycle)")
    active.add(key)
    return key


def _walk_dict(value: Mapping[Any, Any], sort: bool, depth: int, active: set[int]) -> Any:
    mark = _enter(value, depth, active)
    out: dict[str, Any] = {}
    origin: dict[str, Any] = {}
    resort = sort
    for k, v in value.items():
        if type(k) is str:
            sk = json_safe_text(k)
            resort = resort or sk is not k
        else:
            sk = _render_key(k)
            resort = True
        if sk in out:
            raise _Unrenderable(
                f"has two keys that both render as {msgspec.json.encode(sk).decode()}: "
                f"{_describe_key(origin[sk])} and {_describe_key(k)}"
            )
        origin[sk] = k
        try:
            out[sk] = _walk(v, sort, depth + 1, active)
        except _Unrenderable as exc:
            exc.segments.append(_key_segment(k))
            raise
    active.discard(mark)
    return {k: out[k] for k in sorted(out)} if resort else out


def _render_key(key: object) -> str:
    """A non-string key's JSON text, as msgspec writes it; else it has no JSON form."""
    if isinstance(key, enum.Enum):
        inner = key.value
        return json_safe_text(inner) if type(inner) is str else _render_key(inner)
    if isinstance(key, bool) or key is None:
        raise _Unrenderable(f"has a key {_describe_key(key)}, which has no JSON form")
    if isinstance(key, str):
        return json_safe_text(str(key))
    if isinstance(key, int):
        whole = int(key)
        return str(whole) if whole.bit_length() < _INT_TEXT_BITS else _digit_text(whole)
    if isinstance(key, float):
        _finite_key(float(key))
        return msgspec.json.encode(float(key)).decode()
    try:
        text = msgspec.to_builtins(key)
    except Exception:
        text = None
    if type(text) is not str:
        raise _Unrenderable(f"has a key {_describe_key(key)}, which has no JSON form")
    return json_safe_text(text)


def _finite_key(f: float) -> None:
    if not math.isfinite(f):
        raise _Unrenderable(f"has a key {f!r}, which has no JSON form")


def _walk_items(value: Any, sort: bool, depth: int, active: set[int]) -> list[Any]:
    mark = _enter(value, depth, active)
    out = []
    for i, v in enumerate(value):
        try:
            out.append(_walk(v, sort, depth + 1, active))
        except _Unrenderable as exc:
            exc.segments.append(f"[{i}]")
            raise
    active.discard(mark)
    return out


def _walk_set(value: set[Any] | frozenset[Any], depth: int, active: set[int]) -> list[Any]:
    mark = _enter(value, depth, active)
    try:
        ordered = sorted(value)
        # Sets order each other by inclusion, which is no total order.
        comparable = not any(isinstance(v, set | frozenset) for v in ordered)
    except Exception:
        ordered, comparable = list(value), False
    out = []
    for v in ordered:
        try:
            out.append(_walk(v, True, depth + 1, active))
        except _Unrenderable as exc:
            exc.segments.append(f"[{_describe_key(v)} in the set]")
            raise
    active.discard(mark)
    if not comparable:  # mixed kinds: order the JSON forms, kind first
        out.sort(key=_total_order)
    return out


def _total_order(item: Any) -> tuple[int, Any]:
    if item is None:
        return (_RANK_NONE, 0)
    if type(item) is bool:
        return (_RANK_BOOL, item)
    if type(item) is int or type(item) is float:
        return (_RANK_NUMBER, item)
    if type(item) is str:
        return (_RANK_STR, item)
    return (_RANK_OTHER, _plain_encoder.encode(item))


def _is_pydantic(value: object) -> bool:
    pydantic = sys.modules.get("pydantic")  # never imported here: a model means it is loaded
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _walk_pydantic(value: Any, depth: int, active: set[int]) -> Any:
    mark = _enter(value, depth, active)
    try:
        dumped = value.model_dump(mode="json")
    except Exception as exc:
        raise _Unrenderable(
            f"is a {_type_name(value)} whose model_dump(mode='json') raised "
            f"{type(exc).__name__}: {exc}"
        ) from None
    _sort_model_sets(value, dumped, 0)
    try:  # pydantic's JSON mode leaves JSON data: one C-level check, as render_value's
        raw = _plain_encoder.encode(dumped)
        if _NULL not in raw or _decoder.decode(raw) == dumped:
            active.discard(mark)
            return msgspec.Raw(raw)  # the model's own field order, as it is
    except Exception:  # a surrogate, a non-finite float: the walk says where
        pass
    out = _walk(dumped, False, depth, active)
    active.discard(mark)
    return out


def _sort_model_sets(model: Any, dumped: Any, depth: int) -> None:
    """Sort, in ``dumped`` (a fresh ``model_dump``), the arrays pydantic made of sets.

    pydantic lists a set in its iteration order, which for strings differs between
    processes; each field holding a set (in this model, in nested models, in lists
    and dicts of models) whose dump is an array of the same length is sorted as the
    walk sorts sets. Where a serializer changed the shape, the dump is left as is.
    """
    if depth >= MAX_JSON_DEPTH or not isinstance(dumped, dict):
        return
    for name in type(model).model_fields:
        if name in dumped:
            _sort_dumped(getattr(model, name, None), dumped, name, depth + 1)


def _sort_dumped(value: Any, parent: Any, key: Any, depth: int) -> None:
    dumped = parent[key]
    if isinstance(value, set | frozenset):
        if type(dumped) is list and len(dumped) == len(value):
            parent[key] = _sorted_items(dumped)
    elif _is_pydantic(value):
        _sort_model_sets(value, dumped, depth)
    elif isinstance(value, list | tuple):
        if type(dumped) is list and len(dumped) == len(value):
            for i, item in enumerate(value):
                _sort_dumped(item, dumped, i, depth + 1)
    elif isinstance(value, dict) and type(dumped) is dict:
        for k, item in value.items():
            if isinstance(k, str) and k in dumped:
                _sort_dumped(item, dumped, k, depth + 1)


def _sorted_items(items: list[Any]) -> list[Any]:
    try:
        return sorted(items, key=_total_order)
    except Exception:  # a NaN among numbers, say: the walk reports it
        return items


def _is_dataclass(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _is_attrs(value: object) -> bool:
    return hasattr(type(value), "__attrs_attrs__")


def _walk_record(value: Any, depth: int, active: set[int]) -> Any:
    """A dataclass, attrs instance or Struct: msgspec's shape (which fields, their
    names and order, a tag), each field's value walked from the attribute."""
    mark = _enter(value, depth, active)
    try:
        shape = msgspec.to_builtins(value, enc_hook=_opaque)
    except RecursionError:
        raise _Unrenderable(f"is a {_type_name(value)} nested too deep (or in a cycle)") from None
    except Exception as exc:
        raise _Unrenderable(
            f"is an object of type {_type_name(value)}, which has no JSON form: {exc}"
        ) from None
    if isinstance(value, msgspec.Struct):
        names = dict(zip(value.__struct_encode_fields__, value.__struct_fields__, strict=True))
        fields = value.__struct_fields__
    else:
        names = None
        fields = ()
    if isinstance(shape, list):  # an array-like Struct: [tag?, field values...]
        skip = 1 if value.__struct_config__.tag is not None else 0
        out: Any = shape[:skip]
        for name in fields[: len(shape) - skip]:
            out.append(_field(value, name, depth, active))
    else:
        out = {}
        for key in shape:
            attr = key if names is None else names.get(key)
            out[key] = shape[key] if attr is None else _field(value, attr, depth, active)
    active.discard(mark)
    return out


def _field(value: Any, name: str, depth: int, active: set[int]) -> Any:
    try:
        return _walk(getattr(value, name), True, depth + 1, active)
    except _Unrenderable as exc:
        exc.segments.append("." + name)
        raise


def _opaque(value: object) -> None:
    return None  # the shape needs names only: any field value will do


def _leaf(value: object) -> Any:
    """Scalars msgspec renders (dates and times, UUID, Decimal, bytes): their text."""
    try:
        text = msgspec.to_builtins(value, enc_hook=_no_form)
    except Exception:
        text = None
    if type(text) is not str:
        raise _Unrenderable(f"is an object of type {_type_name(value)}, which has no JSON form")
    return json_safe_text(text)


def _no_form(value: object) -> Any:
    raise TypeError(type(value).__name__)
