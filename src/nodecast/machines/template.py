"""A documented machine-file template (``nodecast machines template``) that loads as is.

The template names a GPU data sheet and a host, so it is a valid node from
the start; every value the sheet and host fill in is listed commented out,
with its unit and the sheet's or host's value, ready to be uncommented and
changed (a value given in the file overrides the sheet's). The links are
those the composition would build (``nodecast.machines.compose``).
"""

from __future__ import annotations

from typing import Any

from nodecast.machines.compose import NodeSpec, spec_machine_dict
from nodecast.machines.hosts import DEFAULT_HOST, load_host
from nodecast.machines.part_tables import host_cpu_table, sheet_gpu_table
from nodecast.machines.sheets import load_sheet, sheet_keys

#: Sheet used when ``--gpu`` is not given (the first of these that the catalogue has).
DEFAULT_TEMPLATE_GPUS = ("h100-sxm5-80gb", "h100-sxm5")

_CPU_DOC = {
    "model": "CPU model name (text)",
    "sockets": "CPU sockets (packages) in the node",
    "cores_per_socket": "cores per socket",
    "clock_hz": "nominal core clock, Hz",
    "memory_bytes": "host memory of the whole node, bytes (1 GB = 1e9)",
    "memory_bandwidth_bps": "theoretical DRAM bandwidth of ONE socket, bytes/s (channels x 8 B x transfers/s)",
    "numa_domains": "NUMA nodes of the node (default: one per socket)",
}
_GPU_DOC = {
    "model": "GPU model name (text)",
    "sms": "streaming multiprocessors (AMD: compute units) per GPU",
    "clock_hz": "boost clock, Hz (the clock the peaks are given at)",
    "memory_bytes": "memory per GPU, bytes",
}
_LINK_DOC = {
    "id": "unique link name (used in reports)",
    "kind": "pcie | nvlink | nvlink-c2c | socket-bus",
    "endpoints": "the two ends: cpuN (socket N), gpuN, or a switch named in `switches`",
    "gen": "PCIe generation 1-6 (NVLink: 1-5)",
    "lanes": "PCIe lanes: 1, 2, 4, 8, 12, 16 or 32",
    "links": "NVLink links (bricks) joining the two ends",
    "bandwidth_bps": "per-direction bandwidth, bytes/s (required for nvlink-c2c and socket-bus)",
}
_PCIE_OPTIONAL = (
    "# mps_bytes = 256                  # PCIe max payload size, bytes (default 256; `lspci -vv` DevCtl MaxPayload)",
    "# mrrs_bytes = 512                 # PCIe max read request size, bytes (default 512; DevCtl MaxReadReq)",
    "# rcb_bytes = 64                   # read completion boundary, bytes (default 64)",
    "# header_bytes = 12                # TLP header, bytes (default 12: 64-bit addressing)",
)


def _value(v: Any) -> str:
    """A TOML literal; floats in the shortest form that reads back exactly."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        for digits in range(1, 18):
            text = f"{v:.{digits}g}"
            if float(text) == v:
                break
        mantissa, _, exponent = text.partition("e")
        if exponent:  # 1.98e+09 -> 1.98e9, as the catalogue files write them
            return f"{mantissa}e{int(exponent)}"
        return text if "." in text else text + ".0"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    msg = f"no TOML form for {v!r}"
    raise TypeError(msg)


def _line(key: str, value: Any, doc: str, commented: bool = False) -> str:
    text = f"{'# ' if commented else ''}{key} = {_value(value)}"
    return f"{text:<34} # {doc}"


def default_template_gpu() -> str:
    """The sheet key used when ``--gpu`` is not given."""
    keys = sheet_keys()
    return next((k for k in DEFAULT_TEMPLATE_GPUS if k in keys), keys[0] if keys else DEFAULT_TEMPLATE_GPUS[0])


def machine_template(gpu: str | None = None, host: str | None = None, count: int = 1,
                     name: str = "my-node") -> str:
    """The text of a machine file for ``count`` GPUs of sheet ``gpu`` in ``host``, every key explained."""
    sheet = load_sheet(gpu or default_template_gpu())
    hst = load_host(host or DEFAULT_HOST)
    data, notes = spec_machine_dict(NodeSpec(sheet, count, hst, host_assumed=host is None))
    cmd = "nodecast machines template" + (f" --gpu {gpu}" if gpu else "") + (f" --host {host}" if host else "") + \
        (f" --count {count}" if count != 1 else "")
    out = [
        "# nodecast machine file: one compute node (CPU sockets, GPUs, and the links between them).",
        f"# Written by `{cmd}`; format: docs/machines.md.",
        "# Units are SI: bytes (1 GB = 1e9 B), Hz, bytes/s per direction, FLOP/s (an FMA counts as 2 FLOP).",
        "# `sheet` and `host` fill every value this file leaves out; a value given here overrides theirs",
        "# (`nodecast machines show FILE` prints each value with where it came from). Put the source of",
        "# every value you give beside it in a comment, as the catalogue files do.",
    ]
    if host is None:
        out.append(f"# The host is nodecast's default ({hst.key}): set `host` to yours (nodecast machines list).")
    out += [f"# Note: {n}" for n in notes if not n.startswith("host assumed")]
    out += [
        _line("schema_version", 1, "file format version: must be 1"),
        _line("name", name, "short name shown in reports"),
        _line("description", f"{count} x {sheet.name} in {hst.description}", "one line: what this node is"),
        "",
        "[cpu]",
        _line("host", hst.key, "host file (nodecast machines list); remove to give every value below"),
    ]
    out += [_line(k, v, _CPU_DOC[k], commented=True) for k, v in host_cpu_table(hst).items()]
    g = sheet_gpu_table(sheet)
    out += [
        "",
        "[gpu]",
        _line("sheet", sheet.key, "GPU data sheet (nodecast machines list); remove to give every value below"),
        _line("count", count, "GPUs in the node, all of this model"),
        _line("cpu_socket", data["gpu"]["cpu_socket"], "socket each GPU is attached to, one entry per GPU"),
    ]
    out += [_line(k, g[k], _GPU_DOC[k], commented=True) for k in _GPU_DOC]
    for precision, peak in g["peak_flops"].items():
        out += [f"{'# [gpu.peak_flops.' + precision + ']':<34} # {precision.upper()} peaks per GPU, FLOP/s",
                _line("fma", peak["fma"], "every instruction an FMA (2 FLOP each)", commented=True),
                _line("addmul", peak["addmul"], "every instruction an ADD or MUL (half the FMA peak)",
                      commented=True)]
    for level, values in g["levels"].items():
        what = "DRAM (HBM/GDDR)" if level == "dram" else level.upper()
        out.append(f"{'# [gpu.levels.' + level + ']':<34} # {what} per GPU")
        if "bandwidth_bps" in values:
            out.append(_line("bandwidth_bps", values["bandwidth_bps"], "bandwidth, bytes/s", commented=True))
        if "size_bytes" in values:
            out.append(_line("size_bytes", values["size_bytes"], "size, bytes", commented=True))
    out.append("# [gpu.levels.l1] and [gpu.levels.shared] take bandwidth_bps and size_bytes as well.")
    for link in data["links"]:
        out += ["", "[[links]]"]
        out += [_line(k, v, _LINK_DOC[k]) for k, v in link.items()]
        if link["kind"] == "pcie":
            out += list(_PCIE_OPTIONAL)
        out.append("# latency_s = 0.0                  # link latency, s (optional)")
    out += [
        "",
        "# Measured values (written by `nodecast calibrate`, or quoted from a published measurement) override",
        "# data-sheet values: see docs/machines.md and src/nodecast/machines/catalogue/*.toml for examples.",
        "# [measured]",
        '# origin = "..."                   # who measured, with what',
        "# [measured.one_byte_s]            # cost of a 1-byte copy per copy class, s (htod_pinned, dtoh_pinned...)",
        "# [measured.bandwidth_bps]         # measured bandwidth per copy class, bytes/s",
        "",
    ]
    return "\n".join(out)
