"""One host thread's memcpy rate: measured here for real (no GPU needed), sized past the LLC, median kept."""

from __future__ import annotations

import itertools

import pytest

from nodecast.calibrate import host_copy as hc
from nodecast.calibrate.stats import Budget

TINY = Budget(measured_s=0.01, min_reps=5, max_reps=20, wall_s=2.0, warmup_reps=1)


def test_measures_this_host_for_real():
    """A real single-thread copy of 32 MiB buffers on this machine: a plausible rate from at least 5 timed copies."""
    r = hc.measure_host_copy(32 << 20, budget=TINY)
    assert len(r.samples_s) >= 5
    assert 1e8 < r.bandwidth_bps < 1e12
    assert r.bandwidth_bps == pytest.approx(r.size_bytes / r.median_s)
    assert "memmove" in r.method() and "median of" in r.method() and "32 MiB" in r.method()


def test_median_of_timed_copies_with_a_fake_clock():
    """Each copy is timed around the call; the rate is size / median (a slow outlier does not move it)."""
    durations = iter([9.0, 1.0, 1.0, 5.0, 1.0, 1.0])  # warm-up, then five timed copies
    ticks = itertools.count()
    times: list[float] = []
    now = 0.0

    def clock() -> float:
        nonlocal now
        next(ticks)
        return now

    def copy(dst: int, src: int, n: int) -> None:
        nonlocal now
        now += next(durations)
        times.append(now)

    r = hc.measure_host_copy(4096, budget=Budget(measured_s=100.0, min_reps=5, max_reps=5, wall_s=1e9,
                                                 warmup_reps=1), clock=clock, copy=copy)
    assert r.samples_s == (1.0, 1.0, 5.0, 1.0, 1.0)
    assert r.bandwidth_bps == 4096.0


def test_buffer_sized_past_the_llc_and_capped_by_memory():
    """Buffers are 4x the LLC (at least 256 MiB), at most 1/8 of available memory, refused below 16 MiB."""
    assert hc.buffer_bytes(32 << 20, 64 << 30) == 256 << 20
    assert hc.buffer_bytes(256 << 20, 64 << 30) == 1 << 30
    assert hc.buffer_bytes(None, 1 << 30) == 128 << 20
    with pytest.raises(hc.HostCopyError, match="not enough free memory"):
        hc.buffer_bytes(8 << 20, 64 << 20)
