"""Results of a simulation and the files made from them.

``SimResult`` is the one result model; every renderer (text table, CSV/JSON,
Chrome trace, Gantt PNG, sweep plot) derives from it. Units: seconds, bytes,
bytes/s inside; GFlop/s means 10^9 floating-point operations per second of
*simulated* time, counted from the application's nominal operation count
(Cholesky n^3/3 + n^2/2 + n/6, LU 2n^3/3), as StarPU's examples print it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodecast.fileio import atomic_path
from nodecast.sim.dag import total_flops

if TYPE_CHECKING:
    from nodecast.sim.runtime import Simulation


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
    """What one simulated run produced (see the module docstring for units)."""

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

    @classmethod
    def from_simulation(cls, sim: Simulation) -> SimResult:
        plat = sim.platform
        span = sim.makespan_s
        workers = [WorkerStats(w.name, w.kind, w.ntasks, w.busy_s, max(0.0, span - w.busy_s)) for w in sim.workers]
        net = sim.net
        links = [
            LinkStats(name, bw, b, busy)
            for name, bw, b, busy in zip(plat.link_names, plat.link_bandwidth_bps, net.link_bytes, net.link_busy_s, strict=True)
        ]
        nodes = []
        for g in plat.gpu_nodes:
            m = sim.mem[g]
            nodes.append(
                NodeStats(
                    plat.node_names[g],
                    m.capacity_bytes,
                    m.peak_bytes,
                    m.mallocs,
                    m.evictions,
                    m.write_backs,
                    m.reuses,
                    m.full_events,
                    m.purges,
                )
            )
        transfers: dict[str, dict[str, float]] = {}
        for s in range(plat.n_nodes):
            for d in range(plat.n_nodes):
                if sim.copies[s][d]:
                    transfers[f"{plat.node_names[s]}->{plat.node_names[d]}"] = {
                        "copies": sim.copies[s][d],
                        "bytes": sim.bytes_moved[s][d],
                    }
        opt = sim.opt
        options = {
            "scheduler": opt.scheduler,
            "workers": opt.workers,
            "pipeline": opt.pipeline,
            "prefetch": opt.prefetch,
            "sharing": opt.sharing,
            "seed": opt.seed,
            "kernel_times": sim.models.mode,
            "overheads": asdict(opt.overheads),
        }
        trace = None
        if opt.trace:
            names, kernels, kernel, data_names = sim.graph.names, sim.tasks.kernels, sim.task_kernel, sim.tasks.data_names
            trace = {
                "tasks": [
                    {"task": names[t], "kernel": kernels[kernel[t]], "worker": sim.workers[w].name, "start_s": a, "end_s": b}
                    for t, w, a, b in sim.trace_tasks
                ],
                "transfers": [
                    {
                        "data": data_names[h],
                        "src": plat.node_names[s],
                        "dst": plat.node_names[d],
                        "bytes": size,
                        "start_s": a,
                        "end_s": b,
                    }
                    for h, s, d, size, a, b in sim.trace_hops
                ],
                "evictions": [{"time_s": t, "node": plat.node_names[n], "data": data_names[h]} for t, n, h, _ in sim.trace_evictions],
            }
        notes = list(dict.fromkeys(sim.notes))
        if sim.dropped_prefetches:
            notes.append(f"{sim.dropped_prefetches} prefetch attempt(s) postponed for lack of GPU memory")
        return cls(
            app=sim.tasks.name,
            platform=plat.name,
            scheduler=opt.scheduler,
            n_tasks=sim.n_tasks,
            makespan_s=span,
            total_flops=total_flops(sim.graph),
            workers=workers,
            links=links,
            nodes=nodes,
            transfers=transfers,
            events=sim.env.processed,
            notes=notes,
            options=options,
            trace=trace,
        )

    def summary(self) -> dict[str, Any]:
        """A JSON-ready dict of the result (without the trace)."""
        out = asdict(self)
        out.pop("trace", None)
        out["gflops"] = self.gflops
        out["evictions"] = self.evictions
        out["write_backs"] = self.write_backs
        out["purges"] = self.purges
        return out

    def write_json(self, path: str | Path) -> None:
        """Write ``summary()`` as JSON (atomically)."""
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(self.summary(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


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
    """Write ``chrome_trace(result)`` (atomically, compact JSON)."""
    doc = chrome_trace(result)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def write_gantt_png(result: SimResult, path: str | Path, *, transfers: bool = True) -> None:
    """Draw the schedule as a Gantt chart (one row per worker, then one per copy direction) to a PNG."""
    if result.trace is None:
        msg = "this result has no trace (run with trace=True / --trace or --gantt)"
        raise ValueError(msg)
    plt = _pyplot()
    rows = [w.name for w in result.workers]
    pairs = sorted({f"{t['src']}->{t['dst']}" for t in result.trace["transfers"]}) if transfers else []
    kernels = sorted({t["kernel"] for t in result.trace["tasks"]})
    cmap = plt.get_cmap("tab10")
    color = {k: cmap(i % 10) for i, k in enumerate(kernels)}
    fig, ax = plt.subplots(figsize=(12, 0.45 * (len(rows) + len(pairs)) + 1.5), dpi=100)
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for t in result.trace["tasks"]:
        spans.setdefault((t["worker"], t["kernel"]), []).append((t["start_s"], t["end_s"] - t["start_s"]))
    y = {name: i for i, name in enumerate(rows + pairs)}
    for (worker, kernel), xs in sorted(spans.items()):
        ax.broken_barh(xs, (y[worker] - 0.4, 0.8), facecolors=color[kernel], linewidth=0)
    xfer: dict[str, list[tuple[float, float]]] = {}
    for t in result.trace["transfers"]:
        xfer.setdefault(f"{t['src']}->{t['dst']}", []).append((t["start_s"], t["end_s"] - t["start_s"]))
    for pair in pairs:
        ax.broken_barh(xfer.get(pair, []), (y[pair] - 0.3, 0.6), facecolors="0.5", linewidth=0)
    ax.set_yticks(range(len(rows) + len(pairs)))
    ax.set_yticklabels(rows + pairs)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (s)")
    ax.set_xlim(0, result.makespan_s)
    ax.set_title(f"{result.app} on {result.platform}, {result.scheduler}: {result.makespan_s:.3f} s, {result.gflops:.1f} GFlop/s")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[k]) for k in kernels]
    ax.legend(handles, kernels, loc="upper right", fontsize=7, ncol=min(4, len(kernels)))
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def write_sweep_png(
    rows: list[dict[str, Any]],
    path: str | Path,
    *,
    title: str,
    reference: list[dict[str, Any]] | None = None,
) -> None:
    """GFlop/s against matrix size, one line per scheduler (the paper's Figs. 5 and 7).

    ``rows`` hold ``matrix_size``, ``scheduler``, ``gflops``; ``reference`` rows
    (same keys) are drawn as hollow markers, e.g. StarPU+SimGrid's predictions.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    scheds = list(dict.fromkeys(r["scheduler"] for r in rows))
    cmap = plt.get_cmap("tab10")
    for i, s in enumerate(scheds):
        pts = sorted((r["matrix_size"], r["gflops"]) for r in rows if r["scheduler"] == s)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=cmap(i % 10), label=f"{s} (nodecast)", markersize=4)
        if reference:
            ref = sorted((r["matrix_size"], r["gflops"]) for r in reference if r["scheduler"] == s)
            if ref:
                ax.plot([p[0] for p in ref], [p[1] for p in ref], "--", marker="s", mfc="none", color=cmap(i % 10), label=f"{s} (reference)", markersize=5)
    ax.set_xlabel("matrix size (elements per side)")
    ax.set_ylabel("GFlop/s (nominal flops / simulated time)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def summary_lines(result: SimResult) -> list[str]:
    """Plain-text summary: headline, per worker, per GPU memory, busiest links (units in every header)."""
    out = [
        f"{result.app} on {result.platform} with {result.scheduler}: makespan {result.makespan_s * 1e3:.1f} ms, "
        f"{result.gflops:.1f} GFlop/s (nominal), {result.n_tasks} tasks",
        "worker            tasks    busy (s)    idle (s)   busy %",
    ]
    for w in result.workers:
        pct = 100 * w.busy_s / result.makespan_s if result.makespan_s > 0 else 0.0
        out.append(f"{w.name:<14} {w.tasks:8d} {w.busy_s:11.4f} {w.idle_s:11.4f} {pct:7.1f}")
    if result.nodes:
        out.append("GPU memory      capacity (GB)  peak (GB)  mallocs  evictions  write-backs  purges")
        for n in result.nodes:
            out.append(
                f"{n.name:<14} {n.capacity_bytes / 1e9:14.3f} {n.peak_bytes / 1e9:10.3f} {n.mallocs:8d} {n.evictions:10d} {n.write_backs:12d} {n.purges:7d}"
            )
    busy = sorted((link for link in result.links if link.bytes > 0), key=lambda link: -link.bytes)[:8]
    if busy:
        out.append("link (busiest first)                     GB moved   busy (s)   mean GB/s while busy")
        for link in busy:
            rate = link.bytes / link.busy_s / 1e9 if link.busy_s > 0 else 0.0
            out.append(f"{link.name[:40]:<40} {link.bytes / 1e9:9.3f} {link.busy_s:10.4f} {rate:10.3f}")
    for note in result.notes:
        out.append(f"note: {note}")
    return out
