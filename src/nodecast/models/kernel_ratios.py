"""Data-sheet ratios the metrics-free kernel models scale a kernel's time by (dimensionless, source/target).

* DRAM ratio ``D_s / D_t``: DRAM bandwidth in bytes/s as ``roofline.gpu_figures``
  takes it (measured maxima, else data sheet x the source's measured/peak
  ratio, else data sheet), so every kernel model reads the same figures;
* issue-limited rates. An SM's warp schedulers each issue one warp
  instruction per clock (CUDA C++ Programming Guide, "Compute Capability
  5.x/6.x/7.x/8.x/10.0", "Architecture"); Kepler's also pair a second,
  independent instruction of the same warp ("Compute Capability 3.x": "each
  scheduler issues two independent instructions"), which its 192 FP32 lanes
  need to be busy: 4 schedulers x 32 lanes = 128 per clock without that
  instruction-level parallelism. A timeline says nothing of a kernel's ILP, so
  nodecast takes single issue: an SM's FP32 rate is
  ``min(fp32_lanes_per_sm, warp_schedulers_per_sm x warp_size)`` per clock
  (Kepler 128 of 192, Maxwell 128 of 128, Volta/A100 64 of 64, GA10x/Ada/
  Hopper 128 of 128; ``issue_lanes``) and its instruction rate for kernels
  whose name says no precision ``warp_schedulers_per_sm x warp_size``
  thread-instructions per clock (``issue_slots``), both from the targets'
  limit files (``machines/gpus/targets``). Fermi's schedulers feed half a
  warp per clock ("Compute Capability 2.x": a warp instruction is issued
  "over two clock cycles"; ``issue_clocks_per_warp_instruction`` = 2), so
  sm_21 issues 2 x 32 / 2 = 32 thread-instructions per clock, 32 of its 48
  lanes; a target without scheduler counts (AMD) leaves the clock ratio;
* compute ratio of a launch (the ``flops-ratio`` baseline without metrics):
  FP32 kernels ``(SMs x f x issue_lanes)_s / (...)_t``, kernels whose name
  says no precision ``(SMs x f x issue_slots)_s / (...)_t``, both falling back
  to the SM-clock ratio ``(SMs_s f_s) / (SMs_t f_t)``; other precisions the
  peak FLOP/s ratio ``P_s / P_t`` of the precision its name says
  (``kernel_precision``), when both GPUs give it (f the machine's clock, the
  sheet's boost clock for a composed node);
* per-SM rate ratio of a launch (what a block's compute time scales by in the
  wave-scaling model): ``(P_s / SMs_s) / (P_t / SMs_t)`` for FP64, FP16, BF16
  and tensor-core kernels, whose per-SM throughput changes by large factors
  between products (1/32-rate FP64 on consumer GPUs, tensor cores); the
  clock ratio times the issue-limited lane ratio for FP32 kernels
  (``f_s issue_lanes_s / (f_t issue_lanes_t)``) and times the issue-slot
  ratio for the others; the clock ratio ``f_s / f_t`` alone, as in Habitat,
  where a target has no scheduler count. On the kernel zoo's four GPUs (three
  Kepler, one Maxwell: 128 issue-limited lanes per SM on each) this is the
  clock ratio; dual issue (192 against 128 FP32 lanes) errs by 38.8 %
  (WMAPE) there against 23.5 % (``benchmarks/bench_kernel_zoo.py
  --issue-logo``, docs/kernels.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nodecast.models.kernel_precision import Precisions
from nodecast.models.roofline_figures import gpu_figures

if TYPE_CHECKING:
    from nodecast.machines.parts import TargetLimits
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


def issue_slots(limits: TargetLimits | None) -> int | None:
    """Thread-instructions an SM issues per clock, one warp instruction per scheduler, spread over
    ``issue_clocks_per_warp_instruction`` clocks (Fermi's schedulers feed 16 lanes each: 2); None when not known."""
    if limits is None or limits.warp_schedulers_per_sm is None:
        return None
    return limits.warp_schedulers_per_sm * limits.warp_size // (limits.issue_clocks_per_warp_instruction or 1)


def issue_lanes(limits: TargetLimits | None) -> int | None:
    """FP32 lanes an SM keeps busy per clock with single issue: ``min(fp32_lanes, issue_slots)``; None when a
    figure is missing."""
    slots = issue_slots(limits)
    if slots is None or limits is None or limits.fp32_lanes_per_sm is None:
        return None
    return min(limits.fp32_lanes_per_sm, slots)


def _issue_ratios(source: Machine, target: Machine) -> tuple[float | None, float | None, str]:
    """Per SM and clock, source/target: the FP32 issue-limited lane ratio, the issue-slot ratio, and a note."""
    ls, lt = source.gpu.limits, target.gpu.limits
    lanes_s, lanes_t = issue_lanes(ls), issue_lanes(lt)
    slots_s, slots_t = issue_slots(ls), issue_slots(lt)
    lanes = lanes_s / lanes_t if lanes_s and lanes_t else None
    slots = slots_s / slots_t if slots_s and slots_t else None
    if lanes is None and slots is None:
        missing = [m.name for m, lim in ((source, ls), (target, lt)) if issue_slots(lim) is None]
        return None, None, (f"no warp-scheduler count for {' and '.join(missing)}: FP32 and unnamed kernels at the "
                            "clock ratio")
    note = (f"issue-limited FP32 lanes per SM and clock {lanes_s} -> {lanes_t} (min of FP32 lanes and warp "
            f"schedulers x warp size, single issue), issue slots {slots_s} -> {slots_t}")
    return lanes, slots, note


def _peaks(source: Machine, target: Machine, precisions: Precisions) -> dict[str, tuple[float, float]]:
    """(P_s, P_t) of every precision some op's name says that both machines know."""
    out = {}
    for p in precisions.present():
        ps, pt = source.gpu.peak_flops_per_s(p), target.gpu.peak_flops_per_s(p)
        if ps and pt:
            out[p] = (ps, pt)
    return out


def compute_ratio(source: Machine, target: Machine, precisions: Precisions) -> tuple[np.ndarray, list[str]]:
    """Per launch: the compute ratio of the module docstring, and notes saying which launches took which."""
    smclk = sm_clock_ratio(source, target)
    lanes, slots, issue_note = _issue_ratios(source, target)
    n = len(precisions)
    out = np.full(n, smclk * (slots or 1.0))
    notes = [issue_note]
    peaks = _peaks(source, target, precisions)
    done = 0
    fp32 = precisions.mask("fp32") if "fp32" in precisions.present() else np.zeros(n, dtype=bool)
    if lanes is not None and fp32.any():
        out[fp32] = smclk * lanes
        done += int(fp32.sum())
        notes.append(f"{int(fp32.sum()):,} of {n:,} launches named for FP32: SMs x clock x issue-limited FP32 lanes, "
                     f"x{smclk * lanes:.3f}")
    for p, (ps, pt) in sorted(peaks.items()):
        if p == "fp32" and lanes is not None:
            continue
        sel = precisions.mask(p)
        out[sel] = ps / pt
        done += int(sel.sum())
        notes.append(f"{int(sel.sum()):,} of {n:,} launches named for {p.upper()}: peak {ps / 1e12:.4g} -> "
                     f"{pt / 1e12:.4g} TFLOP/s, x{ps / pt:.3f}")
    rest = n - done
    if rest:
        unknown = [p for p in precisions.present() if p not in peaks and not (p == "fp32" and lanes is not None)]
        why = f" (no {', '.join(u.upper() for u in unknown)} peak on both GPUs for some)" if unknown else ""
        by = " x issue slots" if slots is not None else ""
        notes.append(f"{rest:,} of {n:,} launches at the SM-clock{by} ratio{why}: {source.gpu.sms} SMs x "
                     f"{source.gpu.clock_hz / 1e6:,.0f} MHz -> {target.gpu.sms} x {target.gpu.clock_hz / 1e6:,.0f} MHz, "
                     f"x{smclk * (slots or 1.0):.3f}")
    return out, notes


def per_sm_rate_ratio(source: Machine, target: Machine, precisions: Precisions,
                      weight: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """Per launch: the per-SM compute-rate ratio (module docstring) and notes saying which launches used what.

    ``weight``: how many launches each element stands for (the notes count launches).
    """
    weight = np.ones(len(precisions), dtype=np.int64) if weight is None else weight
    clock = source.gpu.clock_hz / target.gpu.clock_hz
    lanes, slots, issue_note = _issue_ratios(source, target)
    out = np.full(len(precisions), clock * (slots or 1.0))
    notes = [f"block compute time scales with the clock, {source.gpu.clock_hz / 1e6:,.0f} -> "
             f"{target.gpu.clock_hz / 1e6:,.0f} MHz (x{clock:.3f}), times the issue-limited rate per SM; "
             + issue_note]
    if lanes is not None and "fp32" in precisions.present():
        out[precisions.mask("fp32")] = clock * lanes
    peaks = _peaks(source, target, precisions)
    for p, (ps, pt) in sorted(peaks.items()):
        if p not in PER_SM_PEAK_PRECISIONS and not p.endswith("_tensor"):
            continue
        sel = precisions.mask(p)
        r = (ps / source.gpu.sms) / (pt / target.gpu.sms)
        out[sel] = r
        notes.append(f"{int(weight[sel].sum()):,} launches named for {p.upper()}: per-SM peak ratio x{r:.3f}")
    return out, notes
