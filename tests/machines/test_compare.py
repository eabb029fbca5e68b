"""Machine summaries and side-by-side diffs (SI numbers for the CLI and Python users)."""

from __future__ import annotations

import json

import pytest

from nodecast.machines import catalogue_names, load_machine
from nodecast.machines.compare import (
    DIFF_ROWS,
    diff_machines,
    host_routes,
    link_label,
    list_rows,
    machine_summary,
    peer_nvlink_bps,
)


def rows_by_key(a: str, b: str) -> dict[str, dict]:
    return {r["key"]: r for r in diff_machines(load_machine(a), load_machine(b))}


@pytest.mark.parametrize("name", catalogue_names())
def test_summary_is_json_serialisable(name):
    """Every catalogue summary converts to JSON with numbers kept as numbers."""
    s = machine_summary(load_machine(name))
    back = json.loads(json.dumps(s))
    assert isinstance(back["gpu"]["levels"]["dram"]["bandwidth_bps"], float)
    assert isinstance(back["host_link"]["raw_rate_bps"], float)
    assert isinstance(back["gpu"]["count"], int)


def test_summary_node_totals():
    """Node totals multiply the per-GPU and per-socket figures by the counts."""
    s = machine_summary(load_machine("summit"))
    assert s["node"]["gpu_memory_bytes"] == 6 * 16e9
    assert s["node"]["gpu_dram_bandwidth_bps"] == 6 * 900e9
    assert s["node"]["peak_flops"]["fp64"]["fma"] == pytest.approx(6 * 7.8e12)
    assert s["node"]["cpu_memory_bandwidth_bps"] == 2 * 170e9
    assert s["node"]["cpu_cores"] == 44


def test_summary_host_link():
    """The host link entry names the bottleneck link kind and its raw per-direction rate."""
    s = machine_summary(load_machine("titan"))
    assert s["host_link"]["label"] == "PCIe gen2 x16"
    assert s["host_link"]["raw_rate_bps"] == pytest.approx(8e9)
    assert s["measured"] is None


def test_link_labels():
    """Links are labelled by kind, generation and width."""
    labels = {link_label(link) for link in load_machine("commscope-4029gp-tvrt").links}
    assert {"PCIe gen3 x16", "NVLink2 x1", "NVLink2 x2", "socket bus"} <= labels
    assert link_label(load_machine("gh200").links[0]) == "NVLink-C2C"


def test_shared_uplink_halves_host_bandwidth():
    """Two GPUs behind one PCIe switch each get half its uplink when both copy at once."""
    hosts = host_routes(load_machine("commscope-4029gp-tvrt"))
    assert hosts[0]["raw_rate_bps"] == pytest.approx(15.7538e9, rel=1e-4)
    assert hosts[0]["shared_rate_bps"] == pytest.approx(hosts[0]["raw_rate_bps"] / 2)
    assert hosts[0]["sharing_gpus"] == 2


def test_dedicated_links_are_not_shared():
    """On Summit every GPU has its own NVLink to the CPU, so sharing does not lower the rate."""
    for h in host_routes(load_machine("summit")):
        assert h["shared_rate_bps"] == h["raw_rate_bps"] == 50e9


def test_peer_nvlink_aggregate():
    """Peer NVLink aggregates exclude CPU links: Summit 2 x 50, cube-mesh 6 x 25, DGX A100 300 GB/s; none on PCIe-only nodes."""
    assert peer_nvlink_bps(load_machine("summit")) == 100e9
    assert peer_nvlink_bps(load_machine("commscope-4029gp-tvrt")) == 150e9
    assert peer_nvlink_bps(load_machine("dgx-a100")) == 300e9
    assert peer_nvlink_bps(load_machine("ahead-node1")) is None


def test_diff_has_every_row_with_ratio():
    """diff_machines returns the rows of DIFF_ROWS with ratio = B / A."""
    rows = diff_machines(load_machine("titan"), load_machine("summit"))
    assert [r["key"] for r in rows] == [k for k, _, _ in DIFF_ROWS]
    by = {r["key"]: r for r in rows}
    assert by["dram_bw_per_gpu"]["ratio"] == pytest.approx(900 / 250)
    assert by["host_bw_per_gpu"]["ratio"] == pytest.approx(50 / 8)
    assert by["gpu_count"]["ratio"] == 6
    assert by["fp64_fma_per_node"]["b"] == pytest.approx(46.8e12)


def test_diff_text_rows_have_no_ratio():
    """Rows that are not numbers (models, link kinds) carry no ratio."""
    by = rows_by_key("titan", "dgx-a100")
    assert by["host_link"]["a"] == "PCIe gen2 x16" and by["host_link"]["b"] == "PCIe gen4 x16"
    assert by["host_link"]["ratio"] is None and by["gpu_model"]["ratio"] is None


def test_diff_missing_values_have_no_ratio():
    """A quantity one machine lacks (peer links on a one-GPU node) gives None and no ratio."""
    by = rows_by_key("titan", "summit")
    assert by["peer_route_bw"]["a"] is None and by["peer_route_bw"]["ratio"] is None
    assert by["peer_route_bw"]["b"] == 50e9


def test_diff_procurement_example():
    """H100 server vs H200 node: same links, 1.43x DRAM bandwidth and 1.76x memory per GPU."""
    by = rows_by_key("h100-sxm5-server", "h200-node")
    assert by["host_bw_per_gpu"]["ratio"] == pytest.approx(1.0)
    assert by["dram_bw_per_gpu"]["ratio"] == pytest.approx(4.8 / 3.35)
    assert by["gpu_memory_per_gpu"]["ratio"] == pytest.approx(141 / 80)


def test_list_rows():
    """list_rows gives one row per machine with the host link and DRAM bandwidth."""
    rows = list_rows([load_machine("titan"), load_machine("gh200")])
    assert [r["name"] for r in rows] == ["titan", "gh200"]
    assert rows[1]["host_link"] == "NVLink-C2C" and rows[1]["host_link_raw_bps"] == 450e9
    assert rows[0]["dram_bandwidth_bps"] == 250e9


def test_measured_values_in_summary(tmp_path):
    """Measured values of a machine file appear in its summary."""
    from nodecast.machines import load_machine_file
    from nodecast.machines.loader import catalogue_dir

    text = (catalogue_dir() / "titan.toml").read_text()
    text += ('\n[measured]\norigin = "unit test"\n[measured.one_byte_s]\nhtod_pinned = 8e-6\n'
             '[measured.bandwidth_bps]\nhtod_pinned = 6e9\n')
    path = tmp_path / "titan-measured.toml"
    path.write_text(text)
    s = machine_summary(load_machine_file(path))
    assert s["measured"]["origin"] == "unit test"
    assert s["measured"]["one_byte_s"]["htod_pinned"] == 8e-6
    assert s["measured"]["bandwidth_bps"]["htod_pinned"] == 6e9
