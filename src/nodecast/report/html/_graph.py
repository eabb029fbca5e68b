"""Helpers of the pages of results over an operation graph (``nodecast forecast``, ``nodecast replay``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nodecast.graph import metrics
from nodecast.graph.opgraph import OpGraph, OpKind
from nodecast.graph.replay import Schedule


def timeline_ops(graph: OpGraph, schedule: Schedule) -> pd.DataFrame:
    """One row per op of ``graph`` as ``report.html.timeline`` draws it: track (``GPU d stream q`` or
    ``host thread t``), start and end (s after the graph's origin), kind (its critical-path category) and name."""
    kind, queue, device = graph.ops["kind"], graph.ops["queue"], graph.ops["device"]
    gpu = kind <= OpKind.MEMSET
    key = np.where(gpu, device.astype(np.int64) * (1 << 40) + queue, -1 - queue.astype(np.int64))
    tracks, inverse = np.unique(key, return_inverse=True)
    labels = np.array([f"GPU {int(k) >> 40} stream {int(k) & ((1 << 40) - 1)}" if k >= 0 else f"host thread {-1 - int(k)}"
                       for k in tracks], dtype=object)
    code, cats = metrics.op_category(graph)
    names = np.array([*graph.names, ""], dtype=object)[graph.ops["name_id"]]
    kinds = np.asarray(cats, dtype=object)[code]
    names = np.where(names == "", kinds, names)
    return pd.DataFrame({"track": labels[inverse], "start_s": schedule.start_s, "end_s": schedule.end_s,
                         "kind": kinds, "name": names})


def trace_summary(graph: OpGraph) -> str:
    """``nsys-sqlite; GPUs 0: Tesla T4; 325 ops, 482 edges``."""
    gpus = ", ".join(f"{d}: {n}" for d, n in sorted(graph.gpus.items())) or "not recorded"
    return f"{graph.format}; GPUs {gpus}; {len(graph):,} ops, {graph.n_edges:,} edges"


def critical_path_frame(breakdowns: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Breakdowns (run -> category -> seconds) as ``report.html.critical_path`` takes them: a row per run,
    categories ordered by their largest time."""
    cats = sorted({c for b in breakdowns.values() for c in b},
                  key=lambda c: -max(b.get(c, 0.0) for b in breakdowns.values()))
    return pd.DataFrame([[b.get(c, 0.0) for c in cats] for b in breakdowns.values()], index=list(breakdowns),
                        columns=cats)
