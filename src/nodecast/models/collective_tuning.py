"""NCCL's cost model of a collective: per algorithm and protocol, latency + size / bandwidth; the cheapest wins.

NCCL chooses how to run each collective from its own model (``src/graph/tuning.cc``,
``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``; NCCL 2.23 to 2.27, the tables
with PAT and Blackwell rows). nodecast evaluates the same model over many
(op, size, group) rows at once, with the bus bandwidth of the node's topology
(``nodecast.models.collective_fabric``)::

    time(a, p) = latency(a, p, n, hw) + size / algbw(a, p, n)          (s; size in nccl-tests' sense)

    latency:  ring       baseLat[a][p] + nsteps x hwLat[hw][a][p]       (broadcast, reduce: one hwLat)
              tree       baseLat[a][p] + 2 (n - 1) x hwLat[hw][a][p]   (all_reduce only; one node: a chain)
              NVLS       hwLat[NVLink][NVLS][Simple]                    (25 us; no base latency)
    nsteps:   all_reduce 2 (n - 1); all_gather, reduce_scatter n - 1; broadcast, reduce n
    busBw B:  the ring's bus bandwidth (nChannels x bwIntra, ``Fabric.ring_bps``), then per protocol
              ring  LL min(llMaxBw, 0.5 B)   LL128 0.92 B (120 of 128 bytes carry data)   Simple B
              tree  0.92 B, then LL min(/3.8, llMaxBw), LL128 x 7/9 (one node); Hopper and later x 0.85
    algbw:    ring  B x n / nsteps;   tree  B x 0.5 x treeCorrectionFactor[p][log2(size / 64)]
              NVLS  all_reduce B x 5/6;  all_gather, reduce_scatter B x min((n - 1) / n, 0.9)

The tables below are tuning.cc's, with its comments' units (µs, GB/s). Which
(a, p) exist: LL128 only over NVLink (``Fabric.ll128``); NVLS only where the
switch reduces (NVLink SHARP, ``Fabric.nvls``) and only Simple; tree only for
all_reduce; broadcast and reduce only ring. CollNet needs in-network reduction
(a SHARP network plugin): none inside one node. PAT runs one GPU per node: none
inside one node either. Both keep their codes so that a trace that recorded
them can say so.

Send/receive and all-to-all are not in NCCL's tuning model (they are grouped
point-to-point operations): nodecast gives them one ring step of latency
(baseLat + hwLat of ring, protocol p), LL for at most ``P2P_LL_THRESHOLD_BYTES``
per peer and Simple above (NCCL's ``NCCL_P2P_LL_THRESHOLD``, enqueue.cc), and
the rate of the links each GPU sends over (``Fabric.alltoall_bps``,
``Fabric.pair_bps``); an all-to-all moves (n - 1) / n of a rank's buffer.
Its algorithm is called ``p2p``.

Decisions where NCCL's model needs what the topology search found and
nodecast does not rerun it: the per-channel caps (``perChMaxTreeBw``,
``perChMaxRingLL128Bw`` x nChannels) are left out (on the NVSwitch nodes they
bind above the link rate), and NVLS runs at the GPU's NVLink bandwidth. No
per-call overhead is added (NCCL's model has none; a framework's launch cost
is the caller's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nodecast.models.collective_fabric import AMPERE, BLACKWELL, HOPPER, HW_NVLINK, HW_PCI, VOLTA, Fabric
from nodecast.traces.op_classes import OpClass

#: NCCL's algorithms (tuning.cc's index order, ``NCCL_ALGO_*``) and ``p2p`` for send/receive and all-to-all.
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat", "p2p")
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT, P2P = range(len(ALGORITHMS))
#: NCCL's protocols (``NCCL_PROTO_*``).
PROTOCOLS = ("ll", "ll128", "simple")
LL, LL128, SIMPLE = range(len(PROTOCOLS))
#: Code of "not chosen / not recorded" in algorithm and protocol arrays.
NONE = -1

#: tuning.cc ``baseLat`` (µs), per algorithm {LL, LL128, Simple}: Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4},
#: CollNet, NVLS and NVLS tree 0. PAT has its own formula (8 + n x 2.8 µs; unused inside a node).
BASE_LAT_US = np.zeros((len(ALGORITHMS), len(PROTOCOLS)))
BASE_LAT_US[TREE] = (6.8, 14.0, 8.4)
BASE_LAT_US[RING] = (6.6, 14.0, 8.4)
BASE_LAT_US[P2P] = BASE_LAT_US[RING]  # nodecast: point-to-point as one ring step (module docstring)
#: tuning.cc ``hwLat`` (µs) per hardware class, algorithm and protocol: NVLink Tree {.6, 1.25, 4.0}, Ring
#: {.6, 1.9, 3.4}, CollNetDirect {0, 0, 3.7}, CollNetChain {0, 0, 2.8}, NVLS {0, 0, 25}, NVLSTree {0, 0, 25};
#: PCI Tree {1.0, 1.9, 4.0}, Ring {1.0, 2.5, 5.7}, CollNetDirect {0, 0, 3.7}, CollNetChain {0, 0, 2.8}, NVLS 0.
HW_LAT_US = np.zeros((2, len(ALGORITHMS), len(PROTOCOLS)))
HW_LAT_US[HW_NVLINK, TREE] = (0.6, 1.25, 4.0)
HW_LAT_US[HW_NVLINK, RING] = (0.6, 1.9, 3.4)
HW_LAT_US[HW_NVLINK, COLLNET_DIRECT] = (0, 0, 3.7)
HW_LAT_US[HW_NVLINK, COLLNET_CHAIN] = (0, 0, 2.8)
HW_LAT_US[HW_NVLINK, NVLS] = (0, 0, 25.0)
HW_LAT_US[HW_NVLINK, NVLS_TREE] = (0, 0, 25.0)
HW_LAT_US[HW_PCI, TREE] = (1.0, 1.9, 4.0)
HW_LAT_US[HW_PCI, RING] = (1.0, 2.5, 5.7)
HW_LAT_US[HW_PCI, COLLNET_DIRECT] = (0, 0, 3.7)
HW_LAT_US[HW_PCI, COLLNET_CHAIN] = (0, 0, 2.8)
HW_LAT_US[:, P2P] = HW_LAT_US[:, RING]
#: tuning.cc ``llMaxBws`` for one node (GB/s), by compute-capability index: Volta 39.0, Ampere 87.7, Hopper
#: 141.0, Blackwell 2 x 141.0.
LL_MAX_GBPS = {VOLTA: 39.0, AMPERE: 87.7, HOPPER: 141.0, BLACKWELL: 282.0}
#: tuning.cc's protocol and algorithm refinements of the bus bandwidth (see the module docstring).
RING_LL_FACTOR = 0.5
LL128_FACTOR = 0.92  # tuning.cc: "0.92 /*120.0/128.0*/": 120 of each 128-byte line carry data
TREE_FACTOR = 0.92
TREE_LL_FACTOR = 1 / 3.8
TREE_LL128_ONE_NODE = 7 / 9
TREE_PATTERN_FACTOR = 0.85  # Hopper and later search a plain TREE pattern (maxTreePattern == NCCL_TOPO_PATTERN_TREE)
TREE_ALGBW_RATIO = 0.5
NVLS_ALGBW_RATIO = 5 / 6
NVLS_GATHER_CAP = 0.9  # all_gather / reduce_scatter: min(bwIntra (n-1)/n, bwInter 0.9)
#: tuning.cc ``treeCorrectionFactor[protocol][log2(bytes / 64)]``, powers of two from 64 B to 256 MB.
TREE_CORRECTION = np.array([
    [1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0],
    [1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0],
    [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9],
])
#: NCCL_P2P_LL_THRESHOLD (enqueue.cc, default 16384): point-to-point sends of at most this many bytes use LL.
P2P_LL_THRESHOLD_BYTES = 16384

#: Threads per channel (src/include/device.h NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
#: NCCL_SIMPLE_MAX_NTHREADS 512; NVLS runs NCCL_MAX_NTHREADS 640) and the bytes each thread must have before
#: NCCL adds a channel (src/include/comm.h NCCL_LL_THREAD_THRESHOLD 8, NCCL_LL128_THREAD_THRESHOLD 8,
#: NCCL_SIMPLE_THREAD_THRESHOLD 64; ring LL's is multiplied by the ranks, tuning.cc).
MAX_THREADS = np.array([512, 640, 512])
NVLS_THREADS = 640
THREAD_THRESHOLD = np.array([8, 8, 64])

_RING_OPS = (OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER, OpClass.BROADCAST, OpClass.REDUCE)
_NVLS_OPS = (OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER)
_P2P_OPS = (OpClass.ALL_TO_ALL, OpClass.SEND_RECV)
#: The (algorithm, protocol) pairs NCCL's model compares for the collectives, in tuning.cc's order.
_CANDIDATES = ((TREE, LL), (TREE, LL128), (TREE, SIMPLE), (RING, LL), (RING, LL128), (RING, SIMPLE), (NVLS, SIMPLE))


@dataclass
class Choice:
    """Per row: the predicted time (s), the algorithm and protocol (codes into ``ALGORITHMS``/``PROTOCOLS``;
    ``NONE`` where the row is not modelled) and the two terms: latency (s) and the rate of the size term
    (bytes/s, nccl-tests' algbw at infinite size)."""

    time_s: np.ndarray
    algorithm: np.ndarray
    protocol: np.ndarray
    latency_s: np.ndarray
    rate_bps: np.ndarray


def channel_share(size: np.ndarray, channels: np.ndarray, threads: int, threshold: np.ndarray) -> np.ndarray:
    """The share of its channels and threads NCCL runs a collective of ``size`` bytes on (enqueue.cc,
    ``topoGetAlgoInfo``): it drops channels while size < channels x threads x threshold, then halves the threads
    of the last channel while they are a multiple of 128; the bandwidth scales with what is left."""
    per_channel = threads * threshold
    nc = np.clip(np.floor(size / per_channel), 1, channels)
    nt = np.full(np.shape(size), float(threads))
    for _ in range(4):  # 512 -> 256 -> 128 -> 64 at most
        halve = (nc == 1) & (size < nt * threshold) & (nt % 128 == 0)
        nt = np.where(halve, nt / 2, nt)
    return nc / channels * nt / threads


def _candidate(a: int, p: int, op: np.ndarray, size: np.ndarray, n: np.ndarray, fab: Fabric,
               bw_scale: float, nvls_channel_bps: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Latency (s), size-term rate (bytes/s) and availability of (a, p) per row (``n`` >= 2 everywhere)."""
    B = fab.ring_bps[n] * bw_scale
    hw = fab.hw[n]
    hw_lat = HW_LAT_US[hw, a, p]
    ll_max = LL_MAX_GBPS.get(fab.arch, np.inf) * 1e9 if fab.arch is not None else np.inf
    ok = np.isfinite(B) & (B > 0)
    if p == LL128:
        ok &= fab.ll128[n]
    if a == RING:
        ok &= np.isin(op, _RING_OPS)
        nsteps = np.where(op == OpClass.ALL_REDUCE, 2 * (n - 1),
                          np.where(np.isin(op, (OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER)), n - 1, n))
        bus = {LL: np.minimum(ll_max, B * RING_LL_FACTOR), LL128: B * LL128_FACTOR, SIMPLE: B}[p]
        rate = bus * n / np.maximum(nsteps, 1)
        thr = THREAD_THRESHOLD[p] * np.where(p == LL, n, 1)
        rate = rate * channel_share(size, fab.channels[n], int(MAX_THREADS[p]), thr)
        steps = np.where(np.isin(op, (OpClass.BROADCAST, OpClass.REDUCE)), 1, nsteps)
        lat = BASE_LAT_US[a, p] + steps * hw_lat
    elif a == TREE:
        ok &= op == OpClass.ALL_REDUCE
        bus = B * TREE_FACTOR
        if p == LL:
            bus = np.minimum(bus * TREE_LL_FACTOR, ll_max)
        elif p == LL128:
            bus = bus * TREE_LL128_ONE_NODE
        if fab.arch is not None and fab.arch >= HOPPER:
            bus = bus * TREE_PATTERN_FACTOR
        log_size = np.floor(np.log2(np.maximum(size, 64.0) / 64.0)).astype(np.int64)
        correction = np.where(log_size < TREE_CORRECTION.shape[1],
                              TREE_CORRECTION[p, np.minimum(log_size, TREE_CORRECTION.shape[1] - 1)], 1.0)
        rate = bus * TREE_ALGBW_RATIO * correction
        rate = rate * channel_share(size, fab.channels[n], int(MAX_THREADS[p]), THREAD_THRESHOLD[p])
        lat = BASE_LAT_US[a, p] + 2 * (n - 1) * hw_lat
    else:  # NVLS, Simple only (tuning.cc skips the other protocols)
        ok &= fab.nvls[n] & np.isin(op, _NVLS_OPS) & (p == SIMPLE)
        gather = np.minimum((n - 1) / n, NVLS_GATHER_CAP)
        # Data sheets: NVLS all-reduce at the GPU's NVLink bandwidth x 5/6; calibrated: a rate per NVLS channel.
        if nvls_channel_bps is None:
            reduce_rate = fab.ring_bps[n] * NVLS_ALGBW_RATIO
        else:
            reduce_rate = np.full(n.shape, fab.nvls_channels * nvls_channel_bps)
        rate = np.where(op == OpClass.ALL_REDUCE, reduce_rate, B * gather)
        rate = rate * channel_share(size, np.full(n.shape, max(fab.nvls_channels, 1)), NVLS_THREADS,
                                    THREAD_THRESHOLD[SIMPLE])
        lat = HW_LAT_US[HW_NVLINK, NVLS, SIMPLE] + 0 * n
    return lat * 1e-6, rate, ok


def _p2p(op: np.ndarray, size: np.ndarray, n: np.ndarray, fab: Fabric, bw_scale: float,
         protocol: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Send/receive and all-to-all: latency (s), rate (bytes/s of nccl-tests' size), protocol, availability."""
    a2a = op == OpClass.ALL_TO_ALL
    per_peer = np.where(a2a, size / n, size)
    p = np.where(per_peer <= P2P_LL_THRESHOLD_BYTES, LL, SIMPLE)
    if protocol is not None:
        p = np.where(np.isin(protocol, (LL, SIMPLE)), protocol, p)
    links = np.where(a2a, fab.alltoall_bps[n], fab.pair_bps) * bw_scale
    moved = np.where(a2a, (n - 1) / n, 1.0)  # all-to-all keeps 1/n of the buffer on its own GPU
    rate = links / moved * np.where(p == LL, RING_LL_FACTOR, 1.0)
    lat = BASE_LAT_US[P2P, p] + HW_LAT_US[fab.hw[n], P2P, p]
    ok = np.isin(op, _P2P_OPS) & np.isfinite(rate) & (rate > 0)
    return lat * 1e-6, rate, p, ok


@dataclass(frozen=True)
class Calibration:
    """Terms NCCL's model does not have, fitted on measurements (``benchmarks/bench_collectives.py``); the
    defaults leave the model as data sheets and NCCL's tables give it.

    ``bus_efficiency`` multiplies the ring, tree and point-to-point bandwidths; ``nvls_channel_bps`` replaces
    NVLS's all-reduce algbw by this rate per NVLS channel (``Fabric.nvls_channels``); ``latency_scale``
    multiplies every latency.
    """

    bus_efficiency: float = 1.0
    nvls_channel_bps: float | None = None
    latency_scale: float = 1.0


#: NCCL's model as its tables give it: no fitted term.
DATA_SHEETS = Calibration()


def predict(op: np.ndarray, size_bytes: np.ndarray, gpus: np.ndarray, fab: Fabric, *,
            algorithm: np.ndarray | None = None, protocol: np.ndarray | None = None,
            calibration: Calibration = DATA_SHEETS) -> Choice:
    """NCCL's choice and time for every row (``op``: ``OpClass`` codes, ``size_bytes``: nccl-tests' size,
    ``gpus``: group size n), on ``fab``.

    ``algorithm``/``protocol`` (codes into ``ALGORITHMS``/``PROTOCOLS``, ``NONE`` = not recorded): what a trace
    says NCCL ran; the cheapest pair that agrees with it is taken, and where none exists for the row (an
    algorithm this node lacks) the cheapest of all, as NCCL would choose. Rows that are not collectives, or whose
    group is smaller than 2 or larger than the node, get NaN and ``NONE``.
    """
    op = np.asarray(op, dtype=np.int16)
    size = np.asarray(size_bytes, dtype=np.float64)
    g = np.asarray(gpus, dtype=np.int64)
    rows = op.size
    valid = (g >= 2) & (g <= fab.gpus) & np.isin(op, _RING_OPS + _P2P_OPS) & np.isfinite(size) & (size >= 0)
    algo = np.full(rows, NONE, dtype=np.int8)
    proto = np.full(rows, NONE, dtype=np.int8)
    if fab.gpus < 2 or not valid.any():
        return Choice(np.full(rows, np.nan), algo, proto, np.full(rows, np.nan), np.full(rows, np.nan))
    n = np.where(valid, g, 2)
    cal = calibration
    none = np.full(rows, NONE)
    want_a = none if algorithm is None else np.asarray(algorithm)
    want_p = none if protocol is None else np.asarray(protocol)
    k = len(_CANDIDATES)
    lat, rate, ok, agrees = (np.empty((k, rows)) for _ in range(4))
    for c, (a, p) in enumerate(_CANDIDATES):
        lat[c], rate[c], ok[c] = _candidate(a, p, op, size, n, fab, cal.bus_efficiency, cal.nvls_channel_bps)
        agrees[c] = ((want_a == NONE) | (want_a == a)) & ((want_p == NONE) | (want_p == p))
    ok = ok.astype(bool) & valid
    lat *= cal.latency_scale
    time = np.where(ok, lat + size / np.where(ok, rate, 1.0), np.inf)
    # What the trace recorded narrows the choice where it can; NCCL's own choice (the cheapest) decides the rest.
    narrowed = ok & agrees.astype(bool)
    time = np.where(narrowed.any(axis=0), np.where(narrowed, time, np.inf), time)
    best = np.argmin(time, axis=0)
    cols = np.arange(rows)
    chosen = np.isfinite(time[best, cols])
    algo = np.where(chosen, np.array([a for a, _ in _CANDIDATES])[best], NONE).astype(np.int8)
    proto = np.where(chosen, np.array([p for _, p in _CANDIDATES])[best], NONE).astype(np.int8)
    t_out = np.where(chosen, time[best, cols], np.nan)
    lat_out = np.where(chosen, lat[best, cols], np.nan)
    rate_out = np.where(chosen, rate[best, cols], np.nan)
    p_lat, p_rate, p_proto, p_ok = _p2p(op, size, n, fab, cal.bus_efficiency, protocol)
    p_ok &= valid
    p_lat = p_lat * cal.latency_scale
    t_out = np.where(p_ok, p_lat + size / np.where(p_ok, p_rate, 1.0), t_out)
    algo = np.where(p_ok, P2P, algo).astype(np.int8)
    proto = np.where(p_ok, p_proto, proto).astype(np.int8)
    lat_out = np.where(p_ok, p_lat, lat_out)
    rate_out = np.where(p_ok, p_rate, rate_out)
    return Choice(t_out, algo, proto, lat_out, rate_out)
