"""``nodecast.models.collective_tuning`` and ``collective_busbw``: NCCL's cost model against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.models.collective_busbw import algbw, bus_factor, busbw
from nodecast.models.collective_fabric import fabric
from nodecast.models.collective_tuning import (ALGORITHMS, LL, LL128, NONE, NVLS, P2P, PROTOCOLS, RING, SIMPLE,
                                               Calibration, predict)
from nodecast.traces.op_classes import OpClass

GiB = 2**30


def _one(machine: str, op: OpClass, size: float, gpus: int, **kwargs):
    c = predict(np.array([op]), np.array([size]), np.array([gpus]), fabric(load_machine(machine)), **kwargs)
    return c.time_s[0], ALGORITHMS[c.algorithm[0]], PROTOCOLS[c.protocol[0]]


def test_ring_all_reduce_on_an_nvswitch_node_is_latency_plus_2_n_minus_1_over_n_size_over_bw():
    """8 A100s on NVSwitch (no NVLink SHARP), 1 GiB: ring Simple, time = baseLat + 2(n-1) hwLat + 2(n-1)/n size / B,
    B = 12 links x 20 GB/s (NCCL's SM80 NVLink rate) = 240 GB/s: 8.4 + 14 x 3.4 µs + 1.75 GiB / 240 GB/s."""
    t, algo, proto = _one("dgx-a100", OpClass.ALL_REDUCE, GiB, 8)
    assert (algo, proto) == ("ring", "simple")
    expected = (8.4 + 14 * 3.4) * 1e-6 + 2 * 7 / 8 * GiB / 240e9
    assert t == pytest.approx(expected, rel=1e-12)


def test_all_gather_ring_has_n_minus_1_steps():
    """all_gather on 4 A100s, 256 MiB: ring Simple, 8.4 + 3 x 3.4 µs + (3/4) size / 240 GB/s."""
    t, algo, proto = _one("dgx-a100", OpClass.ALL_GATHER, 256 * 2**20, 4)
    assert (algo, proto) == ("ring", "simple")
    assert t == pytest.approx((8.4 + 3 * 3.4) * 1e-6 + 0.75 * 256 * 2**20 / 240e9, rel=1e-12)


def test_protocol_follows_the_size_ll_small_simple_large():
    """NCCL's choice moves from LL (latency) to Simple (bandwidth) as the message grows, LL128 between on NVLink."""
    sizes = 2.0 ** np.arange(3, 31)
    c = predict(np.full(sizes.size, OpClass.ALL_REDUCE), sizes, np.full(sizes.size, 8),
                fabric(load_machine("dgx-a100")))
    assert c.protocol[0] == LL and c.protocol[-1] == SIMPLE
    assert LL128 in set(c.protocol.tolist())
    first = {p: int(np.argmax(c.protocol == p)) for p in (LL, LL128, SIMPLE)}
    assert first[LL] < first[LL128] < first[SIMPLE]
    assert np.all(np.diff(c.time_s) >= 0)  # more bytes never take less time


def test_pcie_node_never_uses_ll128_and_uses_pci_latencies():
    """On a PCIe node NCCL disables LL128 (NVLink paths only); ring LL latency is 6.6 + nsteps x 1.0 µs (PCI row)."""
    sizes = 2.0 ** np.arange(3, 31)
    fab = fabric(load_machine("l40s-pcie-8gpu"))
    c = predict(np.full(sizes.size, OpClass.ALL_REDUCE), sizes, np.full(sizes.size, 8), fab)
    assert LL128 not in set(c.protocol.tolist())
    assert c.algorithm[0] in (RING, 0) and c.protocol[0] == LL
    ring_ll = predict(np.array([OpClass.ALL_GATHER]), np.array([8.0]), np.array([8]), fab)
    assert ring_ll.latency_s[0] == pytest.approx((6.6 + 7 * 1.0) * 1e-6)


def test_nvls_only_where_the_switch_reduces_and_for_more_than_two_gpus():
    """NVLS for a large all_reduce on 8 H100s (NVLink SHARP switch), never on 2 (NCCL sets it up for > 2 GPUs) nor
    on the A100 node (no SHARP)."""
    assert _one("h100-sxm5-server", OpClass.ALL_REDUCE, GiB, 8)[1] == "nvls"
    assert _one("h100-sxm5-server", OpClass.ALL_REDUCE, GiB, 2)[1] == "ring"
    assert _one("dgx-a100", OpClass.ALL_REDUCE, GiB, 8)[1] == "ring"


def test_send_recv_and_all_to_all_are_point_to_point():
    """send_recv moves the whole size between one pair; all_to_all moves (n-1)/n of it; LL up to 16 KiB per peer."""
    t, algo, proto = _one("dgx-a100", OpClass.SEND_RECV, GiB, 2)
    assert (algo, proto) == ("p2p", "simple")
    assert t == pytest.approx((8.4 + 3.4) * 1e-6 + GiB / 240e9, rel=1e-12)
    t, _, _ = _one("dgx-a100", OpClass.ALL_TO_ALL, GiB, 8)
    assert t == pytest.approx((8.4 + 3.4) * 1e-6 + 7 / 8 * GiB / (7 * 240e9 / 7), rel=1e-12)
    assert _one("dgx-a100", OpClass.ALL_TO_ALL, 8 * 16384, 8)[2] == "ll"
    assert _one("dgx-a100", OpClass.ALL_TO_ALL, 8 * 16385, 8)[2] == "simple"


def test_rows_outside_the_model_are_nan_and_none():
    """A group of 1 or beyond the node, or an op that is no collective, gets NaN and no algorithm."""
    fab = fabric(load_machine("dgx-a100"))
    c = predict(np.array([OpClass.ALL_REDUCE, OpClass.ALL_REDUCE, OpClass.GEMM]), np.array([1e6, 1e6, 1e6]),
                np.array([1, 16, 8]), fab)
    assert np.isnan(c.time_s).all() and (c.algorithm == NONE).all()


def test_recorded_algorithm_and_protocol_are_followed_where_they_exist():
    """What a trace recorded NCCL ran narrows the choice; an algorithm the node lacks leaves NCCL's choice."""
    fab = fabric(load_machine("dgx-a100"))
    op, size, n = np.array([OpClass.ALL_REDUCE] * 2), np.array([GiB, GiB]), np.array([8, 8])
    c = predict(op, size, n, fab, algorithm=np.array([RING, NVLS]), protocol=np.array([LL, NONE]))
    assert (c.algorithm[0], c.protocol[0]) == (RING, LL)
    assert (c.algorithm[1], c.protocol[1]) == (RING, SIMPLE)  # no NVLS on the A100: NCCL's own choice
    assert c.time_s[0] > c.time_s[1]


def test_calibration_scales_bandwidth_and_latency():
    """A bus efficiency of 1/2 doubles the size term; a latency scale of 2 doubles the latency."""
    base = predict(np.array([OpClass.ALL_GATHER]), np.array([GiB]), np.array([8]), fabric(load_machine("dgx-a100")))
    half = predict(np.array([OpClass.ALL_GATHER]), np.array([GiB]), np.array([8]), fabric(load_machine("dgx-a100")),
                   calibration=Calibration(bus_efficiency=0.5, latency_scale=2.0))
    assert half.time_s[0] - 2 * half.latency_s[0] / 2 == pytest.approx(2 * (base.time_s[0] - base.latency_s[0]))
    assert half.latency_s[0] == pytest.approx(2 * base.latency_s[0])


def test_busbw_definitions_of_nccl_tests():
    """busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter, all_to_all), 1 (the others)."""
    ops = np.array([OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.REDUCE_SCATTER, OpClass.ALL_TO_ALL,
                    OpClass.BROADCAST, OpClass.REDUCE, OpClass.SEND_RECV, OpClass.GEMM])
    np.testing.assert_allclose(bus_factor(ops, 8), [1.75, 0.875, 0.875, 0.875, 1, 1, 1, np.nan])
    assert algbw(np.array([1e9]), np.array([0.5]))[0] == 2e9
    assert busbw(np.array([OpClass.ALL_REDUCE]), np.array([1e9]), np.array([0.5]), np.array([4]))[0] == 3e9
    assert np.isnan(algbw(np.array([1.0]), np.array([0.0]))[0])


def test_many_rows_at_once():
    """100,000 rows of every collective and group evaluate in one call, each equal to its own single-row answer."""
    rng = np.random.default_rng(0)
    ops = rng.choice([OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.SEND_RECV, OpClass.BROADCAST], 100_000)
    size = 2.0 ** rng.integers(3, 31, 100_000)
    n = rng.integers(2, 9, 100_000)
    fab = fabric(load_machine("h100-sxm5-server"))
    c = predict(ops, size, n, fab)
    assert np.isfinite(c.time_s).all()
    for i in (0, 17, 99_999):
        assert predict(ops[i:i + 1], size[i:i + 1], n[i:i + 1], fab).time_s[0] == c.time_s[i]
    assert P2P in set(c.algorithm.tolist())
