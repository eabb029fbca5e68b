"""Progress of long work on stderr: the one helper every command's progress bar comes from.

Work reports how far it got through the callbacks of ``nodecast.progress``;
this module draws it, on stderr so that results piped from stdout stay clean.
Every bar is ``progress_bar``'s (rich); ``JobProgress`` holds it, or writes
log lines where no bar can draw, and is made one of two ways:

* ``job_progress(total, label, verb)``: jobs that finish in any order (a
  sweep's simulations, a comparison's forecasts); ``advance`` (a
  ``nodecast.progress.JobDone``) is called once per finished job, from the
  thread that collects the results (in this process, or as Dask futures
  complete). At a terminal it is a transient bar. Elsewhere (stderr
  redirected to a log, a pipe, a batch job) a bar cannot draw and nothing
  would show for as long as the job runs (13 minutes for the whole StarPU
  reference), so with a ``verb`` it prints ``compared 120 of 480 runs, 2 m
  10 s``: when a run finishes, at most every ``LOG_EVERY_S`` seconds, and,
  from a timer, every ``LOG_EVERY_S`` seconds while a long run has not
  finished yet, so that a log shows the job is alive. A job shorter than
  ``LOG_EVERY_S`` prints no line: its results say it ran. Without a verb
  (the forecast's targets) a log gets nothing.
* ``step_progress(total, label, console)``: steps one after the other
  (calibrate's measured points); ``step`` (a ``nodecast.progress.Step``) is
  called as each starts, and the bar shows its name. The bar stays when
  done, and where stderr is no terminal its final state is printed once: the
  record of a measurement that took minutes.
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


def progress_bar(total: int, label: str, console: Any = None, steps: bool = False):  # noqa: ANN201 (Progress, task id)
    """The bar on ``console`` (default: a rich Console on stderr); returns ``(progress, task)``: use ``with
    progress:`` and ``progress.advance(task)`` or ``progress.update(task, completed=, description=)``.

    Jobs: ``label`` beside the bar, done of all, time so far; transient, and hidden where the console is no
    terminal. ``steps``: ``label`` first in bold, then the bar, done of all, time so far and the name of the step
    under way (the task's description); it stays when done, where the console is no terminal too.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = console if console is not None else Console(stderr=True)
    if steps:
        progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=err, transient=False)
        return progress, progress.add_task("", total=total)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True, disable=not err.is_terminal)
    return progress, progress.add_task(label, total=total)


class JobProgress:
    """See the module docstring; made by ``job_progress`` and ``step_progress``."""

    def __init__(self, total: int, label: str, verb: str | None = None, noun: str = "run",
                 stream: IO[str] | None = None, *, console: Any = None, steps: bool = False) -> None:
        self.total, self.done = total, 0
        self._verb, self._noun = verb, noun
        self._stream = stream
        self._bar: Any = None
        if steps:
            self._bar, self._task = progress_bar(total, label, console, steps=True)
        elif stream is None:
            bar, task = progress_bar(total, label, console)
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
        elif self._verb is not None:  # without a verb a log gets no line, so no timer either
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
        """One more run finished (the arguments, a run's index or row, are ignored): a ``progress.JobDone``."""
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.advance(self._task)
                return
            if self._verb is None:
                return
            now = time.monotonic()
            last = self.done >= self.total and (self._said or now - self._start >= LOG_EVERY_S)
            if last or now - self._last >= LOG_EVERY_S:
                self._say(now)

    def step(self, name: str, done: int, total: int) -> None:
        """``done`` steps are finished and the one named ``name`` starts (``""``: all done): a ``progress.Step``;
        ``total`` is the one given at the start."""
        with self._lock:
            self.done = done
            if self._bar is not None:
                self._bar.update(self._task, completed=done, description=name)

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


def job_progress(total: int, label: str, verb: str | None = None, noun: str = "run",
                 stream: IO[str] | None = None) -> JobProgress:
    """Progress of ``total`` runs: ``label`` beside the bar at a terminal, ``"{verb} K of N {noun}s, T"`` lines in
    a log (none without a ``verb``). ``stream`` (tests): write those lines there, never a bar."""
    return JobProgress(total, label, verb, noun, stream)


def step_progress(total: int, label: str, console: Any = None) -> JobProgress:
    """Progress of ``total`` steps run one after the other, on ``console`` (default: stderr): ``label``, the bar
    and the name of the step under way; kept when done."""
    return JobProgress(total, label, console=console, steps=True)

