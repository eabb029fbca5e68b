"""The parts a node is composed of: GPU data sheets, per-SM limits of their targets, hosts and their CPUs.

A ``GpuSheet`` is one GPU product as its vendor publishes it
(``src/nodecast/machines/gpus/<key>.toml``); its ``limits`` are the per-SM
(per-CU on AMD) limits that every GPU of its instruction-set target shares
(``gpus/targets/<target>.toml``): what decides occupancy. A ``Host`` is a
CPU + host-memory configuration (``hosts/<key>.toml``). A Machine is composed
of ``count`` GPUs of one sheet, a host and links (``nodecast.machines.compose``).

Units are SI and named in the fields: bytes (decimal, as data sheets give
them), Hz, bytes/s, FLOP/s with an FMA counting as 2 FLOP, W. Every value of
the files carries its source in a comment; ``sources`` maps each dotted key
(``peak_flops.fp32``) to that comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

#: Peak keys a sheet may give, FLOP/s (OP/s for the integer ones) at the boost clock, dense.
#: Vector (CUDA-core / SIMD) peaks first, then tensor / matrix-core peaks (``*_tensor``).
VECTOR_PEAKS = ("fp64", "fp32", "fp16", "bf16")
TENSOR_PEAKS = ("fp64_tensor", "fp32_tensor", "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor",
                "fp6_tensor", "fp4_tensor", "int8_tensor", "int4_tensor")
PEAK_KEYS = VECTOR_PEAKS + TENSOR_PEAKS
#: How a GPU product can attach to its host.
HOST_LINK_KINDS = ("pcie", "nvlink", "nvlink-c2c", "infinity-fabric")
VENDORS = ("nvidia", "amd")

_EMPTY: Mapping[str, str] = MappingProxyType({})
_EMPTY_BW: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class SheetLink:
    """A GPU-to-host link as a data sheet or host file gives it (not yet placed in a node).

    ``gen``/``lanes`` for PCIe, ``gen``/``links`` for NVLink, ``bandwidth_bps``
    (per direction) for NVLink-C2C and Infinity Fabric, optional elsewhere.
    """

    kind: str
    gen: int | None = None
    lanes: int | None = None
    links: int | None = None
    bandwidth_bps: float | None = None

    @property
    def label(self) -> str:
        """``PCIe gen4 x16``, ``NVLink2 x2``, ``NVLink-C2C 450 GB/s``..."""
        if self.kind == "pcie":
            return f"PCIe gen{self.gen} x{self.lanes}"
        if self.kind == "nvlink":
            return f"NVLink{self.gen} x{self.links}"
        name = {"nvlink-c2c": "NVLink-C2C", "infinity-fabric": "Infinity Fabric"}[self.kind]
        return f"{name} {self.bandwidth_bps / 1e9:g} GB/s" if self.bandwidth_bps else name


@dataclass(frozen=True)
class TargetLimits:
    """Per-SM (AMD: per-CU) limits of one instruction-set target, as occupancy calculators use them.

    NVIDIA: CUDA C++ Programming Guide, "Technical Specifications per Compute
    Capability". AMD: the same names with their CDNA meaning (warp = wavefront,
    SM = CU, registers = VGPRs in 32-bit lane-registers, shared memory = LDS).
    Registers are 32-bit registers; ``register_allocation_unit`` is in
    registers, allocated per warp; shared memory in bytes.
    ``warp_schedulers_per_sm``: warp instructions an SM issues per clock with
    one per scheduler; ``dispatch_units_per_scheduler``: instructions one
    scheduler can issue per clock from one warp (dual issue: 2);
    ``issue_clocks_per_warp_instruction``: clocks one scheduler takes to issue
    a warp instruction to all 32 threads (Fermi: 2, its schedulers feed 16
    lanes each; None = 1, every later NVIDIA target).
    """

    target: str
    vendor: str
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    shared_memory_per_sm_bytes: int
    max_shared_memory_per_block_bytes: int
    max_registers_per_block: int | None = None
    register_allocation_unit: int | None = None
    shared_memory_allocation_unit_bytes: int | None = None
    reserved_shared_memory_per_block_bytes: int | None = None
    fp32_lanes_per_sm: int | None = None
    fp64_lanes_per_sm: int | None = None
    simds_per_cu: int | None = None
    warp_schedulers_per_sm: int | None = None
    dispatch_units_per_scheduler: int | None = None
    issue_clocks_per_warp_instruction: int | None = None
    sources: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    path: Path | None = field(default=None, compare=False)


@dataclass(frozen=True)
class GpuSheet:
    """One GPU product's data sheet (``gpus/<key>.toml``) with its target's limits.

    ``peak_flops`` maps ``PEAK_KEYS`` to FLOP/s at ``boost_clock_hz``, dense
    (no 2:4 sparsity), an FMA counting as 2 FLOP; keys the product lacks are
    absent. ``device_names`` are the names the driver reports (what profilers
    copy into traces). An AMD MI250X sheet describes one GCD
    (``gcds_per_package = 2``): the driver shows each GCD as a device.
    ``copy_engines`` is CUDA's ``asyncEngineCount`` as the driver reports it
    (deviceQuery, CUPTI ``numMemcpyEngines``, nsys ``asyncEngines``: 1 = one
    engine for both directions); ``max_concurrent_kernels`` the CUDA
    Programming Guide's "maximum number of resident grids per device" of the
    compute capability. None where no source gives them.
    ``l2_bandwidth_bps``, ``l1_bandwidth_bps`` and ``shared_bandwidth_bps``
    are the peak bandwidths (bytes/s at ``boost_clock_hz``) of the memory
    levels the hierarchical roofline uses, mostly derived from a documented
    width (bytes per clock per SM or slice x count x clock); shared memory
    is given only where it is not the L1's SRAM (AMD's LDS). None where no
    source gives them: the roofline then bounds the level by its neighbours.
    ``measured_level_bandwidth_bps`` holds published microbenchmark maxima
    of this product by level (``l2``, ``l1``, ``shared``): the roofline's
    BW^max, taken before the peak (``[measured]`` in the sheet).
    """

    key: str
    name: str
    vendor: str
    architecture: str
    target: str
    device_names: tuple[str, ...]
    sms: int
    boost_clock_hz: float
    memory_bytes: float
    dram_bandwidth_bps: float
    host_link: SheetLink
    peak_flops: Mapping[str, float]
    limits: TargetLimits
    chip: str | None = None
    release_year: int | None = None
    base_clock_hz: float | None = None
    memory_type: str | None = None
    memory_bus_bits: int | None = None
    l2_bytes: float | None = None
    tdp_w: float | None = None
    gcds_per_package: int | None = None
    copy_engines: int | None = None
    max_concurrent_kernels: int | None = None
    l2_bandwidth_bps: float | None = None
    l1_bandwidth_bps: float | None = None
    shared_bandwidth_bps: float | None = None
    measured_level_bandwidth_bps: Mapping[str, float] = field(default_factory=lambda: _EMPTY_BW)
    sources: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    path: Path | None = field(default=None, compare=False)

    @property
    def warp_size(self) -> int:
        """Threads per warp (AMD: wavefront size), from the target."""
        return self.limits.warp_size

    def peak(self, precision: str) -> float | None:
        """Peak FLOP/s of ``precision`` (a ``PEAK_KEYS`` name), or None when the product lacks it."""
        return self.peak_flops.get(precision)


# ``CPU`` lives here, beside ``Host``, because each names the other (a host's CPUs; the host file a node's CPU
# values came from); ``nodecast.machines.schema`` re-exports it as part of the Machine vocabulary.
@dataclass(frozen=True)
class CPU:
    """The host processors of a node.

    ``memory_bandwidth_bps`` is the theoretical DRAM bandwidth of one socket
    (bus width x frequency x transfers per cycle, AHEAD's MemBW of eq. 9).
    ``copy_bandwidth_bps`` is what one host thread's ``memcpy`` between
    buffers larger than the last-level cache moves: bytes copied per second
    (n / t, half STREAM's Copy figure, which counts the bytes read and the
    bytes written). It sets the CUDA driver's staging copy of pageable
    transfers (``nodecast.models.pageable``); None when no source gives it
    (a ``[measured] host_copy_bandwidth_bps``, written by ``nodecast
    calibrate``, overrides it: ``Machine.host_copy_bandwidth``).
    ``host`` is the host file the values were composed from (None when the
    machine file gives them all itself).
    """

    model: str
    sockets: int
    cores_per_socket: int
    clock_hz: float
    memory_bytes: float
    memory_bandwidth_bps: float
    numa_domains: int
    copy_bandwidth_bps: float | None = None
    host: Host | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Host:
    """A host configuration (``hosts/<key>.toml``): CPUs and host memory, and how GPUs attach to it.

    ``pcie_gen`` is the generation of the CPU's root ports (a GPU's PCIe link
    runs at the lower of its own and this one). ``gpu_link``, when given, is
    a non-PCIe CPU-GPU link the host provides (NVLink on POWER8NV/POWER9,
    NVLink-C2C on Grace, Infinity Fabric on Trento); it replaces the GPU's
    own host link when the GPU sheet's ``host_link`` is of the same kind.
    ``socket_bus_bps`` is the per-direction inter-socket bandwidth (UPI,
    X-Bus, Infinity Fabric) of multi-socket hosts.
    """

    key: str
    description: str
    cpu: CPU
    pcie_gen: int
    gpu_link: SheetLink | None = None
    socket_bus_bps: float | None = None
    sources: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    path: Path | None = field(default=None, compare=False)
