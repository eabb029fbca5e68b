"""Tracks of an operation graph: one per GPU stream and one per host thread, as timelines draw them.

A GPU op's track is its (device, stream); a host op's is its thread. The
profilers write thread ids as they come, and nvprof writes some as negative
numbers (a 32-bit id read as signed), so the track of an op is keyed by
(is host, device, queue) rather than by one signed number: host thread
-1368467231 stays a host thread.
"""

from __future__ import annotations

import numpy as np

from nodecast.graph.opgraph import OpGraph, OpKind


def tracks(graph: OpGraph) -> tuple[np.ndarray, list[str]]:
    """``(track index per op, track labels)``: ``GPU d stream q`` tracks first (by device, stream), then
    ``host thread t`` (by thread id)."""
    kind, queue, device = graph.ops["kind"], graph.ops["queue"].astype(np.int64), graph.ops["device"]
    host = kind > OpKind.MEMSET
    # Two 1-D uniques (one sort each) rather than one over (host, device, queue) rows: 2-D unique sorts rows as
    # void records, seconds on millions of ops. Streams are non-negative, so (device, stream) fits one int64.
    gpu_keys, gpu_index = np.unique(device[~host].astype(np.int64) * (1 << 40) + queue[~host], return_inverse=True)
    threads, host_index = np.unique(queue[host], return_inverse=True)
    index = np.empty(len(kind), np.int64)
    index[~host] = gpu_index.reshape(-1)
    index[host] = len(gpu_keys) + host_index.reshape(-1)
    labels = [f"GPU {int(k) >> 40} stream {int(k) & ((1 << 40) - 1)}" for k in gpu_keys]
    labels += [f"host thread {int(t)}" for t in threads]
    return index, labels
