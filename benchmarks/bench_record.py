"""Throughput of ``nodecast record``'s SQLite writer (this measures the writer, not CUPTI or a GPU).

Builds N synthetic CUPTI activity records (plain dicts with CUPTI's fields,
default 1,000,000) in the proportions of a typical trace - for every kernel
launch: its runtime API record and the kernel; every 4th launch also a pinned
copy with its API record; every 64th a stream synchronization - then times

  convert   activities.Converter: CUPTI record -> nsys row (what the child does per record)
  write     sqlite_writer.write_trace: rows -> SQLite file, atomically (what the parent does)
  read      nodecast.traces.load.load_trace of the written file (the reader, for scale)

and prints records/s for each. Figures, not a test: nothing asserts a speed.

    python benchmarks/bench_record.py [--records 1000000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def synthetic_records(n: int) -> list[dict]:
    """``n`` CUPTI-like activity records (API calls, kernels, copies, syncs) with increasing timestamps."""
    from nodecast.record import activities as A

    recs: list[dict] = [{"kind": A.KIND_CONTEXT, "context_id": 1, "device_id": 0}]
    t = 0
    corr = 0
    launch = 0
    while len(recs) < n:
        launch += 1
        corr += 1
        t += 2_000
        recs.append({"kind": A.KIND_RUNTIME, "cbid": 211, "correlation_id": corr, "start": t, "end": t + 800,
                     "process_id": 1234, "thread_id": 1, "return_value": 0})
        recs.append({"kind": A.KIND_CONCURRENT_KERNEL, "name": f"_Z6kernelILi{corr % 50}EEvPf", "start": t + 1_000,
                     "end": t + 1_900, "device_id": 0, "context_id": 1, "stream_id": 7, "correlation_id": corr,
                     "grid_x": 1024, "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1, "block_z": 1,
                     "registers_per_thread": 32, "grid_id": corr})
        if launch % 4 == 0:
            corr += 1
            recs.append({"kind": A.KIND_RUNTIME, "cbid": 41, "correlation_id": corr, "start": t + 100, "end": t + 300,
                         "process_id": 1234, "thread_id": 1, "return_value": 0})
            recs.append({"kind": A.KIND_MEMCPY, "copy_kind": 1, "src_kind": 2, "dst_kind": 3, "bytes": 1 << 20,
                         "start": t + 400, "end": t + 950, "device_id": 0, "context_id": 1, "stream_id": 7,
                         "correlation_id": corr})
        if launch % 64 == 0:
            recs.append({"kind": A.KIND_SYNCHRONIZATION, "type": 3, "start": t + 1_900, "end": t + 1_950,
                         "context_id": 1, "stream_id": 7, "correlation_id": corr, "cuda_event_id": 0})
    return recs[:n]


def main() -> None:
    """Build, time, print."""
    from nodecast.record.activities import Converter
    from nodecast.record.sqlite_writer import write_trace
    from nodecast.traces.load import load_trace

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="synthetic activity records (default 1,000,000)")
    parser.add_argument("--workdir", type=Path, default=None, help="folder for the SQLite file (default: a temp dir)")
    args = parser.parse_args()

    recs = synthetic_records(args.records)
    conv = Converter(pid=1234, api_name=lambda kind, cbid: f"api_{cbid}")
    t0 = time.perf_counter()
    rows = [r for r in map(conv.convert, recs) if r is not None]
    t_convert = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        out = Path(tmp) / "bench.sqlite"
        t0 = time.perf_counter()
        counts = write_trace(rows, out)
        t_write = time.perf_counter() - t0
        size = out.stat().st_size
        t0 = time.perf_counter()
        trace = load_trace(out)
        t_read = time.perf_counter() - t0

    n = len(recs)
    print(f"nodecast record SQLite writer, {n:,} synthetic CUPTI activity records "
          f"({', '.join(f'{v:,} {k}' for k, v in counts.items() if v)}); file {size / 2**20:.1f} MiB")
    print(f"  convert (CUPTI record -> row):   {n / t_convert:12,.0f} records/s  ({t_convert:.2f} s)")
    print(f"  write   (rows -> SQLite file):   {n / t_write:12,.0f} records/s  ({t_write:.2f} s)")
    print(f"  read    (load_trace, for scale): {len(trace) / t_read:12,.0f} GPU ops/s  ({t_read:.2f} s, {len(trace):,} ops)")
    print("  (measures the writer on this machine's CPU; no GPU or CUPTI involved)")


if __name__ == "__main__":
    main()
