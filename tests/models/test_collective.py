"""``nodecast.models.collective``: the ``nccl`` and ``nccl-scaled`` models on a trace's collective kernels."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.models import registry
from nodecast.models.collective import COLLECTIVE, NcclModel, NcclScaledModel, collective_mask
from nodecast.models.collective_fabric import fabric
from nodecast.models.collective_tuning import predict
from nodecast.traces.kinds import OpKind
from nodecast.traces.op_classes import Algorithm, OpClass, Protocol
from nodecast.traces.trace import Trace, TraceMeta

MiB = 2**20


def _trace(ops, sizes, gpus, durations_ns, algorithm=None, protocol=None, kinds=None) -> Trace:
    n = len(ops)
    start = np.arange(n, dtype=np.int64) * 10_000_000
    cols = {"kind": np.array(kinds or [OpKind.KERNEL] * n, dtype=np.int8),
            "op_class": np.array(ops, dtype=np.int8), "bytes": np.array(sizes, dtype=np.int64),
            "gpus": np.array(gpus, dtype=np.int16), "start_ns": start,
            "end_ns": start + np.array(durations_ns, dtype=np.int64), "name_id": np.zeros(n, dtype=np.int32)}
    if algorithm is not None:
        cols["algorithm"] = np.array(algorithm, dtype=np.int8)
    if protocol is not None:
        cols["protocol"] = np.array(protocol, dtype=np.int8)
    return Trace.from_columns(cols, ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"], TraceMeta(source="test"))


def test_registered_as_the_collective_kind_with_the_scaled_model_as_default():
    """`nodecast models` lists nccl and nccl-scaled; the chain of collective ops is nccl-scaled."""
    assert {"nccl", "nccl-scaled"} <= set(registry.model_names(COLLECTIVE))
    assert registry.default_models(COLLECTIVE) == ["nccl-scaled"]
    chains = registry.model_chains(None)
    assert chains[COLLECTIVE] == ["nccl-scaled"]
    # A collective is a kernel: its chain must be tried before the kernel models (cost.ops applies chains in order).
    assert list(chains).index(COLLECTIVE) < list(chains).index("kernel")


def test_absolute_model_is_nccls_model_on_the_target():
    """nccl: each collective kernel's time is NCCL's model on B; other ops and unknown groups are NaN."""
    tr = _trace([OpClass.ALL_REDUCE, OpClass.ALL_GATHER, OpClass.GEMM, OpClass.ALL_REDUCE],
                [64 * MiB, MiB, 0, MiB], [8, 4, -1, -1], [1e6, 1e5, 1e5, 1e5])
    a100, h100 = load_machine("dgx-a100"), load_machine("h100-sxm5-server")
    r = NcclModel().project(tr, a100, h100)
    expected = predict(tr["op_class"][:2], tr["bytes"][:2], tr["gpus"][:2], fabric(h100)).time_s
    np.testing.assert_allclose(r.time_s[:2], expected)
    assert np.isnan(r.time_s[2:]).all()
    assert collective_mask(tr).tolist() == [True, True, False, True]
    assert any("NVLink SHARP" in n for n in r.notes)
    assert any("1 collective whose message size or group the trace does not record" in n for n in r.notes)


def test_collectives_the_model_cannot_time_keep_their_measured_time():
    """nccl-scaled never leaves a collective NaN (the kernel models would take it for a compute kernel): one whose
    group is not recorded keeps its measured time; a send/receive without a group is a pair and is modelled."""
    tr = _trace([OpClass.ALL_REDUCE, OpClass.SEND_RECV], [MiB, 64 * MiB], [-1, -1], [70_000, 900_000])
    a100, h100 = load_machine("dgx-a100"), load_machine("h100-sxm5-server")
    r = NcclScaledModel().project(tr, a100, h100)
    assert r.time_s[0] == pytest.approx(7e-5)
    assert r.time_s[1] < 9e-4  # H100's NVLink is faster than the A100's
    pair = predict(np.array([OpClass.SEND_RECV]), np.array([64 * MiB]), np.array([2]), fabric(h100)).time_s[0]
    assert NcclModel().project(tr, a100, h100).time_s[1] == pytest.approx(pair)


def test_scaled_model_gives_the_measured_time_back_on_the_same_node():
    """nccl-scaled --from X --to X: the ratio is 1, every collective keeps its measured time."""
    tr = _trace([OpClass.ALL_REDUCE, OpClass.REDUCE_SCATTER], [64 * MiB, MiB], [8, 8], [2_000_000, 40_000])
    h100 = load_machine("h100-sxm5-server")
    r = NcclScaledModel().project(tr, h100, h100)
    np.testing.assert_allclose(r.time_s, [2e-3, 4e-5])


def test_scaled_model_is_measured_times_the_ratio_target_over_source():
    """A100 -> H100: measured x nccl(H100) / nccl(A100, with what the trace recorded NCCL ran)."""
    tr = _trace([OpClass.ALL_REDUCE], [256 * MiB], [8], [5_000_000], algorithm=[Algorithm.RING],
                protocol=[Protocol.SIMPLE])
    a100, h100 = load_machine("dgx-a100"), load_machine("h100-sxm5-server")
    r = NcclScaledModel().project(tr, a100, h100)
    on_b = NcclModel().project(tr, a100, h100).time_s[0]
    on_a = predict(tr["op_class"], tr["bytes"], tr["gpus"], fabric(a100), algorithm=np.array([1]),
                   protocol=np.array([2])).time_s[0]
    assert r.time_s[0] == pytest.approx(5e-3 * on_b / on_a)
    assert r.time_s[0] < 5e-3


def test_source_too_small_for_the_group_keeps_the_measured_time_with_a_note():
    """A one-GPU source (composed from a one-rank trace) cannot hold a group of 8: no ratio exists, so A's measured
    time is kept (what "nothing changes" gives), said, rather than the data-sheet time; --from names the node."""
    tr = _trace([OpClass.ALL_REDUCE], [MiB], [8], [100_000])
    one, h100 = load_machine("a100-sxm4-80gb"), load_machine("h100-sxm5-server")
    r = NcclScaledModel().project(tr, one, h100)
    assert r.time_s[0] == pytest.approx(100e-6)
    assert any("fewer than the group" in n and "kept at their time measured" in n for n in r.notes)
    named = NcclScaledModel().project(tr, load_machine("dgx-a100-80gb"), h100)
    assert named.time_s[0] < 100e-6  # with the node it ran on, the ratio moves it


def test_a_collective_with_no_measured_time_gets_the_absolute_time():
    """An op-table row with no duration has no calibration: nccl's time on B, said."""
    tr = _trace([OpClass.ALL_REDUCE], [MiB], [8], [0])
    a100, h100 = load_machine("dgx-a100"), load_machine("h100-sxm5-server")
    r = NcclScaledModel().project(tr, a100, h100)
    assert r.time_s[0] == pytest.approx(NcclModel().project(tr, a100, h100).time_s[0])
    assert any("absolute time" in n for n in r.notes)


def test_group_larger_than_the_target_spans_nodes_and_keeps_its_measured_time():
    """A world of 16 ranks onto an 8-GPU node (a job over two nodes): nccl leaves it NaN, nccl-scaled keeps its
    measured time (never NaN: the kernel models would take it for a compute kernel), and both say so."""
    tr = _trace([OpClass.ALL_TO_ALL, OpClass.ALL_REDUCE], [MiB, MiB], [16, 8], [100_000, 50_000])
    a100, h100 = load_machine("dgx-a100"), load_machine("h100-sxm5-server")
    absolute = NcclModel().project(tr, a100, h100)
    assert np.isnan(absolute.time_s[0]) and np.isfinite(absolute.time_s[1])
    scaled = NcclScaledModel().project(tr, a100, h100)
    assert scaled.time_s[0] == pytest.approx(1e-4)
    for r in (absolute, scaled):
        assert any("1 collective of a group larger than h100-sxm5-server's 8 GPUs (up to 16" in n for n in r.notes)
