"""``nodecast evaluate A B`` at the terminal: the two runs and their alignment, WMAPE per model and transfer kind,
the decisive notes, the kernels' errors, the unmatched ops, the whole run actual against forecast, and the other
notes (``_notes``)."""

from __future__ import annotations

from rich.console import Console

from nodecast.workflows.evaluate import TOTALS_ONLY, Evaluation
from nodecast.report import tables as t
from nodecast.report.terminal import _notes, render
from nodecast.words import plural
from nodecast.text import LIMIT, shown

WMAPE_CAPTION = ("WMAPE = 100 * sum|actual - projected| / sum(actual) (AHEAD VI.C); MAPE = 100 * mean(|A - P| / A) "
                 "over all the model's ops; 'unchanged' = the op keeps its time on A; 'scaled' = A's measured "
                 "time x the model's B/A ratio (the source run as calibration).")


@render.register(Evaluation)
def render_evaluation(ev: Evaluation, console: Console | None = None, *, notes: str = _notes.DEFAULT,
                      **_: object) -> None:
    """Print ``ev``; ``notes``: which notes (``_notes.NOTES``: the decisive ones under the first table)."""
    console = console or t.console()
    a, b = ev.projection.trace, ev.trace_b
    al = ev.alignment
    realigned = al.realigned_groups
    source, target = shown(ev.source.name), shown(ev.target.name)
    for label, trace, machine in (("A", a, source), ("B", b, target)):
        console.print(t.plain(f"{label}: ") + t.plain(trace.meta.source, LIMIT, "bold")
                      + t.plain(f" ({plural(len(trace), 'op')} on {machine})"), soft_wrap=True)
    console.print(
        t.plain(f"aligned {plural(len(al.index_a), 'op pair')}"
                + (f" ({al.by_work:,} by op, dtype and shape)" if al.by_work else "")
                + f"; evaluated {plural(len(ev.actual_s), 'projected op')}; "
                f"unmatched: {len(al.unmatched_a):,} in A, {len(al.unmatched_b):,} in B"
                + (f"; {plural(realigned, 'group')} re-aligned on {'its' if realigned == 1 else 'their'} byte or "
                   "kernel-name sequence" if realigned else "")),
        soft_wrap=True,
    )
    if ev.totals_only:  # no op pair to score: the kernel totals below are the comparison
        console.print(t.plain(f"WMAPE: no op of A paired with one of B that a model projected; {TOTALS_ONLY} "
                              "(Kernels, below)"), soft_wrap=True)
    else:
        table = ev.typed_table()
        cats = [c for c in table.columns if c not in ("model", "type", "ops", "MAPE")]
        t.render(table, f"WMAPE (%) of projected GPU time, {source} -> {target}, per model and "
                 "transfer kind", {**dict.fromkeys(cats, t.fmt_pct), "MAPE": t.fmt_pct, "ops": t.fmt_int}, console,
                 caption=WMAPE_CAPTION)
    rest = _notes.head(console, ev.all_notes(), notes)
    kernels = ev.kernels()
    if len(kernels):
        launches = int((ev.category == "kernel").sum())
        aligned = plural(launches, "aligned launch", "aligned launches")
        how = "same name, launch order" + ("; or same op, dtype and shape" if al.by_work else "")
        title = (f"Kernels: MAPE and WMAPE (%) of the {aligned} ({how}); totals: every kernel of A projected "
                 "against every kernel of B") if launches else (
                 f"Kernels: no launch of A paired with one of B, {TOTALS_ONLY}: every kernel of A projected against "
                 "every kernel of B")
        t.render(kernels, title,
                 {"launches": t.fmt_int, "MAPE": t.fmt_pct, "WMAPE": t.fmt_pct, "projected_s": t.fmt_seconds,
                  "actual_s": t.fmt_seconds, "total_error": t.fmt_pct}, console)
    unmatched = ev.unmatched()
    if len(unmatched):
        t.render(unmatched, "Unmatched ops (not evaluated)", {"ops": t.fmt_int, "bytes": t.fmt_bytes}, console)
    if ev.whole is not None:
        t.render(ev.whole.table(), f"Whole run: A forecast on {target} (nodecast forecast's default models) "
                 "against B as measured", {"on A": t.fmt_seconds, "actual on B": t.fmt_seconds,
                                           "forecast on B": t.fmt_seconds, "error": lambda v: t.fmt_pct(100 * v)},
                 console)
    _notes.tail(console, rest, notes)
