"""Read and validate GPU data sheets (``gpus/<key>.toml``) and target limits (``gpus/targets/<target>.toml``).

The format is specified in ``src/nodecast/machines/gpus/README.md`` and
docs/machines.md. Every check raises one ``InputError`` naming the file, the
key path, what is wrong and what to do: required keys, positive finite
numbers inside plausibility bounds (which catch MHz given as Hz or GB given
as bytes), no unknown keys, ``key`` equal to the file name, and a target file
for the sheet's ``target``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nodecast.errors import InputError
from nodecast.machines.catalogue_files import find_file, read_toml
from nodecast.machines.comments import value_comments
from nodecast.machines.device_names import is_generic_gpu_name
from nodecast.machines.parts import HOST_LINK_KINDS, PEAK_KEYS, VENDORS, GpuSheet, SheetLink, TargetLimits
from nodecast.machines.reader import Reader
from nodecast.machines.schema import MAX_CONCURRENT_KERNELS, MAX_COPY_ENGINES
from nodecast.machines.topology import NVLINK_BPS_PER_LINK, PCIE_GT_PER_S
from nodecast.paths import names_a_file

SCHEMA_VERSION = 1
_FIX_SHEET = "Fix the GPU data sheet (format: src/nodecast/machines/gpus/README.md)"
_FIX_TARGET = "Fix the target file (format: src/nodecast/machines/gpus/README.md)"
KEY_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_NVIDIA_TARGET = re.compile(r"^sm_[0-9]{2,3}[a-z]?$")
_AMD_TARGET = re.compile(r"^gfx[0-9a-f]{3,4}$")

#: Plausibility bounds: (low, high, unit). A value outside is a unit mistake
#: (MHz given as Hz, GB given as bytes) or a typo, not a GPU that exists.
#: Clocks: no GPU since 2008 runs below 100 MHz or above 5 GHz. Memory: 100 MB
#: to 4 TB (B200: 192 GB). DRAM bandwidth: 1 GB/s to 100 TB/s (B200: 8 TB/s).
#: L2: 10 kB to 2 GB (MI300X's 256 MB Infinity Cache). Peaks: 1 GFLOP/s to
#: 100 PFLOP/s (B200 dense FP4: about 9 PFLOP/s).
SHEET_BOUNDS: dict[str, tuple[float, float, str]] = {
    "base_clock_hz": (1e8, 5e9, "Hz"),
    "boost_clock_hz": (1e8, 5e9, "Hz"),
    "memory_bytes": (1e8, 4e12, "bytes"),
    "dram_bandwidth_bps": (1e9, 1e14, "bytes/s"),
    "l2_bytes": (1e4, 2e9, "bytes"),
    "tdp_w": (1.0, 5000.0, "W"),
}
#: Cache-level bandwidths, bytes/s: a GT 630's L1 (~2e11) to some 10x an MI300X's (8e13).
LEVEL_BOUNDS = (1e10, 1e15, "bytes/s")
#: Sheet key of each cache level's peak bandwidth, and (``_OUTER``) the level outside it, for the ordering check.
LEVEL_KEYS = {"l2": "l2_bandwidth_bps", "l1": "l1_bandwidth_bps", "shared": "shared_bandwidth_bps"}
_OUTER = {"l2": "dram", "l1": "l2", "shared": "l2"}
PEAK_BOUNDS = (1e9, 1e17, "FLOP/s")
MAX_SMS = 1024

_SHEET_KEYS = {"schema_version", "key", "name", "vendor", "architecture", "chip", "target", "release_year",
               "device_names", "sms", "base_clock_hz", "boost_clock_hz", "memory_type", "memory_bytes",
               "memory_bus_bits", "dram_bandwidth_bps", "l2_bytes", "tdp_w", "gcds_per_package", "host_link",
               "peak_flops", "copy_engines", "max_concurrent_kernels", *LEVEL_KEYS.values(), "measured"}
_TARGET_REQUIRED = ("warp_size", "max_threads_per_block", "max_threads_per_sm", "max_warps_per_sm",
                    "max_blocks_per_sm", "registers_per_sm", "max_registers_per_thread",
                    "shared_memory_per_sm_bytes", "max_shared_memory_per_block_bytes")
#: Target integer fields: (low, high). Highs are a few times the largest value any
#: NVIDIA compute capability or AMD GFX target has (e.g. 2,048 threads and 64
#: warps per SM, 65,536 registers per SM, 228 KiB shared memory per SM).
_TARGET_INTS: dict[str, tuple[int, int]] = {
    "max_threads_per_block": (1, 4096),
    "max_threads_per_sm": (1, 8192),
    "max_warps_per_sm": (1, 256),
    "max_blocks_per_sm": (1, 256),
    "registers_per_sm": (1, 1 << 21),
    "max_registers_per_thread": (1, 4096),
    "max_registers_per_block": (1, 1 << 21),
    "register_allocation_unit": (1, 1 << 16),
    "shared_memory_per_sm_bytes": (1, 1 << 23),
    "max_shared_memory_per_block_bytes": (1, 1 << 23),
    "shared_memory_allocation_unit_bytes": (1, 1 << 16),
    "reserved_shared_memory_per_block_bytes": (0, 1 << 16),
    "fp32_lanes_per_sm": (1, 4096),
    "fp64_lanes_per_sm": (1, 4096),
    "simds_per_cu": (1, 16),
    "warp_schedulers_per_sm": (1, 16),
    "dispatch_units_per_scheduler": (1, 8),
    "issue_clocks_per_warp_instruction": (1, 4),
}


def gpus_dir() -> Path:
    """The folder of GPU data sheets shipped with nodecast (``targets/`` inside it)."""
    return Path(str(resources.files("nodecast.machines") / "gpus"))


def _schema_version(r: Reader) -> None:
    version = r.table.get("schema_version")
    if version != SCHEMA_VERSION:
        raise r.fail("schema_version", f"must be {SCHEMA_VERSION} (got {version!r})")


# ---------------------------------------------------------------- targets


def target_from_dict(data: dict[str, Any], path: Path | str, text: str = "") -> TargetLimits:
    """Validate a parsed target file and build its ``TargetLimits``."""
    r = Reader(path, data, "", _FIX_TARGET)
    r.unknown_keys({"schema_version", "target", "vendor", "warp_size", *_TARGET_INTS})
    _schema_version(r)
    target = r.string("target")
    vendor = r.choice("vendor", VENDORS)
    stem = Path(path).stem
    if target != stem:
        raise r.fail("target", f"{target!r} must equal the file name {stem!r}",
                      hint="Name the file targets/<target>.toml")
    pattern = _NVIDIA_TARGET if vendor == "nvidia" else _AMD_TARGET
    if not pattern.match(target):  # type: ignore[arg-type]
        form = "sm_XY (compute capability X.Y)" if vendor == "nvidia" else "gfxNNN (AMD GFX target)"
        raise r.fail("target", f"{target!r} is not an {vendor} target name: expected {form}")
    warp = r.table.get("warp_size")
    if warp not in (32, 64) or isinstance(warp, bool):
        raise r.fail("warp_size", f"must be 32 (NVIDIA warp) or 64 (AMD CDNA wavefront) (got {warp!r})")
    values: dict[str, int | None] = {}
    for name, (low, high) in _TARGET_INTS.items():
        values[name] = r.integer(name, low, high, required=name in _TARGET_REQUIRED)
    v = values
    if v["max_warps_per_sm"] * warp != v["max_threads_per_sm"]:  # type: ignore[operator]
        raise r.fail("max_threads_per_sm", f"{v['max_threads_per_sm']} must equal max_warps_per_sm x warp_size "
                                           f"= {v['max_warps_per_sm']} x {warp}")
    for small, large in (("max_threads_per_block", "max_threads_per_sm"),
                         ("max_shared_memory_per_block_bytes", "shared_memory_per_sm_bytes"),
                         ("max_registers_per_block", "registers_per_sm")):
        if v[small] is not None and v[small] > v[large]:  # type: ignore[operator]
            raise r.fail(small, f"{v[small]} cannot exceed {large} ({v[large]})")
    return TargetLimits(target=target, vendor=vendor, warp_size=warp,  # type: ignore[arg-type]
                        **v,  # type: ignore[arg-type]
                        sources=MappingProxyType(value_comments(text)), path=Path(path))


def load_target_file(path: str | Path) -> TargetLimits:
    """Load and validate one target (per-SM limits) file."""
    path = Path(path)
    data, text = read_toml(path, "target file", _FIX_TARGET)
    return target_from_dict(data, path, text)


@functools.lru_cache(maxsize=256)
def _target_cached(path: Path, mtime_ns: int) -> TargetLimits:
    return load_target_file(path)


def load_target(target: str, folder: Path | None = None) -> TargetLimits:
    """The limits of ``target`` (``sm_90``, ``gfx942``) from ``<folder>/targets/`` (default: the catalogue)."""
    path = (folder or gpus_dir()) / "targets" / f"{target}.toml"
    try:
        return _target_cached(path, path.stat().st_mtime_ns)
    except FileNotFoundError:
        known = ", ".join(target_names(folder)) or "none"
        raise InputError(f"no target file for {target!r}", path=path,
                         hint=f"Write targets/{target}.toml (format: gpus/README.md); known targets: {known}") from None


def target_names(folder: Path | None = None) -> list[str]:
    """Targets with a limits file, sorted."""
    return sorted(p.stem for p in ((folder or gpus_dir()) / "targets").glob("*.toml"))


# ---------------------------------------------------------------- sheets


def _host_link(r: Reader) -> SheetLink:
    r.unknown_keys({"kind", "gen", "lanes", "links", "bandwidth_bps"})
    kind = r.choice("kind", HOST_LINK_KINDS)
    gen = r.count("gen", required=kind in ("pcie", "nvlink"))
    if kind == "pcie" and gen not in PCIE_GT_PER_S:
        raise r.fail("gen", f"unknown PCIe generation {gen} (known: 1-6)")
    if kind == "nvlink" and gen not in NVLINK_BPS_PER_LINK:
        raise r.fail("gen", f"unknown NVLink generation {gen} (known: 1-5)")
    lanes = r.count("lanes", required=kind == "pcie")
    if kind == "pcie" and lanes not in (1, 2, 4, 8, 12, 16, 32):
        raise r.fail("lanes", f"PCIe links have 1, 2, 4, 8, 12, 16 or 32 lanes (got {lanes})")
    return SheetLink(
        kind=kind,  # type: ignore[arg-type]
        gen=gen,
        lanes=lanes,
        links=r.count("links", required=kind == "nvlink", high=18),
        bandwidth_bps=r.bandwidth("bandwidth_bps", required=kind in ("nvlink-c2c", "infinity-fabric")),
    )


def _peaks(r: Reader) -> dict[str, float]:
    r.unknown_keys(set(PEAK_KEYS))
    low, high, unit = PEAK_BOUNDS
    peaks = {k: r.within(k, low, high, unit, required=k == "fp32") for k in PEAK_KEYS}
    return {k: v for k, v in peaks.items() if v is not None}


def _levels(r: Reader, dram_bps: float) -> tuple[dict[str, float], dict[str, float]]:
    """Peak level bandwidths (``LEVEL_KEYS``) and the ``[measured]`` table's, checked for order and plausibility.

    A level slower than the one outside it (an L2 below DRAM, an L1 below L2), or a measurement above its
    level's peak, is a unit or typing mistake rather than a GPU.
    """
    low, high, unit = LEVEL_BOUNDS
    peaks = {lv: v for lv, key in LEVEL_KEYS.items() if (v := r.within(key, low, high, unit, required=False))}
    known = {"dram": dram_bps, **peaks}
    for lv, value in peaks.items():
        outer = _OUTER[lv] if _OUTER[lv] in known else "dram"
        if value < known[outer]:
            name = "dram_bandwidth_bps" if outer == "dram" else LEVEL_KEYS[outer]
            raise r.fail(LEVEL_KEYS[lv], f"{value:g} B/s is below {name} ({known[outer]:g} B/s): a level is no "
                                         "slower than the one outside it",
                         hint="Check the unit (bytes/s) and the level")
    m = r.sub("measured", required=False)
    measured: dict[str, float] = {}
    if m is not None:
        m.unknown_keys(set(LEVEL_KEYS.values()))
        for lv, key in LEVEL_KEYS.items():
            value = m.within(key, low, high, unit, required=False)
            if value is None:
                continue
            if lv in peaks and value > peaks[lv] * 1.001:
                raise m.fail(key, f"{value:g} B/s is above the sheet's peak {key} ({peaks[lv]:g} B/s)",
                             hint="A measured maximum cannot exceed the peak: check both values and their units")
            measured[lv] = value
    return peaks, measured


def sheet_from_dict(data: dict[str, Any], path: Path | str, text: str = "",
                    folder: Path | None = None) -> GpuSheet:
    """Validate a parsed GPU data sheet, load its target's limits from ``<folder>/targets/``, build the sheet.

    ``folder`` defaults to the sheet's own folder when it holds the target
    file, else to the catalogue (``gpus_dir()``).
    """
    path = Path(path)
    r = Reader(path, data, "", _FIX_SHEET)
    r.unknown_keys(_SHEET_KEYS)
    _schema_version(r)
    key = r.string("key")
    if not KEY_PATTERN.match(key):  # type: ignore[arg-type]
        raise r.fail("key", f"{key!r} must be lower-case letters, digits and single dashes (e.g. h100-sxm5-80gb)")
    if key != path.stem:
        raise r.fail("key", f"{key!r} must equal the file name {path.stem!r}", hint="Name the file <key>.toml")
    vendor = r.choice("vendor", VENDORS)
    target = r.string("target")
    bounded = {k: r.within(k, *SHEET_BOUNDS[k], required=k in ("boost_clock_hz", "memory_bytes",
                                                                 "dram_bandwidth_bps"))
               for k in SHEET_BOUNDS}
    if bounded["base_clock_hz"] is not None and bounded["base_clock_hz"] > bounded["boost_clock_hz"]:  # type: ignore[operator]
        raise r.fail("base_clock_hz", f"{bounded['base_clock_hz']:g} Hz is above boost_clock_hz "
                                      f"({bounded['boost_clock_hz']:g} Hz)")
    year = r.integer("release_year", 1990, 2100, required=False)
    if folder is None and not names_a_file(path.parent / "targets" / f"{target}.toml"):
        folder = gpus_dir()  # a sheet outside the catalogue uses the catalogue's targets unless it brings its own
    try:
        limits = load_target(target, folder or path.parent)  # type: ignore[arg-type]
    except InputError as exc:
        raise r.fail("target", f"{target!r} has no limits file ({exc.path})", hint=exc.hint) from None
    if limits.vendor != vendor:
        raise r.fail("target", f"{target!r} is an {limits.vendor} target but the sheet's vendor is {vendor!r}")
    peaks, measured = _levels(r, bounded["dram_bandwidth_bps"])  # type: ignore[arg-type]
    generic = [n for n in r.strings("device_names") or () if is_generic_gpu_name(n)]
    if generic:
        raise r.fail("device_names", f"{generic[0]!r} is a generic name (drivers give it to boards they do not know, "
                                     "readers to unnamed devices): it identifies no product",
                     hint="List only the names the driver gives this product; a trace of a generically named GPU "
                          "is told apart by its recorded compute capability, SMs and memory")
    return GpuSheet(
        key=key,  # type: ignore[arg-type]
        name=r.string("name"),  # type: ignore[arg-type]
        vendor=vendor,  # type: ignore[arg-type]
        architecture=r.string("architecture"),  # type: ignore[arg-type]
        target=target,  # type: ignore[arg-type]
        device_names=r.strings("device_names"),  # type: ignore[arg-type]
        sms=r.count("sms", high=MAX_SMS),  # type: ignore[arg-type]
        boost_clock_hz=bounded["boost_clock_hz"],  # type: ignore[arg-type]
        memory_bytes=bounded["memory_bytes"],  # type: ignore[arg-type]
        dram_bandwidth_bps=bounded["dram_bandwidth_bps"],  # type: ignore[arg-type]
        host_link=_host_link(r.sub("host_link")),  # type: ignore[arg-type]
        peak_flops=MappingProxyType(_peaks(r.sub("peak_flops"))),  # type: ignore[arg-type]
        limits=limits,
        chip=r.string("chip", required=False),
        release_year=year,
        base_clock_hz=bounded["base_clock_hz"],
        memory_type=r.string("memory_type", required=False),
        memory_bus_bits=r.count("memory_bus_bits", required=False, high=16384),
        l2_bytes=bounded["l2_bytes"],
        tdp_w=bounded["tdp_w"],
        gcds_per_package=r.count("gcds_per_package", required=False, high=16),
        copy_engines=r.count("copy_engines", required=False, high=MAX_COPY_ENGINES),
        max_concurrent_kernels=r.count("max_concurrent_kernels", required=False, high=MAX_CONCURRENT_KERNELS),
        l2_bandwidth_bps=peaks.get("l2"),
        l1_bandwidth_bps=peaks.get("l1"),
        shared_bandwidth_bps=peaks.get("shared"),
        measured_level_bandwidth_bps=MappingProxyType(measured),
        sources=MappingProxyType(value_comments(text)),
        path=path,
    )


def load_sheet_file(path: str | Path, folder: Path | None = None) -> GpuSheet:
    """Load and validate one GPU data sheet (its target file as in ``sheet_from_dict``)."""
    path = Path(path)
    data, text = read_toml(path, "GPU data sheet", _FIX_SHEET)
    return sheet_from_dict(data, path, text, folder)


def sheet_keys(folder: Path | None = None) -> list[str]:
    """Keys of the GPU data sheets in ``folder`` (default: the catalogue), sorted."""
    return sorted(p.stem for p in (folder or gpus_dir()).glob("*.toml"))


def load_sheet(key_or_path: str | Path, folder: Path | None = None) -> GpuSheet:
    """A GPU data sheet by key (``h100-sxm5-80gb``) or by path to a ``.toml`` file."""
    return load_sheet_file(find_file(key_or_path, folder or gpus_dir(), lambda: sheet_keys(folder), "GPU data sheet",
                                     "sheet"))


def all_sheets(folder: Path | None = None) -> list[GpuSheet]:
    """Every GPU data sheet of ``folder`` (default: the catalogue), validated, by key; InputError on a bad one."""
    return [load_sheet_file(p) for p in sorted((folder or gpus_dir()).glob("*.toml"))]


def loadable_sheets(folder: Path | None = None) -> tuple[list[GpuSheet], list[InputError]]:
    """The sheets of ``folder`` that load, and the errors of those that do not.

    Name matching uses it so that one damaged sheet does not hide every other
    (the catalogue tests check that every shipped sheet loads).
    """
    sheets, errors = [], []
    for p in sorted((folder or gpus_dir()).glob("*.toml")):
        try:
            sheets.append(load_sheet_file(p))
        except InputError as exc:
            errors.append(exc)
    return sheets, errors
