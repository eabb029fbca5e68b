"""NVLink bytes on the wire and effective bandwidth (AHEAD eqs. 6-8).

Equations (paper: ../shared/reference/papers/ahead-data-transfer-projection.txt)
--------------------------------------------------------------------------------
NVLink moves 128-bit (16-B) flits; a packet is one header flit plus up to 16
payload flits (256-B max payload); the optional address-extension and
byte-enable flits are assumed absent and read requests pipelined (lines
560-570).

* eq. 6 (line 587), read (host->device: the GPU reads host memory)::

      n_hat = flit + ceil(n / 256) * flit + n

* eq. 7 (line 592), write (device->host, and GPU->GPU peer copies)::

      n_hat = ceil(n / 256) * flit + n

* eq. 8 (line 599): ``NVLinkBW = lanes * lane rate`` per link and direction;
  per chip (or per GPU pair / GPU-CPU pair) multiply by the number of links
  the Link joins (``Link.links``). No line-code factor (the paper gives none).

With eq. 2, large copies reach 256/272 = 94.1 % of the link rate, the paper's
"almost 95 % efficiency at large transfers" for NVLink 2.0 (line 1033).

Generations (eq. 8 per link, per direction)::

    gen  GPU   lanes/link  Gb/s per lane  GB/s per link
    1    P100  8           20             20
    2    V100  8           25             25
    3    A100  4           50             25
    4    H100  2           100 (PAM4)     25
    5    B200  2           200 (PAM4)     50

The link rates agree with ``nodecast.machines.topology.NVLINK_BPS_PER_LINK``
(DATASHEETS.md D.2), which a test checks; a Link's ``bandwidth_bps`` overrides
them as everywhere else.

Decisions
---------
* The paper describes the packet of NVLink 1-2. NVIDIA has not published the
  packet format of later generations, so gens 3-5 keep the same 16-B flit and
  256-B maximum payload (``MAX_PAYLOAD_BYTES``). One public observation hints
  at more overhead on Hopper: an Nsight capture in NVIDIA/nccl issue #1397
  shows request-protocol traffic of about 1/8 of the user data for NVLink-4
  writes (a 16-B header per 128 B). Set ``MAX_PAYLOAD_BYTES[4] = 128`` to model
  that; the default stays with the paper.
* Reads and writes follow the paper (eq. 6 vs eq. 7). AHEAD's code added the
  request flit to both directions (FORMATS.md A.3); the difference is 16 B per
  copy, below a nanosecond on any NVLink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from nodecast.machines.topology import raw_rate_bps

if TYPE_CHECKING:
    from nodecast.machines.schema import Link

#: Size of one NVLink flow-control unit, bytes (128 bits).
FLIT_BYTES = 16
#: Maximum payload per packet by generation, bytes (16 flits; see Decisions).
MAX_PAYLOAD_BYTES = {1: 256, 2: 256, 3: 256, 4: 256, 5: 256}
#: Lanes per link and data rate per lane (bits/s), per direction, by generation.
LANES_PER_LINK = {1: 8, 2: 8, 3: 4, 4: 2, 5: 2}
LANE_BITS_PER_S = {1: 20e9, 2: 25e9, 3: 50e9, 4: 100e9, 5: 200e9}

Direction = Literal["read", "write"]


def per_link_bandwidth_bps(gen: int) -> float:
    """AHEAD eq. 8 for one link: lanes x lane rate, bytes/s per direction."""
    return LANES_PER_LINK[gen] * LANE_BITS_PER_S[gen] / 8.0


def link_bandwidth_bps(link: Link) -> float:
    """Per-direction bandwidth of an ``nvlink`` Link: links x eq. 8 (or its ``bandwidth_bps``)."""
    return raw_rate_bps(link)


def max_payload_bytes(gen: int | None) -> int:
    """Maximum payload of one packet for a generation (256 B unless set otherwise)."""
    return MAX_PAYLOAD_BYTES.get(gen or 2, 256)


def read_bytes_on_wire(n: np.ndarray | float, *, flit_bytes: int = FLIT_BYTES, payload_bytes: int = 256) -> np.ndarray:
    """AHEAD eq. 6: one request flit, one header flit per packet, the data."""
    n = np.asarray(n, dtype=np.float64)
    return flit_bytes + np.ceil(n / payload_bytes) * flit_bytes + n


def write_bytes_on_wire(n: np.ndarray | float, *, flit_bytes: int = FLIT_BYTES, payload_bytes: int = 256) -> np.ndarray:
    """AHEAD eq. 7: one header flit per packet, the data."""
    n = np.asarray(n, dtype=np.float64)
    return np.ceil(n / payload_bytes) * flit_bytes + n


def bytes_on_wire(
    n: np.ndarray | float, direction: Direction, *, flit_bytes: int = FLIT_BYTES, payload_bytes: int = 256
) -> np.ndarray:
    """Eq. 6 (``"read"``) or eq. 7 (``"write"``)."""
    if direction == "read":
        return read_bytes_on_wire(n, flit_bytes=flit_bytes, payload_bytes=payload_bytes)
    if direction == "write":
        return write_bytes_on_wire(n, flit_bytes=flit_bytes, payload_bytes=payload_bytes)
    msg = f"direction must be 'read' or 'write' (got {direction!r})"
    raise ValueError(msg)


def effective_bandwidth_bps(n: np.ndarray | float, link: Link, direction: Direction) -> np.ndarray:
    """AHEAD eq. 2 over an NVLink Link: ``n * LinkBW / n_hat``, bytes/s."""
    n = np.asarray(n, dtype=np.float64)
    wire = bytes_on_wire(n, direction, payload_bytes=max_payload_bytes(link.gen))
    return n * link_bandwidth_bps(link) / wire


def wire_time_s(n: np.ndarray | float, link: Link, direction: Direction) -> np.ndarray:
    """The transfer term ``n / BW_eff`` of eqs. 9-10, computed as ``n_hat / LinkBW``."""
    wire = bytes_on_wire(n, direction, payload_bytes=max_payload_bytes(link.gen))
    return wire / link_bandwidth_bps(link)
