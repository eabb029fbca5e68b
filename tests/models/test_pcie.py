"""PCIe bytes on the wire and effective bandwidth (AHEAD eqs. 2-5) against hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.machines.loader import machine_from_dict
from nodecast.models import pcie

MIB = 1048576
GEN3_X16 = 16 * 8e9 * (128 / 130) / 8  # = 15.753846153846154e9 B/s


def gen3(**kw) -> pcie.PCIeParams:
    values = {"gen": 3, "lanes": 16, "mps_bytes": 256, "mrrs_bytes": 512, "rcb_bytes": 64,
              "mrd_header_bytes": 12, "mwr_header_bytes": 12, "cpld_header_bytes": 12}
    values.update(kw)
    return pcie.PCIeParams(**values)


def test_link_bandwidth_matches_table_ii():
    """Eq. 3 per lane gives the paper's Table II: 0.25, 0.5, ~1.0, ~2.0 GB/s for gens 1-4."""
    # gen1: 2.5e9 * 8/10 / 8 = 0.25e9; gen2: 5e9 * 0.8 / 8 = 0.5e9
    # gen3: 8e9 * 128/130 / 8 = 0.98462e9; gen4: 16e9 * 128/130 / 8 = 1.96923e9
    assert pcie.link_bandwidth_bps(1, 1) == pytest.approx(0.25e9)
    assert pcie.link_bandwidth_bps(2, 1) == pytest.approx(0.5e9)
    assert pcie.link_bandwidth_bps(3, 1) == pytest.approx(0.984615e9, rel=1e-6)
    assert pcie.link_bandwidth_bps(4, 1) == pytest.approx(1.969231e9, rel=1e-6)


def test_link_bandwidth_x16_generations():
    """Eq. 3 for x16 links: gen2 8 GB/s (Titan), gen3 15.75, gen5 63.0, gen6 FLIT 118 GB/s."""
    # gen2 x16: 16 * 5e9 * 0.8 / 8 = 8e9; gen5 x16: 16 * 32e9 * 128/130 / 8 = 63.015e9
    # gen6 x16 FLIT mode: 16 * 64e9 * 236/256 / 8 = 118e9
    assert pcie.link_bandwidth_bps(2, 16) == pytest.approx(8e9)
    assert pcie.link_bandwidth_bps(3, 16) == pytest.approx(GEN3_X16)
    assert pcie.link_bandwidth_bps(5, 16) == pytest.approx(63.0154e9, rel=1e-5)
    assert pcie.link_bandwidth_bps(6, 16) == pytest.approx(118e9)


def test_read_one_mib_gen3_tl_headers_only():
    """Eq. 4 for 1 MiB host->device over gen3 x16 with TL headers only, as the paper counts them."""
    # MPS 256 B, MRRS 512 B, RCB 64 B, 12-B headers, no framing:
    # n_hat = 12 + 512 + ceil(1048576/64)*12 + 1048576 = 12 + 512 + 16384*12 + 1048576 = 1245708
    # BW_eff = 1048576 * 15.753846e9 / 1245708 = 13.2608 GB/s
    p = gen3()
    assert pcie.read_bytes_on_wire(MIB, p) == 1245708
    assert pcie.effective_bandwidth_bps(MIB, p, "read") == pytest.approx(13.26081e9, rel=1e-6)


def test_read_one_mib_gen3_with_framing():
    """Eq. 4 with 8 B of DL/PL framing per TLP (nodecast's default)."""
    # n_hat = (12+8) + 512 + 16384*(12+8) + 1048576 = 20 + 512 + 327680 + 1048576 = 1376788
    # BW_eff = 1048576 * 15.753846e9 / 1376788 = 11.99829 GB/s
    p = gen3(framing_bytes=8)
    assert pcie.read_bytes_on_wire(MIB, p) == 1376788
    assert pcie.effective_bandwidth_bps(MIB, p, "read") == pytest.approx(11.99829e9, rel=1e-6)


def test_write_one_mib_gen3():
    """Eq. 5 for 1 MiB device->host over gen3 x16, MPS 256 B, with and without framing."""
    # no framing: n_hat = ceil(1048576/256)*12 + 1048576 = 4096*12 + 1048576 = 1097728
    #   BW_eff = 1048576 * 15.753846e9 / 1097728 = 15.04845 GB/s
    # framing:    n_hat = 4096*20 + 1048576 = 1130496 -> 14.61226 GB/s
    assert pcie.write_bytes_on_wire(MIB, gen3()) == 1097728
    assert pcie.effective_bandwidth_bps(MIB, gen3(), "write") == pytest.approx(15.04845e9, rel=1e-6)
    assert pcie.write_bytes_on_wire(MIB, gen3(framing_bytes=8)) == 1130496
    assert pcie.effective_bandwidth_bps(MIB, gen3(framing_bytes=8), "write") == pytest.approx(14.61226e9, rel=1e-6)


def test_titan_link_from_machine_file():
    """Titan's gen2 x16 link (MPS 128, RCB 64) moves 256 MiB host->device at 6.095 GB/s with framing."""
    # n_hat = 20 + 512 + (268435456/64)*20 + 268435456 = 20 + 512 + 83886080 + 268435456 = 352322068
    # BW_eff = 268435456 * 8e9 / 352322068 = 6.09523 GB/s  (AHEAD's Titan trace measures 6.00 GB/s)
    from nodecast.machines import load_machine

    p = pcie.PCIeParams.from_link(load_machine("titan").host_link(0))
    assert (p.gen, p.lanes, p.mps_bytes, p.rcb_bytes, p.framing_bytes) == (2, 16, 128, 64, 8)
    assert pcie.read_bytes_on_wire(268435456, p) == 352322068
    assert pcie.effective_bandwidth_bps(268435456, p, "read") == pytest.approx(6.09523e9, rel=1e-5)


def test_first_request_min_vs_paper():
    """Below MRRS the first-request term is n (AHEAD's code), or MRRS with eq. 4 verbatim."""
    # n = 100 B: min:  12 + 100 + ceil(100/64)*12 + 100 = 12 + 100 + 24 + 100 = 236
    #            mrrs: 12 + 512 + 24 + 100 = 648
    assert pcie.read_bytes_on_wire(100, gen3()) == 236
    assert pcie.read_bytes_on_wire(100, gen3(first_request="mrrs")) == 648
    # at n >= MRRS they agree
    assert pcie.read_bytes_on_wire(4096, gen3()) == pcie.read_bytes_on_wire(4096, gen3(first_request="mrrs"))


def test_rcb_capped_at_mps():
    """Completions carry min(RCB, MPS) bytes."""
    # RCB 256 > MPS 128: 1024 B read = 12 + 512 + ceil(1024/128)*12 + 1024 = 12 + 512 + 96 + 1024 = 1644
    p = gen3(mps_bytes=128, rcb_bytes=256)
    assert p.completion_bytes == 128
    assert pcie.read_bytes_on_wire(1024, p) == 1644


def test_gen6_flit_mode_has_no_per_tlp_framing():
    """Gen 6 FLIT mode carries sequence and CRC per flit, so per-TLP framing is 0 even when asked for."""
    link = machine_from_dict(_machine(gen=6), "test.toml").host_link(0)
    p = pcie.PCIeParams.from_link(link, framing=True)
    assert p.framing_bytes == 0
    assert p.link_bandwidth_bps == pytest.approx(118e9)


def test_from_link_uses_loader_defaults_and_header():
    """A link without TLP values gets MPS 256, MRRS 512, RCB 64 and a 12-B header."""
    link = machine_from_dict(_machine(gen=4, tlp={}), "test.toml").host_link(0)
    p = pcie.PCIeParams.from_link(link, framing=False)
    assert (p.mps_bytes, p.mrrs_bytes, p.rcb_bytes, p.mrd_header_bytes, p.framing_bytes) == (256, 512, 64, 12, 0)


def test_zero_byte_copies_are_finite():
    """A 0-byte read still sends its request header; a 0-byte write sends nothing."""
    p = gen3(framing_bytes=8)
    assert pcie.read_bytes_on_wire(0, p) == 20
    assert pcie.write_bytes_on_wire(0, p) == 0
    assert pcie.wire_time_s(0, p, "read") == pytest.approx(20 / GEN3_X16)


def test_bad_direction_and_parameters_raise():
    """Unknown directions, generations and first-request modes are refused."""
    with pytest.raises(ValueError, match="direction"):
        pcie.bytes_on_wire(1, gen3(), "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="generation"):
        gen3(gen=7)
    with pytest.raises(ValueError, match="first_request"):
        gen3(first_request="max")


params = st.builds(
    pcie.PCIeParams,
    gen=st.integers(1, 6),
    lanes=st.sampled_from([1, 2, 4, 8, 16, 32]),
    mps_bytes=st.sampled_from([128, 256, 512, 1024, 4096]),
    mrrs_bytes=st.sampled_from([128, 256, 512, 1024, 4096]),
    rcb_bytes=st.sampled_from([64, 128]),
    mrd_header_bytes=st.sampled_from([12, 16]),
    mwr_header_bytes=st.sampled_from([12, 16]),
    cpld_header_bytes=st.just(12),
    framing_bytes=st.sampled_from([0, 8]),
    first_request=st.sampled_from(["min", "mrrs"]),
)


@given(params, st.integers(1, 2**40), st.sampled_from(["read", "write"]))
def test_effective_bandwidth_never_exceeds_link(p, n, direction):
    """BW_eff <= LinkBW for every size: protocol bytes only add to n."""
    assert pcie.effective_bandwidth_bps(n, p, direction) <= p.link_bandwidth_bps * (1 + 1e-12)
    assert pcie.bytes_on_wire(n, p, direction) >= n


@given(params, st.integers(0, 2**40), st.sampled_from(["read", "write"]))
def test_bytes_on_wire_strictly_grow(p, n, direction):
    """One more payload byte is never free: n_hat(n + 1) > n_hat(n)."""
    assert pcie.bytes_on_wire(n + 1, p, direction) > pcie.bytes_on_wire(n, p, direction)


def test_vectorized_over_arrays():
    """The equations take whole arrays of sizes at once."""
    n = np.array([1, 64, 65, MIB])
    # writes, MPS 256, 12-B header: [12+1, 12+64, 12+65, 4096*12+1048576]
    assert pcie.write_bytes_on_wire(n, gen3()).tolist() == [13, 76, 77, 1097728]


def _machine(gen: int, tlp: dict | None = None) -> dict:
    link = {"id": "pcie-gpu0", "kind": "pcie", "endpoints": ["cpu0", "gpu0"], "gen": gen, "lanes": 16}
    link.update({"mps_bytes": 256, "mrrs_bytes": 512, "rcb_bytes": 64, "header_bytes": 12} if tlp is None else tlp)
    return {
        "schema_version": 1, "name": "test", "description": "test machine",
        "cpu": {"model": "cpu", "sockets": 1, "cores_per_socket": 8, "clock_hz": 2e9, "memory_bytes": 64e9,
                "memory_bandwidth_bps": 100e9},
        "gpu": {"model": "gpu", "count": 1, "sms": 10, "clock_hz": 1e9, "memory_bytes": 16e9,
                "levels": {"dram": {"bandwidth_bps": 1e12}}},
        "links": [link],
    }
