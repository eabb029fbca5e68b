"""``nodecast forecast`` with one target at the terminal: the line saying what B kept of A and what moved
(``cost.change``), end to end and GPU-busy measured on A, unchanged (A's times) and forecast on B with the decisive
notes under them, GPU time per category, the critical paths, the ops that moved the end to end most, where each
op's time came from, the ops kept at their source time, and the other notes (``_notes``)."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from nodecast.engine import metrics
from nodecast.cost.change import UNCHANGED
from nodecast.workflows.forecast import FORECAST, MEASURED, REPLAYED, ForecastResult
from nodecast.report import tables as t
from nodecast.speedup import SPEEDUP, speedup
from nodecast.report.terminal import _notes, render
from nodecast.text import LIMIT, shown


@render.register(ForecastResult)
def render_forecast(result: ForecastResult, console: Console | None = None, *, top: int = 10,
                    notes: str = _notes.DEFAULT, **_: object) -> None:
    """Print ``result``; ``top``: how many of the ops that moved the end to end most to list; ``notes``: which
    notes (``_notes.NOTES``: the decisive ones under the first table, the others after the tables)."""
    g = result.graph
    console = console or t.console()
    gpus = ", ".join(f"{d}: {shown(n)}" for d, n in sorted(g.gpus.items())) or "not recorded"
    source, target = shown(result.source.name), shown(result.target.name)
    console.print(t.plain(g.source, LIMIT, "bold") + t.plain(f" ({g.format}; GPUs {gpus}); {len(g):,} ops, "
                                                           f"{g.n_edges:,} edges; {source} -> {target}"),
                  soft_wrap=True)
    if result.change is not None:  # what B kept of A and what moved, in one line, before any number
        console.print(t.plain(result.change.text), soft_wrap=True)
    t.render(whole_table(result), f"Whole-application forecast, {source} (A) -> {target} (B)",
             {MEASURED: t.fmt_seconds, UNCHANGED: t.fmt_seconds, FORECAST: t.fmt_seconds, SPEEDUP: t.fmt_ratio},
             console)
    rest = _notes.head(console, result.notes, notes)
    cats = result.categories()
    per_category = cats.drop(columns=["low_s", "high_s"]) if not result.costs.has_interval else cats
    t.render(per_category.rename(columns={"source_s": "on A", "target_s": "on B", "low_s": "low", "high_s": "high"}),
             "GPU time per category (sum of op durations) and the models that gave it",
             {"ops": t.fmt_int, "on A": t.fmt_seconds, "on B": t.fmt_seconds, "low": t.fmt_seconds,
              "high": t.fmt_seconds}, console)
    cp = result.critical_paths()
    if len(cp):
        t.render(cp.rename(columns={"on_a_s": "on A (replayed)", "on_b_s": "on B (forecast)", "change_s": "change"}),
                 "Critical path by category (each column sums to its end to end)",
                 {"on A (replayed)": t.fmt_seconds, "on B (forecast)": t.fmt_seconds, "change": t.fmt_signed_seconds},
                 console)
    movers = result.movers(top)
    if top and len(movers):
        movers = movers.assign(name=movers["name"].str.slice(0, 60).map(shown))
        t.render(movers.rename(columns={"on_a_s": "on A's path", "on_b_s": "on B's path", "change_s": "change"}),
                 "Ops that moved the end to end most (time they add to the critical path)",
                 {"ops": t.fmt_int, "on A's path": t.fmt_seconds, "on B's path": t.fmt_seconds,
                  "change": t.fmt_signed_seconds}, console)
    prov = result.costs.provenance(g)
    t.render(prov.rename(columns={"source_s": "time on A", "target_s": "time on B"}),
             "Where each op's time on B comes from (source: kept at its time on A; host: host work)",
             {"ops": t.fmt_int, "time on A": t.fmt_seconds, "time on B": t.fmt_seconds}, console)
    kept = result.kept()
    if len(kept):
        kept = kept.assign(name=kept["name"].str.slice(0, 70).map(shown))
        t.render(kept.rename(columns={"source_s": "time on A"}), "GPU ops kept at their time on A (no model handles them)",
                 {"ops": t.fmt_int, "time on A": t.fmt_seconds}, console)
    _notes.tail(console, rest, notes)


def whole_table(result: ForecastResult) -> pd.DataFrame:
    """End to end and GPU-busy per GPU: measured on A, unchanged (``UNCHANGED``: A's times replayed, what the
    forecast gives when the models move nothing), forecast on B with its interval (text: "—" when no model gives
    one), and the speed-up, measured on A / forecast on B (``report.speedup``)."""
    low, high = result.interval_s if result.costs.has_interval else (float("nan"), float("nan"))
    e2e, measured = result.end_to_end_s, result.measured_end_to_end_s
    rows = [{"quantity": metrics.end_to_end_label(result.graph), MEASURED: measured,
             UNCHANGED: result.replayed_end_to_end_s, FORECAST: e2e, "interval on B": t.fmt_interval_seconds(low, high),
             SPEEDUP: result.speedup}]
    busy = result.busy_s()
    for d in sorted(busy[MEASURED]):
        m, f = busy[MEASURED][d], busy[FORECAST].get(d, float("nan"))
        rows.append({"quantity": f"GPU {d} busy (union of op intervals)", MEASURED: m,
                     UNCHANGED: busy[REPLAYED].get(d, float("nan")), FORECAST: f, "interval on B": "",
                     SPEEDUP: speedup(m, f)})
    return pd.DataFrame(rows)
