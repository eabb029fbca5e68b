"""Theoretical occupancy from the launch configuration and a target's per-SM limits (cuda_occupancy.h rules)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.machines.sheets import load_target
from nodecast.models.kernel_occupancy import LIMITERS, LaunchShape, occupancy, sub_partitions

KINETO = [("kineto_nsfw-image-detection_h100.json.gz", "h100-sxm5-80gb", 79),
          ("kineto_alexnet-benchmark_a100.json.gz", "a100-sxm4-40gb", 73),
          ("kineto_training-rank0_v100.json.gz", "v100-sxm2-16gb", 3175),
          ("kineto_training-rank0_a100-80gb.json.gz", "a100-sxm4-80gb", 1483)]


def shape(threads, blocks=1000, regs=np.nan, smem=np.nan) -> LaunchShape:
    """Launch shapes of one launch per value (NaN: not recorded)."""
    threads = np.atleast_1d(np.asarray(threads, dtype=float))
    n = len(threads)
    return LaunchShape(np.full(n, float(blocks)), threads, np.full(n, regs, dtype=float),
                       np.full(n, smem, dtype=float))


@pytest.mark.parametrize(("trace", "sheet", "compared"), KINETO, ids=[k[0] for k in KINETO])
def test_blocks_per_sm_agree_with_cupti(shared_traces, trace, sheet, compared):
    """CUPTI's occupancy calculator, as Kineto prints it ('est. achieved occupancy %' = min(grid blocks per SM,
    resident blocks per SM) x threads / max threads per SM), agrees with ours within rounding on every launch it
    computed (0 % marks the launches it could not: shared memory beyond the default 48 KB per block)."""
    doc = json.loads(gzip.decompress((shared_traces / trace).read_bytes()))
    ks = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
    args = [e["args"] for e in ks]
    cols = {f"{k}_{a}": np.array([x[k][i] for x in args]) for k in ("grid", "block") for i, a in enumerate("xyz")}
    cols["registers_per_thread"] = np.array([x["registers per thread"] for x in args])
    cols["static_smem_bytes"] = np.array([x["shared memory"] for x in args])
    cols["dynamic_smem_bytes"] = np.full(len(ks), -1)
    launch = LaunchShape.from_columns(cols, np.arange(len(ks)))
    limits = load_machine(sheet).gpu.limits
    occ = occupancy(launch, limits)
    grid_per_sm = np.array([float(x["blocks per SM"]) for x in args])
    cupti = np.array([x["est. achieved occupancy %"] for x in args], dtype=float)
    ours = np.minimum(grid_per_sm, occ.blocks_per_sm) * launch.threads / limits.max_threads_per_sm * 100
    computed = cupti > 0
    assert computed.sum() == compared
    assert np.abs(ours[computed] - cupti[computed]).max() <= 1.0  # CUPTI prints int(0.5 + 100 x occupancy)


def test_register_sub_partitions_round_down():
    """85 registers x 64 threads on sm_70: 11 blocks by the whole register file, 10 once each of the 4 sub-partitions
    holds whole warps (5 x 2,816 registers of its 16,384): cuda_occupancy.h's rule, and CUPTI's 31 %."""
    occ = occupancy(shape(64, regs=85, smem=2304), load_target("sm_70"))
    assert occ.blocks_per_sm.tolist() == [10.0] and LIMITERS[occ.limiter[0]] == "registers"
    assert sub_partitions(load_target("sm_70")) == 4 and sub_partitions(load_target("sm_60")) == 2
    assert sub_partitions(load_target("gfx942")) == 4  # simds_per_cu


def test_subseqmax_by_hand_kepler_and_maxwell():
    """The kernel zoo's subSeqMax (128 threads, 24 registers, 16,392 B static shared memory): shared memory allows
    2 blocks per SM on sm_35 (48 KB / 16,640 B allocated in 256-B units) and 5 on sm_52 (96 KB): 12.5 % and 31.25 %."""
    s = shape(128, blocks=32, regs=24, smem=16392)
    kepler, maxwell = occupancy(s, load_target("sm_35")), occupancy(s, load_target("sm_52"))
    assert kepler.blocks_per_sm.tolist() == [2.0] and LIMITERS[kepler.limiter[0]] == "shared memory"
    assert maxwell.blocks_per_sm.tolist() == [5.0]
    assert kepler.occupancy.tolist() == [0.125] and maxwell.occupancy.tolist() == [0.3125]


def test_unrecorded_values_and_blocks_too_big_are_said():
    """Without registers or shared memory the other limits decide, said in the notes; a block above the target's
    limits gets 1 block per SM and is flagged; registers above sm_30's 63 are capped."""
    limits = load_target("sm_30")
    occ = occupancy(shape([256, 2048]), limits, "gtx-680")
    assert occ.blocks_per_sm.tolist() == [8.0, 1.0] and occ.cannot_launch.tolist() == [False, True]
    text = " ".join(occ.notes)
    assert "without registers per thread" in text and "without shared memory" in text and "cannot fit" in text
    capped = occupancy(shape(256, regs=128), limits)
    assert "capped" in " ".join(capped.notes)
    # 63 registers x 32 = 2,016 -> 2,048 per warp; 16,384 / 2,048 = 8 warps per sub-partition, 32 per SM: 4 blocks
    assert capped.blocks_per_sm.tolist() == [4.0]
