"""Running a plan with a measurer and deriving a machine file's measured values from the results."""

from __future__ import annotations

import pytest

from nodecast.calibrate import derive_measured, reference_cases, run_plan
from nodecast.calibrate import plan as P


def test_every_point_is_measured_and_released(quick_plan, measurer):
    """Each point of the plan has timings, a Comm|Scope name, and its buffers were released."""
    results = run_plan(quick_plan, measurer)
    assert len(results) == quick_plan.points
    assert all(r.ok for r in results)
    assert measurer.prepared == measurer.released == quick_plan.points
    assert results[0].name == "Comm_cudaMemcpyAsync_HostToGPU_flush/0/0/0"


def test_progress_is_reported(quick_plan, measurer):
    """progress(name, done, total) is called before each point and once at the end with done == total."""
    calls = []
    run_plan(quick_plan, measurer, progress=lambda name, done, total: calls.append((name, done, total)))
    assert len(calls) == quick_plan.points + 1
    assert calls[0][1] == 0 and calls[-1] == ("", quick_plan.points, quick_plan.points)


def test_failed_family_is_recorded_and_the_run_goes_on(fakes, quick_plan):
    """A family whose setup fails has an error on each of its points; the others still measure."""
    m = fakes.FakeMeasurer(fail={"ZeroCopy_HostToGPU": "NVRTC is not available"})
    results = run_plan(quick_plan, m)
    zc = [r for r in results if r.case.family.key == "ZeroCopy_HostToGPU"]
    assert zc and all(r.error == "NVRTC is not available" and not r.ok for r in zc)
    assert all(r.ok for r in results if r.case.family.key != "ZeroCopy_HostToGPU")


def test_out_of_memory_skips_larger_sizes(fakes, quick_plan):
    """After an allocation fails at 4 MiB, the larger sizes of that case are skipped, not attempted."""
    m = fakes.FakeMeasurer(oom_from=4 << 20)
    results = run_plan(quick_plan, m)
    pinned = [r for r in results if r.case.family.key == "cudaMemcpyAsync_PinnedToGPU"]
    errors = {r.size_bytes: r.error for r in pinned if r.error}
    assert errors[4 << 20].startswith("out of memory")
    assert errors[16 << 20].startswith("skipped: a smaller size ran out of memory")
    assert all(r.ok for r in pinned if r.size_bytes < 4 << 20)


def test_derived_classes_recover_the_fake_costs(fakes, quick_plan, measurer):
    """Each class's 1-byte cost is the time of 1 B (one page for managed) and its bandwidth the fake's B."""
    values = derive_measured(quick_plan, run_plan(quick_plan, measurer))
    assert set(values.classes) == set(fakes.LATENCY_S)
    for klass, cv in values.classes.items():
        smallest = 4096 if klass.endswith("managed") else 1
        assert cv.smallest_bytes == smallest
        assert cv.one_byte_s == pytest.approx(fakes.fake_time_s(klass, smallest))
        assert cv.bandwidth_bps == pytest.approx(fakes.BANDWIDTH_BPS[klass], rel=1e-9)
    assert values.reference == "GPU 0, host memory on NUMA node 0"


def test_peer_class_prefers_peer_access(fakes, quick_plan, measurer):
    """The peer class comes from GPU 0 -> GPU 1 with peer access enabled (the non-peer case is 4x slower in the fake)."""
    values = derive_measured(quick_plan, run_plan(quick_plan, measurer))
    assert values.classes["peer"].source == "Comm_cudaMemcpyAsync_GPUToGPUPeer/0/1"
    assert values.classes["peer"].bandwidth_bps == pytest.approx(fakes.BANDWIDTH_BPS["peer"])


def test_peer_class_without_peer_access(fakes, measurer):
    """Without peer access the peer class comes from the staged copy."""
    plan = P.build_plan(fakes.topology(2, peer=False), P.Options(quick=True, budget=fakes.TINY))
    values = derive_measured(plan, run_plan(plan, measurer))
    assert values.classes["peer"].source == "Comm_cudaMemcpyAsync_GPUToGPU/0/1"


def test_gpu_maxima(fakes, quick_plan, measurer):
    """FMA and ADD/MUL peaks per precision and per-level bandwidths come out as the fake's rates."""
    values = derive_measured(quick_plan, run_plan(quick_plan, measurer))
    assert values.peak_flops["fp32"] == pytest.approx((fakes.FMA_FLOPS, fakes.ADDMUL_FLOPS))
    assert set(values.peak_flops) == {"fp64", "fp32", "fp16", "bf16"}
    assert values.level_bandwidth_bps == pytest.approx({lv: fakes.LEVEL_BPS for lv in ("dram", "l2", "l1", "shared")})


def test_precision_with_one_kernel_only_is_left_out(fakes, quick_plan):
    """A precision whose ADD/MUL kernel failed is not written (a machine file needs both) and a note says why."""
    m = fakes.FakeMeasurer(fail={"GPU_Peak_AddMul_fp16": "compile error"})
    values = derive_measured(quick_plan, run_plan(quick_plan, m))
    assert "fp16" not in values.peak_flops
    assert any("fp16: only fma measured" in n for n in values.notes)


def test_reference_is_the_first_gpu_and_its_numa_node(fakes):
    """Values describe the first measured GPU and its own NUMA node."""
    plan = P.build_plan(fakes.topology(2, numa_nodes=2), P.Options(gpus=(1, 0), budget=fakes.TINY))
    assert reference_cases(plan) == (1, 1)


def test_nothing_measured(fakes):
    """An empty plan derives nothing and says so."""
    values = derive_measured(P.Plan(()), [])
    assert not values.classes and values.notes == ["nothing was measured"]
