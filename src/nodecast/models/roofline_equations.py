"""The hierarchical roofline's equations over arrays of launches: inputs, ceilings on one GPU, the projection.

Eqs. 1-10 of Van Lanker et al. (Euro-Par 2024), in the time domain, as
``nodecast.models.roofline``'s docstring derives them: ``KernelInputs`` (the
per-launch counts from Nsight Compute), ``ceilings`` (eqs. 2-8 on one GPU),
``project_kernels`` (eq. 9's interval from the source onto the target, with
unknown cache levels bounded by their neighbours). Every step is vectorized
over all launches; seconds, bytes, FLOP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.models.roofline_figures import MODEL_PRECISIONS, GpuFigures, unknown_level_note
from nodecast.traces.ncu import FLOP_OPS, KernelMetrics
from nodecast.words import plural

#: Bytes per cycle of conflict-free shared memory: 32 banks x 4 B (eq. 5's N_shm_pc^max).
SHARED_BYTES_PER_CYCLE_MAX = 128.0
#: Threads per warp (eq. 3).
WARP_SIZE = 32.0
#: Levels of the projection interval, outermost first.
PROJECTION_LEVELS = ("dram", "l2", "l1")


# -- kernel inputs -------------------------------------------------------------------
@dataclass
class KernelInputs:
    """Per-launch inputs of the model, SI units, one array element per launch.

    ``inst[(precision, op)]`` are thread-instruction counts (op in fma, add,
    mul); bytes are ncu's traversing counts; ``shared_wavefronts`` NaN means
    conflict-free; ``threads_per_inst`` NaN means 32. ``tensor_inst`` are
    warp-level tensor-pipe instructions (0 when not profiled), ``tensor_key``
    the tensor peak each launch uses (``kernel_precision.tensor_precision``),
    ``tensor_flop`` their FLOP once the source's FLOP per instruction is known
    (``with_tensor_flop``; zeros until then).
    """

    time_s: np.ndarray
    inst: dict[tuple[str, str], np.ndarray]
    l1_bytes: np.ndarray
    l2_bytes: np.ndarray
    dram_bytes: np.ndarray
    shared_bytes: np.ndarray
    shared_wavefronts: np.ndarray
    threads_per_inst: np.ndarray
    tensor_inst: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tensor_key: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    tensor_flop: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n = len(self.time_s)
        if len(self.tensor_inst) != n:
            self.tensor_inst = np.zeros(n)
        if len(self.tensor_key) != n:
            self.tensor_key = np.full(n, "fp16_tensor", dtype=object)
        if len(self.tensor_flop) != n:
            self.tensor_flop = np.zeros(n)

    def with_tensor_flop(self, flop_per_inst: float) -> KernelInputs:
        """The same inputs with ``tensor_flop = tensor_inst x flop_per_inst``."""
        from dataclasses import replace

        return replace(self, tensor_flop=self.tensor_inst * flop_per_inst)

    @classmethod
    def from_metrics(cls, metrics: KernelMetrics) -> KernelInputs:
        """Inputs from a metrics table, with the documented fallbacks for absent metrics."""
        t = metrics.table
        n = len(t)

        def col(name: str, default: float) -> np.ndarray:
            a = t[name].to_numpy(dtype=np.float64, copy=True) if name in t else np.full(n, default)
            return np.where(np.isfinite(a), a, default)

        inst = {}
        for p in MODEL_PRECISIONS:
            for o in FLOP_OPS:
                inst[(p, o)] = col(f"{p}_{o}_inst", 0.0)
        shared = col("shared_bytes", 0.0)
        wf = t["shared_wavefronts"].to_numpy(dtype=np.float64) if "shared_wavefronts" in t else np.full(n, np.nan)
        if "shared_bank_conflicts" in t:  # wavefronts = ideal (bytes/128) + one per conflict
            conf = t["shared_bank_conflicts"].to_numpy(dtype=np.float64)
            est = shared / SHARED_BYTES_PER_CYCLE_MAX + conf
            wf = np.where(np.isfinite(wf), wf, np.where(np.isfinite(conf), est, np.nan))
        from nodecast.models.kernel_precision import tensor_precision

        return cls(
            time_s=t["duration_s"].to_numpy(dtype=np.float64),
            inst=inst,
            l1_bytes=col("l1_bytes", 0.0),
            l2_bytes=col("l2_bytes", 0.0),
            dram_bytes=col("dram_bytes", 0.0),
            shared_bytes=shared,
            shared_wavefronts=wf,
            threads_per_inst=col("threads_per_inst", WARP_SIZE),
            tensor_inst=col("tensor_inst", 0.0),
            tensor_key=np.array([tensor_precision(str(k)) for k in t["kernel"]], dtype=object),
        )

    def __len__(self) -> int:
        return len(self.time_s)

    def flop(self, inst: Mapping[tuple[str, str], np.ndarray] | None = None) -> np.ndarray:
        """FLOP per launch: 2 per FMA, 1 per ADD or MUL, summed over precisions, plus the tensor FLOP."""
        inst = self.inst if inst is None else inst
        total = self.tensor_flop.astype(np.float64, copy=True)
        for p in MODEL_PRECISIONS:
            total += 2.0 * inst[(p, "fma")] + inst[(p, "add")] + inst[(p, "mul")]
        return total

    def hits(self) -> dict[str, np.ndarray]:
        """Bytes that hit each level (eq. 4's N_m), from the traversing counters, clipped at 0."""
        return {
            "dram": self.dram_bytes,
            "l2": np.maximum(self.l2_bytes - self.dram_bytes, 0.0),
            "l1": np.maximum(self.l1_bytes - self.l2_bytes, 0.0),
            "shared": self.shared_bytes,
        }

    def traversing(self) -> dict[str, np.ndarray]:
        """N+_m: bytes traversing each projection level (the numerators of eqs. 6-8; eq. 10)."""
        h = self.hits()
        dram = h["dram"]
        l2 = h["l2"] + dram
        l1 = h["l1"] + h["shared"] + l2
        return {"dram": dram, "l2": l2, "l1": l1}


# -- ceilings on one GPU --------------------------------------------------------------
@dataclass
class Ceilings:
    """A kernel's roofline with ceilings on one GPU (arrays over launches).

    ``perf_mix`` (eq. 2) and ``perf_ceil`` (eq. 3) in FLOP/s (NaN without
    FLOP); ``t_compute = FLOP / perf_ceil``; ``t_level`` per-level times of
    eqs. 4-5; ``bw_ceil`` (eqs. 6-8) in bytes/s; ``tau[m] = N+_m / bw_ceil[m]``;
    ``roof_time[m] = max(tau[m], t_compute)`` = FLOP / roofline_m(OI_m).
    """

    perf_mix: np.ndarray
    perf_ceil: np.ndarray
    t_compute: np.ndarray
    t_level: dict[str, np.ndarray]
    bw_ceil: dict[str, np.ndarray]
    tau: dict[str, np.ndarray]
    roof_time: dict[str, np.ndarray]


def ceilings(inp: KernelInputs, inst: Mapping[tuple[str, str], np.ndarray], fig: GpuFigures) -> Ceilings:
    """Eqs. 2-8 for every launch on the GPU described by ``fig``."""
    n = len(inp)
    warp = np.clip(inp.threads_per_inst, 1e-9, WARP_SIZE) / WARP_SIZE
    t_compute = np.zeros(n)
    mix_time = np.zeros(n)  # sum of FLOP_p / Perf_mix_p, for the FLOP-weighted Perf_mix
    flop = np.zeros(n)
    with np.errstate(all="ignore"):
        for p in MODEL_PRECISIONS:
            n_fma, n_add, n_mul = inst[(p, "fma")], inst[(p, "add")], inst[(p, "mul")]
            n_all = n_fma + n_add + n_mul
            used = n_all > 0
            if not used.any():
                continue
            who = f"{int(used.sum())} launches execute {p.upper()} instructions"
            p_fma, p_am = fig.peak(p, "fma", who), fig.peak(p, "addmul", who)
            mix = p_fma * n_fma / n_all + p_am * (n_add + n_mul) / n_all  # eq. 2
            f_p = 2.0 * n_fma + n_add + n_mul
            mix_time += np.where(used, f_p / mix, 0.0)
            t_compute += np.where(used, f_p / (warp * mix), 0.0)  # eq. 3
            flop += f_p
        perf_mix = np.where(flop > 0, flop / mix_time, np.nan)
        perf_ceil = np.where(flop > 0, flop / t_compute, np.nan)
    tensor = inp.tensor_flop > 0
    if tensor.any():
        for key in sorted(set(inp.tensor_key[tensor].tolist())):
            sel = tensor & (inp.tensor_key == key)
            if key not in fig.tensor:
                raise InputError(f"no {key.upper()} peak for {fig.model} ({int(sel.sum())} launches ran tensor-pipe "
                                 "instructions)", path=fig.path, key=f"peak_flops.{key}",
                                 hint="Add the tensor peak to the GPU's data sheet or machine file")
            t_compute = t_compute + np.where(sel, inp.tensor_flop / fig.tensor[key], 0.0)
    hits = inp.hits()
    any_shared = bool((hits["shared"] > 0).any())
    t_level = {}
    for lv in ("dram", "l2", "l1"):
        needed = hits[lv] > 0
        t_level[lv] = (hits[lv] / fig.bw(lv, f"eq. 4: {int(needed.sum())} launches have bytes served by {lv.upper()}")
                       if needed.any() else np.zeros(n))
    if any_shared:
        bw_shm = fig.bw("shared", f"eq. 5: {int((hits['shared'] > 0).sum())} launches use shared memory")
        wf = inp.shared_wavefronts
        # eq. 5: N_shm / N_shm_pc * 128 / BW with N_shm_pc = N_shm / wavefronts; conflict-free when unknown
        cycles = np.where(np.isfinite(wf), wf, hits["shared"] / SHARED_BYTES_PER_CYCLE_MAX)
        t_level["shared"] = cycles * SHARED_BYTES_PER_CYCLE_MAX / bw_shm
    else:
        t_level["shared"] = np.zeros(n)
    tau = {
        "dram": t_level["dram"],
        "l2": t_level["l2"] + t_level["dram"],
        "l1": t_level["l1"] + t_level["shared"] + t_level["l2"] + t_level["dram"],
    }
    trav = inp.traversing()
    with np.errstate(all="ignore"):
        bw_ceil = {lv: np.where(tau[lv] > 0, trav[lv] / tau[lv], np.nan) for lv in PROJECTION_LEVELS}
    roof_time = {lv: np.maximum(tau[lv], t_compute) for lv in PROJECTION_LEVELS}
    return Ceilings(perf_mix, perf_ceil, t_compute, t_level, bw_ceil, tau, roof_time)


# -- the projection --------------------------------------------------------------------
_BOUND_NAMES = np.array(["compute", "dram", "l2", "l1", "shared", "none"], dtype=object)


def _bound(c: Ceilings) -> np.ndarray:
    stack = np.vstack([c.t_compute, c.t_level["dram"], c.t_level["l2"], c.t_level["l1"], c.t_level["shared"]])
    idx = np.argmax(stack, axis=0)
    idx = np.where(stack.max(axis=0) > 0, idx, 5)
    return _BOUND_NAMES[idx]


@dataclass
class RooflineProjection:
    """Everything the model computed for a set of launches (arrays over launches).

    ``time_level[m]`` is eq. 9's projected time through level m; ``low_s`` /
    ``high_s`` the interval; ``time_s`` the projected time (FLOP over the
    midpoint of the performance interval). ``efficiency[m]`` is the source
    efficiency ``Perf_s / roofline_s,m(OI_s,m)`` before the cap at 1.
    """

    inputs: KernelInputs
    source: GpuFigures
    target: GpuFigures
    flop_s: np.ndarray
    flop_t: np.ndarray
    oi_s: dict[str, np.ndarray]
    oi_t: dict[str, np.ndarray]
    perf_s: np.ndarray
    ceil_s: Ceilings
    ceil_t: Ceilings
    efficiency: dict[str, np.ndarray]
    time_level: dict[str, np.ndarray]
    low_s: np.ndarray
    high_s: np.ndarray
    time_s: np.ndarray
    bound_s: np.ndarray
    bound_t: np.ndarray
    notes: list[str] = field(default_factory=list)

    def perf_level(self) -> dict[str, np.ndarray]:
        """Eq. 9's projected performance per level, FLOP/s (NaN without FLOP)."""
        with np.errstate(all="ignore"):
            return {lv: np.where(self.flop_t > 0, self.flop_t / self.time_level[lv], np.nan)
                    for lv in PROJECTION_LEVELS}

    def frame(self) -> pd.DataFrame:
        """One row per launch: inputs, ceilings on both GPUs, the projection (SI units)."""
        d: dict[str, object] = {
            "source_s": self.inputs.time_s,
            "flop": self.flop_s,
            "flop_target": self.flop_t,
            "perf_source_flops": self.perf_s,
            "perf_ceil_source_flops": self.ceil_s.perf_ceil,
            "perf_ceil_target_flops": self.ceil_t.perf_ceil,
        }
        for lv in PROJECTION_LEVELS:
            d[f"oi_{lv}_flop_per_byte"] = self.oi_s[lv]
        for lv in PROJECTION_LEVELS:
            d[f"bw_ceil_{lv}_source_bps"] = self.ceil_s.bw_ceil[lv]
            d[f"bw_ceil_{lv}_target_bps"] = self.ceil_t.bw_ceil[lv]
        for lv in PROJECTION_LEVELS:
            d[f"efficiency_{lv}"] = self.efficiency[lv]
            d[f"time_{lv}_s"] = self.time_level[lv]
        d.update({"low_s": self.low_s, "high_s": self.high_s, "time_s": self.time_s,
                  "bound_source": self.bound_s, "bound_target": self.bound_t})
        return pd.DataFrame(d)


def project_kernels(
    inp: KernelInputs,
    source: GpuFigures,
    target: GpuFigures,
    target_inst: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> RooflineProjection:
    """Eqs. 1-10 for every launch: ceilings on both GPUs and the eq.-9 interval.

    ``target_inst`` are the instruction counts on the target when the SASS
    comparison changed them (default: the source counts).

    A cache level (L2, L1, shared memory) that some launch uses but whose
    bandwidth one GPU lacks is bounded by its neighbours
    (``GpuFigures.bracketed``): the projection runs with every unknown level
    of the target at its slowest and of the source at its fastest (the
    longest times), and the other way round (the shortest); the interval
    is the union of both, so it holds every projection a value between the
    bounds gives, and a note per level says so. The per-launch detail
    (ceilings, per-level times, bound) is the slow-target run's.
    """
    hits = inp.hits()
    gaps = [(side, fig, fig.unknown_levels(hits)) for side, fig in (("source", source), ("target", target))]
    if not any(levels for _, _, levels in gaps):
        return _project(inp, source, target, target_inst)
    (s_slow, s_fast), (t_slow, t_fast) = (fig.bracketed(list(levels)) for _, fig, levels in gaps)
    longest = _project(inp, s_fast, t_slow, target_inst)
    shortest = _project(inp, s_slow, t_fast, target_inst)
    with np.errstate(all="ignore"):
        low = np.fmin(longest.low_s, shortest.low_s)
        high = np.fmax(longest.high_s, shortest.high_s)
        mean = np.clip(2.0 / (1.0 / low + 1.0 / high), low, high)
    notes = [unknown_level_note(lv, side, fig, n, len(inp)) for side, fig, levels in gaps for lv, n in levels.items()]
    return replace(longest, source=source, target=target, low_s=low, high_s=high, time_s=mean,
                   notes=longest.notes + notes)


def _project(
    inp: KernelInputs,
    source: GpuFigures,
    target: GpuFigures,
    target_inst: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> RooflineProjection:
    """``project_kernels`` for figures that give every level the launches use."""
    notes: list[str] = []
    t_inst = inp.inst if target_inst is None else target_inst
    flop_s = inp.flop()
    flop_t = inp.flop(t_inst)
    c_s = ceilings(inp, inp.inst, source)
    c_t = ceilings(inp, t_inst, target)
    trav = inp.traversing()
    with np.errstate(all="ignore"):
        oi_s = {lv: np.where(trav[lv] > 0, flop_s / trav[lv], np.inf) for lv in PROJECTION_LEVELS}
        oi_t = {lv: np.where(trav[lv] > 0, flop_t / trav[lv], np.inf) for lv in PROJECTION_LEVELS}
        perf_s = flop_s / inp.time_s
    time_level = {}
    eff = {}
    capped = np.zeros(len(inp), dtype=bool)
    for lv in PROJECTION_LEVELS:
        r_s, r_t = c_s.roof_time[lv], c_t.roof_time[lv]
        with np.errstate(all="ignore"):
            e = np.where(r_s > 0, r_s / inp.time_s, np.nan)  # Perf_s / roofline_s,m(OI_s,m)
        eff[lv] = e
        capped |= e > 1.0
        e_used = np.minimum(e, 1.0)
        with np.errstate(all="ignore"):
            time_level[lv] = np.where(np.isfinite(e_used) & (e_used > 0), r_t / e_used, np.nan)  # eq. 9
    stack = np.vstack([time_level[lv] for lv in PROJECTION_LEVELS])
    nothing = np.all(np.isnan(stack), axis=0)
    with np.errstate(all="ignore"):
        low = np.where(nothing, inp.time_s, np.nanmin(np.where(nothing, 0.0, stack), axis=0))
        high = np.where(nothing, inp.time_s, np.nanmax(np.where(nothing, 0.0, stack), axis=0))
        mean = np.where(nothing, inp.time_s, 2.0 / (1.0 / low + 1.0 / high))
        mean = np.clip(mean, low, high)  # the harmonic mean of equal bounds can round one ulp outside
    if capped.any():
        notes.append(f"{int(capped.sum())} of {plural(len(capped), 'launch', 'launches')} ran faster on the source "
                     "than their ceiling at some "
                     "level (efficiency > 1: the measured maxima are below what they achieved); "
                     "efficiency capped at 1 so the projection stays under the target's roofline")
    if nothing.any():
        k = int(nothing.sum())
        notes.append(f"{k} of {plural(len(nothing), 'launch', 'launches')} {'has' if k == 1 else 'have'} no FLOP "
                     "and no memory traffic: projected with their source time")
    if target_inst is None:
        notes.append("target FLOP = source FLOP (equal instruction counts assumed; no SASS comparison)")
    return RooflineProjection(
        inputs=inp, source=source, target=target, flop_s=flop_s, flop_t=flop_t, oi_s=oi_s, oi_t=oi_t,
        perf_s=perf_s, ceil_s=c_s, ceil_t=c_t, efficiency=eff, time_level=time_level,
        low_s=low, high_s=high, time_s=mean, bound_s=_bound(c_s), bound_t=_bound(c_t), notes=notes)


def aggregate_launches(metrics: KernelMetrics, rows: np.ndarray | list[int]) -> KernelMetrics:
    """One launch standing for the selected launches: counts, bytes and durations summed.

    ``threads_per_inst`` is averaged with the launches' FP instruction counts
    as weights (ncu's ratio is per instruction). Used to draw one roofline
    point for all launches of a kernel.
    """
    t = metrics.table.iloc[np.asarray(rows)]
    row: dict[str, object] = {"kernel": t["kernel"].iat[0], "occurrence": 0, "id": int(t["id"].iat[0])}
    for c in t.columns:
        if c in row or c in ("threads_per_inst", "sm_clock_hz"):
            continue
        vals = t[c].to_numpy(dtype=np.float64)
        row[c] = float(np.sum(vals)) if np.isfinite(vals).all() else np.nan
    if "threads_per_inst" in t:
        w = sum(t[f"{p}_{o}_inst"].fillna(0).to_numpy() for p in MODEL_PRECISIONS for o in FLOP_OPS)
        a = t["threads_per_inst"].to_numpy(dtype=np.float64)
        ok = np.isfinite(a)
        row["threads_per_inst"] = (float(np.average(a[ok], weights=w[ok])) if ok.any() and w[ok].sum() > 0
                                   else (float(np.nanmean(a)) if ok.any() else np.nan))
    if "sm_clock_hz" in t:
        row["sm_clock_hz"] = float(np.nanmedian(t["sm_clock_hz"].to_numpy(dtype=np.float64)))
    return KernelMetrics(pd.DataFrame([row]), metrics.sources, metrics.present, list(metrics.notes))
