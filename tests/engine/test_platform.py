"""Platforms imported from StarPU files and built from nodecast Machines, and what-ifs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.registry import get_models
from nodecast.engine.platform import RAM, Platform
from nodecast.traces.kinds import CopyKind, MemKind, OpKind
from nodecast.traces.trace import Trace


@pytest.fixture
def attila(starpu_data):
    return Platform.from_starpu(starpu_data / "sampling" / "bus" / "attila.platform.v4.xml")


@pytest.mark.shared
def test_attila_nodes_capacities_and_peer_access(attila):
    """attila has RAM and three 3.2 GB C2050s with peer copies allowed."""
    assert attila.node_names == ["RAM", "CUDA0", "CUDA1", "CUDA2"]
    assert attila.capacity_bytes[1:] == [3220897792.0] * 3
    assert math.isinf(attila.capacity_bytes[RAM])
    assert attila.copy_path(1, 3) == [(1, 3)]
    assert attila.n_cpus == 12


@pytest.mark.shared
def test_route_latency_is_the_sum_of_link_latencies(attila):
    """RAM->CUDA2 crosses links whose latencies add up to 10 µs (only RAM-CUDA2 has one)."""
    assert attila.route_latency_s[RAM][3] == pytest.approx(10e-6)
    names = [attila.link_names[x] for x in attila.route_links[RAM][3]]
    assert names[0] == "RAM-CUDA2" and "Host" in names


@pytest.mark.shared
def test_starpu_transfer_prediction_uses_two_ngpus(attila):
    """The scheduler's prediction is latency + size/bandwidth x 2 x 3 GPUs, from the .bandwidth/.latency files."""
    size = 3686400
    expected = 9.500836e-6 + size / 6008.942513e6 * 2 * 3
    assert attila.predict_transfer_s(RAM, 1, size) == pytest.approx(expected)


@pytest.mark.shared
def test_gpu_count_what_ifs(attila):
    """Fewer GPUs keep the first ones; more GPUs copy existing ones with their own per-pair links."""
    two = attila.with_gpu_count(2)
    assert two.node_names == ["RAM", "CUDA0", "CUDA1"]
    five = attila.with_gpu_count(5)
    assert five.node_names[-1] == "CUDA4" and five.model_devid == [0, 0, 1, 2, 0, 1]
    own = {five.link_names[x] for x in five.route_links[5][RAM]}  # node 5 is CUDA4, a copy of CUDA1
    assert "CUDA1-RAM (CUDA4)" in own and "Host" in own
    assert five.copy_path(5, 2) == [(5, RAM), (RAM, 2)]  # a copy and its original meet through RAM
    assert five.copy_path(5, 1) == [(5, 1)]


@pytest.mark.shared
def test_memory_and_bandwidth_what_ifs(attila):
    """GPU memory is replaced; link bandwidths and the calibration scale together."""
    small = attila.with_gpu_memory(1e9)
    assert small.capacity_bytes[1:] == [1e9] * 3
    fast = attila.with_bandwidth_scale(2.0)
    assert fast.link_bandwidth_bps[0] == pytest.approx(2 * attila.link_bandwidth_bps[0])
    assert fast.predict_transfer_s(RAM, 1, 1e6) < attila.predict_transfer_s(RAM, 1, 1e6)


def test_platform_from_machine():
    """The titan Machine gives RAM plus one GPU joined by a PCIe gen2 x16 link in each direction,
    carrying AHEAD's effective bandwidth: below the 8 GB/s raw rate, reads below writes (eqs. 4-5)."""
    plat = Platform.from_machine(load_machine("titan"))
    assert plat.node_names == ["RAM", "CUDA0"]
    assert len(plat.link_names) == 2
    assert plat.route_links[RAM][1] == (0,) and plat.route_links[1][RAM] == (1,)
    htod, dtoh = plat.link_bandwidth_bps
    assert 5e9 < htod < dtoh < 8e9


@pytest.mark.parametrize("name", ["titan", "summit", "h100-sxm5-server", "gh200"])
@pytest.mark.parametrize(("copy_kind", "src_mem", "dst_mem", "a", "b"), [
    (CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE, RAM, 1),
    (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED, 1, RAM),
])
def test_from_machine_lone_copy_takes_aheads_time(name, copy_kind, src_mem, dst_mem, a, b):
    """One machine file, one link model: a lone pinned copy on the simulated platform takes what
    `project`'s AHEAD model gives the same copy on the same machine, (L+O) + n / BW_eff."""
    machine = load_machine(name)
    plat = Platform.from_machine(machine)
    n = 256 * 2**20
    trace = Trace.from_columns({"kind": np.array([OpKind.MEMCPY]), "copy_kind": np.array([copy_kind]),
                                "src_mem": np.array([src_mem]), "dst_mem": np.array([dst_mem]),
                                "bytes": np.array([n]), "start_ns": np.array([0]), "end_ns": np.array([10**9])})
    ahead = get_models(["ahead"])[0].project(trace, machine, machine).time_s[0]
    links = plat.route_links[a][b]
    simulated = plat.route_latency_s[a][b] + n / min(plat.link_bandwidth_bps[x] for x in links)
    assert simulated == pytest.approx(ahead, rel=1e-5)


def test_missing_route_between_memory_nodes_is_an_input_error(tmp_path):
    """A platform where a GPU cannot reach RAM is one InputError naming both nodes."""
    path = tmp_path / "lonely.platform.xml"
    path.write_text(
        '<platform version="4"><AS id="a" routing="Full"><host id="RAM" speed="1f"/>'
        '<host id="CUDA0" speed="1f"><prop id="memsize" value="1000000000"/></host>'
        '<link id="l" bandwidth="1e9Bps" latency="0s"/>'
        '<route src="RAM" dst="CUDA0" symmetrical="NO"><link_ctn id="l"/></route></AS></platform>'
    )
    with pytest.raises(InputError, match="no route between memory nodes CUDA0 and RAM"):
        Platform.from_starpu(path)


@pytest.mark.shared
def test_bus_files_that_are_link_stubs_are_followed(starpu_data):
    """hannibal-pitch's .bandwidth/.latency/.config are git symlink stubs naming hannibal's files."""
    bus = starpu_data / "sampling" / "bus"
    pitch = Platform.from_starpu(bus / "hannibal-pitch.platform.v4.xml")
    plain = Platform.from_starpu(bus / "hannibal.platform.v4.xml")
    assert pitch.predict_bandwidth_bps == plain.predict_bandwidth_bps
    assert pitch.n_cpus == plain.n_cpus


def _attila_copy(starpu_data, tmp_path):
    import shutil

    bus = tmp_path / "bus"
    bus.mkdir()
    for suffix in ("platform.v4.xml", "bandwidth", "latency", "config"):
        shutil.copy(starpu_data / "sampling" / "bus" / f"attila.{suffix}", bus / f"attila.{suffix}")
    return bus


@pytest.mark.shared
@pytest.mark.parametrize(
    ("name", "damage", "expected"),
    [
        ("bandwidth", lambda text: "", r"bandwidth \(MB/s\) from RAM to CUDA0, row 0, column 1: is missing"),
        ("bandwidth", lambda text: text.replace("\t6008.", "\t-6008.", 1), r"-6008\.942513 is out of range"),
        ("latency", lambda text: text.replace("\t9.5", "\t-9.5", 1),
         r"latency \(µs\) from RAM to CUDA0, row 0, column 1: -9\.500836 is out of range \(must be >= 0 and <= "
         r"1e\+06\)"),
        ("latency", lambda text: text.replace("\t9.500836", "\t1e308", 1),  # issue 10: 1e308 was accepted
         r"latency \(µs\) from RAM to CUDA0, row 0, column 1: 1e\+308 is out of range \(must be >= 0 and <= 1e\+06\)"),
        ("latency", lambda text: text.replace("\t9.500836", "\tinf", 1), r"row 0, column 1: inf is infinite"),
        ("bandwidth", lambda text: text.replace("\t6008.942513", "\t1e-300", 1),
         r"bandwidth \(MB/s\) from RAM to CUDA0, row 0, column 1: 1e-300 is out of range \(must be >= 1e-06\)"),
        ("latency", lambda text: text.replace("\t9.500836", "\tfast", 1), r"column 1, line 2: 'fast' is not a number"),
        ("config", lambda text: text.replace("12 #", "-12 #", 1), r"count of 'number of cpus', line 2: '-12' is out of "
                                                                   r"range \(must be >= 0\)"),
        ("config", lambda text: text.replace("12 #", "inf #", 1), r"count of 'number of cpus', line 2: 'inf' is "
                                                                    r"infinite"),
        ("bandwidth", lambda text: b"\x00\x82\xff".decode("latin-1"), "not UTF-8"),
    ],
)
def test_damaged_bus_files_are_named(starpu_data, tmp_path, name, damage, expected):
    """A damaged .bandwidth or .latency file is named in the error (not the platform XML beside it)."""
    bus = _attila_copy(starpu_data, tmp_path)
    target = bus / f"attila.{name}"
    damaged = damage(target.read_text())
    if damaged == target.read_text():
        pytest.skip("the calibration file no longer holds the value this test damages")
    target.write_bytes(damaged.encode("latin-1"))
    with pytest.raises(InputError, match=expected) as info:
        Platform.from_starpu(bus / "attila.platform.v4.xml")
    assert info.value.message.startswith(str(target))


@pytest.mark.shared
def test_negative_memsize_is_an_input_error(starpu_data, tmp_path):
    bus = _attila_copy(starpu_data, tmp_path)
    xml = bus / "attila.platform.v4.xml"
    text = xml.read_text()
    start = text.index('id="memsize" value="') + len('id="memsize" value="')
    xml.write_text(text[:start] + "-5" + text[text.index('"', start):])
    with pytest.raises(InputError, match=r"host\[CUDA0\] memsize \(bytes\): '-5' is out of range \(must be > 0\)"):
        Platform.from_starpu(xml)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["config", "bandwidth", "latency"])
def test_bus_file_that_is_a_symlink_loop_is_refused(starpu_data, tmp_path, name):
    """A symlink loop at bus/<machine>.config (or .bandwidth, .latency) is one line naming it; it read as an
    absent file, silently dropping the CPU count or the bus calibration (issue 10)."""
    bus = _attila_copy(starpu_data, tmp_path)
    target = bus / f"attila.{name}"
    target.unlink()
    target.symlink_to(bus / "loop")
    (bus / "loop").symlink_to(target)
    expected = rf"^{target}: cannot read bus (config|file) \(Too many levels of symbolic links\)"
    with pytest.raises(InputError, match=expected):
        Platform.from_starpu(bus / "attila.platform.v4.xml")


@pytest.mark.shared
@pytest.mark.parametrize(("attribute", "value", "message"), [
    ("latency", "1e308s", r"link latency '1e308s' is above 1 s, beyond any bus"),
    ("bandwidth", "0.5Bps", r"link bandwidth must be >= 1 B/s \(got '0.5Bps'\)"),
])
def test_implausible_link_in_the_platform_file_is_refused(starpu_data, tmp_path, attribute, value, message):
    """A link latency of 1e308 s or a bandwidth under 1 B/s in the platform XML is refused with the link's name
    (both were accepted: one copy would have taken 1e308 s, or hours per byte)."""
    bus = _attila_copy(starpu_data, tmp_path)
    xml = bus / "attila.platform.v4.xml"
    text = xml.read_text()
    start = text.index(f'{attribute}="', text.index('<link id="')) + len(f'{attribute}="')
    xml.write_text(text[:start] + value + text[text.index('"', start):])
    with pytest.raises(InputError, match=rf"^{xml}: link\[.*\]: {message}"):
        Platform.from_starpu(xml)
