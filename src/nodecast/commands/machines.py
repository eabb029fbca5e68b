"""``nodecast machines list|show|diff``: the machine catalogue and machine files.

The numbers come from ``nodecast.machines.compare`` (SI units); this module
only formats them. Tables print GB/s and GB with 1 GB = 1e9 B and TFLOP/s with
1 TFLOP/s = 1e12 FLOP/s; ``--json`` prints the SI numbers themselves.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.compare import diff_machines, list_rows, machine_summary
from nodecast.report.tables import console

GB = 1e9
TFLOP = 1e12


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("machines", help="list, show and compare machines (catalogue names or TOML files)",
                       description=__doc__)
    msub = p.add_subparsers(dest="machines_command", metavar="{list,show,diff}")
    msub.required = True

    ls = msub.add_parser("list", help="the catalogue machines, one row each")
    ls.add_argument("--json", action="store_true", help="print the rows as JSON (SI units)")
    ls.set_defaults(func=run_list)

    sh = msub.add_parser("show", help="every field of one machine, its links and routes")
    sh.add_argument("machine", metavar="NAME|PATH", help="catalogue name or machine TOML file")
    sh.add_argument("--json", action="store_true", help="print the summary as JSON (SI units)")
    sh.set_defaults(func=run_show)

    df = msub.add_parser("diff", help="compare two machines side by side, with the ratio B/A")
    df.add_argument("a", metavar="A", help="catalogue name or machine TOML file")
    df.add_argument("b", metavar="B", help="catalogue name or machine TOML file")
    df.add_argument("--json", action="store_true", help="print the rows as JSON (SI units)")
    df.set_defaults(func=run_diff)


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
    rows = list_rows([load_machine(name) for name in catalogue_names()])
    if args.json:
        _print_json(rows)
        return 0
    table = Table(title="Catalogue machines (GB/s per direction, raw link rate; 1 GB = 1e9 B)")
    for col, kw in (("name", {"no_wrap": True}), ("description", {}), ("GPUs", {}), ("host link", {"no_wrap": True}),
                    ("host link GB/s/dir", {"justify": "right"}), ("GPU memory GB", {"justify": "right"}),
                    ("GPU DRAM GB/s", {"justify": "right"})):
        table.add_column(col, **kw)
    for r in rows:
        table.add_row(r["name"], r["description"], f"{r['gpu_count']} × {r['gpu_model']}", r["host_link"],
                      _gbps(r["host_link_raw_bps"]), _gb(r["gpu_memory_bytes"]), _gbps(r["dram_bandwidth_bps"]))
    _console().print(table)
    return 0


# ---------------------------------------------------------------- show


def _kv_table(title: str, rows: list[tuple[str, str]]) -> Table:
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("field", style="bold")
    t.add_column("value")
    for k, v in rows:
        t.add_row(k, v)
    return t


def run_show(args: argparse.Namespace) -> int:
    m = load_machine(args.machine)
    s = machine_summary(m)
    if args.json:
        _print_json(s)
        return 0
    con = _console()
    cpu, gpu, node = s["cpu"], s["gpu"], s["node"]
    con.print(f"[bold]{s['name']}[/]: {s['description']}")
    con.print(f"file: {s['path']}")
    con.print("Units: GB and GB/s with 1 GB = 1e9 B; bandwidths are per direction; TFLOP/s = 1e12 FLOP/s.")

    con.print(_kv_table("CPU", [
        ("model", cpu["model"]),
        ("sockets", str(cpu["sockets"])),
        ("cores per socket", str(cpu["cores_per_socket"])),
        ("clock", f"{_num(cpu['clock_hz'], 1e9, 3)} GHz"),
        ("host memory (node)", f"{_gb(cpu['memory_bytes'])} GB"),
        ("memory bandwidth per socket", f"{_gbps(cpu['memory_bandwidth_bps'])} GB/s"),
        ("memory bandwidth per node", f"{_gbps(node['cpu_memory_bandwidth_bps'])} GB/s"),
        ("NUMA domains", str(cpu["numa_domains"])),
    ]))
    con.print(_kv_table("GPU", [
        ("model", gpu["model"]),
        ("count", str(gpu["count"])),
        ("CPU socket of each GPU", ", ".join(f"gpu{i}→cpu{c}" for i, c in enumerate(gpu["cpu_socket"]))),
        ("SMs", str(gpu["sms"])),
        ("clock", f"{_num(gpu['clock_hz'], 1e6, 0)} MHz"),
        ("memory per GPU", f"{_gb(gpu['memory_bytes'])} GB"),
        ("memory per node", f"{_gb(node['gpu_memory_bytes'])} GB"),
        ("DRAM bandwidth per node", f"{_gbps(node['gpu_dram_bandwidth_bps'])} GB/s"),
    ]))

    peaks = Table(title="GPU compute peaks (TFLOP/s; ADD/MUL = every instruction an ADD or a MUL)", title_justify="left")
    for col in ("precision", "FMA per GPU", "ADD/MUL per GPU", "FMA per node", "ADD/MUL per node"):
        peaks.add_column(col, justify="right" if col != "precision" else "left")
    for prec, p in gpu["peak_flops"].items():
        n = node["peak_flops"][prec]
        peaks.add_row(prec, _tflops(p["fma"]), _tflops(p["addmul"]), _tflops(n["fma"]), _tflops(n["addmul"]))
    con.print(peaks)

    levels = Table(title="GPU memory levels (per GPU)", title_justify="left")
    for col in ("level", "bandwidth GB/s", "size"):
        levels.add_column(col, justify="right" if col != "level" else "left")
    for name, lv in gpu["levels"].items():
        size = lv["size_bytes"]
        size_text = "—" if size is None else (f"{_gb(size)} GB" if size >= 1e9 else f"{_num(size, 1e6, 3)} MB")
        levels.add_row(name, _gbps(lv["bandwidth_bps"]), size_text)
    con.print(levels)

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
