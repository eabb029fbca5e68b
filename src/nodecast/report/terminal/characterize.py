"""``nodecast inspect`` at the terminal: AHEAD's Table I row, the transfers per kind, the size- and time-based
distributions (Fig. 1a/1b) and the costliest kinds."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from rich.console import Console

from nodecast.workflows.characterize import Characterization
from nodecast.report import tables as t
from nodecast.report.terminal import render
from nodecast.text import LIMIT, shown


@render.register(Characterization)
def render_characterization(ch: Characterization, console: Console | None = None, *, format: str = "",
                            gpus: Mapping[int, str] | None = None, **_: object) -> None:
    """Print ``ch``; ``format`` and ``gpus`` (device -> name): the trace's, for the first line."""
    console = console or t.console()
    names = ", ".join(f"{d}: {shown(n)}" for d, n in sorted((gpus or {}).items())) or "not recorded"
    console.print(t.plain(ch.source, LIMIT, "bold") + t.plain(f" ({format}; GPUs {names})"), soft_wrap=True)
    summary = pd.DataFrame([{
        "kernels": ch.n_kernels, "kernel time": ch.kernel_time_s,
        "transfers": ch.n_transfers, "transfer time": ch.transfer_time_s,
        "transfer share": ch.transfer_share, "memsets": ch.n_memsets, "memset time": ch.memset_time_s,
    }])
    t.render(summary, "GPU time (AHEAD Table I): transfer share = transfer / (kernel + transfer)",
             {"kernels": t.fmt_int, "transfers": t.fmt_int, "memsets": t.fmt_int,
              "kernel time": t.fmt_seconds, "transfer time": t.fmt_seconds, "memset time": t.fmt_seconds,
              "transfer share": t.fmt_share}, console)
    if not len(ch.per_class):
        console.print("No data transfers in this trace.")
        return
    pc = ch.per_class.sort_values("time_s", ascending=False)[
        ["label", "count", "bytes", "time_s", "time_share", "count_share", "effective_bw_bps"]]
    pc.columns = ["kind", "count", "bytes", "GPU time", "% of time", "% of count", "GB/s"]
    t.render(pc, "Transfers per kind, most expensive first (GB/s = bytes / GPU time, 1 GB = 1e9 B)",
             {"count": t.fmt_int, "bytes": t.fmt_bytes, "GPU time": t.fmt_seconds,
              "% of time": t.fmt_share, "% of count": t.fmt_share, "GB/s": t.fmt_gbps}, console)
    for title, dist in (("Size-based distribution: share of transfer count (AHEAD Fig. 1a)", ch.size_distribution),
                        ("Time-based distribution: share of transfer GPU time (AHEAD Fig. 1b)", ch.time_distribution)):
        t.render(dist.reset_index(names="class"), title, dict.fromkeys(dist.columns, t.fmt_share), console)
    top = ch.top_classes(3)
    console.print(t.plain("Costliest transfer kinds: " + "; ".join(
        f"{r.label} {100 * r.time_share:.1f} % of transfer time" for r in top.itertuples())), soft_wrap=True)
