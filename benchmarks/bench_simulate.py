"""Throughput of nodecast's runtime simulator on the paper's largest Cholesky.

Simulates tiled Cholesky 72 000 (block 960: 75 x 75 tiles, 73 150 tasks) on
attila's 3 GPUs with dmda, from StarPU's calibration files, and prints the
wall and CPU seconds and the tasks simulated per second (graph construction
included, as StarPU's time includes the application submitting its tasks).
StarPU 1.4.9 over SimGrid 3.32 took 16.6 s of wall time for the same job on
this kind of machine (../shared/data/starpu/reference/README.md).

Usage:
    python benchmarks/bench_simulate.py [--starpu-dir DIR] [--size 72000] [--scheduler dmda] [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from nodecast.graph.apps import cholesky
from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions, Simulation

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "starpu" / "sampling"
STARPU_WALL_S = 16.6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starpu-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--machine", default="attila")
    ap.add_argument("--size", type=int, default=72000)
    ap.add_argument("--block-size", type=int, default=960)
    ap.add_argument("--scheduler", default="dmda")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    if not args.starpu_dir.is_dir():
        print(f"StarPU calibration folder not found: {args.starpu_dir} (give --starpu-dir)", file=sys.stderr)
        return 2
    best = None
    for _ in range(args.repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        plat = Platform.from_starpu(args.starpu_dir / "bus" / f"{args.machine}.platform.v4.xml")
        models = KernelModels(args.starpu_dir / "codelets" / "45", args.machine)
        graph = cholesky(args.size, args.block_size)
        w1 = time.perf_counter()
        res = Simulation(graph, plat, models, RuntimeOptions(scheduler=args.scheduler)).run()
        w2, c2 = time.perf_counter(), time.process_time()
        run = (w2 - w0, c2 - c0, w1 - w0, res)
        if best is None or run[0] < best[0]:
            best = run
    wall, cpu, build, res = best
    n = res.n_tasks
    print(f"cholesky {args.size} (block {args.block_size}), {n} tasks, {args.scheduler} on {args.machine} ({len(res.workers)} GPUs)")
    print(f"simulated makespan {res.makespan_s:.3f} s, {res.gflops:.1f} GFlop/s, {res.events} events, {res.purges} purges")
    print(f"wall {wall:.2f} s (graph {build:.2f} s), cpu {cpu:.2f} s, {n / wall:.0f} tasks/s wall, {n / cpu:.0f} tasks/s cpu")
    print(f"StarPU+SimGrid: {STARPU_WALL_S} s wall ({n / STARPU_WALL_S:.0f} tasks/s): nodecast is {STARPU_WALL_S / wall:.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
