"""``nodecast collectives`` at the terminal: per message size, each node's time, algbw, busbw, algorithm and protocol.

One row per size; one group of columns per node, side by side (one node: time, algbw, busbw, algorithm/protocol;
several: time, busbw and algorithm/protocol each, so that they fit). Bandwidths in GB/s (1 GB = 1e9 B), sizes in
B/KiB/MiB/GiB, times in ns/µs/ms/s; nccl-tests' definitions (docs/collectives.md). The notes follow, dimmed.
"""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from nodecast.report import tables as t
from nodecast.report.terminal import render
from nodecast.units import fmt_bytes, fmt_gbps, fmt_seconds
from nodecast.workflows.collectives import CollectivesResult


def side_by_side(result: CollectivesResult) -> pd.DataFrame:
    """The table as printed: a ``size`` column, then per node its time, (algbw,) busbw and algorithm/protocol."""
    one = len(result.names) == 1
    out = pd.DataFrame({"size": result.wide("time_s").index})
    for name in result.names:
        rows = result.table[result.table["machine"] == name].set_index("size_bytes").reindex(out["size"])
        label = "" if one else f"{name}\n"
        out[f"{label}time"] = rows["time_s"].to_numpy()
        if one:
            out["algbw GB/s"] = rows["algbw_bps"].to_numpy()
        out[f"{label}busbw GB/s"] = rows["busbw_bps"].to_numpy()
        algo = (rows["algorithm"] + "/" + rows["protocol"]).fillna("—").to_numpy()
        out[f"{label}algorithm"] = algo
    return out


@render.register(CollectivesResult)
def render_collectives(result: CollectivesResult, console: Console | None = None, **_: object) -> None:
    """Print the sizes side by side for every node (the node's name over its columns), then the notes."""
    from rich.table import Table
    from rich.text import Text

    console = console or t.console()
    df = side_by_side(result)
    groups = sorted(set(result.table["gpus"].tolist()))
    gpus = f"{groups[0]} GPUs" if len(groups) == 1 else "all GPUs of each node"
    table = Table(title=t.plain(f"{result.op.key}, {result.dtype.key}, {gpus}: time, busbw (nccl-tests' definitions; "
                                "GB/s, 1 GB = 1e9 B) and NCCL's algorithm/protocol per message size"),
                  title_justify="left")
    formats = []
    for col in df.columns:
        name, _, what = col.rpartition("\n")
        header = Text.assemble(t.plain(name, t.LIMIT), "\n", what) if name else Text(what)
        table.add_column(header, justify="left" if what == "algorithm" else "right")
        formats.append(fmt_seconds if what == "time" else fmt_gbps if "GB/s" in what else fmt_bytes
                       if what == "size" else str)
    for row in df.itertuples(index=False):
        t.add_row(table, *(f(v) for f, v in zip(formats, row, strict=True)))
    console.print(table)
    for note in result.notes:
        console.print(t.plain(f"note: {note}", style="dim"), soft_wrap=True)
