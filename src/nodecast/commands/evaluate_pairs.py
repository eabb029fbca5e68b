"""``nodecast evaluate DIR_A DIR_B``: every pair of traces with the same file name, one summary table.

Called by ``nodecast evaluate`` when its two arguments are folders; the work is
``nodecast.evaluate_kernels.evaluate_pairs``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nodecast.errors import InputError


def run_pairs(args: argparse.Namespace) -> int:
    """Evaluate the pairs, print the WMAPE per pair and model (and pooled), the pooled kernel errors, and skips."""
    from nodecast.commands import common
    from nodecast.commands.report_options import check_report_paths, emit
    from nodecast.evaluate_kernels import evaluate_pairs
    from nodecast.fileio import check_writable
    from nodecast.report import files, terminal

    if not (Path(args.trace_a).is_dir() and Path(args.trace_b).is_dir()):
        raise InputError("one argument is a folder and the other is not", key="evaluate",
                         hint="Give two trace files, or two folders of traces paired by file name")
    if getattr(args, "png", None) or getattr(args, "output", None):
        raise InputError("--png and -o apply to one pair of traces", key="--png" if args.png else "-o",
                         hint="With two folders, --table writes the errors of every pair and model")
    if args.table:
        files.check_table_path(args.table)
        check_writable(args.table, "--table")
    check_report_paths(args)
    result = evaluate_pairs(args.trace_a, args.trace_b, args.source, args.target, common.parse_models(args.models),
                            metrics=common.metrics(args), allow_gpu_mismatch=args.allow_gpu_mismatch)
    result.require_evaluated()
    written = emit(result, args)
    if args.table:
        written.append(files.write_table(files.table(result), args.table))
    for path in written:
        terminal.wrote(path)
    return 0
