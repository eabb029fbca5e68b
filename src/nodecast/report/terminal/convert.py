"""``nodecast convert`` at the terminal: one line, what was written from what."""

from __future__ import annotations

from rich.console import Console

from nodecast.convert import Conversion
from nodecast.report.terminal import render


@render.register(Conversion)
def render_conversion(conv: Conversion, console: Console | None = None, **_: object) -> None:
    """``wrote OUT: N ops (counts per kind) from FORMAT SOURCE``, as plain text."""
    meta = conv.trace.meta
    line = f"wrote {conv.path}: {len(conv.trace)} ops ({conv.counts_text()}) from {meta.format} {meta.source}"
    if console is None:
        print(line)
    else:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
