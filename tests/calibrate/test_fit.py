"""LogGP fits of a sweep: T = L + n*G over the large sizes, the 1-byte cost, the curve."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecast.calibrate.fit import FitError, class_values, fit_loggp, large_sizes

SIZES = [1 << k for k in range(31)]  # 1 B .. 1 GiB


def loggp(sizes, latency_s, bandwidth_bps):
    """Exact LogGP times."""
    return [latency_s + n / bandwidth_bps for n in sizes]


def test_exact_recovery():
    """Exact T = L + n/B data gives back L and B."""
    fit = fit_loggp(SIZES, loggp(SIZES, 5e-6, 25e9))
    assert fit.bandwidth_bps == pytest.approx(25e9, rel=1e-9)
    assert fit.latency_s == pytest.approx(5e-6, rel=1e-6)
    assert fit.rms_rel < 1e-9


def test_large_sizes_of_a_full_sweep():
    """A 1 B-1 GiB sweep is fitted over 16 MiB-1 GiB (within 64x of the largest)."""
    mask = large_sizes(SIZES)
    assert [n for n, m in zip(SIZES, mask, strict=True) if m] == [1 << k for k in range(24, 31)]


def test_large_sizes_keeps_at_least_three_points():
    """Sizes spread wider than 64x still keep the three largest."""
    sizes = [1, 1 << 10, 1 << 20, 1 << 30]
    assert list(large_sizes(sizes)) == [False, True, True, True]


@pytest.mark.parametrize(("sizes", "times", "match"), [
    ([1024, 1024], [1e-6, 2e-6], "two distinct sizes"),
    ([1, 2, 4], [3e-6, 2e-6, 1e-6], "not positive"),
    ([1, 2], [1e-6], "differ in length"),
])
def test_unfittable_sweeps(sizes, times, match):
    """Too few sizes, falling times or mismatched lengths raise FitError naming the problem."""
    with pytest.raises(FitError, match=match):
        fit_loggp(sizes, times)


def test_class_values_one_byte_is_measured_not_fitted():
    """The 1-byte cost is the median time of 1 B, even when the large-size intercept differs."""
    times = loggp(SIZES, 5e-6, 25e9)
    times[0] = 7e-6  # the real 1-byte point is slower than the line through the large sizes
    cv = class_values("htod_pinned", "Comm_x/0/0", SIZES, times)
    assert cv.one_byte_s == 7e-6 and cv.smallest_bytes == 1
    assert cv.bandwidth_bps == pytest.approx(25e9, rel=1e-9)
    assert cv.curve_bps[-1] == pytest.approx((1 << 30) / times[-1])
    assert len(cv.curve_bps) == len(SIZES)


def test_class_values_sorts_unsorted_sweeps():
    """Sizes given in any order are sorted with their times."""
    sizes = SIZES[::-1]
    cv = class_values("dtod", "s", sizes, loggp(sizes, 2e-6, 1e12))
    assert cv.sizes_bytes == tuple(SIZES) and cv.one_byte_s == pytest.approx(2e-6 + 1e-12)


def test_pageable_irregularity_in_the_middle_does_not_move_the_bandwidth():
    """Doubling the times of 256 KiB-1 MiB (AHEAD's pageable irregularity) leaves 1/G from the large sizes unchanged."""
    times = loggp(SIZES, 8e-6, 10e9)
    for i, n in enumerate(SIZES):
        if (256 << 10) <= n <= (1 << 20):
            times[i] *= 2
    assert class_values("htod_pageable", "s", SIZES, times).bandwidth_bps == pytest.approx(10e9, rel=1e-9)


def test_single_size_gives_no_bandwidth_but_a_note():
    """A one-size sweep keeps its 1-byte cost and says why it has no bandwidth."""
    cv = class_values("peer", "Comm_y/0/1", [1], [4e-6])
    assert cv.bandwidth_bps is None and cv.one_byte_s == 4e-6 and "no bandwidth fitted" in cv.note


def test_class_values_refuses_non_positive_medians():
    """A zero median is an error, not a point of the curve."""
    with pytest.raises(ValueError, match="positive"):
        class_values("dtod", "s", [1, 2], [0.0, 1e-6])


@settings(max_examples=50)
@given(latency=st.floats(1e-7, 1e-4), bandwidth=st.floats(1e8, 5e12),
       noise=st.lists(st.floats(-0.01, 0.01), min_size=31, max_size=31))
def test_recovery_with_one_percent_noise(latency, bandwidth, noise):
    """Within +-1 % multiplicative noise per point, the fitted bandwidth is within 3 % of the true one."""
    times = np.array(loggp(SIZES, latency, bandwidth)) * (1 + np.array(noise))
    fit = fit_loggp(np.array(SIZES)[large_sizes(SIZES)], times[large_sizes(SIZES)])
    assert fit.bandwidth_bps == pytest.approx(bandwidth, rel=0.03)
