"""The peak-bandwidth and back-of-envelope baselines against hand-worked times."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecast.machines import load_machine
from nodecast.machines.loader import machine_from_dict
from nodecast.models.registry import get_models
from nodecast.models.baselines import BackOfEnvelopeModel, PeakBandwidthModel
from nodecast.models.transfer import AheadModel
from nodecast.traces import CopyKind, MemKind, OpKind, Trace

MIB = 1048576


def titan_measured():
    """Titan with 1-byte costs of 1 µs (copies to/from host) and 2 µs (D2D) in its file."""
    titan = load_machine("titan")
    data = tomllib.loads(titan.path.read_text())
    data["measured"] = {"origin": "test", "one_byte_s": {
        "htod_pinned": 1e-6, "htod_pageable": 1e-6, "dtoh_pinned": 1e-6, "dtod": 2e-6}}
    return machine_from_dict(data, "titan-test.toml")


def copy(copy_kind, src, dst, sizes) -> Trace:
    sizes = np.atleast_1d(sizes)
    n = sizes.size
    return Trace.from_columns({
        "kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, copy_kind), "src_mem": np.full(n, src),
        "dst_mem": np.full(n, dst), "bytes": sizes, "start_ns": np.arange(n) * 1000, "end_ns": np.arange(n) * 1000 + 1,
    })


PINNED = copy(CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE, MIB)
PAGEABLE = copy(CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE, MIB)
DTOD = copy(CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE, MIB)


def test_peak_bandwidth_one_mib_titan():
    """Peak bandwidth: 1 µs + 1048576 / 8e9 = 1 + 131.072 = 132.072 µs over PCIe gen2 x16."""
    target = titan_measured()
    assert PeakBandwidthModel().project(PINNED, target, target).time_s[0] == pytest.approx(132.072e-6, rel=1e-12)


def test_back_of_envelope_one_mib_titan():
    """Back-of-envelope: 1048576 / 8e9 = 131.072 µs, no L+O."""
    target = titan_measured()
    assert BackOfEnvelopeModel().project(PINNED, target, target).time_s[0] == pytest.approx(131.072e-6, rel=1e-12)


def test_pageable_like_pinned_with_note():
    """Baselines ignore the staging copy of pageable memory, and say so."""
    target = titan_measured()
    model = PeakBandwidthModel()
    result = model.project(PAGEABLE, target, target)
    assert result.time_s[0] == pytest.approx(132.072e-6, rel=1e-12)
    assert any("staging copy ignored" in n for n in result.notes)


def test_dtod_at_dram_bandwidth():
    """D2D: 2 µs + 1048576 / 250e9 = 2 + 4.194304 µs (peak); 4.194304 µs (back-of-envelope)."""
    target = titan_measured()
    assert PeakBandwidthModel().project(DTOD, target, target).time_s[0] == pytest.approx(6.194304e-6, rel=1e-12)
    assert BackOfEnvelopeModel().project(DTOD, target, target).time_s[0] == pytest.approx(4.194304e-6, rel=1e-12)


def test_registered_as_baselines():
    """Both baselines are registered transfer models with baseline = True."""
    models = {m.name: m for m in get_models(kind="transfer")}
    assert models["peak-bandwidth"].baseline is True
    assert models["back-of-envelope"].baseline is True
    assert models["ahead"].baseline is False


@given(st.integers(1, 2**34), st.sampled_from([(CopyKind.HTOD, MemKind.PINNED, MemKind.DEVICE),
                                               (CopyKind.DTOH, MemKind.DEVICE, MemKind.PINNED),
                                               (CopyKind.HTOD, MemKind.PAGEABLE, MemKind.DEVICE),
                                               (CopyKind.DTOD, MemKind.DEVICE, MemKind.DEVICE)]))
def test_ahead_never_faster_than_peak_bandwidth(n, kinds):
    """With the same L+O, AHEAD (protocol overhead, staging, 2n DRAM bytes) is never faster than peak bandwidth."""
    target = TITAN_MEASURED
    trace = copy(*kinds, n)
    ahead = AheadModel().project(trace, target, target).time_s[0]
    peak = PeakBandwidthModel().project(trace, target, target).time_s[0]
    envelope = BackOfEnvelopeModel().project(trace, target, target).time_s[0]
    assert ahead >= peak >= envelope


TITAN_MEASURED = titan_measured()
