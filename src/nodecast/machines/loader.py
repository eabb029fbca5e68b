"""Read and validate Machine TOML files; list the catalogue's machines.

Every check names the file, the key (as a dotted path, ``links[2].lanes``)
and the reason, so a user can fix the file without reading nodecast's code.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from nodecast.decoding import decoder_limits
from nodecast.errors import InputError
from nodecast.inputs import CONFIG_LIMIT_BYTES, read_input
from nodecast.machines.cpu_table import read_cpu
from nodecast.machines.hosts import load_host
from nodecast.machines.part_tables import (
    GPU_ATOMIC,
    MACHINE_FILE,
    host_cpu_table,
    host_label,
    merge,
    resolve_file_reference,
    sheet_gpu_table,
    sheet_label,
)
from nodecast.machines.schema import (
    GPU,
    LINK_KINDS,
    MAX_CONCURRENT_KERNELS,
    MAX_COPY_ENGINES,
    MEASURED_CLASSES,
    MEMORY_LEVELS,
    PRECISIONS,
    Curve,
    Link,
    Machine,
    Measured,
    MemoryLevel,
    PeakFlops,
)
from nodecast.machines.reader import MAX_BANDWIDTH_BPS, Reader
from nodecast.machines.sheets import load_sheet
from nodecast.machines.topology import (
    NVLINK_BPS_PER_LINK,
    NVLS_MIN_NVSWITCH_GEN,
    NVSWITCH_GENERATIONS,
    PCIE_GT_PER_S,
    SWITCH_KINDS,
    XGMI_BPS_PER_LINK,
    Switch,
)
from nodecast.paths import names_a_file

SCHEMA_VERSION = 1
_FIX = "Fix the machine file"
_Reader = Reader


def _peaks(r: _Reader | None) -> dict[str, PeakFlops]:
    if r is None:
        return {}
    r.unknown_keys(set(PRECISIONS))
    out = {}
    for precision in PRECISIONS:
        p = r.sub(precision, required=False)
        if p is not None:
            p.unknown_keys({"fma", "addmul"})
            out[precision] = PeakFlops(fma=p.positive("fma"), addmul=p.positive("addmul"))  # type: ignore[arg-type]
    return out


def _gpu(r: _Reader, sockets: int) -> GPU:
    r.unknown_keys({"model", "count", "sms", "clock_hz", "memory_bytes", "cpu_socket",
                    "peak_flops", "levels", "copy_engines", "max_concurrent_kernels"})
    count = r.count("count")
    placement = r.table.get("cpu_socket", [0] * count)  # type: ignore[operator]
    if (not isinstance(placement, list) or len(placement) != count
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < sockets for s in placement)):
        raise r.fail("cpu_socket", f"must list one socket in 0..{sockets - 1} per GPU ({count} GPUs; got {placement!r})")
    levels_r = r.sub("levels")
    levels_r.unknown_keys(set(MEMORY_LEVELS))  # type: ignore[union-attr]
    levels = {}
    for level in MEMORY_LEVELS:
        lr = levels_r.sub(level, required=level == "dram")  # type: ignore[union-attr]
        if lr is not None:
            lr.unknown_keys({"bandwidth_bps", "size_bytes"})
            levels[level] = MemoryLevel(
                bandwidth_bps=lr.bandwidth("bandwidth_bps", required=level == "dram"),
                size_bytes=lr.positive("size_bytes", required=False),
            )
    return GPU(
        model=r.string("model"),  # type: ignore[arg-type]
        count=count,  # type: ignore[arg-type]
        sms=r.count("sms"),  # type: ignore[arg-type]
        clock_hz=r.positive("clock_hz"),  # type: ignore[arg-type]
        memory_bytes=r.positive("memory_bytes"),  # type: ignore[arg-type]
        cpu_socket=tuple(placement),
        peak_flops=_peaks(r.sub("peak_flops", required=False)),
        levels=levels,
        copy_engines=r.count("copy_engines", required=False, high=MAX_COPY_ENGINES),
        max_concurrent_kernels=r.count("max_concurrent_kernels", required=False, high=MAX_CONCURRENT_KERNELS),
    )


_LINK_KEYS = {"id", "kind", "endpoints", "gen", "lanes", "links", "mps_bytes", "mrrs_bytes",
              "rcb_bytes", "header_bytes", "bandwidth_bps", "latency_s"}


def _link(r: _Reader, endpoints: set[str]) -> Link:
    r.unknown_keys(_LINK_KEYS)
    kind = r.string("kind")
    if kind not in LINK_KINDS:
        raise r.fail("kind", f"unknown link kind {kind!r} (known: {', '.join(LINK_KINDS)})")
    ends = r.table.get("endpoints")
    if not isinstance(ends, list) or len(ends) != 2 or not all(isinstance(e, str) for e in ends):
        raise r.fail("endpoints", f"must be two endpoint names (got {ends!r})")
    for end in ends:
        if end not in endpoints:
            raise r.fail("endpoints", f"unknown endpoint {end!r} (known: {', '.join(sorted(endpoints))})")
    if ends[0] == ends[1]:
        raise r.fail("endpoints", f"a link cannot join {ends[0]!r} to itself")
    gen = r.count("gen", required=kind in ("pcie", "nvlink", "xgmi"))
    if kind == "pcie" and gen not in PCIE_GT_PER_S:
        raise r.fail("gen", f"unknown PCIe generation {gen} (known: 1-6)")
    if kind == "nvlink" and gen not in NVLINK_BPS_PER_LINK:
        raise r.fail("gen", f"unknown NVLink generation {gen} (known: 1-5)")
    if kind == "xgmi" and gen not in XGMI_BPS_PER_LINK:
        known = f"{min(XGMI_BPS_PER_LINK)}-{max(XGMI_BPS_PER_LINK)}"
        raise r.fail("gen", f"unknown Infinity Fabric (xGMI) generation {gen} (known: {known}; 3: MI200, 4: MI300)")
    link = Link(
        id=r.string("id"),  # type: ignore[arg-type]
        kind=kind,  # type: ignore[arg-type]
        endpoints=(ends[0], ends[1]),
        gen=gen,
        lanes=r.count("lanes", required=kind == "pcie"),
        links=r.count("links", required=kind in ("nvlink", "xgmi")),
        mps_bytes=r.count("mps_bytes", required=False),
        mrrs_bytes=r.count("mrrs_bytes", required=False),
        rcb_bytes=r.count("rcb_bytes", required=False),
        header_bytes=r.count("header_bytes", required=False),
        bandwidth_bps=r.bandwidth("bandwidth_bps", required=kind in ("nvlink-c2c", "socket-bus")),
        latency_s=r.non_negative("latency_s", required=False),
    )
    if kind == "pcie":
        link = _pcie_defaults(link, r)
    return link


#: TLP parameters assumed when a PCIe link does not give them. AHEAD's code
#: has MPS 256 B as a class attribute but 128 B as its constructor default
#: (../shared/reference/FORMATS.md A.3); the catalogue files set 128 B
#: explicitly, the loader's fallback keeps the class attribute, 256 B. MRRS
#: 512 B and RCB 64 B are AHEAD's; 12 B is the paper's header size for 64-bit
#: addressing (section IV.A: "8 (32-bit addressing) or 12 (64-bit)").
PCIE_DEFAULTS = {"mps_bytes": 256, "mrrs_bytes": 512, "rcb_bytes": 64, "header_bytes": 12}


def _pcie_defaults(link: Link, r: _Reader) -> Link:
    from dataclasses import replace

    values = {k: getattr(link, k) or v for k, v in PCIE_DEFAULTS.items()}
    if values["rcb_bytes"] > values["mps_bytes"]:
        raise r.fail("rcb_bytes", f"RCB ({values['rcb_bytes']} B) cannot exceed MPS ({values['mps_bytes']} B)")
    if link.lanes not in (1, 2, 4, 8, 12, 16, 32):
        raise r.fail("lanes", f"PCIe links have 1, 2, 4, 8, 12, 16 or 32 lanes (got {link.lanes})")
    return replace(link, **values)


def _switch_specs(r: _Reader, listed: list[str]) -> tuple[Switch, ...]:
    """The ``[switch.NAME]`` tables: what the file says of the switches it lists (none: an empty tuple).

    A table is optional, so files without one load as before; a value it gives is checked, and ``sharp = true``
    (NVLink SHARP, which NCCL's NVLS algorithm needs) only on an NVSwitch of generation 3 or later.
    """
    tables = r.sub("switch", required=False)
    if tables is None:
        return ()
    specs = []
    for name in tables.table:
        if name not in listed:
            raise tables.fail(name, f"describes a switch not listed in switches ({', '.join(listed) or 'none'})",
                              hint="Name a switch of the switches list, or add it there")
        t: _Reader = tables.sub(name)  # type: ignore[assignment]  # required: never None
        t.unknown_keys({"kind", "gen", "sharp"})
        kind: str = t.choice("kind", SWITCH_KINDS)  # type: ignore[assignment]  # required: never None
        gen = t.count("gen", required=False)
        if kind == "nvswitch" and gen is not None and gen not in NVSWITCH_GENERATIONS:
            raise t.fail("gen", f"unknown NVSwitch generation {gen} (known: 1-{max(NVSWITCH_GENERATIONS)})")
        if kind == "pcie" and gen is not None and gen not in PCIE_GT_PER_S:
            raise t.fail("gen", f"unknown PCIe generation {gen} (known: 1-6)")
        sharp = t.table.get("sharp", False)
        if not isinstance(sharp, bool):
            raise t.fail("sharp", f"must be true or false (got {sharp!r})")
        if sharp and (kind != "nvswitch" or gen is None or gen < NVLS_MIN_NVSWITCH_GEN):
            what = ("a PCIe switch" if kind == "pcie" else
                    "an NVSwitch of no given generation" if gen is None else f"NVSwitch generation {gen}")
            raise t.fail("sharp", "NVLink SHARP needs a third-generation NVSwitch or later (H100/H200: 3, "
                                  f"Blackwell: 4); this is {what}", hint="Give gen = 3 or later, or set sharp = false")
        specs.append(Switch(id=name, kind=kind, gen=gen, sharp=sharp))
    return tuple(specs)


def _measured(r: _Reader | None) -> Measured | None:
    if r is None:
        return None
    r.unknown_keys({"origin", "date", "driver", "gpu_name", "one_byte_s", "bandwidth_bps",
                    "curves", "gpu", "facts", "host_copy_bandwidth_bps"})

    def per_class(name: str, check: str) -> dict[str, float]:
        t = r.sub(name, required=False)
        if t is None:
            return {}
        t.unknown_keys(set(MEASURED_CLASSES))
        return {k: getattr(t, check)(k) for k in t.table}

    curves = {}
    cr = r.sub("curves", required=False)
    if cr is not None:
        cr.unknown_keys(set(MEASURED_CLASSES))
        for klass in cr.table:
            c = cr.sub(klass)
            c.unknown_keys({"sizes_bytes", "bandwidth_bps"})  # type: ignore[union-attr]
            sizes, bws = c.table.get("sizes_bytes"), c.table.get("bandwidth_bps")  # type: ignore[union-attr]
            ok = (isinstance(sizes, list) and isinstance(bws, list) and len(sizes) == len(bws) > 0
                  and all(isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in sizes + bws))
            if not ok:
                raise c.fail("bandwidth_bps", "sizes_bytes and bandwidth_bps must be lists of positive numbers of equal length")  # type: ignore[union-attr]
            largest = max(bws)  # type: ignore[arg-type]
            if not all(math.isfinite(x) for x in sizes + bws) or largest > MAX_BANDWIDTH_BPS:  # type: ignore[operator]
                raise c.fail("bandwidth_bps", f"must be finite and at most {MAX_BANDWIDTH_BPS:g} B/s = 1 PB/s "  # type: ignore[union-attr]
                             f"(largest: {largest:g}); check the unit (bytes/s)")
            curves[klass] = Curve(tuple(map(float, sizes)), tuple(map(float, bws)))  # type: ignore[arg-type]
    g = r.sub("gpu", required=False)
    gpu_peaks: dict[str, PeakFlops] = {}
    gpu_levels: dict[str, float] = {}
    gpu_origin = None
    if g is not None:
        g.unknown_keys({"origin", "peak_flops", "level_bandwidth_bps"})
        gpu_origin = g.string("origin")
        gpu_peaks = _peaks(g.sub("peak_flops", required=False))
        lv = g.sub("level_bandwidth_bps", required=False)
        if lv is not None:
            lv.unknown_keys(set(MEMORY_LEVELS))
            gpu_levels = {k: lv.bandwidth(k) for k in lv.table}  # type: ignore[misc]
    facts = r.table.get("facts", {})
    if not isinstance(facts, Mapping) or not all(isinstance(v, str) for v in facts.values()):
        raise r.fail("facts", "must be a table of strings")
    return Measured(
        origin=r.string("origin"),  # type: ignore[arg-type]
        date=r.string("date", required=False),
        driver=r.string("driver", required=False),
        gpu_name=r.string("gpu_name", required=False),
        one_byte_s=per_class("one_byte_s", "positive"),
        bandwidth_bps=per_class("bandwidth_bps", "bandwidth"),
        curves=curves,
        gpu_origin=gpu_origin,
        gpu_peak_flops=gpu_peaks,
        gpu_level_bandwidth_bps=gpu_levels,
        host_copy_bandwidth_bps=r.bandwidth("host_copy_bandwidth_bps", required=False),
        facts=dict(facts),
    )


def _composed(r: _Reader, section: str, ref_key: str) -> tuple[_Reader, Any, dict[str, str]]:
    """``[cpu]``/``[gpu]`` with the values of the host/sheet it names filled in, the part, and provenance."""
    own = r.sub(section)
    table = dict(own.table)  # type: ignore[union-attr]
    if ref_key not in table:
        return own, None, {p: MACHINE_FILE for p in _flat(table, section, GPU_ATOMIC)}  # type: ignore[return-value]
    ref = own.string(ref_key)  # type: ignore[union-attr]
    del table[ref_key]
    ref = resolve_file_reference(ref, r.path)  # type: ignore[arg-type]
    try:
        if ref_key == "sheet":
            part: Any = load_sheet(ref)
            base, label = sheet_gpu_table(part), sheet_label(part)
        else:
            part = load_host(ref)
            base, label = host_cpu_table(part), host_label(part)
    except InputError as exc:
        if exc.path is not None:  # the sheet or host file itself is bad: its own error names it
            raise
        raise InputError(exc.reason, path=r.path, key=f"{section}.{ref_key}", hint=exc.hint) from None
    merged, provenance = merge(base, table, section, label, GPU_ATOMIC)
    return _Reader(r.path, merged, section), part, provenance


def _flat(table: Mapping[str, Any], prefix: str, atomic: tuple[str, ...]) -> list[str]:
    out = []
    for k, v in table.items():
        path = f"{prefix}.{k}"
        out += _flat(v, path, atomic) if isinstance(v, Mapping) and prefix not in atomic else [path]
    return out


def machine_from_dict(data: Mapping[str, Any], path: Path | str) -> Machine:
    """Validate a parsed machine file and build the Machine.

    ``[cpu] host = KEY`` and ``[gpu] sheet = KEY`` fill the values the file
    does not give from a host file / GPU data sheet (``nodecast.machines.part_tables``).
    """
    from dataclasses import replace
    from types import MappingProxyType

    r = _Reader(path, data, "")
    r.unknown_keys({"schema_version", "name", "description", "cpu", "gpu", "links", "switches", "switch", "measured"})
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise r.fail("schema_version", f"must be {SCHEMA_VERSION} (got {version!r})")
    cpu_r, host, cpu_prov = _composed(r, "cpu", "host")
    gpu_r, sheet, gpu_prov = _composed(r, "gpu", "sheet")
    cpu = replace(read_cpu(cpu_r), host=host)
    gpu = replace(_gpu(gpu_r, cpu.sockets), sheet=sheet)
    provenance = {**cpu_prov, **gpu_prov}
    provenance.setdefault("cpu.numa_domains", "default: one per socket")
    provenance.setdefault("gpu.cpu_socket", "default: every GPU on socket 0")
    switches = data.get("switches", [])
    if not isinstance(switches, list) or not all(isinstance(s, str) and s.strip() for s in switches):
        raise r.fail("switches", f"must be a list of names (got {switches!r})")
    devices = {f"cpu{i}" for i in range(cpu.sockets)} | {f"gpu{i}" for i in range(gpu.count)}
    for i, name in enumerate(switches):
        # A switch named like a CPU or GPU, or listed twice, would silently merge two endpoints of the graph.
        if name in devices or switches.index(name) != i:
            raise r.fail("switches", f"switch name {name!r} is used twice or clashes with a CPU/GPU endpoint")
    endpoints = devices | set(switches)
    switch_specs = _switch_specs(r, switches)
    raw_links = data.get("links")
    if not isinstance(raw_links, list) or not raw_links:
        raise r.fail("links", "must list at least one [[links]] table")
    links = []
    for i, raw in enumerate(raw_links):
        if not isinstance(raw, Mapping):
            raise r.fail(f"links[{i}]", "must be a table")
        links.append(_link(_Reader(path, raw, f"links[{i}]"), endpoints))
    ids = [link.id for link in links]
    dup = next((x for x in ids if ids.count(x) > 1), None)
    if dup:
        raise r.fail("links", f"link id {dup!r} is used twice")
    machine = Machine(
        name=r.string("name"),  # type: ignore[arg-type]
        description=r.string("description"),  # type: ignore[arg-type]
        cpu=cpu,
        gpu=gpu,
        links=tuple(links),
        switches=tuple(switches),
        measured=_measured(r.sub("measured", required=False)),
        path=Path(path) if not isinstance(path, Path) else path,
        provenance=MappingProxyType(provenance),
        switch_specs=switch_specs,
    )
    for g in range(gpu.count):  # every GPU must reach its host socket
        machine.host_route(g)
    return machine


def load_machine_file(path: str | Path) -> Machine:
    """Load and validate one machine TOML file."""
    path = Path(path)
    try:
        # Bounded, devices refused (/dev/zero was read until memory ran out): see nodecast.inputs.
        text = read_input(path, what="machine file", limit=CONFIG_LIMIT_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path=path, hint="Give a catalogue name (nodecast machines list) or a TOML path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read machine file ({exc})", path=path) from None
    if not text.strip():
        raise InputError("is empty", path=path, hint="A machine file starts with schema_version = 1; see nodecast machines show h100-sxm5-server")
    try:
        with decoder_limits(path, "machine file", _FIX):
            data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path, hint=_FIX) from None
    return machine_from_dict(data, path)


def catalogue_dir() -> Path:
    """The folder of data-sheet and measured machines shipped with nodecast."""
    return Path(str(resources.files("nodecast.machines") / "catalogue"))


def catalogue_names() -> list[str]:
    """Names of the catalogue machines, sorted."""
    return sorted(p.stem for p in catalogue_dir().glob("*.toml"))
