"""``nodecast evaluate TRACE_A TRACE_B --from A --to B``: project run A onto B, compare with run B (WMAPE).

Also compares the whole runs (run A forecast on B as ``nodecast forecast``
does, against run B as measured). Two folders evaluate every pair of traces
with the same file name. --json and --html give the result as JSON and as
one self-contained HTML page.
"""

from __future__ import annotations

import argparse

from nodecast.commands import common
from nodecast.commands.report_options import add_notes_option, add_report_options, check_report_paths, emit
from nodecast.commands.transfer_options import add_transfer_options, host_memory, one_byte_given


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
    add_report_options(p, "the evaluation")
    add_notes_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.paths import is_dir

    if is_dir(args.trace_a, "trace A") or is_dir(args.trace_b, "trace B"):  # two folders: every pair, one table
        from nodecast.commands.evaluate_pairs import run_pairs

        return run_pairs(args)
    from nodecast.workflows.evaluate import TOTALS_ONLY, add_whole_run, evaluate
    from nodecast.fileio import check_writable
    from nodecast.cost.ops import CostOptions
    from nodecast.report import figures, files, terminal

    # Every output is checked before any work, so that a bad later path cannot
    # leave an earlier output written (and two lines on stderr).
    for option, out, check in (("--png", args.png, figures.check_figure_path),
                               ("-o", args.output, files.check_table_path),
                               ("--table", args.table, files.check_table_path)):
        if out:
            check(out)
            check_writable(out, option)
    check_report_paths(args, {"--png": args.png, "-o": args.output, "--table": args.table})
    given = one_byte_given(args)
    a = common.trace(args.trace_a)
    b = common.trace(args.trace_b)
    source, target = common.machines(args, a, b)
    metrics = common.metrics(args)
    ev = evaluate(a, b, source, target, common.parse_models(args.models), metrics=metrics, one_byte_s=given,
                  host_memory=host_memory(args))
    add_whole_run(ev, args.trace_a, args.trace_b,
                  CostOptions(metrics=metrics, one_byte_s=given, host_memory=host_memory(args)))
    written = emit(ev, args)
    if args.png and ev.totals_only:  # no per-op error to draw: the totals are in the Kernels table
        terminal.said(f"no op pair, {TOTALS_ONLY}: {args.png} not written")
    elif args.png:
        written.append(figures.draw(ev, args.png))
    if args.output:
        written.append(files.write_table(ev.per_op(), args.output))
    if args.table:
        written.append(files.write_table(files.table(ev), args.table))
    for path in written:
        terminal.wrote(path)
    return 0
