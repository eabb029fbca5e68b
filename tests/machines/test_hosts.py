"""Host files: the shipped hosts load with sources, and bad host files give one precise line."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.machines.hosts import DEFAULT_HOST, host_keys, hosts_dir, load_host, load_host_file
from nodecast.machines.loader import catalogue_dir

#: Each catalogue machine and the host file made from its [cpu] table.
MACHINE_HOSTS = {
    "titan": "opteron-6274-titan", "summit": "power9-22c-summit", "commscope-s822lc": "power8nv-s822lc",
    "commscope-ac922": "power9-20c-ac922", "ahead-node1": "xeon-e5-2670v2-2s", "ahead-node2": "xeon-e5-2650-2s",
    "commscope-4029gp-tvrt": "xeon-gold-6148-2s", "v100-pcie-server": "xeon-gold-6226r-2s",
    "a100-80-pcie-server": "xeon-gold-6226r-2s", "a100-40-rome-server": "epyc-rome-64c-2s",
    "dgx-a100": "epyc-7742-2s", "h100-pcie-server": "epyc-milan-64c-2s", "h100-sxm5-server": "xeon-platinum-8480c-2s",
    "h200-node": "xeon-platinum-8480c-2s", "gh200": "grace-gh200",
    "dgx-a100-80gb": "epyc-7742-2s", "dgx-b200": "xeon-platinum-8570-2s", "hgx-b300": "xeon-platinum-8480c-2s",
    "l40s-pcie-8gpu": "xeon-platinum-8480c-2s", "rtx-pro-6000-bse-8gpu": "xeon-platinum-8480c-2s",
    "h100-nvl-8gpu": "xeon-platinum-8480c-2s", "h100-nvl-8gpu-bridged": "xeon-platinum-8480c-2s",
    "mi300x-platform": "xeon-platinum-8480c-2s", "mi325x-platform": "xeon-platinum-8480c-2s",
}
#: Catalogue machines that name a host and give some [cpu] values of their own (which win), and those values:
#: several Grace CPUs of GB200/GB300 racks, each the Grace of hosts/grace-gh200.toml.
MACHINE_HOSTS_OVERRIDDEN = {
    name: ("grace-gh200", {"sockets", "clock_hz", "memory_bytes", "numa_domains"})
    for name in ("gb200-nvl72", "gb200-nvl72-tray", "gb300-nvl72", "gb300-nvl72-tray")
}


@pytest.mark.parametrize("key", host_keys())
def test_every_host_loads_with_a_source_per_value(key):
    """Each shipped host loads, is named after its file, and every value has its source comment."""
    h = load_host(key)
    assert h.key == key
    assert all(h.sources.get(f"cpu.{f}") for f in ("model", "sockets", "cores_per_socket", "clock_hz",
                                                   "memory_bytes", "memory_bandwidth_bps", "numa_domains"))
    assert h.sources.get("pcie_gen")
    if h.socket_bus_bps is not None:
        assert h.sources.get("socket_bus.bandwidth_bps")


@pytest.mark.parametrize(("machine", "key"), sorted(MACHINE_HOSTS.items()))
def test_host_matches_its_machine(machine, key):
    """A host file holds exactly the [cpu] values of the catalogue machine it was made from."""
    from nodecast.machines import load_machine

    m, h = load_machine(machine), load_host(key)
    assert h.cpu == m.cpu


def test_default_host_exists_and_is_pcie_gen5():
    """The default host is shipped and does not slow any GPU's PCIe link (gen5)."""
    assert load_host(DEFAULT_HOST).pcie_gen == 5


def test_every_catalogue_machine_has_a_host():
    """Every catalogue machine's [cpu] has a host file (the catalogue is the host catalogue's origin)."""
    assert {p.stem for p in catalogue_dir().glob("*.toml")} == set(MACHINE_HOSTS) | set(MACHINE_HOSTS_OVERRIDDEN)


@pytest.mark.parametrize(("machine", "key", "fields"),
                         sorted((m, k, f) for m, (k, f) in MACHINE_HOSTS_OVERRIDDEN.items()))
def test_host_with_overrides(machine, key, fields):
    """A machine that overrides its host's [cpu] values differs from the host in those fields only."""
    from dataclasses import fields as dataclass_fields

    from nodecast.machines import load_machine

    m, h = load_machine(machine), load_host(key)
    assert m.cpu.host is not None and m.cpu.host.key == key
    differ = {f.name for f in dataclass_fields(m.cpu) if f.compare and getattr(m.cpu, f.name) != getattr(h.cpu, f.name)}
    assert differ == fields


@pytest.mark.parametrize(("old", "new", "key", "reason"), [
    ("pcie_gen = 5", "pcie_gen = 9", "pcie_gen", "unknown PCIe generation 9"),
    ('key = "xeon-platinum-8480c-2s"', 'key = "other"', "key", "must equal the file name"),
    ("sockets = 2", "sockets = 0", "cpu.sockets", "positive integer"),
    ("[socket_bus]", "[socket_bux]", "socket_bux", "unknown key"),
])
def test_bad_host(tmp_path, old, new, key, reason):
    """Each bad host value is one line naming the host file, the key and the reason."""
    text = (hosts_dir() / f"{DEFAULT_HOST}.toml").read_text()
    assert old in text
    path = tmp_path / f"{DEFAULT_HOST}.toml"
    path.write_text(text.replace(old, new))
    with pytest.raises(InputError) as info:
        load_host_file(path)
    assert info.value.key == key and reason in info.value.message and str(path) in info.value.message


def test_unknown_host_suggests():
    """An unknown host key is one line with the close keys."""
    with pytest.raises(InputError) as info:
        load_host("epyc-7742")
    assert "Did you mean epyc-7742-2s" in info.value.message


@pytest.mark.parametrize("key", host_keys())
def test_host_copy_rate_is_marked_measured_or_assumed(key):
    """A host's single-thread copy rate, where given, says [measured: source] or [assumed: why]; else the file says
    why it is not given (issue 12)."""
    h = load_host(key)
    text = (hosts_dir() / f"{key}.toml").read_text()
    if h.cpu.copy_bandwidth_bps is None:
        assert "copy_bandwidth_bps (one host thread's memcpy rate): not given" in text
        return
    source = h.sources["cpu.copy_bandwidth_bps"]
    assert "[measured: " in source or "[assumed: " in source
    assert 1e9 <= h.cpu.copy_bandwidth_bps <= h.cpu.memory_bandwidth_bps


def test_catalogue_machines_take_their_host_copy_rate():
    """Titan and Summit get the host files' copy rates, labelled with where they come from."""
    from nodecast.machines import load_machine

    assert load_machine("titan").host_copy_bandwidth() == (3.83e9, "host opteron-6274-titan, measured")
    assert load_machine("summit").host_copy_bandwidth() == (13.8e9, "host power9-22c-summit, measured")
    assert load_machine("commscope-ac922").host_copy_bandwidth()[1] == "host power9-20c-ac922, assumed"
