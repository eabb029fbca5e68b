"""Render result tables for the terminal with rich.

One result model (a pandas DataFrame), several renderers: the commands print
these tables and write the same frame as CSV/Parquet/JSON.

Every string printed here is text, never rich markup: names come from traces
and machine files, and ``[/]`` in a GPU name must print as ``[/]``, not end
the command with a MarkupError, and ``[link=...]`` must not open a
hyperlink. Strings go through ``nodecast.text.shown`` (escape characters made
visible, long names cut); ``plain`` makes the ``Text`` a renderer prints or
puts in a table, so that a console nodecast did not build is safe too, and
the console nodecast builds (``console()``) applies the same rule to any
string a renderer passes it as it is, with rich's highlighter and emoji
codes off (the highlighter took 44 s over a line holding a 100,000-character
name).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nodecast.text import LIMIT, LINE_LIMIT, shown

Formatter = Callable[[object], str]


class PipeSafeConsole(Console):
    """A rich Console whose output may be cut short (``nodecast ... | head``).

    rich exits with status 1 when the reader of its pipe goes away; this one
    raises BrokenPipeError instead, which the CLI's entry point treats as a
    normal end (status 0), as for plain ``print``.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        # Data is never markup, never an emoji code (':smile:'), never run through the highlighter's regexes.
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        kwargs.setdefault("highlight", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def render_str(self, text: str, **kwargs: object) -> Text:  # type: ignore[override]
        """Every string this console prints (a line, a table's title or cell) is shown as text, whatever the caller
        asked: a renderer that forgot ``plain`` cannot apply markup or send an escape sequence from a trace."""
        kwargs.update(markup=False, emoji=False, highlight=False)
        return super().render_str(shown(text, LINE_LIMIT), **kwargs)  # type: ignore[arg-type]

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise BrokenPipeError


def console(width_when_piped: int | None = 160) -> Console:
    """A Console for results; output to a file or pipe gets ``width_when_piped`` columns
    instead of rich's 80, so that saved reports keep whole rows rather than wrapped cells."""
    if sys.stdout.isatty() or width_when_piped is None:
        return PipeSafeConsole()
    return PipeSafeConsole(width=width_when_piped)


def plain(value: object, limit: int = LINE_LIMIT, style: str = "") -> Text:
    """``value`` as a rich ``Text`` that prints as it reads on any console: never read as markup, its control
    characters visible and at most ``limit`` characters (``nodecast.text.shown``); ``style``: rich style ("bold").

    Lines default to ``LINE_LIMIT`` characters; give a single name ``LIMIT``. The style covers this text only,
    not what is appended to it: ``plain(path, LIMIT, "bold") + plain(" (...)")`` makes only the path bold."""
    text = Text(shown(value, limit))
    if style:
        text.stylize(style)
    return text


def add_row(table: Table, *cells: object, limit: int = LIMIT) -> None:
    """Add a row to a table built by hand: each cell that is not already ``Text`` becomes ``plain(cell, limit)``
    (a name: ``LIMIT`` characters; give ``LINE_LIMIT`` for a sentence, such as where a value came from)."""
    table.add_row(*(c if isinstance(c, Text) else plain(c, limit) for c in cells))


# The number formats live in the ground module ``nodecast.units`` (models and workflows use them too); report's
# renderers import them from here, beside the table helpers.
from nodecast.units import (fmt_bytes, fmt_gbps, fmt_int, fmt_interval_seconds, fmt_pct, fmt_ratio,  # noqa: F401
                            fmt_seconds, fmt_share, fmt_signed_seconds, significant, unsigned_zero)


def render(
    df: pd.DataFrame,
    title: str,
    formats: Mapping[str, Formatter] | None = None,
    console: Console | None = None,
    caption: str | None = None,
) -> None:
    """Print ``df`` as a rich table; ``formats`` maps column -> formatter. Title, caption, headers and cells print
    as text (``plain``): a cell is one name of at most ``LIMIT`` characters."""
    formats = formats or {}
    table = Table(title=plain(title), caption=None if caption is None else plain(caption), title_justify="left",
                  caption_justify="left")
    for col in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[col])
        table.add_column(plain(col, LIMIT), justify="right" if numeric else "left")
    for row in df.itertuples(index=False):
        cells = []
        for col, value in zip(df.columns, row, strict=True):
            f = formats.get(col)
            if f is not None:
                cells.append(f(value))
            elif isinstance(value, float):
                cells.append("—" if math.isnan(value) else significant(value, 4))
            else:
                cells.append(str(value))
        add_row(table, *cells)
    (console or globals()["console"]()).print(table)
