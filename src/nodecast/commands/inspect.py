"""``nodecast inspect TRACE``: AHEAD's characterization of a trace (Table I, Fig. 1)."""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from nodecast.characterize import characterize
from nodecast.commands.common import trace as load
from nodecast.report import tables as t


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="characterize a trace: kernel vs transfer time, size/time distributions",
                       description=__doc__)
    p.add_argument("trace", help="trace file (nsys/nvprof SQLite, Kineto JSON, nvprof CSV, Parquet) or sample:NAME")
    p.add_argument("--png", metavar="FILE", help="write the size- and time-based distributions (PNG/SVG)")
    p.add_argument("--json", action="store_true", help="print the characterization as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.png:
        from nodecast.fileio import check_writable
        from nodecast.report.figures import check_figure_path

        check_figure_path(args.png)  # fail before the work, not after
        check_writable(args.png, "--png")
    tr = load(args.trace)
    ch = characterize(tr)
    if args.json:
        out = {
            "table_one": ch.table_one(),
            "counts": {"kernels": ch.n_kernels, "transfers": ch.n_transfers, "memsets": ch.n_memsets},
            "memset_s": ch.memset_time_s,
            "per_class": ch.per_class.to_dict(orient="records"),
            "size_distribution": ch.size_distribution.to_dict(orient="index"),
            "time_distribution": ch.time_distribution.to_dict(orient="index"),
        }
        print(json.dumps(out, indent=1))
    else:
        console = t.console()
        gpus = ", ".join(f"{d}: {n}" for d, n in sorted(tr.meta.gpus.items())) or "not recorded"
        console.print(f"[bold]{tr.meta.source}[/] ({tr.meta.format}; GPUs {gpus})", soft_wrap=True)
        summary = pd.DataFrame([{
            "kernels": ch.n_kernels, "kernel time": ch.kernel_time_s,
            "transfers": ch.n_transfers, "transfer time": ch.transfer_time_s,
            "transfer share": ch.transfer_share, "memsets": ch.n_memsets, "memset time": ch.memset_time_s,
        }])
        t.render(summary, "GPU time (AHEAD Table I): transfer share = transfer / (kernel + transfer)",
                 {"kernels": t.fmt_int, "transfers": t.fmt_int, "memsets": t.fmt_int,
                  "kernel time": t.fmt_seconds, "transfer time": t.fmt_seconds, "memset time": t.fmt_seconds,
                  "transfer share": t.fmt_share}, console)
        if len(ch.per_class):
            pc = ch.per_class.sort_values("time_s", ascending=False)[
                ["label", "count", "bytes", "time_s", "time_share", "count_share", "effective_bw_bps"]]
            pc.columns = ["kind", "count", "bytes", "GPU time", "% of time", "% of count", "GB/s"]
            t.render(pc, "Transfers per kind, most expensive first (GB/s = bytes / GPU time, 1 GB = 1e9 B)",
                     {"count": t.fmt_int, "bytes": t.fmt_bytes, "GPU time": t.fmt_seconds,
                      "% of time": t.fmt_share, "% of count": t.fmt_share, "GB/s": t.fmt_gbps},
                     console)
            for title, dist in (("Size-based distribution: share of transfer count (AHEAD Fig. 1a)",
                                 ch.size_distribution),
                                ("Time-based distribution: share of transfer GPU time (AHEAD Fig. 1b)",
                                 ch.time_distribution)):
                df = dist.reset_index(names="class")
                t.render(df, title, dict.fromkeys(dist.columns, t.fmt_share), console)
            top = ch.top_classes(3)
            console.print("Costliest transfer kinds: " + "; ".join(
                f"{r.label} {100 * r.time_share:.1f} % of transfer time" for r in top.itertuples()), soft_wrap=True)
        else:
            console.print("No data transfers in this trace.")
    if args.png:
        from nodecast.report.figures import draw

        if ch.n_transfers:
            path = draw(ch, args.png)
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(f"no transfers: {args.png} not written", file=sys.stderr)
    return 0
