"""``nodecast convert TRACE -o OUT``: any supported trace to Arrow or Parquet (read back by nodecast) or CSV.

Arrow and Parquet keep the Trace as it is (integer codes, ns timestamps,
names and metadata): Arrow is memory-mapped on reload (fastest), Parquet is
compact. CSV spells enums out as labels for spreadsheets and other tools;
nodecast does not read it back. The output format comes from OUT's
extension, checked before the trace is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nodecast.errors import InputError
from nodecast.fileio import check_writable
from nodecast.traces.load import load_trace
from nodecast.traces.parquet import to_csv, write_arrow, write_parquet
from nodecast.traces.trace import Trace

_WRITERS = {".parquet": write_parquet, ".arrow": write_arrow, ".csv": to_csv}


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


def summary(trace: Trace) -> str:
    """``3 kernels, 6 memcpy, 0 memsets, 2 syncs`` style count of ops per kind."""
    counts = trace.counts()
    return ", ".join(f"{counts.get(k, 0)} {label}" for k, label in
                     (("kernel", "kernels"), ("memcpy", "memcpy"), ("memset", "memsets"), ("sync", "syncs")))


def run(args: argparse.Namespace) -> int:
    """Load, write, print one line."""
    out = Path(args.output)
    writer = _WRITERS.get(out.suffix.lower())
    if writer is None:
        raise InputError(
            f"unsupported output extension {out.suffix or '(none)'!r}",
            path=out,
            hint="Name the output .parquet, .arrow or .csv",
        )
    check_writable(out, "-o")  # a missing folder fails now, not after reading a large trace
    trace = load_trace(args.trace)
    writer(trace, out)
    print(f"wrote {out}: {len(trace)} ops ({summary(trace)}) from {trace.meta.format} {trace.meta.source}")
    return 0
