"""The calibration plan: stable names, placement on GPUs / pairs / NUMA nodes, sizes, waivers, bad input."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from nodecast.calibrate import plan as P
from nodecast.errors import InputError


def _fakes():
    """tests/calibrate/fakes.py (loaded once, by path)."""
    name = "nodecast_calibrate_test_fakes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fakes.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


fakes = _fakes()


def cases(plan: P.Plan, key: str) -> list[P.Case]:
    """Cases of the family ``key``."""
    return [c for c in plan.cases if c.family.key == key]


def test_comm_scope_names():
    """Host cases are named <prefix>_flush/<numa>/<gpu>/<log2 n>, pairs /<src>/<dst>/<log2 n>, peaks /<gpu>."""
    plan = P.build_plan(fakes.topology(2), P.Options())
    pinned = cases(plan, "cudaMemcpyAsync_PinnedToGPU")[0]
    assert pinned.name(1 << 20) == "Comm_cudaMemcpyAsync_PinnedToGPU_flush/0/0/20"
    peer = cases(plan, "cudaMemcpyAsync_GPUToGPUPeer")[0]
    assert peer.name(256) == "Comm_cudaMemcpyAsync_GPUToGPUPeer/0/1/8"
    dtod = next(c for c in cases(plan, "cudaMemcpyAsync_GPUToGPU") if c.family.scope == "gpu")
    assert dtod.name(1) == "Comm_cudaMemcpyAsync_GPUToGPU/0/0/0"
    peak = cases(plan, "GPU_Peak_FMA_fp32")[0]
    assert peak.name(0) == "Nodecast_GPU_Peak_FMA_fp32/0" and peak.sizes_bytes == (0,)


def test_no_flush_drops_the_suffix():
    """Without flushing, host cases carry Comm|Scope's hot-cache names."""
    plan = P.build_plan(fakes.topology(1), P.Options(flush=False))
    assert cases(plan, "cudaMemcpyAsync_PinnedToGPU")[0].name(1) == "Comm_cudaMemcpyAsync_PinnedToGPU/0/0/0"


def test_default_sweep_is_1_byte_to_1_gib():
    """Explicit copies sweep 31 powers of two; unified memory starts at a page, zero-copy at one 4-byte word."""
    plan = P.build_plan(fakes.topology(1), P.Options())
    assert cases(plan, "cudaMemcpyAsync_HostToGPU")[0].sizes_bytes == tuple(1 << k for k in range(31))
    assert cases(plan, "UM_Prefetch_HostToGPU")[0].sizes_bytes[0] == 4096
    assert cases(plan, "ZeroCopy_HostToGPU")[0].sizes_bytes[0] == 4


def test_one_gpu_has_no_pair_cases():
    """A single GPU: no GPU-GPU case, and a note saying so."""
    plan = P.build_plan(fakes.topology(1), P.Options())
    assert not [c for c in plan.cases if c.family.scope in ("pair", "duplex-pair")]
    assert any("no GPU-to-GPU" in n for n in plan.notes)


def test_pairs_with_and_without_peer_access():
    """Two peer-capable GPUs get both pair directions with and without peer; without peer access the Peer cases are waived."""
    plan = P.build_plan(fakes.topology(2), P.Options())
    assert {(c.gpu, c.gpu2) for c in cases(plan, "cudaMemcpyAsync_GPUToGPUPeer")} == {(0, 1), (1, 0)}
    assert {(c.gpu, c.gpu2) for c in cases(plan, "cudaMemcpyAsync_Duplex_GPUGPUPeer")} == {(0, 1)}
    no_peer = P.build_plan(fakes.topology(2, peer=False), P.Options())
    assert not cases(no_peer, "cudaMemcpyAsync_GPUToGPUPeer")
    assert any("cannot access GPU 1 as a peer" in w.reason for w in no_peer.waived)
    assert {(c.gpu, c.gpu2) for c in cases(no_peer, "cudaMemcpyAsync_GPUToGPU") if c.gpu2 is not None} == {(0, 1), (1, 0)}


def test_numa_nodes_local_first():
    """With two NUMA nodes every host family runs on both, the GPU's own node first; --numa local keeps only it."""
    topo = fakes.topology(2, numa_nodes=2)  # GPU 1 sits on node 1
    plan = P.build_plan(topo, P.Options())
    assert [c.numa for c in cases(plan, "cudaMemcpyAsync_PinnedToGPU") if c.gpu == 1] == [1, 0]
    local = P.build_plan(topo, P.Options(numa="local"))
    assert [c.numa for c in cases(local, "cudaMemcpyAsync_PinnedToGPU")] == [0, 1]
    assert any("only each GPU's own node" in n for n in local.notes)


def test_unknown_gpu_index_is_one_clear_error():
    """--gpus 3 on a two-GPU node names the index and the GPUs there are."""
    with pytest.raises(InputError, match=r"--gpus: unknown GPU index 3 \(this node has 2 GPUs: 0, 1\)"):
        P.build_plan(fakes.topology(2), P.Options(gpus=(0, 3)))


def test_gpu_listed_twice():
    """A GPU given twice is an error."""
    with pytest.raises(InputError, match="listed twice"):
        P.build_plan(fakes.topology(2), P.Options(gpus=(1, 1)))


def test_given_max_size_that_does_not_fit_is_an_error():
    """A --max-size above a GPU's free memory names the family, the GPU and its free memory."""
    topo = fakes.topology(1, free=8 << 30)
    with pytest.raises(InputError, match=r"--max-size: size 8 GiB does not fit .* on GPU 0.*8 GiB free"):
        P.build_plan(topo, P.Options(max_bytes=8 << 30, max_bytes_given=True))


def test_default_max_size_is_clipped_with_a_note():
    """The default 1 GiB sweep on a GPU with 1.5 GiB free drops what does not fit and says so."""
    topo = fakes.topology(1, free=1536 << 20)
    plan = P.build_plan(topo, P.Options())
    assert cases(plan, "cudaMemcpyAsync_HostToGPU")[0].sizes_bytes[-1] == 1 << 30
    dtod = next(c for c in cases(plan, "cudaMemcpyAsync_GPUToGPU") if c.family.scope == "gpu")
    assert dtod.sizes_bytes[-1] == 512 << 20  # two buffers of n must fit in 90 % of the free memory
    assert any("cudaMemcpyAsync_GPUToGPU on GPU 0: sizes from 1 GiB left out" in n for n in plan.notes)


def test_unified_memory_never_asks_for_more_than_is_free():
    """Managed sizes stop below the GPU's free memory."""
    plan = P.build_plan(fakes.topology(1, free=300 << 20), P.Options())
    assert cases(plan, "UM_Demand_HostToGPU")[0].sizes_bytes[-1] == 256 << 20


@pytest.mark.parametrize(("kw", "family", "reason"), [
    ({"concurrent_managed": False}, "UM_Prefetch_HostToGPU", "concurrent managed access"),
    ({"managed": False}, "UM_Demand_HostToGPU", "managed memory"),
    ({"can_map_host": False}, "ZeroCopy_GPUToHost", "map host memory"),
    ({"cc": (5, 2)}, "GPU_Peak_FMA_fp16", "5.3"),
    ({"cc": (7, 0)}, "GPU_Peak_AddMul_bf16", "8.0"),
])
def test_waivers(kw, family, reason):
    """Cases the GPU cannot run are waived with the reason, not run."""
    plan = P.build_plan(fakes.topology(1, **kw), P.Options())
    assert not cases(plan, family)
    assert any(w.family.endswith(family) and reason in w.reason for w in plan.waived)


def test_quick_mode():
    """--quick: the first GPU measures everything at 11 sizes up to 64 MiB; one pair in both directions."""
    plan = P.build_plan(fakes.topology(4, numa_nodes=2), P.Options(quick=True))
    assert {c.gpu for c in plan.cases if c.family.scope in ("host", "gpu")} == {0}
    assert {(c.gpu, c.gpu2) for c in cases(plan, "cudaMemcpyAsync_GPUToGPUPeer")} == {(0, 1), (1, 0)}
    assert cases(plan, "cudaMemcpyAsync_HostToGPU")[0].sizes_bytes == P.QUICK_SIZES
    assert {c.numa for c in plan.cases if c.family.scope == "host"} == {0}
    assert plan.budget == P.QUICK_BUDGET


def test_family_filter():
    """--only UM_ keeps the unified-memory families; an unknown prefix lists the families."""
    plan = P.build_plan(fakes.topology(1), P.Options(families=("UM_",)))
    assert {c.family.key for c in plan.cases} == {"UM_Demand_HostToGPU", "UM_Demand_GPUToHost", "UM_Demand_GPUToHostMt",
                                                   "UM_Prefetch_HostToGPU", "UM_Prefetch_GPUToHost"}
    with pytest.raises(InputError, match="--only: no benchmark family starts with Nope"):
        P.build_plan(fakes.topology(1), P.Options(families=("Nope",)))


@pytest.mark.parametrize(("text", "n"), [("4096", 4096), ("64KiB", 65536), ("1MiB", 1 << 20), ("1GiB", 1 << 30),
                                         ("2^20", 1 << 20), ("8k", 8192)])
def test_parse_size(text, n):
    """Sizes in bytes, binary units or powers of two."""
    assert P.parse_size(text, key="--max-size") == n


@pytest.mark.parametrize("text", ["lots", "1.5GiB", "0", "-4", "12 parsecs", "2^51", "2^99999999", "2^-3",
                                  "99999999999GiB", "9" * 5000])
def test_parse_size_errors(text):
    """Anything else is one clear InputError naming the option."""
    with pytest.raises(InputError, match="--max-size"):
        P.parse_size(text, key="--max-size")


@pytest.mark.parametrize(("opts", "fragment"), [
    (P.Options(gpus=(-1,)), "--gpus: GPU index -1 is negative"),
    (P.Options(gpus=(0, 0)), "--gpus: a GPU is listed twice"),
    (P.Options(families=("nosuch",)), "--only: no benchmark family starts with nosuch"),
    (P.Options(min_bytes=P.GIB, max_bytes=P.MIB), "--min-size: smallest size 1 GiB is above the largest 1 MiB"),
])
def test_check_options_needs_no_topology(opts, fragment):
    """Option mistakes are found without a node (so before any GPU access)."""
    with pytest.raises(InputError) as info:
        P.check_options(opts)
    assert fragment in info.value.message


def test_sweep():
    """Powers of two from the first >= min to the last <= max."""
    assert P.sweep(3, 40) == (4, 8, 16, 32)
    assert P.sweep(1, 1) == (1,)


def test_min_above_max():
    """A smallest size above the largest is an error."""
    with pytest.raises(InputError, match="above the largest"):
        P.build_plan(fakes.topology(1), P.Options(min_bytes=1 << 20, max_bytes=1 << 10))


def test_every_family_is_listed():
    """--list describes every family with its scope and the class it feeds."""
    rows = P.describe_families()
    assert len(rows) == len(P.FAMILIES)
    assert rows[2][:3] == ("Comm_cudaMemcpyAsync_PinnedToGPU", "host", "htod_pinned")
