"""Run a calibration plan with any ``Measurer``: the measurement points, their timings, what failed.

A ``Measurer`` prepares one ``Point`` per case and size (the GPU one is
``nodecast.calibrate.transfers.CudaMeasurer``; tests use a fake); ``run_plan``
times each point until its budget is spent and keeps a ``PointResult`` for
every point, failed ones with their error, so that one broken case does not
end the run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from nodecast.calibrate.plan import Case, Plan
from nodecast.calibrate.stats import Summary, repeat_until_budget, summarize
from nodecast.errors import NodecastError
from nodecast.progress import Step


class MeasureError(NodecastError, RuntimeError):
    """One measurement point failed (a CUDA call, a kernel compile, a timeout); the run goes on.

    ``out_of_memory`` marks allocation failures: the larger sizes of the same
    case are then skipped.
    """

    def __init__(self, message: str, *, out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory


@dataclass
class Point:
    """A prepared measurement point.

    ``rep`` runs one repetition and returns its time in seconds (any
    untimed step, such as the cache flush, happens inside it, outside the
    timed region); ``work`` is what one repetition does (bytes moved, or
    FLOP); ``release`` frees the point's buffers and bindings; ``label``
    says how it was measured (placement check, threads, gate...).
    """

    rep: Callable[[], float]
    work: float
    release: Callable[[], None] = lambda: None
    label: str = ""


class Measurer(Protocol):
    """Prepares measurement points (``nodecast.calibrate.transfers.CudaMeasurer`` on a GPU)."""

    def prepare(self, case: Case, size_bytes: int) -> Point:
        """Allocate and set up one point; raises MeasureError when it cannot."""
        ...


@dataclass(frozen=True)
class PointResult:
    """The timings of one point (or why it has none).

    ``work`` is bytes (or FLOP for peak families) per repetition;
    ``cpu_s`` the measuring thread's CPU time per repetition.
    """

    case: Case
    size_bytes: int
    work: float
    samples_s: tuple[float, ...] = ()
    stopped_by: str = ""
    label: str = ""
    error: str | None = None
    cpu_s: float = math.nan

    @property
    def name(self) -> str:
        """The Google-Benchmark name of the point."""
        return self.case.name(self.size_bytes)

    @property
    def ok(self) -> bool:
        """Whether the point has timings."""
        return self.error is None and bool(self.samples_s)

    @property
    def summary(self) -> Summary | None:
        """Summary of the timings (None for a failed point)."""
        return summarize(self.samples_s) if self.ok else None


#: The progress callback of ``run_plan``: ``nodecast.progress.Step`` (each point's name as it starts).
ProgressFn = Step


def run_plan(
    plan: Plan,
    measurer: Measurer,
    *,
    progress: ProgressFn | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[PointResult]:
    """Measure every point of ``plan``; failed points are kept with their error.

    ``progress(name, done, total)`` is called before each point. After an
    out-of-memory failure the remaining (larger) sizes of that case are
    recorded as skipped.
    """
    total = plan.points
    done = 0
    results: list[PointResult] = []
    for case in plan.cases:
        oom: str | None = None
        for size in case.sizes_bytes:
            if progress is not None:
                progress(case.name(size), done, total)
            done += 1
            if oom is not None:
                results.append(PointResult(case, size, 0.0, error=f"skipped: {oom}"))
                continue
            results.append(_measure_point(plan, measurer, case, size, clock))
            last = results[-1]
            if last.error and last.error.startswith("out of memory"):
                oom = f"a smaller size ran out of memory ({last.error})"
    if progress is not None:
        progress("", done, total)
    return results


def _measure_point(plan: Plan, measurer: Measurer, case: Case, size: int, clock: Callable[[], float]) -> PointResult:
    try:
        point = measurer.prepare(case, size)
    except MeasureError as exc:
        return PointResult(case, size, 0.0, error=_error_text(exc))
    try:
        cpu0 = time.thread_time()
        rep = repeat_until_budget(point.rep, plan.budget, clock=clock)
        cpu = (time.thread_time() - cpu0) / max(1, len(rep.samples_s) + plan.budget.warmup_reps)
    except MeasureError as exc:
        return PointResult(case, size, point.work, label=point.label, error=_error_text(exc))
    finally:
        point.release()
    return PointResult(case, size, point.work, rep.samples_s, rep.stopped_by, point.label, None, cpu)


def _error_text(exc: MeasureError) -> str:
    text = str(exc)
    return f"out of memory: {text}" if exc.out_of_memory and not text.startswith("out of memory") else text
