"""Render result tables for the terminal with rich.

One result model (a pandas DataFrame), several renderers: the commands print
these tables and write the same frame as CSV/Parquet/JSON.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping

import pandas as pd
from rich.console import Console
from rich.table import Table

Formatter = Callable[[object], str]


class PipeSafeConsole(Console):
    """A rich Console whose output may be cut short (``nodecast ... | head``).

    rich exits with status 1 when the reader of its pipe goes away; this one
    raises BrokenPipeError instead, which the CLI's entry point treats as a
    normal end (status 0), as for plain ``print``.
    """

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


def fmt_seconds(value: object) -> str:
    """A time in seconds printed with an SI prefix (ns, µs, ms, s)."""
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    a = abs(v)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if a >= scale or unit == "ns":
            return f"{v / scale:,.3g} {unit}" if a else "0 s"
    return f"{v} s"  # pragma: no cover


def fmt_bytes(value: object) -> str:
    """A byte count with a binary prefix (KiB = 1024 B)."""
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return "—"
    for scale, unit in ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if abs(v) >= scale:
            return f"{v / scale:,.3g} {unit}"
    return f"{v:,.0f} B"


def fmt_pct(value: object) -> str:
    """A percentage (value already in %)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{v:,.1f} %"


def fmt_share(value: object) -> str:
    """A 0-1 fraction printed as a percentage."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{100 * v:,.1f} %"


def fmt_gbps(value: object) -> str:
    """Bytes/s printed as GB/s (1 GB = 1e9 B)."""
    v = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(v) else f"{v / 1e9:,.3g}"


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
    """Print ``df`` as a rich table; ``formats`` maps column -> formatter."""
    formats = formats or {}
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for col in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[col])
        table.add_column(str(col), justify="right" if numeric else "left")
    for row in df.itertuples(index=False):
        cells = []
        for col, value in zip(df.columns, row, strict=True):
            f = formats.get(col)
            if f is not None:
                cells.append(f(value))
            elif isinstance(value, float):
                cells.append("—" if math.isnan(value) else f"{value:,.4g}")
            else:
                cells.append(str(value))
        table.add_row(*cells)
    (console or globals()["console"]()).print(table)
