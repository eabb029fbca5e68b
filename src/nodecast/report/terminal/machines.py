"""``nodecast machines list|show|diff`` at the terminal: the catalogue, one machine with its sources, two side by side.

Tables print GB/s and GB with 1 GB = 1e9 B and TFLOP/s with 1 TFLOP/s =
1e12 FLOP/s (the results hold SI numbers: ``--json`` prints them). Names, paths
and sources are printed as text (``report.tables.plain``), never read as rich
markup: sources hold brackets ("[derived: ...]"), and a machine file's name
may hold anything.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from nodecast.machines.results import MachineCatalogue, MachineDiff, MachineView
from nodecast.report.tables import add_row, plain
from nodecast.report.tables import console as results_console
from nodecast.report.terminal import render
from nodecast.text import LIMIT, LINE_LIMIT, shown

GB = 1e9
TFLOP = 1e12


def _console() -> Console:
    # Wide when piped or captured, so that tables are not truncated; the terminal's width otherwise.
    return results_console(width_when_piped=200)


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


# ---------------------------------------------------------------- list


@render.register(MachineCatalogue)
def _(result: MachineCatalogue, console: Console | None = None) -> None:
    rows, gpus, hosts = result.machines, result.gpus, result.hosts
    con = console or _console()
    table = Table(title="Catalogue machines (GB/s per direction, raw link rate; 1 GB = 1e9 B)")
    for col, kw in (("name", {"no_wrap": True}), ("description", {}), ("GPUs", {}), ("host link", {"no_wrap": True}),
                    ("host link GB/s/dir", {"justify": "right"}), ("GPU memory GB", {"justify": "right"}),
                    ("GPU DRAM GB/s", {"justify": "right"})):
        table.add_column(col, **kw)
    for r in rows:
        add_row(table, r["name"], r["description"], f"{r['gpu_count']} × {r['gpu_model']}", r["host_link"],
                _gbps(r["host_link_raw_bps"]), _gb(r["gpu_memory_bytes"]), _gbps(r["dram_bandwidth_bps"]))
    con.print(table)
    sheets = Table(title="GPU data sheets: compose a node as GPU[xN][@HOST], e.g. --from KEY or KEYx8@HOST")
    for col, kw in (("key", {"no_wrap": True}), ("name", {}), ("target", {}), ("SMs", {"justify": "right"}),
                    ("boost MHz", {"justify": "right"}), ("memory GB", {"justify": "right"}),
                    ("DRAM GB/s", {"justify": "right"}), ("FP32 TFLOP/s", {"justify": "right"}),
                    ("host link", {"no_wrap": True}), ("device names (as traces record them)", {})):
        sheets.add_column(col, **kw)
    for r in gpus:
        add_row(sheets, r["key"], r["name"], r["target"], str(r["sms"]), _num(r["boost_clock_hz"], 1e6, 0),
                _gb(r["memory_bytes"]), _gbps(r["dram_bandwidth_bps"]), _tflops(r["fp32_flops"]),
                r["host_link"], "; ".join(r["device_names"]))
    con.print(sheets)
    hts = Table(title="Hosts (CPU and host memory; memory bandwidth per socket)")
    for col, kw in (("key", {"no_wrap": True}), ("description", {}), ("sockets × cores", {"justify": "right"}),
                    ("memory GB", {"justify": "right"}), ("mem GB/s/socket", {"justify": "right"}),
                    ("PCIe gen", {"justify": "right"}), ("GPU link", {})):
        hts.add_column(col, **kw)
    for r in hosts:
        add_row(hts, r["key"], r["description"], f"{r['sockets']} × {r['cores_per_socket']}", _gb(r["memory_bytes"]),
                _gbps(r["memory_bandwidth_bps"]), str(r["pcie_gen"]), r["gpu_link"] or "PCIe")
    con.print(hts)


# ---------------------------------------------------------------- show


def _kv_table(title: str, rows: list[tuple[str, ...]]) -> Table:
    """A field/value table; rows of three add a ``source`` column (where the value came from)."""
    sourced = any(len(r) > 2 for r in rows)
    t = Table(title=plain(title), show_header=sourced, title_justify="left")
    t.add_column("field", style="bold")
    t.add_column("value")
    if sourced:
        t.add_column("source")
    for row in rows:
        add_row(t, *row, *([""] * (2 + sourced - len(row))), limit=LINE_LIMIT)  # sources are sentences
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


_SWITCH_KIND = {"nvswitch": "NVSwitch", "pcie": "PCIe switch"}


def _switch_text(sw: dict[str, Any]) -> str:
    """What a ``[switch.NAME]`` table says: kind, generation (NVSwitch's, or a PCIe switch's PCIe generation) and
    whether it reduces in the switch (NVLink SHARP, which NCCL's NVLS algorithm needs)."""
    kind = _SWITCH_KIND.get(sw["kind"], sw["kind"])
    gen = ", gen not given" if sw["gen"] is None else f" gen {sw['gen']}"
    return f"{kind}{gen}; NVLink SHARP (NVLS, in-switch reductions): {'yes' if sw['sharp'] else 'no'}"


@render.register(MachineView)
def _(result: MachineView, console: Console | None = None) -> None:
    s = result.summary
    con = console or _console()
    cpu, gpu, node, src = s["cpu"], s["gpu"], s["node"], s["provenance"]
    con.print(plain(s["name"], LIMIT, "bold") + plain(f": {s['description']}"), soft_wrap=True)
    con.print(plain(f"file: {s['path'] or 'none (composed from a data sheet and a host)'}"), soft_wrap=True)
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
        add_row(peaks, prec, _tflops(p["fma"]), _tflops(p["addmul"]), _tflops(n["fma"]), _tflops(n["addmul"]),
                at(f"gpu.peak_flops.{prec}"), limit=LINE_LIMIT)
    con.print(peaks)

    levels = Table(title="GPU memory levels (per GPU)", title_justify="left")
    for col in ("level", "bandwidth GB/s", "size", "source"):
        levels.add_column(col, justify="left" if col in ("level", "source") else "right")
    for name, lv in gpu["levels"].items():
        where = dict.fromkeys(src.get(f"gpu.levels.{name}.{k}") for k in ("bandwidth_bps", "size_bytes"))
        add_row(levels, name, _gbps(lv["bandwidth_bps"]), _size(lv["size_bytes"]), "; ".join(w for w in where if w),
                limit=LINE_LIMIT)
    con.print(levels)

    sheet = s["sheet"]
    if sheet is None:
        con.print(plain("GPU data sheet: none (the machine file gives its GPU values itself; `[gpu] sheet = KEY` "
                        "names one)."))
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
        add_row(links, lk["id"], lk["kind"], " ↔ ".join(lk["endpoints"]),
                "—" if lk["gen"] is None else str(lk["gen"]),
                "—" if width is None else str(width), tlp, _gbps(lk["raw_rate_bps"]))
    con.print(links)
    if s["switches"]:
        con.print(plain(f"switches: {', '.join(s['switches'])}"), soft_wrap=True)
    for name, sw in s.get("switch_details", {}).items():  # only files with [switch.NAME] tables have them
        con.print(plain(f"switch {name}: {_switch_text(sw)}"), soft_wrap=True)

    hosts = Table(title="Host routes: each GPU to its own CPU socket (GB/s per direction)", title_justify="left")
    for col in ("GPU", "socket", "route", "bottleneck", "raw GB/s", "all GPUs at once GB/s"):
        hosts.add_column(col, justify="right" if "GB/s" in col else "left")
    for h in s["host_routes"]:
        add_row(hosts, f"gpu{h['gpu']}", f"cpu{h['socket']}", " → ".join(h["links"]),
                f"{h['bottleneck']} ({h['bottleneck_label']})", _gbps(h["raw_rate_bps"]),
                _gbps(h["shared_rate_bps"]))
    con.print(hosts)
    con.print("'all GPUs at once': each link's rate split equally among the GPU host routes that cross it.")

    if s["peer_routes"]:
        peers = Table(title="Peer routes from gpu0 (fewest links; GB/s per direction)", title_justify="left")
        for col in ("to", "route", "bottleneck", "raw GB/s"):
            peers.add_column(col, justify="right" if "GB/s" in col else "left")
        for p in s["peer_routes"]:
            add_row(peers, f"gpu{p['dst']}", " → ".join(p["links"]), f"{p['bottleneck']} ({p['bottleneck_label']})",
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
        con.print(plain(f"note: {note}"), soft_wrap=True)


# ---------------------------------------------------------------- diff


@render.register(MachineDiff)
def _(result: MachineDiff, console: Console | None = None) -> None:
    rows = result.rows
    table = Table(title=plain(f"{shown(result.a)} (A) vs {shown(result.b)} (B): GB/s per direction, 1 GB = 1e9 B, "
                              "TFLOP/s = 1e12 FLOP/s"))
    table.add_column("quantity")
    table.add_column("unit")
    table.add_column(plain(f"A: {result.a}", LIMIT), justify="right")
    table.add_column(plain(f"B: {result.b}", LIMIT), justify="right")
    table.add_column("B/A", justify="right")
    for r in rows:
        add_row(table, r["quantity"], _DISPLAY_UNIT[r["unit"]], _fmt(r["unit"], r["a"]), _fmt(r["unit"], r["b"]),
                "—" if r["ratio"] is None else f"{r['ratio']:.2f}×")
    (console or _console()).print(table)


