"""What NCCL's topology search finds on a node: the bus bandwidth of a group of its GPUs, from the Machine's links.

NCCL (``src/graph/search.cc``) searches for rings (channels) through the node's
topology, each at a per-channel bandwidth, and the tuning model
(``src/graph/tuning.cc``, ``nodecast.models.collective_tuning``) takes the
ring's bus bandwidth as nChannels x bwIntra. nodecast does not rerun the
search: it takes the bandwidth the search aims for, what each GPU can send
through its links to the rest of the group, with NCCL's own per-link rates
(``src/graph/topo.h``, below) rather than the data sheets' raw rates:

* **NVSwitch** (GPUs joined to a switch endpoint by NVLink): each GPU's NVLink
  bandwidth to the switches (links x NCCL's per-link rate), whatever the
  group: the switch is taken as non-blocking (every GPU at full rate at once).
* **Direct links** (NVLink bridges, cube meshes, Infinity Fabric meshes): per
  GPU, the sum of its direct links to the other GPUs of the group; a complete
  mesh reaches it (the complete directed graph splits into n - 1 rings through
  every GPU, Tillson 1980), an incomplete one may not (an upper bound, said in
  the notes). A group whose GPUs are not all joined this way rings through PCIe.
* **PCIe** (and any path through the host): a ring through the group's GPUs
  in device order, each hop along ``Machine.route`` (PCIe switches, the host
  bridge, the inter-socket bus); a directed link crossed by k hops gives each
  1 / k of its rate, and the ring runs at its slowest hop. Paths through an
  Intel CPU cost 6/5 of their PCIe bandwidth (topo.h ``INTEL_P2P_OVERHEAD``).

A group of n GPUs is GPUs 0 .. n-1 of the node (NCCL's ranks in device order).
All-to-all and send/receive use the same links: all-to-all sends (n - 1) / n of
a rank's buffer, one part to each peer at once (the slowest pair sets the
pace); send/receive is one pair, GPU 0 -> GPU 1.

Units: bytes/s per direction.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nodecast.errors import InputError
from nodecast.machines.topology import Link, raw_rate_bps

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine

#: NCCL's hardware class of a ring's links (tuning.cc ``NCCL_HW_NVLINK``, ``NCCL_HW_PCI``): it picks the latency row.
HW_NVLINK, HW_PCI = 0, 1
#: Fabric kinds (``Fabric.kind``).
NVSWITCH, DIRECT, PCIE, SINGLE = "nvswitch", "direct links", "pcie", "one GPU"

#: NCCL's NVLink rate per link and direction, GB/s, by compute capability major (src/graph/topo.h: SM60_NVLINK_BW
#: 18.0, SM70 20.0, SM80 20.0, SM90 20.6, SM100 40.1 "Blackwell"); SM86 (A40, RTX A6000 bridges) 12.0.
NCCL_NVLINK_GBPS_BY_SM = {6: 18.0, 7: 20.0, 8: 20.0, 9: 20.6, 10: 40.1}
NCCL_NVLINK_GBPS_SM86 = 12.0
#: The same by NVLink generation, where the GPU's compute capability is unknown (generation n is the one of
#: SM60, SM70, SM80, SM90, SM100 in turn: DATASHEETS.md D.2 via machines/topology.py NVLINK_BPS_PER_LINK).
NCCL_NVLINK_GBPS_BY_GEN = {1: 18.0, 2: 20.0, 3: 20.0, 4: 20.6, 5: 40.1}
#: NCCL's PCIe rate per lane (src/graph/topo.cc ``kvDictPciGen``: x100 Mb/s per lane, gen1 15 .. gen6 480; a
#: link's GB/s is width x value / 80): gen4 x16 = 24 GB/s, where the raw rate is 31.5 GB/s.
NCCL_PCIE_GBPS_PER_LANE = {1: 15 / 80, 2: 30 / 80, 3: 60 / 80, 4: 120 / 80, 5: 240 / 80, 6: 480 / 80}
#: NCCL's inter-socket rates, GB/s (src/graph/topo.h): Intel BDW_QPI_BW 6.0, SKL_QPI_BW 10.0 (Skylake to Ice
#: Lake), SRP_QPI_BW 22.0 (Sapphire Rapids), ERP_QPI_BW 40.0 (Emerald Rapids); AMD_ZEN12_BW 16.0, AMD_ZEN34_BW
#: 24.0, AMD_ZEN5_BW 32.0; P9_BW 32.0 (POWER9); ARM_BW 6.0.
NCCL_SOCKET_GBPS = {"bdw": 6.0, "skl": 10.0, "srp": 22.0, "erp": 40.0, "zen12": 16.0, "zen34": 24.0, "zen5": 32.0,
                    "power": 32.0, "arm": 6.0}
#: A GPU-to-GPU path through an Intel CPU consumes 6/5 of its bandwidth on the PCIe links (topo.h
#: ``INTEL_P2P_OVERHEAD(bw) (bw*6/5)``: "Intel CPU convert GPU P2P traffic into 64B PCI TLPs").
INTEL_P2P_OVERHEAD = 6 / 5
#: Link kinds that join two GPUs directly (an NVLink bridge or mesh, AMD's Infinity Fabric GPU links ``xgmi``).
DIRECT_KINDS = ("nvlink", "xgmi")
#: NVLS channels (CTAs) NCCL runs inside one node (src/transport/nvls.cc ``ncclNvlsInit``: NVLS_NCHANNELS_SM90 16
#: on Hopper, NVLS_NCHANNELS_SM100_NVL 24 on one Blackwell node or NVLink domain).
NVLS_CHANNELS_HOPPER, NVLS_CHANNELS_BLACKWELL = 16, 24
#: NCCL's ring search tries these per-channel bandwidths (GB/s) from the top (src/graph/search.cc speedArrayIntra,
#: sm90SpeedArrayIntra, sm100SpeedArrayIntra).
SEARCH_SPEEDS_GBPS = {None: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
                      "sm90": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                      "sm100": (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)}
#: At most this many ring channels (src/include/device.h MAXCHANNELS 64 in NCCL 2.2x; a ring graph gets half, so
#: that channels can be duplicated).
MAX_RING_CHANNELS = 32
#: ncclTopoDupChannels (search.cc): channels of at least 25 GB/s are duplicated at half the bandwidth each, except
#: on Hopper and later when they are under 50 GB/s and more than 4.
DUP_MIN_GBPS, DUP_HOPPER_MIN_GBPS, DUP_HOPPER_MAX_CHANNELS = 25.0, 50.0, 4
#: NCCL's compute-capability index of its per-architecture tables (tuning.cc VOLTA_COMPCAP_IDX 0, AMPERE 1,
#: HOPPER 2, BLACKWELL 3).
VOLTA, AMPERE, HOPPER, BLACKWELL = 0, 1, 2, 3


@dataclass(frozen=True)
class Fabric:
    """A node's collective fabric, per group size n (arrays indexed by n, 0 .. gpus; n < 2 holds NaN).

    ``ring_bps[n]``: the ring's bus bandwidth as the search settles it
    (nChannels x bwIntra, bytes/s) and ``channels[n]`` its channels;
    ``alltoall_bps[n]``: what one GPU sends per second in an all-to-all (all
    peers at once, the links' rate); ``pair_bps``: GPU 0 -> GPU 1;
    ``hw[n]``: ``HW_NVLINK`` or ``HW_PCI``; ``nvls[n]``: NVLink SHARP in a
    switch every GPU of the group hangs on (NCCL's NVLS algorithm), run on
    ``nvls_channels`` channels; ``ll128[n]``: NCCL enables LL128 (NVLink paths
    only); ``arch``: NCCL's compute-capability index (None: not an NVIDIA GPU
    NCCL's tables cover). ``notes`` say how the links were read.
    """

    machine: str
    kind: str
    gpus: int
    vendor: str
    arch: int | None
    ring_bps: np.ndarray
    channels: np.ndarray
    alltoall_bps: np.ndarray
    pair_bps: float
    hw: np.ndarray
    ll128: np.ndarray
    nvls: np.ndarray
    nvls_channels: int = 0
    notes: tuple[str, ...] = field(default=(), compare=False)

    def check_group(self, gpus: np.ndarray, what: str = "--gpus") -> None:
        """InputError (one line) when a group is larger than the node or smaller than 1."""
        g = np.asarray(gpus)
        if g.size == 0:
            return
        big, small = int(g.max()), int(g.min())
        if big > self.gpus:
            raise InputError(f"group of {big} GPUs on a node of {self.gpus}", key=what,
                             hint=f"{self.machine} has {self.gpus} GPU{'s' if self.gpus != 1 else ''}")
        if small < 1:
            raise InputError(f"group of {small} GPUs: a collective needs at least 1", key=what)


def _gpu_index(endpoint: str) -> int | None:
    m = re.fullmatch(r"gpu(\d+)", endpoint)
    return int(m.group(1)) if m else None


def _sm_major(machine: Machine) -> int | None:
    sheet = machine.gpu.sheet
    if sheet is None or sheet.vendor != "nvidia" or not sheet.target.startswith("sm_"):
        return None
    digits = sheet.target[3:].rstrip("abf")
    return int(digits[:-1]) if digits.isdigit() and len(digits) >= 2 else None


def nccl_arch(machine: Machine) -> int | None:
    """NCCL's compute-capability index (``VOLTA`` .. ``BLACKWELL``) of the node's GPU; None before Volta or for
    another vendor (tuning.cc: minCompCap >= 100 Blackwell, >= 90 Hopper, >= 80 Ampere, else Volta)."""
    major = _sm_major(machine)
    if major is None or major < 7:
        return None
    return BLACKWELL if major >= 10 else HOPPER if major >= 9 else AMPERE if major >= 8 else VOLTA


def _socket_gbps(machine: Machine, link: Link) -> float:
    """NCCL's rate of an inter-socket bus, GB/s, by CPU family (``NCCL_SOCKET_GBPS``); the data sheet's rate
    where the family is not one NCCL names."""
    model = machine.cpu.model.lower()
    m = re.search(r"(platinum|gold|silver|bronze)\s*(\d)(\d)\d\d", model)
    if m:
        gen = int(m.group(3))  # Xeon Scalable: the second digit is the generation (1 Skylake .. 5 Emerald Rapids)
        return NCCL_SOCKET_GBPS["erp" if gen >= 5 else "srp" if gen == 4 else "skl"]
    if "xeon" in model and re.search(r"\be[57]-", model):
        return NCCL_SOCKET_GBPS["bdw"]
    m = re.search(r"epyc\s*(\d)\d\d(\d)", model)
    if m:
        zen = int(m.group(2))  # EPYC 7xx1/7xx2: Zen 1/2; 7xx3, 9xx4: Zen 3/4; 9xx5: Zen 5
        return NCCL_SOCKET_GBPS["zen5" if zen >= 5 else "zen34" if zen >= 3 else "zen12"]
    if "power" in model:
        return NCCL_SOCKET_GBPS["power"]
    return raw_rate_bps(link) / 1e9


def _link_bps(machine: Machine, link: Link) -> float:
    """NCCL's rate of ``link`` per direction, bytes/s (``NCCL_*`` tables); the data sheet's for other kinds."""
    if link.kind == "nvlink" and link.links:
        major = _sm_major(machine)
        sheet = machine.gpu.sheet
        if sheet is not None and sheet.target == "sm_86":
            per = NCCL_NVLINK_GBPS_SM86
        elif major is not None and major in NCCL_NVLINK_GBPS_BY_SM:
            per = NCCL_NVLINK_GBPS_BY_SM[major]
        else:
            per = NCCL_NVLINK_GBPS_BY_GEN.get(link.gen or 0, raw_rate_bps(link) / link.links / 1e9)
        return link.links * per * 1e9
    if link.kind == "pcie" and link.lanes and link.gen in NCCL_PCIE_GBPS_PER_LANE:
        return link.lanes * NCCL_PCIE_GBPS_PER_LANE[link.gen] * 1e9
    if link.kind == "socket-bus":
        return _socket_gbps(machine, link) * 1e9
    return raw_rate_bps(link)


def _intel(machine: Machine) -> bool:
    return "xeon" in machine.cpu.model.lower() or "intel" in machine.cpu.model.lower()


def _nvswitch_bps(machine: Machine, count: int) -> np.ndarray | None:
    """Per GPU, its NVLink bandwidth to NVSwitch endpoints; None unless every GPU has some."""
    nvswitches = {s for s in machine.switches
                  if any(link.kind == "nvlink" and s in link.endpoints for link in machine.links)}
    if not nvswitches:
        return None
    per_gpu = np.zeros(count)
    for link in machine.links:
        a, b = link.endpoints
        if link.kind != "nvlink" or not ({a, b} & nvswitches):
            continue
        g = _gpu_index(b if a in nvswitches else a)
        if g is not None and g < count:
            per_gpu[g] += _link_bps(machine, link)
    return per_gpu if np.all(per_gpu > 0) else None


def _direct_matrix(machine: Machine, count: int) -> np.ndarray:
    """Bytes/s per direction of the direct GPU-to-GPU links between each pair (0: none)."""
    rate = np.zeros((count, count))
    for link in machine.links:
        if link.kind not in DIRECT_KINDS:
            continue
        i, j = (_gpu_index(e) for e in link.endpoints)
        if i is None or j is None or i >= count or j >= count or i == j:
            continue
        bps = _link_bps(machine, link)
        rate[i, j] += bps
        rate[j, i] += bps
    return rate


def _routed_rates(machine: Machine, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Each pair's rate, bytes/s, when all ``pairs`` (GPU i -> GPU j) send at once along ``Machine.route``: a
    directed link shared by k of them gives each 1 / k; an Intel CPU on the path costs 6/5 on its PCIe links."""
    routes = [machine.route(f"gpu{i}", f"gpu{j}") for i, j in pairs]
    directed: list[list[tuple[str, str]]] = []
    for (i, _j), route in zip(pairs, routes, strict=True):
        here, hops = f"gpu{i}", []
        for link in route:
            there = link.other(here)
            hops.append((link.id, here))
            here = there
        directed.append(hops)
    load = Counter(hop for hops in directed for hop in hops)
    by_id = {link.id: link for link in machine.links}
    intel = _intel(machine)
    out = np.empty(len(pairs))
    for k, (route, hops) in enumerate(zip(routes, directed, strict=True)):
        via_cpu = intel and any(e.startswith("cpu") for link in route for e in link.endpoints)
        rates = []
        for link_id, start in hops:
            link = by_id[link_id]
            bps = _link_bps(machine, link)
            if via_cpu and link.kind == "pcie":
                bps /= INTEL_P2P_OVERHEAD
            rates.append(bps / load[(link_id, start)])
        out[k] = min(rates) if rates else np.inf
    return out


def ring_channels(total_bps: float, arch: int | None) -> tuple[int, float]:
    """The channels NCCL's ring search settles on for a GPU that can send ``total_bps``, and their bus bandwidth
    (bytes/s, nChannels x bwIntra): the first speed of its list (``SEARCH_SPEEDS_GBPS``) whose channels carry the
    whole bandwidth, else the speed whose channels carry the most, then ``ncclTopoDupChannels``. A simplification
    of search.cc, which also tries rings that differ per channel and gives up after a time budget."""
    total = total_bps / 1e9
    speeds = SEARCH_SPEEDS_GBPS["sm100" if arch == BLACKWELL else "sm90" if arch == HOPPER else None]
    best = (1, min(total, speeds[-1]))
    for speed in speeds:
        if speed > total:
            continue
        nch = min(int(total // speed), MAX_RING_CHANNELS)
        if nch * speed > best[0] * best[1]:
            best = (nch, speed)
        if nch * speed >= total * (1 - 1e-9):
            break
    nch, bw = best
    hopper = arch is not None and arch >= HOPPER
    if bw >= DUP_MIN_GBPS and not (hopper and bw < DUP_HOPPER_MIN_GBPS and nch > DUP_HOPPER_MAX_CHANNELS):
        dup = min(2 * nch, MAX_RING_CHANNELS)
        bw /= -(-dup // nch)
        nch = dup
    return nch, nch * bw * 1e9


def fabric(machine: Machine) -> Fabric:
    """The collective fabric of ``machine`` (see the module docstring), memoised per machine object."""
    key = id(machine)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is machine:
        return hit[1]
    out = _build(machine)
    _CACHE[key] = (machine, out)
    return out


_CACHE: dict[int, tuple[Machine, Fabric]] = {}


def _build(machine: Machine) -> Fabric:
    count = machine.gpu.count
    sheet = machine.gpu.sheet
    vendor = sheet.vendor if sheet is not None else "nvidia"
    arch = nccl_arch(machine)
    size = count + 1
    ring, a2a = np.full(size, np.nan), np.full(size, np.nan)
    channels = np.ones(size, dtype=np.int64)
    hw = np.full(size, HW_PCI, dtype=np.int8)
    ll128 = np.zeros(size, dtype=bool)
    nvls = np.zeros(size, dtype=bool)
    notes: list[str] = []
    if count < 2:
        return Fabric(machine.name, SINGLE, count, vendor, arch, ring, channels, a2a, np.nan, hw, ll128, nvls, 0,
                      (f"{machine.name} has one GPU: no collective crosses a link",))
    switch = _nvswitch_bps(machine, count)
    direct = _direct_matrix(machine, count)
    kind = NVSWITCH if switch is not None else DIRECT if direct.any() else PCIE
    partial = False
    for n in range(2, size):
        if switch is not None:
            ring[n] = a2a[n] = switch[:n].min()
            hw[n], ll128[n] = HW_NVLINK, True
            continue
        sub = direct[:n, :n]
        off = ~np.eye(n, dtype=bool)
        if np.all(sub[off] > 0) or (n > 2 and np.all((sub > 0).sum(axis=1) >= 2)):
            partial |= not np.all(sub[off] > 0)
            ring[n] = sub.sum(axis=1).min()
            if np.all(sub[off] > 0):
                a2a[n] = (n - 1) * sub[off].min()
            else:  # peers without a direct link are reached along Machine.route, sharing links
                a2a[n] = (n - 1) * _routed_rates(machine, [(i, j) for i in range(n) for j in range(n) if i != j]).min()
            hw[n], ll128[n] = HW_NVLINK, vendor == "nvidia"
            continue
        hops = [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1), (1, 0)]
        ring[n] = _routed_rates(machine, hops).min()
        everyone = [(i, j) for i in range(n) for j in range(n) if i != j]
        a2a[n] = (n - 1) * _routed_rates(machine, everyone).min()
    pair = ring[2]
    for n in range(2, size):  # the ring's bandwidth as the search finds it (a2a and pairs keep the links' rate)
        channels[n], ring[n] = ring_channels(ring[n], arch)
    if kind == NVSWITCH:
        # NCCL sets NVLS up only for more than 2 GPUs (src/transport/nvls.cc ncclNvlsInit: gpuCount <= 2 returns).
        nvls[3:] = [nvlink_sharp(machine, n) for n in range(3, size)]
    per = f"{switch[0] / 1e9:.4g} GB/s" if switch is not None else ""
    if kind == NVSWITCH:
        notes.append(f"{machine.name}: NVSwitch, {per} per GPU and direction (NCCL's per-link NVLink rate, "
                     "src/graph/topo.h); switch taken as non-blocking"
                     + ("; NVLink SHARP (NVLS) for groups of 3 GPUs or more" if nvls.any() else
                        "; no NVLink SHARP in its switch (NVLS needs a third-generation NVSwitch or later)"))
    elif kind == DIRECT:
        through_pcie = [n for n in range(2, size) if hw[n] == HW_PCI]
        notes.append(f"{machine.name}: direct GPU links; a ring's bandwidth is each GPU's links to the rest of the "
                     "group (NCCL's per-link rates)" + ("; the mesh is not complete: an upper bound NCCL's ring "
                                                         "search may not reach" if partial else "")
                     + (f"; groups of {', '.join(map(str, through_pcie))} GPUs ring through PCIe and the host "
                        "(not every GPU has two direct neighbours in them)" if through_pcie else ""))
    else:
        notes.append(f"{machine.name}: no GPU-to-GPU links: rings through PCIe and the host "
                     f"({ring[count] / 1e9:.3g} GB/s for all {count} GPUs, NCCL's PCIe rates, src/graph/topo.cc)")
    if vendor != "nvidia":
        notes.append(f"{machine.name}: {vendor.upper()} GPUs: RCCL's tuning taken as NCCL's (its tables are not "
                     "modelled); LL128 off")
    nvls_channels = (NVLS_CHANNELS_BLACKWELL if arch == BLACKWELL else NVLS_CHANNELS_HOPPER) if nvls.any() else 0
    return Fabric(machine.name, kind, count, vendor, arch, ring, channels, a2a, float(pair), hw, ll128, nvls,
                  nvls_channels, tuple(notes))


def nvlink_sharp(machine: Machine, gpus: int) -> bool:
    """Whether GPUs 0 .. ``gpus``-1 all hang on one switch that reduces in the switch (NVLink SHARP, NCCL's NVLS
    algorithm): the machine file's ``[switch.NAME] sharp = true`` (``Machine.sharp_switch``); a switch whose file
    does not say so has none (third-generation NVSwitch and later: ``machines.topology.NVLS_MIN_NVSWITCH_GEN``)."""
    return machine.sharp_switch(range(gpus)) is not None
