"""Write the catalogue's GB200 / GB300 NVL72 machine files: one compute tray (4 GPUs) and the 72-GPU NVLink domain.

A 72-GPU rack has 144 links (each GPU's NVLink to the rack's NVLink Switch and its NVLink-C2C to its Grace), too many
to keep consistent by hand; this script writes the four files from one description, every value with its source in
a comment as in the rest of the catalogue (src/nodecast/machines/catalogue/). The files it writes are the source of
truth that nodecast reads; tests/machines/test_catalogue_multigpu.py checks that they are what this script writes.

Usage (from the repository root)::

    python scripts/make_nvl72.py            # (re)write gb200-nvl72.toml, gb200-nvl72-tray.toml, gb300-...
    python scripts/make_nvl72.py --check    # exit 1, naming the files, when one differs from what would be written
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parents[1] / "src" / "nodecast" / "machines" / "catalogue"

#: Sources shared by both products, cited by their tags in the files.
_SOURCES = """\
#   [RA]   NVIDIA Enterprise Reference Architecture "NVL72 AI factory", System Hardware & Components
#          (https://docs.nvidia.com/enterprise-reference-architectures/nvl72-ai-factory/latest/components.html): "9
#          NVSwitch trays for full non-blocking P2P connectivity of all 72 Blackwell Ultra GPUs, with a total aggregated
#          bandwidth of 130 TB/s"; the compute tray has "4 Blackwell Ultra GPUs and 2 Grace CPUs per tray" (GB300 NVL72)
#   [ST]   setloop.io, "NVIDIA GB200 NVL72: Blackwell at rack scale" (https://setloop.io/blog/gb200-nvl72-architecture):
#          "36 Grace CPUs with 72 Blackwell GPUs across 18 compute trays"; "Each 1U compute tray holds two GB200
#          superchips: two Grace CPUs and four Blackwell GPUs per tray, connected on-board via NVLink-C2C at 900 GB/s";
#          "nine NVLink Switch trays"; "Each Switch tray contains two NVLink5 ASICs"
#   [NVL]  NVIDIA NVLink and NVLink Switch page (as copied at
#          https://catalogone.com/data-center-and-cloud-computing-nvlink-nvswitch): "A single NVIDIA Blackwell Tensor
#          Core GPU supports up to 18 NVLink 100 gigabyte-per-second (GB/s) connections for a total bandwidth of 1.8
#          terabytes per second"; "each NVLink Switch has engines for NVIDIA Scalable Hierarchical Aggregation and
#          Reduction Protocol (SHARP) for in-network reductions and multicast acceleration"; "The NVIDIA NVLink Switch
#          features 144 NVLink ports with a non-blocking switching capacity of 14.4TB/s"
#   [MLC]  MLCommons inference v6.1, Crusoe system GB200-NVL72_GB200-186GB_aarch64x16_Dynamo (github
#          mlcommons/inference_results_v6.1, closed/Crusoe/systems/...json): per 4-GPU node "Full NVLink mesh within each
#          4-GPU node (NV18 via NVSwitch, confirmed via nvidia-smi topo -m)", 144 host cores, "3.1 GHz base / 3.44 GHz
#          boost", host processor interconnect "NVLink-C2C"
#   [LP]   "up to 480 GB of LPDDR5X CPU memory" per GB200 superchip (http://18.237.249.218/cpu-gb2-work, after NVIDIA's
#          GB200 figures); the same figure as hosts/grace-gh200.toml"""

_TOPOLOGY = """\
# Topology as modelled:
#   - NVLink: the rack's 18 NVLink Switch chips (9 trays x 2 [ST]; 72 GPUs x 18 links = 1,296 = 9 trays x 144 ports
#     [NVL]) modelled as one switch endpoint "nvlink-switch", joined to each GPU by 18 NVLink 5 links = 900 GB/s per
#     direction [NVL] (130 TB/s / 72 GPUs = 1.8 TB/s bidirectional per GPU [RA]); NVLink Switch generation 4 (the
#     switch of NVLink 5), with NVLink SHARP [NVL]. A compute tray's GPUs are joined through it too ([MLC]: NV18
#     between the 4 GPUs of a tray).
#   - NVLink-C2C: each GPU to its Grace at {c2c} GB/s per direction: {c2c_source};
#     [unverified] whether each of a Grace's two GPUs gets the whole figure is not published, so it is an upper
#     bound per GPU.
#   - GPUs 2k and 2k+1 on Grace k (one superchip: 1 Grace + 2 GPUs [ST]).
#   - [assumed] no link between Grace CPUs is modelled (none found in our sources): a route between two Graces runs
#     over NVLink-C2C and the GPUs' NVLink. The trays' ConnectX NICs and their PCIe paths are not modelled.
#   - NVLink links come first so that equal-hop ties in routes prefer NVLink.
# CPU: the Grace of the superchip is the Grace CPU of the GH200 (72 Arm Neoverse V2 cores, LPDDR5X): host file
#   hosts/grace-gh200.toml, with the sockets, memory and clock below in place of its values."""

#: Per product: what differs between GB200 and GB300.
PRODUCTS = {
    "gb200": {
        "title": "NVIDIA GB200 NVL72",
        "gpu_name": "GB200",
        "sheet": "gb200",
        "about": ("GB200 superchips (1 Grace CPU + 2 Blackwell GPUs each); GPU values: data sheet gpus/gb200.toml\n"
                  "#   (186 GB HBM3e per GPU, NVLink-C2C host link)."),
        "c2c": "450e9",
        "c2c_source": "the superchip's NVLink-C2C, 900 GB/s bidirectional [ST]\n#     (gpus/gb200.toml host_link, "
                      "DATASHEETS.md D.2)",
        "extra": "",
    },
    "gb300": {
        "title": "NVIDIA GB300 NVL72",
        "gpu_name": "GB300",
        "sheet": "gb300",
        "about": ("GB300 superchips (1 Grace CPU + 2 Blackwell Ultra GPUs each); GPU values: data sheet\n"
                  "#   gpus/gb300.toml (279 GB HBM3e per GPU, NVLink-C2C host link). The rack is the GB200 NVL72's design\n"
                  "#   with Blackwell Ultra GPUs [RA]; [ST] and [MLC] describe the GB200 NVL72 and are [assumed] to hold for\n"
                  "#   the GB300 NVL72 where [RA] says nothing."),
        "c2c": "450e9",
        "c2c_source": "[assumed] the GB200 superchip's 900 GB/s bidirectional [ST]\n#     (no GB300 figure was "
                      "found; gpus/gb300.toml host_link)",
        "extra": ("# Each GB300 compute tray also routes a PCIe path from each GPU through a ConnectX-8 SuperNIC (Gen6 x16 to\n"
                  "#   the GPU, Gen5 x16 to the Grace; Hot Chips 2025 as reported at\n"
                  "#   https://cloudnews.tech/nvidia-connectx-8-supernic-the-new-generation-of-pcie-gen6-nics-at-800g-for-the-ai-era):\n"
                  "#   a network path, not modelled.\n"),
    },
}


def _kv(key: str, value: object, comment: str | None = None) -> str:
    line = f"{key} = {value}"
    return line.ljust(36) + f" # {comment}\n" if comment else line + "\n"


def render(product: str, trays: int) -> str:
    """The machine file of ``trays`` compute trays (1: one tray, 18: the 72-GPU NVLink domain) of ``product``."""
    p = PRODUCTS[product]
    gpus, graces = 4 * trays, 2 * trays
    rack = trays == 18
    name = f"{product}-nvl72" if rack else f"{product}-nvl72-tray"
    what = ("the 72-GPU NVLink domain: 18 compute trays of 2 Grace CPUs\n#   + 4 GPUs each, joined by the rack's 9 "
            "NVLink Switch trays" if rack else
            "one compute tray: 2 Grace CPUs + 4 GPUs; its GPUs reach each\n#   other (and the rack's other 68) "
            "through the rack's NVLink Switch trays")
    header = (f"# {p['title']}, {what}.\n"
              f"# {p['about']}\n"
              "# Sources:\n" + _SOURCES + "\n"
              + _TOPOLOGY.format(c2c=int(float(p["c2c"]) / 1e9), c2c_source=p["c2c_source"]) + "\n" + p["extra"]
              + "# Written by scripts/make_nvl72.py (edit it, not this file). Sizes follow the data sheets' decimal "
                "units.\n")
    kind = "rack" if rack else "tray"
    description = (f"{p['title']} {kind}: {graces} Grace + {gpus} x {p['gpu_name']}, NVLink 5 x18 per GPU through the "
                   f"NVLink Switch (SHARP), NVLink-C2C to Grace")
    text = header + "schema_version = 1\n" + f'name = "{name}"\n' + f'description = "{description}"\n'
    text += 'switches = ["nvlink-switch"]\n\n'
    text += "[cpu]\n"
    text += _kv("host", '"grace-gh200"', "host file hosts/grace-gh200.toml: the Grace CPU (header); the values below win")
    text += _kv("sockets", graces, "[ST]: 36 Grace CPUs per rack, 2 per compute tray" if rack else
                "[ST] [RA]: 2 Grace CPUs per compute tray")
    text += _kv("clock_hz", "3.1e9", "[MLC]: Grace \"3.1 GHz base / 3.44 GHz boost\" in a GB200 NVL72"
                + ("; [assumed] the same Grace in the GB300" if product == "gb300" else ""))
    text += _kv("memory_bytes", f"{graces * 480}e9", f"[unverified] {graces} x 480 GB LPDDR5X [LP] (\"up to\"; the "
                "[MLC] system reports 1.87 TB of host memory per 4-GPU tray)")
    text += _kv("memory_bandwidth_bps", "546e9", "[unverified] per Grace: hosts/grace-gh200.toml's \"up to 546 GB/s\" "
                "LPDDR5X (GH200); no GB200/GB300 figure was found")
    text += _kv("numa_domains", graces, "[assumed] one per Grace (its LPDDR5X), as hosts/grace-gh200.toml")
    text += "\n[gpu]\n"
    text += _kv("sheet", f'"{p["sheet"]}"', f"GPU data sheet gpus/{p['sheet']}.toml: every GPU value comes from it")
    text += _kv("model", f'"{p["gpu_name"]}"', f"gpus/{p['sheet']}.toml")
    text += _kv("count", gpus, "[ST] [RA]: 72 GPUs per rack, 4 per compute tray")
    text += _kv("cpu_socket", "[" + ", ".join(str(g // 2) for g in range(gpus)) + "]",
                "[ST]: each Grace with its superchip's 2 GPUs")
    text += "\n[switch.nvlink-switch]\n"
    text += _kv("kind", '"nvswitch"', "the rack's NVLink Switch chips as one endpoint (header)")
    text += _kv("gen", 4, "the NVLink Switch of NVLink 5 (Blackwell) [NVL]")
    text += _kv("sharp", "true", "[NVL]: SHARP engines \"for in-network reductions and multicast acceleration\"")
    for g in range(gpus):
        text += f'\n[[links]]\nid = "nvlink-gpu{g}"\nkind = "nvlink"\nendpoints = ["gpu{g}", "nvlink-switch"]\n'
        if g == 0:
            text += _kv("gen", 5, "[NVL]: fifth-generation NVLink")
            text += _kv("links", 18, "[NVL]: 18 links of 100 GB/s bidirectional = 900 GB/s per direction")
        else:
            text += "gen = 5\nlinks = 18\n"
    for g in range(gpus):
        text += f'\n[[links]]\nid = "c2c-gpu{g}"\nkind = "nvlink-c2c"\nendpoints = ["cpu{g // 2}", "gpu{g}"]\n'
        text += _kv("bandwidth_bps", p["c2c"], "NVLink-C2C per direction (header)" if g == 0 else "as c2c-gpu0")
    return text


def files() -> dict[Path, str]:
    """Every file this script writes and its text."""
    return {CATALOGUE / f"{product}-nvl72{'' if trays == 18 else '-tray'}.toml": render(product, trays)
            for product in PRODUCTS for trays in (1, 18)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report files that differ; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in files().items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if args.check and stale:
        print("not what scripts/make_nvl72.py writes: " + ", ".join(p.name for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
