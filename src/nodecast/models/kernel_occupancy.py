"""Theoretical occupancy of kernel launches on a GPU, from the launch configuration and the GPU's per-SM limits.

For every launch (vectorized over a whole trace) and one GPU's limits
(``nodecast.machines.parts.TargetLimits``: NVIDIA per SM, AMD per CU), the
resident blocks per SM are the smallest of four limits, as the CUDA occupancy
calculator computes them (``cuda_occupancy.h``, ``cudaOccMaxActiveBlocksPerMultiprocessor``;
CUDA C++ Programming Guide, "Technical Specifications per Compute Capability")::

    T  = block_x * block_y * block_z                    threads per block
    Wb = ceil(T / warp_size)                            warps per block
    by_warps  = floor(max_warps_per_sm / Wb)
    by_blocks = max_blocks_per_sm
    by_regs   = floor(P * floor(registers_per_sm / P / Rw) / Wb),  Rw = ceil(r * warp_size / u_r) * u_r
                (r registers per thread, u_r the register allocation unit: registers are allocated per warp,
                 from the register file of one of the SM's P sub-partitions, ``sub_partitions``)
    by_smem   = floor(shared_memory_per_sm / S),         S = ceil((s_static + s_dynamic + s_reserved) / u_s) * u_s
    blocks_per_sm = min(by_warps, by_blocks, by_regs, by_smem)

and the occupancy is ``blocks_per_sm * Wb / max_warps_per_sm``. Where it
departs from the calculator, and why:

* a register count the trace does not record leaves ``by_regs`` out, and an
  unrecorded shared-memory size counts 0 B (said by ``Occupancy.notes``);
* registers above the target's ``max_registers_per_thread`` (a kernel built
  for sm_35+ projected onto sm_30, 63 registers at most) are capped there: the
  compiler would spill the rest to local memory, which is not modelled;
* ``P`` is not in the limits files: it is ``cudaOccSubPartitionsPerMultiprocessor``
  of ``cuda_occupancy.h`` (CUDA 12.6 copy cited in the targets' sources), 4 for
  compute capability 3.x, 5.x, 6.1/6.2 and 7.0 on, 2 for 6.0; Fermi (2.x) is
  not in that header and is taken unpartitioned (P = 1); an AMD CU's is its
  SIMD count (``simds_per_cu``: each SIMD has its own VGPR file). On the four
  shared CUDA Kineto traces (V100, two A100, H100) these blocks per SM give
  CUPTI's own "est. achieved occupancy %" on all 4,810 launches where CUPTI
  computed one (tests/models/test_kernel_occupancy.py);
* a launch that cannot fit one block on an SM of the target (more shared
  memory or threads per block than the target allows) gets 1 block per SM,
  flagged in ``Occupancy.cannot_launch``: the program would need rebuilding
  for that GPU, and its time is projected as if one block fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nodecast.words import plural

if TYPE_CHECKING:
    from nodecast.machines.parts import TargetLimits

#: Limiter names, in ``Occupancy.limiter`` code order.
LIMITERS = ("warps", "blocks", "registers", "shared memory")


@dataclass(frozen=True)
class LaunchShape:
    """What occupancy needs of each launch (arrays over launches).

    ``blocks`` and ``threads`` per launch; ``registers`` per thread and
    ``smem_bytes`` per block are NaN where the trace does not record them.
    ``groups``, when known, is (first launch of each distinct (threads,
    registers, shared memory), index of each launch's shape, launches per
    shape): occupancy is then computed once per shape.
    """

    blocks: np.ndarray
    threads: np.ndarray
    registers: np.ndarray
    smem_bytes: np.ndarray
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, compare=False)

    @classmethod
    def from_columns(cls, cols: dict[str, np.ndarray], rows: np.ndarray) -> LaunchShape:
        """The shapes of trace rows ``rows`` (Trace columns, see ``nodecast.traces.trace``).

        A grid or block dimension of 0 (a profiler that did not record it)
        counts as 1. Static and dynamic shared memory are summed, each
        unrecorded one counting 0 B; the sum is NaN only when neither is recorded.
        """
        return cls.from_arrays(*launch_arrays(cols, rows))

    @classmethod
    def from_arrays(cls, blocks: np.ndarray, threads: np.ndarray, regs: np.ndarray, smem: np.ndarray,
                    unknown_smem: np.ndarray, *, grouped: bool = True) -> LaunchShape:
        """A LaunchShape from ``launch_arrays``' integer arrays (``grouped``: also find the distinct shapes)."""
        return cls(blocks=blocks.astype(np.float64), threads=threads.astype(np.float64),
                   registers=np.where(regs >= 0, regs, np.nan), smem_bytes=np.where(unknown_smem, np.nan, smem),
                   groups=_groups(threads, regs, smem, unknown_smem) if grouped else None)

    def __len__(self) -> int:
        return len(self.blocks)


def launch_arrays(cols: dict[str, np.ndarray],
                  rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Integer arrays of the rows' shapes: blocks and threads (int64; a dimension of 0 counts 1), registers
    (int16, -1 not recorded), shared memory per block (int64, static + dynamic, each unrecorded one 0 B), and
    whether neither shared-memory size is recorded."""
    def dims(prefix: str) -> np.ndarray:
        out = np.maximum(cols[f"{prefix}_x"][rows], 1).astype(np.int64)
        out *= np.maximum(cols[f"{prefix}_y"][rows], 1)
        out *= np.maximum(cols[f"{prefix}_z"][rows], 1)
        return out

    static, dynamic = cols["static_smem_bytes"][rows], cols["dynamic_smem_bytes"][rows]
    smem = np.maximum(static, 0).astype(np.int64) + np.maximum(dynamic, 0)
    return dims("grid"), dims("block"), cols["registers_per_thread"][rows], smem, (static < 0) & (dynamic < 0)


def _groups(threads: np.ndarray, regs: np.ndarray, smem: np.ndarray,
            unknown_smem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``LaunchShape.groups`` by hashing a packed integer key (pandas.factorize: no sort); None when a value
    falls outside the packing (threads >= 2^21 or shared memory >= 4 GiB, which no GPU allows)."""
    if len(threads) == 0 or threads.max() >= 1 << 21 or smem.max() >= (1 << 32) - 1:
        return None
    import pandas as pd

    reg_code = np.where(regs >= 0, np.minimum(regs, 1022), 1023).astype(np.int64)
    key = (threads << 42) | (reg_code << 32) | np.where(unknown_smem, 0, smem + 1)
    codes, uniq = pd.factorize(key)
    n = len(key)
    first = np.empty(len(uniq), dtype=np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    return first, codes, np.bincount(codes, minlength=len(uniq))


@dataclass
class Occupancy:
    """Resident blocks per SM of every launch on one GPU, and why (arrays over launches).

    ``blocks_per_sm`` >= 1 (float, whole numbers); ``warps_per_block``;
    ``occupancy`` = resident warps / ``max_warps_per_sm`` in (0, 1];
    ``limiter`` indexes ``LIMITERS``; ``cannot_launch`` marks launches whose
    block does not fit one SM of this GPU at all.
    """

    blocks_per_sm: np.ndarray
    warps_per_block: np.ndarray
    occupancy: np.ndarray
    limiter: np.ndarray
    cannot_launch: np.ndarray
    notes: list[str] = field(default_factory=list)


def sub_partitions(limits: TargetLimits) -> int:
    """Register-file sub-partitions per SM (CU) of a target (module docstring: ``P``)."""
    if limits.vendor == "amd":
        return int(limits.simds_per_cu or 1)
    cc = limits.target.removeprefix("sm_")
    major, minor = (int(cc[:-1]), int(cc[-1])) if cc.isdigit() and len(cc) >= 2 else (0, 0)
    if major >= 3 and (major, minor) != (6, 0):
        return 4
    return 2 if (major, minor) == (6, 0) else 1


def _distinct(shape: LaunchShape) -> tuple[LaunchShape, np.ndarray, np.ndarray] | None:
    """The distinct (threads, registers, shared memory) of the launches, the index of each launch's, and their counts.

    A trace of a million launches has a few hundred distinct shapes: occupancy is computed once per shape. None
    when a value falls outside the packing (threads >= 2^21, which no GPU allows in a block).
    """
    threads = shape.threads
    if len(threads) == 0 or threads.max() >= 1 << 21:
        return None
    regs = np.where(np.isnan(shape.registers), 1023.0, np.minimum(shape.registers, 1022.0))
    smem = np.where(np.isnan(shape.smem_bytes), -1.0, shape.smem_bytes) + 1.0
    if smem.max() >= 1 << 32:
        return None
    key = (threads.astype(np.int64) << 42) | (regs.astype(np.int64) << 32) | smem.astype(np.int64)
    uniq, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    if len(uniq) == len(key):
        return None
    sub = LaunchShape(shape.blocks[first], threads[first], shape.registers[first], shape.smem_bytes[first])
    return sub, inverse.reshape(-1), counts


def _from_groups(shape: LaunchShape) -> tuple[LaunchShape, np.ndarray, np.ndarray]:
    """``_distinct`` from the groups ``LaunchShape.from_columns`` already made."""
    first, inverse, counts = shape.groups  # type: ignore[misc]
    sub = LaunchShape(shape.blocks[first], shape.threads[first], shape.registers[first], shape.smem_bytes[first])
    return sub, inverse, counts


def occupancy(shape: LaunchShape, limits: TargetLimits, gpu: str = "", weight: np.ndarray | None = None) -> Occupancy:
    """Blocks per SM of every launch of ``shape`` on a GPU with ``limits`` (module docstring).

    Computed once per distinct launch shape (``_distinct``) and gathered back to every launch.
    ``weight``: how many launches each element of ``shape`` stands for (the notes count launches).
    """
    weight = np.ones(len(shape), dtype=np.int64) if weight is None else weight
    distinct = _distinct(shape) if shape.groups is None else _from_groups(shape)
    if distinct is None:
        return _occupancy(shape, limits, gpu, weight)
    sub, inverse, _ = distinct
    counts = np.bincount(inverse, weights=weight, minlength=len(sub)).astype(np.int64)
    o = _occupancy(sub, limits, gpu, counts)
    return Occupancy(o.blocks_per_sm[inverse], o.warps_per_block[inverse], o.occupancy[inverse], o.limiter[inverse],
                     o.cannot_launch[inverse], o.notes)


def _occupancy(shape: LaunchShape, limits: TargetLimits, gpu: str, weight: np.ndarray) -> Occupancy:
    """``occupancy`` of each shape; ``weight`` counts the launches each stands for (for the notes)."""
    warp = float(limits.warp_size)
    parts = float(sub_partitions(limits))
    wb = np.ceil(np.maximum(shape.threads, 1.0) / warp)
    by_warps = np.floor(limits.max_warps_per_sm / wb)
    by_blocks = np.full(len(shape), float(limits.max_blocks_per_sm))
    regs = shape.registers
    unit_r = float(limits.register_allocation_unit or 1)
    capped = regs > limits.max_registers_per_thread
    r = np.minimum(regs, float(limits.max_registers_per_thread))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_warp = np.ceil(r * warp / unit_r) * unit_r
        warps_by_regs = parts * np.floor(limits.registers_per_sm / parts / per_warp)
        by_regs = np.where(np.isfinite(r) & (r > 0), np.floor(warps_by_regs / wb), np.inf)
    unit_s = float(limits.shared_memory_allocation_unit_bytes or 1)
    reserved = float(limits.reserved_shared_memory_per_block_bytes or 0)
    smem = np.where(np.isfinite(shape.smem_bytes), shape.smem_bytes, 0.0) + reserved
    alloc = np.ceil(smem / unit_s) * unit_s
    with np.errstate(divide="ignore"):
        by_smem = np.where(alloc > 0, np.floor(limits.shared_memory_per_sm_bytes / alloc), np.inf)
    stack = np.vstack([by_warps, by_blocks, by_regs, by_smem])
    limiter = np.argmin(stack, axis=0)
    blocks = stack.min(axis=0)
    too_big = (shape.threads > limits.max_threads_per_block) | (
        np.isfinite(shape.smem_bytes) & (shape.smem_bytes > limits.max_shared_memory_per_block_bytes))
    cannot = too_big | (blocks < 1)
    blocks = np.maximum(blocks, 1.0)
    occ = np.minimum(blocks * wb / limits.max_warps_per_sm, 1.0)
    notes = []
    who = f" on {gpu}" if gpu else ""
    n = int(weight.sum())

    def count(mask: np.ndarray) -> int:
        return int(weight[mask].sum())

    if np.isnan(regs).any():
        notes.append(f"{plural(count(np.isnan(regs)), 'launch', 'launches')} of {n:,} without registers per "
                     f"thread in the trace: occupancy{who} not limited by registers")
    if np.isnan(shape.smem_bytes).any():
        notes.append(f"{plural(count(np.isnan(shape.smem_bytes)), 'launch', 'launches')} of {n:,} without "
                     f"shared memory per block in the trace: 0 B assumed{who}")
    if capped.any():
        notes.append(f"{plural(count(capped), 'launch', 'launches')} use more registers than the "
                     f"{limits.max_registers_per_thread} per thread of {limits.target}{who}: capped (spills not "
                     "modelled)")
    if cannot.any():
        notes.append(f"{plural(count(cannot), 'launch', 'launches')} cannot fit one block on an SM of "
                     f"{limits.target}{who} (threads or shared memory per block above its limits): "
                     "projected as 1 block per SM")
    return Occupancy(blocks, wb, occ, limiter, cannot, notes)
