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


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, in plain notation (never ``1.02e+03``).

    Thousands are separated (``1,946``); a number of ``digits`` or more
    integer digits keeps them all (``12,345``); trailing zeros are dropped,
    as ``%g`` drops them (``1.5``, ``100``).
    """
    if value == 0:
        return "0"  # -0.0 too: a zero has no sign
    if not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _in_units(value: float, units: tuple[tuple[float, str], ...], integer_base: bool = False) -> str:
    """``value`` in the largest of ``units`` ((scale, name), ascending) that it reaches, 3 significant digits.

    When rounding carries the shown number up to the next unit's size
    (``1,024 MiB``, ``1,000 ms``), the next unit is used (``1 GiB``, ``1 s``).
    ``integer_base``: the smallest unit prints whole numbers (bytes).
    """
    a = abs(value)
    i = max((k for k, (scale, _) in enumerate(units) if a >= scale), default=0)
    while True:
        scale, name = units[i]
        x = value / scale
        text = f"{x:,.0f}" if integer_base and i == 0 else significant(x)
        if i + 1 < len(units) and abs(float(text.replace(",", ""))) >= units[i + 1][0] / scale:
            i += 1
            continue
        return f"{text} {name}"


_TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
_BYTE_UNITS = tuple((1024.0**k, name) for k, name in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")))


def fmt_seconds(value: object) -> str:
    """A time in seconds printed with an SI prefix (ns, µs, ms, s), 3 significant digits, no exponent."""
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    if v == 0:
        return "0 s"
    return _in_units(v, _TIME_UNITS)


def fmt_bytes(value: object) -> str:
    """A byte count with a binary prefix (KiB = 1024 B ... EiB), 3 significant digits, no exponent.

    ``1,023 MiB`` stays in MiB; what rounds to 1,024 of a unit is shown in the
    next one (``1 GiB``); bytes print whole (``1,000 B``).
    """
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    return _in_units(v, _BYTE_UNITS, integer_base=True)


def unsigned_zero(text: str) -> str:
    """``text`` without its minus sign when every digit it shows is 0: a value that rounds to zero reads
    ``0.0 %``, not ``-0.0 %`` (a replay 20 ns off of 831 ms is not a negative error)."""
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def fmt_pct(value: object) -> str:
    """A percentage (value already in %), one decimal; what rounds to zero reads ``0.0 %`` without a sign."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else unsigned_zero(f"{v:,.1f} %")


def fmt_share(value: object) -> str:
    """A 0-1 fraction printed as a percentage, as ``fmt_pct``."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else fmt_pct(100 * v)


def fmt_gbps(value: object) -> str:
    """Bytes/s printed as GB/s (1 GB = 1e9 B)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else significant(v / 1e9)


def fmt_signed_seconds(value: object) -> str:
    """A change in seconds with its sign (``+1.5 ms``, ``-862 ms``, ``0 s``)."""
    v = float(value)  # type: ignore[arg-type]
    return ("+" if v > 0 else "-" if v < 0 else "") + fmt_seconds(abs(v))


def fmt_interval_seconds(low: float | None, high: float | None) -> str:
    """``low – high`` in seconds; "—" only when there is no interval (None or NaN).

    An interval of zero width, or narrower than the digits shown, prints
    both ends (``817 ms – 817 ms``): the models gave one and it is that
    narrow, which a dash (no interval at all) would hide. A caller whose
    result has no interval passes NaN.
    """
    if low is None or high is None or math.isnan(float(low)) or math.isnan(float(high)):
        return "—"
    return f"{fmt_seconds(low)} – {fmt_seconds(high)}"


def fmt_ratio(value: object) -> str:
    """A ratio (a speed-up: time on A / time on B) as ``2.83×``, 3 significant digits, as the HTML page prints
    it (``report.html.units``)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{significant(v)}×"


def fmt_int(value: object) -> str:
    """An integer count with thousands separators."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{int(v):,}"


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
