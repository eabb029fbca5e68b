"""The comparison chart of a forecast on several targets (and on one) is written in the format its name asks."""

from __future__ import annotations

from nodecast.workflows.forecast import read_trace_and_api
from nodecast.workflows.targets import TargetSpec, compare_targets
from nodecast.report.figures import draw

VECTORADD = "nsys_vectoradd-streams_t4.sqlite"


def test_chart_of_two_targets_is_a_png(shared_traces, tmp_path):
    """draw(Comparison) writes a PNG with one bar per target."""
    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    comp = compare_targets(trace, api, [TargetSpec("titan"), TargetSpec("summit")], jobs=1)
    out = draw(comp, tmp_path / "c.png")
    assert out == tmp_path / "c.png" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 1000


def test_chart_of_one_forecast_is_an_svg_naming_its_target(shared_traces, tmp_path):
    """draw(ForecastResult) draws the same chart for its one target, labelled as asked."""
    from nodecast.workflows.forecast import forecast_trace

    result = forecast_trace(shared_traces / VECTORADD, "titan")
    out = draw(result, tmp_path / "one.svg", label="my titan")
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "my titan" in text


def test_chart_gives_each_target_its_speedup_a_over_b_and_splits_a_like_the_targets(shared_traces, tmp_path):
    """Each target's bar ends with its end to end and speed-up A / B, the one convention of every table and
    page; A's replay is split along its critical path as the targets are (it was one bar of another colour)."""
    from nodecast.report.tables import fmt_ratio, fmt_seconds

    trace, api = read_trace_and_api(shared_traces / VECTORADD)
    comp = compare_targets(trace, api, [TargetSpec("titan"), TargetSpec("summit")], jobs=1)
    text = draw(comp, tmp_path / "c.svg").read_text()
    for _, row in comp.table().iterrows():
        assert f"{fmt_seconds(row['end_to_end_s'])}, speed-up (A / B) {fmt_ratio(row['speedup'])}" in text
    assert "A: replayed end to end" not in text and comp.source_path_s["path_host_s"] > 0
