"""How far off a projection was: align two runs, then AHEAD's WMAPE.

Alignment pairs the ops of a run on node A with those of the same program run
on node B. Within each device and stream (paired by order of first
appearance, since stream ids differ between runs) ops of one kind and
transfer class are matched by order; their byte counts must agree. Where they
do not (an op inserted or missing in one run), that group is re-aligned on
its byte sequence with difflib, and whatever stays unpaired is reported —
never silently dropped.

WMAPE (AHEAD section VI.C): for transfer i with actual GPU time A_i on B and
projected time P_i, the weighted error is 100 * W_i * |A_i - P_i| / A_i with
W_i = A_i / sum(A). The paper says WMAPE is "calculated as the average over
all transactions"; read literally (a mean of the weighted terms) it would
shrink as 1/n and could not give the paper's 19-23 % for traces of thousands
of ops, so nodecast reports the sum of the weighted terms, which is the
standard WMAPE = 100 * sum|A - P| / sum(A).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.machines.schema import Machine
from nodecast.project import Projection, op_category, project
from nodecast.traces.kinds import OpKind
from nodecast.traces.trace import Trace

if TYPE_CHECKING:
    from nodecast.traces.ncu import KernelMetrics


@dataclass
class Alignment:
    """Matched op indices of two traces, and what could not be matched."""

    index_a: np.ndarray
    index_b: np.ndarray
    unmatched_a: np.ndarray
    unmatched_b: np.ndarray
    realigned_groups: int = 0

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


def _group_keys(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per-op (group id, occurrence number within the group).

    A group is (device rank, stream rank within device, op kind, transfer
    class); ranks follow order of first appearance, so they survive runs with
    different stream or device ids. Synchronizations are left out (group -1).
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
    key = ((dev_rank * 4096 + srank) * 16 + trace["kind"].astype(np.int64)) * 16 + trace.transfer_class.astype(np.int64)
    key = np.where(trace["kind"] == OpKind.SYNC, -1, key)
    occurrence = pd.Series(key).groupby(key).cumcount().to_numpy() if n else np.zeros(0, np.int64)
    return key, occurrence


def _tokens(a: Trace, b: Trace) -> tuple[np.ndarray, np.ndarray]:
    """What must agree between paired ops: bytes for copies and memsets, the name for kernels.

    Kernel names are compared without their parameter list, so that a
    demangled and a short name of one kernel still match.
    """
    index: dict[str, int] = {}

    def token_of(trace: Trace) -> np.ndarray:
        codes = np.array([index.setdefault(_bare_name(n), len(index)) for n in trace.names] + [-1], dtype=np.int64)
        name_token = -2 - codes[trace["name_id"]]  # negative: never equal to a byte count
        return np.where(trace["kind"] == OpKind.KERNEL, name_token, trace["bytes"])

    return token_of(a), token_of(b)


def _bare_name(name: str) -> str:
    """Kernel name without its parameter list and return type (``void f<int>(float*)`` -> ``f<int>``)."""
    head = name.split("(", 1)[0].strip()
    return head[5:] if head.startswith("void ") else head


def align(a: Trace, b: Trace) -> Alignment:
    """Pair the ops of two runs of the same program (see the module docstring)."""
    key_a, occ_a = _group_keys(a)
    key_b, occ_b = _group_keys(b)
    tok_a, tok_b = _tokens(a, b)
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
    order = np.argsort(index_a, kind="stable")
    index_a, index_b = index_a[order], index_b[order]
    in_scope_a = np.flatnonzero(key_a >= 0)
    in_scope_b = np.flatnonzero(key_b >= 0)
    return Alignment(
        index_a=index_a,
        index_b=index_b,
        unmatched_a=np.setdiff1d(in_scope_a, index_a),
        unmatched_b=np.setdiff1d(in_scope_b, index_b),
        realigned_groups=len(bad_keys),
    )


def wmape(actual_s: np.ndarray, projected_s: np.ndarray) -> float:
    """AHEAD's WMAPE in percent: 100 * sum|A - P| / sum(A) (see the module docstring)."""
    total = actual_s.sum()
    if len(actual_s) == 0 or total <= 0:
        return float("nan")
    return float(100.0 * np.abs(actual_s - projected_s).sum() / total)


def weighted_errors(actual_s: np.ndarray, projected_s: np.ndarray) -> np.ndarray:
    """Per-op weighted absolute percentage errors 100 * W_i * |A_i - P_i| / A_i (they sum to WMAPE)."""
    return 100.0 * np.abs(actual_s - projected_s) / actual_s.sum()


def mape(actual_s: np.ndarray, projected_s: np.ndarray) -> float:
    """Mean absolute percentage error, 100 * mean(|A - P| / A): the roofline paper's metric."""
    if len(actual_s) == 0:
        return float("nan")
    return float(np.mean(ape(actual_s, projected_s)))


def ape(actual_s: np.ndarray, projected_s: np.ndarray) -> np.ndarray:
    """Per-op absolute percentage error 100 * |A - P| / A (for box plots)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * np.abs(actual_s - projected_s) / actual_s


#: Pseudo-model: the op keeps the GPU time it had on the source node.
UNCHANGED = "unchanged"


@dataclass
class Evaluation:
    """Projection of trace A onto node B compared with a trace recorded on B."""

    projection: Projection
    trace_b: Trace
    alignment: Alignment
    actual_s: np.ndarray  # GPU time on B, per evaluated pair
    projected_s: dict[str, np.ndarray]  # per model (+ "unchanged"), per evaluated pair
    category: np.ndarray  # per evaluated pair
    mask: np.ndarray  # which aligned pairs are evaluated (projected by some model, nonzero time on B)
    notes: list[str] = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        """WMAPE (%) per model (rows) and category (columns, plus "all"); MAPE (%) over all its ops."""
        cats = sorted(set(self.category.tolist()))
        rows = []
        for name, p in self.projected_s.items():
            ok = ~np.isnan(p)
            row = {"model": name, "all": wmape(self.actual_s[ok], p[ok]),
                   "MAPE": mape(self.actual_s[ok], p[ok]), "ops": int(ok.sum())}
            for c in cats:
                sel = ok & (self.category == c)
                row[c] = wmape(self.actual_s[sel], p[sel])
            rows.append(row)
        return pd.DataFrame(rows, columns=["model", "all", *cats, "MAPE", "ops"])

    def per_op(self) -> pd.DataFrame:
        """Matched pairs: indices, category, bytes, actual and projected seconds per model."""
        a = self.projection.trace
        df = pd.DataFrame({
            "op_a": self.alignment.index_a[self.mask],
            "op_b": self.alignment.index_b[self.mask],
            "category": self.category,
            "bytes": a["bytes"][self.alignment.index_a[self.mask]],
            "source_s": self.projection.source_s[self.alignment.index_a[self.mask]],
            "actual_s": self.actual_s,
        })
        for name, p in self.projected_s.items():
            if name != UNCHANGED:
                df[f"{name}_s"] = p
        return df


def evaluate(
    trace_a: Trace,
    trace_b: Trace,
    source: Machine,
    target: Machine,
    model_names: list[str] | None = None,
    kind: str | None = None,
    metrics: KernelMetrics | None = None,
) -> Evaluation:
    """Project ``trace_a`` from ``source`` onto ``target`` and compare with ``trace_b``.

    ``metrics``: Nsight Compute metrics of run A's kernels, for the kernel models.
    """
    projection = project(trace_a, source, target, model_names, kind, metrics)
    alignment = align(trace_a, trace_b)
    ia, ib = alignment.index_a, alignment.index_b
    actual = trace_b.duration_ns[ib].astype(np.float64) * 1e-9
    handled = projection.handled_by_any[ia]
    mask = handled & (actual > 0)
    notes = list(projection.notes)
    dropped_zero = int((handled & (actual <= 0)).sum())
    if dropped_zero:
        notes.append(f"{dropped_zero} matched ops have zero GPU time on B and are left out of the errors")
    projected = {name: r.time_s[ia][mask] for name, r in projection.results.items()}
    projected[UNCHANGED] = projection.source_s[ia][mask]
    return Evaluation(
        projection=projection,
        trace_b=trace_b,
        alignment=alignment,
        actual_s=actual[mask],
        projected_s=projected,
        category=op_category(trace_a)[ia][mask],
        mask=mask,
        notes=notes,
    )
