"""Fit the learned kernel model (``nodecast.models.kernel_learned``) leave-one-GPU-out, and calibrate its intervals.

Input: the long table of ``nodecast.fit.corpus`` (one op measured on several
GPUs per ``key``). Every ordered pair of GPUs (A, B) that measured the same
op gives one example: features from A's measurement and both data sheets
(``kernel_features``), target y = ln(T_B / T_A).

The weights of equation (1) of ``kernel_features`` are fitted by weighted
ridge least squares on y, with a global block shared by every family and one
block per family shrunk towards it (a family with few examples borrows the
global weights). There is no intercept: a pair of identical GPUs has x = 0 and
so y = 0, the measured time back.

Because the loss is a sum over examples and each example belongs to one
ordered GPU pair, the normal equations of every GPU pair are accumulated once
(``PairStats``); a fit on any set of GPUs is then a sum of those and one solve.
That is what makes leave-one-GPU-out cheap, and nested leave-one-GPU-out too:

* ``held_out(G)``: weights fitted on the pairs where neither GPU is G,
  scored on the pairs whose target B is G (the figures reported);
* the interval of fold G is calibrated on the held-out residuals of the
  *other* GPUs H, each predicted by a fit without G and without H (split
  conformal on GPU-level folds): the 10th and 90th percentiles of the log
  residual per family and per distance bin between the two GPUs
  (``DISTANCE_BINS``: |x| of the ratios). Coverage is then measured on G,
  which neither the weights nor the quantiles saw.

Weights per example: sqrt(T_A), normalised so that every (corpus, family)
group weighs the same; the log loss then leans towards the long kernels
that a time-weighted error (WMAPE) counts, without letting one corpus
drown another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nodecast.models.kernel_family import Family

if TYPE_CHECKING:
    from nodecast.models.kernel_learned import Params
from nodecast.models.kernel_features import (DIFFERENCES, MODIFIERS, PEAK_KEYS, RATIOS, GpuFigures, OpFeatures, apply, differences,
                                             modifiers, offset, ratios)

#: Ridge penalties (per unit of total example weight): on the global weights, and on each family's deviation.
RIDGE_GLOBAL = 1e-3
RIDGE_FAMILY = 1e-3
#: At most this many examples per (corpus, ordered GPU pair, family): the fit's memory stays bounded.
MAX_PER_GROUP = 20_000
#: Upper edges of the distance bins of the interval quantiles: the largest |ratio| between the two GPUs.
DISTANCE_BINS = (0.5, 1.0, np.inf)
#: The interval's quantiles (80 % central interval).
QUANTILES = (0.05, 0.95)
#: Example weight = T_A ** WEIGHT_POWER (then balanced per corpus and family): 1 would weigh as WMAPE does.
WEIGHT_POWER = 0.5
N_FAMILIES = len(Family)
#: Weight sets: per family, intensity known or not (``kernel_learned.weight_index``).
N_VIEWS = 2 * N_FAMILIES
N_W = (len(RATIOS) - 1) * len(MODIFIERS)


@dataclass
class Examples:
    """The examples of one ordered GPU pair: ratio differences d (examples x (RATIOS - 1)) and modifiers z
    (examples x MODIFIERS) of equation (1), family, y, weight, and T_A, T_B."""

    a: str
    b: str
    corpus: np.ndarray
    d: np.ndarray
    z: np.ndarray
    family: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    t_a: np.ndarray
    t_b: np.ndarray
    distance: float
    own_peak: np.ndarray
    view: np.ndarray  # the weight set of each example (``kernel_learned.weight_index``)
    group: np.ndarray  # the interval's group: family, + N_FAMILIES for tensor-core ops (``interval_group``)
    x: np.ndarray  # raw ratios (examples x ``RATIOS``, float32), for the interval's widening
    peak_key: np.ndarray  # index into ``PEAK_KEYS`` of each example's unit
    x_min: np.ndarray  # per ratio (``RATIOS``), the smallest and largest value over the pair's examples
    x_max: np.ndarray
    peaks: np.ndarray  # the distinct peak keys (codes) of the examples
    rows_a: np.ndarray  # the examples' rows in the long table (A's measurements), for references computed elsewhere
    base: np.ndarray  # the fixed part of y (the compute ratio, ``kernel_features.offset``): y + base = ln(T_B / T_A)

    @property
    def xz(self) -> np.ndarray:
        """The products d_j z_k (examples x N_W, ratio-major): equation (1)'s regressors."""
        return (self.d[:, :, None] * self.z[:, None, :]).reshape(len(self.y), N_W)

    def design(self) -> np.ndarray:
        """The full design matrix (examples x (1 + weight sets) N_W): the global block, then the set's block."""
        n = len(self.y)
        xz = self.xz
        out = np.zeros((n, N_W * (1 + N_VIEWS)))
        out[:, :N_W] = xz
        for f in np.unique(self.view):
            sel = self.view == f
            out[np.ix_(sel, np.arange(N_W) + N_W * (1 + int(f)))] = xz[sel]
        return out


@dataclass
class PairStats:
    """The normal equations of one ordered GPU pair: X'WX, X'Wy, total weight."""

    xtx: np.ndarray
    xty: np.ndarray
    weight: float


def _ops(rows: pd.DataFrame) -> OpFeatures:
    return OpFeatures(family=rows["family"].to_numpy(np.int8), peak_key=rows["peak_key"].to_numpy(np.int8),
                      t_a_s=rows["t_s"].to_numpy(np.float64), flops=rows["flops"].to_numpy(np.float64),
                      work_bytes=rows["work_bytes"].to_numpy(np.float64), blocks=rows["blocks"].to_numpy(np.int64),
                      threads=rows["threads"].to_numpy(np.int64), tiles=rows["tiles"].to_numpy(np.float64))


def compact(ops: OpFeatures, a: GpuFigures, b: GpuFigures) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Per op the ratio differences d and modifiers z, whether both GPUs have the op's own peak, and the pair's
    distance (``kernel_learned.pair_distance``)."""
    from nodecast.models.kernel_learned import pair_distance

    x, own = ratios(ops, a, b)
    return np.ascontiguousarray(differences(x)), np.ascontiguousarray(modifiers(ops, a)), own, pair_distance(x)


def examples(table: pd.DataFrame, figures: dict[str, GpuFigures], rng: np.random.Generator,
             progress: Callable[[str], None] | None = None) -> list[Examples]:
    """Every ordered GPU pair's examples from the long table (``nodecast.fit.corpus``)."""
    table = table.assign(row=np.arange(len(table))).groupby(["corpus", "key", "gpu"], sort=False, as_index=False).agg(
        {c: "first" for c in table.columns if c not in ("corpus", "key", "gpu", "t_s")} | {"t_s": "median",
                                                                                           "row": "first"})
    out = []
    for corpus, part in table.groupby("corpus", sort=True):
        gpus = sorted(part["gpu"].unique())
        by_gpu = {g: part[part["gpu"] == g].set_index("key") for g in gpus}
        for a in gpus:
            for b in gpus:
                if a == b:
                    continue
                ra, rb = by_gpu[a], by_gpu[b]
                common = ra.index.intersection(rb.index)
                if not len(common):
                    continue
                rows_a = ra.loc[common]
                fam = rows_a["family"].to_numpy(np.int8)
                keep = np.zeros(len(common), dtype=bool)
                for f in np.unique(fam):
                    idx = np.flatnonzero(fam == f)
                    if len(idx) > MAX_PER_GROUP:
                        idx = rng.choice(idx, MAX_PER_GROUP, replace=False)
                    keep[idx] = True
                rows_a = rows_a[keep]
                t_b = rb.loc[rows_a.index, "t_s"].to_numpy(np.float64)
                ops = _ops(rows_a)
                # Profiler traces rarely give a kernel's FLOP and bytes: every example that has them is also shown
                # without either (the weights of an unknown intensity are a separate set, learned from every
                # corpus; the L2 term needs the bytes, so it is 0 there as it is for a profiler trace's kernel).
                known = np.isfinite(ops.flops / ops.work_bytes)
                idx = np.concatenate([np.arange(len(ops)), np.flatnonzero(known)])
                hidden = np.arange(len(idx)) >= len(ops)
                rows_a = rows_a.iloc[idx]
                t_b = t_b[idx]
                ops = _ops(rows_a)
                ops.flops = np.where(hidden, np.nan, ops.flops)
                ops.work_bytes = np.where(hidden, np.nan, ops.work_bytes)
                ok = (ops.t_a_s > 0) & (t_b > 0) & np.isfinite(ops.t_a_s) & np.isfinite(t_b)
                d, z, own, distance = compact(ops, figures[a], figures[b])
                x = ratios(ops, figures[a], figures[b])[0]
                base = offset(x)
                ex = Examples(a, b, np.full(int(ok.sum()), corpus, dtype=object), d[ok], z[ok], ops.family[ok],
                              np.log(t_b[ok] / ops.t_a_s[ok]) - base[ok], ops.t_a_s[ok] ** WEIGHT_POWER, ops.t_a_s[ok],
                              t_b[ok], distance, own[ok], weight_index(ops)[ok],
                              interval_group(ops.family, ops.peak_key)[ok],
                              x[ok].astype(np.float32), ops.peak_key[ok],
                              x[ok].min(axis=0) if ok.any() else np.zeros(len(RATIOS)),
                              x[ok].max(axis=0) if ok.any() else np.zeros(len(RATIOS)),
                              np.unique(ops.peak_key[ok]), rows_a["row"].to_numpy()[ok], base[ok])
                out.append(ex)
                if progress is not None:
                    progress(f"{corpus}: {a} -> {b}, {len(ex.y):,} examples")
    _balance(out)
    return out


def _balance(exs: list[Examples]) -> None:
    """Normalise the weights so that every (corpus, family) group sums to 1 over all pairs."""
    totals: dict[tuple[str, int], float] = {}
    for ex in exs:
        for f in np.unique(ex.family):
            key = (str(ex.corpus[0]) if len(ex.corpus) else "", int(f))
            totals[key] = totals.get(key, 0.0) + float(ex.weight[ex.family == f].sum())
    for ex in exs:
        if not len(ex.corpus):
            continue
        lookup = np.zeros(N_FAMILIES)
        for f in range(N_FAMILIES):
            if (str(ex.corpus[0]), f) in totals:
                lookup[f] = 1.0 / totals[(str(ex.corpus[0]), f)]
        ex.weight = ex.weight * lookup[ex.family]


def weight_index(ops: OpFeatures) -> np.ndarray:
    """The weight set of each op (``kernel_learned.weight_index``)."""
    from nodecast.models.kernel_learned import weight_index as index

    return index(ops)


def interval_group(family: np.ndarray, peak_key: np.ndarray) -> np.ndarray:
    """The group whose residual quantiles give an op's interval: its family, apart for tensor-core ops (a tensor
    GEMM and an FP32 SIMT GEMM scatter differently across GPUs)."""
    tensor = np.array([k.endswith("_tensor") for k in PEAK_KEYS] + [False])[peak_key]
    return (family + N_FAMILIES * tensor).astype(np.int16)


def stats(ex: Examples) -> PairStats:
    """The pair's normal equations."""
    x = ex.design()
    xw = x * ex.weight[:, None]
    return PairStats(xw.T @ x, xw.T @ ex.y, float(ex.weight.sum()))


#: The DRAM share each family's prior gives (``prior_weights``): memory-bound families follow the DRAM bandwidth,
#: GEMM-like ones the compute peak, the rest half and half (Habitat's gamma = 0.5 midpoint).
PRIOR_DRAM_SHARE = {Family.ELEMENTWISE: 1.0, Family.SOFTMAX: 1.0, Family.NORMALIZATION: 1.0, Family.REDUCTION: 1.0,
                    Family.COPY: 1.0, Family.GEMM: 0.0, Family.CONV: 0.0, Family.ATTENTION: 0.0, Family.OTHER: 0.5}


def prior_weights() -> np.ndarray:
    """The coefficient vector (global block, then one block per weight set) of the physics prior: per family,
    a constant share of the DRAM-minus-compute difference (``PRIOR_DRAM_SHARE``), every other weight 0. The fit
    shrinks towards it: with few GPUs the ratios are nearly collinear, and a ridge towards zero would split a
    DRAM-bound kernel's weight among DRAM, clock and L2 and extrapolate badly to the next GPU."""
    prior = np.zeros(N_W * (1 + N_VIEWS))
    for view in range(N_VIEWS):
        share = PRIOR_DRAM_SHARE[Family(view % N_FAMILIES)]
        prior[N_W * (1 + view) + DIFFERENCES.index("dram") * len(MODIFIERS) + MODIFIERS.index("one")] = share
    return prior


def solve(parts: Iterable[PairStats]) -> np.ndarray:
    """Weights (weight sets x (RATIOS - 1) x MODIFIERS, global block added in) of the ridge fit on ``parts``."""
    parts = list(parts)
    p = N_W * (1 + N_VIEWS)
    xtx = np.zeros((p, p))
    xty = np.zeros(p)
    total = 0.0
    for s in parts:
        xtx += s.xtx
        xty += s.xty
        total += s.weight
    penalty = np.full(p, RIDGE_FAMILY * max(total, 1e-12))
    penalty[:N_W] = RIDGE_GLOBAL * max(total, 1e-12)
    # Shrunk towards the physics prior, not towards zero: beta = prior + delta, the penalty on delta.
    prior = prior_weights()
    beta = prior + np.linalg.solve(xtx + np.diag(penalty), xty - xtx @ prior)
    glob = beta[:N_W]
    fam = beta[N_W:].reshape(N_VIEWS, N_W)
    return (fam + glob).reshape(N_VIEWS, len(RATIOS) - 1, len(MODIFIERS))


def predict(weights: np.ndarray, ex: Examples) -> np.ndarray:
    """Predicted y of the pair's examples."""
    return apply(weights, ex.view, np.asfortranarray(ex.d), np.asfortranarray(ex.z))


def distance_bin(distance: float) -> int:
    """Index of the distance bin (``DISTANCE_BINS``)."""
    return min(int(np.searchsorted(DISTANCE_BINS, distance)), len(DISTANCE_BINS) - 1)


def quantiles(residuals: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, ...]:
    """Quantiles (``QUANTILES``) of log residuals given as (residual, interval group, distance bin) per GPU pair:
    (low, high, count) per (group, bin) and (low, high) per bin over all groups. Unweighted: coverage counts
    ops, not time."""
    nb, ng = len(DISTANCE_BINS), 2 * N_FAMILIES
    low, high = np.full((ng, nb), np.nan), np.full((ng, nb), np.nan)
    count = np.zeros((ng, nb), dtype=np.int64)
    plow, phigh = np.full(nb, np.nan), np.full(nb, np.nan)
    for b in range(nb):
        parts = [(r, g) for r, g, d in residuals if d == b]
        if not parts:
            continue
        r = np.concatenate([p[0] for p in parts])
        g = np.concatenate([p[1] for p in parts])
        plow[b], phigh[b] = np.quantile(r, QUANTILES)
        for grp in np.unique(g):
            sel = g == grp
            count[grp, b] = int(sel.sum())
            low[grp, b], high[grp, b] = np.quantile(r[sel], QUANTILES)
    return low, high, count, plow, phigh


def seen_by(exs: list[Examples], figures: dict[str, GpuFigures]) -> dict[str, Any]:
    """What a fit on ``exs`` saw: GPUs, vendors, architectures, corpora, ratio ranges, (family, unit) pairs."""
    gpus = sorted({e.a for e in exs} | {e.b for e in exs})
    fam_peaks = sorted({(Family(int(f)).key, PEAK_KEYS[int(p)]) for e in exs
                        for f, p in set(zip(e.family.tolist(), e.peak_key.tolist(), strict=True))})
    x_min = np.min([e.x_min for e in exs], axis=0)
    x_max = np.max([e.x_max for e in exs], axis=0)
    return {"gpus": gpus, "vendors": sorted({figures[g].vendor for g in gpus}),
            "architectures": sorted({figures[g].architecture for g in gpus if figures[g].architecture}),
            "corpora": sorted({str(e.corpus[0]) for e in exs if len(e.corpus)}),
            "examples": int(sum(len(e.y) for e in exs)), "gpu_pairs": len(exs),
            "ratio_ranges": {r: [float(lo), float(hi)] for r, lo, hi in zip(RATIOS, x_min, x_max, strict=True)},
            "family_peaks": [list(p) for p in fam_peaks],
            "quantiles": f"{QUANTILES[0] * 100:g}th and {QUANTILES[1] * 100:g}th",
            "ridge": {"global": RIDGE_GLOBAL, "family": RIDGE_FAMILY}}


def _residuals(exs: list[Examples], st: list[PairStats], train: list[int], gpus: list[str]
               ) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The log residuals of every GPU H of ``gpus`` predicted by a fit on ``train`` without H (the interval's
    calibration set)."""
    out = []
    for h in gpus:
        inner = [i for i in train if h not in (exs[i].a, exs[i].b)]
        test = [i for i in train if exs[i].b == h]
        if not inner or not test:
            continue
        wi = solve(st[i] for i in inner)
        out += [(exs[i].y - predict(wi, exs[i]), exs[i].group, distance_bin(exs[i].distance)) for i in test]
    return out


def make_params(weights: np.ndarray, residuals: list[tuple[np.ndarray, np.ndarray, int]], seen: dict[str, Any],
                source: str) -> Params:
    """A ``Params`` from fitted weights, calibration residuals and what the fit saw."""
    from nodecast.models.kernel_learned import Params

    low, high, count, plow, phigh = quantiles(residuals)
    return Params(weights, low, high, plow, phigh, count, tuple(DISTANCE_BINS), seen, source)


def params_without(exs: list[Examples], st: list[PairStats], figures: dict[str, GpuFigures], gpu: str
                   ) -> Params | None:
    """The parameters of a fit that never saw ``gpu``: weights on the pairs without it, interval quantiles from
    the residuals of the other GPUs each predicted by a fit without it and without them. None when no pair is
    left. ``st``: ``stats`` of every example set (computed once by the caller)."""
    gpus = sorted({ex.a for ex in exs} | {ex.b for ex in exs})
    train = [i for i, ex in enumerate(exs) if gpu not in (ex.a, ex.b)]
    if not train:
        return None
    return make_params(solve(st[i] for i in train), _residuals(exs, st, train, [h for h in gpus if h != gpu]),
                       seen_by([exs[i] for i in train], figures), f"fold without {gpu}")


@dataclass
class FoldResult:
    """The held-out predictions of one GPU: per pair whose target is that GPU, T_B predicted, its interval."""

    gpu: str
    pairs: list[Examples] = field(default_factory=list)
    predicted: list[np.ndarray] = field(default_factory=list)
    low: list[np.ndarray] = field(default_factory=list)
    high: list[np.ndarray] = field(default_factory=list)


def leave_one_gpu_out(exs: list[Examples], figures: dict[str, GpuFigures],
                      progress: Callable[[str], None] | None = None) -> list[FoldResult]:
    """Per GPU G: weights fitted without G, predictions of the pairs A -> G, and their intervals as the model
    gives them (``kernel_learned.residual_bounds`` and ``widening``) from quantiles calibrated without G."""
    from nodecast.models.kernel_learned import residual_bounds, widening, within_fit

    st = [stats(ex) for ex in exs]
    gpus = sorted({ex.a for ex in exs} | {ex.b for ex in exs})
    out = []
    for g in gpus:
        params = params_without(exs, st, figures, g)
        if params is None:
            continue
        fold = FoldResult(g)
        for ex in exs:
            if ex.b != g:
                continue
            d = differences(within_fit(ex.x.astype(np.float64), params.seen))
            t = ex.t_a * np.exp(apply(params.weights, ex.view, d, np.asfortranarray(ex.z)) + ex.base)
            lo, hi = residual_bounds(params, ex.family, ex.peak_key, ex.distance)
            widen, _ = widening(params.seen, figures[ex.a], figures[ex.b], ex.x.astype(np.float64), ex.own_peak,
                                ex.family, ex.peak_key)
            fold.pairs.append(ex)
            fold.predicted.append(t)
            fold.low.append(t * np.exp(lo - widen))
            fold.high.append(t * np.exp(hi + widen))
        out.append(fold)
        if progress is not None:
            progress(f"held out {g}: {params.seen['gpu_pairs']} GPU pairs fitted, {len(fold.pairs)} predicted")
    return out


def fit_params(exs: list[Examples], figures: dict[str, GpuFigures], source: str,
               progress: Callable[[str], None] | None = None) -> Params:
    """The parameter file of a fit on every pair of ``exs``: weights, interval quantiles from the leave-one-GPU-
    out residuals of every GPU, and what the fit saw."""
    st = [stats(ex) for ex in exs]
    gpus = sorted({e.a for e in exs} | {e.b for e in exs})
    params = make_params(solve(st), _residuals(exs, st, list(range(len(exs))), gpus), seen_by(exs, figures), source)
    if progress is not None:
        progress(f"fitted on {len(exs)} GPU pairs of {len(gpus)} GPUs, {params.seen['examples']:,} examples")
    return params


def write_params(params: Params, path: str) -> None:
    """Write the parameter file (JSON) atomically."""
    from nodecast.fileio import write_text_atomic
    from nodecast.strict_json import dumps

    write_text_atomic(path, dumps(params.to_dict(), indent=1) + "\n")
