"""``nodecast calibrate``: Comm|Scope-grade microbenchmarks of the node you have.

The pieces, each in its own module:

=============  ==================================================================
plan           benchmark families, cases, sizes, budgets (pure)
stats          summaries of repeated timings, the repeat-until-budget loop (pure)
fit            LogGP fits: 1-byte cost, bandwidth, curve per copy class (pure)
host           CPU governor, NUMA nodes and binding, cache flushing (Linux sysfs)
writers        Google-Benchmark JSON and Machine TOML (pure)
cuda           thin cuda-python layer: devices, buffers, events, NVRTC kernels (GPU)
transfers      the transfer families on top of ``cuda`` (GPU)
gpu_peaks      FMA/ADD-MUL peaks and per-level bandwidth kernels (GPU)
=============  ==================================================================

This module runs a plan with any ``Measurer`` (the GPU one comes from
``open_session``; tests use a fake) and derives the values a Machine file
carries from the results. Importing it never imports cuda-python.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from nodecast.calibrate.fit import ClassValues, class_values
from nodecast.calibrate.plan import Case, Plan, Topology
from nodecast.calibrate.stats import Summary, repeat_until_budget, summarize
from nodecast.errors import NodecastError


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


ProgressFn = Callable[[str, int, int], None]


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


# -- from results to a Machine file's measured values ---------------------------------------


@dataclass
class MeasuredValues:
    """What the runs give a Machine file: per-class values, GPU peaks, per-level bandwidths.

    ``peak_flops[precision] = (fma, addmul)`` in FLOP/s and
    ``level_bandwidth_bps[level]`` are the *fastest* repetition's rates (the
    roofline paper's "measured maxima"); transfer classes come from medians.
    ``reference`` says which GPU / NUMA node the values describe.
    """

    classes: dict[str, ClassValues] = field(default_factory=dict)
    peak_flops: dict[str, tuple[float, float]] = field(default_factory=dict)
    level_bandwidth_bps: dict[str, float] = field(default_factory=dict)
    reference: str = ""
    notes: list[str] = field(default_factory=list)


def reference_cases(plan: Plan) -> tuple[int | None, int | None]:
    """(GPU, NUMA node) the machine file's values describe: the first GPU measured and its first (own) NUMA node."""
    for case in plan.cases:
        if case.family.scope == "host":
            return case.gpu, case.numa
    for case in plan.cases:
        return case.gpu, None
    return None, None


def derive_measured(plan: Plan, results: Sequence[PointResult]) -> MeasuredValues:
    """Per-class 1-byte costs, bandwidths and curves, and GPU peaks, from the results of ``plan``.

    Host classes come from the reference GPU and NUMA node
    (``reference_cases``); ``peer`` from the first pair of that GPU measured
    with peer access enabled, else without; ``dtod`` from the same-GPU copy.
    """
    gpu, numa = reference_cases(plan)
    out = MeasuredValues()
    if gpu is None:
        out.notes.append("nothing was measured")
        return out
    out.reference = f"GPU {gpu}" + (f", host memory on NUMA node {numa}" if numa is not None else "")
    by_case: dict[Case, list[PointResult]] = {}
    for r in results:
        by_case.setdefault(r.case, []).append(r)

    def candidates(klass: str) -> list[Case]:
        found = []
        for case in plan.cases:
            fam = case.family
            if fam.klass != klass or case.gpu != gpu:
                continue
            if fam.scope == "host" and case.numa != numa:
                continue
            found.append(case)
        # Peer access enabled first (what a peer copy in an application trace normally does).
        return sorted(found, key=lambda c: (c.family.peer is not True, c.gpu2 if c.gpu2 is not None else -1))

    for klass in sorted({c.family.klass for c in plan.cases if c.family.klass}):
        for case in candidates(klass):  # type: ignore[arg-type]
            good = [r for r in by_case.get(case, []) if r.ok]
            if not good:
                out.notes.append(f"{klass}: {case.family_name} has no successful point")
                continue
            values = class_values(klass, case.family_name, [r.size_bytes for r in good],
                                  [r.summary.median_s for r in good])  # type: ignore[union-attr]
            out.classes[klass] = values
            if values.note:
                out.notes.append(values.note)
            break

    peaks: dict[str, dict[str, float]] = {}
    for case in plan.cases:
        fam = case.family
        if case.gpu != gpu or (fam.work != "flops" and fam.op != "level"):
            continue
        good = [r for r in by_case.get(case, []) if r.ok]
        if not good:
            out.notes.append(f"{case.family_name}: no successful point")
            continue
        best = max(r.work / r.summary.min_s for r in good if r.summary.min_s > 0)  # type: ignore[union-attr]
        if fam.op == "level":
            out.level_bandwidth_bps[fam.level] = best  # type: ignore[index]
        else:
            peaks.setdefault(fam.precision, {})[fam.op.removeprefix("peak_")] = best  # type: ignore[arg-type]
    for precision, rates in peaks.items():
        if "fma" in rates and "addmul" in rates:
            out.peak_flops[precision] = (rates["fma"], rates["addmul"])
        else:
            out.notes.append(f"{precision}: only {', '.join(rates)} measured; a machine file needs both fma and addmul")
    return out


def open_session(**kwargs: object):  # noqa: ANN201 - the session type lives in the GPU layer
    """A calibration session on this node's GPUs (``nodecast.calibrate.transfers.Session``).

    Raises GPUUnavailableError when cuda-python is missing or there is no
    CUDA driver or device.
    """
    from nodecast.calibrate.transfers import Session

    return Session.open(**kwargs)


__all__ = [
    "MeasureError",
    "MeasuredValues",
    "Measurer",
    "Point",
    "PointResult",
    "Topology",
    "derive_measured",
    "open_session",
    "reference_cases",
    "run_plan",
]
