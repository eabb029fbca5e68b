"""``nodecast inspect TRACE``: AHEAD's characterization of a trace (Table I, Fig. 1)."""

from __future__ import annotations

import argparse

from nodecast.workflows.characterize import characterize
from nodecast.commands.common import trace as load
from nodecast.commands.report_options import add_report_options, check_report_paths, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="characterize a trace: kernel vs transfer time, size/time distributions",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    p.add_argument("--png", metavar="FILE", help="write the size- and time-based distributions (PNG/SVG)")
    add_report_options(p, "the characterization", html=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nodecast.report import terminal

    if args.png:
        from nodecast.fileio import check_writable
        from nodecast.report.figures import check_figure_path

        check_figure_path(args.png)  # fail before the work, not after
        check_writable(args.png, "--png")
    check_report_paths(args, {"--png": args.png})
    tr = load(args.trace)
    ch = characterize(tr)
    written = emit(ch, args, format=tr.meta.format, gpus=tr.meta.gpus)
    if args.png:
        from nodecast.report.figures import draw

        if not ch.n_transfers:
            terminal.said(f"no transfers: {args.png} not written")
        else:
            written.append(draw(ch, args.png))
    for path in written:
        terminal.wrote(path)
    return 0
