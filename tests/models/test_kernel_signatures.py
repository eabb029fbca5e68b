"""Launch signatures group kernel launches exactly by (name, blocks, threads, registers, shared memory, recorded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nodecast.models.kernel_footprint import kernel_rows
from nodecast.models.kernel_signatures import launch_signatures
from nodecast.traces.kinds import OpKind
from nodecast.traces.load import load_trace
from nodecast.traces.trace import Trace

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"
FIELDS = ("name_id", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
          "static_smem_bytes", "dynamic_smem_bytes")


def test_zoo_launches_grouped_exactly():
    """Every GTX TITAN kernel-zoo run together: launches of one signature agree on every launch field, launches of
    different signatures differ in one, and the counts add up."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    tr = Trace.concat([load_trace(p) for p in sorted((ZOO / "Titan").glob("*.csv"))[::3]])
    rows = kernel_rows(tr)
    sig = launch_signatures(tr.columns, rows)
    assert sig is not None and 1 < len(sig) < len(rows)
    table = np.stack([tr[f][rows].astype(np.int64) for f in FIELDS], axis=1)
    assert (table == table[sig.first][sig.index]).all()
    assert len(np.unique(table[sig.first], axis=0)) == len(sig)
    assert sig.weight.sum() == len(rows) and (sig.index[sig.first] == np.arange(len(sig))).all()


def test_unrecorded_sizes_are_their_own_signature():
    """A launch without grid sizes never shares a signature with a recorded one of the same block count, and one
    whose shared memory is not recorded never shares with one recording 0 B."""
    cols = {"kind": [OpKind.KERNEL] * 4, "start_ns": [0, 10, 20, 30], "end_ns": [5, 15, 25, 35],
            "grid_x": [1, 0, 4, 4], "block_x": [64, 64, 64, 64], "name_id": [0, 0, 0, 0],
            "static_smem_bytes": [0, 0, 0, -1], "dynamic_smem_bytes": [0, 0, 0, -1]}
    tr = Trace.from_columns(cols, ["k"])
    sig = launch_signatures(tr.columns, kernel_rows(tr))
    assert sig is not None and sig.index.tolist() == [0, 1, 2, 3]


def test_values_outside_the_packing_give_none():
    """A block of 2,048 threads (more than any GPU allows) cannot be packed: None, the caller goes per launch."""
    tr = Trace.from_columns({"kind": [OpKind.KERNEL], "start_ns": [0], "end_ns": [5], "grid_x": [1],
                             "block_x": [2048], "name_id": [0]}, ["k"])
    assert launch_signatures(tr.columns, kernel_rows(tr)) is None
