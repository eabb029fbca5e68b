"""Pair the ops of two runs of one program, on node A and on node B: what an evaluation compares.

Within each device and stream (paired by order of first appearance, since
stream ids differ between runs) ops of one kind and transfer class are
matched by order; their byte counts must agree. Where they do not (an op
inserted or missing in one run), that group is re-aligned on its byte
sequence with difflib, and whatever stays unpaired is reported (``Alignment``:
``unmatched_a``, ``unmatched_b``), never silently dropped. When either trace
does not record whether host memory was pinned or pageable (ROCm's Kineto
traces, nvprof's GPU-trace CSV), host copies are grouped by direction alone
in both, with a note: the same copy must not go unmatched because one
profiler says "pinned" and the other nothing.

Kernels pair by name (and launch order). Where both traces record what
their kernels compute (op tables: ``Trace['op_class']``, dtype and shape),
the name must agree with the op class, dtype and shape too, and kernels
left unpaired, whose names differ (cuBLAS chose another kernel on the other
GPU), pair by op class, dtype and shape in order of occurrence
(``Alignment.by_work`` counts them). ``workflows.evaluate`` measures the
errors of the pairs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nodecast.cost.project import op_category
from nodecast.notes import HOST_MEMORY_UNKNOWN, Note
from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass
from nodecast.traces.trace import SHAPE_COLUMNS, Trace, is_constant
from nodecast.words import plural


@dataclass
class Alignment:
    """Matched op indices of two traces, and what could not be matched."""

    index_a: np.ndarray
    index_b: np.ndarray
    unmatched_a: np.ndarray
    unmatched_b: np.ndarray
    realigned_groups: int = 0
    notes: list[str] = field(default_factory=list)
    by_work: int = 0  # pairs made by op class, dtype and shape (kernel names differing), not by name

    def unmatched_summary(self, a: Trace, b: Trace) -> pd.DataFrame:
        """Unmatched ops per trace and category (count, bytes)."""
        frames = []
        for label, trace, idx in (("A", a, self.unmatched_a), ("B", b, self.unmatched_b)):
            if len(idx):
                frames.append(pd.DataFrame({"trace": label, "category": op_category(trace)[idx],
                                            "bytes": trace["bytes"][idx]}))
        if not frames:
            return pd.DataFrame(columns=["trace", "category", "ops", "bytes"])
        df = pd.concat(frames)
        return df.groupby(["trace", "category"]).agg(ops=("bytes", "size"), bytes=("bytes", "sum")).reset_index()


#: Transfer class -> the class it is grouped with when host memory kinds are folded (pinned with pageable).
_BY_DIRECTION = np.arange(len(TransferClass), dtype=np.int64)
_BY_DIRECTION[TransferClass.HTOD_PINNED] = TransferClass.HTOD_PAGEABLE
_BY_DIRECTION[TransferClass.DTOH_PINNED] = TransferClass.DTOH_PAGEABLE
_BY_DIRECTION[TransferClass.HTOD_UNKNOWN] = TransferClass.HTOD_PAGEABLE
_BY_DIRECTION[TransferClass.DTOH_UNKNOWN] = TransferClass.DTOH_PAGEABLE


def unknown_host_memory(trace: Trace) -> int:
    """Host<->device copies whose host memory kind (pinned or pageable) the trace does not record."""
    kind, copy = trace["kind"], trace["copy_kind"]
    htod = (kind == OpKind.MEMCPY) & (copy == CopyKind.HTOD) & (trace["src_mem"] == MemKind.UNKNOWN)
    dtoh = (kind == OpKind.MEMCPY) & (copy == CopyKind.DTOH) & (trace["dst_mem"] == MemKind.UNKNOWN)
    return int(np.count_nonzero(htod | dtoh))


def _group_keys(trace: Trace, by_direction: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-op (group id, occurrence number within the group).

    A group is (device rank, stream rank within device, op kind, transfer
    class); ranks follow order of first appearance, so they survive runs with
    different stream or device ids. Synchronizations are left out (group -1).
    ``by_direction`` groups pinned and pageable host copies of one direction
    together.
    """
    n = len(trace)
    dev = trace["device"]
    stream = trace["stream"]
    # Rows are sorted by (device, start): first appearance = first row.
    dev_ids, dev_first = np.unique(dev, return_index=True)
    order = np.argsort(dev_first, kind="stable")
    rank_of_dev = np.empty(len(dev_ids), dtype=np.int64)
    rank_of_dev[order] = np.arange(len(dev_ids))
    dev_rank = rank_of_dev[np.searchsorted(dev_ids, dev)]
    pair = dev_rank * (1 << 32) + np.unique(stream, return_inverse=True)[1]
    pair_ids, pair_first = np.unique(pair, return_index=True)
    # Stream rank within device by order of first appearance.
    stream_rank = np.empty(len(pair_ids), dtype=np.int64)
    pf = pd.DataFrame({"dev": pair_ids >> 32, "first": pair_first})
    stream_rank[:] = pf.groupby("dev")["first"].rank(method="first").to_numpy(dtype=np.int64) - 1
    srank = stream_rank[np.searchsorted(pair_ids, pair)]
    klass = trace.transfer_class.astype(np.int64)
    if by_direction:
        klass = _BY_DIRECTION[klass]
    key = ((dev_rank * 4096 + srank) * 16 + trace["kind"].astype(np.int64)) * 16 + klass
    key = np.where(trace["kind"] == OpKind.SYNC, -1, key)
    occurrence = pd.Series(key).groupby(key).cumcount().to_numpy() if n else np.zeros(0, np.int64)
    return key, occurrence


def records_shapes(trace: Trace) -> bool:
    """Whether some kernel of ``trace`` records what it computes (an op class: op tables, and PyTorch profiler traces through the aten op that launched it)."""
    column = trace["op_class"]
    if is_constant(column):
        return bool(column[0] != 0) and bool(np.any(trace["kind"] == OpKind.KERNEL))
    return bool(np.any((column != 0) & (trace["kind"] == OpKind.KERNEL)))


#: What identifies a kernel's work beyond its name: op class, data type, shape and, for collectives, group and
#: message size (``bytes``).
_WORK_KEY = ("op_class", "dtype", *SHAPE_COLUMNS, "gpus", "bytes")


def _work_key(trace: Trace) -> np.ndarray:
    """(n, 8) int64: every op's ``_WORK_KEY`` columns."""
    return np.stack([np.asarray(trace[c], dtype=np.int64) for c in _WORK_KEY], axis=1)


def _tokens(a: Trace, b: Trace, with_work: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """What must agree between paired ops: bytes for copies and memsets, the name for kernels and, ``with_work``
    (both traces record it), the kernel's op class, dtype and shape too: one library kernel runs many shapes, and
    the 3rd launch of ``volta_sgemm_128x64_nn`` in A is not B's 3rd when they ran other shapes.

    Kernel names are compared without their parameter list, so that a
    demangled and a short name of one kernel still match.
    """
    index: dict[str, int] = {}

    def name_code(trace: Trace) -> np.ndarray:
        codes = np.array([index.setdefault(_bare_name(n), len(index)) for n in trace.names] + [-1], dtype=np.int64)
        return codes[trace["name_id"]]

    code_a, code_b = name_code(a), name_code(b)
    if with_work:  # one code per distinct (name, work key) over both traces
        keys = np.concatenate([np.column_stack([code_a, _work_key(a)]), np.column_stack([code_b, _work_key(b)])])
        codes = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1) if len(keys) else np.zeros(0, np.int64)
        code_a, code_b = codes[:len(a)], codes[len(a):]
    # Negative: never equal to a byte count.
    return (np.where(a["kind"] == OpKind.KERNEL, -2 - code_a, a["bytes"]),
            np.where(b["kind"] == OpKind.KERNEL, -2 - code_b, b["bytes"]))


def _pair_by_work(a: Trace, b: Trace, rows_a: np.ndarray, rows_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernels of ``rows_a`` and ``rows_b`` (unpaired by name) paired by op class, dtype and shape (``_WORK_KEY``),
    in order of occurrence per key: another library's kernel for the same work on the other GPU. Only kernels
    whose op class and a shape (m, n or k; a collective's message size) are recorded take part."""
    def candidates(trace: Trace, rows: np.ndarray) -> np.ndarray:
        rows = rows[trace["kind"][rows] == OpKind.KERNEL]
        cls = trace["op_class"][rows]
        shaped = (trace["m"][rows] >= 0) | (trace["n"][rows] >= 0) | (trace["k"][rows] >= 0) \
            | (trace["bytes"][rows] > 0)
        return rows[(cls != 0) & shaped]

    ca, cb = candidates(a, rows_a), candidates(b, rows_b)
    if not len(ca) or not len(cb):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = np.concatenate([_work_key(a)[ca], _work_key(b)[cb]])
    code = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
    fa = pd.DataFrame({"key": code[:len(ca)], "ia": ca})
    fb = pd.DataFrame({"key": code[len(ca):], "ib": cb})
    fa["occ"] = fa.groupby("key").cumcount()
    fb["occ"] = fb.groupby("key").cumcount()
    merged = fa.merge(fb, on=["key", "occ"], how="inner")
    return merged["ia"].to_numpy(np.int64), merged["ib"].to_numpy(np.int64)


def _bare_name(name: str) -> str:
    """Kernel name without its parameter list and return type (``void f<int>(float*)`` -> ``f<int>``)."""
    head = name.split("(", 1)[0].strip()
    return head[5:] if head.startswith("void ") else head


def align(a: Trace, b: Trace) -> Alignment:
    """Pair the ops of two runs of the same program (see the module docstring)."""
    notes = []
    unknown = {label: unknown_host_memory(t) for label, t in (("A", a), ("B", b))}
    by_direction = any(unknown.values())
    if by_direction:
        where = " and ".join(f"{plural(n, 'host copy', 'host copies')} of {label}" for label, n in unknown.items() if n)
        notes.append(Note(f"the trace does not record whether host memory was pinned or pageable for {where}: "
                          "host copies paired by direction alone (pinned and pageable together), each evaluated "
                          "as the kind A records", HOST_MEMORY_UNKNOWN))
    key_a, occ_a = _group_keys(a, by_direction)
    key_b, occ_b = _group_keys(b, by_direction)
    shapes = records_shapes(a) and records_shapes(b)
    tok_a, tok_b = _tokens(a, b, with_work=shapes)
    fa = pd.DataFrame({"key": key_a, "occ": occ_a, "ia": np.arange(len(a))})
    fb = pd.DataFrame({"key": key_b, "occ": occ_b, "ib": np.arange(len(b))})
    fa, fb = fa[fa.key >= 0], fb[fb.key >= 0]
    merged = fa.merge(fb, on=["key", "occ"], how="inner")
    ia, ib = merged["ia"].to_numpy(), merged["ib"].to_numpy()
    same = tok_a[ia] == tok_b[ib]
    bad_keys = np.unique(merged["key"].to_numpy()[~same])
    keep_a, keep_b = [ia[~np.isin(merged["key"], bad_keys)]], [ib[~np.isin(merged["key"], bad_keys)]]
    for k in bad_keys:  # rare: an op inserted or missing in one run
        ga = fa["ia"].to_numpy()[fa["key"].to_numpy() == k]
        gb = fb["ib"].to_numpy()[fb["key"].to_numpy() == k]
        matcher = difflib.SequenceMatcher(None, tok_a[ga].tolist(), tok_b[gb].tolist(), autojunk=False)
        for block in matcher.get_matching_blocks():
            keep_a.append(ga[block.a:block.a + block.size])
            keep_b.append(gb[block.b:block.b + block.size])
    index_a = np.concatenate(keep_a).astype(np.int64)
    index_b = np.concatenate(keep_b).astype(np.int64)
    in_scope_a = np.flatnonzero(key_a >= 0)
    in_scope_b = np.flatnonzero(key_b >= 0)
    by_work = 0
    if shapes:  # kernels whose names differ (another library kernel on the other GPU): by what they compute
        wa, wb = _pair_by_work(a, b, np.setdiff1d(in_scope_a, index_a), np.setdiff1d(in_scope_b, index_b))
        by_work = len(wa)
        if by_work:
            index_a, index_b = np.concatenate([index_a, wa]), np.concatenate([index_b, wb])
            notes.append(f"{plural(by_work, 'kernel launch', 'kernel launches')} of A paired with one of B by op, "
                         "dtype and shape, their kernel names differing (another library kernel on the other GPU)")
    order = np.argsort(index_a, kind="stable")
    index_a, index_b = index_a[order], index_b[order]
    return Alignment(
        index_a=index_a,
        index_b=index_b,
        unmatched_a=np.setdiff1d(in_scope_a, index_a),
        unmatched_b=np.setdiff1d(in_scope_b, index_b),
        realigned_groups=len(bad_keys),
        notes=notes,
        by_work=by_work,
    )
