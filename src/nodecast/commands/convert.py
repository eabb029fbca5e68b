"""``nodecast convert TRACE -o OUT``: any supported trace to Arrow or Parquet (read back by nodecast) or CSV.

Arrow and Parquet keep the Trace as it is (integer codes, ns timestamps,
names and metadata): Arrow is memory-mapped on reload (fastest), Parquet is
compact. CSV spells enums out as labels for spreadsheets and other tools;
nodecast does not read it back. The output format comes from OUT's
extension, checked before the trace is read.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``convert`` subcommand."""
    p = sub.add_parser(
        "convert",
        help="convert a trace to Arrow or Parquet (read back by nodecast) or CSV (for spreadsheets)",
        description=__doc__,
    )
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, nodecast Arrow/Parquet) or sample:NAME")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file: .arrow (fastest to reload: memory-mapped), .parquet (compact) or .csv (for other tools; not read back)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Convert, print one line."""
    from nodecast.workflows.convert import convert
    from nodecast.report import terminal

    terminal.render(convert(args.trace, args.output))
    return 0
