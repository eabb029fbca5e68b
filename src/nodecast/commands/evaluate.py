"""``nodecast evaluate TRACE_A TRACE_B --from A --to B``: project run A onto B, compare with run B (WMAPE)."""

from __future__ import annotations

import argparse
import sys


from nodecast.commands import common
from nodecast.commands.transfer_options import add_transfer_options, host_memory, one_byte_given
from nodecast.evaluate import UNCHANGED, evaluate
from nodecast.report import tables as t
from nodecast.report.words import plural


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="project trace A onto node B and measure the error against trace B",
                       description=__doc__)
    p.add_argument("trace_a", help="trace recorded on the source node (or sample:NAME), or a folder of them")
    p.add_argument("trace_b", help="trace of the same program recorded on the target node, or a folder of them "
                                   "(paired with A's by file name)")
    common.add_machine_options(p, target_trace=True)
    common.add_model_option(p)
    common.add_metrics_option(p)
    add_transfer_options(p)
    p.add_argument("--png", metavar="FILE", help="box plot of per-op errors per model and transfer kind")
    p.add_argument("-o", "--output", metavar="FILE", help="matched ops with actual and projected times")
    p.add_argument("--table", metavar="FILE", help="the WMAPE table (.csv, .parquet or .json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    if Path(args.trace_a).is_dir() or Path(args.trace_b).is_dir():  # two folders: every pair, one table
        from nodecast.commands.evaluate_pairs import run_pairs

        return run_pairs(args)
    from nodecast.fileio import check_writable
    from nodecast.report.export import check_table_path, write_table
    from nodecast.report.figures import check_figure_path

    # Every output is checked before any work, so that a bad later path cannot
    # leave an earlier output written (and two lines on stderr).
    for option, out, check in (("--png", args.png, check_figure_path), ("-o", args.output, check_table_path),
                               ("--table", args.table, check_table_path)):
        if out:
            check(out)
            check_writable(out, option)
    given = one_byte_given(args)
    a = common.trace(args.trace_a)
    b = common.trace(args.trace_b)
    source, target = common.machines(args, a, b)
    ev = evaluate(a, b, source, target, common.parse_models(args.models), metrics=common.metrics(args),
                  one_byte_s=given, host_memory=host_memory(args))
    console = t.console()
    al = ev.alignment
    realigned = al.realigned_groups
    console.print(
        f"A: [bold]{a.meta.source}[/] ({plural(len(a), 'op')} on {source.name})\n"
        f"B: [bold]{b.meta.source}[/] ({plural(len(b), 'op')} on {target.name})\n"
        f"aligned {plural(len(al.index_a), 'op pair')}; evaluated {plural(len(ev.actual_s), 'projected op')}; "
        f"unmatched: {len(al.unmatched_a):,} in A, {len(al.unmatched_b):,} in B"
        + (f"; {plural(realigned, 'group')} re-aligned on {'its' if realigned == 1 else 'their'} byte or "
           "kernel-name sequence" if realigned else ""),
        highlight=False,
        soft_wrap=True,
    )
    table = ev.table()
    baseline = {m.name for m in ev.projection.models if m.baseline}
    scaled = {m.name for m in ev.projection.models if getattr(m, "source_scaled", False)}
    table.insert(1, "type", ["reference" if m == UNCHANGED else
                             ("scaled baseline" if m in scaled else "baseline") if m in baseline else
                             "scaled" if m in scaled else "model" for m in table["model"]])
    cats = [c for c in table.columns if c not in ("model", "type", "ops", "MAPE")]
    t.render(table, f"WMAPE (%) of projected GPU time, {source.name} -> {target.name}, per model and transfer kind",
             {**dict.fromkeys(cats, t.fmt_pct), "MAPE": t.fmt_pct, "ops": t.fmt_int}, console,
             caption="WMAPE = 100 * sum|actual - projected| / sum(actual) (AHEAD VI.C); MAPE = 100 * mean(|A - P| / A) "
                     "over all the model's ops; 'unchanged' = the op keeps its time on A; 'scaled' = A's measured "
                     "time x the model's B/A ratio (the source run as calibration).")
    from nodecast.evaluate_kernels import kernel_table

    kernels = kernel_table(ev)
    if len(kernels):
        aligned = plural(int((ev.category == "kernel").sum()), "aligned launch", "aligned launches")
        t.render(kernels, f"Kernels: MAPE and WMAPE (%) of the {aligned} (same name, launch order); totals: every "
                 "kernel of A projected against every kernel of B",
                 {"launches": t.fmt_int, "MAPE": t.fmt_pct, "WMAPE": t.fmt_pct, "projected_s": t.fmt_seconds,
                  "actual_s": t.fmt_seconds, "total_error": t.fmt_pct}, console)
    unmatched = al.unmatched_summary(a, b)
    if len(unmatched):
        t.render(unmatched, "Unmatched ops (not evaluated)", {"ops": t.fmt_int, "bytes": t.fmt_bytes}, console)
    from nodecast.graph.cost import CostOptions
    from nodecast.graph.evaluate import compare_or_reason

    whole, why = compare_or_reason(args.trace_a, args.trace_b, source, target,
                                   CostOptions(metrics=common.metrics(args), one_byte_s=given,
                                               host_memory=host_memory(args)), trace_a=a, trace_b=b)
    if whole is not None:
        t.render(whole.table(), f"Whole run: A forecast on {target.name} (nodecast forecast's default models) "
                 "against B as measured", {"on A": t.fmt_seconds, "actual on B": t.fmt_seconds,
                                           "forecast on B": t.fmt_seconds, "error": lambda v: t.fmt_pct(100 * v)},
                 console)
    ev.notes.extend(whole.notes if whole is not None else [f"whole-run comparison not made: {why}"])
    for note in (*source.notes, *target.notes, *ev.notes):
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    if args.png:
        from nodecast.report.figures import draw

        print(f"wrote {draw(ev, args.png)}", file=sys.stderr)
    if args.output:
        print(f"wrote {write_table(ev.per_op(), args.output)}", file=sys.stderr)
    if args.table:
        print(f"wrote {write_table(table, args.table)}", file=sys.stderr)
    return 0
