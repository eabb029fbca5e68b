"""``nodecast curves`` at the terminal: projected bandwidth at a handful of copy sizes, per machine, class and model.

Bandwidths print in GB/s (1 GB = 1e9 B); sizes in KiB/MiB/GiB (2^10, 2^20,
2^30 B); the caption gives each machine's 1-byte cost L+O and where it came
from; notes that are not about it follow, dimmed.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console

from nodecast.models.curves import TABLE_SIZES, Curves
from nodecast.report.terminal import render


def table_sizes(sizes: np.ndarray) -> list[int]:
    """The sizes of the terminal table: those of ``TABLE_SIZES`` in the sweep, else up to 5 spread over it."""
    chosen = [s for s in TABLE_SIZES if s in set(sizes.tolist())]
    if chosen:
        return chosen
    idx = np.unique(np.linspace(0, sizes.size - 1, min(5, sizes.size)).round().astype(int))
    return [int(sizes[i]) for i in idx]


@render.register(Curves)
def print_table(curves: Curves, console: Console | None = None) -> None:
    """A rich table of the bandwidths at a handful of sizes, with the 1-byte costs as caption."""
    from rich.table import Table

    from nodecast.report.figures.curves import size_label
    from nodecast.report.tables import PipeSafeConsole, add_row, plain, significant
    from nodecast.report.tables import console as results_console

    cols = table_sizes(curves.sizes)
    wide = curves.at_sizes(cols)
    table = Table(
        title="Projected bandwidth n / T(n) in GB/s (1 GB = 1e9 B); sizes in KiB/MiB/GiB = 2^10/2^20/2^30 B",
        caption=plain("1-byte cost L+O: " + "; ".join(curves.one_byte_summary())),
        caption_justify="left",
    )
    table.add_column("machine", no_wrap=True)
    table.add_column("class", no_wrap=True)
    table.add_column("model", no_wrap=True)
    for s in cols:
        table.add_column(size_label(s), justify="right")
    previous: tuple[str, str] | None = None
    for (machine, klass, model), row in wide.iterrows():
        first = (machine, klass) != previous
        if first and previous is not None and previous[0] != machine:
            table.add_section()
        cells = ["—" if not np.isfinite(row.get(s, np.nan)) else significant(row[s] / 1e9, 4) for s in cols]
        add_row(table, machine if first else "", klass if first else "", model, *cells)
        previous = (machine, klass)
    if console is None:
        console = results_console(width_when_piped=None)
        if not console.is_terminal:  # a file or a pipe: do not squeeze the table into 80 columns
            console = PipeSafeConsole(width=max(console.width, 120))
    console.print(table)
    for line in curves.skipped:
        console.print(plain(f"not drawn: {line}"), soft_wrap=True)
    shown: set[str] = set()
    for machine in curves.machines:
        for model in curves.models:
            for note in curves.notes.get(f"{machine}/{model}", []):
                if note.startswith(("1-byte cost", "L+O (1-byte cost) left out")) or note in shown:
                    continue  # the caption summarises the 1-byte costs
                console.print(plain(f"{machine}: {note}", style="dim"), soft_wrap=True)
                shown.add(note)
