"""``nodecast forecast`` with several targets (``--to a,b``, ``--sweep``) at the terminal: what each target kept of
A and changed (one line each, or one for all), the unchanged case's row (A's times) and one row per target, then
the notes every target shares once and the others with their target (``_notes``: the decisive ones first)."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from nodecast.engine import metrics
from nodecast.cost.change import UNCHANGED
from nodecast.workflows.targets import Comparison
from nodecast.report import tables as t
from nodecast.speedup import MEANING, SPEEDUP
from nodecast.report.terminal import _notes, render
from nodecast.text import LIMIT, shown

_SECONDS = ["end to end", "GPU busy", "kernels", "copies", "memsets", "path: GPU", "path: host", "path: waits"]


@render.register(Comparison)
def render_comparison(comp: Comparison, console: Console | None = None, *, notes: str = _notes.DEFAULT,
                      **_: object) -> None:
    """Print the comparison table and the notes (``notes``: which, ``_notes.NOTES``)."""
    console = console or t.console()
    console.print(t.plain(comp.trace, LIMIT, "bold")
                  + t.plain(f" on {shown(comp.source)} (A): end to end {t.fmt_seconds(comp.measured_end_to_end_s)} "
                            f"measured, {t.fmt_seconds(comp.replayed_end_to_end_s)} replayed"), soft_wrap=True)
    for line in comp.change_lines():
        console.print(t.plain(line), soft_wrap=True)
    table = comp.table_with_unchanged()  # the unchanged case first: did the models move the answer?
    interval = comp.intervals(table)
    rows = pd.DataFrame({"target": table["target"], "end to end": table["end_to_end_s"],
                         "interval": [t.fmt_interval_seconds(lo, hi) for lo, hi in
                                      zip(interval["low_s"], interval["high_s"], strict=True)],
                         SPEEDUP: table["speedup"], "GPU busy": table["gpu_busy_s"],
                         "kernels": table["kernels_s"], "copies": table["copies_s"],
                         "memsets": table["memsets_s"], "path: GPU": table["path_gpu_s"],
                         "path: host": table["path_host_s"], "path: waits": table["path_other_s"],
                         "kept ops": table["kept_ops"]})
    if not (rows["memsets"] > 0).any():
        rows = rows.drop(columns="memsets")
    start = metrics.end_to_end_start(metrics.notes_have_api(comp.common_notes()))
    t.render(rows, f"Forecast per target (end to end = {start} to last GPU op end; {UNCHANGED}: every op at its "
                    f"time on A, replayed; {SPEEDUP} {MEANING}; GPU busy summed over GPUs; kernels, copies: summed op "
                    "time; path: the critical path split into "
                    "GPU work, host work and launch/dependency waits; kept ops: GPU ops no model handles)",
             {**dict.fromkeys(_SECONDS, t.fmt_seconds), SPEEDUP: t.fmt_ratio, "kept ops": t.fmt_int}, console)
    common = comp.common_notes()
    # The decisive notes under the table (those every target shares, then each target's), the others after them.
    rest = {"": _notes.head(console, common, notes)}
    for label, own in comp.notes.items():
        rest[label] = _notes.head(console, [n for n in own if n not in common], notes, shown(label))
    if notes == "all":
        for label, others in rest.items():
            _notes.tail(console, others, notes, shown(label))
    else:
        _notes.tail(console, [n for others in rest.values() for n in others], notes)

