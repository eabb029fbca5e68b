"""``nodecast machines list|show|diff|template``: the machine catalogue, GPU data sheets, hosts, machine files.

The numbers come from ``nodecast.machines.compare`` and
``nodecast.machines.part_summary`` (SI units); this module only formats them.
Tables print GB/s and GB with 1 GB = 1e9 B and TFLOP/s with 1 TFLOP/s =
1e12 FLOP/s; ``--json`` prints the SI numbers themselves. A MACHINE is a
catalogue name, a machine file, or a node composed from a GPU data sheet and
a host: ``GPU[xN][@HOST]`` (``rtx-3090``, ``a100-sxm4-80gbx8@epyc-7742-2s``).
"""

from __future__ import annotations

import argparse
import sys
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.compare import diff_machines, list_rows, machine_summary
from nodecast.report.tables import console

_MACHINE_HELP = "catalogue name, machine TOML file, or GPU[xN][@HOST] composed from a data sheet"

GB = 1e9
TFLOP = 1e12


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("machines", help="list, show and compare machines (catalogue names or TOML files)",
                       description=__doc__)
    msub = p.add_subparsers(dest="machines_command", metavar="{list,show,diff,template}")
    msub.required = True

    ls = msub.add_parser("list", help="the catalogue machines, GPU data sheets and hosts, one row each")
    ls.add_argument("--json", action="store_true",
                    help="print {machines, gpus, hosts} as JSON (SI units)")
    ls.set_defaults(func=run_list)

    sh = msub.add_parser("show", help="every field of one machine with its source, its GPU's limits, links and routes")
    sh.add_argument("machine", metavar="MACHINE", help=_MACHINE_HELP)
    sh.add_argument("--json", action="store_true", help="print the summary as JSON (SI units)")
    sh.set_defaults(func=run_show)

    df = msub.add_parser("diff", help="compare two machines side by side, with the ratio B/A")
    df.add_argument("a", metavar="A", help=_MACHINE_HELP)
    df.add_argument("b", metavar="B", help=_MACHINE_HELP)
    df.add_argument("--json", action="store_true", help="print the rows as JSON (SI units)")
    df.set_defaults(func=run_diff)

    tp = msub.add_parser("template", help="print or write a documented machine file that loads as is")
    tp.add_argument("--gpu", metavar="KEY", help="GPU data sheet key (default: an H100 SXM5)")
    tp.add_argument("--host", metavar="KEY", help="host key (default: nodecast's default host)")
    tp.add_argument("--count", type=int, default=1, metavar="N", help="GPUs in the node (default 1)")
    tp.add_argument("-o", "--output", metavar="FILE", help="write the template to FILE (.toml) instead of printing it")
    tp.set_defaults(func=run_template)


# ---------------------------------------------------------------- formatting


def _console() -> Console:
    # Wide when piped or captured, so that tables are not truncated; the terminal's width otherwise.
    return console(width_when_piped=200)


def _num(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if x is None:
        return "—"
    v = x / scale
    text = f"{v:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _gbps(x: float | None) -> str:
    return _num(x, GB)


def _gb(x: float | None) -> str:
    return _num(x, GB)


def _tflops(x: float | None) -> str:
    return _num(x, TFLOP, 3)


def _fmt(unit: str, x: Any) -> str:
    """A diff value in display units."""
    if x is None:
        return "—"
    if unit == "text":
        return str(x)
    if unit == "B/s":
        return _gbps(x)
    if unit == "B":
        return _gb(x)
    if unit == "FLOP/s":
        return _tflops(x)
    return _num(x)


_DISPLAY_UNIT = {"B/s": "GB/s", "B": "GB", "FLOP/s": "TFLOP/s", "": "", "text": ""}


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=1))


# ---------------------------------------------------------------- list


def run_list(args: argparse.Namespace) -> int:
    from nodecast.machines.hosts import all_hosts
    from nodecast.machines.part_summary import host_rows, sheet_rows
    from nodecast.machines.sheets import loadable_sheets

    rows = list_rows([load_machine(name) for name in catalogue_names()])
    loaded, broken = loadable_sheets()
    gpus, hosts = sheet_rows(loaded), host_rows(all_hosts())
    if args.json:
        _print_json({"machines": rows, "gpus": gpus, "hosts": hosts, "unreadable_sheets": [e.message for e in broken]})
        return 0
    con = _console()
    table = Table(title="Catalogue machines (GB/s per direction, raw link rate; 1 GB = 1e9 B)")
    for col, kw in (("name", {"no_wrap": True}), ("description", {}), ("GPUs", {}), ("host link", {"no_wrap": True}),
                    ("host link GB/s/dir", {"justify": "right"}), ("GPU memory GB", {"justify": "right"}),
                    ("GPU DRAM GB/s", {"justify": "right"})):
        table.add_column(col, **kw)
    for r in rows:
        table.add_row(r["name"], r["description"], f"{r['gpu_count']} × {r['gpu_model']}", r["host_link"],
                      _gbps(r["host_link_raw_bps"]), _gb(r["gpu_memory_bytes"]), _gbps(r["dram_bandwidth_bps"]))
    con.print(table)
    sheets = Table(title="GPU data sheets: compose a node as GPU[xN][@HOST], e.g. --from KEY or KEYx8@HOST")
    for col, kw in (("key", {"no_wrap": True}), ("name", {}), ("target", {}), ("SMs", {"justify": "right"}),
                    ("boost MHz", {"justify": "right"}), ("memory GB", {"justify": "right"}),
                    ("DRAM GB/s", {"justify": "right"}), ("FP32 TFLOP/s", {"justify": "right"}),
                    ("host link", {"no_wrap": True}), ("device names (as traces record them)", {})):
        sheets.add_column(col, **kw)
    for r in gpus:
        sheets.add_row(r["key"], r["name"], r["target"], str(r["sms"]), _num(r["boost_clock_hz"], 1e6, 0),
                       _gb(r["memory_bytes"]), _gbps(r["dram_bandwidth_bps"]), _tflops(r["fp32_flops"]),
                       r["host_link"], "; ".join(r["device_names"]))
    con.print(sheets)
    hts = Table(title="Hosts (CPU and host memory; memory bandwidth per socket)")
    for col, kw in (("key", {"no_wrap": True}), ("description", {}), ("sockets × cores", {"justify": "right"}),
                    ("memory GB", {"justify": "right"}), ("mem GB/s/socket", {"justify": "right"}),
                    ("PCIe gen", {"justify": "right"}), ("GPU link", {})):
        hts.add_column(col, **kw)
    for r in hosts:
        hts.add_row(r["key"], r["description"], f"{r['sockets']} × {r['cores_per_socket']}", _gb(r["memory_bytes"]),
                    _gbps(r["memory_bandwidth_bps"]), str(r["pcie_gen"]), r["gpu_link"] or "PCIe")
    con.print(hts)
    for err in broken:  # a damaged shipped sheet is nodecast's bug, not the user's: list the rest and say so
        print(f"nodecast: warning: sheet left out: {err.message}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- show


def _kv_table(title: str, rows: list[tuple[str, ...]]) -> Table:
    """A field/value table; rows of three add a ``source`` column (where the value came from)."""
    sourced = any(len(r) > 2 for r in rows)
    t = Table(title=title, show_header=sourced, title_justify="left")
    t.add_column("field", style="bold")
    t.add_column("value")
    if sourced:
        t.add_column("source")
    for row in rows:
        # Sources hold brackets ("[derived: ...]", "[NV]") that rich would read as markup.
        t.add_row(*(escape(c) for c in row), *([""] * (2 + sourced - len(row))))
    return t


def _size(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{_gb(x)} GB" if x >= 1e9 else f"{_num(x, 1e6, 3)} MB"


def _with_unit(value: Any, unit: str) -> str:
    """A part_summary value in display units (MHz, GB, GB/s, TFLOP/s)."""
    if value is None:
        return "—"
    if isinstance(value, list):
        return "; ".join(map(str, value))
    if unit == "Hz":
        return f"{_num(value, 1e6, 0)} MHz"
    if unit == "B":
        return _size(value) if value >= 1e6 else f"{_num(value, 1, 0)} B"
    if unit == "B/s":
        return f"{_gbps(value)} GB/s"
    if unit in ("FLOP/s", "OP/s"):
        return f"{_tflops(value)} T{unit}"
    if isinstance(value, float):
        return f"{_num(value)} {unit}".strip()
    return f"{value} {unit}".strip()


def _source_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["field"], _with_unit(r["value"], r["unit"]), r["source"] or "—") for r in rows]


def run_show(args: argparse.Namespace) -> int:
    m = load_machine(args.machine)
    s = machine_summary(m)
    if args.json:
        _print_json(s)
        return 0
    con = _console()
    cpu, gpu, node, src = s["cpu"], s["gpu"], s["node"], s["provenance"]
    con.print(f"[bold]{s['name']}[/]: {s['description']}", soft_wrap=True)
    con.print(f"file: {s['path'] or 'none (composed from a data sheet and a host)'}", soft_wrap=True)
    con.print("Units: GB and GB/s with 1 GB = 1e9 B; bandwidths are per direction; TFLOP/s = 1e12 FLOP/s. "
              "source: where each value came from.", soft_wrap=True)

    def at(key: str) -> str:
        return src.get(key, "derived")

    con.print(_kv_table("CPU", [
        ("model", cpu["model"], at("cpu.model")),
        ("sockets", str(cpu["sockets"]), at("cpu.sockets")),
        ("cores per socket", str(cpu["cores_per_socket"]), at("cpu.cores_per_socket")),
        ("clock", f"{_num(cpu['clock_hz'], 1e9, 3)} GHz", at("cpu.clock_hz")),
        ("host memory (node)", f"{_gb(cpu['memory_bytes'])} GB", at("cpu.memory_bytes")),
        ("memory bandwidth per socket", f"{_gbps(cpu['memory_bandwidth_bps'])} GB/s", at("cpu.memory_bandwidth_bps")),
        ("memory bandwidth per node", f"{_gbps(node['cpu_memory_bandwidth_bps'])} GB/s", "derived: sockets × per socket"),
        ("NUMA domains", str(cpu["numa_domains"]), at("cpu.numa_domains")),
        ("single-thread host copy (pageable staging)",
         "not given" if cpu.get("copy_bandwidth_bps") is None else f"{_gbps(cpu['copy_bandwidth_bps'])} GB/s",
         cpu.get("copy_bandwidth_source") or "nodecast calibrate --host-only measures it"),
    ]))
    con.print(_kv_table("GPU", [
        ("model", gpu["model"], at("gpu.model")),
        ("count", str(gpu["count"]), at("gpu.count")),
        ("CPU socket of each GPU", ", ".join(f"gpu{i}→cpu{c}" for i, c in enumerate(gpu["cpu_socket"])),
         at("gpu.cpu_socket")),
        ("SMs", str(gpu["sms"]), at("gpu.sms")),
        ("clock", f"{_num(gpu['clock_hz'], 1e6, 0)} MHz", at("gpu.clock_hz")),
        ("memory per GPU", f"{_gb(gpu['memory_bytes'])} GB", at("gpu.memory_bytes")),
        ("memory per node", f"{_gb(node['gpu_memory_bytes'])} GB", "derived: count × per GPU"),
        ("DRAM bandwidth per GPU", f"{_gbps(gpu['levels']['dram']['bandwidth_bps'])} GB/s",
         at("gpu.levels.dram.bandwidth_bps")),
        ("DRAM bandwidth per node", f"{_gbps(node['gpu_dram_bandwidth_bps'])} GB/s", "derived: count × per GPU"),
    ]))

    peaks = Table(title="GPU compute peaks (TFLOP/s; ADD/MUL = every instruction an ADD or a MUL)", title_justify="left")
    for col in ("precision", "FMA per GPU", "ADD/MUL per GPU", "FMA per node", "ADD/MUL per node", "source"):
        peaks.add_column(col, justify="left" if col in ("precision", "source") else "right")
    for prec, p in gpu["peak_flops"].items():
        n = node["peak_flops"][prec]
        peaks.add_row(prec, _tflops(p["fma"]), _tflops(p["addmul"]), _tflops(n["fma"]), _tflops(n["addmul"]),
                      escape(at(f"gpu.peak_flops.{prec}")))
    con.print(peaks)

    levels = Table(title="GPU memory levels (per GPU)", title_justify="left")
    for col in ("level", "bandwidth GB/s", "size", "source"):
        levels.add_column(col, justify="left" if col in ("level", "source") else "right")
    for name, lv in gpu["levels"].items():
        where = dict.fromkeys(src.get(f"gpu.levels.{name}.{k}") for k in ("bandwidth_bps", "size_bytes"))
        levels.add_row(name, _gbps(lv["bandwidth_bps"]), _size(lv["size_bytes"]), escape("; ".join(w for w in where if w)))
    con.print(levels)

    sheet = s["sheet"]
    if sheet is None:
        con.print("GPU data sheet: none (the machine file gives its GPU values itself; `[gpu] sheet = KEY` names one).")
    else:
        con.print(_kv_table(f"GPU data sheet {sheet['key']} ({sheet['path']}); every value of this product, "
                            "tensor peaks included (source: the sheet's comment)", _source_rows(sheet["rows"])))
        lim = sheet["limits"]
        con.print(_kv_table(f"Per-SM limits of {lim['target']} ({lim['path']})", _source_rows(lim["rows"])))
    if s["host"] is not None:
        h = s["host"]
        con.print(_kv_table(f"Host {h['key']} ({h['path']}): {h['description']}", _source_rows(h["rows"])))

    links = Table(title="Links (raw rate per direction: line encoding applied, no protocol overhead; GB/s)",
                  title_justify="left")
    for col in ("id", "kind", "endpoints", "gen", "lanes/links", "MPS/MRRS/RCB/header B", "raw GB/s/dir"):
        links.add_column(col, justify="right" if col in ("gen", "lanes/links", "raw GB/s/dir") else "left")
    for lk in s["links"]:
        width = lk["lanes"] if lk["kind"] == "pcie" else lk["links"]
        tlp = "—"
        if lk["kind"] == "pcie":
            tlp = f"{lk['mps_bytes']}/{lk['mrrs_bytes']}/{lk['rcb_bytes']}/{lk['header_bytes']}"
        links.add_row(lk["id"], lk["kind"], " ↔ ".join(lk["endpoints"]), "—" if lk["gen"] is None else str(lk["gen"]),
                      "—" if width is None else str(width), tlp, _gbps(lk["raw_rate_bps"]))
    con.print(links)
    if s["switches"]:
        con.print(f"switches: {', '.join(s['switches'])}")

    hosts = Table(title="Host routes: each GPU to its own CPU socket (GB/s per direction)", title_justify="left")
    for col in ("GPU", "socket", "route", "bottleneck", "raw GB/s", "all GPUs at once GB/s"):
        hosts.add_column(col, justify="right" if "GB/s" in col else "left")
    for h in s["host_routes"]:
        hosts.add_row(f"gpu{h['gpu']}", f"cpu{h['socket']}", " → ".join(h["links"]),
                      f"{h['bottleneck']} ({h['bottleneck_label']})", _gbps(h["raw_rate_bps"]),
                      _gbps(h["shared_rate_bps"]))
    con.print(hosts)
    con.print("'all GPUs at once': each link's rate split equally among the GPU host routes that cross it.")

    if s["peer_routes"]:
        peers = Table(title="Peer routes from gpu0 (fewest links; GB/s per direction)", title_justify="left")
        for col in ("to", "route", "bottleneck", "raw GB/s"):
            peers.add_column(col, justify="right" if "GB/s" in col else "left")
        for p in s["peer_routes"]:
            peers.add_row(f"gpu{p['dst']}", " → ".join(p["links"]), f"{p['bottleneck']} ({p['bottleneck_label']})",
                          _gbps(p["raw_rate_bps"]))
        con.print(peers)
    nv = s["peer_nvlink_bps"]
    con.print(f"Peer NVLink bandwidth of gpu0, aggregate: {'none' if nv is None else _gbps(nv) + ' GB/s per direction'}")

    meas = s["measured"]
    if meas is None:
        con.print("Measured values: none (data-sheet machine).")
    else:
        rows = [("origin", meas["origin"])]
        rows += [(k, str(meas[k])) for k in ("date", "driver", "gpu_name", "gpu_origin") if meas[k]]
        rows += [(f"1-byte cost {k}", f"{_num(v * 1e6, 1, 3)} µs") for k, v in meas["one_byte_s"].items()]
        rows += [(f"bandwidth {k}", f"{_gbps(v)} GB/s") for k, v in meas["bandwidth_bps"].items()]
        rows += [(f"curve {k}", f"{len(c['sizes_bytes'])} points") for k, c in meas["curves"].items()]
        rows += [(f"GPU peak {k}", f"FMA {_tflops(p['fma'])} / ADD-MUL {_tflops(p['addmul'])} TFLOP/s")
                 for k, p in meas["gpu_peak_flops"].items()]
        rows += [(f"GPU {k} bandwidth", f"{_gbps(v)} GB/s") for k, v in meas["gpu_level_bandwidth_bps"].items()]
        rows += [(k, v) for k, v in meas["facts"].items()]
        con.print(_kv_table("Measured values (override data-sheet values)", rows))
    for note in s["notes"]:
        con.print(f"note: {note}", highlight=False, soft_wrap=True)
    return 0


# ---------------------------------------------------------------- diff


def run_diff(args: argparse.Namespace) -> int:
    a, b = load_machine(args.a), load_machine(args.b)
    rows = diff_machines(a, b)
    if args.json:
        _print_json({"a": a.name, "b": b.name, "rows": rows})
        return 0
    table = Table(title=f"{a.name} (A) vs {b.name} (B): GB/s per direction, 1 GB = 1e9 B, TFLOP/s = 1e12 FLOP/s")
    table.add_column("quantity")
    table.add_column("unit")
    table.add_column(f"A: {a.name}", justify="right")
    table.add_column(f"B: {b.name}", justify="right")
    table.add_column("B/A", justify="right")
    for r in rows:
        table.add_row(r["quantity"], _DISPLAY_UNIT[r["unit"]], _fmt(r["unit"], r["a"]), _fmt(r["unit"], r["b"]),
                      "—" if r["ratio"] is None else f"{r['ratio']:.2f}×")
    _console().print(table)
    return 0


# ---------------------------------------------------------------- template


def run_template(args: argparse.Namespace) -> int:
    from nodecast.errors import InputError
    from nodecast.machines.compose import MAX_SPEC_GPUS
    from nodecast.machines.template import machine_template

    if not 1 <= args.count <= MAX_SPEC_GPUS:
        raise InputError(f"must be 1 to {MAX_SPEC_GPUS} (got {args.count})", key="--count")
    if args.output:
        from nodecast.fileio import atomic_path, check_writable

        if not args.output.endswith(".toml"):
            raise InputError("a machine file ends in .toml", path=args.output, key="-o", hint="e.g. -o my-node.toml")
        check_writable(args.output, "-o")
    text = machine_template(args.gpu, args.host, args.count)
    if not args.output:
        print(text, end="")
        return 0
    with atomic_path(args.output) as tmp:
        tmp.write_text(text)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
