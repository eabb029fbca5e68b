"""``nodecast project`` at the terminal: the trace, GPU time per category on A and projected on B per model
(a model's op count shown where it covers part of a row), the decisive notes, the ops no model handles, and the
other notes (``_notes``);
``nodecast models``: the registered models."""

from __future__ import annotations

import numpy as np
import pandas as pd
from rich.console import Console

from nodecast.cost.project import NOT_PROJECTED, TOTAL_PROJECTED, ModelList, Projection
from nodecast.models.registry import TASK_KINDS
from nodecast.report import tables as t
from nodecast.report.terminal import _notes, render
from nodecast.words import plural
from nodecast.text import LIMIT, shown
from nodecast.traces.kinds import OpKind


@render.register(Projection)
def render_projection(proj: Projection, console: Console | None = None, *, notes: str = _notes.DEFAULT,
                      **_: object) -> None:
    """Print ``proj``; ``notes``: which notes (``_notes.NOTES``: the decisive ones under the first table)."""
    console = console or t.console()
    tr = proj.trace
    n_sync = int(np.count_nonzero(tr["kind"] == OpKind.SYNC))
    # Synchronisations are records of the host waiting, not GPU work: say how many were set aside.
    syncs = (f" (and {plural(n_sync, 'synchronisation record')}, not projected: they are not GPU work)"
             if n_sync else "")
    console.print(t.plain(tr.meta.source, LIMIT, "bold")
                  + t.plain(f": {plural(len(tr) - n_sync, 'GPU op')}{syncs}, projected {shown(proj.source.name)} -> "
                            f"{shown(proj.target.name)}"), soft_wrap=True)
    table, partial = summary_shown(proj)
    fmts = {"ops": t.fmt_int, "bytes": t.fmt_bytes, "source_s": t.fmt_seconds,
            **dict.fromkeys(proj.results, t.fmt_seconds), **{f"{n}_ops": t.fmt_int for n in partial}}
    t.render(table, f"GPU time on {shown(proj.source.name)} (source_s) and projected on {shown(proj.target.name)} "
             "per model "
             f"(— : not projected by that model; '{TOTAL_PROJECTED}' sums the ops some model projected, "
             f"'{NOT_PROJECTED}' the others; <model>_ops: ops in a model's sum where it differs)", fmts, console)
    rest = _notes.head(console, proj.all_notes(), notes)
    unhandled = proj.unhandled()
    if len(unhandled):
        t.render(unhandled, "Ops no model could handle (not projected)",
                 {"ops": t.fmt_int, "source_s": t.fmt_seconds}, console)
    _notes.tail(console, rest, notes)


def summary_shown(proj: Projection) -> tuple[pd.DataFrame, list[str]]:
    """``proj.summary()`` as printed: a model's time column named after it, its op count (``<model>_ops``) kept only
    where it projected part of a row (else "—" in its time column says it all); and the models whose count is kept."""
    shown = proj.summary()
    partial = [n for n in proj.results
               if ((shown[f"{n}_ops"] != 0) & (shown[f"{n}_ops"] != shown["ops"])).any()]
    shown = shown.drop(columns=[f"{n}_ops" for n in proj.results if n not in partial])
    return shown.rename(columns={f"{n}_s": n for n in proj.results}), partial


@render.register(ModelList)
def render_models(models: ModelList, console: Console | None = None, **_: object) -> None:
    """Print the registered models: those of a trace's ops, then the simulator's kernel-time models (not for
    ``--models``: their options of ``nodecast simulate`` ask for them)."""
    table = models.table()
    tasks = table["kind"].isin(TASK_KINDS)
    t.render(table[~tasks], "Projection models (nodecast project --models NAME,...)", console=console)
    if tasks.any():
        t.render(table[tasks], "Simulator kernel-time models (nodecast simulate, asked for by the options they name)",
                 console=console)
