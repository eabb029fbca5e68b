"""Compose a node from a GPU data sheet and a host, in a machine file or from a spec string.

In a machine file, ``[gpu] sheet = "KEY"`` fills every GPU value the file
does not give from the data sheet, and ``[cpu] host = "KEY"`` every CPU value
from the host file; values the file gives win. ``Machine.provenance`` keeps,
per field, ``machine file`` or ``data sheet KEY`` / ``host KEY`` (and the
sheet's own value where the file overrides it).

Without a file, a spec string names a node: ``GPU[xN][@HOST]``, e.g.
``rtx-3090``, ``a100-sxm4-80gbx8@epyc-7742-2s``. GPU is a sheet key or a
device name (``nodecast.machines.names``), N the GPU count (default 1), HOST a
host key. Each GPU gets its own link to a socket (GPUs spread over the
sockets in blocks, as in DGX-style nodes): the host's ``[gpu_link]`` when it
is of the kind the sheet's ``host_link`` names, else the sheet's PCIe link at
the lower of the GPU's and the host's generation. Without HOST the node gets
``DEFAULT_HOST`` (PCIe GPUs) or the one catalogue host that offers the GPU's
own link kind (NVLink-C2C: Grace), and the notes say the host was assumed.
Composed nodes have no GPU-to-GPU links: peer copies route through the host.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nodecast.errors import InputError
from nodecast.machines.parts import GpuSheet, Host
from nodecast.machines.schema import PRECISIONS, Machine
from nodecast.notes import HOST_ASSUMED, Note
from nodecast.paths import names_a_file

#: Largest GPU count a spec string may ask for (a full NVL72 rack is 72).
MAX_SPEC_GPUS = 72
_COUNT = re.compile(r"^(?P<gpu>.+?)x(?P<count>[0-9]+)$")
MACHINE_FILE = "machine file"


def sheet_label(sheet: GpuSheet) -> str:
    return f"data sheet {sheet.key}"


def host_label(host: Host, assumed: bool = False) -> str:
    return f"host {host.key}" + (" (assumed)" if assumed else "")


def sheet_gpu_table(sheet: GpuSheet) -> dict[str, Any]:
    """The sheet's values in a machine file's ``[gpu]`` vocabulary (without ``count``/``cpu_socket``).

    ``clock_hz`` is the boost clock (the clock the peaks are given at); each
    vector peak becomes ``{fma, addmul = fma / 2}`` (an ADD or MUL is one FLOP,
    an FMA two: the roofline paper's eq. 2 terms); ``levels`` holds the DRAM and
    whatever L2/L1/shared bandwidths and sizes the sheet gives.
    """
    levels: dict[str, Any] = {"dram": {"bandwidth_bps": sheet.dram_bandwidth_bps, "size_bytes": sheet.memory_bytes}}
    for level, bandwidth, size in (("l2", sheet.l2_bandwidth_bps, sheet.l2_bytes), ("l1", sheet.l1_bandwidth_bps, None),
                                   ("shared", sheet.shared_bandwidth_bps, None)):
        entry = {k: v for k, v in (("bandwidth_bps", bandwidth), ("size_bytes", size)) if v is not None}
        if entry:
            levels[level] = entry
    table = {
        "model": sheet.name,
        "sms": sheet.sms,
        "clock_hz": sheet.boost_clock_hz,
        "memory_bytes": sheet.memory_bytes,
        "peak_flops": {p: {"fma": v, "addmul": v / 2} for p in PRECISIONS if (v := sheet.peak(p)) is not None},
        "levels": levels,
    }
    for key in ("copy_engines", "max_concurrent_kernels"):  # where the sheet gives them
        if (value := getattr(sheet, key)) is not None:
            table[key] = value
    return table


def host_cpu_table(host: Host) -> dict[str, Any]:
    """The host's values in a machine file's ``[cpu]`` vocabulary."""
    c = host.cpu
    table = {"model": c.model, "sockets": c.sockets, "cores_per_socket": c.cores_per_socket, "clock_hz": c.clock_hz,
             "memory_bytes": c.memory_bytes, "memory_bandwidth_bps": c.memory_bandwidth_bps,
             "numa_domains": c.numa_domains}
    if c.copy_bandwidth_bps is not None:
        table["copy_bandwidth_bps"] = c.copy_bandwidth_bps
    return table


def _leaves(table: dict[str, Any], prefix: str, atomic: tuple[str, ...]) -> dict[str, Any]:
    """Dotted path -> value; the children of a table whose path is in ``atomic`` count as leaves whole."""
    out = {}
    for k, v in table.items():
        path = f"{prefix}.{k}"
        if isinstance(v, dict) and prefix not in atomic:
            out.update(_leaves(v, path, atomic))
        else:
            out[path] = v
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                      and all(_same(a[k], b[k]) for k in a))


def merge(base: dict[str, Any], own: dict[str, Any], prefix: str, base_label: str,
          atomic: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """``own`` laid over ``base`` leaf by leaf, and each leaf's provenance.

    ``own`` values are labelled ``machine file`` (with the base's value in
    brackets where they differ from it); the rest ``base_label``.
    """
    merged = copy.deepcopy(base)
    for k, v in own.items():
        if isinstance(v, dict) and isinstance(merged.get(k), dict) and prefix not in atomic:
            merged[k], _ = merge(merged[k], v, f"{prefix}.{k}", base_label, atomic)
        else:
            merged[k] = copy.deepcopy(v)
    ours, theirs = _leaves(own, prefix, atomic), _leaves(base, prefix, atomic)
    provenance = {}
    for path in sorted(_leaves(merged, prefix, atomic)):
        if path not in ours:
            provenance[path] = base_label
        elif path in theirs and not _same(ours[path], theirs[path]):
            provenance[path] = f"{MACHINE_FILE} ({base_label}: {_short(theirs[path], path)})"
        else:
            provenance[path] = MACHINE_FILE
    return merged, provenance


def _short(value: Any, path: str = "") -> str:
    """The base's value of ``path`` as the provenance names it: with the unit its key's suffix says (``_bps``,
    ``_bytes``, ``_hz``, ``_s``, a peak's flop/s), never an exponent (``249.6 GB/s``, not ``2.496e+11``); four
    significant digits, so that it shows how it differs from the value the machine file gives."""
    from nodecast.report.tables import fmt_bytes, fmt_seconds, significant

    if isinstance(value, dict):
        return ", ".join(f"{k} {_short(v, f'{path}.{k}')}" for k, v in value.items())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    v = float(value)
    if path.endswith("_bps"):
        return f"{significant(v / 1e9, 4)} GB/s"
    if path.endswith("_bytes"):
        return fmt_bytes(v)
    if path.endswith("_hz"):
        return f"{significant(v / 1e9, 4)} GHz"
    if path.endswith("_s"):
        return fmt_seconds(v)
    if ".peak_flops." in path:
        return f"{significant(v / 1e9, 4)} GFlop/s"
    return f"{value:,}" if isinstance(value, int) else significant(v, 4)


#: A peak precision is one unit: a machine file giving ``[gpu.peak_flops.fp32]`` gives both its terms.
GPU_ATOMIC = ("gpu.peak_flops",)


# ---------------------------------------------------------------- spec strings


@dataclass(frozen=True)
class NodeSpec:
    """A parsed spec string: ``count`` GPUs of ``sheet`` in ``host`` (``host_assumed`` when defaulted)."""

    sheet: GpuSheet
    count: int
    host: Host
    host_assumed: bool

    @property
    def name(self) -> str:
        """The canonical spec: ``rtx-3090@xeon-platinum-8480c-2s``, ``a100-sxm4-80gbx8@epyc-7742-2s``."""
        count = f"x{self.count}" if self.count > 1 else ""
        return f"{self.sheet.key}{count}@{self.host.key}"


def _find_sheet_quietly(text: str) -> GpuSheet | None:
    """The sheet keyed or named ``text`` among those that load; None when none is (the caller says what is known)."""
    from nodecast.machines.names import match_sheet
    from nodecast.machines.sheets import gpus_dir, load_sheet, loadable_sheets

    if names_a_file(gpus_dir() / f"{text}.toml"):
        return load_sheet(text)
    hit = match_sheet(text, loadable_sheets()[0])
    return None if hit is None else hit.sheet


def default_host_for(sheet: GpuSheet) -> Host:
    """``DEFAULT_HOST`` for a PCIe GPU; for another host-link kind, the one catalogue host that offers it."""
    from nodecast.machines.hosts import DEFAULT_HOST, all_hosts, load_host

    if sheet.host_link.kind == "pcie":
        return load_host(DEFAULT_HOST)
    offers = [h for h in all_hosts() if h.gpu_link is not None and h.gpu_link.kind == sheet.host_link.kind]
    if len(offers) == 1:
        return offers[0]
    listed = ", ".join(h.key for h in offers) or "none in the catalogue"
    raise InputError(f"{sheet.key} attaches to its host by {sheet.host_link.kind}; hosts that offer it: {listed}",
                     key="host", hint=f"Name one: {sheet.key}@HOST, or write a machine file "
                                      f"(nodecast machines template --gpu {sheet.key})")


def parse_spec(spec: str) -> NodeSpec | None:
    """``GPU[xN][@HOST]`` -> NodeSpec; None when GPU names no data sheet (so the caller can say what is known).

    Raises InputError for a bad count or an unknown host.
    """
    from nodecast.machines.hosts import load_host

    gpu_text, at, host_text = spec.partition("@")
    gpu_text = gpu_text.strip()
    if not gpu_text:
        return None
    count = 1
    sheet = _find_sheet_quietly(gpu_text)
    if sheet is None:
        m = _COUNT.match(gpu_text)
        if m is None:
            return None
        sheet = _find_sheet_quietly(m.group("gpu"))
        if sheet is None:
            return None
        count = int(m.group("count"))
        if not 1 <= count <= MAX_SPEC_GPUS:
            raise InputError(f"GPU count {count} in {spec!r} must be 1 to {MAX_SPEC_GPUS}", key="machine",
                             hint="e.g. a100-sxm4-80gbx8@HOST")
    if at and not host_text.strip():
        raise InputError(f"no host after '@' in {spec!r}", key="machine", hint="e.g. rtx-3090@HOST (nodecast machines list)")
    if at:
        return NodeSpec(sheet, count, load_host(host_text.strip()), host_assumed=False)
    return NodeSpec(sheet, count, default_host_for(sheet), host_assumed=True)


def _gpu_link(spec: NodeSpec, gpu: int, socket: int) -> tuple[dict[str, Any], list[str]]:
    sheet, host = spec.sheet, spec.host
    own, offered = sheet.host_link, host.gpu_link
    ends = [f"cpu{socket}", f"gpu{gpu}"]
    if offered is not None and offered.kind == own.kind:
        link: dict[str, Any] = {"kind": offered.kind}
        if offered.kind == "infinity-fabric":
            # nodecast's transfer models know no Infinity Fabric framing: the link is a bus at its raw rate.
            link = {"kind": "socket-bus", "bandwidth_bps": offered.bandwidth_bps}
            note = f"{host.key}'s Infinity Fabric GPU link modelled as a bus at its raw rate"
            return {"id": f"if-gpu{gpu}", "endpoints": ends, **link}, [note]
        for k in ("gen", "links", "bandwidth_bps"):
            if getattr(offered, k) is not None:
                link[k] = getattr(offered, k)
        return {"id": f"{offered.kind}-gpu{gpu}", "endpoints": ends, **link}, []
    if own.kind == "pcie":
        gen = min(own.gen, host.pcie_gen)  # type: ignore[type-var]
        notes = []
        if gen < own.gen:  # type: ignore[operator]
            notes.append(f"{sheet.key}'s PCIe gen{own.gen} x{own.lanes} runs at gen{gen} in host {host.key}")
        link = {"id": f"pcie-gpu{gpu}", "kind": "pcie", "endpoints": ends, "gen": gen, "lanes": own.lanes}
        if own.bandwidth_bps is not None:
            link["bandwidth_bps"] = own.bandwidth_bps
        return link, notes
    has = "PCIe only" if offered is None else f"{offered.kind}, not {own.kind}"
    raise InputError(f"{sheet.key} attaches to its host by {own.kind} but host {host.key} offers {has}",
                     key="host", hint="Name a host that offers it (nodecast machines list) or write a machine file "
                                      f"(nodecast machines template --gpu {sheet.key} --host {host.key})")


def spec_machine_dict(spec: NodeSpec) -> tuple[dict[str, Any], list[str]]:
    """The machine-file table of a composed node, and its composition notes."""
    sockets = spec.host.cpu.sockets
    placement = [g * sockets // spec.count for g in range(spec.count)]
    links, notes = [], []
    for g, s in enumerate(placement):
        link, why = _gpu_link(spec, g, s)
        links.append(link)
        notes += [n for n in why if n not in notes]
    if sockets > 1 and spec.host.socket_bus_bps is not None:
        for s in range(1, sockets):
            links.append({"id": f"socket-bus{s}", "kind": "socket-bus", "endpoints": ["cpu0", f"cpu{s}"],
                          "bandwidth_bps": spec.host.socket_bus_bps})
    if spec.host_assumed:
        notes.insert(0, Note(f"host assumed: {spec.host.key} ({spec.host.description}); name one with "
                             f"{spec.sheet.key}@HOST (nodecast machines list) or give a machine file", HOST_ASSUMED))
    if spec.count > 1:
        notes.append("composed node: no GPU-to-GPU links, peer copies route through the host "
                     "(a catalogue machine or a machine file describes NVLink/NVSwitch)")
    data = {
        "schema_version": 1,
        "name": spec.name,
        "description": f"{spec.count} x {spec.sheet.name} in {spec.host.description} (composed from data sheets)",
        "cpu": {"host": spec.host.key},
        "gpu": {"sheet": spec.sheet.key, "count": spec.count, "cpu_socket": placement},
        "links": links,
    }
    return data, notes


def compose_machine(spec: str | NodeSpec) -> Machine:
    """The Machine a spec string names (``rtx-3090``, ``h100-sxm5-80gbx8@xeon-platinum-8480c-2s``)."""
    from nodecast.machines.loader import machine_from_dict

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed is None:
        raise InputError(f"{spec!r} names no GPU data sheet", key="machine",
                         hint="Spec strings read GPU[xN][@HOST] with a sheet key (nodecast machines list)")
    data, notes = spec_machine_dict(parsed)
    machine = machine_from_dict(data, parsed.name)
    # No file here: what a machine file would give (count, placement) comes from the spec string.
    provenance = {k: f"spec {parsed.name}" if v == MACHINE_FILE else v for k, v in machine.provenance.items()}
    if parsed.host_assumed:
        provenance = {k: host_label(parsed.host, assumed=True) if v == host_label(parsed.host) else v
                      for k, v in provenance.items()}
    return replace(machine, path=None, provenance=MappingProxyType(provenance),
                   notes=tuple(notes) + machine.notes)


def resolve_file_reference(text: str, machine_path: Path | str) -> str:
    """A ``sheet``/``host`` value: a key as is; a ``.toml`` path relative to the machine file's folder."""
    if text.endswith(".toml"):
        p = Path(text)
        return str(p if p.is_absolute() else Path(machine_path).parent / p)
    return text
