"""A Machine's links, the routes through them, and the raw rate of each link kind.

A ``Link`` lives here rather than in ``nodecast.machines.schema`` (which re-exports it) so that the Machine's
route methods can call this module without it having to know the Machine.

The raw rates here are the link's theoretical per-direction data rate after
line encoding and before protocol (TLP/flit) overhead, which is what AHEAD
calls LinkBW (eq. 3 for PCIe, eq. 8 for NVLink).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from nodecast.errors import InputError

#: PCIe per-lane raw rate in transfers/s and encoding efficiency per generation.
#: Gens 1-2 use 8b/10b, gens 3-5 128b/130b (PCI-SIG base specs; AHEAD eq. 3).
#: Gen 6 runs 64 GT/s PAM4 in FLIT mode with no line code; a 256-B flit holds
#: 236 B of TLP bytes, 6 B of DLLP, 8 B of CRC and 6 B of FEC (PCIe 6.0 base
#: spec, FLIT mode), so its "encoding" efficiency here is 236/256 = 0.922.
PCIE_GT_PER_S = {1: 2.5e9, 2: 5.0e9, 3: 8.0e9, 4: 16.0e9, 5: 32.0e9, 6: 64.0e9}
PCIE_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 236 / 256}

#: NVLink per-link, per-direction data rate in bytes/s by generation.
#: NVLink 1 (P100): 20 GB/s; 2 (V100): 25 GB/s; 3 (A100): 25 GB/s (12 links,
#: 600 GB/s bidir); 4 (H100): 25 GB/s (18 links, 900 GB/s bidir).
#: Sources: ../shared/reference/DATASHEETS.md D.2 (IBM S822LC redbook, OLCF
#: Summit guide, klockwood A100/H100 pages).
NVLINK_BPS_PER_LINK = {1: 20e9, 2: 25e9, 3: 25e9, 4: 25e9, 5: 50e9}

#: AMD Infinity Fabric (xGMI) GPU-to-GPU link: per-link, per-direction data rate in bytes/s by Infinity Fabric
#: generation, for the 16-lane links AMD's Instinct GPUs use (lanes x GT/s x 2 B per 16-lane transfer). Gen 3
#: (MI200, CDNA 2): 25 GT/s, "a peak transfer bandwidth of 50 GB/sec for a 16-wide link (two bytes per
#: transaction)" (ROCm docs, AMD Instinct MI250 microarchitecture, rocm.docs.amd.com reference/gpu-arch/mi250.md).
#: Gen 4 (MI300, CDNA 3): 32 GT/s x16, "xGMI's raw bandwidth is rated up to 64 GB/s for each point-to-point link
#: between GPUs" (AMD ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X",
#: rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi); 128 GB/s bidirectional per link, "4th-gen
#: Infinity Fabric ... 32Gbps per lane" (wheelersnetwork.com 2024/01, "AMD Looks to Infinity for AI
#: Interconnects"); the amdgpu driver's link speeds are 16, 25 and 32 GT/s (amdgpu_xgmi.h). The same blog
#: measures about 48 GB/s usable per link (CRC and protocol overhead): the raw rate here is before that.
XGMI_BPS_PER_LINK = {3: 50e9, 4: 64e9}

#: Kinds of switch a machine file may describe in ``[switch.NAME]``: NVIDIA NVSwitch (and the NVLink Switch chips
#: of NVL72 racks, NVSwitch generation 4), and PCIe switches (Broadcom PEX, the PCIe switch inside ConnectX-8).
SWITCH_KINDS = ("nvswitch", "pcie")
#: NVSwitch generations: 1 = DGX-2 (V100, NVLink 2), 2 = DGX/HGX A100 (NVLink 3), 3 = DGX/HGX H100 and H200
#: (NVLink 4), 4 = Blackwell HGX B200/B300 and the NVL72 NVLink Switch (NVLink 5).
NVSWITCH_GENERATIONS = (1, 2, 3, 4)
#: First NVSwitch generation with NVLink SHARP (in-switch reductions and multicast, NCCL's NVLS algorithm): "The
#: third-generation NVIDIA NVSwitch ... incorporates hardware acceleration for collective operations with
#: multicast and NVIDIA SHARP in-network reductions" (NVIDIA technical blog "Upgrading Multi-GPU
#: Interconnectivity with the Third-Generation NVIDIA NVSwitch", 2022); "Third-generation NVIDIA NVSwitch supports
#: SHARP in-network computing, previously only available on Infiniband" (NVIDIA NVLink page); "each NVLink Switch
#: has engines for SHARP for in-network reductions and multicast acceleration" (NVIDIA NVLink page, Blackwell).
#: The A100's second-generation NVSwitch has none.
NVLS_MIN_NVSWITCH_GEN = 3


@dataclass(frozen=True)
class Link:
    """A point-to-point link between two endpoints, full duplex.

    PCIe links carry their TLP parameters: max payload size (MPS), max read
    request size (MRRS), read completion boundary (RCB) and the TLP header
    size (12 B with 64-bit addressing, 16 B with the 4-DW header + ECRC...).
    NVLink links carry their generation and the number of links (bricks)
    that join the two endpoints; so do AMD Infinity Fabric GPU links
    (``xgmi``: Infinity Fabric generation and 16-lane links). NVLink-C2C and socket buses are given by
    ``bandwidth_bps``; any link may give ``bandwidth_bps`` to override the
    rate derived from its generation. All bandwidths are per direction.
    """

    id: str
    kind: str
    endpoints: tuple[str, str]
    gen: int | None = None
    lanes: int | None = None
    links: int | None = None
    mps_bytes: int | None = None
    mrrs_bytes: int | None = None
    rcb_bytes: int | None = None
    header_bytes: int | None = None
    bandwidth_bps: float | None = None
    latency_s: float | None = None

    def other(self, endpoint: str) -> str:
        """The endpoint at the far end from ``endpoint``."""
        a, b = self.endpoints
        return b if endpoint == a else a


@dataclass(frozen=True)
class Switch:
    """What a machine file says of one of its switches (``[switch.NAME]``); the links say what it joins.

    ``kind`` is one of ``SWITCH_KINDS``; ``gen`` the NVSwitch generation (``NVSWITCH_GENERATIONS``) or the PCIe
    generation of a PCIe switch, None when not given; ``sharp`` whether the switch reduces in the switch (NVLink
    SHARP, NCCL's NVLS algorithm), which needs an NVSwitch of generation ``NVLS_MIN_NVSWITCH_GEN`` or later.
    """

    id: str
    kind: str
    gen: int | None = None
    sharp: bool = False


def raw_rate_bps(link: Link) -> float:
    """Per-direction data rate of ``link`` in bytes/s (encoding applied, no protocol overhead)."""
    if link.bandwidth_bps is not None:
        return link.bandwidth_bps
    if link.kind == "pcie":
        return link.lanes * PCIE_GT_PER_S[link.gen] * PCIE_ENCODING[link.gen] / 8.0  # type: ignore[operator,index]
    if link.kind == "nvlink":
        return link.links * NVLINK_BPS_PER_LINK[link.gen]  # type: ignore[operator,index]
    if link.kind == "xgmi":
        return link.links * XGMI_BPS_PER_LINK[link.gen]  # type: ignore[operator,index]
    msg = f"link kind {link.kind!r} needs bandwidth_bps"
    raise InputError(msg, key=f"links.{link.id}")


def route(links: tuple[Link, ...], src: str, dst: str, where: Path | str) -> tuple[Link, ...]:
    """Breadth-first route from ``src`` to ``dst`` over a node's ``links``; raises InputError naming ``where`` (the
    machine file, or the node's name) when none exists."""
    if src == dst:
        return ()
    adjacency: dict[str, list[Link]] = {}
    for link in links:
        for end in link.endpoints:
            adjacency.setdefault(end, []).append(link)
    came_from: dict[str, Link | None] = {src: None}
    queue = deque([src])
    while queue:
        here = queue.popleft()
        if here == dst:
            break
        for link in adjacency.get(here, ()):
            there = link.other(here)
            if there not in came_from:
                came_from[there] = link
                queue.append(there)
    if dst not in came_from:
        raise InputError(
            f"no route from {src} to {dst}",
            path=where,
            key="links",
            hint="Add a link joining them",
        )
    path: list[Link] = []
    here = dst
    while came_from[here] is not None:
        link = came_from[here]
        path.append(link)  # type: ignore[arg-type]
        here = link.other(here)  # type: ignore[union-attr]
    return tuple(reversed(path))


def bottleneck(links: tuple[Link, ...]) -> Link:
    """The link of lowest raw rate on a route (the first one on ties)."""
    if not links:
        msg = "empty route has no bottleneck link"
        raise InputError(msg)
    return min(links, key=raw_rate_bps)
