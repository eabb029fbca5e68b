"""Resolution of the 1-byte cost L+O: target > source > trace estimate > class-agnostic > fallback."""

from __future__ import annotations

import sqlite3
from importlib import resources

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.machines.loader import machine_from_dict
from nodecast.models.one_byte import estimate_from_ops, resolve_one_byte
from nodecast.traces import CopyKind, MemKind, OpKind, Trace, TransferClass

TC = TransferClass


def machine(name: str, one_byte: dict[str, float] | None = None):
    """A one-GPU PCIe machine, with measured 1-byte costs when given."""
    data = {
        "schema_version": 1, "name": name, "description": "test machine",
        "cpu": {"model": "cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9, "memory_bytes": 64e9,
                "memory_bandwidth_bps": 51.2e9},
        "gpu": {"model": "gpu", "count": 1, "sms": 14, "clock_hz": 7e8, "memory_bytes": 6e9,
                "levels": {"dram": {"bandwidth_bps": 250e9}}},
        "links": [{"id": "pcie", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": 2, "lanes": 16}],
    }
    if one_byte is not None:
        data["measured"] = {"origin": "test", "one_byte_s": one_byte}
    return machine_from_dict(data, f"{name}.toml")


def copies(bytes_, duration_ns, copy_kind=CopyKind.HTOD, src=MemKind.PINNED, dst=MemKind.DEVICE) -> Trace:
    """A trace of copies of one kind with the given sizes and GPU durations."""
    n = len(bytes_)
    start = np.arange(n, dtype=np.int64) * 10**9
    return Trace.from_columns({
        "kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, copy_kind), "src_mem": np.full(n, src),
        "dst_mem": np.full(n, dst), "bytes": bytes_, "start_ns": start, "end_ns": start + np.asarray(duration_ns),
    })


SMALL = copies([1, 1, 4, 8, 1 << 20], [900, 1000, 1100, 1000, 200_000])


def test_target_measured_wins():
    """A target file's measured value beats the source's and the trace's."""
    cost = resolve_one_byte(SMALL, machine("src", {"htod_pinned": 3e-6}), machine("tgt", {"htod_pinned": 7.2e-6}))
    assert cost.seconds[TC.HTOD_PINNED] == 7.2e-6
    assert cost.origin[TC.HTOD_PINNED] == "target"
    assert cost.provenance[TC.HTOD_PINNED] == (
        "1-byte cost (L+O) of htod_pinned from target machine file tgt (measured): 7.200 µs"
    )


def test_source_measured_next():
    """Without a target value the source file's measured value is used (AHEAD's fallback)."""
    cost = resolve_one_byte(SMALL, machine("src", {"htod_pinned": 3e-6}), machine("tgt", {"dtod": 1e-6}))
    assert (cost.seconds[TC.HTOD_PINNED], cost.origin[TC.HTOD_PINNED]) == (3e-6, "source")
    assert "source machine file src" in cost.provenance[TC.HTOD_PINNED]


def test_trace_median_of_small_ops():
    """With no file value, the median GPU time of the class's ops of <= 8 B (4 here) is used."""
    # small ops: 900, 1000, 1100, 1000 ns -> median 1000 ns = 1 µs; the 1-MiB op is ignored
    cost = resolve_one_byte(SMALL, machine("src"), machine("tgt"))
    assert cost.seconds[TC.HTOD_PINNED] == pytest.approx(1e-6)
    assert cost.origin[TC.HTOD_PINNED] == "trace-small"
    assert "median GPU time of 4 ops of <= 8 B: 1.000 µs" in cost.provenance[TC.HTOD_PINNED]


def test_trace_fit_intercept_when_few_small_ops():
    """With fewer than 3 tiny ops, the intercept of duration vs bytes is used (LogGP eq. 1)."""
    # durations = 2000 ns + n * 0.5 ns/B: 1 KiB -> 2512, 4 KiB -> 4048, 64 KiB -> 34768; intercept 2 µs
    sizes = np.array([1024, 4096, 65536])
    trace = copies(sizes, 2000 + sizes // 2)
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.seconds[TC.HTOD_PINNED] == pytest.approx(2e-6, rel=1e-9)
    assert cost.origin[TC.HTOD_PINNED] == "trace-fit"


def test_fit_intercept_clipped_at_zero():
    """A negative intercept (super-linear durations) is clipped to 0 and said so."""
    value, method, how = estimate_from_ops(np.array([1e3, 1e4, 1e5]), np.array([1e-9, 1e-6, 1e-3]))
    assert (value, method) == (0.0, "fit")
    assert "clipped at 0" in how


def test_class_agnostic_when_class_has_one_op():
    """A class with a single op borrows the estimate from all transfers of the trace."""
    # pinned HtoD: 1, 1, 1 B at 1000, 1200, 1400 ns (median 1.2 µs); one DtoD op of 4 KiB
    htod = copies([1, 1, 1], [1000, 1200, 1400])
    dtod = copies([4096], [5000], copy_kind=CopyKind.DTOD, src=MemKind.DEVICE)
    trace = Trace.concat([htod, dtod])
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.origin[TC.DTOD] == "trace-all-small"
    assert cost.seconds[TC.DTOD] == pytest.approx(1.2e-6)
    assert "class-agnostic" in cost.provenance[TC.DTOD]


def test_fallback_then_none():
    """Zero-duration (synthetic) ops give no estimate: the fallback is used, else L+O = 0."""
    synthetic = copies([1, 2, 4, 8], [0, 0, 0, 0])
    cost = resolve_one_byte(synthetic, machine("src"), machine("tgt"), fallback_s=0.96e-6, fallback_label="--one-byte-us")
    assert (cost.seconds[TC.HTOD_PINNED], cost.origin[TC.HTOD_PINNED]) == (0.96e-6, "fallback")
    assert "--one-byte-us: 0.960 µs" in cost.provenance[TC.HTOD_PINNED]
    none = resolve_one_byte(synthetic, machine("src"), machine("tgt"))
    assert (none.seconds[TC.HTOD_PINNED], none.origin[TC.HTOD_PINNED]) == (0.0, "none")


def test_per_op_lookup():
    """per_op maps every op's class code to its L+O (0 for classes not resolved)."""
    cost = resolve_one_byte(None, None, machine("tgt", {"htod_pinned": 1e-6, "dtod": 2e-6}), [TC.HTOD_PINNED, TC.DTOD])
    codes = np.array([TC.HTOD_PINNED, TC.DTOD, TC.NOT_A_TRANSFER], dtype=np.int8)
    assert cost.per_op(codes).tolist() == [1e-6, 2e-6, 0.0]


def test_negative_fallback_refused():
    """A negative fallback cost is a programming error."""
    with pytest.raises(ValueError, match=">= 0"):
        resolve_one_byte(None, None, machine("tgt"), [TC.DTOD], fallback_s=-1.0)


def test_ahead_titan_trace_gives_096_us():
    """AHEAD's own Titan bandwidthTest trace: the 1-byte pinned HtoD copies have a median GPU time of 0.96 µs."""
    db = resources.files("nodecast") / "data" / "samples" / "nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x.nvvp"
    with resources.as_file(db) as path:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = np.array(con.execute("SELECT bytes, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall())
        con.close()
    trace = copies(rows[:, 0], rows[:, 2] - rows[:, 1])
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.seconds[TC.HTOD_PINNED] == pytest.approx(0.96e-6)
    assert "400 ops of <= 8 B" in cost.provenance[TC.HTOD_PINNED]


@given(st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_provenance_order(on_target, on_source, small_in_trace, fallback):
    """Whatever is available, the first of target > source > trace > fallback > none is chosen."""
    tgt = machine("tgt", {"htod_pinned": 5e-6} if on_target else None)
    src = machine("src", {"htod_pinned": 4e-6} if on_source else None)
    trace = copies([1, 2, 4], [3000, 3000, 3000] if small_in_trace else [0, 0, 0])
    cost = resolve_one_byte(trace, src, tgt, fallback_s=1e-6 if fallback else None)
    expected = ("target" if on_target else "source" if on_source else "trace-small" if small_in_trace
                else "fallback" if fallback else "none")
    assert cost.origin[TC.HTOD_PINNED] == expected
