"""``nodecast evaluate DIR_A DIR_B``: every pair of traces with the same file name, one summary table.

Called by ``nodecast evaluate`` when its two arguments are folders; the work is
``nodecast.workflows.evaluate_kernels.evaluate_pairs``.
"""

from __future__ import annotations

import argparse

from nodecast.errors import InputError


def run_pairs(args: argparse.Namespace) -> int:
    """Evaluate the pairs, print the WMAPE per pair and model (and pooled), the pooled kernel errors, and skips."""
    from nodecast.commands import common
    from nodecast.commands.report_options import check_report_paths, emit
    from nodecast.workflows.evaluate_kernels import evaluate_pairs, pair_files
    from nodecast.fileio import check_writable
    from nodecast.paths import is_dir
    from nodecast.report import files, terminal

    if not (is_dir(args.trace_a, "trace A") and is_dir(args.trace_b, "trace B")):
        raise InputError("one argument is a folder and the other is not", key="evaluate",
                         hint="Give two trace files, or two folders of traces paired by file name")
    if getattr(args, "png", None) or getattr(args, "output", None):
        raise InputError("--png and -o apply to one pair of traces", key="--png" if args.png else "-o",
                         hint="With two folders, --table writes the errors of every pair and model")
    if args.table:
        files.check_table_path(args.table)
        check_writable(args.table, "--table")
    pairs, _, _ = pair_files(args.trace_a, args.trace_b)  # the files read: an output may lie beside them, not on them
    check_report_paths(args, {"--table": args.table}, [path for _, a, b in pairs for path in (a, b)])
    result = evaluate_pairs(args.trace_a, args.trace_b, args.source, args.target, common.parse_models(args.models),
                            metrics=common.metrics(args), allow_gpu_mismatch=args.allow_gpu_mismatch)
    result.require_evaluated()
    written = emit(result, args)
    if args.table:
        written.append(files.write_table(files.table(result), args.table))
    for path in written:
        terminal.wrote(path)
    return 0
