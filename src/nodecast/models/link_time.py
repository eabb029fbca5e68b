"""The time on the wire of copies over one link, dispatched on the link's kind (AHEAD eq. 2).

``n / BW_eff`` is computed as ``n_hat / LinkBW`` (the same by eq. 2), with
``n_hat`` from ``nodecast.models.pcie``, ``nvlink`` or ``c2c`` by the link's
kind; an inter-socket ``socket-bus`` link and an AMD Infinity Fabric GPU link
(``xgmi``) are taken at their raw rate (``n_hat = n``). Shared by the transfer
models (``nodecast.models.transfer``, ``baselines``) and the simulator's
platform. Seconds, bytes, bytes/s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.topology import raw_rate_bps
from nodecast.models import c2c, nvlink, pcie

if TYPE_CHECKING:
    from nodecast.machines.schema import Link

Direction = Literal["read", "write"]

_GB = 1e9


def pcie_params(link: Link, *, framing: bool = True, first_request: Literal["min", "mrrs"] = "min") -> pcie.PCIeParams:
    """``PCIeParams`` of a pcie Link with the model's options."""
    return pcie.PCIeParams.from_link(link, framing=framing, first_request=first_request)


def wire_time_s(
    link: Link,
    n: np.ndarray | float,
    direction: Direction,
    *,
    pcie_framing: bool = True,
    pcie_first_request: Literal["min", "mrrs"] = "min",
) -> np.ndarray:
    """``n / BW_eff`` (= ``n_hat / LinkBW``) over ``link``, dispatched on its kind, seconds."""
    if link.kind == "pcie":
        p = pcie_params(link, framing=pcie_framing, first_request=pcie_first_request)
        if link.bandwidth_bps is not None:  # the file overrides eq. 3; keep eqs. 4-5
            return pcie.bytes_on_wire(n, p, direction) / link.bandwidth_bps
        return pcie.wire_time_s(n, p, direction)
    if link.kind == "nvlink":
        return nvlink.wire_time_s(n, link, direction)
    if link.kind == "nvlink-c2c":
        return c2c.wire_time_s(n, link, direction)
    if link.kind in ("socket-bus", "xgmi"):
        # Raw rate, n_hat = n. xGMI: AMD publishes no packet format or per-transfer overhead model for Infinity
        # Fabric GPU links (as PCIe's TLPs, eqs. 4-5, or NVLink's flits, eqs. 6-7), only the raw per-link rate
        # (nodecast.machines.topology.XGMI_BPS_PER_LINK: 64 GB/s per x16 gen-4 link, AMD ROCm blog "Understanding
        # RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X"); the same blog's ~48 GB/s usable per link
        # is one measurement, not a model, so it is not applied.
        return np.asarray(n, dtype=np.float64) / raw_rate_bps(link)
    msg = f"no transfer model for link kind {link.kind!r}"
    raise InputError(msg, key=f"links.{link.id}")


def effective_bandwidth_bps(link: Link, n: np.ndarray | float, direction: Direction, **options: object) -> np.ndarray:
    """AHEAD eq. 2 over ``link``: ``n / wire_time_s``, bytes/s."""
    n = np.asarray(n, dtype=np.float64)
    return n / wire_time_s(link, n, direction, **options)  # type: ignore[arg-type]


def describe_link(link: Link, *, pcie_framing: bool | None = None) -> str:
    """One line naming a link, its kind and its per-direction rate (GB/s, 1 GB = 1e9 B)."""
    rate = raw_rate_bps(link) / _GB
    if link.kind == "pcie":
        text = f"{link.id}: PCIe gen{link.gen} x{link.lanes}, {rate:.2f} GB/s per direction (eq. 3)"
        if pcie_framing is not None:
            p = pcie_params(link, framing=pcie_framing)
            text += (
                f"; MPS {p.mps_bytes} B, MRRS {p.mrrs_bytes} B, RCB {p.rcb_bytes} B, TLP header "
                f"{p.mrd_header_bytes} B + {p.framing_bytes} B DL/PL framing"
            )
        return text
    if link.kind == "nvlink":
        return f"{link.id}: NVLink {link.gen} x {link.links} links, {rate:.2f} GB/s per direction (eq. 8)"
    if link.kind == "nvlink-c2c":
        return f"{link.id}: NVLink-C2C, {rate:.2f} GB/s per direction (NVLink flit framing assumed)"
    if link.kind == "xgmi":
        return (f"{link.id}: Infinity Fabric (xGMI) gen{link.gen} x {link.links} links, {rate:.2f} GB/s per "
                "direction (raw rate)")
    return f"{link.id}: {link.kind}, {rate:.2f} GB/s per direction"
