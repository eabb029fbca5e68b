"""The Nsight Compute metrics the roofline model reads, the command that collects them, and ncu's units.

Metric ids and what each is for are ``ncu``'s module docstring's table; units
as ncu prints them (``usecond``, ``Mbyte``, ``cycle/nsecond``) are scaled to
SI base units by ``parse_unit``.
"""

from __future__ import annotations

# -- metric ids --------------------------------------------------------------------
DURATION = "gpu__time_duration.sum"
CYCLES = "sm__cycles_elapsed.avg"
CYCLE_RATE = "sm__cycles_elapsed.avg.per_second"
L1_BYTES = "l1tex__t_bytes.sum"
L2_BYTES = "lts__t_bytes.sum"
DRAM_BYTES = "dram__bytes.sum"
SHARED_BYTES = "sm__sass_data_bytes_mem_shared.sum"
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
SHARED_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"

#: Precisions whose FMA/ADD/MUL counters ncu provides, with the letter in the metric name.
PRECISION_LETTER = {"fp64": "d", "fp32": "f", "fp16": "h"}
#: Floating-point operations of eq. 2.
FLOP_OPS = ("fma", "add", "mul")
#: (precision, op) -> ncu metric counting its thread instructions (predicated on).
FLOP_METRICS: dict[tuple[str, str], str] = {
    (prec, op): f"sm__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum"
    for prec, letter in PRECISION_LETTER.items()
    for op in FLOP_OPS
}

#: Every metric of the command below, in order.
NCU_METRICS: tuple[str, ...] = (
    DURATION,
    CYCLES,
    CYCLE_RATE,
    *FLOP_METRICS.values(),
    L1_BYTES,
    L2_BYTES,
    DRAM_BYTES,
    SHARED_BYTES,
    SHARED_WAVEFRONTS,
    THREADS_PER_INST,
    TENSOR_INST,
)

#: The Nsight Compute command that collects everything the roofline model uses
#: in one wide CSV (one row per launch, base units). ``nodecast kernels
#: --print-ncu-command`` prints it. A saved report converts offline with
#: ``ncu --import report.ncu-rep --csv --page raw --print-units base``.
NCU_COMMAND = (
    "ncu --target-processes all --csv --page raw --print-units base --metrics "
    + ",".join(NCU_METRICS)
    + " ./your_app [args] > metrics.csv"
)

#: Column of the metrics table -> the ncu metric it comes from.
COLUMN_METRIC: dict[str, str] = {
    **{f"{p}_{o}_inst": m for (p, o), m in FLOP_METRICS.items()},
    "l1_bytes": L1_BYTES,
    "l2_bytes": L2_BYTES,
    "dram_bytes": DRAM_BYTES,
    "shared_bytes": SHARED_BYTES,
    "shared_wavefronts": SHARED_WAVEFRONTS,
    "shared_bank_conflicts": SHARED_CONFLICTS,
    "threads_per_inst": THREADS_PER_INST,
    "tensor_inst": TENSOR_INST,
}

# -- units ---------------------------------------------------------------------------
_PREFIX = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3,
    "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
    "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4,
}
#: Unit names ncu prints (full and short), longest first so that "second" wins over "s".
_BASES = (("second", "second"), ("byte", "byte"), ("cycle", "cycle"), ("inst", "inst"),
          ("hz", "hz"), ("B", "byte"), ("s", "second"))


def parse_unit(unit: str) -> tuple[float, str]:
    """Scale factor to SI base units and the base dimension of an ncu unit string.

    ``"usecond"`` -> ``(1e-6, "second")``; ``"Mbyte"`` -> ``(1e6, "byte")``;
    ``"cycle/nsecond"`` -> ``(1e9, "cycle/second")``; ``"GHz"`` -> ``(1e9, "hz")``.
    ncu's K/M/G prefixes are decimal (1 Kbyte = 1000 bytes); ``Ki``/``Mi``/``Gi``
    are binary. An unknown unit (``%``, ``inst``, ``""``, ``warp``) scales by 1.
    """
    text = unit.strip()
    if text in ("", "%"):
        return 1.0, text
    factor = 1.0
    dims = []
    for i, part in enumerate(text.split("/")):
        f, base = _unit_component(part.strip())
        factor = factor * f if i == 0 else factor / f
        dims.append(base)
    return factor, "/".join(dims)


def _unit_component(part: str) -> tuple[float, str]:
    for name, canonical in _BASES:
        if name == "hz":
            matched = part.lower().endswith("hz")
        else:
            matched = part.endswith(name)
        if matched:
            prefix = part[: len(part) - len(name)]
            if prefix in _PREFIX:
                return _PREFIX[prefix], canonical
    return 1.0, part


def is_time(dims: str) -> bool:
    return dims == "second"


def is_rate(dims: str) -> bool:
    return dims in ("cycle/second", "hz", "/second", "1/second")
