"""Resolution of the 1-byte cost L+O: given > target > source > trace estimate > class-agnostic > fallback > default."""

from __future__ import annotations

import sqlite3
from importlib import resources

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.errors import InputError
from nodecast.machines.loader import machine_from_dict
from nodecast.machines.topology import raw_rate_bps
from nodecast.models.one_byte import DEFAULT_ONE_BYTE_S, check_given, resolve_one_byte
from nodecast.traces import CopyKind, MemKind, OpKind, Trace, TransferClass

TC = TransferClass


def machine(name: str, one_byte: dict[str, float] | None = None, gen: int = 2):
    """A one-GPU PCIe machine (gen2 x16 unless told), with measured 1-byte costs when given."""
    data = {
        "schema_version": 1, "name": name, "description": "test machine",
        "cpu": {"model": "cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9, "memory_bytes": 64e9,
                "memory_bandwidth_bps": 51.2e9},
        "gpu": {"model": "gpu", "count": 1, "sms": 14, "clock_hz": 7e8, "memory_bytes": 6e9,
                "levels": {"dram": {"bandwidth_bps": 250e9}}},
        "links": [{"id": "pcie", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": gen, "lanes": 16}],
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
    assert "median GPU time of 4 copies of <= 8 B (AHEAD's 1-byte measurement): 1.000 µs" in \
        cost.provenance[TC.HTOD_PINNED]


def test_latency_bound_copies_when_few_tiny_ops():
    """With fewer than 3 tiny copies, L+O = median(T - n/BW) over the copies below BW x 0.96 µs, capped."""
    # durations = 2000 ns + n * 0.5 ns/B; the source's PCIe gen2 x16 moves 8 GB/s, so BW x 0.96 µs = 7,680 B:
    # 1 KiB (2.512 µs, wire 0.128 µs) and 4 KiB (4.048 µs, wire 0.512 µs) are latency-bound, 64 KiB is not.
    # median(2.384, 3.536) = 2.96 µs, above the smallest copy's own 2.512 µs: capped there.
    sizes = np.array([1024, 4096, 65536])
    trace = copies(sizes, 2000 + sizes // 2)
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.seconds[TC.HTOD_PINNED] == pytest.approx(2.512e-6, rel=1e-9)
    assert cost.origin[TC.HTOD_PINNED] == "trace-latency"
    assert "2 latency-bound copies (1,024-4,096 B" in cost.provenance[TC.HTOD_PINNED]
    assert "capped at the smallest copy's measured GPU time, 1,024 B in 2.512 µs" in cost.provenance[TC.HTOD_PINNED]


def test_gigabyte_copies_never_set_the_cost():
    """12 copies of 2.5 KB among gigabyte copies: L+O comes from the 2.5 KB ones, not from a line through all.

    Built to reproduce issue 12's report: the gigabyte copies take c + n / 6 GB/s, with c chosen so that a
    least-squares line through every copy (the old estimate) has its intercept at 91.8 µs; it projected the
    12 copies at 1,105 µs against 30 µs measured.
    """
    sizes = np.concatenate([np.full(12, 2560), [2**30, 2**30, 2**31, 2**31]])

    def durations_ns(c_ns: float) -> np.ndarray:
        return np.concatenate([np.full(12, 2500.0), c_ns + sizes[12:] / 6.0]).round()

    def old_intercept(c_ns: float) -> float:
        return np.polyfit(sizes.astype(float), durations_ns(c_ns) * 1e-9, 1)[1]

    # The intercept is linear in c: solve for 91.8 µs from two evaluations.
    i0, i1 = old_intercept(0.0), old_intercept(1e6)
    c = (91.8e-6 - i0) / (i1 - i0) * 1e6
    trace = copies(sizes, durations_ns(c).astype(np.int64))
    assert old_intercept(c) == pytest.approx(91.8e-6, rel=1e-3)  # what the old fit gave
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    # 2,560 B over 8 GB/s is 0.32 µs of wire time: L+O = 2.5 - 0.32 = 2.18 µs
    assert cost.seconds[TC.HTOD_PINNED] == pytest.approx(2.5e-6 - 2560 / 8e9)
    assert "12 latency-bound copies (2,560 B" in cost.provenance[TC.HTOD_PINNED]


def test_one_size_class_is_not_zero(shared_traces):
    """Every copy of a kind has one size (8,000 B on a T4): L+O is their time less n/BW, not 0 (issue 12)."""
    from nodecast.traces.load import load_trace

    trace = load_trace(shared_traces / "nvprof_vectoradd-streams-1M_t4.nvvp")
    src = machine("src", gen=3)  # the T4's PCIe gen3 x16: 15.75 GB/s, 0.51 µs for 8,000 B (below BW x 0.96 µs)
    wire = 8000 / raw_rate_bps(src.host_link(0))
    cost = resolve_one_byte(trace, src, machine("tgt"))
    tc = trace.transfer_class
    for klass in (TC.HTOD_PINNED, TC.DTOH_PINNED):
        t = trace.duration_ns[tc == klass] * 1e-9
        bound = wire <= t / 2
        assert cost.origin[klass] == "trace-latency"
        assert cost.seconds[klass] == pytest.approx(np.median(t[bound] - wire))
        assert 1e-6 < cost.seconds[klass] <= np.median(t)


def test_copies_slow_for_another_reason_are_not_latency(shared_traces):
    """512 MB pageable copies at a third of the link rate are not latency-bound: AHEAD's 0.96 µs, with a note."""
    from nodecast.traces.load import load_trace

    trace = load_trace(shared_traces / "nsys_omp-offload-heat-8000_t4_map-every-step.sqlite")
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.seconds[TC.HTOD_PAGEABLE] == DEFAULT_ONE_BYTE_S
    assert cost.origin[TC.HTOD_PAGEABLE] == "default"
    assert "no copy of the source trace is tiny or latency-bound; assumed 0.960 µs, AHEAD's measured" in \
        cost.provenance[TC.HTOD_PAGEABLE]
    assert "--one-byte-us htod_pageable=µs" in cost.provenance[TC.HTOD_PAGEABLE]


def test_class_agnostic_when_class_has_one_op():
    """A class with no tiny or latency-bound copy borrows the estimate from all transfers of the trace."""
    # pinned HtoD: 1, 1, 1 B at 1000, 1200, 1400 ns (median 1.2 µs); one DtoD op of 4 MiB in 5 ms
    htod = copies([1, 1, 1], [1000, 1200, 1400])
    dtod = copies([4 << 20], [5_000_000], copy_kind=CopyKind.DTOD, src=MemKind.DEVICE)
    trace = Trace.concat([htod, dtod])
    cost = resolve_one_byte(trace, machine("src"), machine("tgt"))
    assert cost.origin[TC.DTOD] == "trace-all-small"
    assert cost.seconds[TC.DTOD] == pytest.approx(1.2e-6)
    assert "class-agnostic" in cost.provenance[TC.DTOD]


def test_estimate_capped_at_the_smallest_copy():
    """A borrowed estimate above the class's smallest copy's own time is cut to that time."""
    htod = copies([1, 1, 1], [3000, 3000, 3000])  # 3 µs
    dtoh = copies([4 << 20, 8 << 20], [700, 1400], copy_kind=CopyKind.DTOH, src=MemKind.DEVICE, dst=MemKind.PINNED)
    cost = resolve_one_byte(Trace.concat([htod, dtoh]), machine("src"), machine("tgt"))
    assert cost.seconds[TC.DTOH_PINNED] == pytest.approx(0.7e-6)
    assert "capped at the smallest copy's measured GPU time, 4,194,304 B in 0.700 µs" in \
        cost.provenance[TC.DTOH_PINNED]


def test_fallback_then_default():
    """Zero-duration (synthetic) ops give no estimate: the fallback is used, else AHEAD's 0.96 µs, never 0."""
    synthetic = copies([1, 2, 4, 8], [0, 0, 0, 0])
    cost = resolve_one_byte(synthetic, machine("src"), machine("tgt"), fallback_s=0.5e-6,
                            fallback_label="--one-byte-us")
    assert (cost.seconds[TC.HTOD_PINNED], cost.origin[TC.HTOD_PINNED]) == (0.5e-6, "fallback")
    assert "--one-byte-us: 0.500 µs" in cost.provenance[TC.HTOD_PINNED]
    default = resolve_one_byte(synthetic, machine("src"), machine("tgt"))
    assert (default.seconds[TC.HTOD_PINNED], default.origin[TC.HTOD_PINNED]) == (DEFAULT_ONE_BYTE_S, "default")


def test_given_costs_win_per_class_then_all():
    """A given cost beats every file and the trace; a class key beats ``all``; the note says so."""
    tgt = machine("tgt", {"htod_pinned": 7.2e-6})
    cost = resolve_one_byte(Trace.concat([SMALL, copies([64], [900], copy_kind=CopyKind.DTOD, src=MemKind.DEVICE)]),
                            machine("src"), tgt, given_s={"htod_pinned": 3e-6, "all": 5e-6})
    assert (cost.seconds[TC.HTOD_PINNED], cost.origin[TC.HTOD_PINNED]) == (3e-6, "given")
    assert cost.seconds[TC.DTOD] == 5e-6
    assert "given (--one-byte-us htod_pinned=3)" in cost.provenance[TC.HTOD_PINNED]
    assert "given (--one-byte-us all=5)" in cost.provenance[TC.DTOD]


@pytest.mark.parametrize(("given", "message"), [
    ({"htod": 1e-6}, "unknown transfer kind 'htod'"),
    ({"htod_pinned": 0.0}, "must be above 0"),
    ({"all": float("nan")}, "must be above 0"),
    ({"dtod": 2.0}, r"at most 1e\+06 µs"),
    ({"dtod": "fast"}, "not a number"),
])
def test_bad_given_costs_are_refused(given, message):
    """A given cost of an unknown kind, 0, NaN, above 1 s or not a number is an InputError naming the option."""
    with pytest.raises(InputError, match=message) as err:
        check_given(given)
    assert err.value.key == "--one-byte-us"


def test_per_op_lookup():
    """per_op maps every op's class code to its L+O (0 for classes not resolved)."""
    cost = resolve_one_byte(None, None, machine("tgt", {"htod_pinned": 1e-6, "dtod": 2e-6}), [TC.HTOD_PINNED, TC.DTOD])
    codes = np.array([TC.HTOD_PINNED, TC.DTOD, TC.NOT_A_TRANSFER], dtype=np.int8)
    assert cost.per_op(codes).tolist() == [1e-6, 2e-6, 0.0]


def test_zero_fallback_refused():
    """A fallback cost of 0 or below is a programming error: every copy pays L+O."""
    with pytest.raises(ValueError, match="> 0"):
        resolve_one_byte(None, None, machine("tgt"), [TC.DTOD], fallback_s=0.0)


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
    assert "400 copies of <= 8 B" in cost.provenance[TC.HTOD_PINNED]


@given(st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_provenance_order(given_value, on_target, on_source, small_in_trace, fallback):
    """Whatever is available, the first of given > target > source > trace > fallback > default is chosen."""
    tgt = machine("tgt", {"htod_pinned": 5e-6} if on_target else None)
    src = machine("src", {"htod_pinned": 4e-6} if on_source else None)
    trace = copies([1, 2, 4], [3000, 3000, 3000] if small_in_trace else [0, 0, 0])
    cost = resolve_one_byte(trace, src, tgt, given_s={"all": 6e-6} if given_value else None,
                            fallback_s=1e-6 if fallback else None)
    expected = ("given" if given_value else "target" if on_target else "source" if on_source
                else "trace-small" if small_in_trace else "fallback" if fallback else "default")
    assert cost.origin[TC.HTOD_PINNED] == expected
    assert cost.seconds[TC.HTOD_PINNED] > 0
