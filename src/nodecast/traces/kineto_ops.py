"""Which aten op launched each kernel of a Kineto trace.

A kernel event carries the correlation id of the runtime call that launched
it (``cudaLaunchKernel``, ``hipLaunchKernel``, ``cuLaunchKernel``...), and
that call sits on a CPU thread inside the ``cpu_op`` events (aten ops) that
were running: ``aten::linear`` > ``aten::addmm`` > the launch. The op that
launched the kernel is the innermost ``cpu_op`` on the call's thread whose
span holds the call's start. Spans nest on one thread: at equal starts the
shorter is inside the longer, and of two equal spans (integer-microsecond
traces give ``torch::distributed::reducer::mul_out`` and the ``aten::mul``
it calls the same one) the one written later is inside: the profiler writes
a caller before its callees.

PyTorch 2.x also writes, on the kernel, the ``External id`` of that
innermost op. It is taken first, and checked: an id that names an op which
does not hold the launch (or, with no launch recorded, starts after the
kernel) is not used. PyTorch 1.x traces (the A100 sample) give a kernel its
own correlation id there, which can equal some unrelated op's id: only the
time link holds for them.

Everything here works on int64 arrays; the one Python loop is over the
aten ops once (their nesting, ``_parents``).
"""

from __future__ import annotations

import numpy as np


def first_match(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Index of the first ``keys`` entry equal to each query; -1 where none, and for ids <= 0 (none)."""
    out = np.full(len(queries), -1, dtype=np.int64)
    if not len(keys) or not len(queries):
        return out
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    pos = np.minimum(np.searchsorted(ordered, queries, side="left"), len(ordered) - 1)
    hit = (ordered[pos] == queries) & (queries > 0)
    out[hit] = order[pos[hit]]
    return out


def _parents(start: np.ndarray, end: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """The enclosing op of every op (-1: none), ops sorted as ``launching_ops`` sorts them.

    An op that ends when the next starts is its sibling, not its parent:
    integer-microsecond traces put one op's end on the next one's start.
    """
    out = [-1] * len(start)
    ends = end.tolist()
    stack: list[int] = []
    current = None
    for i, (s, t) in enumerate(zip(start.tolist(), thread.tolist(), strict=True)):
        if t != current:
            stack, current = [], t
        while stack and ends[stack[-1]] <= s:
            stack.pop()
        if stack:
            out[i] = stack[-1]
        stack.append(i)
    return np.asarray(out, dtype=np.int64)


def launching_ops(
    kernel_ext: np.ndarray,
    kernel_start: np.ndarray,
    launch_start: np.ndarray,
    launch_thread: np.ndarray,
    op_start: np.ndarray,
    op_end: np.ndarray,
    op_thread: np.ndarray,
    op_ext: np.ndarray,
) -> np.ndarray:
    """Index of the op (into the op arrays) that launched each kernel; -1 where none is known.

    Per kernel: its External id (-1: none), GPU start (ns), and the start
    (ns) and thread of its launch call (thread -1: no launch recorded).
    Threads are int ids shared with ``op_thread``. Per op (aten ops whose
    times are known): start, end (ns), thread and External id.
    """
    n = len(kernel_ext)
    if not n or not len(op_start):
        return np.full(n, -1, dtype=np.int64)
    launched = launch_thread >= 0
    t, thread = launch_start, launch_thread

    # By thread, start, longest first; ties in file order (stable sort): a callee after its caller.
    order = np.lexsort((-op_end, op_start, op_thread))
    start, end, op_th = op_start[order], op_end[order], op_thread[order]
    parent = _parents(start, end, op_th)

    # The last op on the launch's thread starting at or before the launch; then up its enclosing ops until one
    # still runs at the launch (nesting makes that the innermost one holding it).
    inner = np.full(n, -1, dtype=np.int64)
    bounds = np.flatnonzero(np.diff(op_th)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(op_th)], strict=True):
        rows = np.flatnonzero(launched & (thread == op_th[lo]))
        if len(rows):
            pos = lo + np.searchsorted(start[lo:hi], t[rows], side="right") - 1
            inner[rows] = np.where(pos >= lo, pos, -1)
    while True:
        gone = (inner >= 0) & (end[np.maximum(inner, 0)] < t)
        if not gone.any():
            break
        inner[gone] = parent[inner[gone]]

    # The External id, where it names an op that holds the launch (or, with no launch, starts before the kernel).
    named = first_match(op_ext[order], kernel_ext)
    at = np.maximum(named, 0)
    holds = np.where(launched, (op_th[at] == thread) & (start[at] <= t) & (t <= end[at]), start[at] <= kernel_start)
    chosen = np.where((named >= 0) & holds, named, inner)
    return np.where(chosen >= 0, order[np.maximum(chosen, 0)], -1)
