"""From a run's results to the values a Machine file's ``[measured]`` table carries.

Per-class 1-byte costs, bandwidths and curves (LogGP fits of the medians,
``nodecast.calibrate.fit``), GPU compute peaks and per-level bandwidths (the
fastest repetition), for one reference GPU and NUMA node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nodecast.calibrate.fit import ClassValues, class_values
from nodecast.calibrate.plan import Case, Plan
from nodecast.calibrate.run import PointResult


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
