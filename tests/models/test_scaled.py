"""The source run as calibration: measured times scaled by a model's target/source ratio."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.machines import load_machine
from nodecast.models.registry import get_models
from nodecast.models.scaled import AheadScaledModel, PeakBandwidthScaledModel
from nodecast.models.transfer import AheadModel
from nodecast.cost.project import project
from nodecast.traces import CopyKind, MemKind, OpKind, Trace
from nodecast.traces.load import load_trace

MIB = 1 << 20


def copies(sizes, durations_ns, copy_kind=CopyKind.HTOD, host=MemKind.PINNED) -> Trace:
    """Host<->device copies of ``sizes`` bytes that took ``durations_ns`` on the GPU (documented Trace columns)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = sizes.size
    start = np.arange(n, dtype=np.int64) * 10**9
    src, dst = (host, MemKind.DEVICE) if copy_kind == CopyKind.HTOD else (MemKind.DEVICE, host)
    return Trace.from_columns({"kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, copy_kind),
                               "src_mem": np.full(n, src), "dst_mem": np.full(n, dst), "bytes": sizes,
                               "start_ns": start, "end_ns": start + np.asarray(durations_ns, dtype=np.int64)})


def test_registered_as_a_family():
    """ahead-scaled (a model) and peak-bandwidth-scaled (its baseline) are registered transfer models."""
    a, p = get_models(["ahead-scaled", "peak-bandwidth-scaled"])
    assert (a.kind, a.baseline, p.baseline) == ("transfer", False, True)
    assert a.source_scaled and p.source_scaled


def test_measured_time_times_the_model_ratio():
    """Each copy's projection is its measured time x ahead(target) / ahead(source)."""
    titan, summit = load_machine("titan"), load_machine("summit")
    trace = copies([MIB, 64 * MIB], [400_000, 20_000_000])
    base = AheadModel()
    ratio = base.project(trace, titan, summit).time_s / base.project(trace, titan, titan).time_s
    got = AheadScaledModel().project(trace, titan, summit).time_s
    assert got == pytest.approx(trace.duration_ns * 1e-9 * ratio, rel=1e-12)


def test_same_node_gives_the_source_times_back(shared_traces):
    """--from t4 --to t4 on a real Nsight Systems trace: every copy keeps its measured time exactly."""
    trace = load_trace(shared_traces / "nsys_omp-offload-heat-8000_t4_map-every-step.sqlite")
    t4 = load_machine("t4")
    proj = project(trace, t4, t4, ["ahead", "ahead-scaled", "peak-bandwidth-scaled"])
    measured = trace.duration_ns * 1e-9
    for name in ("ahead-scaled", "peak-bandwidth-scaled"):
        r = proj.results[name]
        assert r.handled.sum() == 200
        assert r.time_s[r.handled] == pytest.approx(measured[r.handled], rel=1e-12)
    absolute = proj.results["ahead"]
    assert np.abs(absolute.time_s[absolute.handled] / measured[absolute.handled] - 1).max() > 0.3


def test_source_host_copy_rate_read_off_the_trace():
    """The source side takes the host copy rate its own pageable copies show, and says so."""
    titan, summit = load_machine("titan"), load_machine("summit")
    base = AheadModel()
    sizes = np.array([8 * MIB, 64 * MIB, 256 * MIB])
    # Times of a Titan whose host stages at 2.0 GB/s (the catalogue says 3.83): what AheadModel predicts for it.
    from dataclasses import replace

    slow = replace(titan, cpu=replace(titan.cpu, copy_bandwidth_bps=2.0e9))
    ns = np.round(base.project(copies(sizes, [1] * 3, host=MemKind.PAGEABLE), titan, slow).time_s * 1e9)
    trace = copies(sizes, ns, host=MemKind.PAGEABLE)
    result = AheadScaledModel().project(trace, titan, summit)
    absolute = base.project(trace, titan, summit).time_s
    assert result.time_s == pytest.approx(absolute, rel=2e-3)  # the 2.0 GB/s cancels: ahead's Summit time back
    assert any("host copy rate 2.00 GB/s read off 3 host-bound pageable copies" in n for n in result.notes)


def test_copies_without_a_measured_time_keep_the_absolute_projection():
    """A copy of 0 ns takes ahead's absolute projection, and the notes count it."""
    titan, summit = load_machine("titan"), load_machine("summit")
    trace = copies([MIB, MIB], [0, 200_000])
    r = AheadScaledModel().project(trace, titan, summit)
    assert r.time_s[0] == pytest.approx(AheadModel().project(trace, titan, summit).time_s[0], rel=1e-12)
    assert any("1 copy without a measured time > 0" in n for n in r.notes)


def test_unknown_host_memory_interval_scaled_too():
    """Copies of unrecorded host memory get an interval whose ends are both scaled, the pageable end used."""
    titan, summit = load_machine("titan"), load_machine("summit")
    trace = copies([64 * MIB], [30_000_000], host=MemKind.UNKNOWN)
    r = PeakBandwidthScaledModel().project(trace, titan, summit)
    assert r.low_s is not None and r.high_s is not None
    assert r.low_s[0] <= r.time_s[0] <= r.high_s[0]
    a = AheadScaledModel().project(trace, titan, summit)
    assert a.low_s[0] < a.high_s[0]
    assert a.time_s[0] == pytest.approx(a.high_s[0])  # pageable is the slower end here


def test_scaled_models_reuse_their_base_models_projection(monkeypatch):
    """project() with every transfer model projects the real Titan bandwidthTest sample 7 times, not 9: the
    scaled models take ahead's and peak-bandwidth's target-side projections from the trace's memo, with the
    same result as a cold run."""
    from nodecast.models.transfer_base import TransferModelBase

    titan, summit = load_machine("titan"), load_machine("summit")
    calls = []
    real = TransferModelBase._project

    def counting(self, trace, source, target):
        calls.append((type(self).__name__, source is target))
        return real(self, trace, source, target)

    monkeypatch.setattr(TransferModelBase, "_project", counting)
    trace = load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x")
    proj = project(trace, titan, summit, kind="transfer")
    assert len(proj.results) == 7 and len(calls) == 7
    assert calls.count(("AheadModel", False)) == 1 and calls.count(("PeakBandwidthModel", False)) == 1
    cold = AheadScaledModel().project(load_trace("sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"),
                                      titan, summit)
    assert np.array_equal(proj.results["ahead-scaled"].time_s, cold.time_s, equal_nan=True)
    assert proj.results["ahead-scaled"].notes == cold.notes


def test_the_kept_projection_is_never_stale():
    """The kept projection is reused only for the same machines (by identity) and the same options: another
    target, another --host-memory or another 1-byte cost projects again."""
    titan, summit = load_machine("titan"), load_machine("summit")
    trace = copies([MIB, 64 * MIB], [400_000, 20_000_000])
    model = AheadModel()
    first = model.project(trace, titan, summit).time_s
    assert not np.array_equal(model.project(trace, titan, titan).time_s, first)
    model.one_byte_given_s = {"all": 1e-3}
    assert model.project(trace, titan, summit).time_s[0] > first[0] + 9e-4
    model.one_byte_given_s = {}
    assert np.array_equal(model.project(trace, titan, summit).time_s, first)
