"""Data-sheet ratios the metrics-free kernel models scale a kernel's time by (dimensionless, source/target).

* DRAM ratio ``D_s / D_t``: DRAM bandwidth in bytes/s as ``roofline.gpu_figures``
  takes it (measured maxima, else data sheet x the source's measured/peak
  ratio, else data sheet), so every kernel model reads the same figures;
* compute ratio of a launch: the peak FLOP/s ratio ``P_s / P_t`` of the
  precision its name says (``kernel_precision``), when both GPUs' sheets (or
  machine files) give that peak; else the SM-clock ratio
  ``(SMs_s x f_s) / (SMs_t x f_t)`` (f the machine's clock, the sheet's boost
  clock for a composed node);
* per-SM rate ratio of a launch (what a block's compute time scales by in the
  wave-scaling model): ``(P_s / SMs_s) / (P_t / SMs_t)`` for FP64, FP16, BF16
  and tensor-core kernels, whose per-SM throughput changes by large factors
  between products (1/32-rate FP64 on consumer GPUs, tensor cores), else the
  clock ratio ``f_s / f_t`` as in Habitat. FP32 and integer kernels keep the
  clock ratio because FP32 lanes per SM do not predict per-SM throughput
  across generations: on the kernel zoo, scaling by FP32 peaks errs by 48 %
  (WMAPE) where SMs x clock errs by 25 % (benchmarks/bench_kernel_zoo.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nodecast.models.kernel_precision import Precisions
from nodecast.models.roofline import gpu_figures

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine

#: Precisions whose per-SM throughput is taken from the peaks (module docstring).
PER_SM_PEAK_PRECISIONS = ("fp64", "fp16", "bf16")


def dram_ratio(source: Machine, target: Machine, needed_by: str) -> tuple[float, str]:
    """``D_s / D_t`` and a note naming both figures; InputError when a machine gives no DRAM bandwidth."""
    src, tgt = gpu_figures(source), gpu_figures(target, reference=source)
    bs, bt = src.bw("dram", needed_by), tgt.bw("dram", needed_by)
    return bs / bt, (f"DRAM {bs / 1e9:,.0f} GB/s ({src.origin['bw.dram']}) -> {bt / 1e9:,.0f} GB/s "
                     f"({tgt.origin['bw.dram']}): x{bs / bt:.3f}")


def dram_bps(machine: Machine, needed_by: str) -> float:
    """The source GPU's DRAM bandwidth as ``dram_ratio`` takes it, bytes/s."""
    return gpu_figures(machine).bw("dram", needed_by)


def sm_clock_ratio(source: Machine, target: Machine) -> float:
    """``(SMs_s x f_s) / (SMs_t x f_t)``."""
    return (source.gpu.sms * source.gpu.clock_hz) / (target.gpu.sms * target.gpu.clock_hz)


def _peaks(source: Machine, target: Machine, precisions: Precisions) -> dict[str, tuple[float, float]]:
    """(P_s, P_t) of every precision some op's name says that both machines know."""
    out = {}
    for p in precisions.present():
        ps, pt = source.gpu.peak_flops_per_s(p), target.gpu.peak_flops_per_s(p)
        if ps and pt:
            out[p] = (ps, pt)
    return out


def compute_ratio(source: Machine, target: Machine, precisions: Precisions) -> tuple[np.ndarray, list[str]]:
    """Per launch: ``P_s / P_t`` of the precision its name says, else the SM-clock ratio; and notes saying which."""
    smclk = sm_clock_ratio(source, target)
    out = np.full(len(precisions), smclk)
    notes = []
    peaks = _peaks(source, target, precisions)
    n = len(precisions)
    done = 0
    for p, (ps, pt) in sorted(peaks.items()):
        sel = precisions.mask(p)
        out[sel] = ps / pt
        done += int(sel.sum())
        notes.append(f"{int(sel.sum()):,} of {n:,} launches named for {p.upper()}: peak {ps / 1e12:.4g} -> "
                     f"{pt / 1e12:.4g} TFLOP/s, x{ps / pt:.3f}")
    rest = n - done
    if rest:
        unknown = [p for p in precisions.present() if p not in peaks]
        why = f" (no {', '.join(u.upper() for u in unknown)} peak on both GPUs for some)" if unknown else ""
        notes.append(f"{rest:,} of {n:,} launches at the SM-clock ratio{why}: {source.gpu.sms} SMs x "
                     f"{source.gpu.clock_hz / 1e6:,.0f} MHz -> {target.gpu.sms} x {target.gpu.clock_hz / 1e6:,.0f} MHz, "
                     f"x{smclk:.3f}")
    return out, notes


def per_sm_rate_ratio(source: Machine, target: Machine, precisions: Precisions,
                      weight: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """Per launch: the per-SM compute-rate ratio (module docstring) and notes saying which launches used peaks.

    ``weight``: how many launches each element stands for (the notes count launches).
    """
    weight = np.ones(len(precisions), dtype=np.int64) if weight is None else weight
    clock = source.gpu.clock_hz / target.gpu.clock_hz
    out = np.full(len(precisions), clock)
    notes = [f"block compute time scales with the clock, {source.gpu.clock_hz / 1e6:,.0f} -> "
             f"{target.gpu.clock_hz / 1e6:,.0f} MHz (x{clock:.3f}), except as said below"]
    peaks = _peaks(source, target, precisions)
    for p, (ps, pt) in sorted(peaks.items()):
        if p not in PER_SM_PEAK_PRECISIONS and not p.endswith("_tensor"):
            continue
        sel = precisions.mask(p)
        r = (ps / source.gpu.sms) / (pt / target.gpu.sms)
        out[sel] = r
        notes.append(f"{int(weight[sel].sum()):,} launches named for {p.upper()}: per-SM peak ratio x{r:.3f}")
    return out, notes
