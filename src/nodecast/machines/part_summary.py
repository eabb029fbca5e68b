"""GPU data sheets, target limits and hosts as plain data (SI units), each value with its source.

What ``nodecast machines list|show`` print; a Python user gets the same
numbers. Fields are rows ``{"field", "value", "unit", "source"}``: ``unit``
is an SI unit (``Hz``, ``B``, ``B/s``, ``FLOP/s``, ``W``) or ``""`` for counts
and text, ``source`` the comment beside the value in its file.
"""

from __future__ import annotations

from typing import Any

from nodecast.machines.parts import PEAK_KEYS, GpuSheet, Host, TargetLimits

#: GpuSheet fields shown, with their unit ("" for counts and text).
SHEET_FIELDS: tuple[tuple[str, str], ...] = (
    ("name", ""), ("vendor", ""), ("architecture", ""), ("chip", ""), ("target", ""), ("release_year", ""),
    ("device_names", ""), ("sms", ""), ("base_clock_hz", "Hz"), ("boost_clock_hz", "Hz"), ("memory_type", ""),
    ("memory_bytes", "B"), ("memory_bus_bits", "bit"), ("dram_bandwidth_bps", "B/s"), ("l2_bytes", "B"),
    ("l2_bandwidth_bps", "B/s"), ("l1_bandwidth_bps", "B/s"), ("shared_bandwidth_bps", "B/s"),
    ("tdp_w", "W"), ("gcds_per_package", ""),
)
#: TargetLimits fields shown, with their unit.
LIMIT_FIELDS: tuple[tuple[str, str], ...] = (
    ("warp_size", "threads"), ("max_threads_per_block", "threads"), ("max_threads_per_sm", "threads"),
    ("max_warps_per_sm", "warps"), ("max_blocks_per_sm", "blocks"), ("registers_per_sm", "registers"),
    ("max_registers_per_thread", "registers"), ("max_registers_per_block", "registers"),
    ("register_allocation_unit", "registers"), ("shared_memory_per_sm_bytes", "B"),
    ("max_shared_memory_per_block_bytes", "B"), ("shared_memory_allocation_unit_bytes", "B"),
    ("reserved_shared_memory_per_block_bytes", "B"), ("fp32_lanes_per_sm", "FMA/clock"),
    ("fp64_lanes_per_sm", "FMA/clock"), ("simds_per_cu", ""),
)


def _row(field: str, value: Any, unit: str, sources: Any, key: str | None = None) -> dict[str, Any]:
    return {"field": field, "value": list(value) if isinstance(value, tuple) else value, "unit": unit,
            "source": sources.get(key or field)}


def limits_summary(limits: TargetLimits) -> dict[str, Any]:
    """The target's key, vendor, file and one row per limit that the file gives."""
    return {
        "target": limits.target,
        "vendor": limits.vendor,
        "path": None if limits.path is None else str(limits.path),
        "rows": [_row(f, getattr(limits, f), u, limits.sources) for f, u in LIMIT_FIELDS
                 if getattr(limits, f) is not None],
    }


def sheet_summary(sheet: GpuSheet) -> dict[str, Any]:
    """The sheet's key, file, one row per field it gives (peaks and host link included), and its limits."""
    rows = [_row(f, getattr(sheet, f), u, sheet.sources) for f, u in SHEET_FIELDS if getattr(sheet, f) is not None]
    link = sheet.host_link
    rows.append({"field": "host_link", "value": link.label, "unit": "", "source": sheet.sources.get("host_link.kind")})
    if link.bandwidth_bps is not None:
        rows.append(_row("host_link.bandwidth_bps", link.bandwidth_bps, "B/s", sheet.sources))
    rows += [_row(f"peak_flops.{k}", sheet.peak_flops[k], "OP/s" if k.startswith("int") else "FLOP/s",
                  sheet.sources) for k in PEAK_KEYS if k in sheet.peak_flops]
    rows += [_row(f"measured.{lv}_bandwidth_bps", v, "B/s", sheet.sources)
             for lv, v in sheet.measured_level_bandwidth_bps.items()]
    return {"key": sheet.key, "path": None if sheet.path is None else str(sheet.path), "rows": rows,
            "limits": limits_summary(sheet.limits)}


def host_summary(host: Host) -> dict[str, Any]:
    """The host's key, description, file and one row per value."""
    c = host.cpu
    rows = [_row(f"cpu.{f}", getattr(c, f), u, host.sources) for f, u in (
        ("model", ""), ("sockets", ""), ("cores_per_socket", ""), ("clock_hz", "Hz"), ("memory_bytes", "B"),
        ("memory_bandwidth_bps", "B/s"), ("numa_domains", ""))]
    rows.append(_row("pcie_gen", host.pcie_gen, "", host.sources))
    if host.socket_bus_bps is not None:
        rows.append(_row("socket_bus.bandwidth_bps", host.socket_bus_bps, "B/s", host.sources))
    if host.gpu_link is not None:
        rows.append({"field": "gpu_link", "value": host.gpu_link.label, "unit": "",
                     "source": host.sources.get("gpu_link.kind")})
    return {"key": host.key, "description": host.description, "path": None if host.path is None else str(host.path),
            "rows": rows}


def sheet_rows(sheets: list[GpuSheet]) -> list[dict[str, Any]]:
    """One row per GPU data sheet for ``nodecast machines list`` (SI units)."""
    return [{
        "key": s.key, "name": s.name, "target": s.target, "sms": s.sms, "boost_clock_hz": s.boost_clock_hz,
        "memory_bytes": s.memory_bytes, "dram_bandwidth_bps": s.dram_bandwidth_bps,
        "fp32_flops": s.peak_flops["fp32"], "host_link": s.host_link.label, "device_names": list(s.device_names),
    } for s in sheets]


def host_rows(hosts: list[Host]) -> list[dict[str, Any]]:
    """One row per host for ``nodecast machines list`` (SI units)."""
    return [{
        "key": h.key, "description": h.description, "cpu_model": h.cpu.model, "sockets": h.cpu.sockets,
        "cores_per_socket": h.cpu.cores_per_socket, "memory_bytes": h.cpu.memory_bytes,
        "memory_bandwidth_bps": h.cpu.memory_bandwidth_bps, "pcie_gen": h.pcie_gen,
        "gpu_link": None if h.gpu_link is None else h.gpu_link.label,
    } for h in hosts]
