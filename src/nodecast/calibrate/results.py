"""What ``nodecast calibrate`` measured and wrote, as result objects for ``nodecast.report`` to print.

``Calibration``: every point's result, the values derived for a machine file
(per copy class: 1-byte cost in s and bandwidth in bytes/s; GPU peaks in
FLOP/s and per-level bandwidths in bytes/s), the host copy rate, and the
files written. ``HostCopyCalibration``: ``--host-only``'s one rate and its
machine file. ``BenchmarkFamilies``: ``--list``'s rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodecast.calibrate.derive import MeasuredValues
    from nodecast.calibrate.host_copy import HostCopyResult
    from nodecast.calibrate.run import PointResult


@dataclass
class Calibration:
    """One calibration: ``results`` (one per point), ``values`` (for the machine file), ``host_copy`` (None when it
    could not be measured), the benchmark JSON written and, with ``-o``, the machine file and the Machine it loads as."""

    results: list[PointResult]
    values: MeasuredValues
    json_path: Path
    toml_path: Path | None = None
    machine: Any = None
    host_copy: HostCopyResult | None = None

    @property
    def failed(self) -> list[PointResult]:
        """Points that failed or were skipped (their ``error`` says why)."""
        return [r for r in self.results if not r.ok]


@dataclass
class HostCopyCalibration:
    """``--host-only``: one host thread's measured copy rate and the machine file written with it."""

    host_copy: HostCopyResult
    toml_path: Path
    machine: Any


@dataclass
class BenchmarkFamilies:
    """The benchmark families ``--list`` shows: (family, placement scope, machine-file class or None, what it measures)."""

    rows: list[tuple[str, str, str | None, str]]
