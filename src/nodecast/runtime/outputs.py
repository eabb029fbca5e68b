"""The result of one simulated run, and the Chrome trace made from it.

``SimResult`` is the one result model of a single run: its summary (the
``--json`` file), tables (workers, GPU memory, links), the schedule and the
headline numbers. The Chrome trace (``write_chrome_trace``) is built here;
the terminal summary, the Gantt PNG and the HTML page are drawn by
``nodecast.report`` (``terminal/simulate.py``, ``figures/simulate.py``,
``html/simulate.py``). Units: seconds, bytes, bytes/s inside; GFlop/s means
10^9 floating-point operations per second of *simulated* time, counted from
the application's nominal operation count (Cholesky n^3/3 + n^2/2 + n/6, LU
2n^3/3), as StarPU's examples print it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodecast import trace_events
from nodecast.headline import Number

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class WorkerStats:
    """Busy and idle time of one worker over the makespan (s)."""

    name: str
    kind: str
    tasks: int
    busy_s: float
    idle_s: float


@dataclass(frozen=True)
class LinkStats:
    """Bytes carried and time busy (at least one flow) for one directed link."""

    name: str
    bandwidth_bps: float
    bytes: float
    busy_s: float


@dataclass(frozen=True)
class NodeStats:
    """Memory behaviour of one GPU: chunks allocated, evictions, write-backs."""

    name: str
    capacity_bytes: float
    peak_bytes: float
    mallocs: int
    evictions: int
    write_backs: int
    chunk_reuses: int
    full_events: int
    purges: int


@dataclass
class SimResult:
    """What one simulated run produced (see the module docstring for units).

    Made by ``Simulation.run`` (``nodecast.runtime.simulation``); this module
    does not know the runtime that fills it.
    """

    app: str
    platform: str
    scheduler: str
    n_tasks: int
    makespan_s: float
    total_flops: float
    workers: list[WorkerStats]
    links: list[LinkStats]
    nodes: list[NodeStats]
    transfers: dict[str, dict[str, float]]
    events: int
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, list] | None = None
    #: where the platform and kernel times came from (``platform_source``, ``kernel_models``, ``gpu_models``,
    #: ``cpus``, ``link_latency_s``); not part of ``summary()``, so the JSON summary keeps its fields
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def gflops(self) -> float:
        """Nominal GFlop/s over the simulated makespan."""
        return self.total_flops / self.makespan_s / 1e9 if self.makespan_s > 0 else math.nan

    @property
    def evictions(self) -> int:
        return sum(n.evictions for n in self.nodes)

    @property
    def write_backs(self) -> int:
        return sum(n.write_backs for n in self.nodes)

    @property
    def purges(self) -> int:
        """Memory reclaims (StarPU prints its "purge" warning at the first one)."""
        return sum(n.purges for n in self.nodes)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready dict of the result (without the trace)."""
        out = asdict(self)
        out.pop("trace", None)
        out.pop("inputs", None)
        out["gflops"] = self.gflops
        out["evictions"] = self.evictions
        out["write_backs"] = self.write_backs
        out["purges"] = self.purges
        return out

    def headline(self) -> list[Number]:
        """Makespan (s) and nominal GFlop/s (as flop/s), the numbers the run is read by."""
        return [
            Number("makespan", self.makespan_s, "s", note=f"{self.n_tasks:,} tasks on {self.platform}, {self.scheduler}"),
            Number("performance (nominal)", self.gflops * 1e9, "flop/s", note="nominal flop count / simulated makespan"),
        ]

    def workers_table(self) -> pd.DataFrame:
        """One row per worker: ``worker``, ``kind``, ``tasks``, ``busy_s``, ``idle_s`` (s), ``busy`` (share 0-1 of the makespan)."""
        import pandas as pd

        span = self.makespan_s
        return pd.DataFrame({
            "worker": [w.name for w in self.workers], "kind": [w.kind for w in self.workers],
            "tasks": [w.tasks for w in self.workers], "busy_s": [w.busy_s for w in self.workers],
            "idle_s": [w.idle_s for w in self.workers],
            "busy": [w.busy_s / span if span > 0 else 0.0 for w in self.workers],
        })

    def memory_table(self) -> pd.DataFrame:
        """One row per GPU: capacity and peak (bytes), mallocs, evictions, write-backs, chunk reuses, memory-full events, purges."""
        import pandas as pd

        return pd.DataFrame([asdict(n) for n in self.nodes],
                            columns=["name", "capacity_bytes", "peak_bytes", "mallocs", "evictions", "write_backs",
                                     "chunk_reuses", "full_events", "purges"])

    def busiest_links(self, top: int | None = None) -> list[LinkStats]:
        """Links that carried bytes, most bytes first (the first ``top`` of them)."""
        busy = sorted((link for link in self.links if link.bytes > 0), key=lambda link: -link.bytes)
        return busy if top is None else busy[:top]

    def links_table(self) -> pd.DataFrame:
        """Links that carried bytes, most first: bandwidth (B/s), bytes, busy time (s), mean rate while busy (B/s)."""
        import pandas as pd

        busy = self.busiest_links()
        return pd.DataFrame({
            "link": [x.name for x in busy], "bandwidth_bps": [x.bandwidth_bps for x in busy],
            "bytes": [x.bytes for x in busy], "busy_s": [x.busy_s for x in busy],
            "rate_bps": [x.bytes / x.busy_s if x.busy_s > 0 else 0.0 for x in busy],
        })

    def transfers_table(self) -> pd.DataFrame:
        """One row per copy direction (``src->dst``): copies and bytes."""
        import pandas as pd

        return pd.DataFrame({"direction": list(self.transfers),
                             "copies": [int(v["copies"]) for v in self.transfers.values()],
                             "bytes": [float(v["bytes"]) for v in self.transfers.values()]})

    def schedule(self) -> pd.DataFrame:
        """The schedule as one op table: ``track`` (worker, or ``src->dst`` for copies), ``start_s``, ``end_s`` (s),
        ``kind`` (the task's kernel, or ``transfer``), ``name`` (task or data). ``track`` is categorical: workers
        in their order, then copy directions. Needs a result run with ``trace=True``."""
        import pandas as pd

        if self.trace is None:
            msg = "this result has no trace (run with trace=True / --trace, --gantt or --html)"
            raise ValueError(msg)
        tasks, copies = self.trace["tasks"], self.trace["transfers"]
        pairs = [f"{c['src']}->{c['dst']}" for c in copies]
        # workers first, in their order, then copy directions: the Gantt chart's rows
        order = [w.name for w in self.workers] + sorted(set(pairs))
        return pd.DataFrame({
            "track": pd.Categorical([t["worker"] for t in tasks] + pairs, categories=order),
            "start_s": [t["start_s"] for t in tasks] + [c["start_s"] for c in copies],
            "end_s": [t["end_s"] for t in tasks] + [c["end_s"] for c in copies],
            "kind": [t["kernel"] for t in tasks] + ["transfer"] * len(copies),
            "name": [t["task"] for t in tasks] + [c["data"] for c in copies],
        })


# ------------------------------------------------------------------ renderers
def chrome_trace(result: SimResult) -> dict[str, Any]:
    """The schedule as a Chrome-trace JSON object (``traceEvents``) that Perfetto and chrome://tracing open.

    Process 1 holds one thread per worker (tasks), process 2 one thread per
    copy direction (transfers), process 3 the evictions as instant events.
    Timestamps are microseconds of simulated time. Needs a result run with
    ``trace=True``.
    """
    if result.trace is None:
        msg = "this result has no trace (run with trace=True / --trace)"
        raise ValueError(msg)
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": f"Workers ({result.scheduler})"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "Transfers"}},
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "Evictions"}},
    ]
    worker_tid = {w.name: i for i, w in enumerate(result.workers)}
    for name, tid in worker_tid.items():
        events.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": name}})
    for rec in result.trace["tasks"]:
        events.append(
            {
                "ph": "X",
                "pid": 1,
                "tid": worker_tid[rec["worker"]],
                "name": rec["task"],
                "cat": rec["kernel"],
                "ts": round(rec["start_s"] * 1e6, 3),
                "dur": round((rec["end_s"] - rec["start_s"]) * 1e6, 3),
            }
        )
    pair_tid: dict[str, int] = {}
    for rec in result.trace["transfers"]:
        pair = f"{rec['src']}->{rec['dst']}"
        if pair not in pair_tid:
            pair_tid[pair] = len(pair_tid)
            events.append({"ph": "M", "pid": 2, "tid": pair_tid[pair], "name": "thread_name", "args": {"name": pair}})
        events.append(
            {
                "ph": "X",
                "pid": 2,
                "tid": pair_tid[pair],
                "name": rec["data"],
                "cat": "transfer",
                "ts": round(rec["start_s"] * 1e6, 3),
                "dur": round((rec["end_s"] - rec["start_s"]) * 1e6, 3),
                "args": {"bytes": rec["bytes"]},
            }
        )
    for rec in result.trace["evictions"]:
        events.append(
            {"ph": "i", "s": "t", "pid": 3, "tid": 0, "name": f"evict {rec['data']} from {rec['node']}", "ts": round(rec["time_s"] * 1e6, 3)}
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"app": result.app, "platform": result.platform, "makespan_s": result.makespan_s, "gflops": result.gflops},
    }


def write_chrome_trace(result: SimResult, path: str | Path) -> None:
    """Write ``chrome_trace(result)`` with the one Chrome-trace writer (``nodecast.trace_events``: atomically,
    compact strict JSON, a number that is not finite null), keys sorted and a final newline as these files
    have always been."""
    doc = chrome_trace(result)
    trace_events.write(path, doc["traceEvents"], doc["otherData"], sort_keys=True, newline=True)
