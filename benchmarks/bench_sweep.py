"""Throughput of a simulation sweep, one at a time and on a local Dask cluster.

Runs the same sweep (tiled Cholesky, several sizes and schedulers, on attila's
3 GPUs from StarPU's calibration files) with ``--jobs 1`` and with one job per
core, checks that both give the same results, and prints wall seconds and
simulated tasks per second for each (cluster start-up included).

Usage:
    python benchmarks/bench_sweep.py [--starpu-dir DIR] [--sizes 38400,48000,57600,67200] [--schedulers dmda,dmdas] [--jobs N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from nodecast.models.history import KernelModels
from nodecast.engine.platform import Platform
from nodecast.runtime.simulation import RuntimeOptions
from nodecast.workflows.simulate_sweep import Case, default_jobs, run_cases

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "starpu" / "sampling"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starpu-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--machine", default="attila")
    ap.add_argument("--sizes", default="38400,48000,57600,67200")
    ap.add_argument("--schedulers", default="dmda,dmdas")
    ap.add_argument("--jobs", type=int, default=default_jobs())
    args = ap.parse_args(argv)
    if not args.starpu_dir.is_dir():
        print(f"StarPU calibration folder not found: {args.starpu_dir} (give --starpu-dir)", file=sys.stderr)
        return 2
    plat = Platform.from_starpu(args.starpu_dir / "bus" / f"{args.machine}.platform.v4.xml")
    models = KernelModels(args.starpu_dir / "codelets" / "45", args.machine)
    cases = [
        Case(RuntimeOptions(scheduler=s), "cholesky", int(n), 960) for n in args.sizes.split(",") for s in args.schedulers.split(",")
    ]
    print(f"sweep: cholesky sizes {args.sizes} x schedulers {args.schedulers} on {args.machine} ({len(cases)} simulations)")
    results = {}
    for jobs in dict.fromkeys([1, args.jobs]):
        t0 = time.perf_counter()
        rows = run_cases(cases, plat, models, jobs=jobs)
        wall = time.perf_counter() - t0
        tasks = sum(r["tasks"] for r in rows)
        results[jobs] = [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
        print(f"jobs {jobs:3d}: wall {wall:7.2f} s, {tasks} tasks, {tasks / wall:9.0f} simulated tasks/s")
    if len(results) > 1:
        same = results[1] == results[args.jobs]
        print("results identical across job counts" if same else "RESULTS DIFFER across job counts")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
