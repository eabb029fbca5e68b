"""Throughput of the metrics-free kernel projection on a trace of 1,000,000 kernel launches.

Builds the trace by repeating real launches, back to back, until it holds
``--launches`` kernel launches:

  zoo      the kernel zoo's GTX TITAN runs (../shared/data/kernel-zoo/Titan/*.csv):
           every kernel with the copies before and after it (the worst case of
           ``kernel_footprint``: a copy beside almost every kernel)
  training the V100 PyTorch training step (../shared/data/traces/kineto_training-rank0_v100.json.gz):
           4,350 kernels of 77 names, few copies

then times ``Model.project`` of wave-scaling, dram-ratio, flops-ratio,
default-kernel (no metrics: wave scaling for every kernel) and learned-kernel, each on a fresh
Trace so that no memoized work carries over, GTX TITAN -> GTX 970 (data
sheets), and prints launches per second of wall-clock time and of CPU time
(``time.process_time``; best of ``--repeat`` each) and the load average: on a
shared machine the wall-clock figure depends on what else runs, the CPU-time
figure much less (numpy runs these passes on one core). Figures, not a test:
nothing here asserts a speed.

    python benchmarks/bench_kernel_wave.py [--launches 1000000] [--repeat 5] [--source zoo|training]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def base_trace(source: str):  # noqa: ANN201 (a Trace)
    """The real launches the big trace repeats."""
    from nodecast.traces.load import load_trace
    from nodecast.traces.trace import Trace

    if source == "zoo":
        files = sorted((DATA / "kernel-zoo" / "Titan").glob("*.csv"))
        if not files:
            sys.exit(f"needs the kernel zoo in {DATA / 'kernel-zoo'}")
        return Trace.concat([load_trace(f) for f in files])
    path = DATA / "traces" / "kineto_training-rank0_v100.json.gz"
    if not path.exists():
        sys.exit(f"needs {path}")
    return load_trace(path)


def repeated(base, launches: int):  # noqa: ANN001, ANN201
    """``base`` repeated until it holds ``launches`` kernel launches (cut there), ops placed back to back."""
    from nodecast.traces.trace import Trace

    per = int(np.count_nonzero(base["kind"] == 0))
    reps = -(-launches // per)
    idx = np.tile(np.arange(len(base)), reps)
    kernel_count = np.cumsum(base["kind"][idx] == 0)
    idx = idx[: int(np.searchsorted(kernel_count, launches)) + 1]
    cols = {c: base[c][idx] for c in base.columns}
    dur = cols["end_ns"] - cols["start_ns"]
    start = np.cumsum(np.r_[0, dur[:-1] + 100])
    cols["start_ns"], cols["end_ns"] = start, start + dur
    cols["device"] = np.zeros(len(idx), dtype=np.int16)
    for c in ("src_device", "dst_device"):
        cols[c] = np.full(len(idx), -1, dtype=np.int16)
    return cols, base.names, base.meta, Trace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--source", choices=("zoo", "training"), default="zoo")
    args = parser.parse_args()

    from nodecast.machines import load_machine
    from nodecast.models.registry import get_models

    cols, names, meta, trace_cls = repeated(base_trace(args.source), args.launches)
    fresh = lambda: trace_cls.from_columns(cols, names, meta, sort=False)  # noqa: E731
    probe = fresh()
    n_kernels = int(np.count_nonzero(probe["kind"] == 0))
    print(f"{args.source}: {len(probe):,} ops, {n_kernels:,} kernel launches of {len(names):,} names; "
          f"GTX TITAN -> GTX 970 (data sheets); best of {args.repeat}")
    source, target = load_machine("gtx-titan"), load_machine("gtx-970")
    print(f"{'model':16s} {'seconds':>8s} {'launches/s':>12s} {'CPU s':>8s} {'launches/CPU s':>15s}")
    for model in get_models(["wave-scaling", "dram-ratio", "flops-ratio", "default-kernel", "learned-kernel"]):
        best = best_cpu = float("inf")
        for _ in range(args.repeat):
            trace = fresh()
            t0, c0 = time.perf_counter(), time.process_time()
            result = model.project(trace, source, target)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        assert int(result.handled.sum()) == n_kernels
        print(f"{model.name:16s} {best:8.3f} {n_kernels / best / 1e6:10.2f} M {best_cpu:8.3f} "
              f"{n_kernels / best_cpu / 1e6:13.2f} M")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
