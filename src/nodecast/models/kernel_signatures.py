"""Launch signatures: the distinct (kernel name, launch shape, blocks) of a trace's kernel launches.

Every term of the wave-scaling equation but gamma (``kernel_wave``) depends on
a launch's signature alone: its kernel name (the precision its name says), its
blocks (grid x*y*z), threads per block (block x*y*z), registers per thread,
shared memory per block (static + dynamic; whether either is recorded), and
whether the trace records its grid and block at all. A trace of a million
launches repeats a few hundred signatures (the 1 M-launch traces of
``benchmarks/bench_kernel_wave.py``: 207 and 186), so the terms are computed
once per signature and gathered back.

Signatures are found by hashing exact integer keys (``pandas.factorize``: one
pass, no sort), two of them because the fields do not fit one 64-bit integer:
the shape key packs name id, threads, registers and shared memory, and the
second pass pairs its code with the block count. Nothing is hashed lossily: a
value outside the packing (2,048 threads or 8 MiB of shared memory per block,
2^19 kernel names, a block count whose pairing would overflow) returns None,
and the caller computes per launch instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Bit widths of the packed shape key (63 bits in all): shared memory per block + 1, registers per thread + 1,
#: threads per block, kernel name id + 1. No GPU allows 2^11 threads, 8 MiB of shared memory or 2^10 registers
#: per thread in a block.
SMEM_BITS, REG_BITS, THREAD_BITS, NAME_BITS = 23, 10, 11, 19


@dataclass(frozen=True)
class Signatures:
    """``first``: row (into the caller's ``rows``) of each signature's first launch; ``index``: each launch's
    signature; ``weight``: launches per signature."""

    first: np.ndarray
    index: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


def _product(cols: dict[str, np.ndarray], rows: np.ndarray, prefix: str) -> np.ndarray:
    """x*y*z of a launch dimension at ``rows`` (int64; a dimension of 0, not recorded, counts 1)."""
    out = np.maximum(cols[f"{prefix}_x"][rows], 1).astype(np.int64)
    out *= np.maximum(cols[f"{prefix}_y"][rows], 1)
    out *= np.maximum(cols[f"{prefix}_z"][rows], 1)
    return out


def _first_of(codes: np.ndarray, n_unique: int) -> np.ndarray:
    """Index of the first occurrence of each code (reverse assignment: the earliest write wins)."""
    first = np.empty(n_unique, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def launch_signatures(cols: dict[str, np.ndarray], rows: np.ndarray) -> Signatures | None:
    """The signatures of the kernel launches at trace rows ``rows`` (module docstring); None when a value falls
    outside the packing or there is no launch."""
    if len(rows) == 0:
        return None
    import pandas as pd

    threads = _product(cols, rows, "block")
    static, dynamic = cols["static_smem_bytes"][rows], cols["dynamic_smem_bytes"][rows]
    smem = np.maximum(static, 0).astype(np.int64)
    smem += np.maximum(dynamic, 0)
    name = cols["name_id"][rows].astype(np.int64)
    if (threads.max() >= 1 << THREAD_BITS or smem.max() >= (1 << SMEM_BITS) - 1
            or name.max() >= (1 << NAME_BITS) - 1):
        return None
    # Packed fields, low to high: shared memory + 1 (0: neither size recorded), registers + 1 (0: not recorded;
    # capped at 2^10 - 1, above every target's limit, so the cap merges nothing a model tells apart), threads, name
    # id + 1 (0: no name).
    smem += 1
    smem[(static < 0) & (dynamic < 0)] = 0
    key = np.minimum(cols["registers_per_thread"][rows].astype(np.int64) + 1, (1 << REG_BITS) - 1)
    key <<= SMEM_BITS
    key |= smem
    key |= threads << (SMEM_BITS + REG_BITS)
    key |= (name + 1) << (SMEM_BITS + REG_BITS + THREAD_BITS)
    shape_code, shapes = pd.factorize(key)
    blocks = _product(cols, rows, "grid")
    blocks[(cols["grid_x"][rows] <= 0) | (cols["block_x"][rows] <= 0)] = 0  # not recorded: a signature of its own
    n_shapes = len(shapes)
    if float(blocks.max() + 1) * n_shapes >= 2.0**62:
        return None
    blocks *= n_shapes
    blocks += shape_code
    index, uniq = pd.factorize(blocks)
    index = index.astype(np.int64, copy=False)
    return Signatures(_first_of(index, len(uniq)), index, np.bincount(index, minlength=len(uniq)))
