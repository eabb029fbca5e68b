"""How far off a projection was: align two runs, then AHEAD's WMAPE.

Alignment pairs the ops of a run on node A with those of the same program run
on node B. Within each device and stream (paired by order of first
appearance, since stream ids differ between runs) ops of one kind and
transfer class are matched by order; their byte counts must agree. Where they
do not (an op inserted or missing in one run), that group is re-aligned on
its byte sequence with difflib, and whatever stays unpaired is reported —
never silently dropped. When either trace does not record whether host memory
was pinned or pageable (ROCm's Kineto traces, nvprof's GPU-trace CSV), host
copies are grouped by direction alone in both, with a note: the same copy must
not go unmatched because one profiler says "pinned" and the other nothing.

Kernels pair by name (and launch order). Where both traces record what
their kernels compute (op tables: ``Trace['op_class']``, dtype and shape),
the name must agree with the op class, dtype and shape too, and kernels
left unpaired, whose names differ (cuBLAS chose another kernel on the other
GPU), pair by op class, dtype and shape in order of occurrence
(``Alignment.by_work`` counts them).

When no op can be evaluated (none both projected by a model and paired with
an op of B that took time), the runs are compared by their kernel totals
(every kernel of A projected against every kernel of B:
``evaluate_kernels.kernel_table``) when some model projected every kernel
of A and B's kernels took time; the evaluation says it ``compared the
totals only`` (``Evaluation.totals_only``). Otherwise ``evaluate`` raises
``NothingToEvaluate`` saying what each trace holds, what aligned and which
models projected nothing.

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
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.machines.schema import Machine
from nodecast.notes import HOST_MEMORY_UNKNOWN, HOST_TIME, LATENCY_KEPT, OPS_KEPT, Note, about, from_, records, retold
from nodecast.cost.project import Projection, op_category, project, weigh_notes
from nodecast.headline import Number
from nodecast.words import plural
from nodecast.traces.kinds import CopyKind, MemKind, OpKind, TransferClass
from nodecast.traces.trace import SHAPE_COLUMNS, Trace, is_constant

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    from nodecast.cost.ops import CostOptions
    from nodecast.workflows.evaluate_run import WholeRun
    from nodecast.traces.ncu import KernelMetrics


class NothingToEvaluate(InputError):
    """No op of run A was both projected by a model and paired with an op of run B that took time."""


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
#: How an evaluation with no op pair says that it compared the kernel totals only (its note and table lines).
TOTALS_ONLY = "compared the totals only"
#: Op categories whose best WMAPE ``Evaluation.headline`` gives, those with the most time on B first.
HEADLINE_CATEGORIES = 4


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
    whole: WholeRun | None = None  # run A forecast on B against run B as wholes (``add_whole_run``)

    @property
    def totals_only(self) -> bool:
        """Whether no op pair was evaluated and only the kernel totals compare the runs (``kernels()``)."""
        return len(self.actual_s) == 0

    @property
    def source(self) -> Machine:
        """Node A, where run A was recorded."""
        return self.projection.source

    @property
    def target(self) -> Machine:
        """Node B, where run A is projected and run B was recorded."""
        return self.projection.target

    def all_notes(self) -> list[str]:
        """How the machines were picked, then the evaluation's notes (the models', the alignment's, the whole
        run's); those about an assumption weighed by the GPU time on A of the evaluated ops it covers
        (``project.weigh_notes``; the whole run's by its forecast's end to end)."""
        from nodecast.machines.compose import node_notes

        notes = [*node_notes(self.source, self.target), *self.notes]  # a host assumed for both: said once
        return weigh_notes(notes, self.projection, self.alignment.index_a[self.mask], "evaluated ops")

    def model_types(self) -> dict[str, str]:
        """Per row of ``table()``: model, baseline, scaled, scaled baseline, or reference (``unchanged``)."""
        baseline = {m.name for m in self.projection.models if m.baseline}
        scaled = {m.name for m in self.projection.models if getattr(m, "source_scaled", False)}
        return {m: "reference" if m == UNCHANGED else
                ("scaled baseline" if m in scaled else "baseline") if m in baseline else
                "scaled" if m in scaled else "model" for m in self.projected_s}

    def typed_table(self) -> pd.DataFrame:
        """``table()`` with a ``type`` column after the model (what ``nodecast evaluate`` prints and --table writes)."""
        table = self.table()
        types = self.model_types()
        table.insert(1, "type", [types[m] for m in table["model"]])
        return table

    def kernels(self) -> pd.DataFrame:
        """Kernel MAPE, WMAPE and totals per model (``nodecast.workflows.evaluate_kernels.kernel_table``)."""
        from nodecast.workflows.evaluate_kernels import kernel_table

        return kernel_table(self)

    def unmatched(self) -> pd.DataFrame:
        """Ops of A and of B left unpaired, per trace and category (count, bytes)."""
        return self.alignment.unmatched_summary(self.projection.trace, self.trace_b)

    def headline(self) -> list[Number]:
        """The whole run's end to end on B, actual and forecast, and the error (when it was compared); then, per
        op category (the ``HEADLINE_CATEGORIES`` with the most time on B), the lowest per-op WMAPE of a model, with
        that of keeping A's times (``unchanged``) in its note."""
        out = []
        if self.whole is not None:
            w = self.whole
            actual, fc = w.actual_end_to_end_s, w.forecast.end_to_end_s
            out += [Number(f"end to end on {self.target.name} (B), run B as measured", actual, "s"),
                    Number(f"end to end on {self.target.name} (B), run A forecast", fc, "s"),
                    Number("end-to-end error, (forecast - actual) / actual",
                           100 * ((fc - actual) / actual) if actual else float("nan"), "%")]
        if self.totals_only:
            out += self._totals_headline()
        table = self.table().set_index("model")
        cats = [c for c in table.columns if c not in ("all", "MAPE", "ops")]
        time = {c: float(self.actual_s[self.category == c].sum()) for c in cats}
        for cat in sorted(cats, key=lambda c: -time[c])[:HEADLINE_CATEGORIES]:
            models = table[cat].drop(index=UNCHANGED, errors="ignore").dropna()
            if not len(models):
                continue
            best = str(models.idxmin())
            ops = int(np.count_nonzero((self.category == cat) & ~np.isnan(self.projected_s[best])))
            ref = f"; keeping A's times: {table.loc[UNCHANGED, cat]:.1f} %" if UNCHANGED in table.index else ""
            out.append(Number(f"{cat}: lowest per-op WMAPE ({best})", float(models[best]), "%",
                              note=f"best of {plural(len(models), 'model')} over {plural(ops, 'op')}{ref}"))
        return out

    def _totals_headline(self) -> list[Number]:
        """With no op pair: the lowest error of a model's kernel total against B's (``kernels()``), with keeping
        A's times in its note."""
        kernels = self.kernels().set_index("model")["total_error"]
        models = kernels.drop(index=UNCHANGED, errors="ignore").dropna()
        if not len(models):
            return []
        best = str(models.idxmin())
        ref = f"; keeping A's times: {kernels[UNCHANGED]:.1f} %" if UNCHANGED in kernels.index else ""
        return [Number(f"kernel totals ({TOTALS_ONLY}): lowest error ({best})", float(models[best]), "%",
                       note=f"no op of A paired with one of B: every kernel of A projected against every kernel of "
                            f"B, best of {plural(len(models), 'model')}{ref}")]

    def summary(self) -> dict[str, Any]:
        """Every value of the evaluation as plain Python (JSON-ready; seconds, errors in %; the whole run's errors
        as fractions)."""
        al = self.alignment
        return {
            "trace_a": self.projection.trace.meta.source, "trace_b": self.trace_b.meta.source,
            "source": self.source.name, "target": self.target.name,
            "ops": {"a": len(self.projection.trace), "b": len(self.trace_b), "aligned_pairs": len(al.index_a),
                    "evaluated": len(self.actual_s), "unmatched_a": len(al.unmatched_a),
                    "unmatched_b": len(al.unmatched_b), "realigned_groups": al.realigned_groups,
                    "paired_by_shape": al.by_work},
            "totals_only": self.totals_only,
            "wmape": self.typed_table(), "kernels": self.kernels(), "unmatched": self.unmatched(),
            "whole_run": None if self.whole is None else self.whole.table(),
            "notes": records(self.all_notes()),
        }

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
    one_byte_s: Mapping[str, float] | None = None,
    host_memory: str | None = None,
) -> Evaluation:
    """Project ``trace_a`` from ``source`` onto ``target`` and compare with ``trace_b``.

    ``metrics``: Nsight Compute metrics of run A's kernels, for the kernel
    models; ``one_byte_s``: 1-byte costs in seconds per transfer class key (or
    ``"all"``), as ``project`` takes them; ``host_memory``: the kind of the
    host memory run A does not record, as ``project`` takes it. Raises
    ``NothingToEvaluate`` (an InputError) when no op can be evaluated.
    """
    projection = project(trace_a, source, target, model_names, kind, metrics, one_byte_s, host_memory)
    alignment = align(trace_a, trace_b)
    ia, ib = alignment.index_a, alignment.index_b
    actual = trace_b.duration_ns[ib].astype(np.float64) * 1e-9
    handled = projection.handled_by_any[ia]
    mask = handled & (actual > 0)
    notes = from_(projection.notes, "models") + from_(alignment.notes, "alignment")
    if not mask.any():
        if not kernel_totals_comparable(projection, trace_b):
            raise NothingToEvaluate(_why_nothing(trace_a, trace_b, projection, alignment, actual),
                                    hint=_what_to_do(projection))
        notes.append(Note(f"{TOTALS_ONLY}: no op of A paired with one of B that a model projected (not by kernel "
                          "name and launch order, nor by op, dtype and shape): every kernel of A projected against "
                          "every kernel of B", origin="alignment"))
    dropped_zero = int((handled & (actual <= 0)).sum())
    if dropped_zero:
        notes.append(f"{plural(dropped_zero, 'matched op')} with zero GPU time on B left out of the errors")
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


def add_whole_run(ev: Evaluation, path_a: str | os.PathLike[str], path_b: str | os.PathLike[str],
                  options: CostOptions | None = None) -> Evaluation:
    """``ev`` with the whole-run comparison of its two runs (``nodecast.workflows.evaluate_run``: run A forecast on B as
    ``nodecast forecast`` does, against run B measured), or, when a run's operation graph cannot be built, a note
    saying why; the whole run's notes join ``ev.notes``. ``path_a``/``path_b``: the trace files (their host
    records are read from them)."""
    from nodecast.workflows.evaluate_run import compare_or_reason

    whole, why = compare_or_reason(path_a, path_b, ev.source, ev.target, options, trace_a=ev.projection.trace,
                                   trace_b=ev.trace_b)
    ev.whole = whole
    if whole is None:
        ev.notes.append(Note(f"whole-run comparison not made: {why}", origin="whole run"))
        return ev
    # The forecast's notes on what it kept from A, weighed by its end to end: they explain the whole run's error.
    kept = [retold(n, f"whole run: {n}", "whole run") for n in whole.forecast.notes
            if about(n) in (HOST_TIME, LATENCY_KEPT, OPS_KEPT)]
    ev.notes.extend([*kept, *from_(whole.notes, "whole run")])
    return ev


def kernel_totals_comparable(projection: Projection, trace_b: Trace) -> bool:
    """Whether the kernel totals can be compared though no op pairs: some model projected every kernel of run A,
    and run B's kernels took time."""
    trace_a = projection.trace
    kernels_a = trace_a["kind"] == OpKind.KERNEL
    kernels_b = trace_b["kind"] == OpKind.KERNEL
    if not kernels_a.any() or trace_b.duration_ns[kernels_b].sum() <= 0:
        return False
    return any(np.isfinite(r.time_s[kernels_a]).all() for r in projection.results.values())


def _inventory(trace: Trace, rows: np.ndarray | None = None) -> str:
    """``"kernel x154, memset x2"``: ops per category (syncs left out), most first."""
    cats = op_category(trace)
    keep = trace["kind"] != OpKind.SYNC
    if rows is not None:
        cats, keep = cats[rows], keep[rows]
    counts = pd.Series(cats[keep]).value_counts()
    return ", ".join(f"{c} x{n:,}" for c, n in counts.items()) if len(counts) else "no GPU op"


def _idle_models(projection: Projection) -> dict[str, list[str]]:
    """Why -> models that projected no op of run A, in the order they ran."""
    why: dict[str, list[str]] = {}
    for name, reason in projection.idle.items():
        why.setdefault(reason, []).append(name)
    for name, r in projection.results.items():
        if not r.handled.any():
            why.setdefault(r.notes[0] if r.notes else "no op of this trace is of a kind it models", []).append(name)
    return why


def _why_nothing(a: Trace, b: Trace, projection: Projection, alignment: Alignment, actual: np.ndarray) -> str:
    """One sentence: what each run holds, what aligned, what was projected, and so why nothing is evaluated."""
    ia = alignment.index_a
    parts = [f"A has {_inventory(a)}", f"B has {_inventory(b)}"]
    if len(ia):
        parts.append(f"{plural(len(ia), 'op pair')} aligned ({_inventory(a, ia)})")
    else:
        parts.append("no op of A aligned with one of B")
    unmatched = [f"{_inventory(t, rows)} in {label}" for label, t, rows in
                 (("A", a, alignment.unmatched_a), ("B", b, alignment.unmatched_b)) if len(rows)]
    if unmatched:
        parts.append("unmatched: " + ", ".join(unmatched).replace(" in A, ", " in A; ") if len(unmatched) > 1
                     else "unmatched: " + unmatched[0])
    handled = projection.handled_by_any
    n_projected = int(np.count_nonzero(handled))
    if not n_projected:
        parts.append("no model projected any op of A")
    else:
        proj_rows = np.flatnonzero(handled)
        paired = handled[ia]
        if not paired.any():
            parts.append(f"the {plural(n_projected, 'projected op')} of A ({_inventory(a, proj_rows)}) "
                         f"{'has' if n_projected == 1 else 'have'} no partner in B")
        else:
            parts.append(f"the {plural(int(paired.sum()), 'projected and aligned op')} "
                         f"took no GPU time on B ({plural(int(np.count_nonzero(actual[paired] <= 0)), 'op')})")
    idle = _idle_models(projection)
    if idle:
        parts.append("models that projected nothing: "
                     + "; ".join(f"{', '.join(names)} ({why})" for why, names in idle.items()))
    return "nothing to evaluate: " + "; ".join(parts)


def _what_to_do(projection: Projection) -> str:
    """The hint of ``NothingToEvaluate``."""
    if any("metrics" in why for why in _idle_models(projection)):
        return ("Give --metrics (Nsight Compute) for the kernel models, or compare traces that share "
                "copies of the same kinds")
    return "Compare two runs of the same program, with ops of the kinds the models project (`nodecast models`)"
