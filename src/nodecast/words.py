"""Counts in words: ``1 group``, ``2 groups``, ``1,024 copies``.

A ground module (beside errors, values and text): models, traces and workflows word their notes with it, so it
does not live in ``report/``, which only renders results.
"""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` with thousands separators and the noun in the number it needs.

    ``plural_form`` defaults to ``singular + "s"``; give it for irregular
    nouns (``plural(2, "copy", "copies")``).
    """
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count:,} {word}"
