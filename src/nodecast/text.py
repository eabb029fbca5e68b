"""Text read from input, made safe to print: ``shown(value)``, the one rule every terminal line and error applies.

Names reach the terminal from files nodecast did not write: a trace's GPU and
kernel names, a machine file's name, a file's own name. Printed as they are,
they can move the cursor, clear the screen or set the window title (escape
sequences such as ``ESC [2J`` or ``ESC ]0;...BEL``), break a one-line message in
two (a newline), reverse the text that follows (bidirectional overrides),
stop the command under a strict UTF-8 output (the lone surrogates by which
Python keeps the bytes of a non-UTF-8 file name) or take minutes to lay out
(a name of a million characters). ``shown`` turns such a value into text that
prints as it reads:

* a control character (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F), the
  line and paragraph separators (U+2028, U+2029) and the bidirectional marks,
  embeddings, overrides and isolates print as Python writes them in a string
  literal: ``\\x1b``, ``\\n``, ``\\t``, ``\\r``, ``\\x07``, ``\\u202e``;
* a byte that is not UTF-8, kept by ``surrogateescape`` as a lone surrogate
  U+DC80-U+DCFF, prints as that byte, ``\\xff``; another lone surrogate as
  ``\\ud800``;
* a value whose visible form is longer than ``limit`` characters keeps
  its start and its end (three quarters and one quarter of the room left)
  around an ellipsis and says how long it was:
  ``/data/aaaa…aaa/trace.csv (1,000,000 characters)``, so that a path keeps
  its file name. What ``shown`` returns is never longer than ``limit`` (from
  a ``limit`` of 40 up) and ``shown`` leaves it unchanged: a renderer may
  show a value already shown.

A backslash already in the value is left as it is (Windows-style paths read
as typed), so ``\\x1b`` in the output is either an escape character made
visible or those four characters in the name. Rich markup (``[bold]``,
``[/]``, ``[link=...]``) is not this module's business: the terminal renderers
(``report.tables``) never read data as markup, so brackets print as they are
and no backslash is added.

This module imports nothing from nodecast: ``errors`` uses it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

#: most characters shown of one name (a path, a GPU, kernel or machine name): a deep path fits; a templated kernel
#: name (real ones reach 5,000 characters) is cut, keeping its start and end.
LIMIT = 256

#: most characters shown of a line built around names (a note, a header, a table's title), which quotes them whole.
LINE_LIMIT = 2000

# C0, DEL, C1; the Arabic letter mark; LRM/RLM; line and paragraph separators; embeddings and overrides
# (U+202A-U+202E); isolates (U+2066-U+2069); every surrogate (only lone ones can be in a str).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(char: str) -> str:
    """One unsafe character as its escape."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return _NAMED.get(char) or f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _escaped(text: str) -> str:
    return _UNSAFE.sub(lambda m: _visible(m.group()), text)


def _fit(chars: Iterable[str], room: int) -> list[str]:
    """The visible forms of the first of ``chars`` that fit in ``room`` characters."""
    out, used = [], 0
    for char in chars:
        seen = _visible(char) if _UNSAFE.match(char) else char
        used += len(seen)
        if used > room:
            break
        out.append(seen)
    return out


def _as_str(value: object) -> str:
    """``value`` as a str: a path or bytes decoded as the file system does (undecodable bytes kept as surrogates)."""
    if isinstance(value, str):
        return str(value)  # a str subclass (numpy.str_) as a plain str
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def shown(value: object, limit: int = LIMIT) -> str:
    """``value`` (a str, path, bytes or anything ``str`` takes) as text safe to print on one line, at most
    ``limit`` characters long.

    Control characters, line separators, bidirectional controls and lone
    surrogates are written as visible escapes (``\\x1b``, ``\\n``,
    ``\\u202e``, ``\\xff`` for a non-UTF-8 byte); what would be longer than
    ``limit`` is cut around ``…`` and says the value's length in characters:
    ``head…tail (N characters)``. Work is bounded by ``limit``, not by the
    value's length (past ``str``), so a name of a million characters costs
    what one of ``limit`` does.
    """
    text = _as_str(value)
    n = len(text)
    if n <= limit:
        if not _UNSAFE.search(text):
            return text
        seen = _escaped(text)
        if len(seen) <= limit:
            return seen
    suffix = f" ({n:,} characters)"
    room = max(limit - len(suffix) - 1, 0)
    end_room = room // 4
    head = _fit(text[: room - end_room], room - end_room)
    tail = _fit(reversed(text[n - end_room:]), end_room) if end_room else []
    return f"{''.join(head)}…{''.join(reversed(tail))}{suffix}"
