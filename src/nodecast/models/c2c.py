"""NVLink-C2C (Grace Hopper GH200, Grace Blackwell) bytes on the wire.

The AHEAD paper predates NVLink-C2C and says nothing about it. Everything
below is an assumption, stated so that it can be checked and changed.

Assumptions
-----------
1. **Bandwidth**: the Link's ``bandwidth_bps`` (required for ``nvlink-c2c``
   links by the machine loader), per direction. GH200: 450 GB/s per direction,
   900 GB/s total (NVIDIA's figure as quoted by the datacrunch GH200 blog,
   https://datacrunch.io/blog/data-movement-in-the-nvidia-gh200-grace-hopper-superchip;
   DATASHEETS.md D.1/D.2). There is no generation or lane table: NVIDIA gives
   the aggregate only.
2. **Framing**: NVIDIA describes C2C as built on NVLink technology, but has
   published no packet format. nodecast treats it like NVLink (AHEAD eqs. 6-7):
   16-B flits, one header flit per packet of at most 256 B of payload, and one
   request flit for a read (host->device, the GPU reads Grace memory). Large
   copies then reach 256/272 = 94.1 % of the link, 423.5 GB/s on GH200.
3. **No coherence traffic, no page-table effects**: copy-engine transfers are
   modelled as streaming packets; snoops, ATS translation and the 4/64-KiB
   system page size are not.
4. **Pageable copies keep AHEAD's staging term** (eq. 9, ``2n / MemBW`` with
   Grace's LPDDR5X bandwidth) although on Grace Hopper the GPU can address
   pageable memory through ATS; whether ``cudaMemcpy`` still stages through a
   pinned buffer there is not established by anything nodecast cites, so the
   projection of pageable copies on GH200 is the least certain of all.

What measurements say (so a reader can weigh assumption 2)
-----------------------------------------------------------
Measured copy-engine bandwidth is well below 423.5 GB/s and asymmetric:

* nvbandwidth on a GH200 (480 GB LPDDR5X + 96 GB HBM3): host->device CE
  346 GB/s, device->host about 15 % lower (NVIDIA/nvbandwidth issue #23).
* HPCwire's report of a Swedish study (as retold at
  https://4nownews.com/2024/07/27/not-so-simple-and-not-so-fast-scientists-studied-the-features-of-memory-and-nvlink-c2c-in-nvidia-grace-hopper):
  375 GB/s host->device and 297 GB/s device->host.
* A characterization of the Alps quad-GH200 nodes exists
  (arXiv 2408.11556, "Understanding Data Movement in Tightly Coupled
  Heterogeneous Systems").

So on GH200 this model over-predicts large host->device copies by about
13-22 % and device->host copies by about 40 %. A 64-B payload per 16-B
header (cache-line packets) would give 80 % = 360 GB/s, closer to the
host->device measurements, but nothing published supports it, so it is not
the default; set ``MAX_PAYLOAD_BYTES = 64`` to try it. Where a GH200 is at
hand, ``nodecast calibrate`` measurements in the machine file are the better
source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from nodecast.machines.topology import raw_rate_bps
from nodecast.models import nvlink

if TYPE_CHECKING:
    from nodecast.machines.schema import Link

#: Flit size and maximum payload per packet (assumption 2), bytes.
FLIT_BYTES = nvlink.FLIT_BYTES
MAX_PAYLOAD_BYTES = 256

Direction = Literal["read", "write"]


def link_bandwidth_bps(link: Link) -> float:
    """Per-direction bandwidth of an ``nvlink-c2c`` Link (its ``bandwidth_bps``), bytes/s."""
    return raw_rate_bps(link)


def bytes_on_wire(n: np.ndarray | float, direction: Direction) -> np.ndarray:
    """NVLink eq. 6 (read) or eq. 7 (write) with C2C's flit and payload sizes."""
    return nvlink.bytes_on_wire(n, direction, flit_bytes=FLIT_BYTES, payload_bytes=MAX_PAYLOAD_BYTES)


def effective_bandwidth_bps(n: np.ndarray | float, link: Link, direction: Direction) -> np.ndarray:
    """AHEAD eq. 2 over NVLink-C2C: ``n * LinkBW / n_hat``, bytes/s."""
    n = np.asarray(n, dtype=np.float64)
    return n * link_bandwidth_bps(link) / bytes_on_wire(n, direction)


def wire_time_s(n: np.ndarray | float, link: Link, direction: Direction) -> np.ndarray:
    """The transfer term ``n / BW_eff``, computed as ``n_hat / LinkBW``."""
    return bytes_on_wire(n, direction) / link_bandwidth_bps(link)
