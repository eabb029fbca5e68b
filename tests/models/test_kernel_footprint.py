"""Compulsory bytes of a kernel (copies beside it) and its memory share, vectorized per device and stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nodecast.models.kernel_footprint import compulsory_bytes, memory_share
from nodecast.traces.kinds import CopyKind, OpKind
from nodecast.traces.nvprof_csv import read_nvprof_csv
from nodecast.traces.trace import Trace

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-zoo"

K, C = OpKind.KERNEL, OpKind.MEMCPY
H, D, N = CopyKind.HTOD, CopyKind.DTOH, CopyKind.NONE


def test_docstring_example_per_stream():
    """HtoD a, b | k1 | DtoH c | k2 | k3 | DtoH d gives F = a+b+c, 0, d; another stream's copies do not count."""
    kinds = [C, C, K, C, K, K, C, C, K]
    copies = [H, H, N, D, N, N, D, H, N]
    nbytes = [100, 20, 0, 3, 0, 0, 4000, 7, 0]
    streams = [1, 1, 1, 1, 1, 1, 1, 2, 2]
    tr = Trace.from_columns({"kind": kinds, "copy_kind": copies, "bytes": nbytes, "stream": streams,
                             "start_ns": np.arange(9) * 10, "end_ns": np.arange(9) * 10 + 5})
    assert compulsory_bytes(tr).tolist() == [0, 0, 123, 0, 0, 4000, 0, 0, 7]


def test_vector_add_memory_share_on_four_gpus():
    """The kernel zoo's largest vectorAdd copies 3 x 1 GiB around its kernel: share 0.68-0.84 of each sheet's DRAM."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    bw = {"GTX-680": 192.26e9, "Titan": 288.4e9, "Tesla-K20": 208e9, "GTX-970": 224e9}  # the data sheets' figures
    for gpu, dram in bw.items():
        tr = read_nvprof_csv(ZOO / gpu / "vectorAdd-167772160.csv")
        rows = np.flatnonzero(tr["kind"] == OpKind.KERNEL)
        assert compulsory_bytes(tr)[rows].tolist() == [3 * 167772160 * 4]
        share = memory_share(tr, rows, dram)
        assert 0.6 < share[0] < 0.9, gpu


def test_no_copy_no_evidence():
    """A kernel with no copy beside it has no memory share (NaN), not 0."""
    tr = Trace.from_columns({"kind": [K], "start_ns": [0], "end_ns": [1000]})
    assert np.isnan(memory_share(tr, np.array([0]), 1e11)).all()
