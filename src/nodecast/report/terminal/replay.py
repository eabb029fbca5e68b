"""``nodecast replay`` at the terminal: measured against replayed end to end and per GPU, the replay's critical
path by category, the calibrated launch latencies and the notes (``_notes``: decisive ones under the first table)."""

from __future__ import annotations

from rich.console import Console

from nodecast.workflows.replay import ReplayResult
from nodecast.report import tables as t
from nodecast.report.terminal import _notes, render
from nodecast.text import LIMIT, shown


@render.register(ReplayResult)
def render_replay(result: ReplayResult, console: Console | None = None, *, notes: str = _notes.DEFAULT,
                  **_: object) -> None:
    """Print ``result``; ``notes``: which notes (``_notes.NOTES``: the decisive ones under the first table)."""
    g = result.graph
    console = console or t.console()
    gpus = ", ".join(f"{d}: {shown(n)}" for d, n in sorted(g.gpus.items())) or "not recorded"
    console.print(t.plain(g.source, LIMIT, "bold")
                  + t.plain(f" ({g.format}; GPUs {gpus}); {len(g):,} ops, {g.n_edges:,} edges"), soft_wrap=True)
    t.render(result.table(), "Same-node replay with measured durations",
             {"measured": t.fmt_seconds, "replayed": t.fmt_seconds, "error": t.fmt_pct}, console)
    rest = _notes.head(console, result.notes, notes)
    cp = result.critical_path_table()
    if len(cp):
        t.render(cp, "Critical path of the replay, by category (sums to the replayed end to end)",
                 {"time": t.fmt_seconds, "share": t.fmt_share}, console)
    lat = g.params.get("launch_latency_s", {})
    if lat:
        console.print(t.plain("launch latency (calibrated, from the call's end): "
                              + ", ".join(f"{k} {t.fmt_seconds(v)}" for k, v in lat.items())), soft_wrap=True)
    _notes.tail(console, rest, notes)
