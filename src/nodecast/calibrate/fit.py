"""LogGP fits of a transfer sweep: the 1-byte cost, the bandwidth and the curve of one copy class.

AHEAD's eq. 1 models one message as ``T = L + O + n*G`` (LogGP); L+O is
measured together as the GPU time of a 1-byte transfer, and ``1/G`` is the
bandwidth the message approaches when it is large. From a sweep of sizes
(powers of two) with the median time of each:

* ``one_byte_s``: the median time of the smallest size (1 B for explicit
  copies; one page for unified-memory migrations, which move whole pages) -
  measured, not fitted, as AHEAD does;
* ``bandwidth_bps``: ``1/G`` from an ordinary least-squares fit of
  ``T = L + n*G`` over the *large* sizes (``large_sizes``), where the time is
  dominated by ``n*G``; fitting the whole sweep would let the many small,
  latency-bound points and the irregular middle of pageable copies (AHEAD:
  256 KiB-1 MiB) pull the slope;
* the curve: ``n / T`` at every size (effective bandwidth, bytes/s).

Times are seconds, sizes bytes, bandwidths bytes/s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The large sizes are those within this factor of the largest size of the sweep ...
LARGE_SIZE_FACTOR = 64
#: ... and at least this many points (the largest ones) enter the fit.
MIN_FIT_POINTS = 3


class FitError(ValueError):
    """A sweep from which no bandwidth can be fitted (too few sizes, or a slope <= 0)."""


@dataclass(frozen=True)
class LogGPFit:
    """``T = latency_s + n * gap_s_per_byte`` fitted over ``sizes_bytes``.

    ``latency_s`` is the fit's intercept (it may come out negative when the
    large sizes curve upwards; it is reported, never used as the 1-byte cost).
    ``rms_rel`` is the root-mean-square of the relative residuals.
    """

    latency_s: float
    gap_s_per_byte: float
    sizes_bytes: tuple[int, ...]
    rms_rel: float

    @property
    def bandwidth_bps(self) -> float:
        """``1 / G`` in bytes/s."""
        return 1.0 / self.gap_s_per_byte


def fit_loggp(sizes_bytes: Sequence[float], times_s: Sequence[float]) -> LogGPFit:
    """Least-squares ``T = L + n*G`` over the given points (at least two distinct sizes).

    Raises FitError when fewer than two distinct sizes are given or the
    fitted G is not positive (times that do not grow with size).
    """
    n = np.asarray(sizes_bytes, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    if n.shape != t.shape:
        msg = f"sizes and times differ in length ({n.size} vs {t.size})"
        raise FitError(msg)
    ok = np.isfinite(n) & np.isfinite(t) & (t > 0) & (n > 0)
    n, t = n[ok], t[ok]
    if np.unique(n).size < 2:
        msg = f"need at least two distinct sizes to fit T = L + n*G (got {np.unique(n).size})"
        raise FitError(msg)
    design = np.column_stack([np.ones_like(n), n])
    (latency, gap), *_ = np.linalg.lstsq(design, t, rcond=None)
    if not (math.isfinite(gap) and gap > 0):
        msg = f"fitted G = {gap!r} s/B is not positive: the times do not grow with size"
        raise FitError(msg)
    rel = (latency + gap * n - t) / t
    return LogGPFit(
        latency_s=float(latency),
        gap_s_per_byte=float(gap),
        sizes_bytes=tuple(int(x) for x in n),
        rms_rel=float(np.sqrt(np.mean(rel**2))),
    )


def large_sizes(sizes_bytes: Sequence[float]) -> np.ndarray:
    """Boolean mask of the sweep's large sizes.

    The sizes within ``LARGE_SIZE_FACTOR`` of the largest (a 1 GiB sweep fits
    16 MiB..1 GiB), and never fewer than the ``MIN_FIT_POINTS`` largest.
    """
    n = np.asarray(sizes_bytes, dtype=np.float64)
    if n.size == 0:
        return np.zeros(0, dtype=bool)
    mask = n >= n.max() / LARGE_SIZE_FACTOR
    if mask.sum() < MIN_FIT_POINTS:
        order = np.argsort(n, kind="stable")[::-1][:MIN_FIT_POINTS]
        mask[:] = False
        mask[order] = True
    return mask


@dataclass(frozen=True)
class ClassValues:
    """What a sweep gives a Machine file for one copy class (``MEASURED_CLASSES`` key).

    ``one_byte_s`` is the median time of ``smallest_bytes``; ``fit`` is None
    (and ``bandwidth_bps`` too) when no bandwidth could be fitted, with the
    reason in ``note``. ``source`` names the benchmark family.
    """

    klass: str
    source: str
    one_byte_s: float
    smallest_bytes: int
    sizes_bytes: tuple[int, ...]
    curve_bps: tuple[float, ...]
    fit: LogGPFit | None
    note: str = ""

    @property
    def bandwidth_bps(self) -> float | None:
        """``1/G`` of the large-size fit, or None."""
        return None if self.fit is None else self.fit.bandwidth_bps


def class_values(klass: str, source: str, sizes_bytes: Sequence[int], median_s: Sequence[float]) -> ClassValues:
    """1-byte cost, fitted bandwidth and curve of one class from its sweep of medians.

    Raises ValueError when the sweep is empty or a median is not positive.
    """
    n = np.asarray(sizes_bytes, dtype=np.int64)
    t = np.asarray(median_s, dtype=np.float64)
    if n.size == 0 or n.shape != t.shape:
        msg = f"{source}: need one median per size (got {n.size} sizes, {t.size} medians)"
        raise ValueError(msg)
    if not np.all(np.isfinite(t) & (t > 0)):
        msg = f"{source}: every median time must be a positive number of seconds"
        raise ValueError(msg)
    order = np.argsort(n, kind="stable")
    n, t = n[order], t[order]
    fit: LogGPFit | None
    note = ""
    try:
        mask = large_sizes(n)
        fit = fit_loggp(n[mask], t[mask])
    except FitError as exc:
        fit, note = None, f"{source}: no bandwidth fitted ({exc})"
    return ClassValues(
        klass=klass,
        source=source,
        one_byte_s=float(t[0]),
        smallest_bytes=int(n[0]),
        sizes_bytes=tuple(int(x) for x in n),
        curve_bps=tuple(float(x) for x in n / t),
        fit=fit,
        note=note,
    )
