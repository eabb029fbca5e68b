"""Tests for nodecast.workflows.evaluate_run: a whole run forecast on B against the run recorded on B."""

from __future__ import annotations

import pytest

from nodecast.cli import main
from nodecast.engine import metrics
from nodecast.workflows.evaluate_run import compare_or_reason, compare_run_files
from nodecast.machines import load_machine

TITAN = "sample:nvprof_ahead-bandwidthtest-htod-pinned_titan-k20x"
SUMMIT = "sample:nvprof_ahead-bandwidthtest-htod-pinned_summit-v100"


@pytest.fixture(scope="module")
def titan_on_summit():
    return compare_run_files(TITAN, SUMMIT, load_machine("titan"), load_machine("summit"))


def test_end_to_end_and_busy_against_run_b(titan_on_summit):
    """The actual column is run B measured (same definition as `nodecast replay`); the forecast column is A
    forecast on B; the error is (forecast - actual) / actual."""
    w = titan_on_summit
    table = w.table().set_index("quantity")
    e2e = table.loc["end to end (first API call to last GPU op end)"]
    assert e2e["actual on B"] == pytest.approx(w.actual_end_to_end_s)
    assert w.actual_end_to_end_s == pytest.approx(metrics.end_to_end_s(w.graph_b, w.measured_b))
    assert w.actual_end_to_end_s > 1.0  # Summit's bandwidthTest run: seconds of copies and host work
    assert e2e["forecast on B"] == pytest.approx(w.forecast.end_to_end_s)
    assert e2e["on A"] == pytest.approx(w.forecast.measured_end_to_end_s)
    assert e2e["error"] == pytest.approx((e2e["forecast on B"] - e2e["actual on B"]) / e2e["actual on B"])
    busy = table.loc["GPU busy (union of op intervals, all GPUs)"]
    assert busy["actual on B"] == pytest.approx(sum(metrics.gpu_busy_s(w.graph_b, w.measured_b).values()))


def test_copy_totals_come_from_the_model(titan_on_summit):
    """The HtoD copies of run A forecast on Summit sum to the default copy model's times (ahead-scaled: A's
    measured times x AHEAD's ratio Summit / Titan); their actual total is run B's."""
    table = titan_on_summit.table().set_index("quantity")
    row = table.loc["GPU time, copies: HtoD pinned"]
    assert row["forecast from"] == "ahead-scaled"
    assert row["forecast on B"] < row["on A"]
    assert abs(row["error"]) < 0.05  # AHEAD's own ground-truth pair: 0.5 % WMAPE per op


def test_kernel_time_on_a_and_b_even_without_a_kernel_model(shared_traces):
    """Kernels no model projects: the row still gives their time on A and on B, and says the forecast kept A's."""
    a = shared_traces / "kineto_nsfw-image-detection_h100.json.gz"
    b = shared_traces / "kineto_nsfw-image-detection_mi300x.json.gz"
    w, why = compare_or_reason(a, b, load_machine("h100-sxm5-80gb"), load_machine("mi300x"))
    assert why == ""
    row = w.table().set_index("quantity").loc["GPU time, kernels"]
    assert row["on A"] > 0 and row["actual on B"] > 0 and row["on A"] != row["actual on B"]
    if "kept at A's time" in row["forecast from"]:
        assert row["forecast on B"] == pytest.approx(row["on A"])


def test_evaluate_command_prints_the_whole_run(capsys):
    """`nodecast evaluate` adds the whole-run table after the per-op errors."""
    assert main(["evaluate", TITAN, SUMMIT, "--from", "titan", "--to", "summit"]) == 0
    out = capsys.readouterr().out
    assert "Whole run" in out and "end to end (first API call to last GPU op end)" in out
