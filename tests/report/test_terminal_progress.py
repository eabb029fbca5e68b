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


def test_without_a_verb_a_log_stays_quiet(monkeypatch):
    """The forecast's targets (no verb): a bar at a terminal, never a line in a log, however long the job."""
    monkeypatch.setattr(_progress, "LOG_EVERY_S", 0.0)
    log = io.StringIO()
    with job_progress(2, "forecasting", stream=log) as progress:
        time.sleep(0.2)
        progress.advance(1)
        progress.advance(0)
    assert log.getvalue() == "" and progress.done == 2


def test_steps_name_the_point_under_way_and_the_bar_stays_in_a_log():
    """calibrate's bar: the label first, points done of all, the point under way after the bar; kept when done, so
    that stderr redirected to a file gets its final state once."""
    from rich.console import Console

    err = io.StringIO()
    console = Console(file=err, force_terminal=False, width=80)
    with _progress.step_progress(3, "calibrate", console) as progress:
        for done, name in enumerate(("htod 1 KiB", "htod 2 KiB", "dtoh 1 KiB")):
            progress.step(name, done, 3)
        progress.step("", 3, 3)
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibrate ") and " 3/3 " in lines[0]


def test_one_bar_for_every_job():
    """The bars of ``job_progress`` and ``step_progress`` both come from ``progress_bar``: transient and hidden away
    from a terminal for jobs, kept for steps."""
    from rich.console import Console

    bar, task = _progress.progress_bar(4, "forecasting")
    assert bar.live.transient and bar.tasks[task].total == 4 and bar.tasks[task].description == "forecasting"
    kept, _ = _progress.progress_bar(4, "calibrate", console=Console(file=io.StringIO()), steps=True)
    assert not kept.live.transient and not kept.disable
