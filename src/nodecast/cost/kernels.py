"""Every kernel model over an Nsight Compute metrics table: ``project_metrics``, the library form of ``nodecast kernels``.

This is projection, not a model: it builds a Trace of the profiled launches,
hands the metrics (and a SASS comparison) to each kernel model of the
registry (``nodecast.models.registry``) and keeps their results side by side,
with the roofline model's full detail (``nodecast.models.roofline``). The
short kernel names label the tables. Seconds throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nodecast.errors import InputError
from nodecast.models.base import ModelResult
from nodecast.models.registry import get_models
from nodecast.models.roofline import RooflineModel
from nodecast.models.roofline_equations import RooflineProjection
from nodecast.traces.ncu import KernelMetrics, base_kernel_name, trace_from_metrics

if TYPE_CHECKING:
    from nodecast.machines.schema import Machine
    from nodecast.models.sass import SassComparison


def short_kernel_name(name: str, width: int = 72) -> str:
    """A kernel name for tables: no ``void``, no parameter list, nested template arguments as ``<…>``.

    ``void f<A<1>, B<float>, int>(int*)`` -> ``f<A<…>, B<…>, int>``; cut to ``width`` characters.
    """
    s = base_kernel_name(name) or name
    out, depth = [], 0
    for c in s:
        if c == "<":
            depth += 1
            if depth == 2:
                out.append("<…")
            elif depth < 2:
                out.append(c)
        elif c == ">":
            if depth <= 2:
                out.append(">")
            depth -= 1
        elif depth < 2:
            out.append(c)
    s = "".join(out)
    return s if len(s) <= width else s[: width - 1] + "…"


def short_kernel_labels(names: Sequence[str], width: int = 72) -> dict[str, str]:
    """A table label per kernel name: ``short_kernel_name``, numbered where different names shorten alike.

    Two template instances that differ only in nested arguments
    (``Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<…>, long>``)
    get `` #1``, `` #2``... in the order the names come (first launch first),
    so that no two kernels share a row label; the full names stay in the
    ``kernel`` column of ``KernelProjection.launches``.
    """
    unique = list(dict.fromkeys(names))
    short = {n: short_kernel_name(n, width) for n in unique}
    groups: dict[str, list[str]] = {}
    for n in unique:
        groups.setdefault(short[n], []).append(n)
    labels = {}
    for label, members in groups.items():
        for i, n in enumerate(members, 1):
            labels[n] = label if len(members) == 1 else f"{label} #{i}"
    return labels


@dataclass
class KernelProjection:
    """Every kernel model's projection of a metrics table (rows = launches, in metrics order).

    ``results[name]`` is aligned with the metrics rows; ``roofline`` holds the
    roofline model's full detail when it ran.
    """

    metrics: KernelMetrics
    source: Machine
    target: Machine
    results: dict[str, ModelResult]
    roofline: RooflineProjection | None

    def launches(self) -> pd.DataFrame:
        """One row per launch: identity, source time, roofline detail, ``<model>_s`` per model (SI units).

        ``kernel`` is the full name, ``label`` the short one the tables show
        (``short_kernel_labels``: unique, numbered where names shorten alike).
        """
        t = self.metrics.table
        labels = short_kernel_labels(t["kernel"].tolist())
        df = pd.DataFrame({"kernel": t["kernel"], "label": t["kernel"].map(labels), "occurrence": t["occurrence"],
                           "id": t["id"], "source_s": t["duration_s"]})
        if self.roofline is not None:
            detail = self.roofline.frame().drop(columns=["source_s", "time_s"])
            detail = detail.rename(columns={"low_s": "roofline_low_s", "high_s": "roofline_high_s"})
            df = pd.concat([df, detail], axis=1)
        for name, res in self.results.items():
            df[f"{name}_s"] = res.time_s
        return df

    def summary(self) -> pd.DataFrame:
        """One row per kernel name: launches, summed source and projected times, dominant bound."""
        df = self.launches()
        agg: dict[str, tuple[str, str]] = {"label": ("label", "first"), "launches": ("source_s", "size"),
                                           "source_s": ("source_s", "sum")}
        cols = ["source_s"]
        if self.roofline is not None:
            agg["roofline_low_s"] = ("roofline_low_s", "sum")
            agg["roofline_high_s"] = ("roofline_high_s", "sum")
        for name in self.results:
            agg[f"{name}_s"] = (f"{name}_s", "sum")
            cols.append(f"{name}_s")
        out = df.groupby("kernel", sort=False).agg(**agg).reset_index()
        if self.roofline is not None:
            share = df.groupby(["kernel", "bound_target"], sort=False)["source_s"].sum().reset_index()
            top = share.sort_values("source_s", ascending=False).drop_duplicates("kernel")
            out.insert(4, "bound", out["kernel"].map(dict(zip(top["kernel"], top["bound_target"], strict=True))))
        return out

    def total(self) -> dict[str, object]:
        """Sums over every launch: ``launches``, ``source_s``, the roofline bounds and ``<model>_s``.

        A model's sum is NaN when it left a launch unprojected, so that a total
        never covers fewer launches than the source time beside it.
        """
        df = self.launches()
        out: dict[str, object] = {"kernel": "total", "label": "total", "launches": len(df),
                                  "source_s": float(df["source_s"].sum())}
        cols = [c for c in ("roofline_low_s", "roofline_high_s") if c in df] + [f"{n}_s" for n in self.results]
        for c in cols:
            out[c] = float(df[c].sum()) if df[c].notna().all() else float("nan")
        return out

    def notes(self) -> list[str]:
        """The models' notes, prefixed with the model name, without repeats."""
        out: list[str] = []
        for name, res in self.results.items():
            for n in res.notes:
                line = f"[{name}] {n}"
                if line not in out:
                    out.append(line)
        return out


def project_metrics(
    metrics: KernelMetrics,
    source: Machine,
    target: Machine,
    models: list[str] | None = None,
    sass: SassComparison | None = None,
) -> KernelProjection:
    """Project every launch of ``metrics`` with the kernel models (all registered ones by default).

    The library form of ``nodecast kernels``. A Trace of the launches is built
    from the metrics (``trace_from_metrics``), and each kernel model receives
    the metrics (and ``sass``, for the roofline model) before projecting.
    """
    instances = get_models(models, kind="kernel" if models is None else None)
    if models is None:  # with metrics for every launch, the default model is the roofline: not shown twice
        instances = [m for m in instances if m.name != "default-kernel"]
    for m in instances:
        if m.kind != "kernel":
            raise InputError(f"model {m.name!r} is a {m.kind} model, not a kernel model", key="--models")
        if hasattr(m, "metrics"):
            m.metrics = metrics  # type: ignore[attr-defined]
        if hasattr(m, "sass"):
            m.sass = sass  # type: ignore[attr-defined]
    trace = trace_from_metrics(metrics)
    results: dict[str, ModelResult] = {}
    detail: RooflineProjection | None = None
    for m in instances:
        if isinstance(m, RooflineModel):
            proj, rows = m.analyze(trace, source, target)
            full = np.full(len(trace), np.nan)
            lo, hi, mean = full.copy(), full.copy(), full.copy()
            lo[rows], hi[rows], mean[rows] = proj.low_s, proj.high_s, proj.time_s
            results[m.name] = ModelResult(m.name, mean, lo, hi, proj.notes)
            detail = proj if len(rows) == len(trace) else None
        else:
            results[m.name] = m.project(trace, source, target)
    return KernelProjection(metrics, source, target, results, detail)
