"""Nodes composed from a data sheet and a host: in a machine file (with provenance) and from spec strings."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine, load_machine_file
from nodecast.machines.compose import parse_spec
from nodecast.machines.hosts import DEFAULT_HOST, load_host

#: A machine file that names a sheet and a host and overrides two values (SI units, format of docs/machines.md).
NAMED = """\
schema_version = 1
name = "named"
description = "test node naming a sheet and a host"

[cpu]
host = "xeon-gold-6226r-2s"
memory_bytes = 1e12

[gpu]
sheet = "h100-sxm5-80gb"
count = 2
cpu_socket = [0, 1]
clock_hz = 1.755e9

[gpu.peak_flops.fp64]
fma = 25.6e12
addmul = 12.8e12

[[links]]
id = "pcie-gpu0"
kind = "pcie"
endpoints = ["cpu0", "gpu0"]
gen = 3
lanes = 16

[[links]]
id = "pcie-gpu1"
kind = "pcie"
endpoints = ["cpu1", "gpu1"]
gen = 3
lanes = 16
"""


def test_machine_file_fills_from_sheet_and_host(sheet_folder, tmp_path):
    """Values the file leaves out come from the sheet and the host; its own win; provenance says which is which."""
    path = tmp_path / "named.toml"
    path.write_text(NAMED)
    m = load_machine_file(path)
    assert m.gpu.sms == 132 and m.gpu.dram_bandwidth_bps == 3.35e12 and m.gpu.memory_bytes == 80e9
    assert m.gpu.clock_hz == 1.755e9 and m.gpu.peak_flops["fp64"].fma == 25.6e12
    assert m.gpu.peak_flops["fp32"].fma == 66.9e12 and m.gpu.peak_flops["fp32"].addmul == 66.9e12 / 2
    assert m.gpu.levels["l2"].size_bytes == 50e6
    assert m.cpu.model == "Intel Xeon Gold 6226R" and m.cpu.memory_bytes == 1e12
    assert m.gpu.sheet.key == "h100-sxm5-80gb" and m.gpu.limits.max_warps_per_sm == 64
    assert m.cpu.host.key == "xeon-gold-6226r-2s"
    p = m.provenance
    assert p["gpu.sms"] == "data sheet h100-sxm5-80gb"
    assert p["gpu.clock_hz"] == "machine file (data sheet h100-sxm5-80gb: 1.98 GHz)"  # with its unit (issue 18)
    assert p["gpu.peak_flops.fp64"].startswith("machine file (data sheet h100-sxm5-80gb: fma 33,500 GFlop/s")
    assert p["cpu.memory_bytes"].startswith("machine file (host xeon-gold-6226r-2s:")
    assert p["cpu.model"] == "host xeon-gold-6226r-2s" and p["gpu.count"] == "machine file"


def test_peaks_beyond_the_machine_schema_come_from_the_sheet(sheet_folder, tmp_path):
    """Tensor peaks live on the sheet; GPU.peak_flops_per_s prefers the machine's own, then the sheet's."""
    path = tmp_path / "named.toml"
    path.write_text(NAMED)
    g = load_machine_file(path).gpu
    assert g.peak_flops_per_s("fp64") == 25.6e12  # the file's
    assert g.peak_flops_per_s("bf16_tensor") == 989.4e12  # the sheet's
    assert g.peak_flops_per_s("fp4_tensor") is None


def test_file_without_sheet_has_no_limits(tmp_path):
    """A machine file that gives its GPU by hand has no sheet and no limits, and every value is the file's."""
    text = NAMED.replace('host = "xeon-gold-6226r-2s"', 'model = "cpu"\nsockets = 2\ncores_per_socket = 4\n'
                         'clock_hz = 2e9\nmemory_bandwidth_bps = 1e11')
    text = text.replace('sheet = "h100-sxm5-80gb"', 'model = "gpu"\nsms = 10\nmemory_bytes = 1e10')
    text += "[gpu.levels.dram]\nbandwidth_bps = 1e11\n"
    path = tmp_path / "bare.toml"
    path.write_text(text)
    m = load_machine_file(path)
    assert m.gpu.sheet is None and m.gpu.limits is None and m.cpu.host is None
    assert m.gpu.peak_flops_per_s("fp32") is None
    assert set(m.provenance.values()) == {"machine file", "default: one per socket"}


@pytest.mark.parametrize(("old", "new", "key", "reason"), [
    ('sheet = "h100-sxm5-80gb"', 'sheet = "h100-sxm5"', "gpu.sheet", "unknown GPU data sheet 'h100-sxm5'"),
    ('host = "xeon-gold-6226r-2s"', 'host = "xeon"', "cpu.host", "unknown host 'xeon'"),
    ('sheet = "h100-sxm5-80gb"', "sheet = 3", "gpu.sheet", "must be a non-empty string"),
    ("count = 2", "", "gpu.count", "missing value"),
])
def test_bad_reference_names_the_machine_file(sheet_folder, tmp_path, old, new, key, reason):
    """An unknown sheet or host, or a missing value neither gives, is one line naming the machine file and key."""
    path = tmp_path / "named.toml"
    path.write_text(NAMED.replace(old, new))
    with pytest.raises(InputError) as info:
        load_machine_file(path)
    assert info.value.key == key and reason in info.value.message and str(path) in info.value.message


def test_sheet_by_relative_path(sheet_folder, h100, tmp_path):
    """``sheet = "mine.toml"`` reads a sheet beside the machine file; it uses the catalogue's targets."""
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "mine.toml").write_text(h100(key="mine"))
    path = tmp_path / "own" / "node.toml"
    path.write_text(NAMED.replace('sheet = "h100-sxm5-80gb"', 'sheet = "mine.toml"'))
    m = load_machine_file(path)
    assert m.gpu.sheet.key == "mine" and m.provenance["gpu.sms"] == "data sheet mine"


def test_spec_with_count_and_host(sheet_folder):
    """``KEYxN@HOST`` composes N GPUs on the host, spread over its sockets, each on its own PCIe link."""
    m = load_machine("h100-sxm5-80gbx4@epyc-7742-2s")
    assert m.name == "h100-sxm5-80gbx4@epyc-7742-2s" and m.path is None
    assert m.gpu.count == 4 and m.gpu.cpu_socket == (0, 0, 1, 1)
    assert m.cpu.model == "AMD EPYC 7742"
    pcie = [link for link in m.links if link.kind == "pcie"]
    assert [link.gen for link in pcie] == [4] * 4  # the sheet's gen5 capped at the host's gen4
    assert any("PCIe gen5 x16 runs at gen4 in host epyc-7742-2s" in n for n in m.notes)
    assert any("no GPU-to-GPU links" in n for n in m.notes)
    assert not any(n.startswith("host assumed") for n in m.notes)
    assert m.provenance["cpu.model"] == "host epyc-7742-2s"
    assert m.provenance["gpu.count"] == "spec h100-sxm5-80gbx4@epyc-7742-2s"
    assert [link.kind for link in m.links].count("socket-bus") == 1


def test_spec_without_host_assumes_the_default(sheet_folder):
    """Without @HOST the default host is used and the notes and provenance say it was assumed."""
    m = load_machine("h100-sxm5-80gb")
    assert m.gpu.count == 1 and m.cpu.host.key == DEFAULT_HOST
    assert m.notes[0].startswith(f"host assumed: {DEFAULT_HOST}")
    assert m.provenance["cpu.model"] == f"host {DEFAULT_HOST} (assumed)"
    assert m.links[0].gen == 5


def test_spec_by_device_name(sheet_folder):
    """The GPU of a spec may be a device name as a trace records it."""
    assert load_machine("NVIDIA H100 80GB HBM3").gpu.sheet.key == "h100-sxm5-80gb"
    assert load_machine("NVIDIA H100 80GB HBM3x2").gpu.count == 2


def test_catalogue_name_wins_over_spec(sheet_folder, h100, add_sheet, monkeypatch):
    """A catalogue machine name is never read as a spec string, even when a sheet has that key."""
    from nodecast.machines import loader, lookup

    add_sheet(h100(key="summit", device_names='["x"]'))
    assert parse_spec("summit") is not None
    loaded = []
    monkeypatch.setattr(lookup, "load_machine_file", lambda path: loaded.append(path) or path)
    load_machine("summit")
    assert loaded == [loader.catalogue_dir() / "summit.toml"]


@pytest.mark.parametrize(("spec", "reason"), [
    ("h100-sxm5-80gbx0", "GPU count 0"),
    ("h100-sxm5-80gbx99", "GPU count 99"),
    ("h100-sxm5-80gb@", "no host after '@'"),
    ("h100-sxm5-80gb@nohost", "unknown host 'nohost'"),
    ("nosuchgpu", "unknown machine 'nosuchgpu'"),
])
def test_bad_spec(sheet_folder, spec, reason):
    """A bad count, an empty or unknown host, or an unknown GPU is one line saying so."""
    with pytest.raises(InputError) as info:
        load_machine(spec)
    assert reason in info.value.message and "\n" not in info.value.message


def test_host_gpu_link_replaces_the_sheet_link(sheet_folder, h100, add_sheet):
    """A POWER host's NVLink replaces the sheet's link when the sheet's link is NVLink too."""
    add_sheet(h100(key="nvgpu", device_names='["nvgpu"]', link_kind="nvlink", link_gen=2).replace(
        "lanes = 16", "links = 2"))
    m = load_machine("nvgpux2@power9-22c-summit")
    assert [(link.kind, link.gen, link.links) for link in m.links[:2]] == [("nvlink", 2, 2)] * 2


def test_link_the_host_lacks_is_an_error(sheet_folder, h100, add_sheet):
    """An NVLink-attached GPU in a PCIe-only host is refused, naming both and what to do."""
    add_sheet(h100(key="nvgpu", device_names='["nvgpu"]', link_kind="nvlink", link_gen=2).replace(
        "lanes = 16", "links = 2"))
    with pytest.raises(InputError) as info:
        load_machine("nvgpu@epyc-7742-2s")
    msg = info.value.message
    assert "nvgpu attaches to its host by nvlink but host epyc-7742-2s offers PCIe only" in msg
    assert "nodecast machines template --gpu nvgpu --host epyc-7742-2s" in msg


def test_default_host_for_a_superchip(sheet_folder, h100, add_sheet):
    """A GPU attached by NVLink-C2C gets the one catalogue host that offers it (Grace)."""
    text = h100(key="c2c", device_names='["c2c"]').replace('kind = "pcie"\ngen = 5\nlanes = 16',
                                                            'kind = "nvlink-c2c"\nbandwidth_bps = 450e9')
    add_sheet(text)
    m = load_machine("c2c")
    assert m.cpu.host.key == "grace-gh200" and m.links[0].kind == "nvlink-c2c"
    assert m.links[0].bandwidth_bps == 450e9


def test_parse_spec_returns_none_for_non_specs(sheet_folder):
    """parse_spec leaves names that are not specs to the caller."""
    assert parse_spec("summit") is None and parse_spec("") is None
    spec = parse_spec("h100-sxm5-80gbx8@" + DEFAULT_HOST)
    assert (spec.count, spec.host, spec.host_assumed) == (8, load_host(DEFAULT_HOST), False)


def test_copy_engines_and_kernel_slots_from_the_sheet_or_the_machine_file(sheet_folder, tmp_path):
    """A node naming the H100 SXM5 sheet gets its copy engines (asyncEngineCount 3) and kernel slots (128) from it;
    a machine file's [gpu] copy_engines / max_concurrent_kernels override them, with their provenance; a value
    that is not a positive integer is one line naming the key."""
    path = tmp_path / "named.toml"
    path.write_text(NAMED)
    m = load_machine_file(path)
    assert (m.gpu.copy_engines, m.gpu.max_concurrent_kernels) == (3, 128)
    assert m.provenance["gpu.copy_engines"] == "data sheet h100-sxm5-80gb"
    path.write_text(NAMED.replace("clock_hz = 1.755e9", "clock_hz = 1.755e9\ncopy_engines = 1\nmax_concurrent_kernels = 16"))
    m = load_machine_file(path)
    assert (m.gpu.copy_engines, m.gpu.max_concurrent_kernels) == (1, 16)
    assert m.provenance["gpu.copy_engines"].startswith("machine file (data sheet h100-sxm5-80gb: 3")
    path.write_text(NAMED.replace("clock_hz = 1.755e9", "clock_hz = 1.755e9\ncopy_engines = 0"))
    with pytest.raises(InputError, match="copy_engines") as info:
        load_machine_file(path)
    assert "positive integer" in str(info.value)


# -- A's node with another GPU (a GPU alone as --to) ------------------------------------------------------------------

def test_gpu_only_spec_names_a_gpu_without_a_host():
    """A sheet key or device name (xN allowed) is a GPU alone; a catalogue node, GPU@HOST or a file is not."""
    from nodecast.machines.compose import gpu_only_spec

    assert gpu_only_spec("gtx-970")[0].key == "gtx-970" and gpu_only_spec("gtx-970")[1] is None
    assert gpu_only_spec("GeForce GTX 970")[0].key == "gtx-970"
    assert gpu_only_spec("gtx-970x2")[1] == 2
    for text in ("titan", "gtx-970@xeon-platinum-8480c-2s", "node.toml", "no-such-gpu"):
        assert gpu_only_spec(text) is None, text


def test_with_gpu_keeps_the_host_and_what_it_measured():
    """Another GPU in A's node: A's CPU, host copy rate, 1-byte costs and host facts kept; A's GPU measurements
    dropped with its GPU; a link measurement kept while the GPU's link does not change, dropped when it does."""
    from dataclasses import replace

    from nodecast.machines.compose import same_host, with_gpu
    from nodecast.machines.schema import Measured
    from nodecast.machines.sheets import load_sheet

    base = load_machine("h100-pcie-server")
    a = replace(base, measured=replace(base.measured, one_byte_s={"htod_pinned": 2e-6}, host_copy_bandwidth_bps=9e9,
                                       bandwidth_bps={"htod_pinned": 20e9}))
    b = with_gpu(a, load_sheet("a100-pcie-40gb"))  # PCIe gen4 x16, as the H100 PCIe's link in this gen4 host
    assert b.gpu.model == "NVIDIA A100 PCIe 40GB" and b.cpu == a.cpu and same_host(a, b)
    assert b.host_link() is a.host_link()
    m = b.measured
    assert (m.one_byte_s, m.host_copy_bandwidth_bps, m.bandwidth_bps) == ({"htod_pinned": 2e-6}, 9e9,
                                                                          {"htod_pinned": 20e9})
    assert m.gpu_peak_flops == {} and m.gpu_level_bandwidth_bps == {} and m.facts["host"] == a.measured.facts["host"]
    assert "compute_capability" not in m.facts
    c = with_gpu(a, load_sheet("gtx-970"))  # PCIe gen3: the link changes, its measured rate goes
    assert (c.host_link().gen, c.host_link().lanes) == (3, 16) and c.measured.bandwidth_bps == {}
    assert c.measured.one_byte_s == {"htod_pinned": 2e-6} and isinstance(c.measured, Measured)
    assert with_gpu(a, load_sheet("h100-pcie-80gb")) is a  # A's own GPU: A


def test_with_gpu_on_an_nvlink_host_attaches_a_pcie_gpu_by_the_hosts_pcie():
    """Summit's V100s attach by NVLink to POWER9; an A100 SXM4 (PCIe to its host) gets the host's PCIe gen4 x16,
    and the NVLink between GPUs is A's, said in a note."""
    from nodecast.machines.compose import with_gpu
    from nodecast.machines.sheets import load_sheet

    summit = load_machine("summit")
    b = with_gpu(summit, load_sheet("a100-sxm4-40gb"))
    assert b.gpu.count == summit.gpu.count and b.name == "a100-sxm4-40gbx6@summit"
    assert {(b.host_link(g).kind, b.host_link(g).gen, b.host_link(g).lanes) for g in range(6)} == {("pcie", 4, 16)}
    assert any(str(n).startswith("links between GPUs kept from summit (NVLink2 x2)") for n in b.notes)
    assert str(b.notes[0]).startswith("B is A's node (summit) with the GPU changed: Tesla V100-SXM2-16GB -> ")
