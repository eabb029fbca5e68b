"""Summaries of repeated timings and the repeat-until-budget loop."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.calibrate.stats import Budget, bandwidth_bps, repeat_until_budget, summarize


def test_summary_of_known_samples():
    """Mean, median, min, max, sample standard deviation, total and cv of four samples."""
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.mean_s, s.median_s, s.min_s, s.max_s, s.total_s) == (4, 2.5, 2.5, 1.0, 4.0, 10.0)
    assert s.stddev_s == pytest.approx(math.sqrt(5 / 3))
    assert s.cv == pytest.approx(math.sqrt(5 / 3) / 2.5)


def test_single_sample_has_zero_spread():
    """One sample: its value for every statistic and a standard deviation of 0."""
    s = summarize([3e-6])
    assert (s.mean_s, s.median_s, s.min_s, s.max_s, s.stddev_s) == (3e-6, 3e-6, 3e-6, 3e-6, 0.0)


@pytest.mark.parametrize("samples", [[], [1.0, -1e-9], [1.0, float("nan")], [float("inf")]])
def test_bad_samples_are_refused(samples):
    """An empty list, a negative or a non-finite time raises ValueError instead of being averaged."""
    with pytest.raises(ValueError, match="no timing samples|finite and >= 0"):
        summarize(samples)


@given(st.lists(st.floats(min_value=0, max_value=10, allow_nan=False), min_size=1, max_size=50))
def test_summary_orders(samples):
    """min <= median <= max, min <= mean <= max and the standard deviation is never negative."""
    s = summarize(samples)
    assert s.min_s <= s.median_s <= s.max_s
    assert s.min_s - 1e-12 <= s.mean_s <= s.max_s + 1e-12
    assert s.stddev_s >= 0


def counter(value: float):
    """A measure() returning ``value`` and counting its calls."""
    calls = []

    def measure() -> float:
        calls.append(value)
        return value

    return measure, calls


def test_stops_when_measured_time_reaches_budget():
    """0.1 s per repetition and a 0.35 s budget: four samples, stopped by the budget."""
    measure, calls = counter(0.1)
    r = repeat_until_budget(measure, Budget(measured_s=0.35, min_reps=1, max_reps=100, wall_s=1e9, warmup_reps=0))
    assert len(r.samples_s) == 4 and r.stopped_by == "budget" and len(calls) == 4


def test_warmup_is_run_and_discarded():
    """Two warm-up calls happen before the samples and are not among them."""
    measure, calls = counter(1.0)
    r = repeat_until_budget(measure, Budget(measured_s=1.0, min_reps=1, max_reps=10, wall_s=1e9, warmup_reps=2))
    assert len(calls) == 3 and r.samples_s == (1.0,)


def test_min_reps_even_when_budget_is_spent_at_once():
    """A repetition longer than the budget is still repeated min_reps times."""
    measure, _ = counter(5.0)
    r = repeat_until_budget(measure, Budget(measured_s=1.0, min_reps=3, max_reps=10, wall_s=1e9, warmup_reps=0))
    assert len(r.samples_s) == 3


def test_max_reps_caps_tiny_operations():
    """A 1 ns operation stops at max_reps, long before its budget."""
    measure, _ = counter(1e-9)
    r = repeat_until_budget(measure, Budget(measured_s=1.0, min_reps=2, max_reps=7, wall_s=1e9, warmup_reps=0))
    assert len(r.samples_s) == 7 and r.stopped_by == "max_reps"


def test_wall_clock_cap_with_a_fake_clock():
    """A clock advancing 1 s per reading (read after each sample once min_reps are in) stops a 2.5 s cap at 4 samples."""
    ticks = iter(range(1000))
    measure, _ = counter(1e-6)
    r = repeat_until_budget(measure, Budget(measured_s=1.0, min_reps=2, max_reps=1000, wall_s=2.5, warmup_reps=0),
                            clock=lambda: float(next(ticks)))
    assert r.stopped_by == "wall" and len(r.samples_s) == 4  # readings 1, 2, 3 s after samples 2, 3, 4


def test_errors_propagate():
    """An exception raised by measure() leaves the loop."""
    def measure() -> float:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        repeat_until_budget(measure, Budget(warmup_reps=0))


@pytest.mark.parametrize("kw", [{"measured_s": 0}, {"min_reps": 0}, {"min_reps": 5, "max_reps": 4},
                                {"wall_s": float("nan")}, {"warmup_reps": -1}])
def test_budget_validation(kw):
    """Budgets that make no sense are refused with ValueError."""
    with pytest.raises(ValueError):
        Budget(**kw)


def test_bandwidth():
    """bytes / seconds, NaN for a zero time."""
    assert bandwidth_bps(1e9, 0.5) == 2e9
    assert math.isnan(bandwidth_bps(1.0, 0.0))
