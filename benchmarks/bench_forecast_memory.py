"""Peak memory of the whole ``nodecast forecast`` command on a synthetic Nsight Systems trace, per op.

The trace is bench_replay.py's synthetic program (``--ops`` GPU ops on 8
streams of one GPU, two kernels for every pinned copy, each launched by its
own runtime call from one host thread, every 1001st call a
cudaStreamSynchronize; 50 kernel names), written as an nsys SQLite export by
nodecast's own writer (``nodecast.record.sqlite_writer``) with a Tesla T4 as
its GPU. The command run, in a fresh process, is the one a user runs on a
large trace with every output::

    nodecast forecast TRACE --to h100-sxm5-server --json J.json --html P.html -o OPS.parquet

Peak memory is the child's peak resident set size (``ru_maxrss`` from
``wait4``): reading the trace and its host records, the graph, the costs,
the replays on A and B, the critical paths, the terminal output, the JSON,
the page and the op table. It is run twice, on the trace and on a
``--small`` one (default 2,000 GPU ops: what the interpreter, the imports
and numba's kernels cost whatever the trace), and printed per GPU op of the
trace (what ``Trace`` holds; the graph adds about one host op per GPU op):

  peak            the command's peak RSS, and that over the trace's GPU ops
  per op          (peak - peak of the small trace) / (GPU ops - small GPU ops):
                  what each further op costs, which is what extrapolates
                  (``--ops 10_000_000`` needs about per-op x 1e7 plus the fixed part)

This is the regression check of issue 23 item 7 (a 9.8 M-record nsys trace
peaked at 7.2 GB): ``nodecast.out_of_memory`` quotes its per-op figure, and
docs/forecast.md ("Memory of the whole command") its last results. Figures,
not a test: nothing here asserts a size. Keep ``--ops`` to what the machine
can spare (about 0.8 kB per op at the time of writing: 2 M ops need about
1.8 GB, and writing the trace takes about 12 s per million ops).

    python benchmarks/bench_forecast_memory.py [--ops 1000000] [--small 2000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMAND = ("forecast", "{trace}", "--to", "h100-sxm5-server", "--json", "{out}/j.json", "--html", "{out}/p.html",
           "-o", "{out}/ops.parquet")
PID, THREAD = 4242, 1
#: What the ``nodecast`` console script runs (as a -c program: the same with any checkout on sys.path).
_MAIN = "import sys; from nodecast.cli import main; sys.exit(main(sys.argv[1:]))"


def _bench_replay():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_replay", HERE / "bench_replay.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _rows(n_ops: int) -> Iterator[dict]:
    """nsys rows (``sqlite_writer`` dicts) of bench_replay's synthetic program with ``n_ops`` GPU ops."""
    from nodecast.record.activities import INVALID_U32, global_pid, global_tid
    from nodecast.traces.kinds import CopyKind, OpKind

    trace, api = _bench_replay().synthetic(n_ops, 8)
    gpid, gtid = global_pid(PID), global_tid(PID, THREAD)
    yield {"table": "GPU", "vmId": 0, "id": 0, "name": "Tesla T4", "cuDevice": 0, "asyncEngines": 3}
    api_names = api.names
    for s, e, corr, name, stream in zip(api["start_ns"].tolist(), api["end_ns"].tolist(),
                                        api["correlation"].tolist(), api["name_id"].tolist(),
                                        api["stream"].tolist(), strict=True):
        yield {"table": "RUNTIME", "start": s, "end": e, "eventClass": 0, "globalTid": gtid, "correlationId": corr,
               "nameId": api_names[name], "returnValue": 0}
        if stream >= 0:  # cudaStreamSynchronize: its record, ending where the call returns
            yield {"table": "SYNCHRONIZATION", "start": s + 100, "end": e, "deviceId": 0, "contextId": 1,
                   "streamId": stream, "correlationId": corr, "globalPid": gpid, "syncType": 3,
                   "eventId": INVALID_U32}
    nsys_copy = {int(CopyKind.HTOD): 1, int(CopyKind.DTOH): 2}
    for i, (kind, s, e, stream, corr, copy) in enumerate(zip(
            trace["kind"].tolist(), trace["start_ns"].tolist(), trace["end_ns"].tolist(), trace["stream"].tolist(),
            trace["correlation"].tolist(), trace["copy_kind"].tolist(), strict=True)):
        common = {"start": s, "end": e, "deviceId": 0, "contextId": 1, "streamId": stream, "correlationId": corr,
                  "globalPid": gpid}
        if kind == OpKind.MEMCPY:
            htod = nsys_copy[copy] == 1
            yield {"table": "MEMCPY", **common, "bytes": 1 << 20, "copyKind": nsys_copy[copy],
                   "srcKind": 1 if htod else 2, "dstKind": 2 if htod else 1}  # nsys: 1 pinned, 2 device
        else:
            name = f"void kernel_{i % 50}<float>(float*, int)"
            yield {"table": "KERNEL", **common, "demangledName": name, "shortName": f"kernel_{i % 50}",
                   "registersPerThread": 32, "gridX": 1024, "gridY": 1, "gridZ": 1, "blockX": 256, "blockY": 1,
                   "blockZ": 1, "staticSharedMemory": 0, "dynamicSharedMemory": 0, "localMemoryPerThread": 0,
                   "localMemoryTotal": 0, "gridId": corr}


def write_trace(n_ops: int, path: Path) -> None:
    """The synthetic nsys export with ``n_ops`` GPU ops at ``path``."""
    from nodecast.record.sqlite_writer import write_trace as write

    write(_rows(n_ops), path, processes={PID: "synthetic"})


def run(trace: Path, out: Path) -> tuple[int, float]:
    """Peak RSS (bytes) and wall time (s) of the forecast command on ``trace`` in a fresh process."""
    args = [a.format(trace=trace, out=out) for a in COMMAND]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _MAIN, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        sys.exit(f"nodecast {' '.join(args)} exited {proc.returncode}:\n{err}")
    return usage.ru_maxrss * 1024, wall  # ru_maxrss: KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000, help="GPU ops of the measured trace (default 1,000,000)")
    ap.add_argument("--small", type=int, default=2_000, help="GPU ops of the fixed-cost trace (default 2,000)")
    ap.add_argument("--keep", type=Path, default=None, help="write the traces and outputs here and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        peaks = {}
        for label, n in (("small", args.small), ("large", args.ops)):
            trace, out = work / f"synthetic_{n}.sqlite", work / f"out_{n}"
            out.mkdir(exist_ok=True)
            t0 = time.perf_counter()
            write_trace(n, trace)
            t_write = time.perf_counter() - t0
            peaks[label] = (n, *run(trace, out))
            size = (out / "ops.parquet").stat().st_size
            print(f"{label:6s} {n:>11,} GPU ops: trace {trace.stat().st_size / 2**20:7.1f} MiB (written in "
                  f"{t_write:.1f} s); forecast {peaks[label][2]:6.1f} s, peak RSS {peaks[label][1] / 2**20:8.1f} MiB "
                  f"({peaks[label][1] / n:,.0f} B per GPU op); op table {size / 2**20:.1f} MiB")
    (n0, p0, _), (n1, p1, _) = peaks["small"], peaks["large"]
    per_op = (p1 - p0) / (n1 - n0)
    print(f"per op  {per_op:,.0f} B per GPU op above the fixed {p0 / 2**20:.0f} MiB "
          f"[(peak RSS - small trace's) / (GPU ops - small trace's); the graph has about 2 ops per GPU op]")
    print(f"extrapolated: 10 M GPU ops need about {(p0 + per_op * 1e7) / 2**30:.1f} GiB")


if __name__ == "__main__":
    main()
