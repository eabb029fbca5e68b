"""Tests for nodecast.workflows.forecast: the operation graph replayed on the target with projected costs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nodecast.errors import InputError
from nodecast.engine import metrics
from nodecast.cost.ops import CostOptions
from nodecast.workflows.forecast import forecast, forecast_trace, read_trace_and_api
from nodecast.engine.replay import replay
from nodecast.machines import load_machine, resolve_source

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


@pytest.fixture(scope="module")
def t4_to_h100(shared_dir):
    """The 4-stream vector add (T4) forecast on an H100 PCIe node."""
    return forecast_trace(shared_dir / VECTORADD, "h100-pcie-server")


def test_nothing_projected_reproduces_the_replay(shared_traces):
    """With a model chain that handles no op, the forecast on A is the same-node replay, op for op."""
    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    node = resolve_source(trace, None)
    r = forecast(trace, api, node, node, CostOptions(models=("roofline",)))
    assert r.costs.kept(r.graph).sum() == r.graph.gpu_mask().sum()
    np.testing.assert_array_equal(r.forecast.start_s, r.replayed.start_s)
    assert r.end_to_end_s == r.replayed_end_to_end_s
    assert r.movers().empty


def test_faster_link_shortens_copies_and_the_critical_path_sums_to_end_to_end(t4_to_h100):
    """On a PCIe gen4 node the copies take less time; each critical path sums to its end-to-end time."""
    r = t4_to_h100
    cats = r.categories().set_index("category")
    assert cats.loc["copies: HtoD pinned", "target_s"] < cats.loc["copies: HtoD pinned", "source_s"]
    assert r.end_to_end_s < r.replayed_end_to_end_s
    assert r.target_path.length_s == pytest.approx(r.end_to_end_s, rel=1e-9)
    assert r.source_path.length_s == pytest.approx(r.replayed_end_to_end_s, rel=1e-9)
    cp = r.critical_paths()
    assert cp["on_b_s"].sum() == pytest.approx(r.end_to_end_s, rel=1e-9)


def test_movers_name_the_copies_that_changed(t4_to_h100):
    """The op group that moved the end to end most is the host-to-device copies, by what they add to each path."""
    r = t4_to_h100
    top = r.movers(3).iloc[0]
    assert top["category"] == "copies: HtoD pinned"
    assert top["change_s"] == pytest.approx(top["on_b_s"] - top["on_a_s"])
    assert top["change_s"] < 0


def test_gpu_busy_and_summary_are_plain_values(t4_to_h100):
    """busy_s gives measured, replayed and forecast GPU-busy per device; summary() is JSON-ready."""
    r = t4_to_h100
    busy = r.busy_s()
    assert set(busy) == {"measured on A", "replayed on A", "forecast on B"}
    assert busy["forecast on B"][0] < busy["measured on A"][0]
    s = json.loads(json.dumps(r.summary()))
    assert s["end_to_end_s"]["forecast"] == pytest.approx(r.end_to_end_s)
    assert "host" in {m["model"] for m in s["models"]}
    assert sum(m["ops"] for m in s["models"]) == len(r.graph)
    assert sum(k["ops"] for k in s["kept"]) == int(r.costs.kept(r.graph).sum())


def test_ops_table_has_both_timelines(t4_to_h100):
    """ops_table: one row per op with its model, durations on A and B, and measured and forecast start/end."""
    r = t4_to_h100
    table = r.ops_table()
    assert len(table) == len(r.graph)
    assert {"model", "source_dur_s", "target_dur_s", "measured_start_s", "forecast_start_s"} <= set(table.columns)
    gpu = r.graph.gpu_mask()
    assert (table["forecast_end_s"][gpu] - table["forecast_start_s"][gpu]).to_numpy() == pytest.approx(
        r.costs.duration_s[gpu])


def test_interval_replays_bound_the_forecast(shared_traces, every_other):
    """Replaying the low and the high end of every op's interval brackets the forecast end to end."""
    r = forecast_trace(shared_traces / VECTORADD, "h100-pcie-server",
                       options=CostOptions(models=(every_other, "ahead")))
    low, high = r.interval_s
    assert low < r.end_to_end_s < high
    assert metrics.end_to_end_s(r.graph, r.low) == low


def test_unknown_target_is_one_line(shared_traces):
    """A target that names no machine is an InputError, before any work."""
    with pytest.raises(InputError, match="no-such-node"):
        forecast_trace(shared_traces / VECTORADD, "no-such-node")


def test_source_gpu_mismatch_is_refused(shared_traces):
    """--from naming another GPU than the trace's is refused unless allowed (then said in the notes)."""
    with pytest.raises(InputError):
        forecast_trace(shared_traces / VECTORADD, "titan", source="summit")
    r = forecast_trace(shared_traces / VECTORADD, "titan", source="summit", allow_gpu_mismatch=True)
    assert any("summit" in n for n in r.notes)


def test_fallback_trace_forecast_uses_recorded_gaps(shared_traces):
    """An nvprof GPU-trace CSV (no API records) is forecast through its recorded-offset fallback: the
    forecast with source durations equals the measured end to end, and the notes say so."""
    path = shared_traces / "nvprof-gputrace-csv_vectoradd_k40c.csv"
    trace, api = read_trace_and_api(path)
    node = resolve_source(trace, None)
    r = forecast(trace, api, node, load_machine("titan"), CostOptions(models=("roofline",)))
    assert r.end_to_end_s == pytest.approx(r.measured_end_to_end_s, rel=1e-9)
    assert any("no host API records" in n or "no API records" in n for n in r.notes)
    again = replay(r.graph, r.graph.source_durations())
    assert metrics.end_to_end_s(r.graph, again) == pytest.approx(r.end_to_end_s)


def test_forecast_says_which_replay_path_ran(t4_to_h100):
    """A one-GPU trace on an H100 PCIe node keeps the single pass (its copies are chained per engine) and says so in
    the result, its summary and its notes, with the target's copy engines and kernel slots from the data sheet."""
    r = t4_to_h100
    assert r.replay_path == "single-pass" and "one copy engine only" in r.replay_reason
    assert r.summary()["replay"] == {"path": "single-pass", "reason": r.replay_reason}
    assert any(n.startswith("replay on B: single-pass (") for n in r.notes)
    assert any("kernel slots of h100-pcie-server: 128 concurrent kernels per GPU" in n for n in r.notes)


def test_one_copy_engine_on_the_target_runs_the_event_path(shared_traces):
    """The 4-stream vector add (T4: one copy engine per direction, its host-to-device copies overlapping
    device-to-host ones of other streams) forecast on a T4 node whose GPU has one copy engine for every direction
    (a machine given asyncEngineCount 1): the trace's engine order is dropped, the copies queue for the single
    engine on the event path, the end to end grows, and the critical path (waits included) sums to it."""
    from dataclasses import replace

    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    node = resolve_source(trace, None)
    base = forecast(trace, api, node, node)
    one = replace(node, gpu=replace(node.gpu, copy_engines=1))
    r = forecast(trace, api, node, one)
    assert base.replay_path == "single-pass" and r.replay_path == "event"
    assert "copy engine dev0 would serve" in r.replay_reason
    assert any("their recorded engine order is dropped" in n for n in r.notes)
    assert r.end_to_end_s > base.end_to_end_s
    assert r.target_path.length_s == pytest.approx(r.end_to_end_s, rel=1e-9)
    copies = r.graph.ops["kind"] == 1
    start, end = r.forecast.start_s[copies], r.forecast.end_s[copies]
    order = np.argsort(start)
    assert (start[order][1:] >= end[order][:-1] - 1e-12).all()  # one engine: no two copies at once
