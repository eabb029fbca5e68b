"""Throughput and memory of building and replaying the operation graph of a synthetic 1 M-op trace.

The trace (made here, in memory): ``--ops`` GPU ops on 8 streams of one GPU,
two kernels for every copy (copies alternate host-to-device and
device-to-host, pinned), each launched by its own runtime call
(cudaLaunchKernel / cudaMemcpyAsync) from one host thread, every 1001st call
a cudaStreamSynchronize of one stream: a graph of about 2 x ``--ops`` ops
(GPU ops and API ops, plus WAIT ops) with stream-order, launch, copy-engine,
program-order and sync edges.

Measured in a fresh process (so that peak memory is its own):

  build      nodecast.graph.build(trace, api): edges, calibration, Kahn order
  replay     nodecast.engine.replay(graph, durations): the compiled single pass
             (median of 5 runs after the first one)
  critical   metrics.critical_path on the replayed schedule

and prints ops/s per phase and peak memory per op. Per op means per *trace
op*: per GPU op of the input trace (kernel, copy or memset; the graph adds
about one host op per GPU op, its launch call, so it holds about twice as
many ops); the graph-op figure is printed beside it. Peak memory is the peak
resident set size (VmHWM) of one build, one replay and one critical path,
minus the resident size just before the build (the input Trace and ApiCalls
already built, numba's kernels already compiled), divided by the trace's GPU
ops. The issue's target is <= 300 B per op.
Link sharing (``--sharing-gpus N``, default 4; 0 skips it): the same program
with its streams spread over N GPUs in blocks (8 streams on 4 GPUs: two per
GPU), replayed on ``--machine`` (default dgx-a100, where GPUs 0-1 and 2-3
sit behind one PCIe switch each and share its host link) with
nodecast.engine.event_replay: ``copy_links`` (every copy's route, its rate
alone = the route's bottleneck) and ``replay_shared(path="auto")``, which
runs the single pass, finds the switch uplinks oversubscribed and replays
on the simulator's event engine and fluid network. Printed: which path ran
and why, events, replay ops/s (wall and CPU), and peak memory per op: peak
RSS of build + copy_links + replay_shared over the RSS with the input trace
loaded, and the replay's own share (peak during replay_shared over the RSS
after the build).
Figures, not a test: nothing here asserts a speed.

    python benchmarks/bench_replay.py [--ops 1000000] [--streams 8] [--sharing-gpus 4] [--machine dgx-a100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np


def vm(field: str) -> int:
    """A /proc/self/status memory field (VmRSS, VmHWM), bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    msg = f"{field} not in /proc/self/status"
    raise RuntimeError(msg)


def reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def synthetic(n_ops: int, n_streams: int, seed: int = 0, gpus: int = 1):  # noqa: ANN201
    """(Trace, ApiCalls) of the synthetic program (see the module docstring), timestamps in ns; with ``gpus`` > 1
    the streams are spread over that many GPUs in blocks (stream ``13 + i`` on GPU ``i * gpus // n_streams``)."""
    from nodecast.traces.api import ApiCalls, ApiMeta
    from nodecast.traces.kinds import CopyKind, MemKind, OpKind
    from nodecast.traces.trace import Trace, TraceMeta

    rng = np.random.default_rng(seed)
    n_sync = n_ops // 1000
    slots = n_ops + n_sync
    is_sync = (np.arange(slots) % 1001) == 1000
    call_start = np.arange(slots, dtype=np.int64) * 2000  # one call every 2 us, 1.5 us long
    call_end = call_start + 1500
    gpu_slot = np.flatnonzero(~is_sync)
    i = np.arange(n_ops)
    kind = np.where(i % 3 == 2, OpKind.MEMCPY, OpKind.KERNEL).astype(np.int8)
    copy = np.where(kind == OpKind.MEMCPY, np.where((i // 3) % 2 == 0, CopyKind.HTOD, CopyKind.DTOH), 0)
    stream = 13 + (i % n_streams)
    start = call_end[gpu_slot] + 1000  # the streams never fall behind the host: launch-bound
    dur = rng.integers(1000, 10000, n_ops)
    corr = np.arange(1, slots + 1, dtype=np.int64)
    device = ((stream - 13) * gpus // n_streams).astype(np.int16)
    trace = Trace.from_columns({
        "kind": kind, "copy_kind": copy, "start_ns": start, "end_ns": start + dur, "stream": stream, "device": device,
        "correlation": corr[gpu_slot], "bytes": np.where(kind == OpKind.MEMCPY, 1 << 20, 0),
        "src_mem": np.where(copy == CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE),
        "dst_mem": np.where(copy == CopyKind.DTOH, MemKind.PINNED, MemKind.DEVICE),
    }, ["kernel"], TraceMeta(source="synthetic", format="synthetic"))
    name = np.where(is_sync, 2, 0)
    name[gpu_slot] = np.where(kind == OpKind.MEMCPY, 1, 0)
    sync_stream = np.full(slots, -1, np.int64)
    sync_stream[is_sync] = 13 + (np.arange(n_sync) % n_streams)
    sync_device = np.where(is_sync, (sync_stream - 13) * gpus // n_streams, -1).astype(np.int16)
    api = ApiCalls.from_columns({
        "start_ns": call_start, "end_ns": call_end, "thread": np.ones(slots, np.int64), "correlation": corr,
        "name_id": name, "stream": sync_stream, "device": sync_device,
    }, ["cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize"],
        ApiMeta(source="synthetic", format="synthetic", copy_engines=dict.fromkeys(range(gpus), 2)))
    return trace, api


def child(n_ops: int, n_streams: int) -> dict:
    """One measured run in this process."""
    from nodecast._alloc import keep_large_allocations
    from nodecast.graph.build import build
    from nodecast.engine import metrics
    from nodecast.engine.replay import replay

    keep_large_allocations()  # what the nodecast command does at start
    warm_trace, warm_api = synthetic(3000, n_streams)
    warm = build(warm_trace, warm_api)  # compiles (or loads) the numba kernels
    metrics.critical_path(warm, replay(warm, warm.source_durations()))
    trace, api = synthetic(n_ops, n_streams)
    base = vm("VmRSS")
    reset_peak()
    t0 = time.perf_counter()
    graph = build(trace, api)
    t_build = time.perf_counter() - t0
    dur = graph.source_durations()
    schedule = replay(graph, dur)
    t0 = time.perf_counter()
    metrics.critical_path(graph, schedule)
    t_cp = time.perf_counter() - t0
    # NOTE: the peak of one build, one replay and one critical path; the timing loop below holds two schedules
    # at a time (the last one and the new one), which a forecast never does.
    peak = vm("VmHWM") - base
    times = []
    for _ in range(5):
        del schedule
        t0 = time.perf_counter()
        schedule = replay(graph, dur)
        times.append(time.perf_counter() - t0)
    n = len(graph)
    return {
        "gpu_ops": n_ops, "graph_ops": n, "edges": graph.n_edges,
        "build_s": t_build, "replay_s": float(np.median(times)), "critical_path_s": t_cp,
        "graph_bytes": graph.nbytes(), "peak_extra_bytes": peak,
    }


def child_shared(n_ops: int, n_streams: int, gpus: int, machine: str) -> dict:
    """One measured link-sharing run in this process."""
    from nodecast._alloc import keep_large_allocations
    from nodecast.graph.build import build
    from nodecast.engine.event_replay import copy_links, replay_shared
    from nodecast.machines import load_machine
    from nodecast.engine.platform import Platform

    keep_large_allocations()
    plat = Platform.from_machine(load_machine(machine))
    warm_trace, warm_api = synthetic(3000, n_streams, gpus=gpus)
    warm = build(warm_trace, warm_api)
    replay_shared(warm, warm.source_durations(), copy_links(warm, plat), path="event")  # loads numba's kernels
    del warm, warm_trace, warm_api
    trace, api = synthetic(n_ops, n_streams, gpus=gpus)
    base = vm("VmRSS")
    reset_peak()
    graph = build(trace, api)
    dur = graph.source_durations()
    links = copy_links(graph, plat)
    after_build = vm("VmRSS")
    peak_build = vm("VmHWM")
    reset_peak()
    c0, t0 = time.process_time(), time.perf_counter()
    r = replay_shared(graph, dur, links)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak_replay = vm("VmHWM")
    return {
        "gpu_ops": n_ops, "graph_ops": len(graph), "copies": r.copies, "path": r.path, "reason": r.reason,
        "events": r.events, "replay_s": wall, "replay_cpu_s": cpu, "makespan_s": float(r.schedule.end_s.max()),
        "peak_extra_bytes": max(peak_build, peak_replay) - base, "replay_extra_bytes": peak_replay - after_build,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=1_000_000, help="GPU ops in the synthetic trace")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--sharing-gpus", type=int, default=4, help="GPUs of the link-sharing case (0: skip it)")
    parser.add_argument("--machine", default="dgx-a100", help="machine of the link-sharing case")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-shared", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.ops, args.streams)))
        return
    if args.child_shared:
        print(json.dumps(child_shared(args.ops, args.streams, args.sharing_gpus, args.machine)))
        return
    out = subprocess.run([sys.executable, __file__, "--child", "--ops", str(args.ops), "--streams",
                          str(args.streams)], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    g, n = r["gpu_ops"], r["graph_ops"]
    print(f"synthetic trace: {g:,} GPU ops on {args.streams} streams -> graph of {n:,} ops, {r['edges']:,} edges")
    print(f"build        {r['build_s']:8.3f} s   {g / r['build_s'] / 1e6:6.2f} M GPU ops/s")
    print(f"replay       {r['replay_s'] * 1e3:8.1f} ms  {n / r['replay_s'] / 1e6:6.1f} M graph ops/s "
          f"({g / r['replay_s'] / 1e6:.1f} M GPU ops/s)")
    print(f"critical path{r['critical_path_s'] * 1e3:8.1f} ms")
    print(f"graph arrays {r['graph_bytes'] / g:8.1f} B per trace op ({r['graph_bytes'] / n:.1f} B per graph op)")
    print(f"peak memory  {r['peak_extra_bytes'] / g:8.1f} B per trace op ({r['peak_extra_bytes'] / n:.1f} B per graph op)"
          "  [peak RSS (VmHWM) of one build + replay + critical path over the RSS with the input trace loaded, "
          "divided by the trace's GPU ops (the issue's target: <= 300 B per op)]")
    if args.sharing_gpus <= 0:
        return
    out = subprocess.run([sys.executable, __file__, "--child-shared", "--ops", str(args.ops), "--streams",
                          str(args.streams), "--sharing-gpus", str(args.sharing_gpus), "--machine", args.machine],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    g, n = r["gpu_ops"], r["graph_ops"]
    print(f"link sharing: the same program on {args.sharing_gpus} GPUs of {args.machine}, {r['copies']:,} copies "
          f"on the network")
    print(f"path         {r['path']}: {r['reason']}")
    print(f"replay       {r['replay_s']:8.2f} s   {g / r['replay_s'] / 1e3:6.1f} k GPU ops/s, "
          f"{n / r['replay_s'] / 1e3:.1f} k graph ops/s (cpu {r['replay_cpu_s']:.2f} s: "
          f"{g / r['replay_cpu_s'] / 1e3:.1f} k GPU ops/s); {r['events']:,} events; makespan {r['makespan_s']:.3f} s")
    print(f"peak memory  {r['peak_extra_bytes'] / g:8.1f} B per trace op ({r['peak_extra_bytes'] / n:.1f} B per graph op)"
          "  [peak RSS of build + copy_links + replay_shared over the RSS with the input trace loaded, per GPU op]")
    print(f"replay alone {r['replay_extra_bytes'] / g:8.1f} B per trace op ({r['replay_extra_bytes'] / n:.1f} B per "
          "graph op)  [peak RSS of replay_shared over the RSS after the build]")


if __name__ == "__main__":
    main()
