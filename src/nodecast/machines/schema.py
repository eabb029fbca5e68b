"""The Machine vocabulary: one schema for every compute node.

A Machine is a graph. Its endpoints are CPU sockets (``cpu0``, ``cpu1``...),
GPUs (``gpu0``...) and optional switches (PCIe switches, NVSwitch); its edges
are Links. Routes between endpoints follow the fewest links, so topology and
sharing (two GPUs behind one PCIe switch share its uplink) come from the graph
itself, not from flags.

Units are SI throughout: bytes, seconds, Hz, bytes/s (per direction), FLOP/s.
Data-sheet values live in the machine file with their source beside them;
``Measured`` values (written by ``nodecast calibrate`` or taken from a
published measurement) override data-sheet values where both exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

# CPU is defined beside Host (each names the other), Link and Switch beside the routes through links; all are part
# of this vocabulary (Machine.cpu, Machine.links, Machine.switch_specs).
from nodecast.machines.parts import CPU, GpuSheet, TargetLimits
from nodecast.machines.topology import Link, Switch, bottleneck, route

#: Floating-point precisions for which a GPU may list compute peaks.
PRECISIONS = ("fp64", "fp32", "fp16", "bf16")
#: GPU memory levels of the hierarchical roofline, outermost first.
MEMORY_LEVELS = ("dram", "l2", "l1", "shared")
#: Link kinds nodecast models. ``socket-bus`` is an inter-socket bus (X-Bus,
#: UPI, Infinity Fabric) given by its bandwidth alone; ``xgmi`` an AMD Infinity
#: Fabric link between GPUs (MI200/MI300 platforms), given by its generation and
#: links like NVLink (``nodecast.machines.topology.XGMI_BPS_PER_LINK``).
LINK_KINDS = ("pcie", "nvlink", "nvlink-c2c", "socket-bus", "xgmi")
#: Copy classes a measured 1-byte cost or bandwidth may be given for; see
#: ``nodecast.traces.kinds.TransferClass``.
MEASURED_CLASSES = (
    "htod_pageable",
    "htod_pinned",
    "dtoh_pageable",
    "dtoh_pinned",
    "dtod",
    "peer",
    "htod_managed",
    "dtoh_managed",
    "htoh",
)


@dataclass(frozen=True)
class PeakFlops:
    """Compute peaks of one precision in FLOP/s, an FMA counting as 2 FLOP.

    ``fma`` is the peak when every instruction is an FMA; ``addmul`` the peak
    when every instruction is an ADD or a MUL (usually half of ``fma``). These
    are the two terms of the roofline paper's eq. 2.
    """

    fma: float
    addmul: float


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the GPU memory hierarchy: bandwidth (bytes/s) and size (bytes)."""

    bandwidth_bps: float | None = None
    size_bytes: float | None = None


#: Plausibility bounds of a GPU's copy engines (CUDA asyncEngineCount; TITAN V reports 7) and resident grids per
#: device (128 on every compute capability since 7.5): a larger value is a typo.
MAX_COPY_ENGINES = 64
MAX_CONCURRENT_KERNELS = 4096


@dataclass(frozen=True)
class GPU:
    """The GPUs of a node (nodes are homogeneous: ``count`` GPUs of one model).

    ``cpu_socket[i]`` is the socket GPU ``i`` is attached to (its NUMA home).
    ``sheet`` is the GPU's data sheet when the machine names one (``[gpu]
    sheet = KEY``) or was composed from one; ``limits`` its target's per-SM
    limits. Both are None for a machine file that gives its GPU by hand.
    ``copy_engines`` (CUDA's asyncEngineCount: 1 = one copy engine for both
    directions, 2 or more = copies in both directions at once) and
    ``max_concurrent_kernels`` (resident grids per device) come from the sheet
    or the machine file; None when neither gives them (the replay then keeps
    the trace's copy engines and runs kernels of different streams
    concurrently without limit).
    """

    model: str
    count: int
    sms: int
    clock_hz: float
    memory_bytes: float
    cpu_socket: tuple[int, ...]
    peak_flops: dict[str, PeakFlops] = field(default_factory=dict)
    levels: dict[str, MemoryLevel] = field(default_factory=dict)
    sheet: GpuSheet | None = field(default=None, compare=False)
    copy_engines: int | None = None
    max_concurrent_kernels: int | None = None

    @property
    def dram_bandwidth_bps(self) -> float:
        """Data-sheet DRAM (HBM/GDDR) bandwidth in bytes/s."""
        return self.levels["dram"].bandwidth_bps  # type: ignore[return-value]

    @property
    def limits(self) -> TargetLimits | None:
        """Per-SM limits (threads, blocks, registers, shared memory, warp size) of the sheet's target, or None."""
        return None if self.sheet is None else self.sheet.limits

    def peak_flops_per_s(self, precision: str) -> float | None:
        """Peak FLOP/s of ``precision`` (FMA counting 2): the machine's own where it gives one, else the sheet's.

        ``precision`` is a sheet peak key (``fp32``, ``bf16_tensor``...;
        ``nodecast.machines.parts.PEAK_KEYS``); None when neither knows it.
        """
        own = self.peak_flops.get(precision)
        if own is not None:
            return own.fma
        return None if self.sheet is None else self.sheet.peak(precision)


@dataclass(frozen=True)
class Curve:
    """A measured effective-bandwidth curve: sizes (bytes) and bandwidths (bytes/s)."""

    sizes_bytes: tuple[float, ...]
    bandwidth_bps: tuple[float, ...]


@dataclass(frozen=True)
class Measured:
    """Values measured on the real node (or quoted from a published measurement).

    ``origin`` says where they come from (``nodecast calibrate 0.1.0``, a paper
    table...). Transfer values are keyed by copy class (``MEASURED_CLASSES``).
    GPU values (``gpu_peak_flops``, ``gpu_level_bandwidth_bps``) are measured
    maxima used by the roofline model in place of data-sheet peaks.
    ``host_copy_bandwidth_bps`` is one host thread's memcpy rate (bytes
    copied per second; see ``CPU.copy_bandwidth_bps``), measured by
    ``nodecast calibrate``; ``facts["host_copy"]`` says how.
    """

    origin: str
    date: str | None = None
    driver: str | None = None
    gpu_name: str | None = None
    one_byte_s: dict[str, float] = field(default_factory=dict)
    bandwidth_bps: dict[str, float] = field(default_factory=dict)
    curves: dict[str, Curve] = field(default_factory=dict)
    gpu_origin: str | None = None
    gpu_peak_flops: dict[str, PeakFlops] = field(default_factory=dict)
    gpu_level_bandwidth_bps: dict[str, float] = field(default_factory=dict)
    host_copy_bandwidth_bps: float | None = None
    facts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Machine:
    """A compute node: CPUs, GPUs, links between them, and measured values.

    ``provenance`` maps each CPU/GPU field (``gpu.sms``, ``gpu.peak_flops.fp32``,
    ``cpu.memory_bandwidth_bps``) to where its value came from: ``machine
    file``, ``data sheet <key>`` or ``host <key>``. ``notes`` say how the node
    was composed or chosen (an assumed host, a GPU picked from a trace's
    device name); commands print them with their results. ``switch_specs``
    holds what the file's ``[switch.NAME]`` tables say of its switches (kind,
    generation, NVLink SHARP); a switch without a table has none
    (``switch(name)`` is None).
    """

    name: str
    description: str
    cpu: CPU
    gpu: GPU
    links: tuple[Link, ...]
    switches: tuple[str, ...] = ()
    measured: Measured | None = None
    path: Path | None = None
    provenance: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    switch_specs: tuple[Switch, ...] = ()

    @property
    def endpoints(self) -> tuple[str, ...]:
        """Every endpoint name: sockets, GPUs, switches."""
        cpus = tuple(f"cpu{i}" for i in range(self.cpu.sockets))
        gpus = tuple(f"gpu{i}" for i in range(self.gpu.count))
        return cpus + gpus + self.switches

    def switch(self, name: str) -> Switch | None:
        """What the machine file says of switch ``name`` (``[switch.NAME]``), or None when it says nothing."""
        return next((s for s in self.switch_specs if s.id == name), None)

    def sharp_switch(self, gpus: Iterable[int]) -> Switch | None:
        """The NVLink SHARP switch that every GPU of ``gpus`` (indices) links to directly by NVLink, or None.

        NCCL's NVLS algorithm reduces in such a switch; it needs every GPU of the group on it. A switch whose
        machine file gives no ``sharp = true`` does not count (what is not said is not assumed).
        """
        wanted = {f"gpu{g}" for g in gpus}
        for spec in self.switch_specs:
            if not spec.sharp:
                continue
            joined = {link.other(spec.id) for link in self.links if link.kind == "nvlink" and spec.id in link.endpoints}
            if wanted and wanted <= joined:
                return spec
        return None

    def route(self, src: str, dst: str) -> tuple[Link, ...]:
        """Links on the path from ``src`` to ``dst`` (fewest links; ties by file order)."""
        return route(self.links, src, dst, self.path or self.name)

    def host_route(self, gpu: int = 0) -> tuple[Link, ...]:
        """Links between GPU ``gpu`` and the CPU socket it is attached to."""
        return self.route(f"cpu{self.gpu.cpu_socket[gpu]}", f"gpu{gpu}")

    def host_copy_bandwidth(self) -> tuple[float, str] | None:
        """One host thread's memcpy rate (bytes/s) and where it comes from, or None when nothing gives it.

        A measured value (``[measured] host_copy_bandwidth_bps``) wins over
        the ``[cpu]`` (host file or machine file) value. The text names the
        file and, for a host file's value, whether its source comment marks it
        ``[measured: ...]`` or ``[assumed: ...]`` (``nodecast machines show``
        prints the comment).
        """
        m = self.measured
        if m is not None and m.host_copy_bandwidth_bps is not None:
            how = m.facts.get("host_copy", "")
            return m.host_copy_bandwidth_bps, f"measured: {how.split(': ', 1)[0] if how else m.origin}"
        if self.cpu.copy_bandwidth_bps is None:
            return None
        where = self.provenance.get("cpu.copy_bandwidth_bps", "machine file")
        source = self.cpu.host.sources.get("cpu.copy_bandwidth_bps", "") if self.cpu.host is not None else ""
        tag = next((t for t in ("measured", "assumed") if f"[{t}" in source), None) if where.startswith("host") else None
        return self.cpu.copy_bandwidth_bps, where + (f", {tag}" if tag else "")

    def host_link(self, gpu: int = 0) -> Link:
        """The link that limits host<->GPU ``gpu`` copies (the slowest on its route)."""
        return bottleneck(self.host_route(gpu))
