"""Copies whose host memory (pinned or pageable) the trace does not record: an interval, a note, a flag."""

from __future__ import annotations

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.machines import load_machine
from nodecast.models.transfer import AheadModel
from nodecast.cost.project import project
from nodecast.traces import CopyKind, MemKind, OpKind, Trace
from nodecast.traces.load import load_trace

MIB = 1 << 20


def copies(host: MemKind, sizes=(8 * MIB, 64 * MIB)) -> Trace:
    """HtoD copies from host memory of kind ``host`` (documented Trace columns)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = sizes.size
    start = np.arange(n, dtype=np.int64) * 10**9
    return Trace.from_columns({"kind": np.full(n, OpKind.MEMCPY), "copy_kind": np.full(n, CopyKind.HTOD),
                               "src_mem": np.full(n, host), "dst_mem": np.full(n, MemKind.DEVICE), "bytes": sizes,
                               "start_ns": start, "end_ns": start + 1_000_000})


def test_projected_both_ways_pageable_end_used():
    """Unrecorded host memory: time = the pageable projection, [low, high] = [pinned, pageable], with a note."""
    titan, summit = load_machine("titan"), load_machine("summit")
    r = AheadModel().project(copies(MemKind.UNKNOWN), titan, summit)
    pinned = AheadModel().project(copies(MemKind.PINNED), titan, summit).time_s
    pageable = AheadModel().project(copies(MemKind.PAGEABLE), titan, summit).time_s
    assert r.time_s == pytest.approx(pageable, rel=1e-12)
    assert r.low_s == pytest.approx(pinned, rel=1e-12)
    assert r.high_s == pytest.approx(pageable, rel=1e-12)
    assert any("2 copies whose host memory (pinned or pageable) the trace does not record: projected as pageable"
               in n and "--host-memory" in n for n in r.notes)


@pytest.mark.parametrize("kind", ["pinned", "pageable"])
def test_stated_kind_projects_as_that_kind(kind):
    """--host-memory KIND projects the unrecorded copies as KIND, without an interval, and says so."""
    titan, summit = load_machine("titan"), load_machine("summit")
    proj = project(copies(MemKind.UNKNOWN), titan, summit, ["ahead"], host_memory=kind)
    known = AheadModel().project(copies(MemKind.PINNED if kind == "pinned" else MemKind.PAGEABLE), titan, summit)
    r = proj.results["ahead"]
    assert r.time_s == pytest.approx(known.time_s, rel=1e-12)
    assert r.low_s is None and r.high_s is None
    assert any(f"projected as {kind} (--host-memory {kind})" in n for n in proj.notes)


def test_unknown_kind_refused():
    """A host memory kind other than pinned/pageable is one InputError naming the option."""
    titan = load_machine("titan")
    with pytest.raises(InputError, match="unknown host memory kind 'mapped'") as err:
        project(copies(MemKind.UNKNOWN), titan, titan, ["ahead"], host_memory="mapped")
    assert err.value.key == "--host-memory"


def test_nvprof_csv_copies_get_an_interval(shared_traces):
    """The nvprof GPU-trace CSV records no memory kinds: its 24 copies are projected as an interval, per op in -o."""
    trace = load_trace(shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv")
    k40, h100 = load_machine("tesla-k40"), load_machine("h100-pcie-server")
    proj = project(trace, k40, h100, ["ahead"])
    frame = proj.frame()
    copied = frame["transfer_class"].isin(["htod_unknown", "dtoh_unknown"])
    assert int(copied.sum()) == 24
    assert (frame.loc[copied, "ahead_low_s"] < frame.loc[copied, "ahead_high_s"]).all()
    assert (frame.loc[copied, "ahead_s"] == frame.loc[copied, "ahead_high_s"]).all()
