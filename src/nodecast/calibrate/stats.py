"""Statistics of repeated measurements, and the repeat-until-budget loop.

Comm|Scope repeats each benchmark "until the cumulative operation time
reaches one second" (paper section 3.1) and reports the spread over
repetitions (section 2.2.2). ``repeat_until_budget`` does the same with the
budget in *measured* seconds (the sum of what the timer reported, not host
wall time), plus two guards Comm|Scope gets from Google Benchmark: a floor
on the number of repetitions and a ceiling, and a host wall-clock cap so that
an operation much faster than the Python loop around it (a 1-byte copy) does
not spin for minutes. Which guard stopped the loop is recorded.

All times are seconds (float). Nothing here touches a GPU.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Mean, median, min, max and sample standard deviation of repeated timings (seconds).

    ``stddev_s`` uses ``n - 1`` in the denominator (0 for a single sample);
    ``cv`` is ``stddev / mean`` (0 when the mean is 0).
    """

    n: int
    mean_s: float
    median_s: float
    min_s: float
    max_s: float
    stddev_s: float
    total_s: float

    @property
    def cv(self) -> float:
        """Coefficient of variation (stddev / mean), a fraction."""
        return self.stddev_s / self.mean_s if self.mean_s > 0 else 0.0


def summarize(samples_s: Sequence[float] | np.ndarray) -> Summary:
    """Summary of a non-empty sequence of finite, non-negative timings in seconds.

    Raises ValueError on an empty sequence or a negative / non-finite sample
    (a timer that returns those is broken; nothing should be averaged over it).
    """
    x = np.asarray(samples_s, dtype=np.float64)
    if x.size == 0:
        msg = "no timing samples to summarize"
        raise ValueError(msg)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        bad = x[~np.isfinite(x) | (x < 0)][0]
        msg = f"timing samples must be finite and >= 0 seconds (got {bad!r})"
        raise ValueError(msg)
    n = int(x.size)
    return Summary(
        n=n,
        mean_s=float(x.mean()),
        median_s=float(np.median(x)),
        min_s=float(x.min()),
        max_s=float(x.max()),
        stddev_s=float(x.std(ddof=1)) if n > 1 else 0.0,
        total_s=float(x.sum()),
    )


@dataclass(frozen=True)
class Budget:
    """How long to repeat one measurement point.

    ``measured_s``: stop once the timings add up to this (Comm|Scope: 1 s);
    ``min_reps`` / ``max_reps``: floor and ceiling on repetitions;
    ``wall_s``: stop after this much host wall time once ``min_reps`` are in
    (the 1-byte case); ``warmup_reps``: untimed repetitions before the first
    sample (first-touch of buffers, lazy module loading).
    """

    measured_s: float = 0.25
    min_reps: int = 5
    max_reps: int = 100_000
    wall_s: float = 2.0
    warmup_reps: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.measured_s) and self.measured_s > 0):
            msg = f"budget measured_s must be a positive number of seconds (got {self.measured_s!r})"
            raise ValueError(msg)
        if self.min_reps < 1 or self.max_reps < self.min_reps:
            msg = f"need 1 <= min_reps <= max_reps (got {self.min_reps}, {self.max_reps})"
            raise ValueError(msg)
        if not (math.isfinite(self.wall_s) and self.wall_s > 0):
            msg = f"budget wall_s must be a positive number of seconds (got {self.wall_s!r})"
            raise ValueError(msg)
        if self.warmup_reps < 0:
            msg = f"warmup_reps must be >= 0 (got {self.warmup_reps})"
            raise ValueError(msg)


#: Why a repetition loop stopped.
STOP_REASONS = ("budget", "max_reps", "wall")


@dataclass(frozen=True)
class Repeated:
    """Timings of one point and why the loop stopped (one of ``STOP_REASONS``)."""

    samples_s: tuple[float, ...]
    stopped_by: str

    @property
    def summary(self) -> Summary:
        """The samples' Summary."""
        return summarize(self.samples_s)


def repeat_until_budget(
    measure: Callable[[], float],
    budget: Budget,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> Repeated:
    """Call ``measure`` (returns one timing in seconds) until ``budget`` is spent.

    The loop stops at the first of: the samples add up to
    ``budget.measured_s`` (with at least ``min_reps``), ``max_reps`` samples,
    or ``budget.wall_s`` of host time on ``clock`` (with at least
    ``min_reps``). Warm-up calls come first and are discarded. Exceptions
    from ``measure`` propagate.
    """
    for _ in range(budget.warmup_reps):
        measure()
    samples: list[float] = []
    total = 0.0
    t0 = clock()
    while True:
        t = float(measure())
        samples.append(t)
        total += t
        n = len(samples)
        if n >= budget.max_reps:
            return Repeated(tuple(samples), "max_reps")
        if n >= budget.min_reps:
            if total >= budget.measured_s:
                return Repeated(tuple(samples), "budget")
            if clock() - t0 >= budget.wall_s:
                return Repeated(tuple(samples), "wall")


def bandwidth_bps(work_bytes: float, seconds: float) -> float:
    """``bytes / seconds``; NaN when the time is not positive."""
    return work_bytes / seconds if seconds > 0 else math.nan
