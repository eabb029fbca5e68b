"""Tests for nodecast.workflows.characterize (AHEAD Table I and Fig. 1)."""

import numpy as np
import pytest

from nodecast.workflows.characterize import SIZE_LABELS, characterize
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import Trace


def _trace() -> Trace:
    # Two kernels (3 µs + 5 µs), three pinned HtoD copies (4 B, 2 KiB, 2 MiB),
    # one pageable DtoH copy (100 B), one memset.
    k, m, s = OpKind.KERNEL, OpKind.MEMCPY, OpKind.MEMSET
    kind = [k, m, m, k, m, m, s]
    copy = [0, CopyKind.HTOD, CopyKind.HTOD, 0, CopyKind.HTOD, CopyKind.DTOH, 0]
    src = [0, MemKind.PINNED, MemKind.PINNED, 0, MemKind.PINNED, MemKind.DEVICE, 0]
    dst = [0, MemKind.DEVICE, MemKind.DEVICE, 0, MemKind.DEVICE, MemKind.PAGEABLE, MemKind.DEVICE]
    size = [0, 4, 2048, 0, 2 * 1024**2, 100, 64]
    start = [0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]
    dur = [3000, 1000, 1500, 5000, 200_000, 2000, 500]
    return Trace.from_columns({
        "kind": kind, "copy_kind": copy, "src_mem": src, "dst_mem": dst, "bytes": size,
        "start_ns": start, "end_ns": np.add(start, dur),
    })


def test_table_one_times_and_share():
    """Kernel and transfer GPU times are summed per kind and the share is transfer / (kernel + transfer)."""
    ch = characterize(_trace())
    assert ch.kernel_time_s == pytest.approx(8e-6)
    assert ch.transfer_time_s == pytest.approx((1000 + 1500 + 200_000 + 2000) * 1e-9)
    assert ch.transfer_share == pytest.approx(204.5 / (204.5 + 8))
    assert (ch.n_kernels, ch.n_transfers, ch.n_memsets) == (2, 4, 1)


def test_per_class_counts_and_top_class():
    """Transfers are split by class and the costliest class comes first."""
    ch = characterize(_trace())
    pc = ch.per_class.set_index("class")
    assert pc.loc["htod_pinned", "count"] == 3
    assert pc.loc["dtoh_pageable", "count"] == 1
    assert pc.loc["htod_pinned", "bytes"] == 4 + 2048 + 2 * 1024**2
    assert ch.top_classes(1)["class"].iloc[0] == "htod_pinned"


def test_distributions_sum_to_one_and_bin_correctly():
    """The size- and time-based distributions each sum to 1 over all classes and bins."""
    ch = characterize(_trace())
    assert ch.size_distribution.to_numpy().sum() == pytest.approx(1.0)
    assert ch.time_distribution.to_numpy().sum() == pytest.approx(1.0)
    row = ch.size_distribution.loc["htod_pinned"]
    assert row[SIZE_LABELS[0]] == pytest.approx(1 / 4)  # 4 B is below 10 B
    assert row["1-64 KiB"] == pytest.approx(1 / 4)  # 2 KiB
    assert row["1-16 MiB"] == pytest.approx(1 / 4)  # 2 MiB
    assert ch.size_distribution.loc["dtoh_pageable", "10 B-1 KiB"] == pytest.approx(1 / 4)


def test_trace_without_transfers():
    """A kernels-only trace has zero transfer time and empty distributions."""
    t = Trace.from_columns({"kind": [OpKind.KERNEL], "start_ns": [0], "end_ns": [10]})
    ch = characterize(t)
    assert ch.n_transfers == 0
    assert ch.transfer_share == 0.0
    assert ch.per_class.empty
