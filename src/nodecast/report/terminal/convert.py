"""``nodecast convert`` at the terminal: one line, what was written from what."""

from __future__ import annotations

from rich.console import Console

from nodecast.workflows.convert import Conversion
from nodecast.report.tables import plain
from nodecast.report.terminal import render
from nodecast.text import LINE_LIMIT, shown


@render.register(Conversion)
def render_conversion(conv: Conversion, console: Console | None = None, **_: object) -> None:
    """``wrote OUT: N ops (counts per kind) from FORMAT SOURCE``, as plain text."""
    meta = conv.trace.meta
    line = (f"wrote {shown(conv.path)}: {len(conv.trace)} ops ({conv.counts_text()}) from {meta.format} "
            f"{shown(meta.source)}")
    if console is None:
        print(shown(line, LINE_LIMIT))
    else:
        console.print(plain(line), soft_wrap=True)
