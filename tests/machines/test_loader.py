"""Machine file validation: every bad input is one line naming the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine, load_machine_file
from nodecast.machines.loader import PCIE_DEFAULTS, machine_from_dict

#: A minimal valid machine: one socket, one GPU, one PCIe gen3 x16 link.
TINY = """\
schema_version = 1
name = "tiny"
description = "test machine"

[cpu]
model = "Test CPU"
sockets = 1
cores_per_socket = 4
clock_hz = 2e9
memory_bytes = 1e9
memory_bandwidth_bps = 1e10

[gpu]
model = "Test GPU"
count = 1
cpu_socket = [0]
sms = 1
clock_hz = 1e9
memory_bytes = 1e9

[gpu.levels.dram]
bandwidth_bps = 1e11

[[links]]
id = "l0"
kind = "pcie"
endpoints = ["cpu0", "gpu0"]
gen = 3
lanes = 16
"""


def write(tmp_path: Path, text: str, name: str = "m.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_machine_file(path)
    return info.value


def assert_one_line(err: InputError, path: Path, key: str | None, reason: str) -> None:
    """The message is one line with the file, the key and the reason."""
    msg = err.message
    assert "\n" not in msg
    assert str(path) in msg
    if key is not None:
        assert err.key == key
        assert key in msg
    assert reason in msg


def test_tiny_machine_loads(tmp_path):
    """The minimal template loads and fills in the PCIe TLP defaults."""
    m = load_machine_file(write(tmp_path, TINY))
    assert m.name == "tiny"
    link = m.links[0]
    assert (link.mps_bytes, link.mrrs_bytes, link.rcb_bytes, link.header_bytes) == tuple(PCIE_DEFAULTS.values())
    assert m.cpu.numa_domains == 1


def test_negative_bandwidth(tmp_path):
    """A negative DRAM bandwidth names gpu.levels.dram.bandwidth_bps."""
    path = write(tmp_path, TINY.replace("bandwidth_bps = 1e11", "bandwidth_bps = -1e11"))
    assert_one_line(error_of(path), path, "gpu.levels.dram.bandwidth_bps", "must be a positive number")


@pytest.mark.parametrize(("old", "new", "key"), [
    ("bandwidth_bps = 1e11", "bandwidth_bps = 1e308", "gpu.levels.dram.bandwidth_bps"),
    ("memory_bandwidth_bps = 1e10", "memory_bandwidth_bps = 2e15", "cpu.memory_bandwidth_bps"),
    ("lanes = 16\n", ("lanes = 16\n[[links]]\nid = \"bus\"\nkind = \"socket-bus\"\nendpoints = [\"cpu0\", \"gpu0\"]\n"
                      "bandwidth_bps = 1e16\n"), "links[1].bandwidth_bps"),
    ("lanes = 16\n", "lanes = 16\n[measured]\norigin = \"t\"\n[measured.bandwidth_bps]\nhtod_pinned = 1e300\n",
     "measured.bandwidth_bps.htod_pinned"),
    ("lanes = 16\n", ("lanes = 16\n[measured]\norigin = \"t\"\n[measured.gpu]\norigin = \"t\"\n"
                      "[measured.gpu.level_bandwidth_bps]\nl1 = 1e20\n"), "measured.gpu.level_bandwidth_bps.l1"),
])
def test_implausible_bandwidth(tmp_path, old, new, key):
    """A bandwidth above 1 PB/s (1e308 B/s, a unit mistake) names the key and says to check the unit."""
    path = write(tmp_path, TINY.replace(old, new))
    assert_one_line(error_of(path), path, key, "implausible")
    assert "bytes/s" in error_of(path).message


def test_implausible_measured_curve(tmp_path):
    """A measured curve point above 1 PB/s, or infinite, is refused too."""
    curve = "lanes = 16\n[measured]\norigin = \"t\"\n[measured.curves.htod_pinned]\nsizes_bytes = [1, 2]\n"
    for bws in ("[1e9, 1e18]", "[1e9, inf]"):
        path = write(tmp_path, TINY.replace("lanes = 16\n", curve + f"bandwidth_bps = {bws}\n"))
        assert_one_line(error_of(path), path, "measured.curves.htod_pinned.bandwidth_bps", "1 PB/s")


def test_bandwidth_at_the_bound_loads(tmp_path):
    """1 PB/s itself is accepted (the bound is inclusive)."""
    assert load_machine_file(write(tmp_path, TINY.replace("bandwidth_bps = 1e11", "bandwidth_bps = 1e15")))


def test_zero_link_bandwidth(tmp_path):
    """A zero link bandwidth is rejected with the link's index in the key."""
    text = TINY + '[[links]]\nid = "bus"\nkind = "socket-bus"\nendpoints = ["cpu0", "gpu0"]\nbandwidth_bps = 0\n'
    path = write(tmp_path, text)
    assert_one_line(error_of(path), path, "links[1].bandwidth_bps", "must be a positive number (got 0)")


def test_missing_c2c_bandwidth(tmp_path):
    """An NVLink-C2C link without bandwidth_bps reports the missing value."""
    text = TINY.replace('kind = "pcie"', 'kind = "nvlink-c2c"').replace("gen = 3\nlanes = 16\n", "")
    path = write(tmp_path, text)
    assert_one_line(error_of(path), path, "links[0].bandwidth_bps", "missing value")


def test_missing_dram_bandwidth(tmp_path):
    """A GPU without a DRAM bandwidth reports gpu.levels.dram.bandwidth_bps missing."""
    path = write(tmp_path, TINY.replace("bandwidth_bps = 1e11", "size_bytes = 1e9"))
    assert_one_line(error_of(path), path, "gpu.levels.dram.bandwidth_bps", "missing value")


def test_non_number_bandwidth(tmp_path):
    """A bandwidth given as a string is rejected as not a number."""
    path = write(tmp_path, TINY.replace("bandwidth_bps = 1e11", 'bandwidth_bps = "900 GB/s"'))
    assert_one_line(error_of(path), path, "gpu.levels.dram.bandwidth_bps", "must be a number")


def test_unknown_link_kind(tmp_path):
    """An unknown link kind lists the known kinds."""
    path = write(tmp_path, TINY.replace('kind = "pcie"', 'kind = "infiniband"'))
    err = error_of(path)
    assert_one_line(err, path, "links[0].kind", "unknown link kind 'infiniband'")
    assert "nvlink-c2c" in err.message


def test_unknown_endpoint(tmp_path):
    """A link to an endpoint the machine does not have names that endpoint."""
    path = write(tmp_path, TINY.replace('["cpu0", "gpu0"]', '["cpu0", "gpu7"]'))
    assert_one_line(error_of(path), path, "links[0].endpoints", "unknown endpoint 'gpu7'")


def test_self_link(tmp_path):
    """A link from an endpoint to itself is rejected."""
    path = write(tmp_path, TINY.replace('["cpu0", "gpu0"]', '["gpu0", "gpu0"]'))
    assert_one_line(error_of(path), path, "links[0].endpoints", "cannot join 'gpu0' to itself")


def test_missing_gpu_table(tmp_path):
    """A file without [gpu] reports the missing table."""
    start, end = TINY.index("[gpu]"), TINY.index("[[links]]")
    path = write(tmp_path, TINY[:start] + TINY[end:])
    assert_one_line(error_of(path), path, "gpu", "missing table")


def test_gpu_count_vs_cpu_socket(tmp_path):
    """Two GPUs with one cpu_socket entry is a mismatch on gpu.cpu_socket."""
    path = write(tmp_path, TINY.replace("count = 1", "count = 2"))
    assert_one_line(error_of(path), path, "gpu.cpu_socket", "one socket in 0..0 per GPU (2 GPUs")


def test_cpu_socket_out_of_range(tmp_path):
    """A GPU placed on a socket the node does not have is rejected."""
    path = write(tmp_path, TINY.replace("cpu_socket = [0]", "cpu_socket = [1]"))
    assert_one_line(error_of(path), path, "gpu.cpu_socket", "must list one socket")


def test_cpu_socket_boolean(tmp_path):
    """A boolean is not accepted as a socket number."""
    path = write(tmp_path, TINY.replace("cpu_socket = [0]", "cpu_socket = [false]"))
    assert_one_line(error_of(path), path, "gpu.cpu_socket", "must list one socket")


def test_bad_toml(tmp_path):
    """A syntax error is reported as not valid TOML with the file name."""
    path = write(tmp_path, TINY.replace("sockets = 1", "sockets = = 1"))
    assert_one_line(error_of(path), path, None, "not valid TOML")


def test_unknown_key(tmp_path):
    """A misspelt key names the table and lists the allowed keys."""
    path = write(tmp_path, TINY.replace("sockets = 1", "sockets = 1\ncolour = 1"))
    err = error_of(path)
    assert_one_line(err, path, "cpu.colour", "unknown key")
    assert "memory_bandwidth_bps" in err.message


def test_unknown_top_level_key(tmp_path):
    """An unknown top-level key is reported with its name."""
    path = write(tmp_path, "colour = 1\n" + TINY)
    assert_one_line(error_of(path), path, "colour", "unknown key")


def test_missing_schema_version(tmp_path):
    """A file without schema_version says which version is expected."""
    path = write(tmp_path, TINY.replace("schema_version = 1\n", ""))
    assert_one_line(error_of(path), path, "schema_version", "must be 1")


def test_no_route_gpu_to_host(tmp_path):
    """A GPU with no link path to its socket is an error naming both endpoints."""
    text = TINY.replace("count = 1", "count = 2").replace("cpu_socket = [0]", "cpu_socket = [0, 0]")
    path = write(tmp_path, text)
    assert_one_line(error_of(path), path, "links", "no route from cpu0 to gpu1")


def test_unknown_pcie_generation(tmp_path):
    """PCIe gen 7 is not a known generation."""
    path = write(tmp_path, TINY.replace("gen = 3", "gen = 7"))
    assert_one_line(error_of(path), path, "links[0].gen", "unknown PCIe generation 7")


def test_bad_lane_count(tmp_path):
    """PCIe x3 is not a link width."""
    path = write(tmp_path, TINY.replace("lanes = 16", "lanes = 3"))
    assert_one_line(error_of(path), path, "links[0].lanes", "got 3")


def test_rcb_larger_than_mps(tmp_path):
    """An RCB above the MPS is rejected (AHEAD: RCB <= MPS)."""
    path = write(tmp_path, TINY + "mps_bytes = 128\nrcb_bytes = 256\n")
    assert_one_line(error_of(path), path, "links[0].rcb_bytes", "cannot exceed MPS")


def test_nvlink_needs_links(tmp_path):
    """An NVLink link must say how many links (bricks) join the endpoints."""
    path = write(tmp_path, TINY.replace('kind = "pcie"', 'kind = "nvlink"').replace("lanes = 16\n", ""))
    assert_one_line(error_of(path), path, "links[0].links", "missing value")


def test_duplicate_link_id(tmp_path):
    """Two links with one id are rejected."""
    path = write(tmp_path, TINY + TINY[TINY.index("[[links]]"):])
    assert_one_line(error_of(path), path, "links", "link id 'l0' is used twice")


def test_switch_name_clash(tmp_path):
    """A switch named like a GPU would merge two endpoints, so it is rejected."""
    path = write(tmp_path, 'switches = ["gpu0"]\n' + TINY)
    assert_one_line(error_of(path), path, "switches", "clashes with a CPU/GPU endpoint")


def test_switch_listed_twice(tmp_path):
    """A switch listed twice is rejected."""
    path = write(tmp_path, 'switches = ["sw", "sw"]\n' + TINY)
    assert_one_line(error_of(path), path, "switches", "used twice")


def test_missing_file(tmp_path):
    """A path that does not exist is 'no such file' with the path."""
    path = tmp_path / "absent.toml"
    assert_one_line(error_of(path), path, None, "no such file")


def test_unknown_machine_suggests_close_names():
    """A misspelt catalogue name suggests the close names."""
    with pytest.raises(InputError) as info:
        load_machine("sumit")
    msg = info.value.message
    assert "\n" not in msg
    assert "unknown machine 'sumit'" in msg
    assert "Did you mean summit" in msg


def test_unknown_machine_far_from_all_lists_known():
    """A name close to nothing lists the catalogue instead."""
    with pytest.raises(InputError) as info:
        load_machine("zzzzzz")
    assert "Known nodes:" in info.value.message and "titan" in info.value.message


def test_machine_from_dict_uses_given_path():
    """machine_from_dict reports errors against the path it is given."""
    import tomllib

    data = tomllib.loads(TINY.replace("sms = 1", "sms = 0"))
    with pytest.raises(InputError) as info:
        machine_from_dict(data, "inline.toml")
    assert info.value.message.startswith("inline.toml: gpu.sms: must be a positive integer")


def test_empty_machine_file_says_empty(tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text("\n  \n")
    with pytest.raises(InputError, match="is empty"):
        load_machine_file(path)


# -- one host thread's copy rate (issue 12): [cpu] copy_bandwidth_bps and [measured] host_copy_bandwidth_bps ----


def test_host_copy_rate_from_cpu_table_and_measured(tmp_path):
    """[cpu] copy_bandwidth_bps loads; a [measured] host_copy_bandwidth_bps wins over it, and says where it is from."""
    with_cpu = TINY.replace("memory_bandwidth_bps = 1e10", "memory_bandwidth_bps = 1e10\ncopy_bandwidth_bps = 5e9")
    m = load_machine_file(write(tmp_path, with_cpu))
    assert m.cpu.copy_bandwidth_bps == 5e9
    assert m.host_copy_bandwidth() == (5e9, "machine file")
    measured = with_cpu + ('\n[measured]\norigin = "test"\nhost_copy_bandwidth_bps = 7e9\n'
                           '[measured.facts]\nhost_copy = "nodecast calibrate 0.1.0 on 2026-01-01: memmove"\n')
    m = load_machine_file(write(tmp_path, measured, "n.toml"))
    assert m.host_copy_bandwidth() == (7e9, "measured: nodecast calibrate 0.1.0 on 2026-01-01")
    assert load_machine_file(write(tmp_path, TINY, "o.toml")).host_copy_bandwidth() is None


@pytest.mark.parametrize(("line", "reason"), [
    ("copy_bandwidth_bps = 0", "must be"), ("copy_bandwidth_bps = -3e9", "must be"),
    ("copy_bandwidth_bps = 2e18", "implausible"), ('copy_bandwidth_bps = "fast"', "number"),
])
def test_bad_host_copy_rate(tmp_path, line, reason):
    """A copy rate that is not a plausible number of bytes/s is one line naming cpu.copy_bandwidth_bps."""
    path = write(tmp_path, TINY.replace("memory_bandwidth_bps = 1e10", f"memory_bandwidth_bps = 1e10\n{line}"))
    err = error_of(path)
    assert err.key == "cpu.copy_bandwidth_bps"
    assert reason in err.reason


#: TINY with an NVSwitch joining its GPU, so that a [switch.nvswitch] table has a switch to describe.
SWITCHED = 'switches = ["nvswitch"]\n' + TINY + """
[[links]]
id = "nv0"
kind = "nvlink"
endpoints = ["gpu0", "nvswitch"]
gen = 4
links = 18
"""


def test_switch_table_is_optional(tmp_path):
    """A listed switch without a [switch.NAME] table loads as before: nothing is known of it."""
    m = load_machine_file(write(tmp_path, SWITCHED))
    assert m.switches == ("nvswitch",) and m.switch("nvswitch") is None and m.switch_specs == ()
    assert m.sharp_switch([0]) is None


def test_switch_table_gives_kind_generation_and_sharp(tmp_path):
    """[switch.NAME] says what the switch is: kind, generation and whether it reduces in the switch (NVLS)."""
    text = SWITCHED + '\n[switch.nvswitch]\nkind = "nvswitch"\ngen = 3\nsharp = true\n'
    m = load_machine_file(write(tmp_path, text))
    sw = m.switch("nvswitch")
    assert (sw.id, sw.kind, sw.gen, sw.sharp) == ("nvswitch", "nvswitch", 3, True)
    assert m.sharp_switch([0]) is sw


@pytest.mark.parametrize(("table", "key", "reason"), [
    ('kind = "nvswitch"\nsharp = "yes"\n', "switch.nvswitch.sharp", "must be true or false (got 'yes')"),
    ('kind = "nvswitch"\nsharp = 1\n', "switch.nvswitch.sharp", "must be true or false (got 1)"),
    ('kind = "crossbar"\n', "switch.nvswitch.kind", "must be one of nvswitch, pcie"),
    ('kind = "nvswitch"\ngen = 9\n', "switch.nvswitch.gen", "unknown NVSwitch generation 9"),
    ('kind = "nvswitch"\ngen = 2\nsharp = true\n', "switch.nvswitch.sharp",
     "NVLink SHARP needs a third-generation NVSwitch or later"),
    ('kind = "pcie"\nsharp = true\n', "switch.nvswitch.sharp", "NVLink SHARP needs a third-generation NVSwitch"),
    ('kind = "nvswitch"\nports = 64\n', "switch.nvswitch.ports", "unknown key"),
])
def test_bad_switch_table_is_one_line(tmp_path, table, key, reason):
    """A bad [switch.NAME] value is one line naming the file, the key and what is wrong."""
    path = write(tmp_path, SWITCHED + "\n[switch.nvswitch]\n" + table)
    assert_one_line(error_of(path), path, key, reason)


def test_switch_table_must_name_a_listed_switch(tmp_path):
    """A [switch.NAME] for a switch that `switches` does not list is rejected, naming it."""
    path = write(tmp_path, SWITCHED + '\n[switch.nvswich]\nkind = "nvswitch"\n')
    assert_one_line(error_of(path), path, "switch.nvswich", "not listed in switches")


def test_xgmi_link_needs_a_known_generation(tmp_path):
    """An xGMI (Infinity Fabric) link needs its generation and links; an unknown generation names the known ones."""
    base = TINY.replace("count = 1\ncpu_socket = [0]", "count = 2\ncpu_socket = [0, 0]") + """
[[links]]
id = "l1"
kind = "pcie"
endpoints = ["cpu0", "gpu1"]
gen = 3
lanes = 16

[[links]]
id = "if01"
kind = "xgmi"
endpoints = ["gpu0", "gpu1"]
"""
    m = load_machine_file(write(tmp_path, base + "gen = 4\nlinks = 1\n"))
    assert m.links[-1].kind == "xgmi" and m.route("gpu0", "gpu1") == (m.links[-1],)
    path = write(tmp_path, base + "gen = 7\nlinks = 1\n", "bad.toml")
    assert_one_line(error_of(path), path, "links[2].gen", "unknown Infinity Fabric (xGMI) generation 7 (known: 3-4;")
    path = write(tmp_path, base + "gen = 4\n", "nolinks.toml")
    assert_one_line(error_of(path), path, "links[2].links", "missing value")
