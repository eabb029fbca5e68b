"""AHEAD's data-transfer model (Abdelhafez et al.), registered as ``ahead``, and its eq. 9 as ``ahead-eq9``.

Per TransferClass (paper: ../shared/reference/papers/ahead-data-transfer-projection.txt):

=================  ==========================================================
class              projected GPU time on the target
=================  ==========================================================
htod_pinned        eq. 10: ``(L+O) + n / BW_eff`` over the GPU's host link,
                   the GPU reading host memory (PCIe eq. 4, NVLink eq. 6)
dtoh_pinned        eq. 10, the GPU writing host memory (PCIe eq. 5, NVLink eq. 7)
htod/dtoh_pageable ``ahead``: the driver's pipelined staging through pinned
                   buffers at one host thread's copy rate
                   (``nodecast.models.pageable``; the rate is
                   ``Machine.host_copy_bandwidth``; where the target gives
                   none, eq. 9 with a note). ``ahead-eq9``: eq. 9 verbatim,
                   ``(L+O) + 2n / MemBW + n / BW_eff``, MemBW the target CPU's
                   theoretical memory bandwidth per socket
                   (``cpu.memory_bandwidth_bps``, as the paper, line 670)
htod/dtoh_unknown  host memory kind not recorded by the trace: projected as
                   pageable (AHEAD section VII: nearly all the applications it
                   traced use pageable memory) with the pinned projection as
                   the other end of an interval (``ModelResult.low_s`` /
                   ``high_s``) and a note; ``host_memory`` (``--host-memory
                   pinned|pageable``) states the kind instead
dtod               eq. 10 with the GPU's data-sheet DRAM bandwidth instead of
                   BW_eff, and its own 1-byte cost (line 684); see Decisions
peer               eq. 10 over the route between the two GPUs
                   (``Machine.route``), its slowest link, the copy engine
                   writing to the peer (eq. 5 / eq. 7); the paper only says its
                   link models apply to GPU-GPU copies (line 690)
htod/dtoh_managed  unified-memory migrations: like pinned copies over the host
                   link (eq. 10), with their own 1-byte cost; page-fault
                   handling is not modelled (the notes say so)
dtod_managed       UM migration between GPUs: like a peer copy
htoh, other        not handled: NaN, and the projector reports them
=================  ==========================================================

``n / BW_eff`` is computed as ``n_hat / LinkBW`` (the same by eq. 2), with
``n_hat`` from ``pcie``, ``nvlink`` or ``c2c`` by the link's kind; an
inter-socket ``socket-bus`` link is taken at its raw rate (``n_hat = n``;
``nodecast.models.link_time``). The dispatch per class, GPU and link is
``nodecast.models.transfer_base``.
The link is the slowest on the route between the GPU an op ran on
(``trace["device"]``) and its CPU socket (``Machine.host_link``). A trace
device beyond the target's GPU count is mapped to ``device mod count`` (with
a note). L+O per class comes from ``nodecast.models.one_byte`` (given >
target measured > source measured > estimated from the source trace's tiny or
latency-bound copies > AHEAD's measured default; never 0).

Decisions
---------
* **Device-to-device copies move 2n bytes of DRAM traffic**: a copy inside one
  GPU's memory reads n bytes and writes n bytes, so
  ``T = (L+O) + 2n / DRAM_BW``. The paper's sentence (line 684) writes the
  n-byte form; nodecast follows the paper's own accounting for a copy within
  one memory, eq. 9's ``2n / MemBW`` for the pageable staging copy (line 667:
  "we multiply n by two to incorporate the effect of reading/writing"), and
  what copies measure: a device-local copy's n/t is half the DRAM traffic it
  causes (NVIDIA/nvbandwidth issue #48: "1.1 TB/s represents the combined
  read+write bandwidth for the copy operation ... ~2.2 TB/s"). Set
  ``dtod_dram_passes = 1`` for the paper's literal form.
* **PCIe TLP framing counted** (8 B per TLP) and **first request
  ``min(MRRS, n)``**: see ``nodecast.models.pcie``. ``AheadModel(pcie_framing=
  False, pcie_first_request="mrrs")`` gives the paper's equations verbatim.
* **Eq. 10 as printed**, ``(L+O) + n / BW_eff``; AHEAD's code used ``n - 1``
  bytes after the 1-byte cost (FORMATS.md A.3), a 1-byte difference.

``ahead-no-latency`` is the same model without L+O (AHEAD's
``AHEAD-MODEL-NO-LATENCY`` label).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from nodecast.models import pageable
from nodecast.models.link_time import Direction, describe_link, wire_time_s
from nodecast.models.transfer_base import PAGEABLE, TC, UNKNOWN_HOST, TransferModelBase

if TYPE_CHECKING:
    from nodecast.machines.schema import Link, Machine

_GB = 1e9


class AheadModel(TransferModelBase):
    """AHEAD: LogGP with protocol-overhead effective bandwidth (eqs. 2-8, 10); pageable copies pipelined.

    Pageable copies follow ``nodecast.models.pageable`` (the driver's staging
    through two 1-MiB pinned buffers at one host thread's copy rate,
    overlapped with the DMA) when the target gives that rate
    (``Machine.host_copy_bandwidth``), else eq. 9 (``_eq9_time_s``), and the
    notes say which.
    """

    name: ClassVar[str] = "ahead"
    baseline: ClassVar[bool] = False
    description: ClassVar[str] = (
        "AHEAD data-transfer model: (L+O) + n/BW_eff, BW_eff from PCIe TLP / NVLink flit overheads; pageable "
        "copies staged in 1 MiB chunks at one host thread's copy rate, overlapped with the DMA; D2D at GPU DRAM bandwidth"
    )
    #: DRAM bytes per copied byte of a device-to-device copy (read + write; see Decisions).
    dtod_dram_passes: ClassVar[int] = 2
    #: Whether pageable copies take the pipelined staging model (False: eq. 9 verbatim).
    pipelined_staging: ClassVar[bool] = True

    def __init__(
        self,
        *,
        pcie_framing: bool = True,
        pcie_first_request: Literal["min", "mrrs"] = "min",
        one_byte_fallback_s: float | None = None,
        one_byte_fallback_label: str = "given default",
    ) -> None:
        super().__init__(one_byte_fallback_s=one_byte_fallback_s, one_byte_fallback_label=one_byte_fallback_label)
        self.pcie_framing = pcie_framing
        self.pcie_first_request = pcie_first_request

    def _link_time_s(self, link: Link, n: np.ndarray, direction: Direction) -> np.ndarray:
        return wire_time_s(link, n, direction, pcie_framing=self.pcie_framing,
                           pcie_first_request=self.pcie_first_request)

    def _eq9_time_s(self, link: Link, n: np.ndarray, direction: Direction, target: Machine) -> np.ndarray:
        """AHEAD eq. 9 without L+O: ``2n / MemBW + n / BW_eff``, seconds."""
        return 2.0 * n / target.cpu.memory_bandwidth_bps + self._link_time_s(link, n, direction)

    def _pageable_time_s(self, link: Link, n: np.ndarray, direction: Direction, target: Machine) -> np.ndarray:
        rate = target.host_copy_bandwidth() if self.pipelined_staging else None
        if rate is None:
            return self._eq9_time_s(link, n, direction, target)
        return pageable.staged_time_s(n, lambda x: self._link_time_s(link, x, direction), rate[0], direction)

    def _dtod_time_s(self, n: np.ndarray, target: Machine) -> np.ndarray:
        return self.dtod_dram_passes * n / target.gpu.dram_bandwidth_bps

    def _link_note(self, link: Link) -> str:
        return describe_link(link, pcie_framing=self.pcie_framing)

    def _staging_note(self, target: Machine) -> str:
        eq9 = (f"eq. 9 with MemBW = {target.cpu.memory_bandwidth_bps / _GB:.1f} GB/s ({target.cpu.model} data "
               "sheet, theoretical) for the 2n staging bytes")
        if not self.pipelined_staging:
            return f"pageable copies: {eq9}"
        rate = target.host_copy_bandwidth()
        if rate is None:
            return (f"pageable copies: {target.name} gives no single-thread host copy bandwidth "
                    f"(cpu.copy_bandwidth_bps; nodecast calibrate --host-only measures it), so {eq9} "
                    "(AHEAD's eq. 9, which Comm|Scope shows too optimistic: a single host thread's copy limits them)")
        return (f"pageable copies: staged by the driver in {pageable.CHUNK_BYTES >> 20} MiB chunks through "
                f"{pageable.BUFFERS} pinned buffers at {rate[0] / _GB:.2f} GB/s, one host thread's copy rate on "
                f"{target.name} ({rate[1]}), overlapped with the DMA (nodecast.models.pageable)")

    def _method_notes(self, target: Machine, present: set[int]) -> list[str]:
        out = []
        staged = {int(c) for c in PAGEABLE}
        if self.host_memory != "pinned":
            staged |= {int(c) for c in UNKNOWN_HOST}
        if present & staged:
            out.append(self._staging_note(target))
        if int(TC.DTOD) in present:
            out.append(
                f"device-to-device copies: {self.dtod_dram_passes}n bytes of DRAM traffic at "
                f"{target.gpu.dram_bandwidth_bps / _GB:.0f} GB/s ({target.gpu.model} data sheet)"
            )
        return out


class AheadNoLatencyModel(AheadModel):
    """AHEAD without the 1-byte cost L+O (AHEAD's AHEAD-MODEL-NO-LATENCY)."""

    name: ClassVar[str] = "ahead-no-latency"
    description: ClassVar[str] = "ahead without L+O: n/BW_eff, pageable copies staged as in ahead"
    include_latency: ClassVar[bool] = False


class AheadEq9Model(AheadModel):
    """AHEAD as published: pageable copies by eq. 9, ``(L+O) + 2n / MemBW + n / BW_eff``."""

    name: ClassVar[str] = "ahead-eq9"
    description: ClassVar[str] = (
        "AHEAD as published: pageable copies by eq. 9, (L+O) + 2n/MemBW + n/BW_eff, MemBW the CPU's theoretical "
        "memory bandwidth; pinned and D2D copies as ahead"
    )
    pipelined_staging: ClassVar[bool] = False
