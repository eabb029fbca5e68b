"""How much of a forecast's end to end rests on each of its notes: the notes' ``share`` (``nodecast.notes``).

A note about an assumption is weighed by the time, on B's critical path, of
what it assumes, over the forecast's end to end (seconds over seconds). The
critical path is what the end to end is made of (``metrics.critical_path``):
a value on it that is off by x % moves the answer by about x % of its share,
while an op off the path does not move it until it becomes critical. So a
note is decisive (``notes.DECISIVE_SHARE``) when what it assumes is more
than 3 % of the path. What each note is about covers:

========================  ==========================================================
``HOST_TIME``             host work: API calls, gaps between calls, sync returns,
                          and the recorded offsets of a trace without API records
``HOST_ASSUMED``          host work and copies between host and GPU (both run on or
                          through the host, whose speed is assumed)
``LATENCY_KEPT``          launch and GPU dependency latencies
``OPS_KEPT``              the GPU ops no model handles
``GPU_MISMATCH``          every GPU op (their models read another GPU's figures)
``HOST_MEMORY_UNKNOWN``   the copies of host memory the trace does not record as
                          pinned or pageable
``LEVELS_UNKNOWN``        the kernels given their time by the models that lack a
                          cache level's bandwidth
========================  ==========================================================

Other notes are left unweighed (severity "info").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np

from nodecast import notes as nn
from nodecast.graph.opgraph import OpKind
from nodecast.units import fmt_seconds
from nodecast.traces.kinds import TransferClass

if TYPE_CHECKING:
    from nodecast.cost.ops import OpCosts
    from nodecast.engine.metrics import CriticalPath
    from nodecast.graph.opgraph import OpGraph

#: Critical-path categories (``metrics.critical_path``) of host work, latencies, and copies through the host.
HOST = ("host: API calls", "host: gaps between calls", "host: sync returns", "host: before the first call",
        "recorded offsets (no API record)")
LATENCIES = ("launch latency", "GPU dependency latency")
HOST_COPIES = tuple(f"copies: {c.label}" for c in TransferClass if c.name.startswith(("HTOD", "DTOH")))
UNKNOWN_HOST_COPIES = (f"copies: {TransferClass.HTOD_UNKNOWN.label}", f"copies: {TransferClass.DTOH_UNKNOWN.label}")


def _is_gpu(category: str) -> bool:
    return category in ("kernels", "memsets") or category.startswith("copies: ")


def weigh(notes: Iterable[str], graph: OpGraph, costs: OpCosts, path: CriticalPath, end_to_end_s: float) -> list[str]:
    """``notes`` with those about an assumption weighed (module docstring): share and its number in the text."""
    notes = list(notes)
    if not end_to_end_s > 0:
        return notes
    by_category = path.breakdown_s

    def categories(keep: Callable[[str], bool]) -> float:
        return sum(v for k, v in by_category.items() if keep(k))

    def ops(mask: np.ndarray) -> float:
        return float(path.op_time_s[mask[path.ops]].sum())

    def levels_unknown() -> float:
        models = [costs.model_names.index(m) for m, r in costs.results.items()
                  if m in costs.model_names and any(nn.about(n) == nn.LEVELS_UNKNOWN for n in r.notes)]
        return ops((graph.ops["kind"] == OpKind.KERNEL) & np.isin(costs.model, models))

    host = categories(lambda k: k in HOST)
    scopes: dict[str, tuple[Callable[[], float], str]] = {
        nn.HOST_TIME: (lambda: host, "host work on B's critical path"),
        nn.HOST_ASSUMED: (lambda: host + categories(lambda k: k in HOST_COPIES),
                          "host work and copies between host and GPU on B's critical path"),
        nn.LATENCY_KEPT: (lambda: categories(lambda k: k in LATENCIES),
                          "launch and GPU dependency latencies on B's critical path"),
        nn.OPS_KEPT: (lambda: ops(costs.kept(graph)), "these ops on B's critical path"),
        nn.GPU_MISMATCH: (lambda: categories(_is_gpu), "GPU work on B's critical path"),
        nn.HOST_MEMORY_UNKNOWN: (lambda: categories(lambda k: k in UNKNOWN_HOST_COPIES),
                                 "these copies on B's critical path"),
        nn.LEVELS_UNKNOWN: (levels_unknown, "the kernels of these models on B's critical path"),
    }
    return nn.weigh_scoped(notes, scopes, end_to_end_s, "the forecast's end to end", fmt_seconds)
