"""AHEAD's characterization of a trace: how much of the GPU time is data transfer.

Reproduces the quantities of the AHEAD paper's Table I (kernel time, transfer
time, transfer share of kernel + transfer time, transfer count) and Fig. 1
(size-based and time-based distributions of transfers), per transfer class.
All times here are GPU times (end - start) in seconds, as AHEAD uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nodecast.headline import Number
from nodecast.traces.kinds import OpKind, TransferClass
from nodecast.traces.trace import Trace

#: Size bins of the distributions, in bytes: [edge_i, edge_i+1). The first bin
#: is AHEAD's "less than 10 bytes" class of tiny transfers (Fig. 1 discussion).
SIZE_EDGES_BYTES = (0, 10, 1024, 64 * 1024, 1024**2, 16 * 1024**2, np.inf)
SIZE_LABELS = ("<10 B", "10 B-1 KiB", "1-64 KiB", "64 KiB-1 MiB", "1-16 MiB", ">=16 MiB")


@dataclass
class Characterization:
    """The result of ``characterize``; every time in seconds, sizes in bytes."""

    source: str
    kernel_time_s: float
    transfer_time_s: float
    memset_time_s: float
    n_kernels: int
    n_transfers: int
    n_memsets: int
    span_s: float
    per_class: pd.DataFrame = field(repr=False)
    size_distribution: pd.DataFrame = field(repr=False)
    time_distribution: pd.DataFrame = field(repr=False)

    @property
    def transfer_share(self) -> float:
        """Transfer time / (kernel + transfer time): AHEAD Table I's ratio (0-1)."""
        total = self.kernel_time_s + self.transfer_time_s
        return self.transfer_time_s / total if total > 0 else float("nan")

    def top_classes(self, n: int = 3) -> pd.DataFrame:
        """The transfer classes that cost the most GPU time."""
        return self.per_class.sort_values("time_s", ascending=False).head(n)

    def headline(self) -> list[Number]:
        """Kernel and transfer GPU time and the transfer share (AHEAD Table I)."""
        return [Number("kernel GPU time", self.kernel_time_s, "s", note=f"{self.n_kernels:,} kernels"),
                Number("transfer GPU time", self.transfer_time_s, "s", note=f"{self.n_transfers:,} transfers"),
                Number("transfer share, transfer / (kernel + transfer)", self.transfer_share, "share")]

    def to_dict(self) -> dict[str, object]:
        """Every value as plain Python (JSON-ready; seconds, bytes, shares 0-1): what ``inspect --json`` writes."""
        return {
            "table_one": self.table_one(),
            "counts": {"kernels": self.n_kernels, "transfers": self.n_transfers, "memsets": self.n_memsets},
            "memset_s": self.memset_time_s,
            "per_class": self.per_class.to_dict(orient="records"),
            "size_distribution": self.size_distribution.to_dict(orient="index"),
            "time_distribution": self.time_distribution.to_dict(orient="index"),
        }

    def table_one(self) -> dict[str, float | int | str]:
        """AHEAD Table I's row for this trace."""
        return {
            "trace": self.source,
            "kernels_s": self.kernel_time_s,
            "transfers_s": self.transfer_time_s,
            "transfer_share_pct": 100 * self.transfer_share,
            "transfer_count": self.n_transfers,
        }


def characterize(trace: Trace) -> Characterization:
    """Characterize the GPU operations of ``trace`` (vectorized over all ops)."""
    kind = trace["kind"]
    duration_s = trace.duration_ns.astype(np.float64) * 1e-9
    is_transfer = kind == OpKind.MEMCPY
    klass = trace.transfer_class[is_transfer]
    size = trace["bytes"][is_transfer]
    t = duration_s[is_transfer]

    present = [c for c in TransferClass if c != TransferClass.NOT_A_TRANSFER and np.any(klass == c)]
    rows = []
    total_t = float(t.sum())
    for c in present:
        sel = klass == c
        rows.append(
            {
                "class": c.key,
                "label": c.label,
                "count": int(sel.sum()),
                "bytes": int(size[sel].sum()),
                "time_s": float(t[sel].sum()),
                "time_share": float(t[sel].sum() / total_t) if total_t > 0 else np.nan,
                "count_share": float(sel.mean()),
                "mean_bytes": float(size[sel].mean()),
                "effective_bw_bps": float(size[sel].sum() / t[sel].sum()) if t[sel].sum() > 0 else np.nan,
            }
        )
    per_class = pd.DataFrame(
        rows,
        columns=["class", "label", "count", "bytes", "time_s", "time_share", "count_share",
                 "mean_bytes", "effective_bw_bps"],
    )

    bin_index = np.searchsorted(np.asarray(SIZE_EDGES_BYTES[1:-1]), size, side="right")
    count_table = np.zeros((len(present), len(SIZE_LABELS)))
    time_table = np.zeros((len(present), len(SIZE_LABELS)))
    for i, c in enumerate(present):
        sel = klass == c
        count_table[i] = np.bincount(bin_index[sel], minlength=len(SIZE_LABELS))
        time_table[i] = np.bincount(bin_index[sel], weights=t[sel], minlength=len(SIZE_LABELS))
    n_transfers = int(is_transfer.sum())
    index = [c.key for c in present]
    size_distribution = pd.DataFrame(
        count_table / max(n_transfers, 1), index=index, columns=list(SIZE_LABELS)
    )
    time_distribution = pd.DataFrame(
        time_table / total_t if total_t > 0 else time_table, index=index, columns=list(SIZE_LABELS)
    )

    span_s = float((trace["end_ns"].max() - trace["start_ns"].min()) * 1e-9) if len(trace) else 0.0
    is_kernel = kind == OpKind.KERNEL
    is_memset = kind == OpKind.MEMSET
    return Characterization(
        source=trace.meta.source,
        kernel_time_s=float(duration_s[is_kernel].sum()),
        transfer_time_s=total_t,
        memset_time_s=float(duration_s[is_memset].sum()),
        n_kernels=int(is_kernel.sum()),
        n_transfers=n_transfers,
        n_memsets=int(is_memset.sum()),
        span_s=span_s,
        per_class=per_class,
        size_distribution=size_distribution,
        time_distribution=time_distribution,
    )
