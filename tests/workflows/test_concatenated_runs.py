"""A file of several runs (nvprof CSV runs pasted one after another): end to end sums the runs, and says so."""

from __future__ import annotations

import csv

import pytest

from nodecast.cli import main
from nodecast.workflows.replay import replay_trace

K40C = "nvprof-gputrace-csv_vectoradd_k40c.csv"


def run_spans_s(path) -> tuple[list[float], float]:
    """Each run's span (first op start to last op end, s) and the gaps between consecutive ops inside the runs,
    read with the csv module (the file's times are in s, one header and units row per run)."""
    spans, gaps, rows = [], 0.0, []
    for record in [*csv.reader(path.read_text().splitlines()), ["Start", "Duration"]]:
        if record[:2] == ["Start", "Duration"]:
            if rows:
                spans.append(max(e for _, e in rows) - rows[0][0])
                gaps += sum(max(0.0, b[0] - a[1]) for a, b in zip(rows, rows[1:], strict=False))
            rows = []
        elif record[0] != "s":
            rows.append((float(record[0]), float(record[0]) + float(record[1])))
    return spans, gaps


def test_end_to_end_is_the_sum_of_the_runs(shared_traces):
    """The K40c file's 12 runs, each timed from its own start: end to end (measured and replayed) is the sum of
    their spans, and the only recorded offsets on the critical path are those inside the runs (it counted 28.8 ms
    of time between runs, read off unrelated clocks)."""
    spans, gaps = run_spans_s(shared_traces / K40C)
    assert len(spans) == 12
    result = replay_trace(shared_traces / K40C)
    assert result.measured_end_to_end_s == pytest.approx(sum(spans), rel=1e-6)
    assert result.replayed_end_to_end_s == pytest.approx(sum(spans), rel=1e-6)
    assert result.critical_path_s["recorded offsets (no API record)"] == pytest.approx(gaps, abs=1e-8)


@pytest.mark.parametrize("command", [["replay"], ["forecast", "--to", "gtx-970"]])
def test_the_joined_runs_note_is_printed(shared_traces, capsys, command):
    """`replay` and `forecast` print, by default, that the runs were joined and what end to end then means."""
    assert main([command[0], str(shared_traces / K40C), *command[1:]]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("note: 12 runs concatenated")]
    assert len(lines) == 1, out
    assert "sum of the runs' spans" in lines[0]
