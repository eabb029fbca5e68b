"""The source comment beside each value of a catalogue TOML file.

``tomllib`` drops comments, yet in nodecast's catalogue files the comment
after a value *is* its provenance (``# DATASHEETS.md D.1``,
``# [derived: ...]``). ``value_comments`` recovers them, keyed by the dotted
key path the loaders use (``peak_flops.fp32``, ``host_link.gen``), so that
``nodecast machines show`` can print every value with its source.

It reads the subset of TOML the catalogue uses: ``[table]`` headers (no
arrays of tables), ``key = value`` lines with bare or quoted keys, strings,
numbers, booleans and arrays, which may span lines.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r'^\s*("[^"]*"|[A-Za-z0-9_\-.]+)\s*=')


def split_comment(line: str) -> tuple[str, str | None]:
    """``(code, comment)`` of one TOML line; a ``#`` inside a string is not a comment."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            return line[:i], line[i + 1:].strip()
        i += 1
    return line, None


def value_comments(text: str) -> dict[str, str]:
    """Dotted key -> comment text for every ``key = value`` line that has a comment.

    A value spanning lines (an array) takes the first comment found on any of
    its lines.
    """
    out: dict[str, str] = {}
    table = ""
    open_key: str | None = None
    depth = 0
    for raw in text.splitlines():
        code, comment = split_comment(raw)
        if open_key is not None:  # inside a multi-line array
            depth += code.count("[") - code.count("]")
            if comment and open_key not in out:
                out[open_key] = comment
            if depth <= 0:
                open_key = None
            continue
        header = _HEADER.match(raw)
        if header:
            table = header.group(1).replace(" ", "")
            continue
        m = _KEY.match(code)
        if not m:
            continue
        key = m.group(1).strip('"')
        full = f"{table}.{key}" if table else key
        if comment:
            out[full] = comment
        value = code[m.end():]
        depth = value.count("[") - value.count("]")
        if depth > 0:
            open_key = full
    return out
