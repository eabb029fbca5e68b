"""Raw link rates per generation, fewest-link routes and bottleneck links."""

from __future__ import annotations

import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.machines.schema import Link
from nodecast.machines.topology import bottleneck, raw_rate_bps


def pcie(gen: int, lanes: int = 16) -> Link:
    return Link(id=f"g{gen}x{lanes}", kind="pcie", endpoints=("cpu0", "gpu0"), gen=gen, lanes=lanes)


def nvlink(gen: int, links: int) -> Link:
    return Link(id=f"nv{gen}x{links}", kind="nvlink", endpoints=("gpu0", "gpu1"), gen=gen, links=links)


@pytest.mark.parametrize(("gen", "expected"), [
    (1, 4.0e9),          # 2.5 GT/s x 16 x 8/10 / 8
    (2, 8.0e9),          # DATASHEETS.md D.2: 8 GB/s per direction
    (3, 15.753846e9),    # DATASHEETS.md D.2: 15.75 GB/s per direction
    (4, 31.507692e9),    # DATASHEETS.md D.2: 32 GB/s (rounded) per direction
    (5, 63.015385e9),    # DATASHEETS.md D.2: 64 GB/s (rounded) per direction
])
def test_pcie_x16_raw_rates(gen, expected):
    """PCIe x16 raw per-direction rates follow lanes x GT/s x encoding / 8 (AHEAD eq. 3)."""
    assert raw_rate_bps(pcie(gen)) == pytest.approx(expected, rel=1e-6)


def test_pcie_rate_scales_with_lanes():
    """A x8 link has half the rate of a x16 link of the same generation."""
    assert raw_rate_bps(pcie(3, 8)) == pytest.approx(raw_rate_bps(pcie(3, 16)) / 2)


def test_pcie_gen6_flit_efficiency():
    """PCIe gen 6 uses FLIT-mode efficiency 236/256 at 64 GT/s."""
    assert raw_rate_bps(pcie(6)) == pytest.approx(16 * 64e9 * 236 / 256 / 8)


@pytest.mark.parametrize(("gen", "links", "expected"), [
    (1, 4, 80e9),        # P100: 4 links x 20 GB/s
    (2, 6, 150e9),       # V100: 6 bricks x 25 GB/s
    (3, 12, 300e9),      # A100: 12 links
    (4, 18, 450e9),      # H100: 18 links
    (5, 18, 900e9),      # B200: 18 links
])
def test_nvlink_per_gpu_rates(gen, links, expected):
    """NVLink per-GPU per-direction rates match DATASHEETS.md D.2 for every generation."""
    assert raw_rate_bps(nvlink(gen, links)) == pytest.approx(expected)


def test_bandwidth_overrides_generation():
    """An explicit bandwidth_bps overrides the rate derived from the generation."""
    link = Link(id="x", kind="pcie", endpoints=("cpu0", "gpu0"), gen=3, lanes=16, bandwidth_bps=12e9)
    assert raw_rate_bps(link) == 12e9


def test_c2c_without_bandwidth_is_an_error():
    """An NVLink-C2C link has no generation table, so it needs bandwidth_bps."""
    link = Link(id="c2c", kind="nvlink-c2c", endpoints=("cpu0", "gpu0"))
    with pytest.raises(InputError, match="needs bandwidth_bps"):
        raw_rate_bps(link)


def test_bottleneck_is_slowest_link():
    """The bottleneck of a route is its lowest-rate link."""
    slow, fast = pcie(2), pcie(4)
    assert bottleneck((fast, slow, fast)) is slow


def test_bottleneck_ties_take_first():
    """On equal rates the first link of the route is the bottleneck."""
    a, b = pcie(3), Link(id="other", kind="pcie", endpoints=("cpu0", "gpu0"), gen=3, lanes=16)
    assert bottleneck((a, b)) is a


def test_bottleneck_of_empty_route():
    """An empty route has no bottleneck."""
    with pytest.raises(InputError):
        bottleneck(())


def test_route_to_self_is_empty():
    """The route from an endpoint to itself has no links."""
    assert load_machine("titan").route("gpu0", "gpu0") == ()


def test_route_crosses_socket_bus():
    """On Summit, gpu0 -> gpu3 goes through both CPUs and the X-Bus."""
    route = load_machine("summit").route("gpu0", "gpu3")
    assert [link.id for link in route] == ["nvlink-cpu0-gpu0", "xbus", "nvlink-cpu1-gpu3"]
    assert bottleneck(route).id == "xbus"


def test_route_through_pcie_switch():
    """On the 4029GP-TVRT the host route goes through the GPU's PCIe switch."""
    m = load_machine("commscope-4029gp-tvrt")
    assert [link.id for link in m.host_route(5)] == ["pcie-cpu1-sw2", "pcie-sw2-gpu5"]


def test_peer_route_prefers_nvswitch():
    """On DGX A100 a peer route with equal hop count through NVSwitch or PCIe takes NVSwitch."""
    m = load_machine("dgx-a100")
    assert [link.id for link in m.route("gpu0", "gpu1")] == ["nvlink-gpu0", "nvlink-gpu1"]


def test_remote_host_route_uses_socket_bus():
    """A GPU's route to the other socket crosses the inter-socket bus, not the GPUs."""
    m = load_machine("h100-sxm5-server")
    assert [link.id for link in m.route("cpu0", "gpu7")] == ["upi", "pcie-gpu7"]


def test_no_route_is_an_input_error():
    """route() between endpoints that are not connected raises InputError naming both."""
    m = load_machine("titan")
    with pytest.raises(InputError, match="no route from gpu0 to cpu5"):
        m.route("gpu0", "cpu5")


def xgmi(gen: int, links: int = 1) -> Link:
    return Link(id=f"xgmi{gen}x{links}", kind="xgmi", endpoints=("gpu0", "gpu1"), gen=gen, links=links)


@pytest.mark.parametrize(("gen", "links", "expected"), [
    (3, 1, 50e9),        # MI250X: 25 GT/s x 16 lanes x 2 B per transfer (ROCm MI250 microarchitecture page)
    (4, 1, 64e9),        # MI300X: 32 GT/s x 16 lanes, "up to 64 GB/s for each point-to-point link" (ROCm blog)
    (4, 2, 128e9),       # two x16 links between the same two GPUs
])
def test_xgmi_per_link_rates(gen, links, expected):
    """AMD Infinity Fabric (xGMI) GPU links run at the generation's per-link rate times the links, per direction."""
    assert raw_rate_bps(xgmi(gen, links)) == pytest.approx(expected)


def test_mi300x_platform_is_a_full_xgmi_mesh():
    """Every MI300X of the platform reaches every other over one direct xGMI link of 64 GB/s per direction."""
    m = load_machine("mi300x-platform")
    for g in range(1, 8):
        route = m.route("gpu0", f"gpu{g}")
        assert [(link.kind, link.gen, link.links) for link in route] == [("xgmi", 4, 1)]
        assert raw_rate_bps(route[0]) == 64e9
    for g in range(8):
        assert sum(1 for link in m.links if link.kind == "xgmi" and f"gpu{g}" in link.endpoints) == 7
