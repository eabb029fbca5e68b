"""``nodecast.models.collective_fabric``: a group's bus bandwidth from the Machine's links, with NCCL's rates."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.collective_fabric import (HW_NVLINK, HW_PCI, NVSWITCH, PCIE, DIRECT, fabric, ring_channels,
                                               HOPPER, AMPERE)


def test_nvswitch_node_gives_each_gpu_its_nvlink_bandwidth():
    """DGX A100: 12 NVLinks x 20 GB/s (topo.h SM80) = 240 GB/s for every group; NVLink latencies; no NVLS."""
    fab = fabric(load_machine("dgx-a100"))
    assert fab.kind == NVSWITCH and fab.gpus == 8
    np.testing.assert_allclose(fab.ring_bps[2:], 240e9)
    assert (fab.hw[2:] == HW_NVLINK).all() and fab.ll128[2:].all() and not fab.nvls.any()


def test_ring_search_settles_like_nccl():
    """240 GB/s on Ampere: 6 channels x 40, duplicated to 12 x 20; 370.8 on Hopper: 6 x 60, duplicated to 12 x 30."""
    assert ring_channels(240e9, AMPERE) == (12, 240e9)
    assert ring_channels(370.8e9, HOPPER) == (12, 360e9)


def test_pcie_node_rings_through_the_host():
    """L40S x8, each GPU on its own gen4 x16 link to a socket: NCCL's 24 GB/s per link, less the Intel P2P overhead
    (x 5/6): 20 GB/s; PCI latencies, no LL128."""
    fab = fabric(load_machine("l40s-pcie-8gpu"))
    assert fab.kind == PCIE
    assert fab.ring_bps[8] == pytest.approx(20e9)
    assert (fab.hw[2:] == HW_PCI).all() and not fab.ll128.any()


def test_direct_links_sum_per_gpu():
    """V100 hybrid cube mesh (Comm|Scope 4029GP-TVRT): a pair joined by 2 NVLink 2 links rings at 2 x 20 GB/s."""
    fab = fabric(load_machine("commscope-4029gp-tvrt"))
    assert fab.kind == DIRECT
    assert fab.pair_bps == pytest.approx(20e9)  # gpu0-gpu1: one link
    assert fab.hw[8] == HW_NVLINK


def test_group_larger_than_the_node_is_one_line():
    """A group of 16 on an 8-GPU node: InputError 'group of 16 GPUs on a node of 8'."""
    with pytest.raises(InputError, match="group of 16 GPUs on a node of 8") as err:
        fabric(load_machine("dgx-a100")).check_group(np.array([2, 16]))
    assert "\n" not in str(err.value)
