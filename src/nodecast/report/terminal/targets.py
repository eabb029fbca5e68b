"""``nodecast forecast`` with several targets (``--to a,b``, ``--sweep``) at the terminal: one row per target,
then the notes every target shares once and the others with their target."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from nodecast.graph.targets import Comparison
from nodecast.report import tables as t
from nodecast.report.terminal import render
from nodecast.text import LIMIT, shown

_SECONDS = ["end to end", "GPU busy", "kernels", "copies", "memsets", "path: GPU", "path: host", "path: waits"]


@render.register(Comparison)
def render_comparison(comp: Comparison, console: Console | None = None, **_: object) -> None:
    """Print the comparison table and the notes."""
    console = console or t.console()
    console.print(t.plain(comp.trace, LIMIT, "bold")
                  + t.plain(f" on {shown(comp.source)} (A): end to end {t.fmt_seconds(comp.measured_end_to_end_s)} "
                            f"measured, {t.fmt_seconds(comp.replayed_end_to_end_s)} replayed"), soft_wrap=True)
    table = comp.table()
    rows = pd.DataFrame({"target": table["target"], "end to end": table["end_to_end_s"],
                         "interval": [t.fmt_interval_seconds(lo, hi) for lo, hi in
                                      zip(table["low_s"], table["high_s"], strict=True)],
                         "A / B": table["speedup"], "GPU busy": table["gpu_busy_s"],
                         "kernels": table["kernels_s"], "copies": table["copies_s"],
                         "memsets": table["memsets_s"], "path: GPU": table["path_gpu_s"],
                         "path: host": table["path_host_s"], "path: waits": table["path_other_s"],
                         "kept ops": table["kept_ops"]})
    if not (rows["memsets"] > 0).any():
        rows = rows.drop(columns="memsets")
    t.render(rows, "Forecast per target (end to end = first API call to last GPU op end; A / B > 1: B is faster; "
                    "GPU busy summed over GPUs; kernels, copies: summed op time; path: the critical path split into "
                    "GPU work, host work and launch/dependency waits; kept ops: GPU ops no model handles)",
             {**dict.fromkeys(_SECONDS, t.fmt_seconds), "A / B": t.fmt_ratio, "kept ops": t.fmt_int}, console)
    common = comp.common_notes()
    for note in common:
        console.print(t.plain(f"note: {note}"), soft_wrap=True)
    for label, notes in comp.notes.items():
        for note in notes:
            if note not in common:
                console.print(t.plain(f"note ({shown(label)}): {note}"), soft_wrap=True)
