"""The calibration plan: which benchmark cases run, with stable names, sizes and budgets.

A *family* is one kind of measurement (Comm|Scope's families, with their
names: ``cudaMemcpyAsync_PinnedToGPU``, ``UM_Prefetch_HostToGPU``...; plus
nodecast's GPU roofline families). A *case* is a family placed on the node:
a NUMA node and a GPU (host families), one GPU, or an ordered pair of GPUs.
A *point* is a case at one size. Benchmark names follow Comm|Scope's
Google-Benchmark names (../shared/reference/MEASUREMENT.md B.1)::

    Comm_cudaMemcpyAsync_PinnedToGPU_flush/<numa>/<gpu>/<log2 bytes>
    Comm_cudaMemcpyAsync_GPUToGPUPeer/<src gpu>/<dst gpu>/<log2 bytes>
    Nodecast_GPU_Peak_FMA_fp32/<gpu>
    Nodecast_GPU_Bandwidth_L2/<gpu>

``_flush`` marks cases whose host buffer is evicted from the CPU caches
before every repetition, as in Comm|Scope, where the name without ``_flush``
means a hot cache. Everything here is pure: the node is described by a
``Topology`` that ``nodecast.calibrate.cuda`` and ``host`` fill in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from nodecast.calibrate.stats import Budget
from nodecast.errors import InputError

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

#: The default sweep: 1 B to 1 GiB in powers of two.
DEFAULT_MIN_BYTES = 1
DEFAULT_MAX_BYTES = GIB
#: Sizes of ``--quick`` (every third power of two, then the large sizes the fit needs).
QUICK_SIZES = (1, 8, 64, 512, 4 * KIB, 32 * KIB, 256 * KIB, 1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB)
#: Fraction of a GPU's free memory a point may use (the rest: context, modules, other buffers).
DEVICE_HEADROOM = 0.9
#: Fraction of the host's MemAvailable a point may pin or touch.
HOST_HEADROOM = 0.5

#: Largest size a user may ask for (1 PiB): above any GPU's or host's memory, so surely a unit mistake.
MAX_BYTES_LIMIT = 1 << 50
#: Longest measured time per point ``--budget-s`` accepts (an hour; Comm|Scope uses 1 s).
MAX_BUDGET_S = 3600.0

#: Budgets per point. Comm|Scope uses >= 1 s of measured time; the default here is a quarter of that
#: (``--budget-s 1`` reproduces Comm|Scope's), ``--quick`` a fiftieth.
DEFAULT_BUDGET = Budget(measured_s=0.25, min_reps=5, max_reps=100_000, wall_s=2.0, warmup_reps=1)
QUICK_BUDGET = Budget(measured_s=0.02, min_reps=3, max_reps=1_000, wall_s=0.25, warmup_reps=1)

#: Placement scopes of a family.
SCOPES = ("host", "gpu", "pair", "duplex-pair")


@dataclass(frozen=True)
class Family:
    """One kind of measurement.

    ``op`` selects the measuring code (``nodecast.calibrate.transfers`` /
    ``gpu_peaks``); ``host_mem`` is the host allocation (``pageable``,
    ``registered`` = cudaHostRegister, ``hostalloc`` = cudaHostAlloc,
    ``mapped`` = mapped cudaHostAlloc, ``managed`` = cudaMallocManaged);
    ``timing`` is ``event`` (CUDA events around asynchronous work) or
    ``host`` (host clock around host-synchronous work); ``klass`` is the
    machine-file copy class the family can feed; ``work`` is ``bytes`` or
    ``flops`` (what one repetition does); ``min_bytes`` the smallest size that
    means anything for the family.
    """

    key: str
    prefix: str
    scope: str
    op: str
    description: str
    timing: str = "event"
    host_mem: str | None = None
    klass: str | None = None
    min_bytes: int = 1
    sized: bool = True
    work: str = "bytes"
    precision: str | None = None
    level: str | None = None
    peer: bool | None = None

    @property
    def flushable(self) -> bool:
        """Whether the family touches host memory the CPU caches may hold."""
        return self.host_mem is not None


def _f(*args: str, **kw: object) -> Family:
    return Family(*args, **kw)  # type: ignore[arg-type]


#: Every family, in the order cases run. ``klass`` names the MEASURED_CLASSES key it feeds.
FAMILIES: tuple[Family, ...] = (
    # explicit copies between host and GPU (Comm|Scope section 3.2)
    _f("cudaMemcpyAsync_HostToGPU", "Comm", "host", "memcpy", "cudaMemcpyAsync pageable (malloc-like) host -> GPU",
       host_mem="pageable", klass="htod_pageable"),
    _f("cudaMemcpyAsync_GPUToHost", "Comm", "host", "memcpy", "cudaMemcpyAsync GPU -> pageable host",
       host_mem="pageable", klass="dtoh_pageable"),
    _f("cudaMemcpyAsync_PinnedToGPU", "Comm", "host", "memcpy",
       "cudaMemcpyAsync pinned host (page-aligned buffer + cudaHostRegister, as Comm|Scope) -> GPU",
       host_mem="registered", klass="htod_pinned"),
    _f("cudaMemcpyAsync_GPUToPinned", "Comm", "host", "memcpy",
       "cudaMemcpyAsync GPU -> pinned host (cudaHostRegister)", host_mem="registered", klass="dtoh_pinned"),
    _f("cudaMemcpyAsync_HostAllocToGPU", "Nodecast", "host", "memcpy",
       "cudaMemcpyAsync pinned host (cudaHostAlloc) -> GPU", host_mem="hostalloc"),
    _f("cudaMemcpyAsync_GPUToHostAlloc", "Nodecast", "host", "memcpy",
       "cudaMemcpyAsync GPU -> pinned host (cudaHostAlloc)", host_mem="hostalloc"),
    _f("cudaMemcpyAsync_Duplex_Host", "Comm", "host", "memcpy_duplex",
       "host -> GPU and GPU -> host at once, pageable host memory, one stream each; time from first start to last end",
       host_mem="pageable"),
    _f("cudaMemcpyAsync_Duplex_Pinned", "Comm", "host", "memcpy_duplex",
       "host -> GPU and GPU -> host at once, pinned host memory (cudaHostRegister), one stream each",
       host_mem="registered"),
    # zero-copy (Comm|Scope section 3.3): a 256x256-thread kernel reads or writes 4-byte words of mapped host memory
    _f("ZeroCopy_HostToGPU", "Comm", "host", "zerocopy_read",
       "a kernel reads mapped pinned host memory (4-byte words, 256 blocks x 256 threads)",
       host_mem="mapped", min_bytes=4),
    _f("ZeroCopy_GPUToHost", "Comm", "host", "zerocopy_write",
       "a kernel writes mapped pinned host memory (4-byte words, 256 blocks x 256 threads)",
       host_mem="mapped", min_bytes=4),
    # unified memory (Comm|Scope section 3.4)
    _f("UM_Demand_HostToGPU", "Comm", "host", "um_demand_htod",
       "pages on the host; a kernel (one warp per page) writes one byte per page: demand migration to the GPU",
       host_mem="managed", min_bytes=4 * KIB),
    _f("UM_Demand_GPUToHost", "Comm", "host", "um_demand_dtoh",
       "pages on the GPU; one CPU thread writes one byte per page (host clock)",
       host_mem="managed", min_bytes=4 * KIB, timing="host"),
    _f("UM_Demand_GPUToHostMt", "Comm", "host", "um_demand_dtoh_mt",
       "pages on the GPU; one CPU thread per core of the NUMA node (at most 32) writes one byte per page (host clock)",
       host_mem="managed", min_bytes=4 * KIB, timing="host"),
    _f("UM_Prefetch_HostToGPU", "Comm", "host", "um_prefetch_htod",
       "cudaMemPrefetchAsync of host-resident managed pages to the GPU", host_mem="managed",
       klass="htod_managed", min_bytes=4 * KIB),
    _f("UM_Prefetch_GPUToHost", "Comm", "host", "um_prefetch_dtoh",
       "cudaMemPrefetchAsync of GPU-resident managed pages to the host", host_mem="managed",
       klass="dtoh_managed", min_bytes=4 * KIB),
    # copies inside one GPU and between GPUs
    _f("cudaMemcpyAsync_GPUToGPU", "Comm", "gpu", "memcpy_dtod",
       "cudaMemcpyAsync device -> device within one GPU", klass="dtod"),
    _f("cudaMemcpyAsync_GPUToGPU", "Comm", "pair", "memcpy_peer",
       "cudaMemcpyAsync between two GPUs with peer access disabled (staged through the host)",
       klass="peer", peer=False),
    _f("cudaMemcpyAsync_GPUToGPUPeer", "Comm", "pair", "memcpy_peer",
       "cudaMemcpyAsync between two GPUs with peer access enabled", klass="peer", peer=True),
    _f("cudaMemcpyAsync_Duplex_GPUGPU", "Comm", "duplex-pair", "memcpy_peer_duplex",
       "both directions between two GPUs at once, peer access disabled (host clock: events of two GPUs do not compare)",
       timing="host", peer=False),
    _f("cudaMemcpyAsync_Duplex_GPUGPUPeer", "Comm", "duplex-pair", "memcpy_peer_duplex",
       "both directions between two GPUs at once, peer access enabled (host clock)", timing="host", peer=True),
    # the GPU itself, for the roofline model
    *(_f(f"GPU_Peak_FMA_{p}", "Nodecast", "gpu", "peak_fma", f"{p.upper()} FMA throughput (an FMA = 2 FLOP)",
         sized=False, work="flops", precision=p) for p in ("fp64", "fp32", "fp16", "bf16")),
    *(_f(f"GPU_Peak_AddMul_{p}", "Nodecast", "gpu", "peak_addmul",
         f"{p.upper()} ADD and MUL throughput (1 FLOP each; no FMA contraction)",
         sized=False, work="flops", precision=p) for p in ("fp64", "fp32", "fp16", "bf16")),
    *(_f(f"GPU_Bandwidth_{name}", "Nodecast", "gpu", "level", f"STREAM-like read bandwidth of {name} ({how})",
         sized=False, level=level) for name, level, how in (
        ("DRAM", "dram", "ld.global.cg float4 loads over a buffer 4x the L2, at least 256 MiB"),
        ("L2", "l2", "ld.global.cg loads repeated over a buffer a quarter of the L2"),
        ("L1", "l1", "ld.global.ca loads repeated over an 8 KiB slice per block"),
        ("Shared", "shared", "conflict-free 4-byte shared-memory loads, consecutive threads on consecutive words"),
    )),
)


def family(key: str, scope: str | None = None) -> Family:
    """The family named ``key`` (and ``scope`` where the key is used twice)."""
    for fam in FAMILIES:
        if fam.key == key and (scope is None or fam.scope == scope):
            return fam
    msg = f"no family {key!r}"
    raise KeyError(msg)


# -- the node, as the plan needs it ------------------------------------------------------


@dataclass(frozen=True)
class GPUInfo:
    """One CUDA device as the plan needs it (filled by ``nodecast.calibrate.cuda``).

    ``numa_node`` is the host NUMA node the GPU's PCI device reports (None:
    unknown). ``cc`` is the compute capability as (major, minor).
    """

    index: int
    name: str
    cc: tuple[int, int]
    total_bytes: int
    free_bytes: int
    sms: int = 1
    l2_bytes: int = 0
    bus_id: str = ""
    numa_node: int | None = None
    can_map_host: bool = True
    managed: bool = True
    concurrent_managed: bool = True


@dataclass(frozen=True)
class NumaNode:
    """A host NUMA node: its id, CPUs and memory (bytes)."""

    id: int
    cpus: tuple[int, ...]
    memory_bytes: int = 0


@dataclass(frozen=True)
class Topology:
    """The node: GPUs, NUMA nodes, which GPU pairs can use peer access, host memory available."""

    gpus: tuple[GPUInfo, ...]
    numa_nodes: tuple[NumaNode, ...]
    peer: frozenset[tuple[int, int]] = frozenset()
    host_available_bytes: int = 0
    page_bytes: int = 4096


@dataclass(frozen=True)
class Options:
    """What the user asked for.

    ``gpus`` None means every GPU; ``max_bytes_given`` says whether the
    largest size came from the user (then a size that does not fit is an
    error) or is the default (then sizes that do not fit are left out with a
    note). ``families`` filters by name prefix (``cudaMemcpyAsync``,
    ``UM_``, ``GPU_Peak``...). ``numa`` is ``local`` (each GPU's own NUMA
    node) or ``all``.
    """

    gpus: tuple[int, ...] | None = None
    quick: bool = False
    min_bytes: int = DEFAULT_MIN_BYTES
    max_bytes: int = DEFAULT_MAX_BYTES
    max_bytes_given: bool = False
    families: tuple[str, ...] = ()
    numa: str = "all"
    flush: bool = True
    budget: Budget | None = None

    @property
    def effective_budget(self) -> Budget:
        """The budget given, else the default for the mode."""
        if self.budget is not None:
            return self.budget
        return QUICK_BUDGET if self.quick else DEFAULT_BUDGET


@dataclass(frozen=True)
class Case:
    """A family placed on the node, with its sizes.

    ``gpu`` is the GPU the work runs on (the source GPU of a pair), ``gpu2``
    the other GPU of a pair, ``numa`` the NUMA node of host memory and
    threads (None: not NUMA-bound).
    """

    family: Family
    gpu: int
    gpu2: int | None = None
    numa: int | None = None
    flush: bool = False
    sizes_bytes: tuple[int, ...] = (0,)

    @property
    def prefix(self) -> str:
        """``Comm_cudaMemcpyAsync_PinnedToGPU_flush``: the name without arguments."""
        base = f"{self.family.prefix}_{self.family.key}"
        return f"{base}_flush" if self.flush else base

    @property
    def args(self) -> tuple[int, ...]:
        """Google-Benchmark arguments before the size: (numa, gpu), (gpu, gpu2) or (gpu,)."""
        if self.family.scope == "host":
            return (self.numa if self.numa is not None else 0, self.gpu)
        if self.family.scope in ("pair", "duplex-pair"):
            return (self.gpu, self.gpu2)  # type: ignore[return-value]
        if self.family.sized:
            return (self.gpu, self.gpu)
        return (self.gpu,)

    def name(self, size_bytes: int) -> str:
        """``<prefix>/<args>/<log2 size>`` (no size for unsized families)."""
        parts = [self.prefix, *(str(a) for a in self.args)]
        if self.family.sized:
            parts.append(str(size_bytes.bit_length() - 1))
        return "/".join(parts)

    @property
    def family_name(self) -> str:
        """The name without the size: one curve per family name."""
        return "/".join([self.prefix, *(str(a) for a in self.args)])


@dataclass(frozen=True)
class Waived:
    """A case that cannot run on this node, and why (nvbandwidth's "Waived")."""

    family: str
    where: str
    reason: str


@dataclass(frozen=True)
class Plan:
    """The cases to run, those waived, and notes (sizes left out...)."""

    cases: tuple[Case, ...]
    waived: tuple[Waived, ...] = ()
    notes: tuple[str, ...] = ()
    budget: Budget = field(default=DEFAULT_BUDGET)

    @property
    def points(self) -> int:
        """Number of (case, size) points."""
        return sum(len(c.sizes_bytes) for c in self.cases)


# -- memory needs ------------------------------------------------------------------------


def memory_needed(fam: Family, n: int) -> tuple[int, int, int]:
    """(bytes on the GPU, bytes on the other GPU of a pair, bytes of host memory) one point of size n uses."""
    host = 0
    dev = dev2 = 0
    if fam.op in ("memcpy", "zerocopy_read", "zerocopy_write"):
        dev = n if fam.op == "memcpy" else 0
        host = n
    elif fam.op == "memcpy_duplex":
        dev, host = 2 * n, 2 * n
    elif fam.op.startswith("um_"):
        dev, host = n, n  # managed pages live on one side at a time; count both
    elif fam.op == "memcpy_dtod":
        dev = 2 * n
    elif fam.op == "memcpy_peer":
        dev, dev2 = n, n
    elif fam.op == "memcpy_peer_duplex":
        dev, dev2 = 2 * n, 2 * n
    return dev, dev2, host


def _fits(fam: Family, n: int, gpu: GPUInfo, gpu2: GPUInfo | None, topo: Topology) -> str | None:
    """None when a point fits, else the reason."""
    dev, dev2, host = memory_needed(fam, n)
    if dev > DEVICE_HEADROOM * gpu.free_bytes:
        return f"needs {_size(dev)} on GPU {gpu.index}, which has {_size(gpu.free_bytes)} free"
    if gpu2 is not None and dev2 > DEVICE_HEADROOM * gpu2.free_bytes:
        return f"needs {_size(dev2)} on GPU {gpu2.index}, which has {_size(gpu2.free_bytes)} free"
    if host and topo.host_available_bytes and host > HOST_HEADROOM * topo.host_available_bytes:
        return f"needs {_size(host)} of host memory, {_size(topo.host_available_bytes)} available"
    return None


def _size(n: float) -> str:
    """Bytes in binary units, for messages (``1 GiB``, ``512 B``)."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def parse_size(text: str, *, key: str) -> int:
    """``4096``, ``64KiB``, ``1MiB``, ``1GiB``, ``2^20`` -> bytes (a positive integer)."""
    t = text.strip().replace(" ", "")
    units = {"kib": KIB, "mib": MIB, "gib": GIB, "k": KIB, "m": MIB, "g": GIB, "b": 1, "": 1}
    try:
        if t.startswith("2^"):
            exponent = int(t[2:])
            value = 1 << exponent if 0 <= exponent <= 64 else (0 if exponent < 0 else MAX_BYTES_LIMIT + 1)
        else:
            i = len(t)
            while i and not t[i - 1].isdigit():
                i -= 1
            unit = t[i:].lower()
            if unit not in units:
                raise ValueError(unit)
            value = int(t[:i]) * units[unit]
    except (ValueError, OverflowError):
        raise InputError(f"not a size: {text!r}", key=key, hint="Write bytes like 4096, 64KiB, 1MiB, 1GiB or 2^20") from None
    if value <= 0:
        raise InputError(f"size must be positive (got {text!r})", key=key)
    if value > MAX_BYTES_LIMIT:
        raise InputError(f"size {text!r} is above 1 PiB (2^50 B)", key=key, hint="Check the unit: sizes are bytes")
    return value


def check_options(opts: Options) -> None:
    """Raise InputError for options that are wrong on any node (sizes, filters); no GPU needed.

    Called by the command before it opens a GPU session, so that option
    mistakes are reported before a missing driver or device, and by
    ``build_plan``.
    """
    if opts.min_bytes > opts.max_bytes:
        raise InputError(f"smallest size {_size(opts.min_bytes)} is above the largest {_size(opts.max_bytes)}",
                         key="--min-size")
    if opts.families and not any(_wanted(f, opts.families) for f in FAMILIES):
        keys = ", ".join(sorted({f.key for f in FAMILIES}))
        raise InputError(f"no benchmark family starts with {', '.join(opts.families)}", key="--only",
                         hint=f"Families: {keys}")
    if opts.gpus is not None:
        negative = [g for g in opts.gpus if g < 0]
        if negative:
            raise InputError(f"GPU index {negative[0]} is negative", key="--gpus",
                             hint="Indices are CUDA device numbers 0, 1, ... as CUDA_VISIBLE_DEVICES leaves them")
        if len(set(opts.gpus)) != len(opts.gpus):
            raise InputError(f"a GPU is listed twice ({', '.join(map(str, opts.gpus))})", key="--gpus")


def sweep(min_bytes: int, max_bytes: int) -> tuple[int, ...]:
    """Powers of two from the first >= ``min_bytes`` to the last <= ``max_bytes``."""
    out = []
    p = 1
    while p < min_bytes:
        p <<= 1
    while p <= max_bytes:
        out.append(p)
        p <<= 1
    return tuple(out)


# -- building the plan -------------------------------------------------------------------


def _waive(fam: Family, gpu: GPUInfo, topo: Topology, gpu2: GPUInfo | None = None) -> str | None:
    """Why a family cannot run on ``gpu`` (None: it can)."""
    if fam.host_mem == "mapped" and not gpu.can_map_host:
        return "the GPU cannot map host memory (canMapHostMemory = 0)"
    if fam.host_mem == "managed":
        if not gpu.managed:
            return "the GPU does not support managed memory"
        if not gpu.concurrent_managed:
            return "no concurrent managed access (cudaMemPrefetchAsync and demand paging need it; pre-Pascal GPU or Windows)"
    if fam.precision == "fp16" and gpu.cc < (5, 3):
        return f"FP16 arithmetic needs compute capability >= 5.3 (GPU {gpu.index} has {gpu.cc[0]}.{gpu.cc[1]})"
    if fam.precision == "bf16" and gpu.cc < (8, 0):
        return f"BF16 arithmetic needs compute capability >= 8.0 (GPU {gpu.index} has {gpu.cc[0]}.{gpu.cc[1]})"
    if fam.peer and gpu2 is not None and (gpu.index, gpu2.index) not in topo.peer:
        return f"GPU {gpu.index} cannot access GPU {gpu2.index} as a peer (cudaDeviceCanAccessPeer = 0)"
    return None


def _selected_gpus(topo: Topology, opts: Options) -> list[GPUInfo]:
    count = len(topo.gpus)
    if opts.gpus is None:
        chosen = list(topo.gpus)
    else:
        known = ", ".join(str(g.index) for g in topo.gpus) or "none"
        for g in opts.gpus:
            if not 0 <= g < count:
                raise InputError(
                    f"unknown GPU index {g} (this node has {count} GPU{'s' if count != 1 else ''}: {known})",
                    key="--gpus",
                    hint="Indices are CUDA device numbers as CUDA_VISIBLE_DEVICES leaves them",
                )
        if len(set(opts.gpus)) != len(opts.gpus):
            raise InputError(f"a GPU is listed twice ({', '.join(map(str, opts.gpus))})", key="--gpus")
        chosen = [topo.gpus[g] for g in opts.gpus]
    if not chosen:
        raise InputError("no GPU to calibrate", key="--gpus")
    return chosen


def _numa_for(gpu: GPUInfo, topo: Topology, opts: Options) -> list[int | None]:
    """NUMA nodes whose memory the host families of ``gpu`` use (the GPU's own node first)."""
    nodes = [n.id for n in topo.numa_nodes if n.cpus]
    if len(nodes) <= 1:
        return [nodes[0] if nodes else None]
    local = gpu.numa_node if gpu.numa_node in nodes else nodes[0]
    if opts.numa == "local" or opts.quick:
        return [local]
    return [local, *(n for n in nodes if n != local)]


def _wanted(fam: Family, prefixes: Sequence[str]) -> bool:
    if not prefixes:
        return True
    names = (fam.key, f"{fam.prefix}_{fam.key}")
    return any(name.startswith(p) for p in prefixes for name in names)


def build_plan(topo: Topology, opts: Options) -> Plan:
    """The cases to run on ``topo`` for ``opts``.

    Raises InputError for an unknown GPU index, a filter that matches no
    family, and (when the user gave the largest size) a size that does not
    fit in a GPU's free memory or the host's available memory.
    """
    check_options(opts)
    gpus = _selected_gpus(topo, opts)
    if opts.quick:
        gpus = gpus[:2]  # the first GPU measures everything; the second only serves the pair families
    base_sizes = sweep(opts.min_bytes, opts.max_bytes)
    if opts.quick:
        base_sizes = tuple(s for s in QUICK_SIZES if opts.min_bytes <= s <= opts.max_bytes) or base_sizes
    cases: list[Case] = []
    waived: list[Waived] = []
    notes: list[str] = []

    def sized(fam: Family, gpu: GPUInfo, gpu2: GPUInfo | None, where: str) -> tuple[int, ...]:
        sizes = [s for s in base_sizes if s >= max(fam.min_bytes, 1)]
        if not sizes and opts.max_bytes >= fam.min_bytes:
            sizes = [fam.min_bytes]
        kept = []
        for s in sizes:
            reason = _fits(fam, s, gpu, gpu2, topo)
            if reason is None:
                kept.append(s)
                continue
            if opts.max_bytes_given:
                raise InputError(
                    f"size {_size(s)} does not fit for {fam.prefix}_{fam.key} on {where}: {reason}",
                    key="--max-size",
                    hint="Choose a smaller --max-size",
                )
            notes.append(f"{fam.prefix}_{fam.key} on {where}: sizes from {_size(s)} left out ({reason})")
            break
        return tuple(kept)

    measured_gpus = gpus[:1] if opts.quick else gpus
    for gpu in measured_gpus:
        for numa in _numa_for(gpu, topo, opts):
            for fam in FAMILIES:
                if fam.scope != "host" or not _wanted(fam, opts.families):
                    continue
                where = f"GPU {gpu.index}" + (f", NUMA node {numa}" if numa is not None else "")
                reason = _waive(fam, gpu, topo)
                if reason:
                    waived.append(Waived(f"{fam.prefix}_{fam.key}", where, reason))
                    continue
                sizes = sized(fam, gpu, None, where)
                if sizes:
                    cases.append(Case(fam, gpu.index, None, numa, opts.flush and fam.flushable, sizes))
        for fam in FAMILIES:
            if fam.scope != "gpu" or not _wanted(fam, opts.families):
                continue
            where = f"GPU {gpu.index}"
            reason = _waive(fam, gpu, topo)
            if reason:
                waived.append(Waived(f"{fam.prefix}_{fam.key}", where, reason))
                continue
            sizes = sized(fam, gpu, None, where) if fam.sized else (0,)
            if sizes:
                cases.append(Case(fam, gpu.index, None, None, False, sizes))
    pairs = _pairs(gpus, quick=opts.quick)
    for fam in FAMILIES:
        if fam.scope not in ("pair", "duplex-pair") or not _wanted(fam, opts.families):
            continue
        for a, b in pairs:
            if fam.scope == "duplex-pair" and a.index > b.index:
                continue
            where = f"GPU {a.index} -> GPU {b.index}"
            reason = _waive(fam, a, topo, b)
            if reason:
                waived.append(Waived(f"{fam.prefix}_{fam.key}", where, reason))
                continue
            sizes = sized(fam, a, b, where)
            if sizes:
                cases.append(Case(fam, a.index, b.index, None, False, sizes))
    if len(gpus) < 2 and any(f.scope in ("pair", "duplex-pair") and _wanted(f, opts.families) for f in FAMILIES):
        notes.append("one GPU selected: no GPU-to-GPU cases")
    if len([n for n in topo.numa_nodes if n.cpus]) > 1 and (opts.numa == "local" or opts.quick):
        notes.append("several NUMA nodes but only each GPU's own node measured (--numa local or --quick)")
    return Plan(tuple(cases), tuple(waived), tuple(notes), opts.effective_budget)


def _pairs(gpus: Sequence[GPUInfo], *, quick: bool) -> list[tuple[GPUInfo, GPUInfo]]:
    """Ordered GPU pairs; --quick keeps (first, second) and its reverse."""
    pairs = [(a, b) for a in gpus for b in gpus if a.index != b.index]
    if quick:
        pairs = pairs[:1] + [(b, a) for a, b in pairs[:1]]
    return pairs


def describe_families(prefixes: Iterable[str] = ()) -> list[tuple[str, str, str, str]]:
    """(name, scope, class fed, description) of every family, for ``nodecast calibrate --list``."""
    prefixes = tuple(prefixes)
    return [(f"{f.prefix}_{f.key}", f.scope, f.klass or "", f.description) for f in FAMILIES if _wanted(f, prefixes)]


def with_budget(plan: Plan, budget: Budget) -> Plan:
    """The same plan with another budget."""
    return replace(plan, budget=budget)
