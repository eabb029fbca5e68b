"""Host side of calibration: governor, NUMA nodes and binding, cache flushing, sysfs/procfs parsing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nodecast.calibrate import host
from nodecast.calibrate.plan import NumaNode


def write(root: Path, rel: str, text: str) -> None:
    """Write a fixture file under ``root``."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_parse_cpulist():
    """Ranges and single CPUs, in order; empty text is no CPU."""
    assert host.parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert host.parse_cpulist("") == ()


def test_governors_and_summary(tmp_path):
    """Each CPU's scaling_governor is read; the summary counts them and a non-performance governor warns."""
    for cpu, gov in ((0, "performance"), (1, "powersave"), (2, "powersave")):
        write(tmp_path, f"cpu{cpu}/cpufreq/scaling_governor", gov + "\n")
    govs = host.read_governors(tmp_path)
    assert govs == {0: "performance", 1: "powersave", 2: "powersave"}
    assert host.governor_summary(govs) == "powersave on 2 CPUs, performance on 1 CPUs"
    assert "powersave" in host.governor_warning(govs)
    assert host.governor_warning({0: "performance"}) is None
    assert host.governor_summary({0: "performance", 1: "performance"}) == "performance on all 2 CPUs"


def test_governor_unknown_without_cpufreq(tmp_path):
    """No cpufreq in sysfs (VMs, containers): the summary says so and nothing warns."""
    assert host.read_governors(tmp_path) == {}
    assert host.governor_summary({}).startswith("unknown")
    assert host.governor_warning({}) is None


def test_numa_nodes_from_sysfs(tmp_path):
    """Nodes in numeric order with their CPUs and MemTotal in bytes."""
    write(tmp_path, "node1/cpulist", "4-7\n")
    write(tmp_path, "node1/meminfo", "Node 1 MemTotal:       2048 kB\n")
    write(tmp_path, "node0/cpulist", "0-3\n")
    write(tmp_path, "node0/meminfo", "Node 0 MemTotal:       1024 kB\n")
    write(tmp_path, "node10/cpulist", "\n")
    nodes = host.numa_nodes(tmp_path)
    assert [n.id for n in nodes] == [0, 1, 10]
    assert nodes[1] == NumaNode(1, (4, 5, 6, 7), 2048 * 1024)
    assert nodes[2].cpus == ()


def test_numa_nodes_of_this_machine():
    """This machine's sysfs (or the fallback) gives at least one node with CPUs."""
    assert any(n.cpus for n in host.numa_nodes())


def test_pci_numa_node_and_link(tmp_path):
    """A GPU's NUMA node and PCIe link come from /sys/bus/pci/devices, whatever case the bus id is in."""
    dev = "0000:3b:00.0"
    write(tmp_path, f"{dev}/numa_node", "1\n")
    write(tmp_path, f"{dev}/current_link_speed", "16.0 GT/s PCIe\n")
    write(tmp_path, f"{dev}/current_link_width", "16\n")
    write(tmp_path, f"{dev}/max_link_speed", "16.0 GT/s PCIe\n")
    write(tmp_path, f"{dev}/max_link_width", "16\n")
    assert host.pci_numa_node("00000000:3B:00.0", tmp_path) == 1
    assert host.pci_link_status("0000:3B:00.0", tmp_path) == "16.0 GT/s PCIe x16 (max 16.0 GT/s PCIe x16)"
    write(tmp_path, "0000:5e:00.0/numa_node", "-1\n")
    assert host.pci_numa_node("0000:5e:00.0", tmp_path) is None
    assert host.pci_numa_node("0000:99:00.0", tmp_path) is None
    assert host.pci_link_status("0000:99:00.0", tmp_path) is None


def test_normalize_bus_id():
    """CUDA's and nvidia-smi's bus ids map to sysfs names."""
    assert host.normalize_bus_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert host.normalize_bus_id("3B:00.0") == "0000:3b:00.0"


NUMA_MAPS = """\
55d0c0000000 default file=/usr/bin/python3.11 mapped=10 N0=10 kernelpagesize_kB=4
7f0000000000 default anon=300 dirty=300 N0=100 N1=200 kernelpagesize_kB=4
7f0000400000 default anon=5 dirty=5 N1=5 kernelpagesize_kB=4
"""


def test_parse_numa_maps_picks_the_containing_mapping():
    """An address inside the second mapping gets that mapping's pages per node."""
    assert host.parse_numa_maps(NUMA_MAPS, 0x7F0000001000) == {0: 100, 1: 200}
    assert host.parse_numa_maps(NUMA_MAPS, 0x7F0000400000) == {1: 5}
    assert host.parse_numa_maps(NUMA_MAPS, 0x1000) is None


def test_placement_text():
    """Percent per node, and the expected node when the pages are elsewhere."""
    assert host.placement_text({0: 100, 1: 300}, 1) == "N0=25% N1=75% (expected N1)"
    assert host.placement_text({1: 4}, 1) == "N1=100%"
    assert host.placement_text(None, 0) == "unknown"


def test_numa_placement_of_a_real_buffer():
    """A touched numpy buffer of this process is found in /proc/self/numa_maps on some node."""
    if not Path("/proc/self/numa_maps").exists():
        pytest.skip("no /proc/self/numa_maps (kernel without NUMA)")
    buf = np.ones(1 << 20, dtype=np.uint8)
    pages = host.numa_placement(buf.ctypes.data)
    assert pages and sum(pages.values()) > 0


def test_caches_and_llc(tmp_path):
    """Cache entries as Google Benchmark lists them, and the last-level data/unified cache size."""
    for idx, (level, ctype, size, shared) in enumerate(
        [(1, "Data", "32K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "1024K", "0"), (3, "Unified", "32M", "0-15")]
    ):
        for name, value in (("level", level), ("type", ctype), ("size", size), ("shared_cpu_list", shared)):
            write(tmp_path, f"cpu0/cache/index{idx}/{name}", f"{value}\n")
    caches = host.caches(tmp_path)
    assert caches[3] == {"type": "Unified", "level": 3, "size": 32 << 20, "num_sharing": 16}
    assert host.llc_bytes(tmp_path) == 32 << 20
    assert host.CacheFlusher.for_this_host(tmp_path).size_bytes == 64 << 20
    assert host.CacheFlusher.for_this_host(tmp_path / "none").size_bytes == host.FLUSH_FALLBACK_BYTES


def test_flush_touches_every_line():
    """One flush pass reads and writes every word of the eviction buffer."""
    f = host.CacheFlusher(1 << 16)
    f.flush()
    f.flush()
    assert np.all(f._buf == 2)


def test_bind_to_numa_sets_and_restores_affinity():
    """Inside the block the thread runs on the node's allowed CPUs; afterwards on what it had before."""
    before = os.sched_getaffinity(0)
    cpu = min(before)
    with host.bind_to_numa(NumaNode(0, (cpu,), 0)) as cpus:
        assert cpus == (cpu,) and os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == before


def test_bind_to_unusable_node_leaves_affinity():
    """A node whose CPUs this process may not use, or no node, changes nothing."""
    before = os.sched_getaffinity(0)
    with host.bind_to_numa(NumaNode(7, (100_000,), 0)) as cpus:
        assert set(cpus) == before
    with host.bind_to_numa(None) as cpus:
        assert set(cpus) == before


def test_nvidia_driver_version():
    """The kernel module's version from /proc/driver/nvidia/version."""
    text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    assert host.parse_nvidia_version(text) == "550.54.15"
    open_text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n"
    assert host.parse_nvidia_version(open_text) == "570.86.15"
    assert host.parse_nvidia_version("") is None


def test_mem_available(tmp_path):
    """MemAvailable of /proc/meminfo in bytes, 0 when missing."""
    write(tmp_path, "meminfo", "MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert host.mem_available_bytes(tmp_path) == 2 << 20
    assert host.mem_available_bytes(tmp_path / "none") == 0


def test_host_facts_say_what_is_bound():
    """Facts name the governor, the NUMA nodes, what binding does and how caches are flushed."""
    nodes = (NumaNode(0, (0, 1), 1 << 30), NumaNode(1, (2, 3), 1 << 30))
    facts = host.host_facts({}, nodes, 64 << 20)
    assert facts["cpu_governor"].startswith("unknown")
    assert "node 1: CPUs 2-3" in facts["numa_nodes"]
    assert "no mbind" in facts["numa_binding"]
    assert "64 MiB" in facts["cache_flush"] and "no clflush" in facts["cache_flush"]
    assert host.host_facts({}, nodes[:1], None)["numa_binding"].startswith("single NUMA node")
