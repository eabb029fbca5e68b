"""The least a dmda-style event loop costs per task in this Python: a lower bound, not a simulator.

Builds the benchmark's task graph (tiled Cholesky 72 000, block 960: 73 150
tasks) with nodecast, then runs the barest loop that still does what any
simulation of a dmda run must do per task: pop an event from a heap, place a
ready task on the GPU (of 3) that finishes it first counting a fixed cost per
input not yet on that GPU, mark its data valid there, push its end event,
and release its successors. No transfers are simulated, no memory, no
network sharing, no runtime overheads; durations are fixed per kernel.

It prints the graph's and the loop's cost per task. Their sum bounds from
below what ``benchmarks/bench_simulate.py`` can reach in this interpreter
(the issue's target of 100,000 tasks/s is 10 µs per task, graph included);
see docs/simulate-speed.md.

Usage:
    python benchmarks/bench_loop_floor.py [--size 72000] [--block-size 960] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from heapq import heappop, heappush

from nodecast.graph.apps import cholesky_tasks
from nodecast.graph.taskgraph import R

N_GPUS = 3
#: seconds per kernel (POTRF, TRSM, SYRK, GEMM: the order the graph numbers them); the values only set the order of events
KERNEL_S = (0.005, 0.01, 0.01, 0.02)
TRANSFER_S = 0.001  # predicted cost of one missing input


def run_once(size: int, block: int) -> tuple[int, float, float]:
    """Returns (tasks, graph seconds, loop seconds)."""
    t0 = time.perf_counter()
    g = cholesky_tasks(size, block)
    g.build()  # the OpGraph the simulator runs: counted in the graph's time
    t1 = time.perf_counter()
    n = g.n_tasks
    succs = g.succs
    npending = [len(p) for p in g.preds]
    length = [KERNEL_S[k] if k < len(KERNEL_S) else KERNEL_S[-1] for k in g.kernel]
    reads = [tuple(h for h, m in zip(hs, ms, strict=True) if m & R) for hs, ms in zip(g.handles, g.modes, strict=True)]
    handles = g.handles
    valid = [1] * len(g.data_bytes)  # bit 0: host memory, bit 1 + i: GPU i
    free_at = [0.0] * N_GPUS
    queue: list[tuple[float, int, int, int]] = []
    seq = 0
    for t in range(n):
        if npending[t] == 0:
            heappush(queue, (0.0, seq, 0, t))
            seq += 1
    t2 = time.perf_counter()
    done = 0
    while queue:
        now, _, ended, t = heappop(queue)
        if not ended:  # ready: place it where it ends first
            best, best_end = -1, math.inf
            for gpu in range(N_GPUS):
                bit = 2 << gpu
                start = now
                for h in reads[t]:
                    if not valid[h] & bit:
                        start += TRANSFER_S
                if free_at[gpu] > start:
                    start = free_at[gpu]
                end = start + length[t]
                if end < best_end:
                    best, best_end = gpu, end
            free_at[best] = best_end
            bit = 2 << best
            for h in handles[t]:
                valid[h] |= bit
            heappush(queue, (best_end, seq, 1, t))
            seq += 1
        else:
            done += 1
            for s in succs[t]:
                npending[s] -= 1
                if npending[s] == 0:
                    heappush(queue, (now, seq, 0, s))
                    seq += 1
    t3 = time.perf_counter()
    if done != n:  # pragma: no cover - a broken graph
        raise RuntimeError(f"only {done} of {n} tasks ran")
    return n, t1 - t0, t3 - t2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=72000)
    ap.add_argument("--block-size", type=int, default=960)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    runs = [run_once(args.size, args.block_size) for _ in range(args.repeat)]
    n, graph_s, loop_s = min(runs, key=lambda r: r[1] + r[2])
    us = 1e6 / n
    print(f"cholesky {args.size} (block {args.block_size}), {n} tasks, best of {args.repeat}")
    print(f"graph {graph_s:.2f} s ({graph_s * us:.1f} µs/task), bare dmda loop {loop_s:.2f} s ({loop_s * us:.1f} µs/task)")
    print(f"together {(graph_s + loop_s) * us:.1f} µs/task = {n / (graph_s + loop_s):,.0f} tasks/s at most (target: 100,000 tasks/s = 10 µs/task)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
