"""PCIe bytes on the wire and effective bandwidth (AHEAD eqs. 2-5).

Equations (paper: ../shared/reference/papers/ahead-data-transfer-projection.txt)
--------------------------------------------------------------------------------
* eq. 3 (line 400): ``LinkBW = lanes * lane rate * eta``, per direction, bytes/s.
  Lane rate 2.5/5/8/16/32/64 GT/s for gens 1-6; ``eta`` = 8/10 (gens 1-2),
  128/130 (gens 3-5). The table lives in ``nodecast.machines.topology``.
* eq. 4 (line 488), host->device: the GPU *reads* host memory with Memory Read
  requests (MRd) answered by Completions with Data (CplD) of at most RCB bytes::

      n_hat = MRd_O + MRRS + ceil(n / RCB) * CplD_O + n

* eq. 5 (line 499), device->host: the GPU *writes* host memory with posted
  Memory Write TLPs (MWr) of at most MPS bytes::

      n_hat = ceil(n / MPS) * MWr_O + n

* eq. 2 (line 343): ``BW_eff(n) = n * LinkBW / n_hat``. The transfer term of
  eqs. 9-10, ``n / BW_eff``, equals ``n_hat / LinkBW``; ``wire_time_s`` computes
  it that way so that a 0-byte copy costs its header bytes instead of 0/0.

Decisions (each one an explicit, documented choice)
---------------------------------------------------
1. **Per-TLP overhead = TL header + data-link/physical framing, 8 B more per
   TLP by default** (``framing=True``). Eq. 2 defines n_hat as n plus "the
   overhead bytes Ob added by the interface protocol layers" (line 346) and the
   paper's Fig. 3 (lines 505-524) draws every TLP with its PL Start, DL sequence
   number, DL LCRC and PL End; the text after eq. 5 (line 501) quotes only the
   transaction-layer header size (8 or 12 B). The framing bytes are on the wire
   for every TLP: gens 1-2: STP 1 B + sequence 2 B + LCRC 4 B + END 1 B = 8 B;
   gens 3-5: STP token 4 B (it carries the sequence number) + LCRC 4 B = 8 B.
   AHEAD's own code counted them as well (its CplD overhead of 20 B is a 12-B
   header plus these 8 B; FORMATS.md A.3). Check against a real trace: AHEAD's
   Titan bandwidthTest (K20X, gen2 x16, MPS 128, RCB 64, 12-B headers) moves
   256 MiB host->device pinned in 44.73 ms = 6.00 GB/s; eq. 4 with framing gives
   6.10 GB/s, with the TL header alone 6.74 GB/s. ``framing=False`` reproduces
   the paper's TL-header-only arithmetic exactly. DLLPs (ACK/NAK, flow-control
   updates) and the optional ECRC are not counted either way.
2. **First-request term = ``min(MRRS, n)``** by default (``first_request="min"``,
   as AHEAD's code); ``first_request="mrrs"`` is eq. 4 verbatim. The two agree
   for every n >= MRRS (512 B typically); below that a read cannot request more
   than n bytes, and the verbatim form would charge a 1-byte copy 512 phantom
   bytes. (The MRd TLP itself carries no payload; the term stands for the
   first request the completions wait for, as the paper explains at line 472.)
3. **RCB is capped at MPS** (``min(RCB, MPS)``, as AHEAD's code and the paper's
   "RCB <= MPS"); the machine loader already rejects RCB > MPS.
4. **One header size for MRd, MWr and CplD**: the Link's ``header_bytes``
   (12 B when the file does not say). ``PCIeParams`` takes three separate
   values for callers that know better (a 64-bit MRd/MWr has a 16-B header, a
   CplD always 12 B).
5. **Gen 6 (FLIT mode)**: 64 GT/s PAM4 with no line code; TLPs are packed
   into 256-B flits of which 236 B carry TLP bytes (6 B DLLP, 8 B CRC, 6 B FEC),
   so the "encoding" efficiency is 236/256 (``topology.PCIE_ENCODING``). In FLIT
   mode the sequence number and CRC belong to the flit, not the TLP, so the
   per-TLP framing is 0 B; the TLP header is the Link's ``header_bytes``.
   TLPs are assumed to pack back to back across flits (no padding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from nodecast.machines.topology import PCIE_ENCODING, PCIE_GT_PER_S

if TYPE_CHECKING:
    from nodecast.machines.schema import Link

#: Data-link + physical-layer bytes per TLP by generation (decision 1 and 5).
FRAMING_BYTES = {1: 8, 2: 8, 3: 8, 4: 8, 5: 8, 6: 0}

#: Direction of a copy as the GPU sees it: host->device reads host memory
#: (eq. 4), device->host writes it (eq. 5).
Direction = Literal["read", "write"]


def link_bandwidth_bps(gen: int, lanes: int) -> float:
    """AHEAD eq. 3: per-direction PCIe bandwidth in bytes/s after line encoding."""
    return lanes * PCIE_GT_PER_S[gen] * PCIE_ENCODING[gen] / 8.0


@dataclass(frozen=True)
class PCIeParams:
    """TLP parameters of one PCIe link (bytes) and the model options.

    ``framing_bytes`` is added to every TLP the equations count (8 B, or 0 in
    gen-6 FLIT mode; see the module docstring). ``first_request`` is ``"min"``
    (``min(MRRS, n)``) or ``"mrrs"`` (eq. 4 verbatim).
    """

    gen: int
    lanes: int
    mps_bytes: int = 256
    mrrs_bytes: int = 512
    rcb_bytes: int = 64
    mrd_header_bytes: int = 12
    mwr_header_bytes: int = 12
    cpld_header_bytes: int = 12
    framing_bytes: int = 0
    first_request: Literal["min", "mrrs"] = "min"

    def __post_init__(self) -> None:
        if self.gen not in PCIE_GT_PER_S:
            msg = f"unknown PCIe generation {self.gen} (known: 1-6)"
            raise ValueError(msg)
        if self.first_request not in ("min", "mrrs"):
            msg = f"first_request must be 'min' or 'mrrs' (got {self.first_request!r})"
            raise ValueError(msg)
        for name in ("lanes", "mps_bytes", "mrrs_bytes", "rcb_bytes"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive (got {getattr(self, name)})"
                raise ValueError(msg)

    @classmethod
    def from_link(
        cls,
        link: Link,
        *,
        framing: bool = True,
        first_request: Literal["min", "mrrs"] = "min",
    ) -> PCIeParams:
        """Parameters of a ``pcie`` Link (loader defaults where the file is silent)."""
        from nodecast.machines.loader import PCIE_DEFAULTS

        def get(name: str) -> int:
            value = getattr(link, name)
            return int(value if value is not None else PCIE_DEFAULTS[name])

        header = get("header_bytes")
        gen = int(link.gen)  # type: ignore[arg-type]
        return cls(
            gen=gen,
            lanes=int(link.lanes),  # type: ignore[arg-type]
            mps_bytes=get("mps_bytes"),
            mrrs_bytes=get("mrrs_bytes"),
            rcb_bytes=get("rcb_bytes"),
            mrd_header_bytes=header,
            mwr_header_bytes=header,
            cpld_header_bytes=header,
            framing_bytes=FRAMING_BYTES[gen] if framing else 0,
            first_request=first_request,
        )

    @property
    def link_bandwidth_bps(self) -> float:
        """Eq. 3 for this link."""
        return link_bandwidth_bps(self.gen, self.lanes)

    @property
    def completion_bytes(self) -> int:
        """Payload of one completion: RCB, capped at MPS (decision 3)."""
        return min(self.rcb_bytes, self.mps_bytes)


def _ceil_div(n: np.ndarray, d: int) -> np.ndarray:
    return np.ceil(n / d)


def read_bytes_on_wire(n: np.ndarray | float, p: PCIeParams) -> np.ndarray:
    """AHEAD eq. 4: bytes on the wire for the GPU to read ``n`` bytes of host memory."""
    n = np.asarray(n, dtype=np.float64)
    first = np.minimum(n, p.mrrs_bytes) if p.first_request == "min" else np.full_like(n, p.mrrs_bytes)
    completions = _ceil_div(n, p.completion_bytes)
    return (p.mrd_header_bytes + p.framing_bytes) + first + completions * (p.cpld_header_bytes + p.framing_bytes) + n


def write_bytes_on_wire(n: np.ndarray | float, p: PCIeParams) -> np.ndarray:
    """AHEAD eq. 5: bytes on the wire for the GPU to write ``n`` bytes to host memory."""
    n = np.asarray(n, dtype=np.float64)
    return _ceil_div(n, p.mps_bytes) * (p.mwr_header_bytes + p.framing_bytes) + n


def bytes_on_wire(n: np.ndarray | float, p: PCIeParams, direction: Direction) -> np.ndarray:
    """Eq. 4 (``"read"``, host->device) or eq. 5 (``"write"``, device->host)."""
    if direction == "read":
        return read_bytes_on_wire(n, p)
    if direction == "write":
        return write_bytes_on_wire(n, p)
    msg = f"direction must be 'read' or 'write' (got {direction!r})"
    raise ValueError(msg)


def effective_bandwidth_bps(n: np.ndarray | float, p: PCIeParams, direction: Direction) -> np.ndarray:
    """AHEAD eq. 2: ``n * LinkBW / n_hat`` in bytes/s (0 for a 0-byte copy)."""
    n = np.asarray(n, dtype=np.float64)
    return n * p.link_bandwidth_bps / bytes_on_wire(n, p, direction)


def wire_time_s(n: np.ndarray | float, p: PCIeParams, direction: Direction) -> np.ndarray:
    """The transfer term ``n / BW_eff`` of eqs. 9-10, computed as ``n_hat / LinkBW``."""
    return bytes_on_wire(n, p, direction) / p.link_bandwidth_bps
