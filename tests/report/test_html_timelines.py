"""The timeline's packed columns give back every op exactly (1 ns), whatever their size, in little space."""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pandas as pd
import pytest

from nodecast.report.html.timelines import encode, pack

_TYPES = {"uint8": "<u1", "uint16": "<u2", "uint32": "<u4", "float64": "<f8"}


def decode_column(spec: dict) -> np.ndarray:
    """What the page's ncArray does: base64, inflate, un-shuffle the bytes (written here from the format)."""
    raw = zlib.decompress(base64.b64decode(spec["data"]))
    dtype = np.dtype(_TYPES[spec["dtype"]])
    planes = np.frombuffer(raw, np.uint8).reshape(dtype.itemsize, spec["n"])
    return planes.T.copy().view(dtype).ravel()


def decode(spec: dict) -> pd.DataFrame:
    """Ops back from the page's JSON: absolute starts from the per-track gaps, ends from the durations."""
    gaps, dur = decode_column(spec["start_gap_ns"]), decode_column(spec["dur_ns"])
    track = np.repeat(np.arange(len(spec["tracks"])), spec["counts"])
    start = np.zeros(gaps.size, dtype=np.int64)
    for t in range(len(spec["tracks"])):
        sel = track == t
        start[sel] = np.cumsum(gaps[sel].astype(np.int64))
    names = zlib.decompress(base64.b64decode(spec["names"])).decode().split("\n")
    return pd.DataFrame({"track": np.array(spec["tracks"])[track], "start_ns": start,
                         "end_ns": start + dur.astype(np.int64),
                         "kind": decode_column(spec["kind"]).astype(int),
                         "name": np.array(names, dtype=object)[decode_column(spec["name"]).astype(int)]})


def ops_table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Random ops on 3 streams and a host thread (built here; times in s, as a forecast gives them)."""
    start = rng.uniform(0, 2.0, n)
    return pd.DataFrame({
        "track": rng.choice(["GPU 0 stream 13", "GPU 0 stream 7", "host thread 2", "GPU 0 stream 21"], n),
        "start_s": start, "end_s": start + rng.lognormal(np.log(1e-5), 1.5, n),
        "kind": rng.choice(["kernel", "memcpy HtoD", "runtime API"], n),
        "name": rng.choice(["gemm", "axpy\nline two", "cudaLaunchKernel"], n),
    })


def test_packed_ops_decode_to_the_input_times_to_the_nanosecond():
    """Every op comes back with its track, start and end rounded to 1 ns, its kind and its name."""
    ops = ops_table(np.random.default_rng(3), 5000)
    kinds = ["kernel", "memcpy HtoD", "runtime API"]
    got = decode(encode(pack(ops, "forecast", kinds)))
    want = pd.DataFrame({"track": ops["track"], "start_ns": np.rint(ops["start_s"] * 1e9).astype(np.int64),
                         "end_ns": np.rint(ops["end_s"] * 1e9).astype(np.int64),
                         "kind": pd.Categorical(ops["kind"], categories=kinds).codes.astype(int),
                         "name": ops["name"].str.replace("\n", " ")})
    key = ["track", "start_ns", "end_ns", "kind", "name"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True), check_dtype=False)
    # Streams in number order (7 before 13), whatever the order of appearance.
    assert encode(pack(ops, "x", kinds))["tracks"] == ["GPU 0 stream 7", "GPU 0 stream 13", "GPU 0 stream 21",
                                                         "host thread 2"]


def test_gaps_beyond_four_seconds_switch_to_float64_and_stay_exact():
    """A 10 s idle gap and a 6 s op do not fit uint32 ns: the column becomes float64, still exact."""
    ops = pd.DataFrame({"track": ["s"] * 3, "start_s": [0.0, 10.000000001, 10.5], "end_s": [1e-6, 16.2, 10.5],
                        "kind": ["k"] * 3, "name": ["a", "b", "c"]})
    spec = encode(pack(ops, "x", ["k"]))
    assert (spec["start_gap_ns"]["dtype"], spec["dur_ns"]["dtype"]) == ("float64", "float64")
    got = decode(spec)
    assert got["start_ns"].tolist() == [0, 10_000_000_001, 10_500_000_000]
    assert got["end_ns"].tolist() == [1000, 16_200_000_000, 10_500_000_000]


def test_ops_without_times_are_left_out_and_counted_and_backward_ops_refused():
    """An op with no forecast time is counted as not drawn; one that ends before it starts is an error."""
    ops = pd.DataFrame({"track": ["a", "a", "b"], "start_s": [0.0, np.nan, 1.0], "end_s": [1.0, 2.0, 2.0]})
    p = pack(ops, "x", ["op"])
    assert (p.n_ops, p.dropped) == (2, 1)
    with pytest.raises(ValueError, match="1 ops end before they start"):
        pack(pd.DataFrame({"track": ["a"], "start_s": [2.0], "end_s": [1.0]}), "x", ["op"])
    with pytest.raises(ValueError, match="lack columns"):
        pack(pd.DataFrame({"start_s": [0.0], "end_s": [1.0]}), "x", ["op"])


def test_a_realistic_timeline_packs_to_a_few_bytes_per_op():
    """Random-nanosecond ops (the hard case for compression) take under 8 bytes each once packed."""
    ops = ops_table(np.random.default_rng(5), 100_000)
    spec = encode(pack(ops, "x", ["kernel", "memcpy HtoD", "runtime API"]))
    size = sum(len(spec[c]["data"]) for c in ("start_gap_ns", "dur_ns", "kind", "name")) + len(spec["names"])
    assert size / len(ops) < 8
