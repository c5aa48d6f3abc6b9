"""Reading a model's raw tool-call arguments: the one place a call's argument text is parsed."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["parse_arguments"]

_decode = msgspec.json.Decoder().decode


def parse_arguments(text: str) -> Any:
    """Parse a model's raw argument text once: ``""`` → ``{}``; not JSON → the text itself."""
    if not text:
        return {}
    try:
        return _decode(text)
    except (msgspec.DecodeError, RecursionError):
        return text
