"""``nodecast.report.terminal._progress``: progress of a long job, a bar at a terminal, lines in a log."""

from __future__ import annotations

import io
import time

import pytest

from nodecast.report.terminal import _progress
from nodecast.report.terminal._progress import elapsed, job_progress


def test_elapsed_reads_as_a_log_line_gives_it():
    """Seconds, then minutes and seconds, then hours and minutes."""
    assert [elapsed(s) for s in (0.4, 4.6, 130, 3725)] == ["0 s", "5 s", "2 m 10 s", "1 h 2 m"]


def test_a_log_gets_a_line_per_finished_run_at_most_every_interval(monkeypatch):
    """Not at a terminal: "compared 2 of 3 runs, 0 s" as runs finish (here every run: no interval), the last last."""
    monkeypatch.setattr(_progress, "LOG_EVERY_S", 0.0)
    log = io.StringIO()
    with job_progress(3, "comparing", "compared", stream=log) as progress:
        for _ in range(3):
            progress.advance()
    lines = log.getvalue().splitlines()
    for k in (1, 2, 3):
        assert any(line.startswith(f"compared {k} of 3 runs, ") for line in lines)
    assert lines[-1].startswith("compared 3 of 3 runs, ") and lines[-1].endswith(" s")


def test_a_log_hears_from_a_long_run_that_has_not_finished(monkeypatch):
    """While a run goes on past the interval, a line still comes (the job is alive), with the time so far."""
    monkeypatch.setattr(_progress, "LOG_EVERY_S", 0.05)
    log = io.StringIO()
    with job_progress(2, "comparing", "compared", stream=log):
        time.sleep(0.4)
    assert any(line.startswith("compared 0 of 2 runs, ") for line in log.getvalue().splitlines())


def test_a_short_job_leaves_the_log_quiet():
    """A job shorter than the interval prints nothing: its results say it ran."""
    log = io.StringIO()
    with job_progress(2, "simulating", "simulated", stream=log) as progress:
        progress.advance(0)
        progress.advance(1)
    assert log.getvalue() == ""


@pytest.mark.parametrize("total", [1, 4])
def test_the_count_agrees_in_number(monkeypatch, total):
    """One run is "1 of 1 run"."""
    monkeypatch.setattr(_progress, "LOG_EVERY_S", 0.0)
    log = io.StringIO()
    with job_progress(total, "simulating", "simulated", stream=log) as progress:
        progress.advance()
    lines = log.getvalue().splitlines()
    assert any(line.startswith(f"simulated 1 of {total} run{'s' if total > 1 else ''}, ") for line in lines)
