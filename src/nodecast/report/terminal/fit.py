"""``nodecast fit-kernels`` at the terminal: the leave-one-GPU-out errors per family and per held-out GPU.

Errors in percent of the measured time on the held-out GPU (WMAPE: time-
weighted; MAPE: per op), beside the references computed on the same pairs;
"in interval": the share of ops whose measured time lies in the interval.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console

from nodecast.fit.workflow import SCORES, KernelFit
from nodecast.report.terminal import render


def _table(frame, title: str, keys: list[str]):  # noqa: ANN001, ANN202 (a DataFrame, a rich Table)
    from rich.table import Table

    from nodecast.report.tables import add_row

    table = Table(title=title, title_justify="left")
    for k in keys:
        table.add_column(k, no_wrap=True)
    for s in SCORES:
        table.add_column(s if s == "ops" else f"{s} %", justify="right")
    for values in frame.to_dict("records"):
        cells = [f"{int(values['ops']):,}"] + [
            "—" if not np.isfinite(values[s]) else f"{values[s]:.1f}" for s in SCORES[1:]]
        add_row(table, *[str(values[k]) for k in keys], *cells)
    return table


@render.register(KernelFit)
def print_fit(fit: KernelFit, console: Console | None = None) -> None:
    """The error tables, then where the parameter file went."""
    from nodecast.report.tables import console as results_console

    console = console or results_console()
    seen = fit.params.seen
    console.print(_table(fit.by_family, "Learned kernel model, each GPU predicted by a fit without it: errors by "
                                    "corpus and family", ["corpus", "family", "FLOP and bytes"]))
    console.print(_table(fit.by_gpu, "By held-out GPU", ["corpus", "held-out GPU"]))
    console.print(_table(fit.pooled, "Pooled", ["all"]))
    for note in fit.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    where = f"written to {fit.output}" if fit.output else "not written (give -o FILE)"
    console.print(f"parameters fitted on {seen['examples']:,} examples of {len(seen['gpus'])} GPUs "
                  f"({', '.join(seen['gpus'])}): {where}", markup=False, highlight=False)
    if fit.output:
        console.print(f"use them with: NODECAST_KERNEL_MODEL={fit.output} nodecast forecast ... --models "
                      "learned-kernel (or the default kernel model)", markup=False, highlight=False)
