"""Tests for nodecast.evaluate: op alignment and AHEAD's WMAPE."""

import numpy as np
import pytest

from nodecast.evaluate import align, ape, weighted_errors, wmape
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import Trace


def _copies(sizes, stream=7, device=0, start=0):
    n = len(sizes)
    starts = start + np.arange(n) * 1000
    return Trace.from_columns({
        "kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, CopyKind.HTOD),
        "src_mem": np.full(n, MemKind.PINNED), "dst_mem": np.full(n, MemKind.DEVICE),
        "bytes": sizes, "start_ns": starts, "end_ns": starts + 500,
        "stream": np.full(n, stream), "device": np.full(n, device),
    })


def test_wmape_is_sum_of_weighted_errors():
    """WMAPE equals 100 * sum|A-P| / sum(A), the sum of AHEAD's per-op weighted errors."""
    a = np.array([1.0, 3.0])
    p = np.array([2.0, 3.0])
    assert wmape(a, p) == pytest.approx(100 * 1 / 4)
    assert weighted_errors(a, p).sum() == pytest.approx(wmape(a, p))
    assert ape(a, p).tolist() == pytest.approx([100.0, 0.0])


def test_identical_runs_align_fully_even_with_other_stream_ids():
    """Two runs with the same ops but different stream ids align one to one."""
    a = _copies([1, 2, 3, 4], stream=7)
    b = _copies([1, 2, 3, 4], stream=14)
    al = align(a, b)
    assert al.index_a.tolist() == [0, 1, 2, 3]
    assert al.index_b.tolist() == [0, 1, 2, 3]
    assert len(al.unmatched_a) == len(al.unmatched_b) == 0


def test_inserted_op_is_reported_and_the_rest_realigned():
    """An op present only in B is reported unmatched; the ops after it still pair by bytes."""
    a = _copies([10, 20, 30, 40])
    b = _copies([10, 20, 99, 30, 40])
    al = align(a, b)
    pairs = dict(zip(al.index_a.tolist(), al.index_b.tolist(), strict=True))
    assert pairs == {0: 0, 1: 1, 2: 3, 3: 4}
    assert al.unmatched_b.tolist() == [2]
    assert al.realigned_groups == 1


def test_kinds_never_pair_with_each_other():
    """A kernel in A cannot pair with a copy in B."""
    a = Trace.from_columns({"kind": [OpKind.KERNEL], "start_ns": [0], "end_ns": [5]})
    b = _copies([8])
    al = align(a, b)
    assert len(al.index_a) == 0
    assert al.unmatched_a.tolist() == [0] and al.unmatched_b.tolist() == [0]
