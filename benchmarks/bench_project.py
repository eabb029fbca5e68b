"""Throughput of trace ingestion + transfer projection on a large real trace.

Builds a trace of >= 10 M ops by repeating a real one (AHEAD's Titan
bandwidthTest, shipped as sample data) with shifted timestamps, writes it
once as nodecast Arrow IPC and Parquet and (with --sqlite) as an nvprof-schema
SQLite file, then measures, each in a fresh subprocess so that peak memory is
its own:

  arrow+project     load_trace(.arrow, memory-mapped) + every transfer model
  parquet+project   load_trace(.parquet) + every transfer model
  project           every transfer model on an in-memory trace
  sqlite ingest     load_trace(nvprof SQLite), with --sqlite

and prints ops/s and peak resident memory per op (peak RSS of the phase,
VmHWM, minus the RSS of the same interpreter after imports, divided by the
op count).
Figures, not a test: nothing here asserts a speed.

``--models a,b`` projects only those models (as ``project --models``); the
default is every registered transfer model.

    python benchmarks/bench_project.py [--ops 10000000] [--sqlite] [--models a,b] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SAMPLE = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"


def rss_bytes() -> int:
    """Peak resident set size of this process so far, bytes.

    NOTE: from /proc/self/status VmHWM, not getrusage's ru_maxrss, which Linux
    carries across fork and exec: a phase child would report the parent's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes() -> int:
    """Current resident set size, bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def build(n_ops: int, workdir: Path, with_sqlite: bool) -> dict[str, str]:
    """Repeat the real sample until >= n_ops ops; write Parquet (and SQLite)."""
    from nodecast.traces.load import load_trace
    from nodecast.traces.parquet import write_arrow, write_parquet
    from nodecast.traces.trace import MISSING_NS, Trace

    base = load_trace(SAMPLE)
    reps = -(-n_ops // len(base))
    span = int(base["end_ns"].max() - base["start_ns"].min()) + 1000
    cols = {}
    for name, arr in base.columns.items():
        tiled = np.tile(arr, reps)
        if name in ("start_ns", "end_ns") or (name in ("api_start_ns", "api_end_ns")):
            shift = np.repeat(np.arange(reps, dtype=np.int64) * span, len(base))
            tiled = np.where(tiled == MISSING_NS, tiled, tiled + shift)
        elif name == "correlation":
            tiled = tiled + np.repeat(np.arange(reps, dtype=np.int64) * (int(arr.max()) + 1), len(base))
        cols[name] = tiled
    big = Trace(cols, base.names, base.meta)
    paths = {"parquet": str(workdir / "big.parquet"), "arrow": str(workdir / "big.arrow")}
    write_parquet(big, paths["parquet"])
    write_arrow(big, paths["arrow"])
    if with_sqlite:
        paths["sqlite"] = str(workdir / "big.nvvp")
        write_nvprof_like(big, paths["sqlite"], SAMPLE)
    return paths


def write_nvprof_like(trace, path: str, sample: str) -> None:  # noqa: ANN001
    """Copy the real sample's schema and fill its MEMCPY/RUNTIME tables with the repeated rows."""
    from importlib import resources

    src = Path(str(resources.files("nodecast") / "data" / "samples" / (sample.split(":", 1)[1] + ".nvvp")))
    Path(path).write_bytes(src.read_bytes())
    db = sqlite3.connect(path)
    db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    # nvprof CUPTI numbering: copyKind 1 = HtoD, memory kinds 2 = pinned, 3 = device.
    n = len(trace)
    rows = zip(np.full(n, 1).tolist(), np.full(n, 2).tolist(), np.full(n, 3).tolist(), np.zeros(n, int).tolist(),
               trace["bytes"].tolist(), trace["start_ns"].tolist(), trace["end_ns"].tolist(),
               np.zeros(n, int).tolist(), np.ones(n, int).tolist(), trace["stream"].tolist(),
               trace["correlation"].tolist(), trace["correlation"].tolist(), strict=True)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (copyKind, srcKind, dstKind, flags, bytes, start, end,"
                   " deviceId, contextId, streamId, correlationId, runtimeCorrelationId) VALUES"
                   " (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()


def phase(name: str, paths: dict[str, str], models: list[str] | None = None) -> dict[str, float]:
    """Run one measured phase in this (fresh) process and return its figures."""
    from nodecast.machines import load_machine
    from nodecast.models.registry import get_models
    from nodecast.cost.project import project
    from nodecast.traces.load import load_trace

    from nodecast._alloc import keep_large_allocations

    keep_large_allocations()  # what the nodecast command does at start
    source, target = load_machine("titan"), load_machine("summit")
    get_models(kind="transfer")  # import everything before the baseline RSS
    if name == "project":
        trace = load_trace(paths["parquet"])
    base_rss = current_rss_bytes()
    t0 = time.perf_counter()
    if name in ("arrow+project", "parquet+project"):
        trace = load_trace(paths[name.split("+")[0]])
        proj = project(trace, source, target, models, kind="transfer")
    elif name == "project":
        proj = project(trace, source, target, models, kind="transfer")
    elif name == "sqlite ingest":
        trace = load_trace(paths["sqlite"])
        proj = None
    wall = time.perf_counter() - t0
    n = len(trace)
    if proj is not None:
        assert all(r.handled.sum() > 0 for r in proj.results.values())
    return {"phase": name, "ops": n, "wall_s": wall, "ops_per_s": n / wall,
            "peak_bytes_per_op": (rss_bytes() - base_rss) / n,
            "models": len(proj.results) if proj is not None else 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=10_000_000)
    ap.add_argument("--sqlite", action="store_true", help="also measure SQLite ingestion (slow to build)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--models", default=None, help="comma-separated transfer models (default: all registered)")
    ap.add_argument("--_phase", help=argparse.SUPPRESS)
    ap.add_argument("--_paths", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._phase:
        models = args.models.split(",") if args.models else None
        print(json.dumps(phase(args._phase, json.loads(args._paths), models)))
        return
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        t0 = time.perf_counter()
        paths = build(args.ops, Path(tmp), args.sqlite)
        print(f"built {args.ops:,}+ op trace from {SAMPLE} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        phases = ["arrow+project", "parquet+project", "project"] + (["sqlite ingest"] if args.sqlite else [])
        print(f"{'phase':<16} {'ops':>12} {'wall s':>8} {'ops/s':>14} {'peak B/op':>10} models")
        for name in phases:
            extra = ["--models", args.models] if args.models else []
            out = subprocess.run([sys.executable, __file__, "--_phase", name, "--_paths", json.dumps(paths), *extra],
                                 check=True, capture_output=True, text=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{r['phase']:<16} {r['ops']:>12,} {r['wall_s']:>8.2f} {r['ops_per_s']:>14,.0f} "
                  f"{r['peak_bytes_per_op']:>10.0f} {r['models']}")


if __name__ == "__main__":
    main()
