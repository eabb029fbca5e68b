"""Throughput of the kernel projection on a 100 000-launch Nsight Compute metrics table.

Builds the table by repeating the 35 real V100 launches of the DeepCAM LAMB
set (../shared/data/traces/ncu-csv_v100_*, 12 one-metric files), then times

  model only        roofline eqs. 1-10 on KernelInputs (project_kernels)
  roofline model    RooflineModel.project on a Trace (join by name + order included)
  all kernel models project_metrics: roofline + dram-ratio + flops-ratio + plain-roofline
  read wide CSV     read_ncu_csv of the same launches written as one `--page raw` CSV

and prints launches per second for each (best of --repeat runs). The machines
are a V100 and an H100 with data-sheet peaks and Table 1's measured maxima.
Figures, not a test: nothing here asserts a speed.

    python benchmarks/bench_kernels.py [--launches 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


def machines():  # noqa: ANN201 (two Machines)
    """V100 and H100 with data-sheet peaks (DATASHEETS.md D.1) and Table 1's measured maxima."""
    from nodecast.machines.loader import machine_from_dict
    from nodecast.models.roofline_figures import measured_gpu_toml

    def one(name: str, gpu: str, fp64: float, fp32: float, dram: float):  # noqa: ANN202
        return machine_from_dict({
            "schema_version": 1, "name": name, "description": name,
            "cpu": {"model": "cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9, "memory_bytes": 1e11,
                    "memory_bandwidth_bps": 1e11},
            "gpu": {"model": gpu, "count": 1, "sms": 80, "clock_hz": 1.53e9, "memory_bytes": 1.6e10,
                    "peak_flops": {"fp64": {"fma": fp64, "addmul": fp64 / 2},
                                   "fp32": {"fma": fp32, "addmul": fp32 / 2},
                                   "fp16": {"fma": 2 * fp32, "addmul": fp32}},
                    "levels": {"dram": {"bandwidth_bps": dram}}},
            "links": [{"id": "p", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 3, "lanes": 16}],
            "measured": tomllib.loads(measured_gpu_toml(gpu))["measured"]}, f"{name}.toml")

    return one("v100", "V100", 7.8e12, 15.7e12, 900e9), one("h100", "H100", 33.5e12, 66.9e12, 3.35e12)


def repeated(n: int):  # noqa: ANN201 (KernelMetrics)
    """The real V100 launches repeated to ``n`` rows, occurrences renumbered."""
    from nodecast.traces.ncu import KernelMetrics, read_ncu_csv

    files = sorted(TRACES.glob("ncu-csv_v100_*.csv"))
    if len(files) != 12:
        sys.exit(f"needs the 12 ncu-csv_v100_* files in {TRACES}")
    base = read_ncu_csv(files)
    reps = -(-n // len(base))
    t = base.table.iloc[np.tile(np.arange(len(base)), reps)[:n]].reset_index(drop=True)
    t["id"] = np.arange(n)
    t["occurrence"] = t.groupby("kernel", sort=False).cumcount()
    return KernelMetrics(t, base.sources, base.present, base.notes)


def write_wide_csv(km, path: Path) -> None:  # noqa: ANN001
    """The launches as one ncu `--page raw` CSV in base units (header, units row, one row per launch)."""
    import csv

    from nodecast.traces.ncu import COLUMN_METRIC, DURATION

    cols = [(DURATION, "duration_s", "nsecond", 1e9)] + [
        (m, c, "byte" if c.endswith("bytes") else "", 1.0) for c, m in COLUMN_METRIC.items()
        if km.table[c].notna().all()]
    with path.open("w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"] + [c[0] for c in cols])
        w.writerow(["", "", "", "", ""] + [c[2] for c in cols])
        t = km.table
        data = [t[c[1]].to_numpy() * c[3] for c in cols]
        for i in range(len(t)):
            w.writerow([i, 1, "app", "host", t["kernel"].iat[i]] + [f"{d[i]:.6g}" for d in data])


def best(fn, repeat: int) -> float:  # noqa: ANN001
    """Best wall time of ``repeat`` calls, seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from nodecast.cost.kernels import project_metrics
    from nodecast.models.roofline import RooflineModel
    from nodecast.models.roofline_equations import KernelInputs, project_kernels
    from nodecast.models.roofline_figures import gpu_figures
    from nodecast.traces.ncu import read_ncu_csv, trace_from_metrics

    src, tgt = machines()
    km = repeated(args.launches)
    n = len(km)
    trace = trace_from_metrics(km)
    inp = KernelInputs.from_metrics(km)
    fs, ft = gpu_figures(src), gpu_figures(tgt, reference=src)
    rows = [
        ("model only (eqs. 1-10)", best(lambda: project_kernels(inp, fs, ft), args.repeat)),
        ("roofline model on a Trace", best(lambda: RooflineModel(km).project(trace, src, tgt), args.repeat)),
        ("all kernel models", best(lambda: project_metrics(km, src, tgt), args.repeat)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "raw.csv"
        write_wide_csv(km, path)
        rows.append(("read wide CSV", best(lambda: read_ncu_csv(path), 1)))
    print(f"{n:,} kernel launches (the 35 real V100 DeepCAM LAMB launches repeated), V100 -> H100")
    for name, secs in rows:
        print(f"  {name:<28} {secs * 1e3:9.1f} ms   {n / secs:14,.0f} launches/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
