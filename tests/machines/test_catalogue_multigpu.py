"""The multi-GPU nodes of the catalogue (issue 21): each loads with the GPUs, links and switches its comments cite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from nodecast.machines import load_machine, raw_rate_bps
from nodecast.machines.loader import catalogue_dir

#: name -> (GPU data sheet, GPUs, CPU sockets), as each file's header says.
NODES = {
    "dgx-a100-80gb": ("a100-sxm4-80gb", 8, 2),
    "dgx-b200": ("b200", 8, 2),
    "hgx-b300": ("b300", 8, 2),
    "gb200-nvl72-tray": ("gb200", 4, 2),
    "gb200-nvl72": ("gb200", 72, 36),
    "gb300-nvl72-tray": ("gb300", 4, 2),
    "gb300-nvl72": ("gb300", 72, 36),
    "l40s-pcie-8gpu": ("l40s", 8, 2),
    "rtx-pro-6000-bse-8gpu": ("rtx-pro-6000-blackwell-server", 8, 2),
    "h100-nvl-8gpu": ("h100-nvl", 8, 2),
    "h100-nvl-8gpu-bridged": ("h100-nvl", 8, 2),
    "mi300x-platform": ("mi300x", 8, 2),
    "mi325x-platform": ("mi325x", 8, 2),
}
#: Nodes whose GPUs all hang off one NVLink SHARP switch (NVLS), with that switch's NVSwitch generation.
SHARP = {"dgx-b200": 4, "hgx-b300": 4, "gb200-nvl72-tray": 4, "gb200-nvl72": 4, "gb300-nvl72-tray": 4,
         "gb300-nvl72": 4, "h100-sxm5-server": 3, "h200-node": 3}
#: Keys that are structure, or repeat a sourced sibling of a links list (as in test_catalogue.py).
_STRUCTURE = {"id", "kind", "endpoints", "schema_version", "name", "description", "switches", "gen", "lanes", "links",
              "mrrs_bytes", "rcb_bytes", "header_bytes"}


@pytest.mark.parametrize("name", sorted(NODES))
def test_node_loads_with_its_gpus(name):
    """Each node loads under its file's name with the GPU sheet, GPU count and sockets its header gives."""
    m = load_machine(name)
    sheet, gpus, sockets = NODES[name]
    assert (m.name, m.gpu.sheet.key, m.gpu.count, m.cpu.sockets) == (name, sheet, gpus, sockets)
    for g in range(m.gpu.count):
        assert raw_rate_bps(m.host_link(g)) > 0


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_value_line_has_a_source_comment(name):
    """Every key = value line carries its source in a comment (or repeats a sourced sibling in a links list)."""
    text = (catalogue_dir() / f"{name}.toml").read_text()
    bare = [s for s in (line.strip() for line in text.splitlines())
            if s and not s.startswith(("#", "[")) and s.split("=", 1)[0].strip() not in _STRUCTURE and "#" not in s]
    assert not bare, f"{name}: values without a source comment: {bare}"


@pytest.mark.parametrize("name", sorted(SHARP))
def test_nvswitch_nodes_reduce_in_the_switch(name):
    """H100/H200 (NVSwitch 3) and Blackwell (NVSwitch 4) nodes: every GPU on one NVLink SHARP switch."""
    m = load_machine(name)
    sw = m.sharp_switch(range(m.gpu.count))
    assert sw is not None and sw.kind == "nvswitch" and sw.gen == SHARP[name]


@pytest.mark.parametrize("name", ["dgx-a100", "dgx-a100-80gb"])
def test_a100_nvswitch_has_no_sharp(name):
    """The A100's second-generation NVSwitch has no in-switch reduction: NVLS is not offered."""
    m = load_machine(name)
    assert m.switch("nvswitch").gen == 2 and m.switch("nvswitch").sharp is False
    assert m.sharp_switch(range(8)) is None


@pytest.mark.parametrize("name", ["l40s-pcie-8gpu", "rtx-pro-6000-bse-8gpu", "h100-nvl-8gpu", "h100-nvl-8gpu-bridged",
                                  "mi300x-platform", "mi325x-platform"])
def test_pcie_and_xgmi_nodes_have_no_sharp_switch(name):
    assert load_machine(name).sharp_switch(range(8)) is None


@pytest.mark.parametrize(("name", "gen", "per_gpu_bps"), [
    ("dgx-b200", 5, 900e9), ("hgx-b300", 5, 900e9), ("gb200-nvl72", 5, 900e9), ("gb300-nvl72-tray", 5, 900e9),
    ("dgx-a100-80gb", 3, 300e9)])
def test_nvswitch_links_per_gpu(name, gen, per_gpu_bps):
    """Each GPU joins the switch by one NVLink set of its generation: 18 x 50 GB/s (NVLink 5), 12 x 25 (NVLink 3)."""
    m = load_machine(name)
    for g in range(m.gpu.count):
        mine = [link for link in m.links if link.kind == "nvlink" and f"gpu{g}" in link.endpoints]
        assert len(mine) == 1 and mine[0].gen == gen and raw_rate_bps(mine[0]) == per_gpu_bps


def test_nvl72_is_one_nvlink_domain_with_c2c_to_grace():
    """GB200 NVL72: any two of the 72 GPUs meet through the NVLink Switch at 900 GB/s; GPU g reaches Grace g // 2 by
    NVLink-C2C at 450 GB/s per direction."""
    m = load_machine("gb200-nvl72")
    assert [link.id for link in m.route("gpu0", "gpu71")] == ["nvlink-gpu0", "nvlink-gpu71"]
    for g in (0, 1, 2, 71):
        link = m.host_link(g)
        assert link.kind == "nvlink-c2c" and link.endpoints == (f"cpu{g // 2}", f"gpu{g}")
        assert raw_rate_bps(link) == 450e9


def test_dgx_b200_gpu_pairs_share_a_pcie_switch():
    """DGX B200: GPUs 0 and 1 sit behind one PCIe switch (PIX) and share its uplink; peers talk over NVLink."""
    m = load_machine("dgx-b200")
    assert m.host_route(0)[0] is m.host_route(1)[0] and m.host_route(0)[0] is not m.host_route(2)[0]
    assert [link.kind for link in m.route("gpu0", "gpu1")] == ["nvlink", "nvlink"]


def test_l40s_peers_cross_the_host():
    """L40S server: no NVLink; GPU 0 reaches GPU 1 through its socket (PCIe gen4 x16) and GPU 4 over UPI too."""
    m = load_machine("l40s-pcie-8gpu")
    assert [(link.kind, link.gen, link.lanes) for link in m.route("gpu0", "gpu1")] == [("pcie", 4, 16)] * 2
    assert [link.kind for link in m.route("gpu0", "gpu4")] == ["pcie", "socket-bus", "pcie"]
    assert not any(link.kind == "nvlink" for link in m.links)


def test_rtx_pro_server_pairs_meet_in_their_connectx8_switch():
    """RTX PRO Server: GPUs 0-1 meet in their ConnectX-8 PCIe Gen6 switch, not the CPU; the pair shares the uplink."""
    m = load_machine("rtx-pro-6000-bse-8gpu")
    assert [link.id for link in m.route("gpu0", "gpu1")] == ["pcie-cx8-sw0-gpu0", "pcie-cx8-sw0-gpu1"]
    assert m.host_route(0)[0] is m.host_route(1)[0]
    assert m.switch("cx8-sw0").kind == "pcie" and m.switch("cx8-sw0").gen == 6


def test_h100_nvl_bridges_pair_gpus():
    """H100 NVL: the bridged node joins GPUs 0-1 by NVLink 4 x12 (600 GB/s bidirectional); GPUs 0-2 and the
    unbridged node's peers cross the host."""
    bridged, plain = load_machine("h100-nvl-8gpu-bridged"), load_machine("h100-nvl-8gpu")
    (bridge,) = bridged.route("gpu0", "gpu1")
    assert (bridge.kind, bridge.gen, bridge.links, raw_rate_bps(bridge)) == ("nvlink", 4, 12, 300e9)
    assert [link.kind for link in bridged.route("gpu0", "gpu2")] == ["pcie", "pcie"]
    assert not any(link.kind == "nvlink" for link in plain.links)
    assert [link.kind for link in plain.route("gpu0", "gpu1")] == ["pcie", "pcie"]


def test_mi325x_platform_is_a_full_xgmi_mesh():
    """MI325X platform: 28 xGMI links, one between every pair of GPUs, 64 GB/s per direction each."""
    m = load_machine("mi325x-platform")
    xgmi = [link for link in m.links if link.kind == "xgmi"]
    assert len(xgmi) == 28 and {frozenset(link.endpoints) for link in xgmi} == {
        frozenset((f"gpu{a}", f"gpu{b}")) for a in range(8) for b in range(a + 1, 8)}
    assert {raw_rate_bps(link) for link in xgmi} == {64e9}


def test_nvl72_files_are_what_the_script_writes():
    """The four NVL72 files are written by scripts/make_nvl72.py; an edit by hand would be lost on the next run."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "make_nvl72.py"
    spec = importlib.util.spec_from_file_location("make_nvl72", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.files()
    assert len(written) == 4
    for file, text in written.items():
        assert file.read_text() == text, f"{file.name} differs from scripts/make_nvl72.py's output"
