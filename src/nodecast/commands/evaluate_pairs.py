"""``nodecast evaluate DIR_A DIR_B``: every pair of traces with the same file name, one summary table.

Called by ``nodecast evaluate`` when its two arguments are folders; the work is
``nodecast.evaluate_kernels.evaluate_pairs``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nodecast.errors import InputError


def run_pairs(args: argparse.Namespace) -> int:
    """Evaluate the pairs, print the WMAPE per pair and model (and pooled), the pooled kernel errors, and skips."""
    from nodecast.commands import common
    from nodecast.evaluate_kernels import evaluate_pairs
    from nodecast.fileio import check_writable
    from nodecast.report import tables as t
    from nodecast.report.export import check_table_path, write_table
    from nodecast.report.words import plural

    if not (Path(args.trace_a).is_dir() and Path(args.trace_b).is_dir()):
        raise InputError("one argument is a folder and the other is not", key="evaluate",
                         hint="Give two trace files, or two folders of traces paired by file name")
    if getattr(args, "png", None) or getattr(args, "output", None):
        raise InputError("--png and -o apply to one pair of traces", key="--png" if args.png else "-o",
                         hint="With two folders, --table writes the errors of every pair and model")
    if args.table:
        check_table_path(args.table)
        check_writable(args.table, "--table")
    result = evaluate_pairs(args.trace_a, args.trace_b, args.source, args.target, common.parse_models(args.models),
                            metrics=common.metrics(args), allow_gpu_mismatch=args.allow_gpu_mismatch)
    if not result.evaluated:
        first = next(o for o in result.outcomes if o.reason)
        raise InputError(f"no pair could be evaluated ({len(result.outcomes)} pairs; first, {first.name}: "
                         f"{first.reason})", key="evaluate")
    console = t.console()
    pairs = {o.name: f"{o.source} -> {o.target}" for o in result.evaluated}
    same = set(pairs.values())
    console.print(f"{plural(len(result.outcomes), 'pair')} of traces with the same file name in {args.trace_a} (A) "
                  f"and {args.trace_b} (B); evaluated {len(result.evaluated):,}"
                  + (f", all {next(iter(same))}" if len(same) == 1 else ""), highlight=False, soft_wrap=True)
    summary = result.summary()
    models = [c for c in summary.columns if c != "pair"]
    if len(same) > 1:
        summary.insert(1, "machines", summary["pair"].map(pairs).fillna(""))
    t.render(summary, "WMAPE (%) of projected GPU time per pair and model, over every evaluated op; 'all pairs' "
             "pools them (100 x sum|A - P| / sum A)", dict.fromkeys(models, t.fmt_pct), console)
    pooled = result.pooled()
    kernels = pooled[pooled["category"] == "kernel"].drop(columns="category")
    if len(kernels):
        t.render(kernels, "Kernels over all pairs: WMAPE and MAPE (%) of the aligned launches",
                 {"WMAPE": t.fmt_pct, "MAPE": t.fmt_pct, "ops": t.fmt_int, "pairs": t.fmt_int}, console)
    skipped = [o for o in result.outcomes if o.reason]
    for o in skipped:
        console.print(f"note: {o.name} not evaluated: {o.reason}", highlight=False, soft_wrap=True)
    for label, names in (("A", result.unpaired_a), ("B", result.unpaired_b)):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            console.print(f"note: {plural(len(names), 'file')} only in {label}: {shown}", highlight=False,
                          soft_wrap=True)
    if args.table:
        print(f"wrote {write_table(result.errors(), args.table)}", file=sys.stderr)
    return 0
