"""NVLink bytes on the wire and effective bandwidth (AHEAD eqs. 6-8) against hand-worked values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.machines.loader import machine_from_dict
from nodecast.machines.topology import NVLINK_BPS_PER_LINK
from nodecast.models import nvlink

MIB = 1048576


def nvlink_link(gen: int = 2, links: int = 2):
    """The CPU<->GPU link of a one-GPU machine joined by ``links`` NVLink bricks of generation ``gen``."""
    data = {
        "schema_version": 1, "name": "test", "description": "test machine",
        "cpu": {"model": "cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9, "memory_bytes": 64e9,
                "memory_bandwidth_bps": 170e9},
        "gpu": {"model": "gpu", "count": 1, "sms": 80, "clock_hz": 1.5e9, "memory_bytes": 16e9,
                "levels": {"dram": {"bandwidth_bps": 900e9}}},
        "links": [{"id": "nv", "kind": "nvlink", "endpoints": ["cpu0", "gpu0"], "gen": gen, "links": links}],
    }
    return machine_from_dict(data, "test.toml").host_link(0)


def test_eq8_per_link_matches_topology_table():
    """Eq. 8 (lanes x lane rate) gives 20, 25, 25, 25, 50 GB/s per link for gens 1-5, as the data sheets."""
    # gen1: 8 * 20 Gb/s / 8 = 20 GB/s; gen2: 8 * 25 / 8 = 25; gen3: 4 * 50 / 8 = 25; gen4: 2 * 100 / 8 = 25
    # gen5: 2 * 200 / 8 = 50
    for gen, expected in {1: 20e9, 2: 25e9, 3: 25e9, 4: 25e9, 5: 50e9}.items():
        assert nvlink.per_link_bandwidth_bps(gen) == pytest.approx(expected)
        assert NVLINK_BPS_PER_LINK[gen] == pytest.approx(expected)


def test_summit_cpu_gpu_link_is_50_gbps():
    """Two NVLink 2.0 bricks give 2 x 25 = 50 GB/s per direction (Summit CPU<->GPU)."""
    assert nvlink.link_bandwidth_bps(nvlink_link(2, 2)) == pytest.approx(50e9)


def test_read_one_mib_over_two_bricks():
    """Eq. 6 for 1 MiB host->device over NVLink 2.0 x2."""
    # n_hat = 16 + ceil(1048576/256)*16 + 1048576 = 16 + 4096*16 + 1048576 = 1114128
    # BW_eff = 1048576 * 50e9 / 1114128 = 47.05815 GB/s; n/BW_eff = 1114128 / 50e9 = 22.28256 µs
    link = nvlink_link()
    assert nvlink.read_bytes_on_wire(MIB) == 1114128
    assert nvlink.effective_bandwidth_bps(MIB, link, "read") == pytest.approx(47.05815e9, rel=1e-6)
    assert nvlink.wire_time_s(MIB, link, "read") == pytest.approx(22.28256e-6, rel=1e-9)


def test_write_one_mib_over_two_bricks():
    """Eq. 7 for 1 MiB device->host: no request flit."""
    # n_hat = 4096*16 + 1048576 = 1114112; BW_eff = 1048576 * 50e9 / 1114112 = 47.05882 GB/s
    link = nvlink_link()
    assert nvlink.write_bytes_on_wire(MIB) == 1114112
    assert nvlink.effective_bandwidth_bps(MIB, link, "write") == pytest.approx(47.05882e9, rel=1e-6)


def test_small_and_partial_packets():
    """A 1-byte copy costs a whole header flit; 300 B need two packets."""
    # 1 B:   read 16 + 1*16 + 1 = 33, write 16 + 1 = 17
    # 300 B: ceil(300/256) = 2 packets -> write 2*16 + 300 = 332, read 16 + 332 = 348
    assert nvlink.read_bytes_on_wire(1) == 33
    assert nvlink.write_bytes_on_wire(1) == 17
    assert nvlink.write_bytes_on_wire(300) == 332
    assert nvlink.read_bytes_on_wire(300) == 348


def test_large_copy_efficiency_is_almost_95_percent():
    """Large copies reach 256/272 = 94.1 % of the link, the paper's "almost 95 %" (line 1033)."""
    link = nvlink_link()
    eff = nvlink.effective_bandwidth_bps(2**30, link, "write") / 50e9
    assert eff == pytest.approx(256 / 272, rel=1e-9)


def test_generation_payload_table_is_used(monkeypatch):
    """A smaller max payload for a generation (e.g. 128 B for NVLink 4) changes eq. 7."""
    # 1 MiB write with 128-B packets: 8192*16 + 1048576 = 1179648 B; 18 links x 25 GB/s = 450 GB/s
    monkeypatch.setitem(nvlink.MAX_PAYLOAD_BYTES, 4, 128)
    link = nvlink_link(gen=4, links=18)
    assert nvlink.wire_time_s(MIB, link, "write") == pytest.approx(1179648 / 450e9)


def test_bad_direction_raises():
    """Only "read" and "write" are directions."""
    with pytest.raises(ValueError, match="direction"):
        nvlink.bytes_on_wire(1, "up")  # type: ignore[arg-type]


@given(st.integers(1, 5), st.integers(1, 18), st.integers(1, 2**40), st.sampled_from(["read", "write"]))
def test_effective_bandwidth_never_exceeds_link(gen, links, n, direction):
    """BW_eff <= links x NVLinkBW for every generation, link count and size."""
    link = nvlink_link(gen, links)
    assert nvlink.effective_bandwidth_bps(n, link, direction) <= nvlink.link_bandwidth_bps(link) * (1 + 1e-12)


@given(st.integers(0, 2**40), st.sampled_from(["read", "write"]))
def test_bytes_on_wire_strictly_grow(n, direction):
    """n_hat(n + 1) > n_hat(n)."""
    assert nvlink.bytes_on_wire(n + 1, direction) > nvlink.bytes_on_wire(n, direction)
