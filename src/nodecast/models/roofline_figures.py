"""The maxima of a GPU that the hierarchical roofline uses (``nodecast.models.roofline``), and where each comes from.

GPU figures (``gpu_figures``): a Machine's ``[measured.gpu]`` maxima when it
has them, else its data sheet's published maxima (``[measured]``: the
paper's public benchmarks), else its data-sheet peak scaled by the *source*
GPU's measured/peak ratio for the same quantity (the paper's rule when no
public benchmark exists), else the data-sheet peak as is. The sheets give
L2/L1 peaks derived from documented widths (docs/kernels.md). Shared-memory
bandwidth defaults to the L1 figure (shared memory is carved out of L1 on
V100..H100).

A cache level whose bandwidth no source gives is absent; the projection
bounds it by its neighbours (``GpuFigures.bracketed``, ``unknown_level_note``).
Table 1 of the paper (``PAPER_TABLE1``): its measured maxima, and the
``[measured.gpu]`` block of a machine file that holds them
(``measured_gpu_toml``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from nodecast.errors import InputError
from nodecast.notes import LEVELS_UNKNOWN, Note
from nodecast.traces.ncu import PRECISION_LETTER
from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine

#: Precisions the model knows, as in ``nodecast.machines.schema.PRECISIONS`` minus bf16 (no ncu counters).
MODEL_PRECISIONS = tuple(PRECISION_LETTER)

#: Table 1 of the paper: measured maxima (HPL-like FP64 and STREAM-like per level).
TABLE1_ORIGIN = "Van Lanker et al., Euro-Par 2024, Table 1"
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "V100": {"perf_max_flops": 6890e9, "dram_bps": 846e9, "l2_bps": 2460e9, "l1_bps": 13963e9},
    "A100-40": {"perf_max_flops": 9476e9, "dram_bps": 1375e9, "l2_bps": 4710e9, "l1_bps": 19492e9},
    "A100-80": {"perf_max_flops": 9476e9, "dram_bps": 1678e9, "l2_bps": 4710e9, "l1_bps": 19492e9},
    "H100": {"perf_max_flops": 24979e9, "dram_bps": 1907e9, "l2_bps": 7758e9, "l1_bps": 25330e9},
}


def measured_gpu_toml(gpu: str, *, with_measured_table: bool = True) -> str:
    """The ``[measured.gpu]`` block of a machine file with Table 1's values for ``gpu`` (a PAPER_TABLE1 key).

    Table 1 gives one compute maximum (HPL: FP64, FMA-dominated); the ADD/MUL
    maximum is written as half of it, the FMA : ADD/MUL ratio of the data
    sheets. ``with_measured_table`` adds the ``[measured]`` table with its
    required ``origin`` (leave it out for a file that already has one).
    """
    row = PAPER_TABLE1[gpu]

    def g(v: float) -> str:
        return f"{v / 1e9:g}e9"

    lines = []
    if with_measured_table:
        lines += ["[measured]", f'origin = "{TABLE1_ORIGIN}"', ""]
    lines += [
        "[measured.gpu]",
        f'origin = "{TABLE1_ORIGIN}"',
        "[measured.gpu.peak_flops.fp64]",
        f"fma = {g(row['perf_max_flops'])}".ljust(24) + f"# Table 1 Perf^Max: {row['perf_max_flops'] / 1e9:g} GFLOP/s (HPL)",
        f"addmul = {g(row['perf_max_flops'] / 2)}".ljust(24) + "# half of fma (ADD/MUL: 1 FLOP per instruction); not in Table 1",
        "[measured.gpu.level_bandwidth_bps]",
        f"dram = {g(row['dram_bps'])}".ljust(24) + f"# Table 1 BW_DRAM^Max: {row['dram_bps'] / 1e9:g} GB/s (STREAM-like)",
        f"l2 = {g(row['l2_bps'])}".ljust(24) + f"# Table 1 BW_L2^Max: {row['l2_bps'] / 1e9:g} GB/s",
        f"l1 = {g(row['l1_bps'])}".ljust(24) + f"# Table 1 BW_L1^Max: {row['l1_bps'] / 1e9:g} GB/s",
    ]
    return "\n".join(lines)


# -- GPU figures -------------------------------------------------------------------
@dataclass(frozen=True)
class GpuFigures:
    """The maxima of one GPU the model uses, in FLOP/s and bytes/s, and where each came from.

    ``fma[p]``/``addmul[p]`` are eq. 2's P_FMA and P_ADDMUL for precision p;
    ``bandwidth[level]`` is BW^max of eq. 4-5; ``tensor[key]`` the tensor
    peaks (``fp16_tensor``...) of the machine or its data sheet. A quantity the
    machine file cannot give is absent. ``origin[key]`` says how a value was
    obtained (keys ``fma.fp32``, ``bw.l2``...). ``target`` is the GPU's
    instruction-set target (``sm_70``) when its data sheet is known.
    """

    machine: str
    model: str
    path: str | None
    fma: dict[str, float]
    addmul: dict[str, float]
    bandwidth: dict[str, float]
    origin: dict[str, str]
    tensor: dict[str, float] = field(default_factory=dict)
    target: str | None = None

    def peak(self, precision: str, op: str, needed_by: str) -> float:
        """P_FMA (op "fma") or P_ADDMUL (op "addmul") of a precision; InputError when absent."""
        table = self.fma if op == "fma" else self.addmul
        if precision not in table:
            raise InputError(
                f"no {precision.upper()} compute peak for {self.model} ({needed_by})",
                path=self.path, key=f"gpu.peak_flops.{precision}.{op}",
                hint=_own_file_hint(f"[gpu.peak_flops.{precision}] (data-sheet peak) or "
                                    f"[measured.gpu.peak_flops.{precision}]"))
        return table[precision]

    def bw(self, level: str, needed_by: str) -> float:
        """BW^max of a memory level; InputError when the machine gives none (the projection itself bounds an
        unknown cache level by its neighbours instead: ``bracketed``)."""
        if level not in self.bandwidth:
            raise InputError(
                f"no {level.upper()} bandwidth for {self.model} ({needed_by})",
                path=self.path, key=f"gpu.levels.{level}.bandwidth_bps",
                hint=_own_file_hint(f"gpu.levels.{level}.bandwidth_bps (data-sheet peak) or "
                                    f"measured.gpu.level_bandwidth_bps.{level}"))
        return self.bandwidth[level]

    def unknown_levels(self, hits: Mapping[str, np.ndarray]) -> dict[str, int]:
        """Cache levels (L2, L1, shared) without a bandwidth that some launch has bytes at: level -> launches."""
        return {lv: int((hits[lv] > 0).sum()) for lv in UNKNOWN_ORDER
                if lv not in self.bandwidth and bool((hits[lv] > 0).any())}

    def bracketed(self, levels: Sequence[str]) -> tuple[GpuFigures, GpuFigures]:
        """The figures with each of ``levels`` (unknown) at its slowest and at its fastest plausible bandwidth.

        A cache level is no slower than the nearest known level outside it (DRAM for L2; L2, else DRAM, for
        L1 and shared memory) and no faster than the nearest known level inside it (L1 for L2), unbounded
        (``inf``: no time spent there) when none is. The roofline times fall as a target's bandwidths rise, so
        the two figures bound every projection the true value gives.
        """
        slow, fast = dict(self.bandwidth), dict(self.bandwidth)
        for lv in levels:
            slow[lv] = next(self.bandwidth[o] for o in _OUTSIDE[lv] if o in self.bandwidth)
            fast[lv] = next((self.bandwidth[i] for i in _INSIDE[lv] if i in self.bandwidth), math.inf)
        return replace(self, bandwidth=slow), replace(self, bandwidth=fast)

    def describe(self) -> str:
        """One line: the figures and their origins, for notes."""
        parts = []
        for p in MODEL_PRECISIONS:
            if p in self.fma:
                parts.append(f"{p.upper()} FMA {self.fma[p] / 1e12:.4g} TFLOP/s ({self.origin[f'fma.{p}']})")
        for lv in ("dram", "l2", "l1", "shared"):
            if lv in self.bandwidth:
                parts.append(f"{lv.upper()} {self.bandwidth[lv] / 1e9:,.0f} GB/s ({self.origin[f'bw.{lv}']})")
        return f"{self.machine} ({self.model}): " + "; ".join(parts)


def _own_file_hint(what: str) -> str:
    """What to do about a figure a machine lacks: give it in a machine file of one's own, never edit a shipped one."""
    return (f"Give {what} in a machine file of your own (nodecast machines template --gpu KEY -o node.toml "
            "writes one from a data sheet; docs/machines.md) and pass its path")


#: Unknown cache levels, in the order their bounds are taken (L2 first: L1's slow bound may be L2's).
UNKNOWN_ORDER = ("l2", "l1", "shared")
#: The known levels that bound an unknown one, nearest first: outside it (slower) and inside it (faster).
_OUTSIDE = {"l2": ("dram",), "l1": ("l2", "dram"), "shared": ("l2", "dram")}
_INSIDE: dict[str, tuple[str, ...]] = {"l2": ("l1",), "l1": (), "shared": ()}
_LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "shared": "shared-memory"}


def _datasheet(machine: Machine) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    g = machine.gpu
    fma = {p: v.fma for p, v in g.peak_flops.items()}
    addmul = {p: v.addmul for p, v in g.peak_flops.items()}
    bw = {lv: m.bandwidth_bps for lv, m in g.levels.items() if m.bandwidth_bps}
    return fma, addmul, bw


def _sheet_measured(machine: Machine) -> dict[str, float]:
    """The data sheet's published level maxima (``[measured]``), for the levels the machine takes from that sheet.

    Only while the machine runs the sheet's product as published (its SMs and boost clock): a machine file
    that changes them, or gives a level's bandwidth itself, describes another GPU than the one measured.
    """
    from nodecast.machines.compose import MACHINE_FILE

    sheet = machine.gpu.sheet
    if sheet is None or (machine.gpu.sms, machine.gpu.clock_hz) != (sheet.sms, sheet.boost_clock_hz):
        return {}
    return {lv: v for lv, v in sheet.measured_level_bandwidth_bps.items()
            if not machine.provenance.get(f"gpu.levels.{lv}.bandwidth_bps", "").startswith(MACHINE_FILE)}


def _measured(machine: Machine) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, str]]:
    """Measured FMA and ADD/MUL peaks and level bandwidths, and the origin of each (``fma.fp64``, ``bw.l2``...).

    The machine's ``[measured.gpu]`` wins over its data sheet's published maxima.
    """
    sheet_bw = _sheet_measured(machine)
    origin = {f"bw.{lv}": f"published measurement, data sheet {machine.gpu.sheet.key}"  # type: ignore[union-attr]
              for lv in sheet_bw}
    m = machine.measured
    if m is None:
        return {}, {}, sheet_bw, origin
    where = m.gpu_origin or m.origin
    fma = {p: v.fma for p, v in m.gpu_peak_flops.items()}
    addmul = {p: v.addmul for p, v in m.gpu_peak_flops.items()}
    bw = {**sheet_bw, **m.gpu_level_bandwidth_bps}
    origin.update({f"{kind}.{p}": f"measured, {where}" for p in m.gpu_peak_flops for kind in ("fma", "addmul")})
    origin.update({f"bw.{lv}": f"measured, {where}" for lv in m.gpu_level_bandwidth_bps})
    return fma, addmul, bw, origin


def gpu_figures(machine: Machine, reference: Machine | None = None) -> GpuFigures:
    """The GPU maxima of ``machine``: measured, else data sheet x ``reference``'s measured/peak ratio, else data sheet.

    Measured: the machine's ``[measured.gpu]``, else its data sheet's
    published maxima (``[measured]`` in the sheet; the paper's "publicly
    available benchmarks"). ``reference`` is the source GPU when ``machine``
    is the target (the paper's Peak/Max ratio rule, section 4.1); None for
    the source itself. Shared-memory bandwidth falls back to the L1 value.
    A level no source gives is absent (``project_kernels`` bounds it).
    """
    ds = _datasheet(machine)
    ms_fma, ms_addmul, ms_bw, ms_origin = _measured(machine)
    ref_ds = _datasheet(reference) if reference is not None else ({}, {}, {})
    ref_ms = _measured(reference) if reference is not None else ({}, {}, {}, {})
    out: list[dict[str, float]] = [{}, {}, {}]
    origin: dict[str, str] = {}
    for i, (kind, keys) in enumerate((("fma", MODEL_PRECISIONS), ("addmul", MODEL_PRECISIONS),
                                      ("bw", ("dram", "l2", "l1", "shared")))):
        measured = (ms_fma, ms_addmul, ms_bw)[i]
        sheet = ds[i]
        for key in keys:
            label = f"{kind}.{key}"
            if key in measured:
                out[i][key] = measured[key]
                origin[label] = ms_origin[label]
            elif key in sheet:
                r_meas, r_sheet = ref_ms[i].get(key), ref_ds[i].get(key)
                if reference is not None and r_meas and r_sheet:
                    ratio = r_meas / r_sheet
                    out[i][key] = sheet[key] * ratio
                    origin[label] = f"data sheet x {reference.name} measured/peak {ratio:.3f}"
                else:
                    out[i][key] = sheet[key]
                    origin[label] = "data sheet"
    fma, addmul, bw = out
    if "shared" not in bw and "l1" in bw:
        bw["shared"] = bw["l1"]
        origin["bw.shared"] = "= L1 figure (shared memory lives in L1)"
    from nodecast.machines.parts import TENSOR_PEAKS

    tensor = {k: v for k in TENSOR_PEAKS if (v := machine.gpu.peak_flops_per_s(k))}
    for k in tensor:
        origin[f"tensor.{k}"] = "data sheet"
    target = machine.gpu.sheet.target if machine.gpu.sheet is not None else None
    return GpuFigures(machine.name, machine.gpu.model, str(machine.path) if machine.path else None,
                      fma, addmul, bw, origin, tensor, target)


def unknown_level_note(level: str, side: str, fig: GpuFigures, n: int, total: int) -> str:
    """Why the interval of ``n`` launches is wider: ``level``'s bandwidth is unknown on the ``side`` GPU."""
    name = _LEVEL_NAMES[level]
    outer = next(o for o in _OUTSIDE[level] if o in fig.bandwidth)
    inner = next((i for i in _INSIDE[level] if i in fig.bandwidth), None)
    upper = (f"{_LEVEL_NAMES[inner]}'s {fig.bandwidth[inner] / 1e9:,.0f} GB/s (the level inside it)" if inner
             else "no upper limit (no level inside it is known)")
    return Note(f"{name} bandwidth unknown for {fig.model} ({fig.machine}, the {side}), which {n} of "
                f"{plural(total, 'launch', 'launches')} use: projected with it anywhere between "
                f"{_LEVEL_NAMES[outer]}'s {fig.bandwidth[outer] / 1e9:,.0f} GB/s (the level outside it) and {upper}; "
                "interval widened to cover both ends (give the level's bandwidth to narrow it)", LEVELS_UNKNOWN)
