"""Progress of a long job on stderr: a bar at a terminal, a line now and then in a log.

``job_progress(total, label, verb)`` is a context manager with ``advance()``,
called once per finished run (from the thread that collects the results: in
this process, or as Dask futures complete). At a terminal it is
``progress_bar``'s transient bar. Elsewhere (stderr redirected to a log, a
pipe, a batch job) a bar cannot draw and nothing would show for as long as
the job runs (13 minutes for the whole StarPU reference), so it prints
``compared 120 of 480 runs, 2 m 10 s``: when a run finishes, at most every
``LOG_EVERY_S`` seconds, and, from a timer, every ``LOG_EVERY_S`` seconds while
a long run has not finished yet, so that a log shows the job is alive. A job
shorter than ``LOG_EVERY_S`` prints no line: its results say it ran.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any

from nodecast.words import plural

#: Seconds between two progress lines when stderr is not a terminal: often enough that a log shows the job is alive,
#: seldom enough that a 13-minute job writes about 80 lines, not one per run.
LOG_EVERY_S = 10.0

#: The timer's shortest wait (s): with ``LOG_EVERY_S`` at 0 (every run said) the timer must not spin.
_MIN_WAIT_S = 0.1


def elapsed(seconds: float) -> str:
    """A wall time as a log line gives it: ``"5 s"``, ``"2 m 10 s"``, ``"1 h 2 m"`` (whole seconds, rounded)."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} m {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} m"


class JobProgress:
    """See the module docstring; made by ``job_progress``."""

    def __init__(self, total: int, label: str, verb: str, noun: str = "run", stream: IO[str] | None = None) -> None:
        self.total, self.done = total, 0
        self._verb, self._noun = verb, noun
        self._stream = stream
        self._bar: Any = None
        if stream is None:
            from nodecast.report.terminal import progress_bar

            bar, task = progress_bar(total, label)
            if bar.console.is_terminal:
                self._bar, self._task = bar, task
        self._lock = threading.Lock()  # the timer and ``advance`` both print and move ``_last``
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._start = self._last = 0.0
        self._said = False

    def __enter__(self) -> JobProgress:
        self._start = self._last = time.monotonic()
        if self._bar is not None:
            self._bar.__enter__()
        else:
            self._timer = threading.Thread(target=self._tick, name="nodecast-progress", daemon=True)
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def advance(self, *_: object) -> None:
        """One more run finished (the arguments, a run's index or row, are ignored)."""
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.advance(self._task)
                return
            now = time.monotonic()
            last = self.done >= self.total and (self._said or now - self._start >= LOG_EVERY_S)
            if last or now - self._last >= LOG_EVERY_S:
                self._say(now)

    def _tick(self) -> None:
        """The timer: a line when none came for ``LOG_EVERY_S`` seconds (a run that has not finished yet)."""
        while not self._stop.wait(max(LOG_EVERY_S, _MIN_WAIT_S)):
            with self._lock:
                now = time.monotonic()
                if self.done < self.total and now - self._last >= LOG_EVERY_S:
                    self._say(now)

    def _say(self, now: float) -> None:
        """``compared 120 of 480 runs, 2 m 10 s``, on the stream (stderr unless given); called holding the lock."""
        stream = self._stream or sys.stderr
        print(f"{self._verb} {self.done:,} of {plural(self.total, self._noun)}, {elapsed(now - self._start)}",
              file=stream, flush=True)
        self._last, self._said = now, True


def job_progress(total: int, label: str, verb: str, noun: str = "run", stream: IO[str] | None = None) -> JobProgress:
    """Progress of ``total`` runs: ``label`` beside the bar at a terminal, ``"{verb} K of N {noun}s, T"`` lines in
    a log. ``stream`` (tests): write those lines there, never a bar."""
    return JobProgress(total, label, verb, noun, stream)
