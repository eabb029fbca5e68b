"""The learned kernel model: a kernel's time on GPU B from its time on A, with weights fitted on cross-GPU data.

Equation (1) of ``nodecast.models.kernel_features``::

    ln(T_B / T_A) = x_compute + sum_j d_j * (sum_k z_k * W[family, j, k])

with x_compute the log ratio of the peaks of the unit the kernel runs on,
d_j the DRAM and clock ratios taken relative to it, the wave quantization and
the L2 capacity ratio, and z_k what the kernel is (its size on A, its
arithmetic intensity against A's ridge point where the trace gives its FLOP
and bytes). The physics is kept (ratios of data-sheet peaks, waves, a GPU k
times faster in everything runs every kernel k times faster); the weights W
learn what data sheets cannot say: how much of each family's time follows
bandwidth, peak or clock as a function of size and intensity. They were
fitted by ``nodecast fit-kernels`` (``nodecast.fit.kernels``), leave-one-GPU-
out; the parameter file (JSON, ``data/kernel_model.json`` in the package)
holds the weights, the residual quantiles of the interval and what the fit
saw (GPUs, vendors, precisions, ranges of each ratio).

Interval: the log residual quantiles of the GPUs left out of the fit
(per family, tensor-core or not, and distance between the two GPUs), widened
when the pair is far from what the fit saw: a vendor it never saw, a GPU
generation (architecture) it never saw, a ratio
beyond the fitted range (by the excess), a precision it never saw for that
family, or a peak one of the GPUs lacks (a fallback unit). Each says so in a
note. The same GPU on both sides gives the measured time back, interval
included (every ratio is 0).

Which ops: every kernel. Family from the op class where the trace records one
(op tables), else from the kernel's name (``kernel_family``); the unit from
the op's data type (op tables), else from the name (``kernel_precision``),
else FP32.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.kernel_family import Family, families
from nodecast.models.kernel_features import (MODIFIERS, PEAK_KEYS, RATIOS, GpuFigures, OpFeatures, apply,
                                             differences, figures_of, modifiers, offset, ratios)
from nodecast.models.kernel_footprint import kernel_rows
from nodecast.models.kernel_precision import name_precision
from nodecast.words import plural
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import DType

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.traces.trace import Trace

#: The parameter file shipped in the package (refit with ``nodecast fit-kernels``).
PACKAGED = Path(__file__).resolve().parent.parent / "data" / "kernel_model.json"
#: Environment variable naming another parameter file (a team's own fit).
ENV = "NODECAST_KERNEL_MODEL"
#: Format version of the parameter file.
FORMAT = 1
#: Log-width added on each side of the interval for a vendor the fit never saw (x2 each way).
UNSEEN_VENDOR_WIDEN = float(np.log(2.0))
#: Log-width of each side of the interval where a fit left no held-out residual to calibrate it (x2 each way).
NO_RESIDUALS_WIDTH = float(np.log(2.0))
#: Log-width added on each side for a GPU architecture (generation) the fit never saw (x1.5 each way).
UNSEEN_ARCHITECTURE_WIDEN = float(np.log(1.5))

#: Data type of an op table -> peak key for GEMM-like families (tensor units) and for the others (vector units).
_MATRIX_PEAK = {DType.FP64: "fp64", DType.FP32: "fp32", DType.TF32: "tf32_tensor", DType.BF16: "bf16_tensor",
                DType.FP16: "fp16_tensor", DType.FP8: "fp8_tensor", DType.FP8_BLOCK: "fp8_tensor",
                DType.NVFP4: "fp4_tensor", DType.FP4: "fp4_tensor", DType.INT8: "int8_tensor",
                DType.INT4: "int8_tensor"}
_VECTOR_PEAK = {DType.FP64: "fp64", DType.FP32: "fp32", DType.TF32: "fp32", DType.BF16: "bf16", DType.FP16: "fp16"}
_MATRIX_FAMILIES = (Family.GEMM, Family.CONV, Family.ATTENTION)


@dataclass(frozen=True)
class Params:
    """A fitted parameter file: weights (2 x families x (RATIOS - 1) x MODIFIERS: ``weight_index``), quantiles
    (groups x distance bins, log residuals) with their bin edges, and what the fit saw (``seen``)."""

    weights: np.ndarray
    q_low: np.ndarray
    q_high: np.ndarray
    q_pooled_low: np.ndarray
    q_pooled_high: np.ndarray
    q_count: np.ndarray
    distance_bins: tuple[float, ...]
    seen: dict[str, Any]
    source: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``FORMAT``); infinities and NaN as null."""
        def clean(a: np.ndarray) -> Any:
            return [None if not np.isfinite(v) else float(v) for v in np.ravel(a)]

        return {"format": FORMAT, "model": "learned-kernel", "ratios": list(RATIOS), "modifiers": list(MODIFIERS),
                "families": [f.key for f in Family], "weights_shape": list(self.weights.shape),
                "weights": clean(self.weights), "interval": {
                    "distance_bins": [None if not np.isfinite(b) else b for b in self.distance_bins],
                    "shape": list(self.q_low.shape), "low": clean(self.q_low), "high": clean(self.q_high),
                    "pooled_low": clean(self.q_pooled_low), "pooled_high": clean(self.q_pooled_high),
                    "count": [int(c) for c in np.ravel(self.q_count)]},
                "seen": self.seen}


def _array(values: list[Any], shape: list[int]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64).reshape(shape)


def params_from_dict(doc: dict[str, Any], source: str) -> Params:
    """A ``Params`` from its JSON document; InputError naming ``source`` when a part is missing or mis-shaped."""
    try:
        if doc.get("format") != FORMAT or doc.get("model") != "learned-kernel":
            raise ValueError(f"not a learned-kernel parameter file of format {FORMAT}")
        if doc["ratios"] != list(RATIOS) or doc["modifiers"] != list(MODIFIERS) or \
                doc["families"] != [f.key for f in Family]:
            raise ValueError("its ratios, modifiers or families differ from this nodecast's")
        iv = doc["interval"]
        weights = _array(doc["weights"], doc["weights_shape"])
        if weights.shape != (2 * len(Family), len(RATIOS) - 1, len(MODIFIERS)) or not np.isfinite(weights).all():
            raise ValueError("its weights have the wrong shape or are not all numbers")
        bins = tuple(np.inf if b is None else float(b) for b in iv["distance_bins"])
        return Params(weights, _array(iv["low"], iv["shape"]), _array(iv["high"], iv["shape"]),
                      _array(iv["pooled_low"], [len(bins)]), _array(iv["pooled_high"], [len(bins)]),
                      np.array(iv["count"], dtype=np.int64).reshape(iv["shape"]), bins, dict(doc["seen"]), source)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a usable kernel-model parameter file: {exc}", path=source,
                         hint="refit it with nodecast fit-kernels, or unset NODECAST_KERNEL_MODEL") from None


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> Params:
    from nodecast.decoding import decoder_limits
    from nodecast.inputs import read_input

    with decoder_limits(path, "kernel-model parameter file"):
        try:
            doc = json.loads(read_input(path, what="kernel-model parameter file").decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"not JSON: {exc}", path=path, hint="refit it with nodecast fit-kernels") from None
    if not isinstance(doc, dict):
        raise InputError("not a JSON object", path=path, hint="refit it with nodecast fit-kernels")
    return params_from_dict(doc, path)


def load_params(path: str | Path | None = None) -> Params:
    """The parameter file ``path``, else ``$NODECAST_KERNEL_MODEL``, else the packaged one."""
    p = Path(path or os.environ.get(ENV) or PACKAGED)
    try:
        mtime = p.stat().st_mtime_ns
    except OSError as exc:
        raise InputError(f"cannot read the kernel-model parameter file: {exc.strerror}", path=str(p),
                         hint=f"run nodecast fit-kernels -o {p}, or unset {ENV}") from None
    return _load(str(p), mtime)


def peak_key_of(family: Family, dtype: DType, name: str | None) -> str:
    """The peak key of the unit an op runs on: from its data type where known (tensor units for GEMM-like
    families, except FP32 and FP64, which run on the CUDA cores unless the name says otherwise), else from its
    kernel's name (``kernel_precision``), else FP32."""
    if dtype != DType.UNKNOWN:
        if family in _MATRIX_FAMILIES:
            return _MATRIX_PEAK.get(dtype, "fp32")
        return _VECTOR_PEAK.get(dtype, "fp32")
    said = name_precision(name)
    return said if said in PEAK_KEYS else "fp32"


def peak_codes(trace: Trace, rows: np.ndarray, family: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel row: the index into ``PEAK_KEYS`` of its unit, and whether anything said it (else FP32)."""
    cols = trace.columns
    dtype = cols["dtype"][rows] if "dtype" in cols else np.zeros(len(rows), dtype=np.int8)
    names = trace.names
    by_name = np.array([*(PEAK_KEYS.index(k) if (k := name_precision(n)) in PEAK_KEYS else -1 for n in names), -1],
                       dtype=np.int16)[cols["name_id"][rows]]
    out = np.where(by_name >= 0, by_name, PEAK_KEYS.index("fp32")).astype(np.int8)
    said = by_name >= 0
    matrix = np.isin(family, _MATRIX_FAMILIES)
    for d in np.unique(dtype):
        if d == DType.UNKNOWN:
            continue
        sel = dtype == d
        key_m, key_v = _MATRIX_PEAK.get(DType(d)), _VECTOR_PEAK.get(DType(d), "fp32")
        if key_m is not None:
            out[sel & matrix] = PEAK_KEYS.index(key_m)
        out[sel & ~matrix] = PEAK_KEYS.index(key_v)
        said |= sel
    return out, said


def op_features(trace: Trace, rows: np.ndarray) -> OpFeatures:
    """``OpFeatures`` of the kernel rows ``rows`` (FLOP, bytes, op class and dtype where the trace has them)."""
    cols = trace.columns
    fam = families(trace.names, cols["name_id"][rows], cols["op_class"][rows] if "op_class" in cols else None)
    peak, _ = peak_codes(trace, rows, fam)
    nan = np.full(len(rows), np.nan)
    blocks = (cols["grid_x"][rows].astype(np.int64) * np.maximum(cols["grid_y"][rows], 1)
              * np.maximum(cols["grid_z"][rows], 1))
    threads = (cols["block_x"][rows].astype(np.int64) * np.maximum(cols["block_y"][rows], 1)
               * np.maximum(cols["block_z"][rows], 1))
    return OpFeatures(family=fam, peak_key=peak,
                      t_a_s=(cols["end_ns"][rows] - cols["start_ns"][rows]) * 1e-9,
                      flops=cols["flops"][rows] if "flops" in cols else nan,
                      work_bytes=cols["work_bytes"][rows] if "work_bytes" in cols else nan,
                      blocks=blocks, threads=threads, tiles=np.zeros(len(rows)))


#: The ratios whose learned terms are not extrapolated beyond the fitted range (``within_fit``).
CLIPPED_RATIOS = ("l2",)


def within_fit(x: np.ndarray, seen: dict[str, Any]) -> np.ndarray:
    """The ratios ``x`` with the L2-capacity ratio clipped to the range the fit saw (``seen['ratio_ranges']``).

    The other ratios are rates (peak, bandwidth, clock: time goes as one over a rate, and a share of a kernel's
    time that follows a rate follows it however far the two GPUs are apart) or the wave quantization the launch
    gives; the L2 term is not: a weight fitted on GPUs whose L2 sizes differ by 1.5x says nothing of a 10x
    difference (a working set fits or it does not), so it is not extrapolated. The interval widens by the
    excess all the same (``widening``).
    """
    ranges = seen.get("ratio_ranges", {})
    out = np.array(x, dtype=np.float64, order="F", copy=True)
    for j, name in enumerate(RATIOS):
        if name in ranges and name in CLIPPED_RATIOS:
            lo, hi = ranges[name]
            np.clip(out[:, j], lo, hi, out=out[:, j])
    return out


def weight_index(ops: OpFeatures, z: np.ndarray | None = None) -> np.ndarray:
    """The weight set of each op: its family; + ``len(Family)`` where its arithmetic intensity is unknown (its
    FLOP and bytes not given; ``z``: its modifiers, when computed already)."""
    unknown = ~np.isfinite(ops.flops / ops.work_bytes) if z is None else z[:, MODIFIERS.index("unknown")] > 0
    return (ops.family.astype(np.int64) + len(Family) * unknown).astype(np.int64)


def pair_distance(x: np.ndarray) -> float:
    """How far apart two GPUs are for these ops: the largest |log ratio| of DRAM, clock and L2, or the median
    |log ratio| of the compute peaks if larger (the interval's distance bins)."""
    if not len(x):
        return 0.0
    return float(max(np.max(np.abs(x[:, [0, 2, 4]])), np.median(np.abs(x[:, 1]))))


def residual_bounds(params: Params, family: np.ndarray, peak_key: np.ndarray, distance: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per op: the low (<= 0) and high (>= 0) log-residual bounds of its group and the pair's distance bin; a
    group with fewer than 30 held-out residuals in the bin takes the bin's pooled bounds."""
    dbin = min(int(np.searchsorted(params.distance_bins, distance)), len(params.distance_bins) - 1)
    tensor = np.array([k.endswith("_tensor") for k in PEAK_KEYS])[peak_key]
    group = family.astype(np.int64) + len(Family) * tensor
    lo = params.q_low[group, dbin]
    hi = params.q_high[group, dbin]
    few = (params.q_count[group, dbin] < 30) | ~np.isfinite(lo) | ~np.isfinite(hi)
    plo, phi = params.q_pooled_low[dbin], params.q_pooled_high[dbin]
    if not (np.isfinite(plo) and np.isfinite(phi)):
        # No held-out residual in this bin: the widest bounds of the bins that have some, else x2 each way.
        lows, highs = params.q_pooled_low[np.isfinite(params.q_pooled_low)], \
            params.q_pooled_high[np.isfinite(params.q_pooled_high)]
        plo = float(lows.min()) if lows.size else -NO_RESIDUALS_WIDTH
        phi = float(highs.max()) if highs.size else NO_RESIDUALS_WIDTH
    return np.minimum(np.where(few, plo, lo), 0.0), np.maximum(np.where(few, phi, hi), 0.0)


def widening(seen: dict[str, Any], a: GpuFigures, b: GpuFigures, x: np.ndarray, own: np.ndarray,
             family: np.ndarray, peak_key: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per op: the log-width added on each side of the interval because the pair is far from what the fit
    ``seen`` (module docstring), and a note per reason."""
    widen = np.zeros(len(x))
    notes: list[str] = []
    vendors = set(seen.get("vendors", []))
    unseen = [f.name for f in (a, b) if f.vendor not in vendors]
    if unseen:
        widen += UNSEEN_VENDOR_WIDEN
        notes.append(f"{' and '.join(dict.fromkeys(unseen))}: a vendor the kernel model never saw "
                     f"(fitted on {', '.join(sorted(vendors))} GPUs only): interval widened x2 each way")
    archs = set(seen.get("architectures", []))
    new_arch = [f"{f.name} ({f.architecture})" for f in (a, b)
                if archs and f.architecture and f.architecture not in archs and f.vendor in vendors]
    if new_arch:
        widen += UNSEEN_ARCHITECTURE_WIDEN
        notes.append(f"{' and '.join(dict.fromkeys(new_arch))}: a GPU generation the kernel model never saw (fitted "
                     f"on {', '.join(sorted(archs))}): caches and schedulers differ in ways data sheets do not say; "
                     "interval widened x1.5 each way")
    ranges = seen.get("ratio_ranges", {})
    for j, name in enumerate(RATIOS):
        if name not in ranges or name == "wave":
            continue
        low_r, high_r = ranges[name]
        excess = np.maximum(x[:, j] - high_r, 0) + np.maximum(low_r - x[:, j], 0)
        if np.any(excess > 0.05):
            widen += excess
            notes.append(f"the {name} ratio of {a.name} to {b.name} (x{np.exp(np.median(x[:, j])):.3g}) lies beyond "
                         f"the fitted range (x{np.exp(low_r):.3g} to x{np.exp(high_r):.3g}): interval widened by "
                         "the excess")
    fallback = ~own
    if fallback.any():
        widen[fallback] += np.abs(x[fallback, 1])
        notes.append(f"{plural(int(fallback.sum()), 'kernel')} on a unit one of the GPUs lacks (another unit's peak "
                     "taken): interval widened by the compute ratio")
    pairs_seen = {tuple(p) for p in seen.get("family_peaks", [])}
    if pairs_seen:
        # One test per distinct (family, unit) code, gathered back per op (no Python object per op).
        combo = family.astype(np.int64) * len(PEAK_KEYS) + peak_key
        codes, back = np.unique(combo, return_inverse=True)
        novel = np.array([(Family(int(c) // len(PEAK_KEYS)).key, PEAK_KEYS[int(c) % len(PEAK_KEYS)]) not in pairs_seen
                          for c in codes], dtype=bool)[back]
        if novel.any():
            widen[novel] += np.log(1.5)
            notes.append(f"{plural(int(novel.sum()), 'kernel')} of a family and precision the fit never saw "
                         "together: interval widened x1.5 each way")
    return widen, notes


def project_ops(ops: OpFeatures, source: Any, target: Any, params: Params) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray, list[str]]:
    """Projected seconds of ``ops`` (measured on ``source``) on ``target`` (Machines), its interval, and notes.

    Equation (1) (module docstring); the interval from ``params``' residual quantiles, widened as the module
    docstring says.
    """
    a, b = figures_of(source), figures_of(target)
    x, own = ratios(ops, a, b)
    z = modifiers(ops, a)
    y = offset(x) + apply(params.weights, weight_index(ops, z), differences(within_fit(x, params.seen)), z)
    t = ops.t_a_s * np.exp(y)
    if not np.any(x):
        return t, t.copy(), t.copy(), ["A and B have the same data-sheet figures: every kernel keeps its time on A"]
    lo, hi = residual_bounds(params, ops.family, ops.peak_key, pair_distance(x))
    widen, notes = widening(params.seen, a, b, x, own, ops.family, ops.peak_key)
    return t, t * np.exp(lo - widen), t * np.exp(hi + widen), notes


class LearnedKernelModel:
    """Kernel time on B = time on A x the fitted ratio of equation (1) (module docstring)."""

    name: ClassVar[str] = "learned-kernel"
    kind: ClassVar[str] = "kernel"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = ("kernel time on A x data-sheet ratios weighted per family, size and intensity, "
                                  "fitted leave-one-GPU-out on cross-GPU measurements (nodecast fit-kernels)")

    def __init__(self, params: Params | None = None) -> None:
        self.params = params

    def accepts(self, trace: Trace) -> np.ndarray:
        """Every kernel op."""
        return trace["kind"] == OpKind.KERNEL

    def project(self, trace: Trace, source: Machine, target: Machine) -> ModelResult:
        """Projected kernel times and intervals; NaN for other ops."""
        n = len(trace)
        time_s, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        rows = kernel_rows(trace)
        if rows.size == 0:
            return ModelResult(self.name, time_s, low, high, ["no kernel in the trace"])
        params = self.params or load_params()
        try:
            t, lo, hi, notes = project_ops(op_features(trace, rows), source, target, params)
        except KeyError as exc:  # a machine file without a figure the features read (its GPU's levels)
            return ModelResult(self.name, time_s, low, high, [f"no kernel projected: a machine lacks {exc}"])
        time_s[rows], low[rows], high[rows] = t, lo, hi
        fitted = params.seen.get("gpus", [])
        notes.insert(0, f"weights fitted on {plural(len(fitted), 'GPU')} ({', '.join(fitted)}; "
                        f"{Path(params.source).name}); interval: the {params.seen.get('quantiles', '')} "
                        "percentiles of the errors on GPUs left out of the fit")
        return ModelResult(self.name, time_s, low, high, notes)
