"""Summaries of a Machine and side-by-side comparisons of two, as plain data.

Everything here returns dicts and lists of SI numbers (bytes, bytes/s per
direction, FLOP/s, Hz) so that the CLI can print them as tables or JSON and a
Python user can compute with them. Conversion to GB/s or TFLOP/s happens only
when printing (``nodecast.commands.machines``).

Bandwidths are the *raw* per-direction link rates of
``nodecast.machines.topology.raw_rate_bps``: line encoding applied, protocol
(TLP/flit) overhead not. Two derived host figures are given per GPU:

* ``raw_rate_bps``: the slowest link on the GPU's route to its own socket, as
  seen by one GPU copying alone;
* ``shared_rate_bps``: the same route when every GPU copies to or from its
  host at once, each link's rate split equally among the GPU host routes that
  cross it (GPUs behind one PCIe switch share its uplink). This is an
  equal-share bound per direction, not a contention simulation.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodecast.machines.schema import Link, Machine
from nodecast.machines.topology import bottleneck, raw_rate_bps

#: Diff rows: (key, label, unit). ``unit`` is an SI unit ("B/s" per direction,
#: "FLOP/s", "B", "Hz", "" for counts) or "text" for rows that are not numbers.
DIFF_ROWS: tuple[tuple[str, str, str], ...] = (
    ("gpu_count", "GPUs per node", ""),
    ("gpu_model", "GPU model", "text"),
    ("fp64_fma_per_gpu", "Peak FP64 (FMA, non-tensor) per GPU", "FLOP/s"),
    ("fp64_fma_per_node", "Peak FP64 (FMA, non-tensor) per node", "FLOP/s"),
    ("fp32_fma_per_gpu", "Peak FP32 (FMA) per GPU", "FLOP/s"),
    ("fp32_fma_per_node", "Peak FP32 (FMA) per node", "FLOP/s"),
    ("gpu_memory_per_gpu", "GPU memory per GPU", "B"),
    ("gpu_memory_per_node", "GPU memory per node", "B"),
    ("dram_bw_per_gpu", "GPU DRAM bandwidth per GPU", "B/s"),
    ("dram_bw_per_node", "GPU DRAM bandwidth per node", "B/s"),
    ("host_link", "Host link (bottleneck of GPU-to-socket route)", "text"),
    ("host_bw_per_gpu", "Host link raw bandwidth per GPU, one GPU copying (per direction)", "B/s"),
    ("host_bw_per_gpu_shared", "Host bandwidth per GPU, all GPUs copying at once (per direction)", "B/s"),
    ("peer_nvlink_bw_per_gpu", "Peer NVLink bandwidth per GPU, aggregate (per direction)", "B/s"),
    ("peer_route_bw", "Peer route GPU0->GPU1 bottleneck (per direction)", "B/s"),
    ("cpu_model", "CPU model", "text"),
    ("cpu_cores_per_node", "CPU cores per node", ""),
    ("cpu_mem_bw_per_socket", "CPU memory bandwidth per socket", "B/s"),
    ("cpu_mem_bw_per_node", "CPU memory bandwidth per node", "B/s"),
    ("host_memory_per_node", "Host memory per node", "B"),
)


def link_label(link: Link) -> str:
    """A short human name for a link: ``PCIe gen3 x16``, ``NVLink2 x2``, ``NVLink-C2C``, ``socket bus``."""
    if link.kind == "pcie":
        return f"PCIe gen{link.gen} x{link.lanes}"
    if link.kind == "nvlink":
        return f"NVLink{link.gen} x{link.links}"
    if link.kind == "nvlink-c2c":
        return "NVLink-C2C"
    if link.kind == "xgmi":
        return f"xGMI gen{link.gen} x{link.links}"
    return "socket bus"


def link_summary(link: Link) -> dict[str, Any]:
    """Every field of a link plus its label and raw per-direction rate (bytes/s)."""
    return {
        "id": link.id,
        "kind": link.kind,
        "label": link_label(link),
        "endpoints": list(link.endpoints),
        "gen": link.gen,
        "lanes": link.lanes,
        "links": link.links,
        "mps_bytes": link.mps_bytes,
        "mrrs_bytes": link.mrrs_bytes,
        "rcb_bytes": link.rcb_bytes,
        "header_bytes": link.header_bytes,
        "bandwidth_bps": link.bandwidth_bps,
        "latency_s": link.latency_s,
        "raw_rate_bps": raw_rate_bps(link),
    }


def host_routes(machine: Machine) -> list[dict[str, Any]]:
    """Each GPU's route to its own socket: links, bottleneck, raw and shared per-direction rates.

    ``shared_rate_bps`` splits every link's raw rate equally among the GPU host
    routes that cross it (see the module docstring).
    """
    routes = [machine.host_route(g) for g in range(machine.gpu.count)]
    users = Counter(link.id for route in routes for link in route)
    out = []
    for g, route in enumerate(routes):
        slow = bottleneck(route)
        out.append({
            "gpu": g,
            "socket": machine.gpu.cpu_socket[g],
            "links": [link.id for link in route],
            "bottleneck": slow.id,
            "bottleneck_label": link_label(slow),
            "raw_rate_bps": raw_rate_bps(slow),
            "shared_rate_bps": min(raw_rate_bps(link) / users[link.id] for link in route),
            "sharing_gpus": max(users[link.id] for link in route),
        })
    return out


def peer_routes(machine: Machine, src: int = 0) -> list[dict[str, Any]]:
    """Routes from GPU ``src`` to every other GPU with their bottleneck link and raw rate."""
    out = []
    for g in range(machine.gpu.count):
        if g == src:
            continue
        route = machine.route(f"gpu{src}", f"gpu{g}")
        slow = bottleneck(route)
        out.append({
            "src": src,
            "dst": g,
            "links": [link.id for link in route],
            "bottleneck": slow.id,
            "bottleneck_label": link_label(slow),
            "raw_rate_bps": raw_rate_bps(slow),
        })
    return out


def peer_nvlink_bps(machine: Machine, gpu: int = 0) -> float | None:
    """Sum of the raw rates of GPU ``gpu``'s NVLink links to peers or switches (not to CPUs); None without any."""
    name = f"gpu{gpu}"
    cpus = {f"cpu{i}" for i in range(machine.cpu.sockets)}
    rates = [raw_rate_bps(link) for link in machine.links
             if link.kind == "nvlink" and name in link.endpoints and link.other(name) not in cpus]
    return sum(rates) if rates else None


def _measured(machine: Machine) -> dict[str, Any] | None:
    m = machine.measured
    if m is None:
        return None
    return {
        "origin": m.origin,
        "date": m.date,
        "driver": m.driver,
        "gpu_name": m.gpu_name,
        "one_byte_s": dict(m.one_byte_s),
        "bandwidth_bps": dict(m.bandwidth_bps),
        "curves": {k: {"sizes_bytes": list(c.sizes_bytes), "bandwidth_bps": list(c.bandwidth_bps)}
                   for k, c in m.curves.items()},
        "gpu_origin": m.gpu_origin,
        "gpu_peak_flops": {k: {"fma": p.fma, "addmul": p.addmul} for k, p in m.gpu_peak_flops.items()},
        "gpu_level_bandwidth_bps": dict(m.gpu_level_bandwidth_bps),
        "facts": dict(m.facts),
    }


def machine_summary(machine: Machine) -> dict[str, Any]:
    """Every field of ``machine`` plus node totals, host/peer routes and link rates, in SI units.

    Keys: name, description, path, cpu, gpu, node, host_link, host_routes,
    peer_routes, peer_nvlink_bps, links, switches, measured, provenance
    (field -> where its value came from), notes (how the node was composed),
    sheet (the GPU data sheet with its target's limits, or None) and host
    (the host file's summary, or None); switch_details (switch name -> kind,
    gen, sharp) only when the machine file has ``[switch.NAME]`` tables.
    """
    from nodecast.machines.part_summary import host_summary, sheet_summary

    cpu, gpu = machine.cpu, machine.gpu
    hosts = host_routes(machine)
    worst = min(hosts, key=lambda h: h["raw_rate_bps"])
    slow_link = next(link for link in machine.links if link.id == worst["bottleneck"])
    peers = peer_routes(machine) if gpu.count > 1 else []
    dram = gpu.dram_bandwidth_bps
    return {
        "name": machine.name,
        "description": machine.description,
        "path": None if machine.path is None else str(machine.path),
        "cpu": {
            "model": cpu.model,
            "sockets": cpu.sockets,
            "cores_per_socket": cpu.cores_per_socket,
            "clock_hz": cpu.clock_hz,
            "memory_bytes": cpu.memory_bytes,
            "memory_bandwidth_bps": cpu.memory_bandwidth_bps,
            "numa_domains": cpu.numa_domains,
            "copy_bandwidth_bps": None if (hc := machine.host_copy_bandwidth()) is None else hc[0],
            "copy_bandwidth_source": None if hc is None else hc[1],
        },
        "gpu": {
            "model": gpu.model,
            "count": gpu.count,
            "sms": gpu.sms,
            "clock_hz": gpu.clock_hz,
            "memory_bytes": gpu.memory_bytes,
            "cpu_socket": list(gpu.cpu_socket),
            "peak_flops": {k: {"fma": p.fma, "addmul": p.addmul} for k, p in gpu.peak_flops.items()},
            "levels": {k: {"bandwidth_bps": lv.bandwidth_bps, "size_bytes": lv.size_bytes}
                       for k, lv in gpu.levels.items()},
        },
        "node": {
            "cpu_cores": cpu.sockets * cpu.cores_per_socket,
            "cpu_memory_bandwidth_bps": cpu.sockets * cpu.memory_bandwidth_bps,
            "gpu_memory_bytes": gpu.count * gpu.memory_bytes,
            "gpu_dram_bandwidth_bps": gpu.count * dram,
            "peak_flops": {k: {"fma": gpu.count * p.fma, "addmul": gpu.count * p.addmul}
                           for k, p in gpu.peak_flops.items()},
        },
        "host_link": {
            **{k: v for k, v in link_summary(slow_link).items() if k in ("id", "kind", "label", "gen", "lanes", "links")},
            "raw_rate_bps": worst["raw_rate_bps"],
            "shared_rate_bps": min(h["shared_rate_bps"] for h in hosts),
        },
        "host_routes": hosts,
        "peer_routes": peers,
        "peer_nvlink_bps": peer_nvlink_bps(machine),
        "links": [link_summary(link) for link in machine.links],
        "switches": list(machine.switches),
        # Only where the file describes its switches ([switch.NAME]), so that other machines' summaries keep their keys.
        **({"switch_details": {s.id: {"kind": s.kind, "gen": s.gen, "sharp": s.sharp} for s in machine.switch_specs}}
           if machine.switch_specs else {}),
        "measured": _measured(machine),
        "provenance": dict(machine.provenance),
        "notes": list(machine.notes),
        "sheet": None if gpu.sheet is None else sheet_summary(gpu.sheet),
        "host": None if cpu.host is None else host_summary(cpu.host),
    }


def _values(s: dict[str, Any]) -> dict[str, Any]:
    """The diff quantities of one machine summary, keyed as in ``DIFF_ROWS``."""
    gpu, node, cpu = s["gpu"], s["node"], s["cpu"]
    peaks, node_peaks = gpu["peak_flops"], node["peak_flops"]
    peers = s["peer_routes"]
    return {
        "gpu_count": gpu["count"],
        "gpu_model": gpu["model"],
        "fp64_fma_per_gpu": peaks["fp64"]["fma"] if "fp64" in peaks else None,
        "fp64_fma_per_node": node_peaks["fp64"]["fma"] if "fp64" in node_peaks else None,
        "fp32_fma_per_gpu": peaks["fp32"]["fma"] if "fp32" in peaks else None,
        "fp32_fma_per_node": node_peaks["fp32"]["fma"] if "fp32" in node_peaks else None,
        "gpu_memory_per_gpu": gpu["memory_bytes"],
        "gpu_memory_per_node": node["gpu_memory_bytes"],
        "dram_bw_per_gpu": gpu["levels"]["dram"]["bandwidth_bps"],
        "dram_bw_per_node": node["gpu_dram_bandwidth_bps"],
        "host_link": s["host_link"]["label"],
        "host_bw_per_gpu": s["host_link"]["raw_rate_bps"],
        "host_bw_per_gpu_shared": s["host_link"]["shared_rate_bps"],
        "peer_nvlink_bw_per_gpu": s["peer_nvlink_bps"],
        "peer_route_bw": peers[0]["raw_rate_bps"] if peers else None,
        "cpu_model": cpu["model"],
        "cpu_cores_per_node": node["cpu_cores"],
        "cpu_mem_bw_per_socket": cpu["memory_bandwidth_bps"],
        "cpu_mem_bw_per_node": node["cpu_memory_bandwidth_bps"],
        "host_memory_per_node": cpu["memory_bytes"],
    }


def diff_machines(a: Machine, b: Machine) -> list[dict[str, Any]]:
    """Side-by-side rows for a procurement comparison of ``a`` and ``b``.

    Each row: ``key``, ``quantity`` (label), ``unit`` (SI, or "text"), ``a``,
    ``b`` and ``ratio`` = b / a (None when either side is missing, not a
    number, or a is zero). Example::

        key               quantity                       unit   a         b          ratio
        dram_bw_per_gpu   GPU DRAM bandwidth per GPU     B/s    2.5e11    9.0e11     3.6
    """
    va, vb = _values(machine_summary(a)), _values(machine_summary(b))
    rows = []
    for key, label, unit in DIFF_ROWS:
        x, y = va[key], vb[key]
        ratio = None
        if unit != "text" and x is not None and y is not None and x != 0:
            ratio = y / x
        rows.append({"key": key, "quantity": label, "unit": unit, "a": x, "b": y, "ratio": ratio})
    return rows


def list_rows(machines: list[Machine]) -> list[dict[str, Any]]:
    """One row per machine for ``nodecast machines list`` (SI units)."""
    rows = []
    for m in machines:
        s = machine_summary(m)
        rows.append({
            "name": m.name,
            "description": m.description,
            "gpu_count": m.gpu.count,
            "gpu_model": m.gpu.model,
            "host_link": s["host_link"]["label"],
            "host_link_raw_bps": s["host_link"]["raw_rate_bps"],
            "gpu_memory_bytes": m.gpu.memory_bytes,
            "dram_bandwidth_bps": m.gpu.dram_bandwidth_bps,
        })
    return rows
