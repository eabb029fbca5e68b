"""Same-node replay fidelity (issue 13, target 5a) on every trace in ../shared/data/traces.

For every Nsight Systems, nvprof and Kineto trace (and the nvprof GPU-trace
CSV, replayed by its documented fallback), build the OpGraph, replay it with
the trace's own measured durations (the replay reads op durations, host
gaps between API calls and the first timestamp, never a later recorded
start) and compare with the measured timeline:

- end-to-end = first API call (or earlier GPU op without API record) to the
  end of the last GPU op; target within 2 %;
- GPU-busy = union of GPU op intervals per device; target within 1 %;
- unexplained waits: GPU ops whose measured start is more than 100 us later
  than every in-edge of the graph allows on the measured timeline
  (``metrics.slack_s``), count and sum: what the trace does not record.

Prints a Markdown table (the one in docs/forecast.md) with the reason of
every miss, from ``MISSES`` below; a miss without a reason there is flagged.

    python benchmarks/bench_replay_fidelity.py [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"

#: Why a trace misses the target (checked against the unexplained-wait column).
MISSES = {
    "kineto_training-rank0_a100-80gb.json.gz": (
        "the trace has no cuda_sync records and no cudaEventRecord calls: the 425 cudaStreamWaitEvent calls name "
        "no stream or event (taken as waits on every other stream), 70 cudaGraphLaunch calls hide their graphs' "
        "edges, 872 ops were launched before the profile window; GPU ops start up to 150 ms later than every "
        "recorded dependency allows (cross-stream waits of a distributed training step), so the replay runs the "
        "GPU work early"),
    "nvprof_mxnet-cnn-inference_titan-v.nvvp": (
        "end-to-end is host-bound and exact; 13 GPU ops start 34 ms (sum) later than their launch and every "
        "recorded predecessor allow (the MXNet engine's 5 host threads and 20 streams; nothing in the trace says "
        "what held them), so the replay overlaps kernels that ran apart: GPU-busy -15 %"),
    "nvprof_vectoradd-streams-1M_t4.nvvp": (
        "4,000 ops of 2-10 us on 4 streams: GPU-busy (9.7 ms of 14.1 ms op time) depends on microsecond gaps, "
        "and the per-trace median launch and dependency latencies (copy-to-kernel has fewer than 20 waits to "
        "calibrate on) are 1-2 us off for many ops; end-to-end is exact"),
}


def rows(folder: Path) -> list[dict]:
    from nodecast.engine import metrics
    from nodecast.workflows.replay import replay_trace

    out = []
    files = sorted(p for p in folder.iterdir() if p.name.startswith(("nsys_", "nvprof", "kineto_")))
    for path in files:
        t0 = time.perf_counter()
        r = replay_trace(path)
        g = r.graph
        gpu = g.gpu_mask()
        slack = metrics.slack_s(g, r.measured)
        late = gpu & (slack > 1e-4)
        dev = min(r.measured_busy_s)
        e2e, busy = r.end_to_end_error, r.busy_error(dev)
        within = abs(e2e) < 0.02 and all(abs(r.busy_error(d)) < 0.01 for d in r.measured_busy_s)
        out.append({
            "trace": path.name, "format": g.format, "ops": int(gpu.sum()),
            "e2e_measured_s": r.measured_end_to_end_s, "e2e_replayed_s": r.replayed_end_to_end_s, "e2e_err": e2e,
            "busy_measured_s": r.measured_busy_s[dev], "busy_replayed_s": r.replayed_busy_s[dev], "busy_err": busy,
            "gpu_time_s": r.gpu_time_s[dev], "late_ops": int(late.sum()), "late_s": float(slack[late].sum()),
            "within": within, "seconds": time.perf_counter() - t0,
        })
    return out


def _ms(v: float) -> str:
    return f"{v * 1e3:,.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, default=TRACES)
    args = parser.parse_args()
    table = rows(args.traces)
    print("| trace | ops | end-to-end measured (ms) | replayed (ms) | error | GPU-busy measured (ms) | replayed (ms) "
          "| error | unexplained waits | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in table:
        late = f"{r['late_ops']} ops, {_ms(r['late_s'])} ms" if r["late_ops"] else "—"
        status = "met" if r["within"] else ("**miss** (see below)" if r["trace"] in MISSES else "**miss, unexplained**")
        if r["format"] == "nvprof-csv":
            status += " (fallback: exact by construction)"
        print(f"| {r['trace']} | {r['ops']:,} | {_ms(r['e2e_measured_s'])} | {_ms(r['e2e_replayed_s'])} "
              f"| {100 * r['e2e_err']:+.2f} % | {_ms(r['busy_measured_s'])} | {_ms(r['busy_replayed_s'])} "
              f"| {100 * r['busy_err']:+.2f} % | {late} | {status} |")
    met = sum(r["within"] for r in table)
    print(f"\n{met} of {len(table)} traces within target; total {sum(r['seconds'] for r in table):.1f} s.")
    for r in table:
        if not r["within"]:
            print(f"\n- {r['trace']}: {MISSES.get(r['trace'], 'NO EXPLANATION RECORDED')}")
    e2e = np.array([abs(r["e2e_err"]) for r in table])
    print(f"\nmedian |end-to-end error| {100 * np.median(e2e):.2f} %, max {100 * e2e.max():.2f} %")


if __name__ == "__main__":
    main()
