"""The baselines AHEAD must beat (paper section VI-D, lines 952-974, and line 1019).

* ``peak-bandwidth``: eq. 10 with the theoretical peak of the link instead of
  BW_eff, L+O kept: ``T = (L+O) + n / LinkBW``. LinkBW is the link's raw
  per-direction rate after line encoding (PCIe eq. 3, NVLink eq. 8, the data
  sheet for NVLink-C2C and socket buses) with no protocol overhead.
* ``back-of-envelope``: ``T = n / LinkBW``, no L+O ("comparing the
  theoretical peak bandwidth values").

Both use the same links as ``ahead`` (the GPU's host link; for peer copies
the slowest link between the two GPUs), the same 1-byte cost resolution
(``peak-bandwidth`` only), and the GPU's data-sheet DRAM bandwidth for
device-to-device copies, counted the naive way: ``n / DRAM_BW``.

Simplifications a baseline makes on purpose: pageable copies are projected
like pinned ones (the driver's staging copy through host memory is ignored),
and a device-to-device copy is not charged its write pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nodecast.machines.topology import raw_rate_bps
from nodecast.models.link_time import Direction, describe_link
from nodecast.models.transfer_base import PAGEABLE, UNKNOWN_HOST, TransferModelBase
from nodecast.traces.kinds import TransferClass

if TYPE_CHECKING:
    from nodecast.machines.schema import Link, Machine


class _PeakBase(TransferModelBase):
    """Copies at the link's theoretical peak; D2D at the DRAM data-sheet bandwidth."""

    baseline: ClassVar[bool] = True

    def _link_time_s(self, link: Link, n: np.ndarray, direction: Direction) -> np.ndarray:
        return np.asarray(n, dtype=np.float64) / raw_rate_bps(link)

    def _dtod_time_s(self, n: np.ndarray, target: Machine) -> np.ndarray:
        return np.asarray(n, dtype=np.float64) / target.gpu.dram_bandwidth_bps

    def _link_note(self, link: Link) -> str:
        return describe_link(link) + ", taken at its peak (no protocol overhead)"

    def _method_notes(self, target: Machine, present: set[int]) -> list[str]:
        out = []
        if present & {int(c) for c in (*PAGEABLE, *UNKNOWN_HOST)}:
            out.append("pageable copies projected like pinned ones (staging copy ignored)")
        if int(TransferClass.DTOD) in present:
            out.append(
                f"device-to-device copies at n / {target.gpu.dram_bandwidth_bps / 1e9:.0f} GB/s "
                f"({target.gpu.model} DRAM data sheet)"
            )
        return out


class PeakBandwidthModel(_PeakBase):
    """Eq. 10 with the link's theoretical peak bandwidth, L+O kept."""

    name: ClassVar[str] = "peak-bandwidth"
    description: ClassVar[str] = "baseline: (L+O) + n / theoretical link peak (no protocol overhead)"
    include_latency: ClassVar[bool] = True


class BackOfEnvelopeModel(_PeakBase):
    """n divided by the link's theoretical peak bandwidth, nothing else."""

    name: ClassVar[str] = "back-of-envelope"
    description: ClassVar[str] = "baseline: n / theoretical link peak, no L+O"
    include_latency: ClassVar[bool] = False
