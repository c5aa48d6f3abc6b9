"""Control characters shown, not obeyed: text from tools and models made safe to draw.

Tool names, call ids, progress messages and result text come from models, tools and
mounted servers. On a terminal an ESC starts a sequence that can set the window
title, clear the screen or plant a hyperlink; in XML a C0 control (or U+FFFE,
U+FFFF) makes the whole document ill-formed, even as a character reference. So
wherever toolnursery draws such text, every C0 and C1 control character, DEL,
U+FFFE, U+FFFF and any lone surrogate is shown as its escape (``\\x1b``,
``\\x9b``, ``\\ufffe``), and only a newline where a newline is meant is kept.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["shown"]

_UNSAFE: Final = "\x00-\x09\x0b-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff"
_KEEPING_NEWLINES: Final = re.compile(f"[{_UNSAFE}]")
_ALL: Final = re.compile(f"[{_UNSAFE}\n]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character escaped, a newline kept if ``newlines``.

    >>> shown("\\x1b]0;PWNED\\x07 done\\n")
    '\\\\x1b]0;PWNED\\\\x07 done\\n'
    >>> shown("a\\nb", newlines=False)
    'a\\\\x0ab'
    """
    return (_KEEPING_NEWLINES if newlines else _ALL).sub(_escaped, text)
