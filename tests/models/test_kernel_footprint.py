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


def _reference_compulsory(tr: Trace) -> np.ndarray:
    """F by walking the ops of each (device, stream) in row order (the module docstring's definition, one op at a
    time: a test oracle, not the model)."""
    out = np.zeros(len(tr))
    kind, ck, nbytes = tr["kind"].tolist(), tr["copy_kind"].tolist(), tr["bytes"].tolist()
    groups: dict[tuple[int, int], list[int]] = {}
    for i, key in enumerate(zip(tr["device"].tolist(), tr["stream"].tolist(), strict=True)):
        groups.setdefault(key, []).append(i)
    for rows in groups.values():
        kernels = [i for i in rows if kind[i] == K]
        for i in rows:
            if kind[i] != C or ck[i] not in (H, D):
                continue
            if ck[i] == H:
                after = [k for k in kernels if k > i]
                if after:
                    out[after[0]] += nbytes[i]
            else:
                before = [k for k in kernels if k < i]
                if before:
                    out[before[-1]] += nbytes[i]
    return out


def test_real_runs_interleaved_on_two_streams_match_the_definition():
    """Two real zoo runs (GTX 970 vectorAdd and matMul_gpu) put on two streams of one GPU and interleaved in time,
    so that most copies' neighbouring kernel is the other stream's: every kernel's F matches a walk of its own
    stream, and each run alone (one stream) matches too."""
    if not ZOO.is_dir():
        pytest.skip(f"{ZOO} is absent")
    a = read_nvprof_csv(ZOO / "GTX-970" / "vectorAdd-1048576.csv")
    b = read_nvprof_csv(ZOO / "GTX-970" / "matMul_gpu-256.csv")
    for one in (a, b):
        assert compulsory_bytes(one).tolist() == _reference_compulsory(one).tolist()
    cols = {}
    for c in a.columns:
        cols[c] = np.concatenate([a[c], b[c]])
    n_a = len(a)
    cols["name_id"] = np.r_[a["name_id"], np.where(b["name_id"] >= 0, b["name_id"] + len(a.names), -1)]
    cols["stream"] = np.r_[np.full(n_a, 1), np.full(len(b), 2)]
    cols["device"] = np.zeros(len(cols["kind"]), dtype=np.int16)
    # Alternate the two runs op by op: row i of each run starts at 2i (run A) and 2i + 1 (run B).
    cols["start_ns"] = np.r_[np.arange(n_a) * 2, np.arange(len(b)) * 2 + 1]
    cols["end_ns"] = cols["start_ns"] + 1
    tr = Trace.from_columns(cols, a.names + b.names, a.meta)  # sorted by (device, start): the streams interleave
    f = compulsory_bytes(tr)
    assert f.tolist() == _reference_compulsory(tr).tolist()
    assert f.sum() == compulsory_bytes(a).sum() + compulsory_bytes(b).sum() > 0
