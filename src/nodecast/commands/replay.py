"""``nodecast replay TRACE``: rebuild the program's operation graph and replay it on the same node.

Prints the measured and replayed end-to-end time (first API call, or first
GPU op start in a trace without API records, to the end of the last GPU
op), GPU-busy time per device and the critical path of the
replay by category. The replay reads only op durations, host gaps between
calls and the first timestamp, so the difference measures the dependency
model alone. --json and --html give the result as JSON and as one
self-contained HTML page with both timelines.
"""

from __future__ import annotations

import argparse
import sys

from nodecast.commands.report_options import STDOUT, add_notes_option, add_report_options, check_report_paths, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a trace's operation graph on its own node (measured vs replayed)",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    p.add_argument("--trace", dest="chrome", metavar="OUT.json",
                   help="write the measured and replayed timelines as one Chrome trace (Perfetto, chrome://tracing)")
    p.add_argument("-o", "--output", metavar="OPS.csv|.parquet", help="write every op's measured and replayed start/end")
    p.add_argument("--copy-engines", type=int, metavar="N", default=None,
                   help="copy engines per direction per GPU (default: from the trace; 1 serialises same-direction copies)")
    add_report_options(p, "the replay")
    add_notes_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.fileio import check_writable
    from nodecast.workflows import export
    from nodecast.workflows.replay import replay_trace
    from nodecast.report import terminal

    if args.copy_engines is not None and args.copy_engines < 1:
        raise InputError(f"must be at least 1 (got {args.copy_engines})", key="--copy-engines")
    for path, option, check in ((args.chrome, "--trace", export.check_trace_path),
                                (args.output, "-o", export.check_ops_path)):
        if path:
            check(path)
            check_writable(path, option)
    check_report_paths(args, {"--trace": args.chrome, "-o": args.output})
    result = replay_trace(args.trace, copy_engines_per_direction=args.copy_engines)
    written = emit(result, args)
    if args.chrome:
        written.append(export.write_chrome_trace(result, args.chrome))
    if args.output:
        written.append(export.write_ops(result, args.output))
    if args.json != STDOUT:  # the JSON on stdout stays clean
        terminal.wrote(*written, stream=sys.stdout)
    return 0
